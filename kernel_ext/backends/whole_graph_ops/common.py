"""What the families of whole-graph rules share: ``Rule``, ``RULES``, the ``Writer`` they
write through, operand checks and NumPy loop calls."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ...ir import Node
from ...ir.registry import OpTable
from ..emit.literals import Unsupported
from ..emit.source import Source
from ..inplace import InplacePlan
from ..ufunc_loops import find_loop

#: dtypes this module computes (NumPy's and Numba's scalar types agree on these).
DTYPES = frozenset(np.dtype(c) for c in "?bBhHiIlLqQfd")


class Writer(Protocol):
    """What an emit function may use of :class:`.whole_graph.writer.GraphWriter`."""

    helpers: dict[str, str]
    preamble: Source  # the function's first statements (scratch buffers, constants)
    scratch_names: set[str]
    loop_args: list[tuple[int, int]]
    constants: list[Any]
    plan: InplacePlan  # which setitem nodes write in place (:mod:`.inplace`)

    def fresh(self, prefix: str = "t") -> str: ...
    def signal(self, out: Source, cond: str) -> None: ...
    def loop_ref(self, idx: int) -> str: ...
    def _out_buffer(
        self,
        node: Node,
        shape: str,
        size_test: str,
        dt: str,
        out: Source,
        t: str,
        take: str = "{sp}",
    ) -> None: ...


Emit = Callable[[Writer, Node, list, str, Source], str]


@dataclass(frozen=True)
class Rule:
    """How the whole-graph compiler handles one op (see the module docstring)."""

    check: Callable[[Node], object]  # raises Unsupported; what it returns is not read
    emit: Emit
    claims: Callable[[Node], bool] = lambda node: True


#: Each op's whole-graph rule, registered by its definition in :mod:`kernel_ext.ops`.
RULES: OpTable[Rule] = OpTable("whole-graph rule")


def rule_for(node: Node) -> Rule | None:
    """The rule that handles ``node``, or None (the writer's own ops, kernel ops, and the
    basic indexes the writer writes)."""
    rule = RULES.get(node.op)
    return rule if rule is not None and rule.claims(node) else None


# ---------------------------------------------------------------------------------------------
# Helpers shared by the rules
# ---------------------------------------------------------------------------------------------


def array_arg(node: Node, i: int, what: str) -> Node:
    """``node.args[i]``, a traced array of known rank and a dtype this module computes."""
    a = node.args[i] if i < len(node.args) else None
    if not isinstance(a, Node) or a.shape is None:  # (no value, several, or unknown rank)
        raise Unsupported(f"{node.op.value} of {what} that is not a traced array of known rank")
    if np.dtype(a.dtype) not in DTYPES:
        raise Unsupported(f"{node.op.value} of {a.dtype}")
    return a


def result_dtype(node: Node) -> np.dtype:
    dt = np.dtype(node.dtype)
    if dt not in DTYPES:
        raise Unsupported(f"{node.op.value} to {dt}")
    return dt


def only_params(node: Node, allowed: set[str]) -> None:
    extra = {k for k, v in node.params.items() if k not in allowed and v is not None}
    if extra:
        raise Unsupported(f"{node.op.value} with {', '.join(sorted(extra))}")


def ufunc_loop(w: Writer, ufunc: np.ufunc, dtypes: Sequence[np.dtype]) -> str:
    """``f<k>, d<k>``: NumPy's inner loop of ``ufunc`` for exactly ``dtypes``, passed to the
    generated function in its loop table (one entry per distinct loop)."""
    found = find_loop(ufunc, tuple(np.dtype(d) for d in dtypes))
    if found is None:  # pragma: no cover - check() asked for it first
        raise Unsupported(f"no NumPy {ufunc.__name__} loop for {dtypes}")
    if found in w.loop_args:
        return w.loop_ref(w.loop_args.index(found))
    w.loop_args.append(found)
    return w.loop_ref(len(w.loop_args) - 1)


def need_ufunc_loop(ufunc: np.ufunc, dt: np.dtype) -> None:
    if find_loop(ufunc, (dt,) * 3) is None:
        raise Unsupported(f"no NumPy {ufunc.__name__} loop for {dt}")


def loop_scratch(w: Writer) -> str:
    """The pointer, size and stride arrays of a NumPy loop call: allocated once per call of
    the generated function, shared by every call made here (they run one after another)."""
    if "xo_pp" not in w.scratch_names:
        w.scratch_names.add("xo_pp")
        w.preamble.extend(
            [
                "xo_pp = np.empty(3, np.uintp)",
                "xo_dims = np.empty(4, np.intp)",
                "xo_st = np.empty(9, np.intp)",
            ]
        )
    return "xo_pp, xo_dims, xo_st"


def checked_axis(axis: Any, rank: int, what: str) -> int:
    if not isinstance(axis, (int, np.integer)) or not -rank <= int(axis) < rank:
        raise Unsupported(f"{what} axis {axis!r} for rank {rank}")
    return int(axis) % rank


def shape_tuple(parts: Sequence[str]) -> str:
    return "(" + "".join(f"{p}, " for p in parts) + ")"


def index_at_axis(rank: int, axis: int, comp: str) -> str:
    """``:, :, comp, :`` — ``comp`` at ``axis`` of a rank-``rank`` array."""
    return ", ".join(comp if a == axis else ":" for a in range(rank))


# A ufunc loop called with three operands and one count (the binary form, or a reduction's
# or accumulation's form when the output aliases an input with stride 0 or a shift).
LOOP3 = """\
@_inline
def _loop3(f, d, pp, dims, st, a, b, c, n, sa, sb, sc):
    pp[0] = a
    pp[1] = b
    pp[2] = c
    dims[0] = n
    st[0] = sa
    st[1] = sb
    st[2] = sc
    _call_loop(f, pp.ctypes.data, dims.ctypes.data, st.ctypes.data, d)
"""


def alloc_result(w: Writer, node: Node, dims: Sequence[str], dts: str, out: Source, t: str) -> None:
    """``t = np.empty(dims, dts)``, or the dead buffer a loop left for ``node``."""
    test = " and ".join(f"{{sp}}.shape[{i}] == {d}" for i, d in enumerate(dims)) or "True"
    w._out_buffer(node, shape_tuple(dims), test, dts, out, t)


# NumPy's accumulate: per lane (the axis, with the other axes fixed) the first element is
# copied and the binary loop runs once over the rest with its output one step behind its
# first input, ``out[i] = out[i - 1] op x[i]``: this very call, so the same bits.
ACCUMULATE = """\
@_inline
def _accumulate(x3, o3, f, d, pp, dims, st):
    outer, n, inner = x3.shape
    if n == 0:
        return
    sx = x3.strides[1]
    so = o3.strides[1]
    for a in range(outer):
        for c in range(inner):
            o3[a, 0, c] = x3[a, 0, c]
            if n > 1:
                base_o = o3[a, :, c].ctypes.data
                base_x = x3[a, :, c].ctypes.data
                _loop3(f, d, pp, dims, st, base_o, base_x + sx, base_o + so, n - 1,
                       so, sx, so)
"""


def lanes_along(x: str, rank: int, axis: int | None) -> tuple[str, str, str]:
    """``(outer, n, inner)`` expressions of a C-contiguous ``x`` seen along ``axis``."""
    if axis is None:
        return "1", f"{x}.size", "1"
    outer = " * ".join(f"{x}.shape[{d}]" for d in range(axis)) or "1"
    inner = " * ".join(f"{x}.shape[{d}]" for d in range(axis + 1, rank)) or "1"
    return outer, f"{x}.shape[{axis}]", inner


# Each lane sorted (NaNs last, as NumPy's partition orders them): the order statistics NumPy's
# partition finds are then the same numbers. What only NumPy's partition decides signals: a
# NaN in the lane (NumPy returns the NaN its partition put last) and, for the quantiles, a
# selected zero in a lane holding zeros of both signs (which zero lands at the k-th place).
MIXED_ZEROS = """\
@_inline
def _mixed_zeros(s):
    neg = False
    pos = False
    for v in s:
        if v == 0:
            if math.copysign(1.0, v) < 0:
                neg = True
            else:
                pos = True
    return neg and pos
"""


def emit_nonzero(w: Writer, m: str, rank: int, out: Source) -> list[str]:
    """``np.nonzero(m)`` of a C-contiguous ``m``: one int64 array per axis, C order."""
    f = w.fresh("nz")
    out.line(f"{f} = np.flatnonzero({m})")
    if rank == 1:
        return [f]
    axes = []
    for q in range(rank):
        a = w.fresh("nz")
        after = " * ".join(f"{m}.shape[{e}]" for e in range(q + 1, rank))
        expr = f"{f} // ({after})" if after else f
        if q:
            expr = f"({expr}) % {m}.shape[{q}]"
        out.line(f"{a} = {expr}")
        axes.append(a)
    return axes
