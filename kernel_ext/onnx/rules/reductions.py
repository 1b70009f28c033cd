"""Reductions and scans: ONNX's Reduce ops with NumPy's dtypes and NaN rules."""

from __future__ import annotations

import numpy as np

from kernel_ext.ir import Node
from kernel_ext.onnx.builder import GraphBuilder, Rule, elem_type
from kernel_ext.onnx.refusal import refuse
from kernel_ext.onnx.rules.common import (
    ANY_VALUE,
    RULES,
    K,
    handled_params,
    integer_sum,
    out_dtype,
    rank,
    rule_for,
    sorted_axes,
    wide,
)


def _axes_input(b: GraphBuilder, node: Node, x: Node) -> list[str]:
    """The ``axes`` input of ONNX's Reduce ops ([] for all axes, NumPy's ``axis=None``)."""
    axis = node.attrs.get("axis")
    if axis is None:
        return []
    return [b.ints(sorted_axes(axis, rank(x)))]


def _any_nan(b: GraphBuilder, name: str, axes: list[str], keepdims: int) -> str:
    nan = b.one("Cast", [b.one("IsNaN", [name])], to=elem_type(np.int32))
    return b.one(
        "Cast", [b.one("ReduceMax", [nan, *axes], keepdims=keepdims)], to=elem_type(np.bool_)
    )


def _reduction(op_type: str, nan_propagates: bool = False, nan_fill: float | None = None) -> Rule:
    """sum/prod/mean/max/min: computed in the result dtype (NumPy's accumulator: int64 for
    a sum of int32 or bool, float64 for a mean of ints); max/min propagate NaN as NumPy.
    ``nan_fill``: the nan-function (nansum: NaNs count as 0, nanmax as -inf; a slice of NaNs
    only gives NaN, as NumPy's nanmax and nanmin)."""

    def rule(b: GraphBuilder, node: Node) -> list[str]:
        handled_params(node, axis=ANY_VALUE, keepdims=ANY_VALUE, dtype=ANY_VALUE)
        x, out = node.args[0], out_dtype(node)
        work = np.dtype(np.int32) if out == np.bool_ else wide(out)
        name = b.operand(x, work)
        axes = _axes_input(b, node, x)
        keep = int(bool(node.attrs.get("keepdims", False)))
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


@rule_for(K.NANSUM)
def nansum(b: GraphBuilder, node: Node) -> list[str]:
    if out_dtype(node).kind != "f":
        return sum_(b, node)  # (no NaN in integers: NumPy's nansum is the sum)
    return _reduction("ReduceSum", nan_fill=0.0)(b, node)


@rule_for(K.NANMEAN)
def nanmean(b: GraphBuilder, node: Node) -> list[str]:
    """The sum of the numbers over their count (0/0: NaN for a slice of NaNs, as NumPy)."""
    handled_params(node, axis=ANY_VALUE, keepdims=ANY_VALUE, dtype=ANY_VALUE)
    x, out = node.args[0], out_dtype(node)
    name = b.operand(x, out)
    axes = _axes_input(b, node, x)
    keep = int(bool(node.attrs.get("keepdims", False)))
    nan = b.one("IsNaN", [name])
    total = b.one(
        "ReduceSum", [b.one("Where", [nan, b.const(0.0, out), name]), *axes], keepdims=keep
    )
    count = b.one(
        "ReduceSum", [b.one("Cast", [b.one("Not", [nan])], to=elem_type(out)), *axes], keepdims=keep
    )
    return [b.one("Div", [total, count])]


@rule_for(K.SUM)
def sum_(b: GraphBuilder, node: Node) -> list[str]:
    out = out_dtype(node)
    if out.kind == "f":
        return _reduction("ReduceSum")(b, node)
    handled_params(node, axis=ANY_VALUE, keepdims=ANY_VALUE, dtype=ANY_VALUE)
    x = node.args[0]
    ndim = x.aval.ndim
    # int64 for every integer sum: wrapping addition has the same low bits at any width
    work = np.dtype(np.int64)
    total = integer_sum(
        b,
        b.operand(x, work),
        ndim,
        sorted_axes(node.attrs.get("axis"), ndim),
        bool(node.attrs.get("keepdims", False)),
    )
    return [b.cast(total, work, out)]


@rule_for(K.PROD)
def prod(b: GraphBuilder, node: Node) -> list[str]:
    if out_dtype(node).kind != "f":
        raise refuse(
            node,
            "onnxruntime computes integer products in floating point (wrong "
            "past 2**53, saturating where NumPy wraps)",
            "take the product of floats (x.astype(np.float64).prod())",
        )
    return _reduction("ReduceProd")(b, node)


RULES[K.MEAN] = _reduction("ReduceMean")
RULES[K.MAX] = _reduction("ReduceMax", nan_propagates=True)
RULES[K.MIN] = _reduction("ReduceMin", nan_propagates=True)
RULES[K.NANMAX] = _reduction("ReduceMax", nan_fill=-np.inf)
RULES[K.NANMIN] = _reduction("ReduceMin", nan_fill=np.inf)


def _truth_count(b: GraphBuilder, node: Node, negate: bool) -> str:
    handled_params(node, axis=ANY_VALUE, keepdims=ANY_VALUE)
    x = node.args[0]
    truth = b.operand(x, np.bool_)
    if negate:
        truth = b.one("Not", [truth])
    count = b.one(
        "ReduceSum",
        [b.one("Cast", [truth], to=elem_type(np.int64)), *_axes_input(b, node, x)],
        keepdims=int(bool(node.attrs.get("keepdims", False))),
    )
    return count


@rule_for(K.ANY)
def any_(b: GraphBuilder, node: Node) -> list[str]:
    count = _truth_count(b, node, negate=False)
    return [b.one("Greater", [count, b.const(0, np.int64)])]


@rule_for(K.ALL)
def all_(b: GraphBuilder, node: Node) -> list[str]:
    count = _truth_count(b, node, negate=True)
    return [b.one("Equal", [count, b.const(0, np.int64)])]


def _variance(b: GraphBuilder, node: Node) -> str:
    handled_params(node, axis=ANY_VALUE, keepdims=ANY_VALUE, ddof=ANY_VALUE, dtype=ANY_VALUE)
    x, out = node.args[0], out_dtype(node)
    name = b.operand(x, out)
    axes = _axes_input(b, node, x)
    keep = int(bool(node.attrs.get("keepdims", False)))
    mean = b.one("ReduceMean", [name, *axes], keepdims=1)
    dev = b.one("Sub", [name, mean])
    total = b.one("ReduceSum", [b.one("Mul", [dev, dev]), *axes], keepdims=keep)
    ones = b.one("Expand", [b.const(1.0, out), b.shape_of(name)])
    count = b.one("ReduceSum", [ones, *axes], keepdims=keep)
    ddof = b.const(float(node.attrs.get("ddof", 0)), out)
    n = b.one("Max", [b.one("Sub", [count, ddof]), b.const(0.0, out)])
    return b.one("Div", [total, n])


@rule_for(K.VAR)
def var(b: GraphBuilder, node: Node) -> list[str]:
    return [_variance(b, node)]


@rule_for(K.STD)
def std(b: GraphBuilder, node: Node) -> list[str]:
    return [b.one("Sqrt", [_variance(b, node)])]


def _arg_reduction(op_type: str) -> Rule:
    """argmax/argmin: the first extreme index, and NumPy's first NaN when there is one."""

    def rule(b: GraphBuilder, node: Node) -> list[str]:
        handled_params(node, axis=ANY_VALUE, keepdims=ANY_VALUE)
        x = node.args[0]
        dt = np.dtype(np.int32) if x.dtype == np.bool_ else wide(x.dtype)
        name = b.operand(x, dt)
        axis, keep = node.attrs.get("axis"), bool(node.attrs.get("keepdims", False))
        ndim = x.aval.ndim
        if axis is None:
            name, axis = b.one("Reshape", [name, b.ints([-1])]), 0
        else:
            axis = int(axis) % max(ndim, 1)
        k = int(keep and node.attrs.get("axis") is not None)
        result = b.one(op_type, [name], axis=axis, keepdims=k, select_last_index=0)
        if dt.kind == "f":
            nan = b.one("Cast", [b.one("IsNaN", [name])], to=elem_type(np.int32))
            first_nan = b.one("ArgMax", [nan], axis=axis, keepdims=k, select_last_index=0)
            has_nan = b.one(
                "Cast",
                [b.one("ReduceMax", [nan, b.ints([axis])], keepdims=k)],
                to=elem_type(np.bool_),
            )
            result = b.one("Where", [has_nan, first_nan, result])
        if keep and node.attrs.get("axis") is None:
            result = b.one("Reshape", [result, b.ints([1] * ndim)])
        return [b.cast(result, np.int64, out_dtype(node))]

    return rule


RULES[K.ARGMAX] = _arg_reduction("ArgMax")
RULES[K.ARGMIN] = _arg_reduction("ArgMin")


@rule_for(K.CUMSUM)
def cumsum(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, axis=ANY_VALUE, dtype=ANY_VALUE)
    x, out = node.args[0], out_dtype(node)
    work = np.dtype(np.int64) if out.kind in "iub" else out  # (wrapping: same low bits)
    name = b.operand(x, work)
    axis = node.attrs.get("axis")
    if axis is None:
        name, axis = b.one("Reshape", [name, b.ints([-1])]), 0
    axis = int(axis) % max(x.aval.ndim, 1)
    return [b.cast(b.one("CumSum", [name, b.const(axis, np.int64)]), work, out)]


@rule_for(K.UFUNC_ACCUMULATE)
def ufunc_accumulate(b: GraphBuilder, node: Node) -> list[str]:
    """``np.add.accumulate`` is a cumsum in the node's dtype; no other ufunc's running
    reduction (cumulative product, maximum...) has an ONNX op."""
    handled_params(node, ufunc=ANY_VALUE, axis=ANY_VALUE, dtype=ANY_VALUE)
    if node.attrs["ufunc"] is not np.add:
        raise refuse(
            node,
            f"ONNX has no running {node.attrs['ufunc'].__name__} (only CumSum)",
            "compute it outside the exported function and pass the result in",
        )
    attrs = {k: v for k, v in node.params.items() if k != "ufunc"}
    attrs.setdefault("axis", 0)
    as_cumsum = Node(node.name, K.CUMSUM, node.args, attrs, node.aval, node.source)
    return cumsum(b, as_cumsum)
