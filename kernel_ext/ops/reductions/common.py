"""Helpers the reduction and scan modules share (no op lives here): the generic abstract
evaluation of a reduction and of a scan, the gradient's broadcasting of a reduced cotangent
back to its operand, and the ONNX Reduce rule of sum, prod, mean, max, min and their nan
forms."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.rules import Primal
from ...ir import Node, OpKind
from ...ir.abstract import (
    AbstractValue,
    Rule,
    normalize_axes,
    normalize_axis,
    probe_dtype,
    reduced_shape,
)
from ...ir.params import MomentParams, Params, ReduceParams, ScanParams
from ...onnx.builder import GraphBuilder, elem_type
from ...onnx.builder import Rule as OnnxRule
from ...onnx.rules.common import ANY_VALUE, handled_params, out_dtype, rank, sorted_axes, wide

# -- abstract evaluation ----------------------------------------------------------------------

#: The rule of an op with one output
OneOutputRule = Callable[..., AbstractValue]

#: The parameters of a reduction over ``axis`` with ``keepdims`` (not a quantile, not a ufunc
#: method): what the generic rules and the helpers below read
ReductionParams = ReduceParams | MomentParams


def reduction_rule(kind: OpKind) -> OneOutputRule:
    """The generic rule of a reduction: NumPy's function on a probe for the dtype, the reduced
    shape (argmax/argmin: one integer axis; max/min/argmax/argmin: no empty input)."""
    fn = kind.numpy_function

    def rule(params: ReductionParams, x: AbstractValue) -> AbstractValue:
        axis, keepdims = params.axis, params.keepdims
        if kind in (OpKind.ARGMAX, OpKind.ARGMIN) and isinstance(axis, tuple):
            raise TypeError(f"np.{kind.value} takes one integer axis or None, not {axis!r}")
        if (
            x.shape is not None
            and x.shape.count(0)
            and kind in (OpKind.MAX, OpKind.MIN, OpKind.ARGMAX, OpKind.ARGMIN)
            and axis is None
        ):
            raise ValueError(
                f"zero-size array to reduction operation {kind.value} which has no identity"
            )
        extra = params.kwargs("axis", "keepdims")
        probe_axis = axis if x.ndim is not None else None
        dtype = probe_dtype(fn, x, axis=probe_axis, keepdims=keepdims, **extra)
        if kind in (OpKind.ARGMAX, OpKind.ARGMIN) and axis is None:
            shape = (1,) * (x.ndim or 0) if keepdims else ()
            return AbstractValue(shape if x.shape is not None or not keepdims else None, dtype)
        return AbstractValue(reduced_shape(x.shape, axis, keepdims), dtype)

    return rule


def scan_rule(fn: Callable[..., Any]) -> Rule:
    """The rule of a scan computed by ``fn`` (cumsum, cumprod and their nan forms)."""

    def rule(params: ScanParams, x: AbstractValue) -> AbstractValue:
        return _scan(fn, params, x)

    return rule


def _scan(fn: Callable[..., Any], params: ScanParams, x: AbstractValue) -> AbstractValue:
    axis = params.axis
    # (``dtype`` when given: a scan's one field besides the axis)
    dtype = probe_dtype(fn, x, axis=axis if x.ndim else None, **params.kwargs("axis"))
    if axis is None:
        size = x.size
        return AbstractValue((size,), dtype)
    if x.shape is not None:
        normalize_axis(axis, len(x.shape))
    return AbstractValue(x.shape, dtype)


def no_identity_check(name: str, x: AbstractValue, axis: Any) -> None:
    """NumPy's error for reducing an empty axis with an operation that has no identity."""
    if not x.shape:  # unknown rank, or 0-d: one element, nothing empty
        return
    axes = normalize_axes(axis, len(x.shape))
    if any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")


def quietly(rule: Rule) -> Rule:
    """``rule`` with NumPy's warnings silenced: probing the nan functions on 1-element stand-ins
    warns ("Degrees of freedom <= 0", "Mean of empty slice") where the real call may not."""

    def quiet(params: Params, *args: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return rule(params, *args)

    return quiet


# -- gradients --------------------------------------------------------------------------------


def reduction_parts(p: Primal) -> tuple[Any, Any, bool]:
    """A reduction's operand, axis and keepdims."""
    params = cast("ReductionParams", p.params)
    return p.args[0], params.axis, bool(params.keepdims)


def expand_to(g: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """The cotangent ``g`` of a reduction of ``x`` over ``axis``, broadcast back to x."""
    if x.shape is None:
        return g + np.zeros_like(x)
    axes = normalize_axes(axis, len(x.shape))
    if not keepdims and axes:
        g = np.expand_dims(g, axes)
    if None in x.shape:
        return g + np.zeros_like(x)
    return np.broadcast_to(g, x.shape)


def count(x: Any, axis: Any) -> Any:
    """How many elements a reduction of ``x`` over ``axis`` folds (a Python int if static)."""
    axes = normalize_axes(axis, len(x.shape))
    dims = [x.shape[a] for a in axes]
    if None not in dims:
        return math.prod(dims)
    return np.sum(np.ones_like(x), axis=axes, keepdims=True)


def first_occurrence(mask: Any, axis: Any) -> Any:
    """``mask`` keeping only its first True over ``axis`` (C order over several axes)."""
    ndim = len(mask.shape)
    axes = normalize_axes(axis, ndim)
    if len(axes) == 1:
        return mask & (np.cumsum(mask, axis=axes[0]) == 1)
    kept = [a for a in range(ndim) if a not in axes]
    order = kept + list(axes)
    moved = np.transpose(mask, order)
    shape = moved.shape
    if None in shape:
        raise NotImplementedError(
            "the gradient of max/min over several axes needs static "
            "shapes; reduce over one axis at a time"
        )
    flat = np.reshape(moved, tuple(shape[: len(kept)]) + (-1,))
    first = flat & (np.cumsum(flat, axis=-1) == 1)
    return np.transpose(np.reshape(first, shape), np.argsort(order).tolist())


def reverse_cumsum(g: Any, axis: int) -> Any:
    """The cotangent of a cumulative sum along ``axis``: the sums from the end."""
    return np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)


def nan_hole(x: Any, g: Any) -> Any:
    """``g`` with zeros where ``x`` is NaN (the nan functions ignore those elements)."""
    return np.where(np.isnan(x), 0.0, g)


# -- ONNX -------------------------------------------------------------------------------------


def axes_input(b: GraphBuilder, node: Node, x: Node) -> list[str]:
    """The ``axes`` input of ONNX's Reduce ops ([] for all axes, NumPy's ``axis=None``)."""
    axis = cast("ReductionParams", node.params).axis
    if axis is None:
        return []
    return [b.ints(sorted_axes(axis, rank(x)))]


def _any_nan(b: GraphBuilder, name: str, axes: list[str], keepdims: int) -> str:
    nan = b.one("Cast", [b.one("IsNaN", [name])], to=elem_type(np.int32))
    return b.one(
        "Cast", [b.one("ReduceMax", [nan, *axes], keepdims=keepdims)], to=elem_type(np.bool_)
    )


def reduction(
    op_type: str, nan_propagates: bool = False, nan_fill: float | None = None
) -> OnnxRule:
    """sum/prod/mean/max/min: computed in the result dtype (NumPy's accumulator: int64 for
    a sum of int32 or bool, float64 for a mean of ints); max/min propagate NaN as NumPy.
    ``nan_fill``: the nan-function (nansum: NaNs count as 0, nanmax as -inf; a slice of NaNs
    only gives NaN, as NumPy's nanmax and nanmin)."""

    def rule(b: GraphBuilder, node: Node) -> list[str]:
        handled_params(node, axis=ANY_VALUE, keepdims=ANY_VALUE, dtype=ANY_VALUE)
        x, out = node.args[0], out_dtype(node)
        work = np.dtype(np.int32) if out == np.bool_ else wide(out)
        name = b.operand(x, work)
        axes = axes_input(b, node, x)
        keep = int(bool(cast("ReduceParams", node.params).keepdims))
        nan_only = None
        if nan_fill is not None and work.kind == "f":
            nan = b.one("IsNaN", [name])
            name = b.one("Where", [nan, b.const(nan_fill, work), name])
            if not np.isfinite(nan_fill):
                numbers = b.one("Cast", [b.one("Not", [nan])], to=elem_type(np.int32))
                nan_only = b.one(
                    "Equal",
                    [b.one("ReduceMax", [numbers, *axes], keepdims=keep), b.const(0, np.int32)],
                )
        result = b.one(op_type, [name, *axes], keepdims=keep)
        if nan_propagates and out.kind == "f":
            result = b.one("Where", [_any_nan(b, name, axes, keep), b.const(np.nan, out), result])
        if nan_only is not None:
            result = b.one("Where", [nan_only, b.const(np.nan, out), result])
        return [b.cast(result, work, out)]

    return rule
