"""Scans: cumsum, cumprod, nancumsum, nancumprod.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`). The ONNX refusals
of cumprod and the nan scans are ``onnx.rules.refusals``'."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.decompositions import composed
from ...autodiff.rules import NOTES, VJP, Cotangent, Primal
from ...backends.emit.literals import Unsupported, ctor
from ...backends.emit.source import Source
from ...backends.static_shapes import aval_of_node, ranked_shape
from ...backends.whole_graph_ops.common import (
    ACCUMULATE,
    LOOP3,
    Rule,
    Writer,
    alloc_result,
    array_arg,
    checked_axis,
    lanes_along,
    loop_scratch,
    need_ufunc_loop,
    only_params,
    result_dtype,
    ufunc_loop,
)
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...ir import Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL
from ...ir.interpreter import LOWER
from ...ir.params import ScanParams
from ...onnx.builder import GraphBuilder
from ...onnx.rules.common import ANY_VALUE, handled_params, out_dtype
from ...onnx.rules.common import RULES as ONNX
from ...trace.numpy_api.common import implements
from .common import nan_hole, reverse_cumsum, scan_rule
from .entry_points import nan_scan_handler, scan_handler

K = OpKind

# --- cumsum, cumprod ---

implements(np.cumsum)(scan_handler(K.CUMSUM))
implements(np.cumprod)(scan_handler(K.CUMPROD))


ABSTRACT_EVAL.add(K.CUMSUM, scan_rule(np.cumsum))
ABSTRACT_EVAL.add(K.CUMPROD, scan_rule(np.cumprod))


@LOWER.register(OpKind.CUMSUM, OpKind.CUMPROD)
def _lower_scan(node: Node) -> Callable[..., Any]:
    fn = np.cumsum if node.op is OpKind.CUMSUM else np.cumprod
    return functools.partial(fn, **node.params.kwargs())


@VJP.register(K.CUMSUM, K.CUMPROD)
def _scan(p: Primal, g: Any) -> list[Cotangent]:
    x = p.args[0]
    axis = cast("ScanParams", p.params).axis

    def dx() -> Any:
        weights = g if p.node.op is K.CUMSUM else g * p.out
        if axis is None:
            flat = reverse_cumsum(weights, 0)
            dflat = flat if p.node.op is K.CUMSUM else flat / np.reshape(x, (-1,))
            return np.reshape(dflat, x.shape)
        back = reverse_cumsum(weights, axis)
        return back if p.node.op is K.CUMSUM else back / x

    return [dx]


NOTES.add(K.CUMPROD, "divides by x: not finite where x has zeros")


def _check_scan(node: Node) -> tuple[Node, np.dtype, int | None]:
    only_params(node, {"axis", "dtype"})
    x = array_arg(node, 0, "a value")
    dt = result_dtype(node)
    if not np.can_cast(aval_of_node(x).dtype, dt, "safe"):
        raise Unsupported(f"{node.op.value} of {x.dtype} into {dt}")
    need_ufunc_loop(np.add if node.op is OpKind.CUMSUM else np.multiply, dt)
    axis = cast("ScanParams", node.params).axis
    rank = len(ranked_shape(x))
    if axis is not None:
        if rank == 0:
            raise Unsupported(f"{node.op.value} of a 0-d value along an axis")
        axis = checked_axis(axis, rank, node.op.value)
    elif rank == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    return x, dt, axis


def _emit_scan(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    x_node, dt, axis = _check_scan(node)
    rank = len(ranked_shape(x_node))
    dts = ctor(dt)
    x = w.fresh("x")
    # The lanes are independent: a C-ordered copy (or a cast) changes no result bit.
    cast = "" if np.dtype(x_node.dtype) == dt else f".astype({dts})"
    out.line(f"{x} = np.ascontiguousarray({args[0].name}{cast})")
    if axis is None:
        out.line(f"{x} = {x}.ravel()")
        rank, dims = 1, [f"{x}.size"]
    else:
        dims = [f"{x}.shape[{d}]" for d in range(rank)]
    alloc_result(w, node, dims, dts, out, t)
    outer, n, inner = lanes_along(x, rank, axis if axis is not None else 0)
    shape3 = f"({outer}, {n}, {inner})"
    w.helpers["_loop3"] = LOOP3
    w.helpers["_accumulate"] = ACCUMULATE
    ufunc = np.add if node.op is OpKind.CUMSUM else np.multiply
    out.line(
        f"_accumulate({x}.reshape({shape3}), {t}.reshape({shape3}), "
        f"{ufunc_loop(w, ufunc, (dt,) * 3)}, {loop_scratch(w)})"
    )
    return "fresh"


WHOLE_GRAPH.add(K.CUMSUM, Rule(lambda n: _check_scan(n) and None, _emit_scan))
WHOLE_GRAPH.add(K.CUMPROD, Rule(lambda n: _check_scan(n) and None, _emit_scan))


@ONNX.register(K.CUMSUM)
def cumsum(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, axis=ANY_VALUE, dtype=ANY_VALUE)
    x, out = node.args[0], out_dtype(node)
    work = np.dtype(np.int64) if out.kind in "iub" else out  # (wrapping: same low bits)
    name = b.operand(x, work)
    axis = cast("ScanParams", node.params).axis
    if axis is None:
        name, axis = b.one("Reshape", [name, b.ints([-1])]), 0
    axis = int(axis) % max(x.aval.ndim, 1)
    return [b.cast(b.one("CumSum", [name, b.const(axis, np.int64)]), work, out)]


# --- nancumsum, nancumprod ---

implements(np.nancumsum)(nan_scan_handler(K.NANCUMSUM))
implements(np.nancumprod)(nan_scan_handler(K.NANCUMPROD))


ABSTRACT_EVAL.add(K.NANCUMSUM, scan_rule(np.nancumsum))
ABSTRACT_EVAL.add(K.NANCUMPROD, scan_rule(np.nancumprod))


@LOWER.register(OpKind.NANCUMSUM, OpKind.NANCUMPROD)
def _lower_nan_scan(node: Node) -> Callable[..., Any]:
    fn = np.nancumsum if node.op is OpKind.NANCUMSUM else np.nancumprod
    return functools.partial(fn, **node.params.kwargs())


@VJP.register(K.NANCUMSUM)
def _nancumsum(p: Primal, g: Any) -> list[Cotangent]:
    x = p.args[0]
    axis = cast("ScanParams", p.params).axis

    def dx() -> Any:
        if axis is None:
            return nan_hole(x, np.reshape(reverse_cumsum(g, 0), x.shape))
        return nan_hole(x, reverse_cumsum(g, axis))

    return [dx]


@VJP.register(K.NANCUMPROD)
def _nancumprod(p: Primal, g: Any) -> list[Cotangent]:
    """``cumprod`` with NaNs taken as 1 (their gradient is 0)."""
    axis = cast("ScanParams", p.params).axis
    return composed(p, g, lambda a: np.cumprod(np.where(np.isnan(a), 1.0, a), axis=axis))


NOTES.add(K.NANCUMPROD, "cumprod with NaNs as 1: divides by x")
