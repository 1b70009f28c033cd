"""Abstract-evaluation rules of elementwise ops: every ufunc (NumPy's ``resolve_dtypes``),
placeholders and constants, ``where``/``cast``/``clip``, the stateful and run-time-check ops,
and multi-output ufuncs.
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
    aval_of,
    broadcast_shapes,
    format_shape,
    normalize_axes,
    normalize_axis,
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


@abstract_rule(OpKind.PLACEHOLDER)
def _placeholder(attrs: dict[str, Any]) -> AbstractValue:
    return AbstractValue(attrs["shape"], np.dtype(attrs["dtype"]))


@abstract_rule(OpKind.CONSTANT)
def _constant(attrs: dict[str, Any]) -> AbstractValue:
    return aval_of(attrs["value"])


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


@abstract_rule(OpKind.FLIP, OpKind.COPY)
def _same(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    if x.shape is not None and attrs.get("axis") is not None:
        normalize_axes(attrs["axis"], len(x.shape))
    return x


@abstract_rule(OpKind.READ_VARIABLE)
def _read_variable(attrs: dict[str, Any]) -> AbstractValue:
    var = attrs["variable"]
    return AbstractValue(tuple(var.shape), np.dtype(var.dtype))


@abstract_rule(OpKind.ASSIGN_VARIABLE, OpKind.ASSIGN_ADD_VARIABLE, OpKind.ASSIGN_SUB_VARIABLE)
def _assign(attrs: dict[str, Any], value: Any) -> None:
    var = attrs["variable"]
    shape = shape_of(value)
    if shape is not None and None not in shape and tuple(shape) != tuple(var.shape):
        broadcast_shapes(shape, tuple(var.shape))
        if len(shape) > len(var.shape) or broadcast_shapes(shape, var.shape) != tuple(var.shape):
            raise ValueError(
                f"cannot assign a value of shape {format_shape(shape)} to variable "
                f"'{var.name}' of shape {format_shape(tuple(var.shape))}"
            )
    return None


@abstract_rule(OpKind.PRINT)
def _print(attrs: dict[str, Any], *args: Any) -> None:
    return None


@abstract_rule(OpKind.CHECK)
def _check(attrs: dict[str, Any], pred: Any, *message_values: Any) -> None:
    shape = shape_of(pred)
    if shape is not None and tuple(shape) != ():
        raise ValueError(
            f"the condition of a run-time check must be 0-d, got shape {format_shape(tuple(shape))}"
        )
    return None


@abstract_rule(OpKind.DIM)
def _dim(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    if x.shape is not None:
        normalize_axis(attrs["axis"], len(x.shape))
    return AbstractValue((), np.dtype(np.int64))


@abstract_rule(OpKind.ARANGE)
def _arange(attrs: dict[str, Any], start: Any, stop: Any, step: Any) -> AbstractValue:
    dtype = np.dtype(attrs["dtype"])
    if all(isinstance(a, (int, float)) for a in (start, stop, step)):
        return AbstractValue((len(np.arange(start, stop, step)),), dtype)
    return AbstractValue((None,), dtype)


@abstract_rule(OpKind.COND, OpKind.WHILE)
def _control_flow(attrs: dict[str, Any], *args: Any) -> tuple[AbstractValue, ...]:
    return tuple(attrs["out_avals"])


@abstract_rule(OpKind.NUMPY_CALL, OpKind.RANDOM_CALL)
def _opaque_call(
    attrs: dict[str, Any], *args: Any
) -> AbstractValue | tuple[AbstractValue, ...] | None:
    # Found when the call was traced, by running the callable on stand-ins (trace/opaque.py):
    # no rule could know what an arbitrary NumPy function returns.
    out_aval: AbstractValue | tuple[AbstractValue, ...] | None = attrs["out_aval"]
    return out_aval


@abstract_rule(OpKind.GET_OUTPUT)
def _get_output(attrs: dict[str, Any], x: tuple[AbstractValue, ...]) -> AbstractValue:
    output: AbstractValue = x[attrs["index"]]
    return output


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


# Shapes by NumPy's documented rules (``None`` dims flow through); dtypes, and NumPy's refusal
# of an argument it does not take, from NumPy itself on small stand-ins (``probe_dtype``, the
# 1x1 identity of ``_linalg_probe``).


@abstract_rule(OpKind.REAL, OpKind.IMAG)
def _real_imag(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    return AbstractValue(x.shape, np.empty(0, x.dtype).real.dtype)
