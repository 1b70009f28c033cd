"""Whole-graph rules of outer, nonzero and argwhere (the shape ops' rules live with their ops
in :mod:`kernel_ext.ops.shape`, ``ufunc.accumulate``'s in :mod:`kernel_ext.ops.reductions`).
"""

from __future__ import annotations

import numpy as np

from ...ir import Node, OpKind
from ..emit.literals import Unsupported, ctor
from ..emit.source import Source
from .common import (
    LOOP3,
    RULES,
    Rule,
    Writer,
    alloc_result,
    array_arg,
    loop_scratch,
    need_ufunc_loop,
    only_params,
    result_dtype,
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
