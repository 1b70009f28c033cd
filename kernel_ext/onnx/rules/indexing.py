"""Indexing: getitem as Slice/Gather, setitem and ufunc.at as ScatterND."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kernel_ext.ir import DynamicIndex, Node
from kernel_ext.onnx.builder import GraphBuilder
from kernel_ext.onnx.refusal import refuse
from kernel_ext.onnx.rules.common import (
    ANY_VALUE,
    INT64_MAX,
    INT64_MIN,
    K,
    handled_params,
    rank,
    rule_for,
)


class _Index:
    """One entry of an index template, resolved: ``kind`` is slice, int, array, mask or new."""

    def __init__(self, kind: str, value: Any, ndim: int = 1) -> None:
        self.kind, self.value, self.ndim = kind, value, ndim


def _resolve_index(
    b: GraphBuilder, node: Node, template: tuple, dyn: Sequence[Any], ndim: int
) -> list[_Index]:
    """The template's entries with run-time operands looked up and ``...`` expanded."""
    out: list[_Index | None] = []
    for c in template:
        if isinstance(c, DynamicIndex):
            arg = dyn[c.position - 1]
            if arg.dtype == np.bool_:
                out.append(_Index("mask", b.value(arg), arg.aval.ndim))
            elif arg.dtype.kind not in "iu":
                raise refuse(node, f"an index of dtype {arg.dtype}", "index with integers")
            elif arg.aval.ndim == 0:
                out.append(_Index("int", b.cast(b.value(arg), arg.dtype, np.int64)))
            else:
                out.append(
                    _Index("array", b.cast(b.value(arg), arg.dtype, np.int64), arg.aval.ndim)
                )
        elif isinstance(c, slice):
            out.append(_Index("slice", c))
        elif c is None:
            out.append(_Index("new", None, 0))
        elif c is Ellipsis:
            out.append(None)
        elif isinstance(c, (bool, np.bool_)):
            raise refuse(node, "a scalar boolean index", "index with an array mask")
        elif isinstance(c, (int, np.integer)):
            out.append(_Index("int", b.const(int(c), np.int64)))
        else:
            arr = np.asarray(c)
            if arr.dtype == np.bool_:
                out.append(_Index("mask", b.const(arr), arr.ndim))
            elif arr.dtype.kind in "iu" and arr.ndim == 0:
                out.append(_Index("int", b.const(int(arr), np.int64)))
            elif arr.dtype.kind in "iu":
                out.append(_Index("array", b.const(arr.astype(np.int64)), arr.ndim))
            else:
                raise refuse(node, f"an index {c!r}", "index with ints, slices or arrays")
    used = sum(
        0 if e is None or e.kind == "new" else (e.ndim if e.kind == "mask" else 1) for e in out
    )
    full: list[_Index | None] = [_Index("slice", slice(None)) for _ in range(ndim - used)]
    if any(e is None for e in out):
        at = out.index(None)
        out = out[:at] + full + [e for e in out[at + 1 :] if e is not None]
    else:
        out = out + full
    return out  # type: ignore[return-value]


def _slice_part(b: GraphBuilder, node: Node, value: Any, dyn: Sequence[Any], default: int) -> str:
    """One start/stop/step of a slice as a 1-element int64 tensor."""
    if value is None:
        return b.ints([default])
    if isinstance(value, DynamicIndex):
        arg = dyn[value.position - 1]
        return b.one("Reshape", [b.cast(b.value(arg), arg.dtype, np.int64), b.ints([1])])
    return b.ints([int(value)])


def _basic_slices(
    b: GraphBuilder, node: Node, x: str, entries: list[_Index], dyn: Sequence[Any]
) -> str:
    """One ONNX Slice for every non-trivial slice entry (input axes are unchanged)."""
    starts, ends, axes, steps = [], [], [], []
    axis = 0
    for e in entries:
        if e.kind == "new":
            continue
        if e.kind == "slice" and e.value != slice(None):
            s = e.value
            step_static = s.step if not isinstance(s.step, DynamicIndex) else None
            if isinstance(s.step, DynamicIndex):
                raise refuse(node, "a slice with a run-time step", "use a literal step")
            negative = step_static is not None and step_static < 0
            starts.append(_slice_part(b, node, s.start, dyn, INT64_MAX if negative else 0))
            ends.append(_slice_part(b, node, s.stop, dyn, INT64_MIN if negative else INT64_MAX))
            steps.append(b.ints([1 if step_static is None else int(step_static)]))
            axes.append(axis)
        axis += e.ndim if e.kind == "mask" else 1
    if not axes:
        return x

    def cat(parts):
        return parts[0] if len(parts) == 1 else b.one("Concat", parts, axis=0)

    return b.one("Slice", [x, cat(starts), cat(ends), b.ints(axes), cat(steps)])


def index_value(
    b: GraphBuilder, node: Node, x: str, ndim: int, template: tuple, dyn: Sequence[Any]
) -> str:
    """``x[template]`` as NumPy indexes: basic slicing, integers, one boolean mask, and
    integer arrays (Gather for one, GatherND for several, NumPy's placement of the result)."""
    entries = _resolve_index(b, node, template, dyn, ndim)
    x = _basic_slices(b, node, x, entries, dyn)
    if not any(e.kind in ("array", "mask") for e in entries):
        return _basic_ints_and_new_axes(b, x, entries)
    if any(e.kind == "new" for e in entries):
        raise refuse(node, "np.newaxis together with an array index", "index in two steps")
    positions = _advanced_positions(entries)
    if any(e.kind == "mask" for _, e in positions):
        if len(positions) != 1:
            raise refuse(
                node, "a boolean mask together with other array indices", "index in two steps"
            )
        ((p, e),) = positions
        return _masked(b, x, p, e)
    if len(positions) == 1:
        ((p, e),) = positions
        return b.one("Gather", [x, e.value], axis=p)
    return _gather_several(b, x, ndim, positions)


def _basic_ints_and_new_axes(b: GraphBuilder, x: str, entries: list[_Index]) -> str:
    """An index with no array or mask, its slices already applied: a Gather per integer
    (last axis first) and one Unsqueeze for the new axes."""
    removed, axis, new_axes, out_pos = [], 0, [], 0
    for e in entries:
        if e.kind == "int":
            removed.append((axis, e.value))
            axis += 1
        elif e.kind == "new":
            new_axes.append(out_pos)
            out_pos += 1
        else:
            axis += 1
            out_pos += 1
    for ax, value in reversed(removed):
        x = b.one("Gather", [x, value], axis=ax)
    if new_axes:
        x = b.one("Unsqueeze", [x, b.ints(new_axes)])
    return x


def _advanced_positions(entries: list[_Index]) -> list[tuple[int, _Index]]:
    """(input axis, entry) of each array, mask and integer entry."""
    positions, axis = [], 0
    for e in entries:
        if e.kind in ("array", "mask", "int"):
            positions.append((axis, e))
        axis += e.ndim if e.kind == "mask" else 1
    return positions


def _masked(b: GraphBuilder, x: str, p: int, e: _Index) -> str:
    """``x`` with the mask ``e`` over its axes from ``p``: those axes flattened into one,
    then Compress."""
    masked = b.one("ReduceProd", [b.shape_of(x, p, p + e.ndim)], keepdims=1)
    shape = b.one(
        "Concat",
        [b.shape_of(x, 0, p) if p else b.ints([]), masked, b.shape_of(x, p + e.ndim)],
        axis=0,
    )
    flat = b.one("Reshape", [x, shape], allowzero=1)
    return b.one("Compress", [flat, b.one("Reshape", [e.value, b.ints([-1])])], axis=p)


def _gather_several(b: GraphBuilder, x: str, ndim: int, positions: list[tuple[int, _Index]]) -> str:
    """Several integer indices: broadcast them, gather their axes moved to the front, and
    move the result's axes where NumPy puts them."""
    idx = [e.value for _, e in positions]
    for _ in range(2):
        for i in range(len(idx)):
            for j in range(len(idx)):
                if i != j:
                    idx[i] = b.one("Expand", [idx[i], b.shape_of(idx[j])])
    axes = [p for p, _ in positions]
    others = [a for a in range(ndim) if a not in axes]
    x = b.one("Transpose", [x], perm=axes + others)
    stacked = b.one("Concat", [b.one("Unsqueeze", [i, b.ints([-1])]) for i in idx], axis=-1)
    result = b.one("GatherND", [x, stacked])
    rank = max(e.ndim if e.kind == "array" else 0 for _, e in positions)
    contiguous = axes == list(range(axes[0], axes[0] + len(axes)))
    if contiguous and axes[0] > 0:
        lead = axes[0]
        perm = (
            [rank + i for i in range(lead)]
            + list(range(rank))
            + [rank + i for i in range(lead, len(others))]
        )
        result = b.one("Transpose", [result], perm=perm)
    return result


@rule_for(K.NONZERO)
def nonzero(b: GraphBuilder, node: Node) -> list[str]:
    """np.nonzero: ONNX's NonZero lists the indices in NumPy's (row-major) order."""
    x = node.args[0]
    if x.aval.ndim == 0:
        raise refuse(node, "np.nonzero of a 0-d value", "np.nonzero(np.atleast_1d(x))")
    found = b.one("NonZero", [b.to_bool(b.value(x), x.dtype)])
    return [b.one("Gather", [found, b.const(i, np.int64)], axis=0) for i in range(x.aval.ndim)]


@rule_for(K.ARGWHERE)
def argwhere(b: GraphBuilder, node: Node) -> list[str]:
    x = node.args[0]
    if x.aval.ndim == 0:
        raise refuse(node, "np.argwhere of a 0-d value", "np.argwhere(np.atleast_1d(x))")
    return [b.one("Transpose", [b.one("NonZero", [b.to_bool(b.value(x), x.dtype)])], perm=[1, 0])]


@rule_for(K.COMPRESS)
def compress(b: GraphBuilder, node: Node) -> list[str]:
    """np.compress: ONNX's Compress (a condition shorter than the axis selects from its
    start in both)."""
    handled_params(node, axis=ANY_VALUE)
    condition, a = node.args
    cond = b.one("Reshape", [b.operand(condition, np.bool_), b.ints([-1])])
    axis = node.attrs.get("axis")
    if axis is None:
        return [b.one("Compress", [b.value(a), cond])]
    return [b.one("Compress", [b.value(a), cond], axis=int(axis) % a.aval.ndim)]


@rule_for(K.GETITEM)
def getitem(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, index=ANY_VALUE)
    x = node.args[0]
    return [index_value(b, node, b.value(x), x.aval.ndim, node.attrs["index"], node.args[1:])]


def _positions(b: GraphBuilder, node: Node, x: Node, dyn: Sequence[Any]) -> tuple[str, str]:
    """(x flattened, the flat positions ``x[index]`` selects, in NumPy's order): an index
    grid indexed the way the op indexes ``x``."""
    name = b.value(x)
    count = b.one("Size", [name])
    grid = b.one("Range", [b.const(0, np.int64), count, b.const(1, np.int64)])
    grid = b.one("Reshape", [grid, b.shape_of(name)], allowzero=1)
    picked = index_value(b, node, grid, rank(x), node.attrs["index"], dyn)
    return b.one("Reshape", [name, b.ints([-1])]), picked


def _scatter(b: GraphBuilder, node: Node, value: Any, reduction: str) -> str:
    x = node.args[0]
    flat, picked = _positions(b, node, x, node.args[2:])
    values = b.one("Expand", [b.operand(value, x.dtype), b.shape_of(picked)])
    where_ = b.one("Unsqueeze", [b.one("Reshape", [picked, b.ints([-1])]), b.ints([-1])])
    updates = b.one("Reshape", [values, b.ints([-1])])
    attrs = {} if reduction == "none" else {"reduction": reduction}
    out = b.one("ScatterND", [flat, where_, updates], **attrs)
    return b.one("Reshape", [out, b.shape_of(b.value(x))], allowzero=1)


@rule_for(K.SETITEM)
def setitem(b: GraphBuilder, node: Node) -> list[str]:
    """``x[index] = value`` on a copy: the flat positions the index selects get the value
    broadcast to them (onnxruntime's ScatterND writes in order, so a repeated position ends
    with its last value, as NumPy's assignment)."""
    handled_params(node, index=ANY_VALUE)
    return [_scatter(b, node, node.args[1], "none")]


_AT_REDUCTIONS = {np.add: "add", np.multiply: "mul", np.maximum: "max", np.minimum: "min"}


@rule_for(K.UFUNC_AT)
def ufunc_at(b: GraphBuilder, node: Node) -> list[str]:
    """``np.add.at(a, index, b)``: ScatterND accumulating repeated positions, as ``at``."""
    handled_params(node, index=ANY_VALUE, ufunc=ANY_VALUE)
    ufunc = node.attrs["ufunc"]
    value = node.args[1]
    reduction = _AT_REDUCTIONS.get(ufunc)
    if reduction is None or value is None:
        raise refuse(
            node,
            f"{getattr(ufunc, '__name__', ufunc)}.at has no ONNX scatter form",
            "use np.add.at, np.multiply.at, np.maximum.at or np.minimum.at",
        )
    return [_scatter(b, node, value, reduction)]
