"""Whole-graph rules of outer, nonzero, argwhere and ufunc.accumulate.

The shape ops' rules (stack, concatenate, expand_dims, flip, pad, squeeze, reshape, transpose,
broadcast_to, copy) live with their ops in :mod:`kernel_ext.ops.shape`.
"""

from __future__ import annotations

import numpy as np

from ...ir import Node, OpKind
from ..emit.literals import Unsupported, ctor
from ..emit.source import Source
from ..static_shapes import ranked_shape
from ..ufunc_loops import find_loop
from .common import (
    ACCUMULATE,
    LOOP3,
    RULES,
    Rule,
    Writer,
    alloc_result,
    array_arg,
    checked_axis,
    emit_nonzero,
    lanes_along,
    loop_scratch,
    need_ufunc_loop,
    only_params,
    result_dtype,
    shape_tuple,
    ufunc_loop,
)

# ---------------------------------------------------------------------------------------------
# outer
# ---------------------------------------------------------------------------------------------


def _check_outer(node: Node) -> np.dtype:
    only_params(node, set())
    a, b = array_arg(node, 0, "an operand"), array_arg(node, 1, "an operand")
    dt = result_dtype(node)
    for x in (a, b):
        if np.dtype(x.dtype) != dt:
            raise Unsupported(f"outer of {x.dtype} into {dt} (one dtype only)")
    if dt.kind == "b":
        raise Unsupported("outer of bools")
    need_ufunc_loop(np.multiply, dt)
    return dt


def _emit_outer(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """``multiply(a.ravel()[:, None], b.ravel()[None, :])`` as NumPy runs it: its multiply
    loop once per row, ``a[i]`` with stride 0."""
    dt = _check_outer(node)
    a, b = w.fresh("u"), w.fresh("u")
    out.line(f"{a} = {args[0].name}.ravel()")
    out.line(f"{b} = {args[1].name}.ravel()")
    alloc_result(w, node, [f"{a}.size", f"{b}.size"], ctor(dt), out, t)
    w.helpers["_loop3"] = LOOP3
    i = w.fresh("i")
    with (
        out.block(f"if {b}.size > 0:") as nonempty,
        nonempty.block(f"for {i} in range({a}.size):") as body,
    ):
        body.line(
            f"_loop3({ufunc_loop(w, np.multiply, (dt,) * 3)}, {loop_scratch(w)}, "
            f"{a}[{i}:].ctypes.data, {b}.ctypes.data, {t}[{i}].ctypes.data, {b}.size, "
            f"0, {b}.strides[0], {t}.strides[1])"
        )
    return "fresh"


RULES[OpKind.OUTER] = Rule(lambda n: _check_outer(n) and None, _emit_outer)


# ---------------------------------------------------------------------------------------------
# nonzero / argwhere / ufunc.accumulate
# ---------------------------------------------------------------------------------------------


def _check_nonzero(node: Node) -> int:
    only_params(node, set())
    x = array_arg(node, 0, "an array")
    rank = len(ranked_shape(x))
    if rank == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    return rank


def _emit_nonzero_op(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """``np.nonzero``: the flat positions of the true (non-zero: NaN included, ``-0.0`` not)
    elements in C order, unravelled per axis; ``np.argwhere``: the same, one row each."""
    rank = _check_nonzero(node)
    m = w.fresh("m")
    out.line(f"{m} = np.ascontiguousarray({args[0].name})")
    axes = emit_nonzero(w, m, rank, out)
    if node.op is OpKind.NONZERO:
        out.line(f"{t} = {shape_tuple(axes)}")
        return "fresh"
    out.line(f"{t} = np.empty(({axes[0]}.shape[0], {rank}), np.int64)")
    for q, a in enumerate(axes):
        out.line(f"{t}[:, {q}] = {a}")
    return "fresh"


RULES[OpKind.NONZERO] = Rule(lambda n: _check_nonzero(n) and None, _emit_nonzero_op)
RULES[OpKind.ARGWHERE] = Rule(lambda n: _check_nonzero(n) and None, _emit_nonzero_op)


def _check_accumulate(node: Node) -> tuple[Node, np.dtype, int, np.ufunc]:
    only_params(node, {"axis", "ufunc"})
    ufunc = node.attrs["ufunc"]
    x = array_arg(node, 0, "a value")
    dt = result_dtype(node)
    if not isinstance(ufunc, np.ufunc) or ufunc.nin != 2 or ufunc.nout != 1:
        raise Unsupported(f"accumulate of {ufunc!r}")
    if np.dtype(x.dtype) != dt:
        raise Unsupported(f"{ufunc.__name__}.accumulate of {x.dtype} into {dt}")
    if find_loop(ufunc, (dt,) * 3) is None:
        raise Unsupported(f"no NumPy {ufunc.__name__} loop for {dt}")
    rank = len(ranked_shape(x))
    if rank == 0:
        raise Unsupported("accumulate of a 0-d value")
    return x, dt, checked_axis(node.attrs.get("axis", 0), rank, "accumulate"), ufunc


def _emit_accumulate(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """``ufunc.accumulate`` as :func:`_emit_scan` computes ``cumsum``: NumPy's own loop of
    the ufunc for the dtype, called with its output one step behind its first input."""
    x_node, dt, axis, ufunc = _check_accumulate(node)
    rank = len(ranked_shape(x_node))
    dts = ctor(dt)
    x = w.fresh("x")
    out.line(f"{x} = np.ascontiguousarray({args[0].name})")
    alloc_result(w, node, [f"{x}.shape[{d}]" for d in range(rank)], dts, out, t)
    outer, n, inner = lanes_along(x, rank, axis)
    shape3 = f"({outer}, {n}, {inner})"
    w.helpers["_loop3"] = LOOP3
    w.helpers["_accumulate"] = ACCUMULATE
    out.line(
        f"_accumulate({x}.reshape({shape3}), {t}.reshape({shape3}), "
        f"{ufunc_loop(w, ufunc, (dt,) * 3)}, {loop_scratch(w)})"
    )
    return "fresh"


RULES[OpKind.UFUNC_ACCUMULATE] = Rule(lambda n: _check_accumulate(n) and None, _emit_accumulate)
