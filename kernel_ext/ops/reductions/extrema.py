"""Extrema and arg-extrema: max, min, argmax, argmin.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`); the abstract
evaluation and the lowering are the group's (:mod:`.generic`); argmax and argmin have no
gradient (``autodiff.rules.ZERO_GRADIENT``)."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ...autodiff.rules import NOTES, VJP, Cotangent, Primal
from ...backends.codegen.reductions import (
    REDUCTION_PLANS,
    Reduced,
    ReductionPlan,
    accumulator,
    identity,
)
from ...backends.emit.literals import Unsupported, const_source, ctor, literal_value
from ...backends.emit.source import Source
from ...backends.static_shapes import aval_of_node, ranked_shape
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...backends.whole_graph_ops.common import (
    Rule,
    Writer,
    array_arg,
    checked_axis,
    only_params,
    shape_tuple,
)
from ...ir import Node, OpKind
from ...ir.params import ReduceParams, UfuncMethodParams
from ...onnx.builder import GraphBuilder, elem_type
from ...onnx.builder import Rule as OnnxRule
from ...onnx.rules.common import ANY_VALUE, handled_params, out_dtype, wide
from ...onnx.rules.common import RULES as ONNX
from ...trace.numpy_api.common import implements
from .common import expand_to, first_occurrence, reduction, reduction_parts
from .entry_points import arg_handler, minmax_handler

K = OpKind

# --- max, min ---

implements(np.max, np.amax)(minmax_handler(K.MAX))
implements(np.min, np.amin)(minmax_handler(K.MIN))


@VJP.register(K.MAX, K.MIN)
def _max(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = reduction_parts(p)

    def dx() -> Any:
        hit = x == expand_to(p.out, x, axis, keepdims)
        return np.where(first_occurrence(hit, axis), expand_to(g, x, axis, keepdims), 0.0)

    return [dx]


NOTES.add(K.MAX, "ties: the first occurrence (C order over the axes), as np.argmax documents")
NOTES.add(K.MIN, "ties: the first occurrence (C order over the axes), as np.argmin documents")


@REDUCTION_PLANS.register(K.MAX, K.MIN)
def _extremum_plan(r: Reduced) -> ReductionPlan:
    """``max``/``min``: accumulated in the operand's own dtype."""
    op, out_dt = r.node.op, r.out_dt
    if out_dt != r.in_dt:
        raise Unsupported("max/min changing dtype")
    return ReductionPlan(
        op, r.axis, r.keepdims, out_dt, out_dt, out_dt, identity(accumulator(op), out_dt)
    )


# Whole graph: over several axes (the fused reductions cover one axis, or all of them).
# The extreme of each row, in any order: it is unique (so NumPy's) unless a NaN is among
# the values (which NaN NumPy returns depends on its order and SIMD width) or the extreme is
# a zero with both signs present (NumPy keeps one by its order): those rows signal.
_EXTREME_ROWS = """\
@_inline
def _extreme_rows(y2, out, is_max, has_init, init):
    for r in range(y2.shape[0]):
        row = y2[r]
        m = init if has_init else row[0]
        if m != m:
            return True
        for v in row:
            if v != v:
                return True
            if (v > m) if is_max else (v < m):
                m = v
        if m == 0:
            neg = has_init and init == 0 and np.signbit(init)
            pos = has_init and init == 0 and not np.signbit(init)
            for v in row:
                if v == 0:
                    if np.signbit(v):
                        neg = True
                    else:
                        pos = True
            if neg and pos:
                return True
        out[r] = m
    return False
"""


def _several_axes(node: Node) -> bool:
    """A max/min over an axis tuple of two or more axes, not all of them (the fused
    reductions cover the others)."""
    x, axis = node.args[0], cast("ReduceParams", node.params).axis
    if (
        not isinstance(x, Node)
        or aval_of_node(x).shape is None
        or not isinstance(axis, tuple)
        or len(axis) < 2
    ):
        return False
    rank = len(ranked_shape(x))
    try:
        return sorted({int(a) % rank for a in axis}) != list(range(rank))
    except (TypeError, ZeroDivisionError):
        return True


def check_extreme(node: Node) -> tuple[Node, list[int], str | None]:
    """The reduced array, its reduced axes (sorted) and the ``initial`` value's source."""
    ufunc = node.op is OpKind.UFUNC_REDUCE
    params = cast("ReduceParams | UfuncMethodParams", node.params)
    only_params(node, {"axis", "keepdims"} | ({"ufunc", "initial"} if ufunc else set()))
    x = array_arg(node, 0, "a value")
    dt = np.dtype(x.dtype)
    if np.dtype(node.dtype) != dt:
        raise Unsupported(f"{node.op.value} changing the dtype")
    rank = len(ranked_shape(x))
    axis = params.axis  # (each class's default: None for max/min, 0 for ufunc.reduce)
    axis = (
        tuple(range(rank))
        if axis is None
        else tuple(axis)
        if isinstance(axis, (tuple, list))
        else (axis,)
    )
    axes = sorted({checked_axis(a, rank, node.op.value) for a in axis})
    if len(axes) != len(axis):
        raise Unsupported(f"{node.op.value} with a repeated axis")
    # ``initial`` is a field of ufunc.reduce only, MISSING there when not given: no initial
    # value then, as for ``initial=None``
    init = params.initial if isinstance(params, UfuncMethodParams) and "initial" in params else None
    if init is None:
        return x, axes, None
    return x, axes, const_source(literal_value(init, dt), dt)


def emit_extreme(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    x_node, axes, init = check_extreme(node)
    rank = len(ranked_shape(x_node))
    x = args[0].name
    dts = ctor(np.dtype(node.dtype))
    kept = [d for d in range(rank) if d not in axes]
    perm = kept + axes
    y = w.fresh("y")
    src = x if perm == list(range(rank)) else f"np.transpose({x}, {tuple(perm)!r})"
    out.line(f"{y} = np.ascontiguousarray({src})")
    rows = " * ".join(f"{x}.shape[{d}]" for d in kept) or "1"
    size = " * ".join(f"{x}.shape[{d}]" for d in axes) or "1"
    if init is None:  # NumPy: a zero-size reduction without an initial value is an error
        w.signal(out, f"{size} == 0")
    y2, o = w.fresh("y"), w.fresh("o")
    out.line(f"{y2} = {y}.reshape(({rows}, {size}))")
    out.line(f"{o} = np.empty({rows}, {dts})")
    w.helpers["_extreme_rows"] = _EXTREME_ROWS
    params = cast("ReduceParams | UfuncMethodParams", node.params)
    # (max/min's parameters have no ufunc; ufunc.reduce's always name it)
    is_max = node.op is OpKind.MAX or (
        isinstance(params, UfuncMethodParams) and params.ufunc is np.maximum
    )
    w.signal(
        out,
        f"_extreme_rows({y2}, {o}, {is_max}, {init is not None}, "
        f"{init if init is not None else f'{dts}(0)'})",
    )
    keep = bool(params.keepdims)
    dims = [("1" if d in axes else f"{x}.shape[{d}]") for d in range(rank) if keep or d not in axes]
    if not dims:
        out.line(f"{t} = {o}[0]")
        return "scalar"
    out.line(f"{t} = {o}.reshape({shape_tuple(dims)})")
    return "fresh"


WHOLE_GRAPH.add(K.MAX, Rule(lambda n: check_extreme(n) and None, emit_extreme, _several_axes))
WHOLE_GRAPH.add(K.MIN, Rule(lambda n: check_extreme(n) and None, emit_extreme, _several_axes))

ONNX.add(K.MAX, reduction("ReduceMax", nan_propagates=True))
ONNX.add(K.MIN, reduction("ReduceMin", nan_propagates=True))


# --- argmax, argmin ---

implements(np.argmax)(arg_handler(K.ARGMAX))
implements(np.argmin)(arg_handler(K.ARGMIN))


def _check_arg_reduce(node: Node) -> None:
    x = node.args[0]
    if (
        not isinstance(x, Node)
        or aval_of_node(x).shape is None
        or np.dtype(x.dtype).kind not in "biuf"
    ):
        raise Unsupported(f"{node.op.value} of {getattr(x, 'aval', x)}")
    if set(node.params) - {"axis", "keepdims"}:
        raise Unsupported(f"{node.op.value} with {sorted(node.params)}")
    axis = cast("ReduceParams", node.params).axis
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise Unsupported(f"{node.op.value} over axes {axis!r}")


# argmin/argmax of one non-empty row: NumPy's answer is the first NaN if there is one, else
# the first extreme (ties keep the earliest: strict comparison).
_ARG_REDUCE = """\
@_inline
def {name}1(row):
    best = row[0]
    k = 0
    if best == best:
        for j in range(1, row.shape[0]):
            v = row[j]
            if v != v:
                k = j
                break
            if v {cmp} best:
                best = v
                k = j
    return k
"""


def _emit_arg_reduce(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """``np.argmin``/``np.argmax``: the first extreme, or the first NaN (NumPy's rule),
    along one axis (moved last) or over the flattened array."""
    x = args[0]
    name = f"_{node.op.value}"
    w.helpers[name + "1"] = _ARG_REDUCE.format(
        name=name, cmp="<" if node.op is OpKind.ARGMIN else ">"
    )
    params = cast("ReduceParams", node.params)
    axis, keepdims = params.axis, params.keepdims
    rank = len(node.args[0].aval.shape)
    if x.scalar:  # a 0-d value: NumPy's answer is 0
        out.line(f"{t} = np.int64(0)")
        return "scalar"
    if axis is None or rank == 1:
        flat = w.fresh("r")
        out.line(f"{flat} = np.ascontiguousarray({x.name}).ravel()")
        w.signal(out, f"{flat}.size == 0")  # NumPy's empty-sequence error
        out.line(f"{t} = np.int64({name}1({flat}))")
        if not keepdims:
            return "scalar"
        out.line(f"{t} = np.full({(1,) * rank!r}, {t})")
        return "fresh"
    ax = int(axis) % rank
    perm = tuple(a for a in range(rank) if a != ax) + (ax,)
    v = w.fresh("v")
    out.line(f"{v} = np.transpose({x.name}, {perm!r})")
    w.signal(out, f"{v}.shape[{rank - 1}] == 0")
    shape = "(" + "".join(f"{v}.shape[{a}], " for a in range(rank - 1)) + ")"
    out.line(f"{t} = np.empty({shape}, np.int64)")
    with out.block(f"for _ix in np.ndindex({t}.shape):") as body:
        body.line(f"{t}[_ix] = {name}1({v}[_ix])")
    if keepdims:
        out.line(f"{t} = np.expand_dims({t}, {ax})")
    return "fresh"


WHOLE_GRAPH.add(K.ARGMIN, Rule(_check_arg_reduce, _emit_arg_reduce))
WHOLE_GRAPH.add(K.ARGMAX, Rule(_check_arg_reduce, _emit_arg_reduce))


def _arg_reduction(op_type: str) -> OnnxRule:
    """argmax/argmin: the first extreme index, and NumPy's first NaN when there is one."""

    def rule(b: GraphBuilder, node: Node) -> list[str]:
        handled_params(node, axis=ANY_VALUE, keepdims=ANY_VALUE)
        x = node.args[0]
        dt = np.dtype(np.int32) if x.dtype == np.bool_ else wide(x.dtype)
        name = b.operand(x, dt)
        params = cast("ReduceParams", node.params)
        axis, keep = params.axis, bool(params.keepdims)
        ndim = x.aval.ndim
        if axis is None:
            name, axis = b.one("Reshape", [name, b.ints([-1])]), 0
        else:
            axis = int(axis) % max(ndim, 1)
        k = int(keep and params.axis is not None)
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
        if keep and params.axis is None:
            result = b.one("Reshape", [result, b.ints([1] * ndim)])
        return [b.cast(result, np.int64, out_dtype(node))]

    return rule


ONNX.add(K.ARGMAX, _arg_reduction("ArgMax"))
ONNX.add(K.ARGMIN, _arg_reduction("ArgMin"))
