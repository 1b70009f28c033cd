"""Abstract-evaluation rules of elementwise ops: every ufunc (NumPy's ``resolve_dtypes``),
``where``/``cast``/``clip`` and multi-output ufuncs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import OpKind
from .core import (
    ABSTRACT_EVAL,
    AbstractValue,
    Rule,
    abstract_rule,
    broadcast_shapes,
    operand_dtype,
    probe_dtype,
    result_type,
    shape_of,
)


def _ufunc_rule(ufunc: np.ufunc) -> Rule:
    resolved: dict[
        tuple[Any, ...], np.dtype
    ] = {}  # NumPy's answer per operand dtypes (a pure function)

    outs = (None,) * ufunc.nout

    def rule(attrs: dict[str, Any], *args: Any) -> AbstractValue:
        dtypes = tuple([operand_dtype(a) for a in args]) + outs
        key = (dtypes, attrs.get("dtype"))
        out = resolved.get(key)
        if out is None:
            if "dtype" in attrs:
                sig = (None,) * ufunc.nin + (np.dtype(attrs["dtype"]),)
                out = ufunc.resolve_dtypes(dtypes, signature=sig)[-1]
            else:
                out = ufunc.resolve_dtypes(dtypes)[-1]
            if len(resolved) < 4096:
                resolved[key] = out
        return AbstractValue(broadcast_shapes(*[shape_of(a) for a in args]), out)

    return rule


for _kind in OpKind:
    if _kind.ufunc is not None:
        ABSTRACT_EVAL[_kind] = _ufunc_rule(_kind.ufunc)


@abstract_rule(OpKind.WHERE)
def _where(attrs: dict[str, Any], cond: Any, x: Any, y: Any) -> AbstractValue:
    return AbstractValue(
        broadcast_shapes(shape_of(cond), shape_of(x), shape_of(y)), result_type(x, y)
    )


@abstract_rule(OpKind.CAST)
def _cast(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    return AbstractValue(x.shape, np.dtype(attrs["dtype"]))


@abstract_rule(OpKind.CLIP)
def _clip(attrs: dict[str, Any], x: Any, lo: Any, hi: Any) -> AbstractValue:
    shape = broadcast_shapes(*[shape_of(a) for a in (x, lo, hi) if a is not None])
    return AbstractValue(shape, probe_dtype(np.clip, x, lo, hi))


@abstract_rule(OpKind.TENSOR_ARRAY_WRITE)
def _tensor_array_write(
    attrs: dict[str, Any], buffer: AbstractValue, index: Any, value: Any
) -> AbstractValue:
    vshape = shape_of(value)
    return AbstractValue(
        None if vshape is None else (None,) + tuple(vshape), np.dtype(attrs["dtype"])
    )


def _multi_output_ufunc_rule(ufunc: np.ufunc) -> Rule:
    """``frexp``/``modf``/``divmod``: one abstract value per output (NumPy's loop dtypes)."""

    def rule(attrs: dict[str, Any], *args: Any) -> tuple[AbstractValue, ...]:
        dtypes = tuple(operand_dtype(a) for a in args) + (None,) * ufunc.nout
        if "dtype" in attrs:
            sig = (None,) * ufunc.nin + (np.dtype(attrs["dtype"]),) * ufunc.nout
            resolved = ufunc.resolve_dtypes(dtypes, signature=sig)
        else:
            resolved = ufunc.resolve_dtypes(dtypes)
        shape = broadcast_shapes(*[shape_of(a) for a in args])
        return tuple(AbstractValue(shape, np.dtype(d)) for d in resolved[ufunc.nin :])

    return rule


for _kind in OpKind:
    if _kind.ufunc is not None and _kind.ufunc.nout > 1:
        ABSTRACT_EVAL[_kind] = _multi_output_ufunc_rule(_kind.ufunc)
