"""Multi-output ufuncs: frexp, modf, divmod (``MULTI_OUTPUT_OPS``).

Each yields a tuple, read through ``get_output`` as opaque calls' results are; its reference
lowering is every ufunc's (:mod:`.ufuncs`), and it never fuses (a kernel op writes one result;
``backends.codegen.KERNEL_FALLBACK_REASONS``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autodiff.decompositions import outputs
from ...autodiff.rules import NOTES, VJP, Cotangent, Primal, unbroadcast
from ...ir import OpKind
from ...ir.abstract import ABSTRACT_EVAL, AbstractValue, Rule, broadcast_shapes
from ...ir.abstract.core import operand_dtype, shape_of
from ...ir.params import UfuncParams
from ...onnx.rules.common import RULES as ONNX
from ...trace import Tensor
from .ufuncs import no_onnx_form

K = OpKind


# --- frexp, modf, divmod ---


def _multi_output_ufunc_rule(ufunc: np.ufunc) -> Rule:
    """``frexp``/``modf``/``divmod``: one abstract value per output (NumPy's loop dtypes)."""

    def rule(params: UfuncParams, *args: Any) -> tuple[AbstractValue, ...]:
        dtypes = tuple(operand_dtype(a) for a in args) + (None,) * ufunc.nout
        if params.dtype is not None:  # (a ufunc node is given dtype only when not None)
            sig = (None,) * ufunc.nin + (np.dtype(params.dtype),) * ufunc.nout
            resolved = ufunc.resolve_dtypes(dtypes, signature=sig)
        else:
            resolved = ufunc.resolve_dtypes(dtypes)
        shape = broadcast_shapes(*[shape_of(a) for a in args])
        return tuple(AbstractValue(shape, np.dtype(d)) for d in resolved[ufunc.nin :])

    return rule


for _kind in OpKind:
    if _kind.ufunc is not None and _kind.ufunc.nout > 1:
        ABSTRACT_EVAL.add(_kind, _multi_output_ufunc_rule(_kind.ufunc))


@VJP.register(K.MODF)
def _modf(p: Primal, gs: Any) -> list[Cotangent]:
    """``x = fractional + integral``: the fractional part moves with ``x``, the integral part
    is piecewise constant."""
    return [gs[0]]


@VJP.register(K.FREXP)
def _frexp(p: Primal, gs: Any) -> list[Cotangent]:
    """``x = mantissa * 2**exponent`` with a piecewise-constant exponent."""
    if gs[0] is None:
        return [None]
    exponent = outputs(p)[1]
    return [lambda: gs[0] * np.ldexp(1.0, -exponent)]


@VJP.register(K.DIVMOD)
def _divmod(p: Primal, gs: Any) -> list[Cotangent]:
    """The quotient is ``floor_divide``'s (piecewise constant), the remainder ``remainder``'s."""
    g = gs[1]
    if g is None:
        return [None, None]
    a, b = p.args
    return [
        (lambda: unbroadcast(g, p.shape(0))) if isinstance(a, Tensor) else None,
        (lambda: unbroadcast(-g * np.floor(a / b), p.shape(1))) if isinstance(b, Tensor) else None,
    ]


NOTES.add(K.MODF, "the fractional part; the integral part is piecewise constant")
NOTES.add(K.FREXP, "mantissa: 2**-exponent")
NOTES.add(K.DIVMOD, "remainder as remainder; the quotient is piecewise constant")

ONNX.add(K.FREXP, no_onnx_form("ONNX has no Frexp"))
ONNX.add(K.MODF, no_onnx_form("ONNX has no Modf"))
ONNX.add(K.DIVMOD, no_onnx_form("no rule yet for two-output divmod (use // and % separately)"))
