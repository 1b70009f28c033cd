"""Elementwise ops: NumPy's ufuncs (unary, binary, comparisons, bitwise, multi-output), where, cast
and clip.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`), one module per
sub-family:

=================  ===========================================================================
``ufuncs``         every ufunc's abstract evaluation and reference lowering; the helpers the
                   other modules share (simplification tests, the ONNX form of a ufunc loop)
``unary``          negative, absolute, sign, sqrt, square, exponentials and logarithms,
                   trigonometric and hyperbolic functions, degree/radian conversions
``rounding``       floor, ceil, trunc, rint, isnan, isinf, isfinite, signbit
``arithmetic``     add, subtract, multiply, divide, floor_divide, remainder, fmod, power
``binary_math``    maximum/minimum, fmax/fmin, arctan2, hypot, copysign, logaddexp,
                   heaviside, nextafter, ldexp
``comparisons``    equal ... greater_equal, logical_and/or/xor/not
``bitwise``        bitwise_and/or/xor, invert, shifts, gcd, lcm, bitwise_count
``selection``      where, cast, clip
``multi_output``   frexp, modf, divmod
=================  ===========================================================================
"""

from __future__ import annotations

from . import (
    arithmetic,
    binary_math,
    bitwise,
    comparisons,
    multi_output,
    rounding,
    selection,
    ufuncs,
    unary,
)

__all__ = [
    "arithmetic",
    "binary_math",
    "bitwise",
    "comparisons",
    "multi_output",
    "rounding",
    "selection",
    "ufuncs",
    "unary",
]
