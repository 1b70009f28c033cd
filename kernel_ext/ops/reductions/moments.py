"""Moments: var, std.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`); the abstract
evaluation and the lowering are the group's (:mod:`.generic`). The whole-graph form computes
NumPy's own algorithm with NumPy's sums; ``nanmean``'s (:mod:`.nan`) shares it."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ...autodiff.rules import VJP, Cotangent, Primal
from ...backends.emit.literals import Unsupported, ctor
from ...backends.emit.source import Source
from ...backends.static_shapes import ranked_shape
from ...backends.whole_graph_ops.common import (
    LOOP3,
    Rule,
    Writer,
    array_arg,
    checked_axis,
    lanes_along,
    loop_scratch,
    need_ufunc_loop,
    only_params,
    result_dtype,
    shape_tuple,
    ufunc_loop,
)
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...ir import Node, OpKind
from ...ir.params import MomentParams
from ...onnx.builder import GraphBuilder
from ...onnx.rules.common import ANY_VALUE, handled_params, out_dtype
from ...onnx.rules.common import RULES as ONNX
from ...trace.numpy_api.common import implements
from .common import ReductionParams, axes_input, count, expand_to, reduction_parts
from .entry_points import moment_handler

K = OpKind

# --- var, std ---

implements(np.var)(moment_handler(K.VAR))
implements(np.std)(moment_handler(K.STD))


@VJP.register(K.VAR, K.STD)
def _var(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = reduction_parts(p)
    ddof = cast("MomentParams", p.params).ddof

    def dx() -> Any:
        centred = x - np.mean(x, axis=axis, keepdims=True)
        scale = 2.0 / (count(x, axis) - ddof)
        gx = expand_to(g, x, axis, keepdims)
        if p.node.op is K.STD:
            gx = gx / (2.0 * expand_to(p.out, x, axis, keepdims))
        return gx * scale * centred

    return [dx]


# ``acc += sum of x3 along axis 1`` as NumPy's reduction calls its add loop on a C-contiguous
# array: with nothing after the axis (``inner == 1``) the loop's reduce form (output stride
# 0: a pairwise sum per lane), else the binary form once per step along the axis (each
# output element summed in order). ``acc`` starts at +0.0, as NumPy's does.
SUM_AXIS = """\
@_inline
def _sum_axis(x3, acc, f, d, pp, dims, st):
    outer, n, inner = x3.shape
    if inner == 1:
        for a in range(outer):
            p = acc[a].ctypes.data
            _loop3(f, d, pp, dims, st, p, x3[a].ctypes.data, p, n, 0, x3.strides[1], 0)
    else:
        for a in range(outer):
            p = acc[a].ctypes.data
            for i in range(n):
                _loop3(f, d, pp, dims, st, p, x3[a, i].ctypes.data, p, inner,
                       acc.strides[1], x3.strides[2], acc.strides[1])
"""


def _reduce_axis(node: Node, rank: int) -> int | None:
    """The one axis of a var/std/nanmean (None: all of them), or Unsupported."""
    axis = cast("ReductionParams", node.params).axis
    if isinstance(axis, (tuple, list)):
        if len(axis) != 1:
            if sorted(checked_axis(a, rank, node.op.value) for a in axis) == list(range(rank)):
                return None
            raise Unsupported(f"{node.op.value} over several axes")
        axis = axis[0]
    if axis is None or rank <= 1:
        if axis is not None:
            checked_axis(axis, max(rank, 1), node.op.value)
        return None
    return checked_axis(axis, rank, node.op.value)


def check_moments(node: Node) -> tuple[Node, np.dtype, int | None]:
    allowed = (
        {"axis", "keepdims", "ddof"} if node.op is not OpKind.NANMEAN else {"axis", "keepdims"}
    )
    only_params(node, allowed)
    x = array_arg(node, 0, "a value")
    dt = result_dtype(node)
    if np.dtype(x.dtype) != dt or dt.kind != "f":
        # integer inputs are summed through NumPy's cast buffers, in chunks: not modelled
        raise Unsupported(f"{node.op.value} of {x.dtype} (float32/float64 only)")
    params = cast("ReductionParams", node.params)
    # (nanmean's parameters have no ddof: its mean is var's with ddof 0)
    ddof = params.ddof if isinstance(params, MomentParams) else 0
    if not isinstance(ddof, (int, np.integer)) or isinstance(ddof, bool):
        raise Unsupported(f"{node.op.value} with ddof={ddof!r} (an int only)")
    if len(ranked_shape(x)) == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    need_ufunc_loop(np.add, dt)
    return x, dt, _reduce_axis(node, len(ranked_shape(x)))


def moment_input(
    w: Writer, x: str, rank: int, axis: int | None, out: Source
) -> tuple[str, str, str, str]:
    """``x`` as a C-contiguous ``(outer, n, inner)`` view, its lane expressions. An input
    that is not C-contiguous signals: NumPy would sum it in another order."""
    if rank == 1:  # a 1-D array of any positive stride is summed as it is
        w.signal(out, f"{x}.strides[0] < 0")
        v = w.fresh("x")
        out.line(f"{v} = {x}[None, :, None]")
        return v, "1", f"{x}.shape[0]", "1"
    w.signal(out, f"not {x}.flags.c_contiguous")
    c = w.fresh("x")
    out.line(f"{c} = np.ascontiguousarray({x})")  # a C view, typed as one
    outer, n, inner = lanes_along(c, rank, axis)
    v = w.fresh("x")
    out.line(f"{v} = {c}.reshape(({outer}, {n}, {inner}))")
    return v, outer, n, inner


def finish(
    w: Writer,
    node: Node,
    value: str,
    rank: int,
    axis: int | None,
    x: str,
    t: str,
    out: Source,
) -> str:
    """The ``(outer, inner)`` result ``value`` in NumPy's shape (keepdims or not)."""
    keep = bool(cast("ReductionParams", node.params).keepdims)
    if axis is None and not keep:
        out.line(f"{t} = {value}[0, 0]")
        return "scalar"
    if axis is None:
        dims = ["1"] * rank
    else:
        dims = [f"{x}.shape[{d}]" if d != axis else "1" for d in range(rank)]
        if not keep:
            del dims[axis]
    out.line(f"{t} = {value}.reshape({shape_tuple(dims)})")
    return "fresh"


def _emit_moment(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """``numpy/_core/_methods.py``'s ``_var`` (and ``_std``) step by step: the mean (a sum,
    divided as ``true_divide(sum, intp count)`` divides: in float64, then cast), the squared
    deviations, their sum divided by ``max(count - ddof, 0)``; a count at most ``ddof``
    (NumPy's warning, an inf or NaN) or an empty input signals."""
    x_node, dt, axis = check_moments(node)
    rank = len(ranked_shape(x_node))
    dts = ctor(dt)
    x = args[0].name
    x3, outer, n, inner = moment_input(w, x, rank, axis, out)
    ddof = int(cast("MomentParams", node.params).ddof)
    w.signal(out, f"{n} - {ddof} <= 0")
    w.helpers["_loop3"] = LOOP3
    w.helpers["_sum_axis"] = SUM_AXIS
    loop = f"{ufunc_loop(w, np.add, (dt,) * 3)}, {loop_scratch(w)}"
    mean, dev, acc = w.fresh("mean"), w.fresh("dev"), w.fresh("acc")
    out.line(f"{mean} = np.zeros(({outer}, {inner}), {dts})")
    out.line(f"_sum_axis({x3}, {mean}, {loop})")
    out.line(f"{mean} = (({mean}.astype(np.float64)) / np.float64({n})).astype({dts})")
    out.line(f"{dev} = {x3} - {mean}.reshape(({outer}, 1, {inner}))")
    out.line(f"{dev} = {dev} * {dev}")
    out.line(f"{acc} = np.zeros(({outer}, {inner}), {dts})")
    out.line(f"_sum_axis({dev}, {acc}, {loop})")
    out.line(f"{acc} = ({acc}.astype(np.float64) / np.float64({n} - {ddof})).astype({dts})")
    if node.op is OpKind.STD:
        out.line(f"{acc} = np.sqrt({acc})")
    return finish(w, node, acc, rank, axis, x, t, out)


WHOLE_GRAPH.add(K.VAR, Rule(lambda n: check_moments(n) and None, _emit_moment))
WHOLE_GRAPH.add(K.STD, Rule(lambda n: check_moments(n) and None, _emit_moment))


def _variance(b: GraphBuilder, node: Node) -> str:
    handled_params(node, axis=ANY_VALUE, keepdims=ANY_VALUE, ddof=ANY_VALUE, dtype=ANY_VALUE)
    x, out = node.args[0], out_dtype(node)
    name = b.operand(x, out)
    axes = axes_input(b, node, x)
    params = cast("MomentParams", node.params)
    keep = int(bool(params.keepdims))
    mean = b.one("ReduceMean", [name, *axes], keepdims=1)
    dev = b.one("Sub", [name, mean])
    total = b.one("ReduceSum", [b.one("Mul", [dev, dev]), *axes], keepdims=keep)
    ones = b.one("Expand", [b.const(1.0, out), b.shape_of(name)])
    count = b.one("ReduceSum", [ones, *axes], keepdims=keep)
    ddof = b.const(float(params.ddof), out)
    n = b.one("Max", [b.one("Sub", [count, ddof]), b.const(0.0, out)])
    return b.one("Div", [total, n])


@ONNX.register(K.VAR)
def var(b: GraphBuilder, node: Node) -> list[str]:
    return [_variance(b, node)]


@ONNX.register(K.STD)
def std(b: GraphBuilder, node: Node) -> list[str]:
    return [b.one("Sqrt", [_variance(b, node)])]
