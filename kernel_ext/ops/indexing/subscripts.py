"""getitem, setitem: ``x[index]`` and ``x[index] = value`` (a functional update), with basic
and advanced (integer array, boolean mask) indexes.

Shapes come from :func:`kernel_ext.ir.abstract.getitem_shape` (NumPy asked on zero-strided
probes); the whole-graph compiler writes a basic index itself (its views and in-place writes:
``backends/whole_graph/indexing.py``) and an advanced one through the rule here, whose gather
and scatter are in :mod:`.fancy_indexing`. ``index_value`` and ``scatter`` (ONNX) serve
``ufunc.at`` too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from ...autodiff.rules import NOTES, VJP, Cotangent, Primal, unbroadcast
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...backends.whole_graph_ops.common import Rule
from ...ir import DynamicIndex, Node, OpKind
from ...ir.abstract import (
    ABSTRACT_EVAL,
    AbstractValue,
    broadcast_shapes,
    format_shape,
    getitem_shape,
)
from ...ir.abstract.core import shape_of
from ...ir.interpreter import LOWER, build_index
from ...ir.params import IndexParams, UfuncAtParams
from ...onnx.builder import GraphBuilder
from ...onnx.refusal import refuse
from ...onnx.rules.common import ANY_VALUE, INT64_MAX, INT64_MIN, handled_params, rank
from ...onnx.rules.common import RULES as ONNX
from ...passes.simplify import RULES as SIMPLIFY
from ...passes.simplify import Proposal
from ...trace import Tensor, bind
from .fancy_indexing import check_fancy, claims_fancy, emit_gather, emit_scatter

K = OpKind

# --- getitem, setitem ---


@ABSTRACT_EVAL.register(K.GETITEM)
def _abstract_getitem(params: IndexParams, x: AbstractValue, *dyn: AbstractValue) -> AbstractValue:
    for d in dyn:
        if not (np.issubdtype(d.dtype, np.integer) or d.dtype == np.bool_):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                f"(`None`) and integer or boolean arrays are valid indices; got a "
                f"traced {d}"
            )
    return AbstractValue(getitem_shape(x.shape, params.index, dyn), x.dtype)


@ABSTRACT_EVAL.register(K.SETITEM)
def _abstract_setitem(
    params: IndexParams, x: AbstractValue, value: Any, *dyn: AbstractValue
) -> AbstractValue:
    target = getitem_shape(x.shape, params.index, dyn)
    vshape = shape_of(value)
    if target is not None and vshape is not None:
        merged = broadcast_shapes(vshape, target)
        if merged is not None and len(merged) > len(target):
            raise ValueError(
                f"could not broadcast input array from shape {format_shape(vshape)} "
                f"into shape {format_shape(target)}"
            )
    # NumPy casts assigned values unsafely (x_int[0] = 1.5 stores 1): no dtype check.
    return x


def _is_static(template: tuple[Any, ...]) -> bool:
    return not any(
        isinstance(c, DynamicIndex)
        or (
            isinstance(c, slice)
            and any(isinstance(p, DynamicIndex) for p in (c.start, c.stop, c.step))
        )
        for c in template
    )


@LOWER.register(K.GETITEM)
def _lower_getitem(node: Node) -> Callable[..., Any]:
    params = cast("IndexParams", node.params)
    template = params.index
    if _is_static(template):
        return lambda x: x[template]
    return lambda x, *dyn: x[build_index(template, dyn)]


@LOWER.register(K.SETITEM)
def _lower_setitem(node: Node) -> Callable[..., Any]:
    params = cast("IndexParams", node.params)
    template = params.index

    def setitem(x: Any, value: Any, *dyn: Any) -> np.ndarray:
        out = np.array(x, copy=True)
        out[build_index(template, dyn)] = value
        return out

    return setitem


def _is_full_slice(c: Any) -> bool:
    if c is Ellipsis:
        return True
    return (
        isinstance(c, slice)
        and c.start in (None, 0)
        and c.stop is None
        and c.step in (None, 1)
        and type(c.start) is not bool
        and type(c.step) is not bool
    )


def _getitem_of_full_slices(node: Node, args: tuple[Any, ...]) -> Proposal:
    """``x[:]``, ``x[...]``, ``x[:, :]`` -> ``x``."""
    params = cast("IndexParams", node.params)
    template = params.index
    if len(args) == 1 and template and all(_is_full_slice(c) for c in template):
        return cast("Node", args[0])
    return None


SIMPLIFY.add(K.GETITEM, [_getitem_of_full_slices])


def _has_integer_arrays(template: tuple[Any, ...], dyn: Sequence[Any]) -> bool:
    """Does the index hold an integer array (positions may repeat, so writes would lose
    contributions that a scatter-add keeps)?"""
    for c in template:
        if isinstance(c, DynamicIndex):
            d = dyn[c.position - 1]
            if d.dtype != np.bool_ and d.ndim > 0:
                return True
        elif isinstance(c, (list, np.ndarray)) and np.asarray(c).dtype != np.bool_:
            return True
    return False


def scatter_add(x: Any, template: tuple[Any, ...], dyn: Sequence[Any], g: Any) -> Any:
    """``zeros_like(x)`` with ``g`` added at ``x[index]`` (repeated positions add up)."""
    if not _has_integer_arrays(template, dyn):
        zeros = np.zeros_like(x, dtype=g.dtype)
        return bind(K.SETITEM, (zeros, g, *dyn), {"index": template})
    if x.shape is None or None in x.shape:
        raise NotImplementedError(
            "the gradient of indexing with integer arrays needs the indexed array's static shape"
        )
    # The flat position of every picked element: the same index applied to an iota array.
    iota = np.arange(math.prod(x.shape)).reshape(x.shape)
    where = cast("Tensor", bind(K.GETITEM, (iota, *dyn), {"index": template}))
    sums = np.bincount(np.reshape(where, (-1,)), weights=np.reshape(g, (-1,)), minlength=iota.size)
    return np.reshape(sums, x.shape).astype(g.dtype)


@VJP.register(K.GETITEM)
def _vjp_getitem(p: Primal, g: Any) -> list[Cotangent]:
    params = cast("IndexParams", p.params)
    x, *dyn = p.args
    return [lambda: scatter_add(x, params.index, dyn, g)] + [None] * len(dyn)


@VJP.register(K.SETITEM)
def _vjp_setitem(p: Primal, g: Any) -> list[Cotangent]:
    params = cast("IndexParams", p.params)
    _x, value, *dyn = p.args
    template = params.index

    def dx() -> Any:
        return bind(K.SETITEM, (g, 0.0, *dyn), {"index": template})

    def dvalue() -> Any:
        picked = bind(K.GETITEM, (g, *dyn), {"index": template})
        return unbroadcast(picked, p.shape(1))

    return [dx, dvalue if isinstance(value, Tensor) else None] + [None] * len(dyn)


NOTES.add(K.GETITEM, "static, dynamic, boolean masks; integer arrays scatter-add (np.bincount)")
NOTES.add(K.SETITEM, "repeated integer-array positions: undefined, as NumPy's write order")

# an advanced index is this rule's (fancy_indexing.py), a basic one the writer's own
WHOLE_GRAPH.add(K.GETITEM, Rule(check_fancy, emit_gather, claims_fancy))
WHOLE_GRAPH.add(K.SETITEM, Rule(check_fancy, emit_scatter, claims_fancy))


# ONNX: the index as Slice, Gather, GatherND and Compress nodes (also ufunc.at's scatter)


class _Index:
    """One entry of an index template, resolved: ``kind`` is slice, int, array, mask or new."""

    def __init__(self, kind: str, value: Any, ndim: int = 1) -> None:
        self.kind, self.value, self.ndim = kind, value, ndim


def _resolve_index(
    b: GraphBuilder, node: Node, template: tuple[Any, ...], dyn: Sequence[Any], ndim: int
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

    def cat(parts: list[str]) -> str:
        return parts[0] if len(parts) == 1 else b.one("Concat", parts, axis=0)

    return b.one("Slice", [x, cat(starts), cat(ends), b.ints(axes), cat(steps)])


def index_value(
    b: GraphBuilder, node: Node, x: str, ndim: int, template: tuple[Any, ...], dyn: Sequence[Any]
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


@ONNX.register(K.GETITEM)
def _onnx_getitem(b: GraphBuilder, node: Node) -> list[str]:
    params = cast("IndexParams", node.params)
    handled_params(node, index=ANY_VALUE)
    x = node.args[0]
    return [index_value(b, node, b.value(x), x.aval.ndim, params.index, node.args[1:])]


def _positions(b: GraphBuilder, node: Node, x: Node, dyn: Sequence[Any]) -> tuple[str, str]:
    """(x flattened, the flat positions ``x[index]`` selects, in NumPy's order): an index
    grid indexed the way the op indexes ``x``."""
    params = cast("IndexParams | UfuncAtParams", node.params)
    name = b.value(x)
    count = b.one("Size", [name])
    grid = b.one("Range", [b.const(0, np.int64), count, b.const(1, np.int64)])
    grid = b.one("Reshape", [grid, b.shape_of(name)], allowzero=1)
    picked = index_value(b, node, grid, rank(x), params.index, dyn)
    return b.one("Reshape", [name, b.ints([-1])]), picked


def scatter(b: GraphBuilder, node: Node, value: Any, reduction: str) -> str:
    x = node.args[0]
    flat, picked = _positions(b, node, x, node.args[2:])
    values = b.one("Expand", [b.operand(value, x.dtype), b.shape_of(picked)])
    where_ = b.one("Unsqueeze", [b.one("Reshape", [picked, b.ints([-1])]), b.ints([-1])])
    updates = b.one("Reshape", [values, b.ints([-1])])
    attrs = {} if reduction == "none" else {"reduction": reduction}
    out = b.one("ScatterND", [flat, where_, updates], **attrs)
    return b.one("Reshape", [out, b.shape_of(b.value(x))], allowzero=1)


@ONNX.register(K.SETITEM)
def _onnx_setitem(b: GraphBuilder, node: Node) -> list[str]:
    """``x[index] = value`` on a copy: the flat positions the index selects get the value
    broadcast to them (onnxruntime's ScatterND writes in order, so a repeated position ends
    with its last value, as NumPy's assignment)."""
    handled_params(node, index=ANY_VALUE)
    return [scatter(b, node, node.args[1], "none")]
