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
* ``getitem`` with integer arrays (a gather): indices checked (out of range signals).
* ``sort``/``argsort``: a stable merge sort with NumPy's order (NaNs last); where NumPy's
  result is not unique (``sort`` ties of different bits, ``-0.0``/``0.0`` or two NaNs;
  default-kind ``argsort`` ties) the call signals.
* ``max``/``min`` over several axes, ``maximum``/``minimum.reduce``: the extreme in any
  order; a NaN, or zeros of both signs at the top, signal (NumPy's order decides those).
* Not here: ``einsum`` (NumPy's ``c_einsum`` sums products in its own order, not BLAS's:
  no exact form to call).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ..ir import Node, OpKind
from ..ir.abstract import DynamicIndex
from .codegen import Unsupported, const_source, ctor, literal_value
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

    def fresh(self, prefix: str = "t") -> str: ...
    def signal(self, lines: list[str], indent: str, cond: str) -> None: ...
    def loop_ref(self, idx: int) -> str: ...
    def _out_buffer(self, node: Node, shape: str, size_test: str, dt: str,
                    lines: list[str], indent: str, t: str, take: str = "{sp}") -> None: ...


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
    if not isinstance(a, Node) or a.aval is None or isinstance(a.aval, tuple) or \
            a.aval.shape is None:
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
        w.scratch_lines += ["    xo_pp = np.empty(3, np.uintp)",
                            "    xo_dims = np.empty(4, np.intp)",
                            "    xo_st = np.empty(9, np.intp)"]
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
    return not (isinstance(a, Node) and isinstance(b, Node) and a.aval.shape is not None
                and b.aval.shape is not None and len(a.aval.shape) == 2
                and len(b.aval.shape) == 2 and a.aval.dtype == b.aval.dtype == node.dtype)


def _emit_matmul(w: Writer, node: Node, args: list, t: str, lines: list[str],
                 indent: str) -> str:
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
                w.signal(lines, indent, f"not ({x}.flags.c_contiguous or "
                                        f"{x}.flags.f_contiguous)")
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
        w.signal(lines, indent, f"{va}.shape[0] != {vb}.shape[0] and {va}.shape[0] != 1 "
                                f"and {vb}.shape[0] != 1")
        lines.append(f"{indent}{nb} = max({va}.shape[0], {vb}.shape[0])")
    out_dims = ([nb] if batched else []) + ([f"{va}.shape[1]"] if ra > 1 else []) + \
        ([f"{vb}.shape[2]"] if rb > 1 else [])
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
                1 if ra == 1 else 2 if rb == 1 else 0, o)
        else:
            o3 = {(2, 1): f"{o}[None, :, None]", (1, 2): f"{o}[None, None, :]"}.get(
                (ra, rb), f"{o}[None, :, :]")
    if dt.kind == "f":
        w.helpers["_mm_float"] = _MM_FLOAT
        # NumPy's strides: 0 for a dimension it added (a 1-D operand, a broadcast batch)
        sa0 = f"{va}.strides[0] if {va}.shape[0] != 1 else 0" if ra == 3 else "0"
        sb0 = f"{vb}.strides[0] if {vb}.shape[0] != 1 else 0" if rb == 3 else "0"
        sa1 = f"{va}.strides[1]" if ra > 1 else "0"
        sb2 = f"{vb}.strides[2]" if rb > 1 else "0"
        so1 = "0" if ra == 1 or scalar else f"{o}.strides[{1 if batched else 0}]"
        so2 = "0" if rb == 1 or scalar else f"{o}.strides[{len(out_dims) - 1}]"
        lines.append(f"{indent}_mm_float({va}, {vb}, {o3}, {_loop(w, np.matmul, (dt,) * 3)}, "
                     f"{_scratch(w)}, {sa0}, {sa1}, {sb0}, {sb2}, {so1}, {so2})")
    else:
        name = "_mm_bool" if dt.kind == "b" else "_mm_int"
        w.helpers[name] = _MM_BOOL if dt.kind == "b" else _MM_INT
        lines.append(f"{indent}{name}({va}, {vb}, {o3})")
    if scalar:
        lines.append(f"{indent}{t} = {o}[0, 0, 0]")
        return "scalar"
    lines.append(f"{indent}{t} = {o}")
    return "fresh"


RULES[OpKind.MATMUL] = Rule(lambda n: _matmul_ranks(n) and None, _emit_matmul,
                            _claims_matmul)
RULES[OpKind.DOT] = Rule(lambda n: _matmul_ranks(n) and None, _emit_matmul)

# ---------------------------------------------------------------------------------------------
# stack / concatenate / expand_dims / flip
# ---------------------------------------------------------------------------------------------

def _alloc(w: Writer, node: Node, dims: Sequence[str], dts: str, lines: list[str],
           indent: str, t: str) -> None:
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


def _emit_concatenate(w: Writer, node: Node, args: list, t: str, lines: list[str],
                      indent: str) -> str:
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


def _emit_stack(w: Writer, node: Node, args: list, t: str, lines: list[str],
                indent: str) -> str:
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


def _emit_expand_dims(w: Writer, node: Node, args: list, t: str, lines: list[str],
                      indent: str) -> str:
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


def _emit_flip(w: Writer, node: Node, args: list, t: str, lines: list[str],
               indent: str) -> str:
    axes = _flip_axes(node)
    rank = len(node.args[0].aval.shape)
    index = ", ".join("::-1" if a in axes else ":" for a in range(rank))
    lines.append(f"{indent}{t} = {args[0].name}[{index}]")
    return "view"


RULES[OpKind.CONCATENATE] = Rule(_check_concatenate, _emit_concatenate)
RULES[OpKind.STACK] = Rule(_check_stack, _emit_stack)
RULES[OpKind.EXPAND_DIMS] = Rule(lambda n: _expand_axes(n) and None, _emit_expand_dims,
                                 lambda n: not isinstance(n.attrs["axis"], int))
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


def _emit_scan(w: Writer, node: Node, args: list, t: str, lines: list[str],
               indent: str) -> str:
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
    lines.append(f"{indent}_accumulate({x}.reshape({shape3}), {t}.reshape({shape3}), "
                 f"{_loop(w, ufunc, (dt,) * 3)}, {_scratch(w)})")
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
    allowed = {"axis", "keepdims", "ddof"} if node.op is not OpKind.NANMEAN else \
        {"axis", "keepdims"}
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


def _moment_input(w: Writer, x: str, rank: int, axis: int | None, lines: list[str],
                  indent: str) -> tuple[str, str, str, str]:
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


def _finish(w: Writer, node: Node, value: str, rank: int, axis: int | None, x: str,
            t: str, lines: list[str], indent: str) -> str:
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


def _emit_moment(w: Writer, node: Node, args: list, t: str, lines: list[str],
                 indent: str) -> str:
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
    lines.append(f"{indent}{mean} = (({mean}.astype(np.float64)) / np.float64({n}))"
                 f".astype({dts})")
    lines.append(f"{indent}{dev} = {x3} - {mean}.reshape(({outer}, 1, {inner}))")
    lines.append(f"{indent}{dev} = {dev} * {dev}")
    lines.append(f"{indent}{acc} = np.zeros(({outer}, {inner}), {dts})")
    lines.append(f"{indent}_sum_axis({dev}, {acc}, {loop})")
    lines.append(f"{indent}{acc} = ({acc}.astype(np.float64) / np.float64({n} - {ddof}))"
                 f".astype({dts})")
    if node.op is OpKind.STD:
        lines.append(f"{indent}{acc} = np.sqrt({acc})")
    return _finish(w, node, acc, rank, axis, x, t, lines, indent)


def _emit_nanmean(w: Writer, node: Node, args: list, t: str, lines: list[str],
                  indent: str) -> str:
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
    lines.append(f"{indent}_sum_axis({arr}, {acc}, {_loop(w, np.add, (dt,) * 3)}, "
                 f"{_scratch(w)})")
    lines.append(f"{indent}{acc} = ({acc}.astype(np.float64) / {cnt}.astype(np.float64))"
                 f".astype({dts})")
    return _finish(w, node, acc, rank, axis, args[0].name, t, lines, indent)


RULES[OpKind.VAR] = Rule(lambda n: _check_moments(n) and None, _emit_moment)
RULES[OpKind.STD] = Rule(lambda n: _check_moments(n) and None, _emit_moment)
RULES[OpKind.NANMEAN] = Rule(lambda n: _check_moments(n) and None, _emit_nanmean)

# ---------------------------------------------------------------------------------------------
# getitem with integer arrays (a gather)
# ---------------------------------------------------------------------------------------------

def _is_array_component(node: Node, c: Any) -> bool:
    if isinstance(c, np.ndarray):
        return True
    if isinstance(c, DynamicIndex):
        arg = node.args[c.position]
        return isinstance(arg, Node) and arg.aval is not None and arg.aval.shape != ()
    return False


def _claims_gather(node: Node) -> bool:
    """A getitem with an integer-array component (basic ones stay with whole_graph)."""
    return any(_is_array_component(node, c) for c in node.attrs["index"])


def _gather_plan(node: Node) -> list[Any]:
    """The index with ``...`` expanded to full slices; Unsupported for what a gather here
    does not cover (bool masks, N-d or uint64 index arrays, ``None``, traced slices)."""
    x = _array_arg(node, 0, "an array")
    rank = len(x.aval.shape)
    comps = list(node.attrs["index"])
    if any(c is None for c in comps):
        raise Unsupported("integer-array indexing with a None (np.newaxis) component")
    if sum(c is Ellipsis for c in comps) > 1:
        raise Unsupported("an index with several Ellipsis")
    used = sum(1 for c in comps if c is not Ellipsis)
    if used > rank:
        raise Unsupported("too many indices")
    if any(c is Ellipsis for c in comps):
        at = next(i for i, c in enumerate(comps) if c is Ellipsis)
        comps[at:at + 1] = [slice(None)] * (rank - used)
    comps += [slice(None)] * (rank - len(comps))
    for c in comps:
        if isinstance(c, slice):
            if any(isinstance(p, DynamicIndex) for p in (c.start, c.stop, c.step)):
                raise Unsupported("slice with traced bounds")
        elif isinstance(c, np.ndarray):
            if c.dtype.kind not in "iu" or c.ndim != 1 or c.dtype == np.uint64:
                raise Unsupported(f"index array of {c.dtype} and rank {c.ndim} "
                                  "(1-D integer arrays only)")
        elif isinstance(c, DynamicIndex):
            arg = node.args[c.position]
            if not isinstance(arg, Node) or arg.aval.shape is None or \
                    np.dtype(arg.dtype).kind not in "iu" or np.dtype(arg.dtype) == np.uint64 \
                    or len(arg.aval.shape) > 1:
                raise Unsupported("indexing with an array other than a 1-D integer one")
        elif not isinstance(c, (int, np.integer)):
            raise Unsupported(f"index component {c!r}")
    return comps


def _emit_gather(w: Writer, node: Node, args: list, t: str, lines: list[str],
                 indent: str) -> str:
    """``x[..., idx, ...]``: the basic part as a view, then one copy per index position.

    As in NumPy, integers count as advanced indices beside arrays; the broadcast index
    dimension replaces the advanced ones where they are adjacent, else it comes first. An
    index out of range, or index arrays of lengths that do not broadcast, signal (NumPy's
    IndexError)."""
    comps = _gather_plan(node)
    rank = len(comps)
    x = args[0].name
    basic = ", ".join(f"{'' if c.start is None else c.start}:"
                      f"{'' if c.stop is None else c.stop}"
                      f"{'' if c.step is None else ':' + str(c.step)}"
                      if isinstance(c, slice) else ":" for c in comps)
    v = w.fresh("g")
    lines.append(f"{indent}{v} = {x}[{basic}]")
    adv = [i for i, c in enumerate(comps) if not isinstance(c, slice)]
    arrays: dict[int, str] = {}
    scalars: dict[int, str] = {i: str(int(comps[i])) for i in adv
                               if isinstance(comps[i], (int, np.integer))}
    for i in adv:
        c = comps[i]
        if isinstance(c, np.ndarray):
            name = f"c{len(w.constants)}"
            w.constants.append(np.ascontiguousarray(c, dtype=np.int64))
            arrays[i] = name
        elif isinstance(c, DynamicIndex):
            if node.args[c.position].aval.shape == ():
                scalars[i] = args[c.position].name  # a traced integer
            else:
                arrays[i] = args[c.position].name
    n = w.fresh("n")
    lines.append(f"{indent}{n} = 1")
    for a in arrays.values():
        lines.append(f"{indent}if {a}.shape[0] != 1:")
        w.signal(lines, indent + "    ", f"{n} != 1 and {n} != {a}.shape[0]")
        lines.append(f"{indent}    {n} = {a}.shape[0]")
    adjacent = adv == list(range(adv[0], adv[-1] + 1))
    rest = [d for d in range(rank) if d not in adv]
    dims = [f"{v}.shape[{d}]" for d in rest]
    pos = adv[0] if adjacent else 0
    dims.insert(pos, n)
    dts = ctor(np.dtype(node.dtype))
    _alloc(w, node, dims, dts, lines, indent, t)
    j = w.fresh("j")
    lines.append(f"{indent}for {j} in range({n}):")
    inner = indent + "    "
    picks = []
    for i in adv:
        k = w.fresh("k")
        size = f"{v}.shape[{i}]"
        if i in arrays:
            a = arrays[i]
            lines.append(f"{inner}{k} = np.int64({a}[{j} if {a}.shape[0] != 1 else 0])")
        else:
            lines.append(f"{inner}{k} = np.int64({scalars[i]})")
        lines.append(f"{inner}if {k} < 0:")
        lines.append(f"{inner}    {k} += {size}")
        w.signal(lines, inner, f"{k} < 0 or {k} >= {size}")
        picks.append(k)
    src = ", ".join(picks[adv.index(d)] if d in adv else ":" for d in range(rank))
    dst = ", ".join(j if d == pos else ":" for d in range(len(dims)))
    lines.append(f"{inner}{t}[{dst}] = {v}[{src}]")
    return "fresh"


RULES[OpKind.GETITEM] = Rule(lambda n: _gather_plan(n) and None, _emit_gather,
                             _claims_gather)

# ---------------------------------------------------------------------------------------------
# sort / argsort
# ---------------------------------------------------------------------------------------------

# A stable bottom-up merge sort of indices by NumPy's order (NaNs last, ``-0.0 == 0.0``):
# NumPy's own stable sort. Where NumPy's default (unstable) kind may order ties its own way,
# the caller checks that there are none that matter.
_ARGSORT = """\
@_inline
def _lt(a, b):
    return a < b or (b != b and a == a)


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


def _emit_sort(w: Writer, node: Node, args: list, t: str, lines: list[str],
               indent: str) -> str:
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
        widths = np.broadcast_to(np.asarray(node.attrs["pad_width"], dtype=np.intp)
                                 .reshape(-1, 2) if np.ndim(node.attrs["pad_width"]) else
                                 np.asarray(node.attrs["pad_width"]), (rank, 2))
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


def _emit_pad(w: Writer, node: Node, args: list, t: str, lines: list[str],
              indent: str) -> str:
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
                lines.append(f"{indent}    {t}[{_index(rank, d, q)}] = "
                             f"{t}[{_index(rank, d, str(a))}]")
            if b:
                q = w.fresh("q")
                lines.append(f"{indent}for {q} in range({b}):")
                lines.append(f"{indent}    {t}[{_index(rank, d, f'{a} + {size} + {q}')}] = "
                             f"{t}[{_index(rank, d, f'{a} + {size} - 1')}]")
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


def _emit_outer(w: Writer, node: Node, args: list, t: str, lines: list[str],
                indent: str) -> str:
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
    lines.append(f"{indent}        _loop3({_loop(w, np.multiply, (dt,) * 3)}, {_scratch(w)}, "
                 f"{a}[{i}:].ctypes.data, {b}.ctypes.data, {t}[{i}].ctypes.data, {b}.size, "
                 f"0, {b}.strides[0], {t}.strides[1])")
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
    if not isinstance(x, Node) or x.aval.shape is None or not isinstance(axis, tuple) or \
            len(axis) < 2:
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
    axis = tuple(range(rank)) if axis is None else \
        tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    axes = sorted({_axis(a, rank, node.op.value) for a in axis})
    if len(axes) != len(axis):
        raise Unsupported(f"{node.op.value} with a repeated axis")
    init = node.attrs.get("initial") if ufunc else None
    if init is None:
        return x, axes, None
    return x, axes, const_source(literal_value(init, dt), dt)


def _claims_ufunc_reduce(node: Node) -> bool:
    return node.attrs.get("ufunc") in (np.maximum, np.minimum)


def _emit_extreme(w: Writer, node: Node, args: list, t: str, lines: list[str],
                  indent: str) -> str:
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
    w.signal(lines, indent, f"_extreme_rows({y2}, {o}, {is_max}, {init is not None}, "
                            f"{init if init is not None else f'{dts}(0)'})")
    keep = bool(node.attrs.get("keepdims"))
    dims = [("1" if d in axes else f"{x}.shape[{d}]") for d in range(rank)
            if keep or d not in axes]
    if not dims:
        lines.append(f"{indent}{t} = {o}[0]")
        return "scalar"
    lines.append(f"{indent}{t} = {o}.reshape({_shape_tuple(dims)})")
    return "fresh"


RULES[OpKind.MAX] = Rule(lambda n: _check_extreme(n) and None, _emit_extreme, _several_axes)
RULES[OpKind.MIN] = Rule(lambda n: _check_extreme(n) and None, _emit_extreme, _several_axes)
RULES[OpKind.UFUNC_REDUCE] = Rule(lambda n: _check_extreme(n) and None, _emit_extreme,
                                  _claims_ufunc_reduce)


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
    if buffer is not None and (not isinstance(buffer, Node) or buffer.aval.shape is None or
                               np.dtype(buffer.dtype) != dt):
        raise Unsupported("tensor_array_write into a buffer that is not a stack")
    if isinstance(index, Node):
        if index.aval.shape != () or np.dtype(index.dtype).kind not in "iu":
            raise Unsupported("tensor_array_write at a non-integer index")
    elif not isinstance(index, (int, np.integer)) or isinstance(index, bool):
        raise Unsupported(f"tensor_array_write at {index!r}")
    if not isinstance(value, Node) or value.aval.shape is None or \
            None in value.aval.shape or np.dtype(value.dtype) not in _DTYPES:
        raise Unsupported("tensor_array_write of a value of unknown shape")
    if not np.can_cast(value.dtype, dt, casting="same_kind"):
        raise Unsupported(f"tensor_array_write of {value.dtype} into {dt}")  # NumPy's error
    if node.aval.shape is None or len(node.aval.shape) != len(value.aval.shape) + 1:
        raise Unsupported("tensor_array_write of a stack of another rank")


def _emit_tensor_array_write(w: Writer, node: Node, args: list, t: str, lines: list[str],
                             indent: str) -> str:
    buffer, index, value = args
    dt = np.dtype(node.attrs["dtype"])
    size, dynamic = int(node.attrs["size"]), bool(node.attrs["dynamic_size"])
    vshape = node.args[2].aval.shape
    rank = len(vshape)
    i = w.fresh("i")
    lines.append(f"{indent}{i} = np.int64({index if not hasattr(index, 'name') else index.name})")
    w.signal(lines, indent, f"{i} < 0")
    row = "".join(f", {value.name}.shape[{d}]" for d in range(rank)) if not value.scalar \
        else ""
    zeros = f"np.zeros((max({size}, {i} + 1){row},), {ctor(dt)})"
    grown = f"np.zeros((max({i} + 1, 2 * {{rows}}){row},), {ctor(dt)})"
    in_place = node in getattr(w, "plan").writes
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
