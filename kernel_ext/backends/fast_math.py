"""Fast-math approximations for fused kernels (``kx.function(..., fast_math=True)``).

By default a fused kernel computes ``tanh``, ``exp``, ``log``, ... by calling NumPy's own
inner loop on blocks of its data (:mod:`.ufunc_loops`): bitwise NumPy's results, but the
loop call is a barrier between the vectorised stages around it. Fast-math mode replaces those
calls by inline polynomial approximations written in plain arithmetic, so the whole chain is
one loop LLVM vectorises (``<8 x float>`` per AVX register), as XLA's inlined approximations
are. The price is accuracy, bounded and tested per function (:data:`ULP_BOUNDS`).

This module is pure text, like :mod:`.codegen`: each approximation is the source of a small
``@_inline`` function, emitted into the kernel module that calls it. The approximations are
Cephes' (S. Moshier), with the range reduction done branch-free (selects, not branches):

* ``exp``: ``x = n ln2 + r`` (``n`` rounded by adding and subtracting ``1.5 * 2**mantissa``,
  ``ln2`` split in two parts so ``n * ln2_hi`` is exact), a degree-6 polynomial (float32)
  or Cephes' Padé form (float64) for ``exp(r)``, then ``* 2**n1 * 2**n2`` (``n = n1 + n2``,
  so results near overflow and in the subnormal range are scaled without an intermediate
  overflow or flush). Arguments are clamped first, so ``±inf`` need no branch.
* ``log``: ``x = m 2**e`` (subnormals scaled by ``2**mantissa`` first), ``m`` moved into
  ``[sqrt(1/2), sqrt(2))``, ``log(1 + f)`` as ``f - f²/2 + f³ P(f)`` (float32) or
  ``f - f²/2 + f³ P(f)/Q(f)`` (float64), ``e ln2`` added in two parts.
* ``tanh``: ``x + x³ P(x²)`` (float64: a rational) below ``|x| = 0.625``, else
  ``sign(x) (1 - 2 / (exp(2|x|) + 1))``.
* ``sin``/``cos``: ``x = n π/2 + r`` (π/2 in three parts), the quadrant ``n mod 4`` (in
  float arithmetic, so it vectorises) picks ``±sin r`` or ``±cos r``, each a Cephes
  polynomial; float32 computes in float64 (the three-part reduction in float32 loses
  bits near multiples of π). Arguments beyond
  :data:`TRIG_LIMIT` (and ``±inf``) raise the kernel's ``bad`` flag: NumPy reruns the
  segment, exactly.
* ``pow`` (float32 only): ``exp(y log|x|)`` in float64, negated for a negative base and an odd
  integer exponent. Every other case (a zero, negative non-integer or non-finite base, a
  non-finite exponent) raises ``bad``, so NumPy answers those, exactly. Float64 ``pow`` keeps
  NumPy's loop: ``exp(y log x)`` in float64 loses ``|y log x|`` ulps, and the fix (a
  double-double logarithm) is not worth its cost here.

Special values: NaN in gives NaN out with the input's payload (``exp``, ``log``, ``tanh``,
``sin``, ``cos``); ``exp(±inf)`` is ``inf``/``0``, ``log(0)`` is ``-inf``, ``log(inf)`` is
``inf``, ``log(x < 0)`` is NaN, ``tanh(±inf)`` is ``±1``, ``tanh(-0.0)`` and ``sin(-0.0)`` are
``-0.0`` (tanh returns ``x`` itself where ``x²`` underflows): all as NumPy. What fast-math
kernels do not do is set NumPy's floating-point error state (``np.errstate``): ``log(-1)``
gives NaN without an "invalid value" warning. Polynomials use explicit fused multiply-adds
(``numba_decorators.fma``; kernels are compiled without ``fastmath``, so LLVM never
contracts by itself).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import OpKind

#: The functions fast-math inlines, by op.
FAST_OPS: dict[OpKind, str] = {
    OpKind.EXP: "exp",
    OpKind.LOG: "log",
    OpKind.TANH: "tanh",
    OpKind.SIN: "sin",
    OpKind.COS: "cos",
    OpKind.POWER: "pow",
}

#: The largest distance, in units in the last place, between a fast-math result and NumPy's
#: for finite inputs (``(function, dtype)``); the differential tests
#: (``tests/backends/test_fast_math.py``) check every bound over wide input ranges. A
#: result of 0 or a subnormal counts ulps as the spacing of subnormals (the float's bits are
#: compared as ordered integers).
ULP_BOUNDS: dict[tuple[str, str], int] = {
    ("exp", "float32"): 3,
    ("exp", "float64"): 2,
    ("log", "float32"): 4,
    ("log", "float64"): 2,
    ("tanh", "float32"): 3,
    ("tanh", "float64"): 3,
    ("sin", "float32"): 1,
    ("sin", "float64"): 2,
    ("cos", "float32"): 1,
    ("cos", "float64"): 2,
    ("pow", "float32"): 1,
}

#: ``|x|`` beyond which fast ``sin``/``cos`` hand the segment to NumPy (the three-part
#: reduction by π/2 is accurate to here).
TRIG_LIMIT = 65536.0

_HEADER = (
    "from kernel_ext.backends.numba_decorators import pow2 as _pow2, "
    "frexp_mantissa as _fmant, frexp_exponent as _fexp, fma as _fma"
)

_EXP = {
    "float32": """\
def {name}(x):
    xc = x if x < np.float32(89.0) else np.float32(89.0)
    xc = xc if xc > np.float32(-104.0) else np.float32(-104.0)
    t = xc * np.float32(1.4426950408889634) + np.float32(12582912.0)
    n = t - np.float32(12582912.0)
    r = xc - n * np.float32(0.693359375)
    r = r - n * np.float32(-2.12194440e-4)
    z = r * r
    p = np.float32(1.9875691500e-4) * r + np.float32(1.3981999507e-3)
    p = _fma(p, r, np.float32(8.3334519073e-3))
    p = _fma(p, r, np.float32(4.1665795894e-2))
    p = _fma(p, r, np.float32(1.6666665459e-1))
    p = _fma(p, r, np.float32(5.0000001201e-1))
    p = p * z + r + np.float32(1.0)
    n1 = (n * np.float32(0.5) + np.float32(12582912.0)) - np.float32(12582912.0)
    p = p * _pow2(n1) * _pow2(n - n1)
    return x if x != x else p
""",
    "float64": """\
def {name}(x):
    xc = x if x < 710.0 else 710.0
    xc = xc if xc > -746.0 else -746.0
    t = xc * 1.4426950408889634 + 6755399441055744.0
    n = t - 6755399441055744.0
    r = xc - n * 6.93145751953125e-1
    r = r - n * 1.42860682030941723212e-6
    xx = r * r
    px = r * ((1.26177193074810590878e-4 * xx + 3.02994407707441961300e-2) * xx
              + 9.99999999999999999910e-1)
    q = ((3.00198505138664455042e-6 * xx + 2.52448340349684104192e-3) * xx
         + 2.27265548208155028766e-1) * xx + 2.00000000000000000009e0
    p = 1.0 + 2.0 * (px / (q - px))
    n1 = (n * 0.5 + 6755399441055744.0) - 6755399441055744.0
    p = p * _pow2(n1) * _pow2(n - n1)
    return x if x != x else p
""",
}

# exp of a float32 ``x >= 0`` for tanh (its ``2|x|``): one power of two suffices below the
# clamp, and tanh selects NaN itself.
_EXP_POS32 = """\
def {name}(x):
    xc = x if x < np.float32(88.0) else np.float32(88.0)
    t = xc * np.float32(1.4426950408889634) + np.float32(12582912.0)
    n = t - np.float32(12582912.0)
    r = xc - n * np.float32(0.693359375)
    r = r - n * np.float32(-2.12194440e-4)
    z = r * r
    p = np.float32(1.9875691500e-4) * r + np.float32(1.3981999507e-3)
    p = _fma(p, r, np.float32(8.3334519073e-3))
    p = _fma(p, r, np.float32(4.1665795894e-2))
    p = _fma(p, r, np.float32(1.6666665459e-1))
    p = _fma(p, r, np.float32(5.0000001201e-1))
    p = p * z + r + np.float32(1.0)
    return p * _pow2(n)
"""

_LOG = {
    "float32": """\
def {name}(x):
    sub = x < np.float32(1.1754943508222875e-38)
    xs = x * np.float32(8388608.0) if sub else x
    xs = xs if xs > np.float32(0.0) else np.float32(1.0)
    m = _fmant(xs)
    e = _fexp(xs) - (np.float32(23.0) if sub else np.float32(0.0))
    small = m < np.float32(0.7071067811865476)
    e = e - np.float32(1.0) if small else e
    m = (m + m - np.float32(1.0)) if small else (m - np.float32(1.0))
    z = m * m
    y = np.float32(7.0376836292e-2) * m - np.float32(1.1514610310e-1)
    y = _fma(y, m, np.float32(1.1676998740e-1))
    y = _fma(y, m, np.float32(-1.2420140846e-1))
    y = _fma(y, m, np.float32(1.4249322787e-1))
    y = _fma(y, m, np.float32(-1.6668057665e-1))
    y = _fma(y, m, np.float32(2.0000714765e-1))
    y = _fma(y, m, np.float32(-2.4999993993e-1))
    y = _fma(y, m, np.float32(3.3333331174e-1))
    y = y * m * z
    y = y + e * np.float32(-2.12194440e-4)
    y = y - np.float32(0.5) * z
    r = m + y
    r = r + e * np.float32(0.693359375)
    r = r if x < np.float32(np.inf) else x
    r = r if x > np.float32(0.0) else (np.float32(-np.inf) if x == np.float32(0.0)
                                       else np.float32(np.nan))
    return x if x != x else r
""",
    "float64": """\
def {name}(x):
    sub = x < 2.2250738585072014e-308
    xs = x * 4503599627370496.0 if sub else x
    xs = xs if xs > 0.0 else 1.0
    m = _fmant(xs)
    e = _fexp(xs) - (52.0 if sub else 0.0)
    small = m < 0.7071067811865476
    e = e - 1.0 if small else e
    m = (m + m - 1.0) if small else (m - 1.0)
    z = m * m
    p = ((((1.01875663804580931796e-4 * m + 4.97494994976747001425e-1) * m
           + 4.70579119878881725854e0) * m + 1.44989225341610930846e1) * m
         + 1.79368678507819816313e1) * m + 7.70838733755885391666e0
    q = ((((m + 1.12873587189167450590e1) * m + 4.52279145837532221105e1) * m
          + 8.29875266912776603211e1) * m + 7.11544750618563894466e1) * m \\
        + 2.31251620126765340583e1
    y = m * (z * p / q)
    y = y - e * 2.121944400546905827679e-4
    y = y - 0.5 * z
    r = m + y
    r = r + e * 0.693359375
    r = r if x < np.inf else x
    r = r if x > 0.0 else (-np.inf if x == 0.0 else np.nan)
    return x if x != x else r
""",
}

_TANH = {
    "float32": """\
def {name}(x):
    a = abs(x)
    z = x * x
    s = np.float32(-5.70498872745e-3) * z + np.float32(2.06390887954e-2)
    s = _fma(s, z, np.float32(-5.37397155531e-2))
    s = _fma(s, z, np.float32(1.33314422036e-1))
    s = _fma(s, z, np.float32(-3.33332819422e-1))
    s = s * z * x + x
    b = np.float32(1.0) - np.float32(2.0) / ({exp}(a + a) + np.float32(1.0))
    b = b if x > np.float32(0.0) else -b
    r = s if a < np.float32(0.625) else b
    return x if (x != x) | (z == np.float32(0.0)) else r
""",
    "float64": """\
def {name}(x):
    a = abs(x)
    z = x * x
    p = (-9.64399179425052238628e-1 * z - 9.92877231001918586564e1) * z \\
        - 1.61468768441708447952e3
    q = ((z + 1.12811678491632931402e2) * z + 2.23548839060100448583e3) * z \\
        + 4.84406305325125486048e3
    s = x + x * (z * p / q)
    b = 1.0 - 2.0 / ({exp}(a + a) + 1.0)
    b = b if x > 0.0 else -b
    r = s if a < 0.625 else b
    return x if (x != x) | (z == 0.0) else r
""",
}

# sin and cos of float64 ``x`` after the reduction: quadrant ``q`` (``n mod 4``), ``r``.
_TRIG64 = """\
def {name}(x):
    t = x * 0.6366197723675814 + 6755399441055744.0
    n = t - 6755399441055744.0
    m = n + n
    r = ((x - m * 7.85398125648498535156e-1) - m * 3.77489470793079817668e-8) \\
        - m * 2.69515142907905952645e-15
    z = r * r
    s = ((((((1.58962301576546568060e-10 * z - 2.50507477628578072866e-8) * z
              + 2.75573136213857245213e-6) * z - 1.98412698295895385996e-4) * z
            + 8.33333333332211858878e-3) * z - 1.66666666666666307295e-1) * z) * r + r
    c = (((((-1.13585365213876817300e-11 * z + 2.08757008419747316778e-9) * z
            - 2.75573141792967388112e-7) * z + 2.48015872888517045348e-5) * z
          - 1.38888888888730564116e-3) * z + 4.16666666666665929218e-2) * z * z \\
        - 0.5 * z + 1.0
    k = (n * 0.25 - 0.375 + 6755399441055744.0) - 6755399441055744.0
    q = n - 4.0 * k
    v = {odd} if (q == 1.0) | (q == 3.0) else {even}
    r = -v if {negative} else v
    return x if x != x else r
"""
_NEGATIVE = {"sin": "q >= 2.0", "cos": "(q == 1.0) | (q == 2.0)"}
_ODD_EVEN = {"sin": ("c", "s"), "cos": ("s", "c")}

_POW32 = """\
def {name}(x, y):
    xd = np.float64(x)
    yd = np.float64(y)
    r = {exp64}(yd * {log64}(abs(xd) if xd != 0.0 else 1.0))
    yi = np.int64(yd if abs(yd) < 16777216.0 else 0.0)
    r = -r if (xd < 0.0) & ((yi & 1) == 1) else r
    return np.float32(r)
"""


def helper_name(fn: str, dtype: Any) -> str:
    """The name of ``fn``'s fast-math helper for ``dtype`` in a kernel module."""
    return f"_fm_{fn}_{np.dtype(dtype).name}"


def supports(fn: str, dtype: Any) -> bool:
    """Is there a fast-math ``fn`` for ``dtype``?"""
    return (fn, np.dtype(dtype).name) in ULP_BOUNDS


def helpers(fn: str, dtype: Any, decorator: str) -> dict[str, str]:
    """The module parts ``fn`` for ``dtype`` needs, by name, dependencies first: the
    intrinsics' import and each helper's ``decorator``-ed source."""
    dt = np.dtype(dtype).name
    out: dict[str, str] = {"_fm_import": _HEADER}
    name = helper_name(fn, dt)
    if fn == "exp":
        out[name] = decorator + "\n" + _EXP[dt].format(name=name)
    elif fn == "log":
        out[name] = decorator + "\n" + _LOG[dt].format(name=name)
    elif fn == "tanh":
        exp = helper_name("exp", dt)
        if dt == "float32":
            exp = "_fm_exppos_float32"
            out[exp] = decorator + "\n" + _EXP_POS32.format(name=exp)
        else:
            out.update(helpers("exp", dt, decorator))
        out[name] = decorator + "\n" + _TANH[dt].format(name=name, exp=exp)
    elif fn in ("sin", "cos"):
        trig = helper_name(fn, "float64")
        out[trig] = (
            decorator
            + "\n"
            + _TRIG64.format(
                name=trig, negative=_NEGATIVE[fn], odd=_ODD_EVEN[fn][0], even=_ODD_EVEN[fn][1]
            )
        )
        if dt == "float32":
            out[name] = (
                decorator + f"\ndef {name}(x):\n    return np.float32({trig}(np.float64(x)))\n"
            )
    elif fn == "pow" and dt == "float32":
        out.update(helpers("exp", "float64", decorator))
        out.update(helpers("log", "float64", decorator))
        out[name] = (
            decorator
            + "\n"
            + _POW32.format(
                name=name, exp64=helper_name("exp", "float64"), log64=helper_name("log", "float64")
            )
        )
    else:
        raise KeyError(f"no fast-math {fn} for {dt}")
    return out


def guard(fn: str, dtype: Any, operands: list[str], const: Any) -> str | None:
    """The condition (kernel text over ``operands``) under which the kernel hands the segment
    to NumPy instead (its ``bad`` flag), or None; ``const(value)`` spells a constant of
    ``dtype``."""
    if fn in ("sin", "cos"):
        return f"(abs({operands[0]}) > {const(TRIG_LIMIT)})"
    if fn == "pow":
        x, y = operands
        inf = const(np.inf)
        # fine: a finite positive base with a finite exponent, or a finite negative base with
        # an integer exponent (the float64 exp/log stay exact enough for both)
        ok_y = f"(abs({y}) < {inf})"
        neg_ok = (
            f"(({x} < 0) & ({x} > -{inf}) & (abs({y}) < {const(16777216.0)}) & "
            f"(np.float32(np.int64({y} if abs({y}) < {const(16777216.0)} else 0)) "
            f"== {y}))"
        )
        return f"(not ((({x} > 0) & ({x} < {inf}) | {neg_ok}) & {ok_y}))"
    return None


__all__ = ["FAST_OPS", "TRIG_LIMIT", "ULP_BOUNDS", "guard", "helper_name", "helpers", "supports"]
