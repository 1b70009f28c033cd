"""More of NumPy in the whole-graph compiler (``jit_compile=True``): one rule per op.

:mod:`.whole_graph` compiles a graph into one Numba function; this module adds the ops it
did not cover before, as a rule table keyed by :class:`~kernel_ext.ir.OpKind`. Each
:class:`Rule` says

* ``claims(node)`` — whether this rule (rather than :mod:`.whole_graph`'s own code) handles
  the node: a 1-D ``matmul`` is ours, a 2-D @ 2-D one of one dtype stays there;
* ``check(node)`` — raises :class:`~.codegen.Unsupported` naming what cannot be compiled
  *exactly* (the writer then refuses the whole graph, which runs as fused segments);
* ``emit(writer, node, args, t, lines, indent)`` — appends the Numba source computing the
  node into variable ``t`` and returns what ``t`` is: ``"fresh"`` (a new C-contiguous array
  the function owns), ``"view"`` (a view of the first argument) or ``"scalar"``.

The contract is :mod:`.whole_graph`'s: the result is NumPy's to the bit. Where bits depend
on an order NumPy picks (float sums, BLAS calls, sorting ties), the generated code makes the
very call NumPy makes — its own inner loops, located with :func:`~.ufunc_loops.find_loop`
and called through ``_call_loop`` — or checks at run time that the case is one whose result
is unique, and otherwise *signals* (``raise FloatingPointError(SIGNAL)``): the call is then
rerun by the fused executor, which is NumPy's own result (or error, or warning).

How each op keeps NumPy's bits:

* ``dot``/``matmul`` (1-D, 2-D, batched 3-D; mixed dtypes cast first, as NumPy casts):
  float products call NumPy's ``matmul`` gufunc loop with NumPy's dims and strides (a
  missing dimension has stride 0, as in NumPy), so the same BLAS call runs (``np.dot`` of
  ≤ 2-D float operands is bitwise ``np.matmul`` where ``np.dot`` copies nothing — C- or
  F-contiguous matrices, vectors of positive stride — and the other layouts signal);
  integers wrap in a loop (exact: wrapping arithmetic is associative), bools are
  an OR of ANDs.
* ``stack``/``concatenate``/``pad`` (constant, edge)/``expand_dims``/``flip``: data
  movement (safe casts only), views where NumPy returns views; ``outer``: NumPy's
  ``multiply`` loop once per row.
* ``cumsum``/``cumprod``: NumPy's ``add``/``multiply`` loop in accumulate form, per lane.
* ``var``/``std``/``nanmean``: NumPy's own algorithm (``numpy/_core/_methods.py``), with
  its sums made by NumPy's ``add`` loop called as a reduction calls it (pairwise along the
  last axis, row by row along another); C-contiguous (or 1-D) inputs only, others signal.
* advanced indexing, ``getitem`` (a gather) and ``setitem`` (a scatter) with integer
  arrays (any rank, constant or traced, broadcast) or bool masks (their ``nonzero()``):
  every index checked and wrapped before anything is read or written (out of range, shapes
  that do not broadcast, a mask of the wrong shape: signal); writes in C order of the index
  tuples, so a repeated index keeps the last write, as in NumPy.
* ``nonzero``/``argwhere``, ``squeeze`` (a view), ``ufunc.accumulate`` (NumPy's own loop).
* ``searchsorted``/``digitize``: NumPy's binary search step for step (unsorted input too).
* ``median`` (NumPy's mean of the middle values), ``percentile``/``quantile`` (linear, of
  float64: NumPy's virtual index and ``_lerp``) on sorted lanes; ``unique`` (values, first
  indices, counts); ``interp`` (NumPy's formula, sorted ``xp``); ``histogram`` (equal bins,
  a static range: NumPy's fast path); ``convolve``/``correlate`` (NumPy's
  ``_pyarray_correlate``: ``small_correlate`` or its BLAS ``dot`` through the matmul loop).
  Where NumPy's partition or sort picks among equal values of different bits, or NaNs, the
  call signals.
* ``sort``/``argsort``: a stable merge sort with NumPy's order (NaNs last); where NumPy's
  result is not unique (``sort`` ties of different bits, ``-0.0``/``0.0`` or two NaNs;
  default-kind ``argsort`` ties) the call signals.
* ``max``/``min`` over several axes, ``maximum``/``minimum.reduce``: the extreme in any
  order; a NaN, or zeros of both signs at the top, signal (NumPy's order decides those).
* ``linalg.solve``/``inv``/``det`` of a 2-D matrix: one call of the ``_umath_linalg``
  gufunc loop ``np.linalg`` calls (its LAPACK call, its copies); singular or non-finite
  input signals.
* Not here: ``einsum`` (NumPy's ``c_einsum`` sums products in its own order, not BLAS's:
  no exact form to call), ``fft`` (pocketfft), ``lstsq``/``eig``/``svd``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..ir import Node, OpKind
from ..ir.abstract import DynamicIndex
from .codegen import Unsupported, const_source, ctor, literal_into, literal_value
from .inplace import InplacePlan
from .ufunc_loops import find_loop

#: dtypes this module computes (NumPy's and Numba's scalar types agree on these).
_DTYPES = frozenset(np.dtype(c) for c in "?bBhHiIlLqQfd")


class Writer(Protocol):
    """What an emit function may use of :class:`.whole_graph._GraphWriter`."""

    helpers: dict[str, str]
    scratch_lines: list[str]
    scratch_names: set[str]
    loop_args: list[tuple[int, int]]
    constants: list[Any]
    plan: InplacePlan  # which setitem nodes write in place (:mod:`.inplace`)

    def fresh(self, prefix: str = "t") -> str: ...
    def signal(self, lines: list[str], indent: str, cond: str) -> None: ...
    def loop_ref(self, idx: int) -> str: ...
    def _out_buffer(
        self,
        node: Node,
        shape: str,
        size_test: str,
        dt: str,
        lines: list[str],
        indent: str,
        t: str,
        take: str = "{sp}",
    ) -> None: ...


Emit = Callable[[Writer, Node, list, str, list, str], str]


@dataclass(frozen=True)
class Rule:
    """How the whole-graph compiler handles one op (see the module docstring)."""

    check: Callable[[Node], None]
    emit: Emit
    claims: Callable[[Node], bool] = lambda node: True


RULES: dict[OpKind, Rule] = {}


def claims(node: Node) -> bool:
    """Does a rule of this module handle ``node``?"""
    rule = RULES.get(node.op)
    return rule is not None and rule.claims(node)


# ---------------------------------------------------------------------------------------------
# Helpers shared by the rules
# ---------------------------------------------------------------------------------------------


def _array_arg(node: Node, i: int, what: str) -> Node:
    """``node.args[i]``, a traced array of known rank and a dtype this module computes."""
    a = node.args[i] if i < len(node.args) else None
    if (
        not isinstance(a, Node)
        or a.aval is None
        or isinstance(a.aval, tuple)
        or a.aval.shape is None
    ):
        raise Unsupported(f"{node.op.value} of {what} that is not a traced array of known rank")
    if np.dtype(a.dtype) not in _DTYPES:
        raise Unsupported(f"{node.op.value} of {a.dtype}")
    return a


def _out_dtype(node: Node) -> np.dtype:
    dt = np.dtype(node.dtype)
    if dt not in _DTYPES:
        raise Unsupported(f"{node.op.value} to {dt}")
    return dt


def _only_params(node: Node, allowed: set[str]) -> None:
    extra = {k for k, v in node.params.items() if k not in allowed and v is not None}
    if extra:
        raise Unsupported(f"{node.op.value} with {', '.join(sorted(extra))}")


def _loop(w: Writer, ufunc: np.ufunc, dtypes: Sequence[np.dtype]) -> str:
    """``f<k>, d<k>``: NumPy's inner loop of ``ufunc`` for exactly ``dtypes``, passed to the
    generated function in its loop table (one entry per distinct loop)."""
    found = find_loop(ufunc, tuple(np.dtype(d) for d in dtypes))
    if found is None:  # pragma: no cover - check() asked for it first
        raise Unsupported(f"no NumPy {ufunc.__name__} loop for {dtypes}")
    if found in w.loop_args:
        return w.loop_ref(w.loop_args.index(found))
    w.loop_args.append(found)
    return w.loop_ref(len(w.loop_args) - 1)


def _need_loop(ufunc: np.ufunc, dt: np.dtype) -> None:
    if find_loop(ufunc, (dt,) * 3) is None:
        raise Unsupported(f"no NumPy {ufunc.__name__} loop for {dt}")


def _scratch(w: Writer) -> str:
    """The pointer, size and stride arrays of a NumPy loop call: allocated once per call of
    the generated function, shared by every call made here (they run one after another)."""
    if "xo_pp" not in w.scratch_names:
        w.scratch_names.add("xo_pp")
        w.scratch_lines += [
            "    xo_pp = np.empty(3, np.uintp)",
            "    xo_dims = np.empty(4, np.intp)",
            "    xo_st = np.empty(9, np.intp)",
        ]
    return "xo_pp, xo_dims, xo_st"


def _axis(axis: Any, rank: int, what: str) -> int:
    if not isinstance(axis, (int, np.integer)) or not -rank <= int(axis) < rank:
        raise Unsupported(f"{what} axis {axis!r} for rank {rank}")
    return int(axis) % rank


def _shape_tuple(parts: Sequence[str]) -> str:
    return "(" + "".join(f"{p}, " for p in parts) + ")"


def _index(rank: int, axis: int, comp: str) -> str:
    """``:, :, comp, :`` — ``comp`` at ``axis`` of a rank-``rank`` array."""
    return ", ".join(comp if a == axis else ":" for a in range(rank))


# A ufunc loop called with three operands and one count (the binary form, or a reduction's
# or accumulation's form when the output aliases an input with stride 0 or a shift).
_LOOP3 = """\
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

# ---------------------------------------------------------------------------------------------
# dot / matmul
# ---------------------------------------------------------------------------------------------

# NumPy's matmul gufunc loop on 3-D views (batch, rows, columns) with explicit strides: a
# dimension NumPy adds for a 1-D operand (or a broadcast batch) has stride 0, as in NumPy,
# so the loop takes the very branch (dot, gemv, gemm, syrk) np.matmul takes.
_MM_FLOAT = """\
@_inline
def _mm_float(a, b, o, f, d, pp, dims, st, sa0, sa1, sb0, sb2, so1, so2):
    nb = o.shape[0]
    n = a.shape[1]
    m = a.shape[2]
    p = b.shape[2]
    if nb == 0 or n == 0 or p == 0:
        return
    if m == 0:
        o[:, :, :] = 0
        return
    pp[0] = a.ctypes.data
    pp[1] = b.ctypes.data
    pp[2] = o.ctypes.data
    dims[0] = nb
    dims[1] = n
    dims[2] = m
    dims[3] = p
    st[0] = sa0
    st[1] = sb0
    st[2] = o.strides[0]
    st[3] = sa1
    st[4] = a.strides[2]
    st[5] = b.strides[1]
    st[6] = sb2
    st[7] = so1
    st[8] = so2
    _call_loop(f, pp.ctypes.data, dims.ctypes.data, st.ctypes.data, d)
"""

# Integer products wrap in the operands' dtype (``_wadd``/``_wmul``), as NumPy's integer
# matmul loop does; the order of the terms does not change a wrapped sum.
_MM_INT = """\
@_inline
def _mm_int(a, b, o):
    nb = o.shape[0]
    for q in range(nb):
        x = a[q if a.shape[0] != 1 else 0]
        y = b[q if b.shape[0] != 1 else 0]
        for i in range(x.shape[0]):
            for j in range(y.shape[1]):
                s = o.dtype.type(0)
                for k in range(x.shape[1]):
                    s = _wadd(s, _wmul(x[i, k], y[k, j]))
                o[q, i, j] = s
"""

_MM_BOOL = """\
@_inline
def _mm_bool(a, b, o):
    nb = o.shape[0]
    for q in range(nb):
        x = a[q if a.shape[0] != 1 else 0]
        y = b[q if b.shape[0] != 1 else 0]
        for i in range(x.shape[0]):
            for j in range(y.shape[1]):
                s = False
                for k in range(x.shape[1]):
                    if x[i, k] and y[k, j]:
                        s = True
                        break
                o[q, i, j] = s
"""


def _matmul_ranks(node: Node) -> tuple[Node, Node, np.dtype]:
    a, b = _array_arg(node, 0, "an operand"), _array_arg(node, 1, "an operand")
    ra, rb = len(a.aval.shape), len(b.aval.shape)
    dt = _out_dtype(node)
    if node.op is OpKind.DOT:
        if not (1 <= ra <= 2 and 1 <= rb <= 2):
            raise Unsupported(f"dot of ranks {ra} and {rb} (1-D and 2-D operands only)")
    elif not (1 <= ra <= 3 and 1 <= rb <= 3):
        raise Unsupported(f"matmul of ranks {ra} and {rb} (up to one batch axis)")
    for x in (a, b):
        if not np.can_cast(x.dtype, dt, "safe"):
            raise Unsupported(f"{node.op.value} of {x.dtype} into {dt}")
    if dt.kind == "f":
        if find_loop(np.matmul, (dt,) * 3) is None:
            raise Unsupported(f"no NumPy matmul loop for {dt}")
    elif dt.kind not in "biu":
        raise Unsupported(f"{node.op.value} of {dt}")
    return a, b, dt


def _claims_matmul(node: Node) -> bool:
    """Not the 2-D @ 2-D product of one dtype :mod:`.whole_graph` compiles itself."""
    a, b = node.args[0], node.args[1]
    return not (
        isinstance(a, Node)
        and isinstance(b, Node)
        and a.aval.shape is not None
        and b.aval.shape is not None
        and len(a.aval.shape) == 2
        and len(b.aval.shape) == 2
        and a.aval.dtype == b.aval.dtype == node.dtype
    )


def _emit_matmul(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    a_node, b_node, dt = _matmul_ranks(node)
    ra, rb = len(a_node.aval.shape), len(b_node.aval.shape)
    a, b = args[0].name, args[1].name
    dts = ctor(dt)
    if np.dtype(a_node.dtype) != dt:
        v = w.fresh("m")
        lines.append(f"{indent}{v} = {a}.astype({dts})")
        a = v
    if np.dtype(b_node.dtype) != dt:
        v = w.fresh("m")
        lines.append(f"{indent}{v} = {b}.astype({dts})")
        b = v
    # 3-D views (batch, rows, cols); a 1-D a is one row, a 1-D b one column
    a3 = {1: f"{a}[None, None, :]", 2: f"{a}[None, :, :]", 3: a}[ra]
    b3 = {1: f"{b}[None, :, None]", 2: f"{b}[None, :, :]", 3: b}[rb]
    if node.op is OpKind.DOT and dt.kind == "f":
        # np.dot copies an operand that BLAS cannot read as it is, then calls BLAS as
        # np.matmul would; the bits agree with matmul's loop (tested) when no copy is made,
        # so the other layouts (a matrix neither C- nor F-contiguous, a vector with a
        # stride <= 0) are rerun in NumPy.
        for x, r in ((a, ra), (b, rb)):
            if r == 2:
                w.signal(lines, indent, f"not ({x}.flags.c_contiguous or {x}.flags.f_contiguous)")
            else:
                w.signal(lines, indent, f"{x}.strides[0] <= 0 and {x}.shape[0] > 1")
    va, vb = w.fresh("ma"), w.fresh("mb")
    lines.append(f"{indent}{va} = {a3}")
    lines.append(f"{indent}{vb} = {b3}")
    w.signal(lines, indent, f"{va}.shape[2] != {vb}.shape[1]")
    batched = ra == 3 or rb == 3
    nb = "1"
    if batched:
        nb = w.fresh("nb")
        w.signal(
            lines,
            indent,
            f"{va}.shape[0] != {vb}.shape[0] and {va}.shape[0] != 1 and {vb}.shape[0] != 1",
        )
        lines.append(f"{indent}{nb} = max({va}.shape[0], {vb}.shape[0])")
    out_dims = (
        ([nb] if batched else [])
        + ([f"{va}.shape[1]"] if ra > 1 else [])
        + ([f"{vb}.shape[2]"] if rb > 1 else [])
    )
    scalar = not out_dims
    o = w.fresh("mo")
    if scalar:
        lines.append(f"{indent}{o} = np.empty((1, 1, 1), {dts})")
        o3 = o
    else:
        shape = _shape_tuple(out_dims)
        test = " and ".join(f"{{sp}}.shape[{i}] == {d}" for i, d in enumerate(out_dims))
        w._out_buffer(node, shape, test, dts, lines, indent, o)
        if batched:
            o3 = {1: f"{o}[:, None, :]", 2: f"{o}[:, :, None]"}.get(
                1 if ra == 1 else 2 if rb == 1 else 0, o
            )
        else:
            o3 = {(2, 1): f"{o}[None, :, None]", (1, 2): f"{o}[None, None, :]"}.get(
                (ra, rb), f"{o}[None, :, :]"
            )
    if dt.kind == "f":
        w.helpers["_mm_float"] = _MM_FLOAT
        # NumPy's strides: 0 for a dimension it added (a 1-D operand, a broadcast batch)
        sa0 = f"{va}.strides[0] if {va}.shape[0] != 1 else 0" if ra == 3 else "0"
        sb0 = f"{vb}.strides[0] if {vb}.shape[0] != 1 else 0" if rb == 3 else "0"
        sa1 = f"{va}.strides[1]" if ra > 1 else "0"
        sb2 = f"{vb}.strides[2]" if rb > 1 else "0"
        so1 = "0" if ra == 1 or scalar else f"{o}.strides[{1 if batched else 0}]"
        so2 = "0" if rb == 1 or scalar else f"{o}.strides[{len(out_dims) - 1}]"
        lines.append(
            f"{indent}_mm_float({va}, {vb}, {o3}, {_loop(w, np.matmul, (dt,) * 3)}, "
            f"{_scratch(w)}, {sa0}, {sa1}, {sb0}, {sb2}, {so1}, {so2})"
        )
    else:
        name = "_mm_bool" if dt.kind == "b" else "_mm_int"
        w.helpers[name] = _MM_BOOL if dt.kind == "b" else _MM_INT
        lines.append(f"{indent}{name}({va}, {vb}, {o3})")
    if scalar:
        lines.append(f"{indent}{t} = {o}[0, 0, 0]")
        return "scalar"
    lines.append(f"{indent}{t} = {o}")
    return "fresh"


RULES[OpKind.MATMUL] = Rule(lambda n: _matmul_ranks(n) and None, _emit_matmul, _claims_matmul)
RULES[OpKind.DOT] = Rule(lambda n: _matmul_ranks(n) and None, _emit_matmul)

# ---------------------------------------------------------------------------------------------
# stack / concatenate / expand_dims / flip
# ---------------------------------------------------------------------------------------------


def _alloc(
    w: Writer, node: Node, dims: Sequence[str], dts: str, lines: list[str], indent: str, t: str
) -> None:
    """``t = np.empty(dims, dts)``, or the dead buffer a loop left for ``node``."""
    test = " and ".join(f"{{sp}}.shape[{i}] == {d}" for i, d in enumerate(dims)) or "True"
    w._out_buffer(node, _shape_tuple(dims), test, dts, lines, indent, t)


def _joined(node: Node) -> tuple[list[Node], np.dtype]:
    """The arrays ``stack``/``concatenate`` join, each cast safely to the result dtype."""
    dt = _out_dtype(node)
    xs = [_array_arg(node, i, "an operand") for i in range(len(node.args))]
    if not xs:
        raise Unsupported(f"{node.op.value} of nothing")
    for x in xs:
        if not np.can_cast(x.dtype, dt, "safe"):
            raise Unsupported(f"{node.op.value} of {x.dtype} into {dt}")
    ranks = {len(x.aval.shape) for x in xs}
    if len(ranks) != 1:
        raise Unsupported(f"{node.op.value} of different ranks")
    return xs, dt


def _check_concatenate(node: Node) -> None:
    _only_params(node, {"axis"})
    xs, _ = _joined(node)
    rank = len(xs[0].aval.shape)
    axis = node.attrs.get("axis", 0)
    if axis is not None:
        if rank == 0:
            raise Unsupported("concatenate of 0-d values")
        _axis(axis, rank, "concatenate")


def _emit_concatenate(
    w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str
) -> str:
    xs, dt = _joined(node)
    names = [a.name for a in args]
    axis = node.attrs.get("axis", 0)
    if axis is None:  # the arrays flattened in C order, one after the other
        names = [f"{n}.ravel()" for n in names]
        rank, k = 1, 0
    else:
        rank = len(xs[0].aval.shape)
        k = int(axis) % rank
        first = names[0]
        for n in names[1:]:  # NumPy's ValueError: the other dimensions must agree
            for d in range(rank):
                if d != k:
                    w.signal(lines, indent, f"{n}.shape[{d}] != {first}.shape[{d}]")
    parts = []
    for n in names:
        v = w.fresh("c")
        lines.append(f"{indent}{v} = {n}")
        parts.append(v)
    total = " + ".join(f"{v}.shape[{k}]" for v in parts)
    dims = [f"{parts[0]}.shape[{d}]" if d != k else f"({total})" for d in range(rank)]
    _alloc(w, node, dims, ctor(dt), lines, indent, t)
    off = "0"
    for v in parts:
        end = w.fresh("e")
        lines.append(f"{indent}{end} = {off} + {v}.shape[{k}]")
        lines.append(f"{indent}{t}[{_index(rank, k, f'{off}:{end}')}] = {v}")
        off = end
    return "fresh"


def _check_stack(node: Node) -> None:
    _only_params(node, {"axis"})
    xs, _ = _joined(node)
    _axis(node.attrs.get("axis", 0), len(xs[0].aval.shape) + 1, "stack")


def _emit_stack(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    xs, dt = _joined(node)
    rank = len(xs[0].aval.shape)
    k = int(node.attrs.get("axis", 0)) % (rank + 1)
    first = args[0].name
    for a in args[1:]:  # NumPy's ValueError: all input arrays must have the same shape
        for d in range(rank):
            w.signal(lines, indent, f"{a.name}.shape[{d}] != {first}.shape[{d}]")
    dims = [f"{first}.shape[{d}]" for d in range(rank)]
    dims.insert(k, str(len(args)))
    _alloc(w, node, dims, ctor(dt), lines, indent, t)
    for i, a in enumerate(args):
        lines.append(f"{indent}{t}[{_index(rank + 1, k, str(i))}] = {a.name}")
    return "fresh"


def _expand_axes(node: Node) -> list[int]:
    x = _array_arg(node, 0, "a value")
    axis = node.attrs["axis"]
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out_rank = len(x.aval.shape) + len(axes)
    if len(x.aval.shape) == 0:
        raise Unsupported("expand_dims of a 0-d value")
    norm = sorted(_axis(a, out_rank, "expand_dims") for a in axes)
    if len(set(norm)) != len(norm):
        raise Unsupported("expand_dims with a repeated axis")
    return norm


def _emit_expand_dims(
    w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str
) -> str:
    axes = _expand_axes(node)
    rank = len(node.args[0].aval.shape) + len(axes)
    index = ", ".join("None" if a in axes else ":" for a in range(rank))
    lines.append(f"{indent}{t} = {args[0].name}[{index}]")
    return "view"


def _flip_axes(node: Node) -> set[int]:
    x = _array_arg(node, 0, "a value")
    rank = len(x.aval.shape)
    if rank == 0:
        raise Unsupported("flip of a 0-d value")
    axis = node.attrs.get("axis")
    if axis is None:
        return set(range(rank))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    return {_axis(a, rank, "flip") for a in axes}


def _emit_flip(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    axes = _flip_axes(node)
    rank = len(node.args[0].aval.shape)
    index = ", ".join("::-1" if a in axes else ":" for a in range(rank))
    lines.append(f"{indent}{t} = {args[0].name}[{index}]")
    return "view"


RULES[OpKind.CONCATENATE] = Rule(_check_concatenate, _emit_concatenate)
RULES[OpKind.STACK] = Rule(_check_stack, _emit_stack)
RULES[OpKind.EXPAND_DIMS] = Rule(
    lambda n: _expand_axes(n) and None,
    _emit_expand_dims,
    lambda n: not isinstance(n.attrs["axis"], int),
)
RULES[OpKind.FLIP] = Rule(lambda n: _flip_axes(n) and None, _emit_flip)

# ---------------------------------------------------------------------------------------------
# cumsum / cumprod
# ---------------------------------------------------------------------------------------------

# NumPy's accumulate: per lane (the axis, with the other axes fixed) the first element is
# copied and the binary loop runs once over the rest with its output one step behind its
# first input, ``out[i] = out[i - 1] op x[i]``: this very call, so the same bits.
_ACCUMULATE = """\
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


def _check_scan(node: Node) -> tuple[Node, np.dtype, int | None]:
    _only_params(node, {"axis", "dtype"})
    x = _array_arg(node, 0, "a value")
    dt = _out_dtype(node)
    if not np.can_cast(x.dtype, dt, "safe"):
        raise Unsupported(f"{node.op.value} of {x.dtype} into {dt}")
    _need_loop(np.add if node.op is OpKind.CUMSUM else np.multiply, dt)
    axis = node.attrs.get("axis")
    rank = len(x.aval.shape)
    if axis is not None:
        if rank == 0:
            raise Unsupported(f"{node.op.value} of a 0-d value along an axis")
        axis = _axis(axis, rank, node.op.value)
    elif rank == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    return x, dt, axis


def _lanes(x: str, rank: int, axis: int | None) -> tuple[str, str, str]:
    """``(outer, n, inner)`` expressions of a C-contiguous ``x`` seen along ``axis``."""
    if axis is None:
        return "1", f"{x}.size", "1"
    outer = " * ".join(f"{x}.shape[{d}]" for d in range(axis)) or "1"
    inner = " * ".join(f"{x}.shape[{d}]" for d in range(axis + 1, rank)) or "1"
    return outer, f"{x}.shape[{axis}]", inner


def _emit_scan(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    x_node, dt, axis = _check_scan(node)
    rank = len(x_node.aval.shape)
    dts = ctor(dt)
    x = w.fresh("x")
    # The lanes are independent: a C-ordered copy (or a cast) changes no result bit.
    cast = "" if np.dtype(x_node.dtype) == dt else f".astype({dts})"
    lines.append(f"{indent}{x} = np.ascontiguousarray({args[0].name}{cast})")
    if axis is None:
        lines.append(f"{indent}{x} = {x}.ravel()")
        rank, dims = 1, [f"{x}.size"]
    else:
        dims = [f"{x}.shape[{d}]" for d in range(rank)]
    _alloc(w, node, dims, dts, lines, indent, t)
    outer, n, inner = _lanes(x, rank, axis if axis is not None else 0)
    shape3 = f"({outer}, {n}, {inner})"
    w.helpers["_loop3"] = _LOOP3
    w.helpers["_accumulate"] = _ACCUMULATE
    ufunc = np.add if node.op is OpKind.CUMSUM else np.multiply
    lines.append(
        f"{indent}_accumulate({x}.reshape({shape3}), {t}.reshape({shape3}), "
        f"{_loop(w, ufunc, (dt,) * 3)}, {_scratch(w)})"
    )
    return "fresh"


RULES[OpKind.CUMSUM] = Rule(lambda n: _check_scan(n) and None, _emit_scan)
RULES[OpKind.CUMPROD] = Rule(lambda n: _check_scan(n) and None, _emit_scan)

# ---------------------------------------------------------------------------------------------
# var / std / nanmean: NumPy's algorithm, its sums made by NumPy's add loop
# ---------------------------------------------------------------------------------------------

# ``acc += sum of x3 along axis 1`` as NumPy's reduction calls its add loop on a C-contiguous
# array: with nothing after the axis (``inner == 1``) the loop's reduce form (output stride
# 0: a pairwise sum per lane), else the binary form once per step along the axis (each
# output element summed in order). ``acc`` starts at +0.0, as NumPy's does.
_SUM_AXIS = """\
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
    axis = node.attrs.get("axis")
    if isinstance(axis, (tuple, list)):
        if len(axis) != 1:
            if sorted(_axis(a, rank, node.op.value) for a in axis) == list(range(rank)):
                return None
            raise Unsupported(f"{node.op.value} over several axes")
        axis = axis[0]
    if axis is None or rank <= 1:
        if axis is not None:
            _axis(axis, max(rank, 1), node.op.value)
        return None
    return _axis(axis, rank, node.op.value)


def _check_moments(node: Node) -> tuple[Node, np.dtype, int | None]:
    allowed = (
        {"axis", "keepdims", "ddof"} if node.op is not OpKind.NANMEAN else {"axis", "keepdims"}
    )
    _only_params(node, allowed)
    x = _array_arg(node, 0, "a value")
    dt = _out_dtype(node)
    if np.dtype(x.dtype) != dt or dt.kind != "f":
        # integer inputs are summed through NumPy's cast buffers, in chunks: not modelled
        raise Unsupported(f"{node.op.value} of {x.dtype} (float32/float64 only)")
    ddof = node.attrs.get("ddof", 0)
    if not isinstance(ddof, (int, np.integer)) or isinstance(ddof, bool):
        raise Unsupported(f"{node.op.value} with ddof={ddof!r} (an int only)")
    if len(x.aval.shape) == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    _need_loop(np.add, dt)
    return x, dt, _reduce_axis(node, len(x.aval.shape))


def _moment_input(
    w: Writer, x: str, rank: int, axis: int | None, lines: list[str], indent: str
) -> tuple[str, str, str, str]:
    """``x`` as a C-contiguous ``(outer, n, inner)`` view, its lane expressions. An input
    that is not C-contiguous signals: NumPy would sum it in another order."""
    if rank == 1:  # a 1-D array of any positive stride is summed as it is
        w.signal(lines, indent, f"{x}.strides[0] < 0")
        v = w.fresh("x")
        lines.append(f"{indent}{v} = {x}[None, :, None]")
        return v, "1", f"{x}.shape[0]", "1"
    w.signal(lines, indent, f"not {x}.flags.c_contiguous")
    c = w.fresh("x")
    lines.append(f"{indent}{c} = np.ascontiguousarray({x})")  # a C view, typed as one
    outer, n, inner = _lanes(c, rank, axis)
    v = w.fresh("x")
    lines.append(f"{indent}{v} = {c}.reshape(({outer}, {n}, {inner}))")
    return v, outer, n, inner


def _finish(
    w: Writer,
    node: Node,
    value: str,
    rank: int,
    axis: int | None,
    x: str,
    t: str,
    lines: list[str],
    indent: str,
) -> str:
    """The ``(outer, inner)`` result ``value`` in NumPy's shape (keepdims or not)."""
    keep = bool(node.attrs.get("keepdims"))
    if axis is None and not keep:
        lines.append(f"{indent}{t} = {value}[0, 0]")
        return "scalar"
    if axis is None:
        dims = ["1"] * rank
    else:
        dims = [f"{x}.shape[{d}]" if d != axis else "1" for d in range(rank)]
        if not keep:
            del dims[axis]
    lines.append(f"{indent}{t} = {value}.reshape({_shape_tuple(dims)})")
    return "fresh"


def _emit_moment(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    """``numpy/_core/_methods.py``'s ``_var`` (and ``_std``) step by step: the mean (a sum,
    divided as ``true_divide(sum, intp count)`` divides: in float64, then cast), the squared
    deviations, their sum divided by ``max(count - ddof, 0)``; a count at most ``ddof``
    (NumPy's warning, an inf or NaN) or an empty input signals."""
    x_node, dt, axis = _check_moments(node)
    rank = len(x_node.aval.shape)
    dts = ctor(dt)
    x = args[0].name
    x3, outer, n, inner = _moment_input(w, x, rank, axis, lines, indent)
    ddof = int(node.attrs.get("ddof", 0))
    w.signal(lines, indent, f"{n} - {ddof} <= 0")
    w.helpers["_loop3"] = _LOOP3
    w.helpers["_sum_axis"] = _SUM_AXIS
    loop = f"{_loop(w, np.add, (dt,) * 3)}, {_scratch(w)}"
    mean, dev, acc = w.fresh("mean"), w.fresh("dev"), w.fresh("acc")
    lines.append(f"{indent}{mean} = np.zeros(({outer}, {inner}), {dts})")
    lines.append(f"{indent}_sum_axis({x3}, {mean}, {loop})")
    lines.append(f"{indent}{mean} = (({mean}.astype(np.float64)) / np.float64({n})).astype({dts})")
    lines.append(f"{indent}{dev} = {x3} - {mean}.reshape(({outer}, 1, {inner}))")
    lines.append(f"{indent}{dev} = {dev} * {dev}")
    lines.append(f"{indent}{acc} = np.zeros(({outer}, {inner}), {dts})")
    lines.append(f"{indent}_sum_axis({dev}, {acc}, {loop})")
    lines.append(
        f"{indent}{acc} = ({acc}.astype(np.float64) / np.float64({n} - {ddof})).astype({dts})"
    )
    if node.op is OpKind.STD:
        lines.append(f"{indent}{acc} = np.sqrt({acc})")
    return _finish(w, node, acc, rank, axis, x, t, lines, indent)


def _emit_nanmean(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    """``np.nanmean`` as NumPy computes it: a copy with NaNs replaced by +0.0, its sum
    divided (in float64, then cast) by the count of the others; a lane of NaNs only
    (NumPy's "Mean of empty slice" warning) or an empty input signals."""
    x_node, dt, axis = _check_moments(node)
    rank = len(x_node.aval.shape)
    dts = ctor(dt)
    x3, outer, n, inner = _moment_input(w, args[0].name, rank, axis, lines, indent)
    w.signal(lines, indent, f"{n} == 0")
    w.helpers["_loop3"] = _LOOP3
    w.helpers["_sum_axis"] = _SUM_AXIS
    arr, cnt, acc = w.fresh("arr"), w.fresh("cnt"), w.fresh("acc")
    lines.append(f"{indent}{arr} = np.where(np.isnan({x3}), {dts}(0), {x3})")
    lines.append(f"{indent}{cnt} = np.sum(~np.isnan({x3}), axis=1)")
    w.signal(lines, indent, f"np.any({cnt} == 0)")
    lines.append(f"{indent}{acc} = np.zeros(({outer}, {inner}), {dts})")
    lines.append(f"{indent}_sum_axis({arr}, {acc}, {_loop(w, np.add, (dt,) * 3)}, {_scratch(w)})")
    lines.append(
        f"{indent}{acc} = ({acc}.astype(np.float64) / {cnt}.astype(np.float64)).astype({dts})"
    )
    return _finish(w, node, acc, rank, axis, args[0].name, t, lines, indent)


RULES[OpKind.VAR] = Rule(lambda n: _check_moments(n) and None, _emit_moment)
RULES[OpKind.STD] = Rule(lambda n: _check_moments(n) and None, _emit_moment)
RULES[OpKind.NANMEAN] = Rule(lambda n: _check_moments(n) and None, _emit_nanmean)

# ---------------------------------------------------------------------------------------------
# Advanced indexing: getitem (a gather) and setitem (a scatter) with integer or bool arrays
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Part:
    """One component of an advanced index: ``kind`` is ``"slice"``, ``"int"`` (a Python or
    traced integer), ``"array"`` (an integer array, constant or traced) or ``"mask"`` (a bool
    array); ``value`` the slice, int, constant array or :class:`DynamicIndex`; ``dims`` how
    many axes of the indexed array it consumes (a mask: its rank)."""

    kind: str
    value: Any
    dims: int


def _dyn_arg(node: Node, c: DynamicIndex) -> Any:
    """The argument a traced index component names (a setitem's come after its value)."""
    return node.args[c.position + (1 if node.op is OpKind.SETITEM else 0)]


def _is_array_component(node: Node, c: Any) -> bool:
    if isinstance(c, np.ndarray):
        return True
    if isinstance(c, DynamicIndex):
        arg = _dyn_arg(node, c)
        return (
            isinstance(arg, Node)
            and arg.aval is not None
            and not isinstance(arg.aval, tuple)
            and arg.aval.shape != ()
        )
    return False


def _claims_fancy(node: Node) -> bool:
    """An index with an integer or bool array component (basic ones stay with whole_graph)."""
    return any(_is_array_component(node, c) for c in node.attrs["index"])


def _fancy_plan(node: Node) -> list[_Part]:
    """The index as one :class:`_Part` per component, ``...`` expanded to full slices and
    full slices added for the axes it leaves out; Unsupported for what is not covered
    (``None``, 0-d bool or array components, uint64 indices, traced slice bounds)."""
    x = _array_arg(node, 0, "an array")
    rank = len(x.aval.shape)
    parts: list[_Part | None] = []
    for c in node.attrs["index"]:
        if c is None:
            raise Unsupported("array indexing with a None (np.newaxis) component")
        if c is Ellipsis:
            if None in parts:
                raise Unsupported("an index with several Ellipsis")
            parts.append(None)
        elif isinstance(c, slice):
            if any(isinstance(p, DynamicIndex) for p in (c.start, c.stop, c.step)):
                raise Unsupported("slice with traced bounds")
            parts.append(_Part("slice", c, 1))
        elif isinstance(c, np.ndarray):
            if c.ndim == 0 or c.dtype == np.uint64 or c.dtype.kind not in "biu":
                raise Unsupported(f"index array of {c.dtype} and rank {c.ndim}")
            parts.append(_Part("mask", c, c.ndim) if c.dtype.kind == "b" else _Part("array", c, 1))
        elif isinstance(c, DynamicIndex):
            arg = _dyn_arg(node, c)
            if not isinstance(arg, Node) or arg.aval.shape is None:
                raise Unsupported("indexing with a value of unknown rank")
            dt = np.dtype(arg.dtype)
            shape = arg.aval.shape
            if dt.kind == "b" and shape != ():
                parts.append(_Part("mask", c, len(shape)))
            elif dt.kind in "iu" and dt != np.uint64:
                parts.append(_Part("int" if shape == () else "array", c, 1))
            else:
                raise Unsupported(f"indexing with an array of {dt} and rank {len(shape)}")
        elif isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_)):
            parts.append(_Part("int", int(c), 1))
        else:
            raise Unsupported(f"index component {c!r}")
    used = sum(p.dims for p in parts if p is not None)
    if used > rank:
        raise Unsupported("too many indices")
    full = _Part("slice", slice(None), 1)
    if None in parts:
        at = parts.index(None)
        parts[at : at + 1] = [full] * (rank - used)
        return parts  # type: ignore[return-value]
    return parts + [full] * (rank - used)


def _check_fancy_value(node: Node) -> None:
    """A setitem's value: cast into the array's dtype only where Numba's cast is NumPy's
    (``same_kind`` among bool, integer and float dtypes; a literal NumPy stores silently)."""
    dt = np.dtype(node.args[0].dtype)
    value = node.args[1]
    if isinstance(value, Node):
        if value.aval is None or isinstance(value.aval, tuple) or value.aval.shape is None:
            raise Unsupported("setitem of a value of unknown rank")
        vdt = np.dtype(value.dtype)
        if vdt not in _DTYPES or not np.can_cast(vdt, dt, "same_kind"):
            raise Unsupported(f"setitem of {vdt} into {dt} (an unsafe cast)")
    else:
        literal_into(value, dt)


def _check_fancy(node: Node) -> None:
    parts = _fancy_plan(node)
    if node.op is OpKind.SETITEM:
        _check_fancy_value(node)
        value = node.args[1]
        if isinstance(value, Node) and value.aval.shape != ():
            rank = sum(p.dims for p in parts if p.kind == "slice")
            ranks = [
                p.value.ndim
                if isinstance(p.value, np.ndarray)
                else len(_dyn_arg(node, p.value).aval.shape)
                for p in parts
                if p.kind == "array"
            ] + [1 for p in parts if p.kind == "mask"]
            if len(value.aval.shape) > rank + max(ranks, default=0):
                raise Unsupported("setitem of a value of more dimensions than the region")


@dataclass
class _FancyIndex:
    """The generated names of an advanced index (:func:`_emit_fancy_index`)."""

    basic: str  # the slices as source, ":" on every advanced axis
    view: str  # x[basic]
    sources: list[tuple[str, int]]  # per advanced axis: its index variable and its rank
    slots: list[int]  # the axis of ``view`` each one indexes
    naxes: int  # the rank of ``view``
    dims: list[str]  # the region's shape (NumPy's getitem result)
    bdims: list[str]  # the broadcast shape of the index arrays
    bpos: int  # where those axes sit in ``dims``

    def element(self, s: int, bvars: list[str]) -> str:
        """Source of index array ``s``'s element at the broadcast position ``bvars``."""
        name, r = self.sources[s]
        if r == 0:
            return name
        at = ", ".join(
            f"{bvars[len(bvars) - r + i]} if {name}.shape[{i}] != 1 else 0" for i in range(r)
        )
        return f"{name}[{at}]"


def _emit_fancy_index(
    w: Writer, node: Node, args: list, x: str, lines: list[str], indent: str
) -> _FancyIndex:
    """The index checked before anything is read or written: every index of the broadcast
    index shape is wrapped and checked in a first pass, so NumPy's IndexErrors (an index out
    of range, index shapes that do not broadcast, a mask of the wrong shape) signal before
    an in-place write starts; as in NumPy, an empty broadcast shape checks nothing. The
    read or write pass (:func:`_fancy_loop`) then computes each index again: cheaper than
    storing them (a buffer of the index count costs its page faults)."""
    parts = _fancy_plan(node)
    shift = 1 if node.op is OpKind.SETITEM else 0
    basic = []
    for p in parts:
        if p.kind == "slice":
            c = p.value
            basic.append(
                f"{'' if c.start is None else c.start}:"
                f"{'' if c.stop is None else c.stop}"
                f"{'' if c.step is None else ':' + str(c.step)}"
            )
        else:
            basic += [":"] * p.dims
    v = w.fresh("v")
    lines.append(f"{indent}{v} = {x}[{', '.join(basic)}]")
    sources: list[tuple[str, int]] = []
    slots: list[int] = []
    advanced: list[int] = []
    d = 0
    for i, p in enumerate(parts):
        if p.kind == "slice":
            d += 1
            continue
        advanced.append(i)
        if p.kind == "int":
            src = str(p.value) if isinstance(p.value, int) else args[p.value.position + shift].name
            sources.append((src, 0))
            slots.append(d)
            d += 1
            continue
        if isinstance(p.value, np.ndarray):
            name = f"c{len(w.constants)}"
            w.constants.append(
                np.ascontiguousarray(p.value, dtype=np.bool_ if p.kind == "mask" else np.int64)
            )
            rank = p.value.ndim
        else:
            name = args[p.value.position + shift].name
            rank = len(_dyn_arg(node, p.value).aval.shape)
        if p.kind == "array":
            sources.append((name, rank))
            slots.append(d)
            d += 1
            continue
        # a bool mask is its nonzero(): one index array per axis it spans (NumPy's rule)
        m = w.fresh("m")
        lines.append(f"{indent}{m} = np.ascontiguousarray({name})")
        for q in range(p.dims):  # NumPy: "boolean index did not match indexed array"
            w.signal(lines, indent, f"{m}.shape[{q}] != {v}.shape[{d + q}]")
        for q, a in enumerate(_emit_nonzero(w, m, p.dims, lines, indent)):
            sources.append((a, 1))
            slots.append(d + q)
        d += p.dims
    rb = max(r for _, r in sources)
    bdims = []
    for q in range(rb):  # the broadcast shape of the index arrays
        b = w.fresh("b")
        lines.append(f"{indent}{b} = 1")
        for name, r in sources:
            i = q - (rb - r)
            if i >= 0:
                lines.append(f"{indent}if {name}.shape[{i}] != 1:")
                w.signal(lines, indent + "    ", f"{b} != 1 and {b} != {name}.shape[{i}]")
                lines.append(f"{indent}    {b} = {name}.shape[{i}]")
        bdims.append(b)
    rest = [a for a in range(d) if a not in slots]
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    bpos = sum(1 for p in parts[: advanced[0]] if p.kind == "slice") if adjacent else 0
    dims = [f"{v}.shape[{a}]" for a in rest]
    dims[bpos:bpos] = bdims
    fx = _FancyIndex(", ".join(basic), v, sources, slots, d, dims, bdims, bpos)
    inner, bvars = _broadcast_loops(w, bdims, lines, indent)
    for s in range(len(sources)):
        size = f"{v}.shape[{slots[s]}]"
        k = w.fresh("k")
        lines.append(f"{inner}{k} = np.int64({fx.element(s, bvars)})")
        w.signal(lines, inner, f"{k} < -{size} or {k} >= {size}")
    return fx


def _broadcast_loops(
    w: Writer, bdims: list[str], lines: list[str], indent: str
) -> tuple[str, list[str]]:
    """Nested ``for`` loops over the broadcast index shape (C order): the body's indent and
    the loop variables."""
    bvars = []
    for b in bdims:
        q = w.fresh("q")
        lines.append(f"{indent}for {q} in range({b}):")
        indent += "    "
        bvars.append(q)
    return indent, bvars


def _fancy_loop(
    w: Writer, fx: _FancyIndex, lines: list[str], indent: str
) -> tuple[str, list[str], list[str]]:
    """The loops of the read or write pass: the body's indent, the loop variables and, per
    axis of ``fx.view``, ":" or its (checked, wrapped) index variable."""
    inner, bvars = _broadcast_loops(w, fx.bdims, lines, indent)
    picks = [":"] * fx.naxes
    for s, a in enumerate(fx.slots):
        k = w.fresh("k")
        lines.append(f"{inner}{k} = np.int64({fx.element(s, bvars)})")
        lines.append(f"{inner}if {k} < 0:")
        lines.append(f"{inner}    {k} += {fx.view}.shape[{a}]")
        picks[a] = k
    return inner, bvars, picks


def _emit_nonzero(w: Writer, m: str, rank: int, lines: list[str], indent: str) -> list[str]:
    """``np.nonzero(m)`` of a C-contiguous ``m``: one int64 array per axis, C order."""
    f = w.fresh("nz")
    lines.append(f"{indent}{f} = np.flatnonzero({m})")
    if rank == 1:
        return [f]
    out = []
    for q in range(rank):
        a = w.fresh("nz")
        after = " * ".join(f"{m}.shape[{e}]" for e in range(q + 1, rank))
        expr = f"{f} // ({after})" if after else f
        if q:
            expr = f"({expr}) % {m}.shape[{q}]"
        lines.append(f"{indent}{a} = {expr}")
        out.append(a)
    return out


def _emit_gather(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    """``x[index]`` with advanced components, as NumPy reads it: the broadcast index shape
    walked in C order, one copy of the rest of ``x`` per index tuple."""
    fx = _emit_fancy_index(w, node, args, args[0].name, lines, indent)
    _alloc(w, node, fx.dims, ctor(np.dtype(node.dtype)), lines, indent, t)
    inner, bvars, picks = _fancy_loop(w, fx, lines, indent)
    dst = [":"] * len(fx.dims)
    dst[fx.bpos : fx.bpos + len(bvars)] = bvars
    lines.append(f"{inner}{t}[{', '.join(dst)}] = {fx.view}[{', '.join(picks)}]")
    return "fresh"


class _Named:
    """A stand-in for a writer value: only its name is read here."""

    def __init__(self, name: str) -> None:
        self.name = name


def _emit_scatter(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    """``x[index] = value`` with advanced components, as NumPy writes it: the value cast
    and broadcast to the region, written index tuple after index tuple in C order (a
    repeated index keeps the last write). In place where the in-place plan lets this write
    reuse ``x``'s buffer, else into a copy. Every check (index, value shape) runs first;
    index arrays and a value that share the buffer written in place are copied first
    (NumPy reads both before it writes)."""
    x = args[0]
    dt = np.dtype(node.args[0].dtype)
    dts = ctor(dt)
    inplace = node in w.plan.writes
    args = list(args)
    if inplace:
        for i in range(2, len(args)):
            a = args[i]
            if isinstance(node.args[i], Node) and not a.scalar and a.roots & x.roots:
                c = w.fresh("ix")
                lines.append(f"{indent}{c} = {a.name}.copy()")
                args[i] = _Named(c)
    fx = _emit_fancy_index(w, node, args, x.name, lines, indent)
    value = node.args[1]
    rr = len(fx.dims)
    if not isinstance(value, Node):
        src = const_source(literal_into(value, dt), dt)
    elif args[1].scalar:
        src = args[1].name if np.dtype(value.dtype) == dt else f"{dts}({args[1].name})"
    else:
        val = args[1].name
        vr = len(value.aval.shape)
        for k in range(1, vr + 1):  # NumPy's ValueError: the value must broadcast
            w.signal(
                lines,
                indent,
                f"{val}.shape[{vr - k}] != 1 and {val}.shape[{vr - k}] != {fx.dims[rr - k]}",
            )
        c = w.fresh("val")
        if np.dtype(value.dtype) != dt:
            lines.append(f"{indent}{c} = {val}.astype({dts})")
        elif inplace and args[1].roots & x.roots:
            lines.append(f"{indent}{c} = {val}.copy()")
        else:
            lines.append(f"{indent}{c} = {val}")
        src = w.fresh("val")
        lines.append(f"{indent}{src} = np.broadcast_to({c}, {_shape_tuple(fx.dims)})")
    if inplace:
        lines.append(f"{indent}{t} = {x.name}")
    else:
        dims = [f"{x.name}.shape[{d}]" for d in range(len(node.aval.shape))]
        _alloc(w, node, dims, dts, lines, indent, t)
        lines.append(f"{indent}{t}[...] = {x.name}")
    dv = w.fresh("v")
    lines.append(f"{indent}{dv} = {t}[{fx.basic}]")
    inner, bvars, picks = _fancy_loop(w, fx, lines, indent)
    if isinstance(value, Node) and not args[1].scalar:
        at = [":"] * rr
        at[fx.bpos : fx.bpos + len(bvars)] = bvars
        src = f"{src}[{', '.join(at)}]"
    lines.append(f"{inner}{dv}[{', '.join(picks)}] = {src}")
    return "view" if inplace else "fresh"


RULES[OpKind.GETITEM] = Rule(_check_fancy, _emit_gather, _claims_fancy)
RULES[OpKind.SETITEM] = Rule(_check_fancy, _emit_scatter, _claims_fancy)

# ---------------------------------------------------------------------------------------------
# sort / argsort
# ---------------------------------------------------------------------------------------------

# NumPy's sort order: NaNs last, ``-0.0 == 0.0`` (the sort and the binary search share it).
_NAN_LAST_LT = """\
@_inline
def _lt(a, b):
    return a < b or (b != b and a == a)
"""

# A stable bottom-up merge sort of indices by NumPy's order (NaNs last, ``-0.0 == 0.0``):
# NumPy's own stable sort. Where NumPy's default (unstable) kind may order ties its own way,
# the caller checks that there are none that matter.
_ARGSORT = """\
@_inline
def _argsort_lane(v, idx, tmp):
    n = v.shape[0]
    for i in range(n):
        idx[i] = i
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                if _lt(v[idx[j]], v[idx[i]]):
                    tmp[k] = idx[j]
                    j += 1
                else:
                    tmp[k] = idx[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = idx[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = idx[j]
                j += 1
                k += 1
            lo = hi
        for q in range(n):
            idx[q] = tmp[q]
        width *= 2


@_inline
def _sort_rows(x2, o2, want_index, bits):
    # o2: the sorted values (want_index False) or their indices; returns True where NumPy's
    # result could differ: equal values of different bits (sort: -0.0 and 0.0, two NaNs of
    # different payloads), or any tie (argsort of an unstable kind: ``bits`` None)
    n = x2.shape[1]
    idx = np.empty(n, np.int64)
    tmp = np.empty(n, np.int64)
    for r in range(x2.shape[0]):
        v = x2[r]
        _argsort_lane(v, idx, tmp)
        for i in range(n):
            if i > 0:
                a = v[idx[i - 1]]
                b = v[idx[i]]
                if a == b or (a != a and b != b):
                    if want_index:
                        return True
                    if bits[r, idx[i - 1]] != bits[r, idx[i]]:
                        return True
            if want_index:
                o2[r, i] = idx[i]
            else:
                o2[r, i] = v[idx[i]]
    return False
"""


def _check_sort(node: Node) -> tuple[Node, int | None]:
    _only_params(node, {"axis", "kind"})
    x = _array_arg(node, 0, "a value")
    kind = node.attrs.get("kind")
    if kind not in (None, "quicksort", "stable", "mergesort", "heapsort"):
        raise Unsupported(f"{node.op.value} kind {kind!r}")
    rank = len(x.aval.shape)
    axis = node.attrs.get("axis", -1)
    if axis is None:
        return x, None
    if rank == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    return x, _axis(axis, rank, node.op.value)


def _emit_sort(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    """Each lane (the axis moved last, C-ordered) sorted by a stable merge sort. A stable
    ``argsort`` is NumPy's; for ``sort`` and an unstable ``argsort`` the sorted result is
    unique where no tie could come out in another order, which is checked: else it signals.
    """
    x_node, axis = _check_sort(node)
    rank = len(x_node.aval.shape)
    x = args[0].name
    dt = np.dtype(x_node.dtype)
    out_dt = ctor(np.dtype(node.dtype))
    if axis is None:
        perm = inv = None
        src = f"{x}.ravel()"
        rank = 1
    else:
        perm = [d for d in range(rank) if d != axis] + [axis]
        inv = [perm.index(d) for d in range(rank)]
        src = f"np.transpose({x}, {tuple(perm)!r})" if perm != list(range(rank)) else x
    c = w.fresh("s")
    lines.append(f"{indent}{c} = np.ascontiguousarray({src})")
    lanes = " * ".join(f"{c}.shape[{d}]" for d in range(rank - 1)) or "1"
    n = f"{c}.shape[{rank - 1}]"
    x2, o2 = w.fresh("s"), w.fresh("s")
    lines.append(f"{indent}{x2} = {c}.reshape(({lanes}, {n}))")
    lines.append(f"{indent}{o2} = np.empty(({lanes}, {n}), {out_dt})")
    stable = node.attrs.get("kind") in ("stable", "mergesort")
    want_index = node.op is OpKind.ARGSORT
    w.helpers["_lt"] = _NAN_LAST_LT
    w.helpers["_argsort"] = _ARGSORT
    bad = w.fresh("bad")
    if want_index and stable:  # ties in index order: NumPy's stable sort, nothing to check
        w.helpers["_argsort_stable"] = _ARGSORT_STABLE
        lines.append(f"{indent}{bad} = _sort_rows_stable({x2}, {o2})")
    else:
        # the bits of equal values (a float's bits; an integer's are its value)
        bits = f"{x2}.view(np.uint{8 * dt.itemsize})" if dt.kind == "f" else x2
        lines.append(f"{indent}{bad} = _sort_rows({x2}, {o2}, {want_index}, {bits})")
    w.signal(lines, indent, bad)
    shaped = f"{o2}.reshape({c}.shape)"
    if inv is not None and inv != list(range(rank)):
        shaped = f"np.ascontiguousarray(np.transpose({shaped}, {tuple(inv)!r}))"
    lines.append(f"{indent}{t} = {shaped}")
    return "fresh"


_ARGSORT_STABLE = """\
@_inline
def _sort_rows_stable(x2, o2):
    n = x2.shape[1]
    idx = np.empty(n, np.int64)
    tmp = np.empty(n, np.int64)
    for r in range(x2.shape[0]):
        _argsort_lane(x2[r], idx, tmp)
        for i in range(n):
            o2[r, i] = idx[i]
    return False
"""

RULES[OpKind.SORT] = Rule(lambda n: _check_sort(n) and None, _emit_sort)
RULES[OpKind.ARGSORT] = Rule(lambda n: _check_sort(n) and None, _emit_sort)


# ---------------------------------------------------------------------------------------------
# pad (constant and edge) / outer
# ---------------------------------------------------------------------------------------------


def _check_pad(node: Node) -> tuple[Node, list[tuple[int, int]], str | None]:
    """The padded array, its (before, after) widths per axis and the constant's source
    (None for ``mode='edge'``)."""
    _only_params(node, {"pad_width", "mode", "constant_values"})
    x = _array_arg(node, 0, "an array")
    dt = np.dtype(x.dtype)
    if np.dtype(node.dtype) != dt:
        raise Unsupported("pad changing the dtype")
    rank = len(x.aval.shape)
    if rank == 0:
        raise Unsupported("pad of a 0-d value")
    try:
        widths = np.broadcast_to(
            np.asarray(node.attrs["pad_width"], dtype=np.intp).reshape(-1, 2)
            if np.ndim(node.attrs["pad_width"])
            else np.asarray(node.attrs["pad_width"]),
            (rank, 2),
        )
    except (TypeError, ValueError):
        raise Unsupported(f"pad_width {node.attrs['pad_width']!r}") from None
    pairs = [(int(a), int(b)) for a, b in widths]
    if any(a < 0 or b < 0 for a, b in pairs):
        raise Unsupported("negative pad widths")
    mode = node.attrs.get("mode", "constant")
    if mode == "edge":
        if node.attrs.get("constant_values") is not None:
            raise Unsupported("pad mode 'edge' with constant_values")
        return x, pairs, None
    if mode != "constant":
        raise Unsupported(f"pad mode {mode!r} (constant and edge only)")
    cv = node.attrs.get("constant_values", 0)
    if np.ndim(cv) != 0:
        raise Unsupported("pad with per-axis constant_values")
    try:
        with np.errstate(all="raise"):
            value = np.pad(np.zeros(1, dt), 1, constant_values=cv)[0]  # NumPy's own cast
    except Exception:  # an int constant beyond the dtype, a NaN into an int...
        raise Unsupported(f"pad constant {cv!r} into {dt}") from None
    return x, pairs, const_source(value, dt)


def _emit_pad(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    """The array copied into the middle of the result; ``constant``: the rest filled with
    NumPy's cast of the constant; ``edge``: axis by axis, each pad copies the hyperplane at
    the edge (corners then hold the nearest edge value, as in NumPy)."""
    x_node, pairs, const = _check_pad(node)
    rank = len(pairs)
    x = args[0].name
    dts = ctor(np.dtype(x_node.dtype))
    dims = [f"{x}.shape[{d}] + {a + b}" for d, (a, b) in enumerate(pairs)]
    _alloc(w, node, dims, dts, lines, indent, t)
    if const is not None:
        lines.append(f"{indent}{t}[...] = {const}")
    else:  # NumPy: "can't extend empty axis" where an empty axis is padded
        for d, (a, b) in enumerate(pairs):
            if a or b:
                w.signal(lines, indent, f"{x}.shape[{d}] == 0")
    middle = ", ".join(f"{a}:{a} + {x}.shape[{d}]" for d, (a, b) in enumerate(pairs))
    lines.append(f"{indent}{t}[{middle}] = {x}")
    if const is None:
        for d, (a, b) in enumerate(pairs):
            size = f"{x}.shape[{d}]"
            if a:
                q = w.fresh("q")
                lines.append(f"{indent}for {q} in range({a}):")
                lines.append(
                    f"{indent}    {t}[{_index(rank, d, q)}] = {t}[{_index(rank, d, str(a))}]"
                )
            if b:
                q = w.fresh("q")
                lines.append(f"{indent}for {q} in range({b}):")
                lines.append(
                    f"{indent}    {t}[{_index(rank, d, f'{a} + {size} + {q}')}] = "
                    f"{t}[{_index(rank, d, f'{a} + {size} - 1')}]"
                )
    return "fresh"


RULES[OpKind.PAD] = Rule(lambda n: _check_pad(n) and None, _emit_pad)


def _check_outer(node: Node) -> np.dtype:
    _only_params(node, set())
    a, b = _array_arg(node, 0, "an operand"), _array_arg(node, 1, "an operand")
    dt = _out_dtype(node)
    for x in (a, b):
        if np.dtype(x.dtype) != dt:
            raise Unsupported(f"outer of {x.dtype} into {dt} (one dtype only)")
    if dt.kind == "b":
        raise Unsupported("outer of bools")
    _need_loop(np.multiply, dt)
    return dt


def _emit_outer(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    """``multiply(a.ravel()[:, None], b.ravel()[None, :])`` as NumPy runs it: its multiply
    loop once per row, ``a[i]`` with stride 0."""
    dt = _check_outer(node)
    a, b = w.fresh("u"), w.fresh("u")
    lines.append(f"{indent}{a} = {args[0].name}.ravel()")
    lines.append(f"{indent}{b} = {args[1].name}.ravel()")
    _alloc(w, node, [f"{a}.size", f"{b}.size"], ctor(dt), lines, indent, t)
    w.helpers["_loop3"] = _LOOP3
    i = w.fresh("i")
    lines.append(f"{indent}if {b}.size > 0:")
    lines.append(f"{indent}    for {i} in range({a}.size):")
    lines.append(
        f"{indent}        _loop3({_loop(w, np.multiply, (dt,) * 3)}, {_scratch(w)}, "
        f"{a}[{i}:].ctypes.data, {b}.ctypes.data, {t}[{i}].ctypes.data, {b}.size, "
        f"0, {b}.strides[0], {t}.strides[1])"
    )
    return "fresh"


RULES[OpKind.OUTER] = Rule(lambda n: _check_outer(n) and None, _emit_outer)

# ---------------------------------------------------------------------------------------------
# max / min over several axes
# ---------------------------------------------------------------------------------------------

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
    x, axis = node.args[0], node.attrs.get("axis")
    if (
        not isinstance(x, Node)
        or x.aval.shape is None
        or not isinstance(axis, tuple)
        or len(axis) < 2
    ):
        return False
    rank = len(x.aval.shape)
    try:
        return sorted({int(a) % rank for a in axis}) != list(range(rank))
    except (TypeError, ZeroDivisionError):
        return True


def _check_extreme(node: Node) -> tuple[Node, list[int], str | None]:
    """The reduced array, its reduced axes (sorted) and the ``initial`` value's source."""
    ufunc = node.op is OpKind.UFUNC_REDUCE
    _only_params(node, {"axis", "keepdims"} | ({"ufunc", "initial"} if ufunc else set()))
    x = _array_arg(node, 0, "a value")
    dt = np.dtype(x.dtype)
    if np.dtype(node.dtype) != dt:
        raise Unsupported(f"{node.op.value} changing the dtype")
    rank = len(x.aval.shape)
    axis = node.attrs.get("axis", 0 if ufunc else None)
    axis = (
        tuple(range(rank))
        if axis is None
        else tuple(axis)
        if isinstance(axis, (tuple, list))
        else (axis,)
    )
    axes = sorted({_axis(a, rank, node.op.value) for a in axis})
    if len(axes) != len(axis):
        raise Unsupported(f"{node.op.value} with a repeated axis")
    init = node.attrs.get("initial") if ufunc else None
    if init is None:
        return x, axes, None
    return x, axes, const_source(literal_value(init, dt), dt)


def _claims_ufunc_reduce(node: Node) -> bool:
    return node.attrs.get("ufunc") in (np.maximum, np.minimum)


def _emit_extreme(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    x_node, axes, init = _check_extreme(node)
    rank = len(x_node.aval.shape)
    x = args[0].name
    dts = ctor(np.dtype(node.dtype))
    kept = [d for d in range(rank) if d not in axes]
    perm = kept + axes
    y = w.fresh("y")
    src = x if perm == list(range(rank)) else f"np.transpose({x}, {tuple(perm)!r})"
    lines.append(f"{indent}{y} = np.ascontiguousarray({src})")
    rows = " * ".join(f"{x}.shape[{d}]" for d in kept) or "1"
    size = " * ".join(f"{x}.shape[{d}]" for d in axes) or "1"
    if init is None:  # NumPy: a zero-size reduction without an initial value is an error
        w.signal(lines, indent, f"{size} == 0")
    y2, o = w.fresh("y"), w.fresh("o")
    lines.append(f"{indent}{y2} = {y}.reshape(({rows}, {size}))")
    lines.append(f"{indent}{o} = np.empty({rows}, {dts})")
    w.helpers["_extreme_rows"] = _EXTREME_ROWS
    is_max = node.op is OpKind.MAX or node.attrs.get("ufunc") is np.maximum
    w.signal(
        lines,
        indent,
        f"_extreme_rows({y2}, {o}, {is_max}, {init is not None}, "
        f"{init if init is not None else f'{dts}(0)'})",
    )
    keep = bool(node.attrs.get("keepdims"))
    dims = [("1" if d in axes else f"{x}.shape[{d}]") for d in range(rank) if keep or d not in axes]
    if not dims:
        lines.append(f"{indent}{t} = {o}[0]")
        return "scalar"
    lines.append(f"{indent}{t} = {o}.reshape({_shape_tuple(dims)})")
    return "fresh"


RULES[OpKind.MAX] = Rule(lambda n: _check_extreme(n) and None, _emit_extreme, _several_axes)
RULES[OpKind.MIN] = Rule(lambda n: _check_extreme(n) and None, _emit_extreme, _several_axes)
RULES[OpKind.UFUNC_REDUCE] = Rule(
    lambda n: _check_extreme(n) and None, _emit_extreme, _claims_ufunc_reduce
)


# ---------------------------------------------------------------------------------------------
# nonzero / argwhere / squeeze / ufunc.accumulate
# ---------------------------------------------------------------------------------------------


def _check_nonzero(node: Node) -> int:
    _only_params(node, set())
    x = _array_arg(node, 0, "an array")
    rank = len(x.aval.shape)
    if rank == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    return rank


def _emit_nonzero_op(
    w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str
) -> str:
    """``np.nonzero``: the flat positions of the true (non-zero: NaN included, ``-0.0`` not)
    elements in C order, unravelled per axis; ``np.argwhere``: the same, one row each."""
    rank = _check_nonzero(node)
    m = w.fresh("m")
    lines.append(f"{indent}{m} = np.ascontiguousarray({args[0].name})")
    axes = _emit_nonzero(w, m, rank, lines, indent)
    if node.op is OpKind.NONZERO:
        lines.append(f"{indent}{t} = {_shape_tuple(axes)}")
        return "fresh"
    lines.append(f"{indent}{t} = np.empty(({axes[0]}.shape[0], {rank}), np.int64)")
    for q, a in enumerate(axes):
        lines.append(f"{indent}{t}[:, {q}] = {a}")
    return "fresh"


RULES[OpKind.NONZERO] = Rule(lambda n: _check_nonzero(n) and None, _emit_nonzero_op)
RULES[OpKind.ARGWHERE] = Rule(lambda n: _check_nonzero(n) and None, _emit_nonzero_op)


def _check_squeeze(node: Node) -> list[int]:
    """The axes ``squeeze`` removes: the given ones, or (``axis=None``) those of static
    size 1; an axis of unknown size the graph keeps must not be 1 at run time (checked)."""
    _only_params(node, {"axis"})
    x = _array_arg(node, 0, "an array")
    shape = x.aval.shape
    axis = node.attrs.get("axis")
    if axis is None:
        return [d for d, n in enumerate(shape) if n == 1]
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    norm = sorted({_axis(a, len(shape), "squeeze") for a in axes})
    if len(norm) != len(axes):
        raise Unsupported("squeeze with a repeated axis")
    return norm


def _emit_squeeze(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    """A view with index 0 at each squeezed axis. NumPy's ValueError (a given axis not of
    size 1), or an unknown size the graph keeps that is 1 (NumPy would drop it), signal."""
    axes = _check_squeeze(node)
    shape = node.args[0].aval.shape
    x = args[0].name
    for d, n in enumerate(shape):
        if d in axes and n != 1:
            w.signal(lines, indent, f"{x}.shape[{d}] != 1")
        elif node.attrs.get("axis") is None and n is None:
            w.signal(lines, indent, f"{x}.shape[{d}] == 1")
    if len(axes) == len(shape):
        lines.append(f"{indent}{t} = {x}[{', '.join('0' for _ in shape)}]")
        return "scalar"
    index = ", ".join("0" if d in axes else ":" for d in range(len(shape)))
    lines.append(f"{indent}{t} = {x}[{index}]")
    return "view"


RULES[OpKind.SQUEEZE] = Rule(lambda n: _check_squeeze(n) and None, _emit_squeeze)


def _check_accumulate(node: Node) -> tuple[Node, np.dtype, int, np.ufunc]:
    _only_params(node, {"axis", "ufunc"})
    ufunc = node.attrs["ufunc"]
    x = _array_arg(node, 0, "a value")
    dt = _out_dtype(node)
    if not isinstance(ufunc, np.ufunc) or ufunc.nin != 2 or ufunc.nout != 1:
        raise Unsupported(f"accumulate of {ufunc!r}")
    if np.dtype(x.dtype) != dt:
        raise Unsupported(f"{ufunc.__name__}.accumulate of {x.dtype} into {dt}")
    if find_loop(ufunc, (dt,) * 3) is None:
        raise Unsupported(f"no NumPy {ufunc.__name__} loop for {dt}")
    rank = len(x.aval.shape)
    if rank == 0:
        raise Unsupported("accumulate of a 0-d value")
    return x, dt, _axis(node.attrs.get("axis", 0), rank, "accumulate"), ufunc


def _emit_accumulate(
    w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str
) -> str:
    """``ufunc.accumulate`` as :func:`_emit_scan` computes ``cumsum``: NumPy's own loop of
    the ufunc for the dtype, called with its output one step behind its first input."""
    x_node, dt, axis, ufunc = _check_accumulate(node)
    rank = len(x_node.aval.shape)
    dts = ctor(dt)
    x = w.fresh("x")
    lines.append(f"{indent}{x} = np.ascontiguousarray({args[0].name})")
    _alloc(w, node, [f"{x}.shape[{d}]" for d in range(rank)], dts, lines, indent, t)
    outer, n, inner = _lanes(x, rank, axis)
    shape3 = f"({outer}, {n}, {inner})"
    w.helpers["_loop3"] = _LOOP3
    w.helpers["_accumulate"] = _ACCUMULATE
    lines.append(
        f"{indent}_accumulate({x}.reshape({shape3}), {t}.reshape({shape3}), "
        f"{_loop(w, ufunc, (dt,) * 3)}, {_scratch(w)})"
    )
    return "fresh"


RULES[OpKind.UFUNC_ACCUMULATE] = Rule(lambda n: _check_accumulate(n) and None, _emit_accumulate)


# ---------------------------------------------------------------------------------------------
# searchsorted / digitize
# ---------------------------------------------------------------------------------------------

# NumPy's binary search (``npysort/binsearch.cpp``) step for step, so that even an unsorted
# ``a`` gives NumPy's answer: each key narrows from where the previous one ended (the bounds
# reset when the keys go down), comparing with NumPy's order (NaNs last). ``right``: the
# comparison is ``a <= key`` instead of ``a < key``.
_SEARCHSORTED = """\
@_inline
def _ss_cmp(a, b, right):
    if right:
        return not _lt(b, a)
    return _lt(a, b)


@_inline
def _searchsorted(arr, keys, out, right):
    n = arr.shape[0]
    if keys.shape[0] == 0:
        return
    lo = 0
    hi = n
    last = keys[0]
    for i in range(keys.shape[0]):
        key = keys[i]
        if _ss_cmp(last, key, right):
            hi = n
        else:
            lo = 0
            hi = hi + 1 if hi < n else n
        last = key
        while lo < hi:
            mid = lo + ((hi - lo) >> 1)
            if _ss_cmp(arr[mid], key, right):
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo
"""

# NumPy's ``_monotonicity`` of digitize's bins (as float64): 1 increasing, -1 decreasing,
# 0 neither (NumPy's ValueError). Comparisons with a NaN are false, so a NaN second value
# makes the bins "decreasing", as in NumPy.
_MONOTONICITY = """\
@_inline
def _monotonicity(a):
    n = a.shape[0]
    if n == 0:
        return 1
    last = a[0]
    i = 1
    while i < n and a[i] == last:
        i += 1
    if i == n:
        return 1
    nxt = a[i]
    if last < nxt:
        for k in range(i + 1, n):
            last = nxt
            nxt = a[k]
            if last > nxt:
                return 0
        return 1
    for k in range(i + 1, n):  # anything else (a NaN after the first value too)
        last = nxt
        nxt = a[k]
        if last < nxt:
            return 0
    return -1
"""


def _check_search(node: Node) -> tuple[Node, Node, np.dtype]:
    """The sorted array, the keys and the dtype NumPy compares them in."""
    if node.op is OpKind.SEARCHSORTED:
        _only_params(node, {"side"})
        if len(node.args) > 2 and node.args[2] is not None:
            raise Unsupported("searchsorted with a sorter")
        a, v = _array_arg(node, 0, "a sorted array"), _array_arg(node, 1, "keys")
    else:
        _only_params(node, {"right"})
        v, a = _array_arg(node, 0, "values"), _array_arg(node, 1, "bins")
    if len(a.aval.shape) != 1:
        raise Unsupported(f"{node.op.value} into an array of rank {len(a.aval.shape)}")
    common = np.result_type(a.dtype, v.dtype)
    if common not in _DTYPES or common.kind == "b":
        raise Unsupported(f"{node.op.value} of {a.dtype} and {v.dtype}")
    if np.dtype(node.dtype) != np.dtype(np.intp):
        raise Unsupported(f"{node.op.value} into {node.dtype}")
    return a, v, common


def _emit_search(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    """NumPy's binary search of each key (C order) in the common dtype of the two arrays.
    ``digitize``: NumPy's composition — the bins' monotonicity (non-monotonic bins signal
    NumPy's ValueError), then searchsorted with the other side, reversed for decreasing
    bins."""
    a_node, v_node, common = _check_search(node)
    ai, vi = (0, 1) if node.op is OpKind.SEARCHSORTED else (1, 0)
    cts = ctor(common)
    a, v = w.fresh("sa"), w.fresh("sv")
    cast_a = "" if np.dtype(a_node.dtype) == common else f".astype({cts})"
    cast_v = "" if np.dtype(v_node.dtype) == common else f".astype({cts})"
    lines.append(f"{indent}{a} = {args[ai].name}{cast_a}")
    rank = len(v_node.aval.shape)
    src = args[vi].name
    if rank == 0:
        lines.append(f"{indent}{v} = np.full(1, {src}, {cts})")
    else:
        lines.append(f"{indent}{v} = np.ascontiguousarray({src}{cast_v}).ravel()")
    w.helpers["_lt"] = _NAN_LAST_LT
    w.helpers["_searchsorted"] = _SEARCHSORTED
    o = w.fresh("so")
    lines.append(f"{indent}{o} = np.empty({v}.shape[0], np.int64)")
    if node.op is OpKind.SEARCHSORTED:
        right = node.attrs.get("side", "left") == "right"
        lines.append(f"{indent}_searchsorted({a}, {v}, {o}, {right})")
    else:
        w.helpers["_monotonicity"] = _MONOTONICITY
        mono = w.fresh("mono")
        lines.append(f"{indent}{mono} = _monotonicity({args[ai].name}.astype(np.float64))")
        w.signal(lines, indent, f"{mono} == 0")
        right = not node.attrs.get("right", False)  # NumPy swaps the side
        lines.append(f"{indent}if {mono} == -1:")
        lines.append(f"{indent}    _searchsorted({a}[::-1], {v}, {o}, {right})")
        lines.append(f"{indent}    {o} = {a}.shape[0] - {o}")
        lines.append(f"{indent}else:")
        lines.append(f"{indent}    _searchsorted({a}, {v}, {o}, {right})")
    if rank == 0:
        lines.append(f"{indent}{t} = {o}[0]")
        return "scalar"
    shape = _shape_tuple([f"{args[vi].name}.shape[{d}]" for d in range(rank)])
    lines.append(f"{indent}{t} = {o}.reshape({shape})")
    return "fresh"


RULES[OpKind.SEARCHSORTED] = Rule(lambda n: _check_search(n) and None, _emit_search)
RULES[OpKind.DIGITIZE] = Rule(lambda n: _check_search(n) and None, _emit_search)


# ---------------------------------------------------------------------------------------------
# median / percentile / quantile (the default linear method)
# ---------------------------------------------------------------------------------------------

# Each lane sorted (NaNs last, as NumPy's partition orders them): the order statistics NumPy's
# partition finds are then the same numbers. What only NumPy's partition decides signals: a
# NaN in the lane (NumPy returns the NaN its partition put last) and, for the quantiles, a
# selected zero in a lane holding zeros of both signs (which zero lands at the k-th place).
_MIXED_ZEROS = """\
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

# ``np.median``: NumPy's ``mean`` of the one or two middle values — their sum in the sum's
# dtype (the input's for floats, float64 for integers) as NumPy's add reduction makes it
# (from +0.0: ``0.0 + (a + b)``, so a zero median is +0.0 whichever zeros were picked),
# divided in float64 by the intp count, cast to the result's dtype.
_MEDIAN_ROWS = """\
@_inline
def _median_rows_{c}(y2, out):
    n = y2.shape[1]
    for r in range(y2.shape[0]):
        s = np.sort(y2[r])
        if s[n - 1] != s[n - 1]:
            return True
        if n % 2 == 1:
            total = {acc}(0) + {acc}(s[n // 2])
            count = np.float64(1)
        else:
            total = {acc}(0) + ({acc}(s[n // 2 - 1]) + {acc}(s[n // 2]))
            count = np.float64(2)
        out[r] = {out}(np.float64(total) / count)
    return False
"""

# ``np.quantile(..., method="linear")`` of float64 lanes: NumPy's ``_quantile`` — the
# virtual index ``(n - 1) * q``, its neighbours (both the last value at or above ``n - 1``),
# ``gamma = index - previous`` and ``_lerp``: ``a + (b - a) * gamma``, or
# ``b - (b - a) * (1 - gamma)`` where ``gamma >= 0.5``.
_QUANTILE_ROWS = """\
@_inline
def _quantile_rows(y2, q, out):
    n = y2.shape[1]
    for r in range(y2.shape[0]):
        s = np.sort(y2[r])
        if s[n - 1] != s[n - 1]:
            return True
        mixed = _mixed_zeros(s)
        for i in range(q.shape[0]):
            vi = np.float64(n - 1) * q[i]
            if vi >= n - 1:
                p = n - 1
                g = vi - np.float64(-1)
                nx = n - 1
            elif vi < 0:
                p = 0
                g = vi
                nx = 0
            else:
                p = int(np.floor(vi))
                g = vi - np.float64(p)
                nx = p + 1
            a = s[p]
            b = s[nx]
            if mixed and (a == 0 or b == 0):
                return True
            d = b - a
            v = a + d * g
            if g >= 0.5:
                v = b - d * (1.0 - g)
            out[i, r] = v
    return False
"""


def _check_order_stat(node: Node) -> tuple[Node, int | None, np.ndarray | None]:
    """The reduced array, its axis (None: all) and the quantiles as fractions (float64;
    None for ``median``), or Unsupported."""
    x = _array_arg(node, 0, "a value")
    rank = len(x.aval.shape)
    if node.op is OpKind.MEDIAN:
        _only_params(node, {"axis", "keepdims"})
        q = None
        if np.dtype(x.dtype).kind not in "iuf":
            raise Unsupported(f"median of {x.dtype}")
    else:
        _only_params(node, {"axis", "keepdims", "q"})
        if np.dtype(x.dtype) != np.float64:
            raise Unsupported(
                f"{node.op.value} of {x.dtype} (float64 only: NumPy's "
                "promotion of the weights differs for others)"
            )
        raw = np.asarray(node.attrs["q"])
        if raw.dtype.kind not in "iuf" or raw.ndim > 1:
            raise Unsupported(f"{node.op.value} with q of {raw.dtype} and rank {raw.ndim}")
        if node.op is OpKind.PERCENTILE:
            q = np.true_divide(raw, 100)  # NumPy's own conversion
        elif raw.dtype.kind != "f":
            raise Unsupported("quantile with integer q (NumPy takes, not interpolates)")
        else:
            q = raw
        q = np.asarray(q, np.float64)
        if np.isnan(q).any() or (q < 0).any() or (q > 1).any():
            raise Unsupported(f"{node.op.value} q out of range (NumPy's ValueError)")
    if np.dtype(node.dtype) not in _DTYPES:
        raise Unsupported(f"{node.op.value} to {node.dtype}")
    if rank == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    axis = node.attrs.get("axis")
    if isinstance(axis, (tuple, list)):
        if len(axis) != 1:
            raise Unsupported(f"{node.op.value} over several axes")
        axis = axis[0]
    return x, None if axis is None else _axis(axis, rank, node.op.value), q


def _emit_order_stat(
    w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str
) -> str:
    """Lanes along the axis (moved last, C-ordered), each sorted, then NumPy's formula; an
    empty lane (NumPy's warning and NaN) signals, as do the cases of :data:`_MIXED_ZEROS`."""
    x_node, axis, q = _check_order_stat(node)
    rank = len(x_node.aval.shape)
    x = args[0].name
    dt = np.dtype(x_node.dtype)
    out_dt = np.dtype(node.dtype)
    if axis is None:
        src, kept = f"{x}.ravel()", []
        y = w.fresh("y")
        lines.append(f"{indent}{y} = np.ascontiguousarray({x}).ravel()")
        lanes, n = "1", f"{y}.shape[0]"
    else:
        kept = [d for d in range(rank) if d != axis]
        perm = kept + [axis]
        src = x if perm == list(range(rank)) else f"np.transpose({x}, {tuple(perm)!r})"
        y = w.fresh("y")
        lines.append(f"{indent}{y} = np.ascontiguousarray({src})")
        lanes = " * ".join(f"{x}.shape[{d}]" for d in kept) or "1"
        n = f"{x}.shape[{axis}]"
    w.signal(lines, indent, f"{n} == 0")
    y2, o = w.fresh("y"), w.fresh("o")
    lines.append(f"{indent}{y2} = {y}.reshape(({lanes}, {n}))")
    w.helpers["_mixed_zeros"] = _MIXED_ZEROS
    if q is None:
        acc = ctor(dt) if dt.kind == "f" else "np.float64"
        name = f"_median_rows_{dt.char}"
        w.helpers[name] = _MEDIAN_ROWS.format(c=dt.char, acc=acc, out=ctor(out_dt))
        lines.append(f"{indent}{o} = np.empty({lanes}, {ctor(out_dt)})")
        w.signal(lines, indent, f"{name}({y2}, {o})")
        qdims: list[str] = []
    else:
        qc = f"c{len(w.constants)}"
        w.constants.append(np.ascontiguousarray(q.ravel()))
        w.helpers["_quantile_rows"] = _QUANTILE_ROWS
        lines.append(f"{indent}{o} = np.empty(({q.size}, {lanes}), np.float64)")
        w.signal(lines, indent, f"_quantile_rows({y2}, {qc}, {o})")
        qdims = [str(s) for s in q.shape]
    keep = bool(node.attrs.get("keepdims"))
    dims = qdims + [
        ("1" if d == axis or axis is None else f"{x}.shape[{d}]")
        for d in range(rank)
        if keep or (axis is not None and d != axis)
    ]
    if not dims:
        lines.append(f"{indent}{t} = {o}.ravel()[0]")
        return "scalar"
    lines.append(f"{indent}{t} = {o}.reshape({_shape_tuple(dims)})")
    return "fresh"


for _kind in (OpKind.MEDIAN, OpKind.PERCENTILE, OpKind.QUANTILE):
    RULES[_kind] = Rule(lambda n: _check_order_stat(n) and None, _emit_order_stat)


# ---------------------------------------------------------------------------------------------
# unique / interp / histogram
# ---------------------------------------------------------------------------------------------

# ``np.unique`` (``_unique1d``): the sorted values, a value kept where it differs from the one
# before, its first index from a stable (merge) argsort, its count from the next kept place.
# Equal floats of different bits (``-0.0``/``0.0``; NaNs, which ``equal_nan`` merges) keep the
# one NumPy's sort put first: those signal.
_UNIQUE = """\
@_inline
def _unique_runs(aux):
    n = aux.shape[0]
    mask = np.empty(n, np.bool_)
    if n > 0:
        mask[0] = True
    for i in range(1, n):
        mask[i] = aux[i] != aux[i - 1]
    starts = np.flatnonzero(mask)
    counts = np.empty(starts.shape[0], np.int64)
    for i in range(starts.shape[0]):
        end = starts[i + 1] if i + 1 < starts.shape[0] else n
        counts[i] = end - starts[i]
    return starts, counts
"""


def _check_unique(node: Node) -> np.dtype:
    _only_params(node, {"return_index", "return_inverse", "return_counts", "equal_nan"})
    x = _array_arg(node, 0, "an array")
    if node.attrs.get("return_inverse"):
        raise Unsupported("unique with return_inverse")
    if not node.attrs.get("equal_nan", True):
        raise Unsupported("unique with equal_nan=False")
    if np.dtype(x.dtype).kind not in "iuf":
        raise Unsupported(f"unique of {x.dtype}")
    return np.dtype(x.dtype)


def _emit_unique(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    dt = _check_unique(node)
    flat, aux, perm = w.fresh("u"), w.fresh("u"), w.fresh("u")
    lines.append(f"{indent}{flat} = np.ascontiguousarray({args[0].name}).ravel()")
    with_index = bool(node.attrs.get("return_index"))
    if with_index:  # NumPy: a mergesort argsort, so the first of equal values is kept
        lines.append(f"{indent}{perm} = np.argsort({flat}, kind='mergesort')")
        lines.append(f"{indent}{aux} = {flat}[{perm}]")
    else:
        lines.append(f"{indent}{aux} = np.sort({flat})")
    if dt.kind == "f":
        w.helpers["_mixed_zeros"] = _MIXED_ZEROS
        w.signal(
            lines,
            indent,
            f"{aux}.shape[0] > 0 and {aux}[{aux}.shape[0] - 1] != {aux}[{aux}.shape[0] - 1]",
        )
        w.signal(lines, indent, f"_mixed_zeros({aux})")
    w.helpers["_unique_runs"] = _UNIQUE
    starts, counts, vals = w.fresh("u"), w.fresh("u"), w.fresh("u")
    lines.append(f"{indent}{starts}, {counts} = _unique_runs({aux})")
    lines.append(f"{indent}{vals} = {aux}[{starts}]")
    outs = [vals]
    if with_index:
        outs.append(f"{perm}[{starts}]")
    if node.attrs.get("return_counts"):
        outs.append(counts)
    if len(outs) == 1:
        lines.append(f"{indent}{t} = {vals}")
    else:
        lines.append(f"{indent}{t} = {_shape_tuple(outs)}")
    return "fresh"


RULES[OpKind.UNIQUE] = Rule(lambda n: _check_unique(n) and None, _emit_unique)

# ``np.interp`` (``compiled_base.c``'s ``arr_interp``) on float64 values: for sorted ``xp``
# the interval ``j`` with ``xp[j] <= x < xp[j + 1]`` is unique, so any search finds NumPy's;
# then NumPy's formula: the slope ``(fp[j+1] - fp[j]) / (xp[j+1] - xp[j])`` times
# ``x - xp[j]`` plus ``fp[j]``, retried from the right end on a NaN. An unsorted (or NaN)
# ``xp`` is searched NumPy's own way with its guesses: those calls signal.
_INTERP = """\
@_inline
def _interp(x, xp, fp, out):
    m = xp.shape[0]
    for i in range(m - 1):
        if not xp[i] <= xp[i + 1]:
            return True
    lval = fp[0]
    rval = fp[m - 1]
    for i in range(x.shape[0]):
        v = x[i]
        if m == 1:  # (NumPy checks no NaN here)
            out[i] = lval if v < xp[0] else (rval if v > xp[0] else fp[0])
            continue
        if v != v:
            out[i] = v
            continue
        if v > xp[m - 1]:
            out[i] = rval
            continue
        if v < xp[0]:
            out[i] = lval
            continue
        lo = 0
        hi = m
        while lo < hi:
            mid = lo + ((hi - lo) >> 1)
            if v >= xp[mid]:
                lo = mid + 1
            else:
                hi = mid
        j = lo - 1
        if j == m - 1 or xp[j] == v:
            out[i] = fp[j]
            continue
        slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
        r = slope * (v - xp[j]) + fp[j]
        if r != r:
            r = slope * (v - xp[j + 1]) + fp[j + 1]
            if r != r and fp[j] == fp[j + 1]:
                r = fp[j]
        out[i] = r
    return False
"""


def _check_interp(node: Node) -> None:
    _only_params(node, set())
    if any(a is not None for a in node.args[3:]):
        raise Unsupported("interp with left, right or period")
    for i, what in enumerate(("x", "xp", "fp")):
        a = _array_arg(node, i, what)
        if i and len(a.aval.shape) != 1:
            raise Unsupported(f"interp with a {len(a.aval.shape)}-D {what}")
    if np.dtype(node.dtype) != np.float64:
        raise Unsupported(f"interp into {node.dtype}")


def _emit_interp(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    """The three arrays as float64 (NumPy's conversion); lengths of ``xp`` and ``fp`` that
    differ, or an empty ``xp`` (NumPy's ValueError), signal."""
    _check_interp(node)
    x, xp, fp = (w.fresh("ip") for _ in range(3))
    rank = len(node.args[0].aval.shape)
    for v, a in zip((x, xp, fp), args):
        if v == x and rank == 0:
            lines.append(f"{indent}{v} = np.full(1, np.float64({a.name}), np.float64)")
        else:
            lines.append(f"{indent}{v} = np.ascontiguousarray({a.name}).ravel().astype(np.float64)")
    w.signal(lines, indent, f"{xp}.shape[0] != {fp}.shape[0] or {xp}.shape[0] == 0")
    o = w.fresh("ip")
    lines.append(f"{indent}{o} = np.empty({x}.shape[0], np.float64)")
    w.helpers["_interp"] = _INTERP
    w.signal(lines, indent, f"_interp({x}, {xp}, {fp}, {o})")
    if rank == 0:
        lines.append(f"{indent}{t} = {o}[0]")
        return "scalar"
    shape = _shape_tuple([f"{args[0].name}.shape[{d}]" for d in range(rank)])
    lines.append(f"{indent}{t} = {o}.reshape({shape})")
    return "fresh"


RULES[OpKind.INTERP] = Rule(_check_interp, _emit_interp)

# ``np.histogram`` with a number of bins and a static range, of float64 values: NumPy's fast
# path for equal bins — values outside the range dropped, the index
# ``int((x - first) / denom * bins)`` corrected by one against the edges (the last bin holds
# its right edge), counted. The edges are NumPy's own, computed once when compiling.
_HISTOGRAM = """\
@_inline
def _histogram(a, edges, first, last, denom, nbins, counts):
    for x in a:
        if not (x >= first and x <= last):
            continue
        k = int(((x - first) / denom) * nbins)
        if k == nbins:
            k -= 1
        if x < edges[k]:
            k -= 1
        if x >= edges[k + 1] and k != nbins - 1:
            k += 1
        counts[k] += 1
"""


def _histogram_range(node: Node) -> tuple[float, float, float, np.ndarray]:
    """``(first, last, denom, edges)`` as NumPy's histogram computes them from the static
    range (``denom``: NumPy's ``_unsigned_subtract(last, first)`` as a float64)."""
    _only_params(node, {"bins", "range", "density"})
    a = _array_arg(node, 0, "an array")
    if np.dtype(a.dtype) != np.float64:
        raise Unsupported(f"histogram of {a.dtype} (float64 only)")
    if any(v is not None for v in node.args[1:]):
        raise Unsupported("histogram with bin edges or weights")
    bins, rng = node.attrs.get("bins"), node.attrs.get("range")
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
        raise Unsupported(f"histogram with bins={bins!r} (a number of bins only)")
    if node.attrs.get("density"):
        raise Unsupported("histogram with density")
    if rng is None or len(rng) != 2 or any(type(v) not in (int, float, np.float64) for v in rng):
        raise Unsupported(f"histogram with range={rng!r} (a static range of Python numbers)")
    first, last = rng
    try:
        edges = np.histogram_bin_edges(np.empty(0, np.float64), bins, (first, last))
    except ValueError as e:
        raise Unsupported(f"histogram range {rng!r} ({e})") from None
    if first == last:  # NumPy widens an empty range by 0.5 on each side
        first, last = first - 0.5, last + 0.5
    dt = np.result_type(last, first)
    if dt.kind == "i":
        denom = float(
            np.subtract(
                np.asarray(last, dt),
                np.asarray(first, dt),
                casting="unsafe",
                dtype=np.dtype(f"u{dt.itemsize}"),
            )
        )
    else:
        denom = float(np.subtract(last, first, dtype=dt))
    return float(first), float(last), denom, edges


def _emit_histogram(
    w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str
) -> str:
    first, last, denom, edges = _histogram_range(node)
    nbins = int(node.attrs["bins"])
    ec = f"c{len(w.constants)}"
    w.constants.append(edges)
    w.helpers["_histogram"] = _HISTOGRAM
    counts = w.fresh("h")
    lines.append(f"{indent}{counts} = np.zeros({nbins}, np.int64)")
    lines.append(
        f"{indent}_histogram(np.ascontiguousarray({args[0].name}).ravel(), {ec}, "
        f"{const_source(first, np.float64)}, {const_source(last, np.float64)}, "
        f"{const_source(denom, np.float64)}, {nbins}, {counts})"
    )
    lines.append(f"{indent}{t} = ({counts}, {ec}.copy())")
    return "fresh"


RULES[OpKind.HISTOGRAM] = Rule(lambda n: _histogram_range(n) and None, _emit_histogram)


# ---------------------------------------------------------------------------------------------
# convolve / correlate
# ---------------------------------------------------------------------------------------------

# NumPy's ``_pyarray_correlate`` (``multiarraymodule.c``) of C-contiguous ``d`` and ``k``
# (``len(d) >= len(k)``) step for step. The partial overlaps at both ends are each one call
# of the dtype's dot function, which NumPy's matmul loop makes for a (1, n) @ (n, 1) product
# with the same strides (``_mm_float``: the same BLAS ``dot``, the same bits). The full
# overlaps are NumPy's ``small_correlate`` for kernels of at most 11 values — a sum from 0
# in kernel order, in the dtype — and dot calls for longer kernels. A function of its own,
# not inlined: compiled once per dtype however many convolutions a graph makes.
_CORRELATE = """\
@_inline
def _dot1(d, i1, k, i2, out, o, n, f, dd, pp, dims, st):
    _mm_float(d[i1:i1 + n][None, None, :], k[i2:i2 + n][None, :, None],
              out[o:o + 1][None, :, None], f, dd, pp, dims, st, 0, 0, 0, 0, 0, 0)


@_kernel
def _correlate(d, k, mode, f, dd, pp, dims, st):
    n1 = d.shape[0]
    n2 = k.shape[0]
    if mode == 0:
        length = n1 - n2 + 1
        n_left = 0
        n_right = 0
    elif mode == 1:
        length = n1
        n_left = n2 // 2
        n_right = n2 - n_left - 1
    else:
        length = n1 + n2 - 1
        n_left = n2 - 1
        n_right = n2 - 1
    out = np.empty(length, d.dtype)
    i1 = 0
    i2 = n_left
    n = n2 - n_left
    o = 0
    for i in range(n_left):
        _dot1(d, i1, k, i2, out, o, n, f, dd, pp, dims, st)
        n += 1
        i2 -= 1
        o += 1
    nd = n1 - n2 + 1
    if n <= 11:
        for i in range(nd):
            s = d.dtype.type(0)
            for j in range(n):
                s += d[i + j] * k[j]
            out[o + i] = s
    else:
        for i in range(nd):
            _dot1(d, i, k, 0, out, o + i, n, f, dd, pp, dims, st)
    i1 = nd
    o += nd
    for i in range(n_right):
        n -= 1
        _dot1(d, i1, k, 0, out, o, n, f, dd, pp, dims, st)
        i1 += 1
        o += 1
    return out
"""

_CORRELATE_MODES = {"valid": 0, "same": 1, "full": 2}


def _check_correlate(node: Node) -> tuple[np.dtype, int]:
    _only_params(node, {"mode"})
    a, v = _array_arg(node, 0, "an array"), _array_arg(node, 1, "a kernel")
    dt = _out_dtype(node)
    if dt.kind != "f" or np.dtype(a.dtype) != dt or np.dtype(v.dtype) != dt:
        raise Unsupported(
            f"{node.op.value} of {a.dtype} and {v.dtype} (one float dtype: "
            "NumPy's integer dot and small_correlate differ)"
        )
    if len(a.aval.shape) != 1 or len(v.aval.shape) != 1:
        raise Unsupported(f"{node.op.value} of arrays other than 1-D")
    mode = node.attrs.get("mode", "valid")
    if mode not in _CORRELATE_MODES:
        raise Unsupported(f"{node.op.value} mode {mode!r}")
    if find_loop(np.matmul, (dt,) * 3) is None:
        raise Unsupported(f"no NumPy matmul loop for {dt}")
    return dt, _CORRELATE_MODES[mode]


def _emit_correlate(
    w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str
) -> str:
    """``np.convolve``: the longer array correlated with the shorter one reversed (NumPy's
    composition); ``np.correlate``: the arrays as given, swapped when the first is shorter
    and the result then reversed (NumPy's ``correlate2``). An empty array signals NumPy's
    ValueError."""
    dt, mode = _check_correlate(node)
    a, v = w.fresh("cv"), w.fresh("cv")
    lines.append(f"{indent}{a} = np.ascontiguousarray({args[0].name})")
    lines.append(f"{indent}{v} = np.ascontiguousarray({args[1].name})")
    w.signal(lines, indent, f"{a}.shape[0] == 0 or {v}.shape[0] == 0")
    w.helpers["_mm_float"] = _MM_FLOAT
    w.helpers["_correlate"] = _CORRELATE
    loop = f"{_loop(w, np.matmul, (dt,) * 3)}, {_scratch(w)}"
    lines.append(f"{indent}if {a}.shape[0] >= {v}.shape[0]:")
    if node.op is OpKind.CONVOLVE:
        lines.append(
            f"{indent}    {t} = _correlate({a}, np.ascontiguousarray({v}[::-1]), {mode}, {loop})"
        )
        lines.append(f"{indent}else:")
        lines.append(
            f"{indent}    {t} = _correlate({v}, np.ascontiguousarray({a}[::-1]), {mode}, {loop})"
        )
    else:
        lines.append(f"{indent}    {t} = _correlate({a}, {v}, {mode}, {loop})")
        lines.append(f"{indent}else:")
        lines.append(
            f"{indent}    {t} = np.ascontiguousarray(_correlate({v}, {a}, {mode}, {loop})[::-1])"
        )
    return "fresh"


RULES[OpKind.CONVOLVE] = Rule(lambda n: _check_correlate(n) and None, _emit_correlate)
RULES[OpKind.CORRELATE] = Rule(lambda n: _check_correlate(n) and None, _emit_correlate)


# ---------------------------------------------------------------------------------------------
# linalg.solve / inv / det: NumPy's own LAPACK gufunc loops
# ---------------------------------------------------------------------------------------------


def _linalg_loop(op: OpKind, b_rank: int) -> np.ufunc:
    """The ``numpy.linalg._umath_linalg`` gufunc ``np.linalg.<op>`` calls for 2-D ``a``."""
    from numpy.linalg import _umath_linalg as umath_linalg

    if op is OpKind.SOLVE:
        return umath_linalg.solve1 if b_rank == 1 else umath_linalg.solve
    return umath_linalg.inv if op is OpKind.INV else umath_linalg.det


def _check_linalg(node: Node) -> tuple[np.ufunc, int]:
    """The gufunc and the rank of ``b`` (0 without one)."""
    _only_params(node, set())
    a = _array_arg(node, 0, "a matrix")
    if len(a.aval.shape) != 2:
        raise Unsupported(f"{node.op.value} of a stack of matrices (2-D only)")
    rank_b = 0
    for x in node.args[: 2 if node.op is OpKind.SOLVE else 1]:
        if not isinstance(x, Node) or np.dtype(x.dtype).kind not in "iuf":
            raise Unsupported(f"{node.op.value} of {getattr(x, 'dtype', type(x).__name__)}")
    if node.op is OpKind.SOLVE:
        rank_b = len(_array_arg(node, 1, "b").aval.shape)
        if rank_b not in (1, 2):
            raise Unsupported(f"solve with a {rank_b}-D b")
    if np.dtype(node.dtype) not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise Unsupported(f"{node.op.value} into {node.dtype}")
    ufunc = _linalg_loop(node.op, rank_b)
    if find_loop(ufunc, (np.dtype(np.float64),) * ufunc.nargs) is None:
        raise Unsupported(f"no NumPy {ufunc.__name__} loop for float64")
    return ufunc, rank_b


def _emit_linalg(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    """One call of the gufunc loop ``np.linalg`` makes, on float64 copies (NumPy computes
    every real dtype in double, then casts to the result's dtype), with the core strides
    of those copies: the loop copies them into its Fortran buffer and calls LAPACK
    (``dgesv``, ``dgetrf``...) exactly as under NumPy. NumPy's errors — a matrix that is
    not square, shapes that do not match, a singular matrix (``solve``/``inv``: NaNs and
    its invalid flag, which ``np.linalg`` turns into LinAlgError) — and non-finite inputs
    (whose invalid operations NumPy would also report) signal."""
    ufunc, rank_b = _check_linalg(node)
    pp, dims, st = _scratch(w).split(", ")
    f, d = _loop(w, ufunc, (np.dtype(np.float64),) * ufunc.nargs).split(", ")
    ops = [w.fresh("la") for _ in range(1 + (node.op is OpKind.SOLVE))]
    for v, a in zip(ops, args):
        lines.append(f"{indent}{v} = np.ascontiguousarray({a.name}).astype(np.float64)")
    a = ops[0]
    w.signal(lines, indent, f"{a}.shape[0] != {a}.shape[1] or {a}.shape[0] == 0")
    if node.op is not OpKind.DET:
        for v in ops:
            w.signal(lines, indent, f"not np.all(np.isfinite({v}))")
    o = w.fresh("la")
    if node.op is OpKind.SOLVE:
        b = ops[1]
        w.signal(lines, indent, f"{b}.shape[0] != {a}.shape[0]")
        if rank_b == 2:
            w.signal(lines, indent, f"{b}.shape[1] == 0")
        lines.append(f"{indent}{o} = np.empty({b}.shape, np.float64)")
        cores = (
            [f"{a}.strides[0]", f"{a}.strides[1]"]
            + [f"{b}.strides[{k}]" for k in range(rank_b)]
            + [f"{o}.strides[{k}]" for k in range(rank_b)]
        )
        ptrs = [a, b, o]
        sizes = [f"{a}.shape[0]"] + ([f"{b}.shape[1]"] if rank_b == 2 else [])
    elif node.op is OpKind.INV:
        lines.append(f"{indent}{o} = np.empty({a}.shape, np.float64)")
        cores = [f"{a}.strides[0]", f"{a}.strides[1]", f"{o}.strides[0]", f"{o}.strides[1]"]
        ptrs, sizes = [a, o], [f"{a}.shape[0]"]
    else:
        lines.append(f"{indent}{o} = np.empty(1, np.float64)")
        cores = [f"{a}.strides[0]", f"{a}.strides[1]"]
        ptrs, sizes = [a, o], [f"{a}.shape[0]"]
    for k, p in enumerate(ptrs):
        lines.append(f"{indent}{pp}[{k}] = {p}.ctypes.data")
        lines.append(f"{indent}{st}[{k}] = 0")  # one matrix: the outer loop runs once
    lines.append(f"{indent}{dims}[0] = 1")
    for k, s in enumerate(sizes):
        lines.append(f"{indent}{dims}[{k + 1}] = {s}")
    for k, s in enumerate(cores):
        lines.append(f"{indent}{st}[{len(ptrs) + k}] = {s}")
    lines.append(
        f"{indent}_call_loop({f}, {pp}.ctypes.data, {dims}.ctypes.data, {st}.ctypes.data, {d})"
    )
    if node.op is not OpKind.DET:
        w.signal(lines, indent, f"np.any(np.isnan({o}))")
    cast = "" if np.dtype(node.dtype) == np.float64 else f".astype({ctor(np.dtype(node.dtype))})"
    if node.op is OpKind.DET:
        lines.append(f"{indent}{t} = {o}{cast}[0]")
        return "scalar"
    lines.append(f"{indent}{t} = {o}{cast}")
    return "fresh"


for _kind in (OpKind.SOLVE, OpKind.INV, OpKind.DET):
    RULES[_kind] = Rule(lambda n: _check_linalg(n) and None, _emit_linalg)


# ---------------------------------------------------------------------------------------------
# TensorArray stacks (issue 15: loop gradients under jit_compile=True)
# ---------------------------------------------------------------------------------------------
# A loop's gradient stacks each iteration's state with ``tensor_array_write`` (the forward
# loop gains a count, starting at ``int64(0)``, and one stack per variable, starting as
# ``None``: ``autodiff/loops.py``); the reverse loop reads the rows back with ``getitem``.
# ``loop_literal`` gives such literal loop operands their Numba form (the empty stack: a
# 0-row array of the stack's rank, so every iteration carries one array type), and the rule
# below writes a row exactly as ``ir.interpreter.tensor_array_write`` does: rows allocated
# (zeros) at the first write, grown geometrically when dynamic, into the buffer itself where
# the in-place plan (``backends/inplace.py``) found it private and dead, else into a copy.
# A negative or out-of-range index and a row of another shape signal: the fused executor
# reruns the call and raises NumPy's error.


def loop_literal(value: Any, aval: Any) -> tuple[str, bool]:
    """The Numba source of a literal loop operand of abstract value ``aval`` (``None``: an
    empty stack) and whether it is a scalar; Unsupported for anything else."""
    dt = np.dtype(aval.dtype)
    if dt not in _DTYPES or aval.shape is None:
        raise Unsupported(f"a loop operand {value!r} of {aval}")
    if value is None:
        if len(aval.shape) < 1:
            raise Unsupported("an empty stack of rank 0")
        return f"np.zeros({(0,) * len(aval.shape)!r}, {ctor(dt)})", False
    if aval.shape != () or not isinstance(value, (bool, int, float, np.number, np.bool_)):
        raise Unsupported(f"a loop operand {value!r}")
    return f"{ctor(dt)}({literal_value(value, dt)!r})", True


def _check_tensor_array_write(node: Node) -> None:
    _only_params(node, {"dtype", "size", "dynamic_size"})
    buffer, index, value = node.args
    dt = np.dtype(node.attrs["dtype"])
    if dt not in _DTYPES:
        raise Unsupported(f"a TensorArray of {dt}")
    if buffer is not None and (
        not isinstance(buffer, Node) or buffer.aval.shape is None or np.dtype(buffer.dtype) != dt
    ):
        raise Unsupported("tensor_array_write into a buffer that is not a stack")
    if isinstance(index, Node):
        if index.aval.shape != () or np.dtype(index.dtype).kind not in "iu":
            raise Unsupported("tensor_array_write at a non-integer index")
    elif not isinstance(index, (int, np.integer)) or isinstance(index, bool):
        raise Unsupported(f"tensor_array_write at {index!r}")
    if (
        not isinstance(value, Node)
        or value.aval.shape is None
        or None in value.aval.shape
        or np.dtype(value.dtype) not in _DTYPES
    ):
        raise Unsupported("tensor_array_write of a value of unknown shape")
    if not np.can_cast(value.dtype, dt, casting="same_kind"):
        raise Unsupported(f"tensor_array_write of {value.dtype} into {dt}")  # NumPy's error
    if node.aval.shape is None or len(node.aval.shape) != len(value.aval.shape) + 1:
        raise Unsupported("tensor_array_write of a stack of another rank")


def _emit_tensor_array_write(
    w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str
) -> str:
    buffer, index, value = args
    dt = np.dtype(node.attrs["dtype"])
    size, dynamic = int(node.attrs["size"]), bool(node.attrs["dynamic_size"])
    vshape = node.args[2].aval.shape
    rank = len(vshape)
    i = w.fresh("i")
    lines.append(f"{indent}{i} = np.int64({index if not hasattr(index, 'name') else index.name})")
    w.signal(lines, indent, f"{i} < 0")
    row = "".join(f", {value.name}.shape[{d}]" for d in range(rank)) if not value.scalar else ""
    zeros = f"np.zeros((max({size}, {i} + 1){row},), {ctor(dt)})"
    grown = f"np.zeros((max({i} + 1, 2 * {{rows}}){row},), {ctor(dt)})"
    in_place = node in w.plan.writes
    if buffer is None:
        if not dynamic:
            w.signal(lines, indent, f"{i} >= {size}")
        lines.append(f"{indent}{t} = {zeros}")
    else:
        b, rows = buffer.name, w.fresh("rows")
        lines.append(f"{indent}{rows} = {b}.shape[0]")
        lines.append(f"{indent}if {rows} == 0:")
        if not dynamic:
            w.signal(lines, indent + "    ", f"{i} >= {size}")
        lines.append(f"{indent}    {t} = {zeros}")
        lines.append(f"{indent}else:")
        inner = indent + "    "
        for d in range(rank):  # every row has one shape (NumPy raises ValueError)
            w.signal(lines, inner, f"{b}.shape[{d + 1}] != {value.name}.shape[{d}]")
        lines.append(f"{inner}if {i} >= {rows}:")
        if not dynamic:
            w.signal(lines, inner + "    ", "True")
        lines.append(f"{inner}    {t} = {grown.format(rows=rows)}")
        lines.append(f"{inner}    {t}[:{rows}] = {b}")
        lines.append(f"{inner}else:")
        lines.append(f"{inner}    {t} = {b if in_place else b + '.copy()'}")
    src = value.name
    if np.dtype(node.args[2].dtype) != dt:
        src = f"{ctor(dt)}({src})" if value.scalar else f"{src}.astype({ctor(dt)})"
    lines.append(f"{indent}{t}[{i}] = {src}")
    # (written in place, the stack is still the loop's own buffer: nothing else reads the
    # old one, which the in-place plan checked, so it is carried without a copy)
    return "fresh"


RULES[OpKind.TENSOR_ARRAY_WRITE] = Rule(_check_tensor_array_write, _emit_tensor_array_write)


__all__ = ["RULES", "Rule", "Writer", "claims", "loop_literal"]


# ---------------------------------------------------------------------------------------------
# Run-time checks (``if bad: raise ...`` on a traced condition)
# ---------------------------------------------------------------------------------------------


def _check_check(node: Node) -> None:
    pred = node.args[0]
    if not isinstance(pred, Node) or pred.aval is None or pred.aval.shape != ():
        raise Unsupported(f"a run-time check on a condition that is not 0-d ({node.name})")


def _emit_check(w: Writer, node: Node, args: list, t: str, lines: list[str], indent: str) -> str:
    """A failed check signals: the fused executor reruns the call from the arguments, which
    the compiled function has not written yet, and raises the check's exception with its
    message formatted there (NumPy's values, Python's formatting)."""
    w.signal(lines, indent, args[0].name)
    lines.append(f"{indent}{t} = 0")
    return "scalar"


RULES[OpKind.CHECK] = Rule(_check_check, _emit_check)
