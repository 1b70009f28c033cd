"""Sorting: sort and argsort, by TopK (the shape ops' rules live in :mod:`kernel_ext.ops.shape`)."""

from __future__ import annotations

import numpy as np

from kernel_ext.ir import Node
from kernel_ext.onnx.builder import GraphBuilder, elem_type
from kernel_ext.onnx.refusal import refuse
from kernel_ext.onnx.rules.common import (
    ANY_VALUE,
    K,
    handled_params,
    rule_for,
    wide,
)


@rule_for(K.SORT)
def sort(b: GraphBuilder, node: Node) -> list[str]:
    """Sorted values (ties are equal values, so any sort ``kind`` gives the same result) by
    an ascending TopK over the whole axis; NaNs last, as NumPy orders them."""
    handled_params(node, axis=ANY_VALUE, kind=ANY_VALUE, stable=ANY_VALUE)
    x = node.args[0]
    name, axis = b.value(x), node.attrs.get("axis", -1)
    dt = np.dtype(np.int32) if x.dtype == np.bool_ else wide(x.dtype)
    name = b.cast(name, x.dtype, dt)
    if axis is None:
        name, axis = b.one("Reshape", [name, b.ints([-1])]), 0
    axis = int(axis) % max(x.aval.ndim, 1)
    count = b.shape_of(name, axis, axis + 1)
    if dt.kind != "f":
        values = b.add("TopK", [name, count], 2, axis=axis, largest=0, sorted=1)[0]
        return [b.cast(values, dt, x.dtype)]
    nan = b.one("IsNaN", [name])
    finite = b.one("Where", [nan, b.const(np.inf, dt), name])
    values = b.add("TopK", [finite, count], 2, axis=axis, largest=0, sorted=1)[0]
    nans = b.one(
        "ReduceSum", [b.one("Cast", [nan], to=elem_type(np.int64)), b.ints([axis])], keepdims=1
    )
    size = b.one("Squeeze", [count, b.ints([0])])
    position = b.one("Range", [b.const(0, np.int64), size, b.const(1, np.int64)])
    shape = [1] * x.aval.ndim if node.attrs.get("axis") is not None else [1]
    shape[axis] = -1
    position = b.one("Reshape", [position, b.ints(shape)])
    last = b.one("GreaterOrEqual", [position, b.one("Sub", [size, nans])])
    return [b.one("Where", [last, b.const(np.nan, dt), values])]


_STABLE_KINDS = ("stable", "mergesort")


@rule_for(K.ARGSORT)
def argsort(b: GraphBuilder, node: Node) -> list[str]:
    """A stable argsort: ONNX's TopK breaks ties by the lower index, which is NumPy's
    ``kind="stable"``; NaNs go last in a second stable pass (as NumPy sorts them). NumPy's
    default kind orders ties as its introsort happens to, so only a stable sort is exported."""
    handled_params(node, axis=ANY_VALUE, kind=ANY_VALUE, stable=ANY_VALUE)
    if not (node.attrs.get("kind") in _STABLE_KINDS or node.attrs.get("stable") is True):
        raise refuse(
            node,
            "NumPy's default sort kind orders equal values as its introsort "
            "happens to, which no ONNX op reproduces",
            "np.argsort(x, kind='stable') (ties in index order), which ONNX's TopK is",
        )
    x = node.args[0]
    dt = np.dtype(np.int32) if x.dtype == np.bool_ else wide(x.dtype)
    name = b.cast(b.value(x), x.dtype, dt)
    axis = node.attrs.get("axis", -1)
    if axis is None:
        name, axis = b.one("Reshape", [name, b.ints([-1])]), 0
    axis = int(axis) % max(x.aval.ndim, 1)
    count = b.shape_of(name, axis, axis + 1)
    if dt.kind != "f":
        return [b.add("TopK", [name, count], 2, axis=axis, largest=0, sorted=1)[1]]
    nan = b.one("IsNaN", [name])
    keys = b.one("Where", [nan, b.const(np.inf, dt), name])
    order = b.add("TopK", [keys, count], 2, axis=axis, largest=0, sorted=1)[1]
    flags = b.one(
        "GatherElements", [b.one("Cast", [nan], to=elem_type(np.int32)), order], axis=axis
    )
    nan_last = b.add("TopK", [flags, count], 2, axis=axis, largest=0, sorted=1)[1]
    return [b.one("GatherElements", [order, nan_last], axis=axis)]
