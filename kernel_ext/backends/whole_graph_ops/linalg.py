"""Whole-graph rules of the linear algebra: dot and matmul, convolve and correlate, and
NumPy's LAPACK gufunc loops for solve, inv and det.
"""

from __future__ import annotations

import numpy as np

from ...ir import Node, OpKind
from ..emit.literals import Unsupported, ctor
from ..emit.source import Source
from ..static_shapes import aval_of_node, ranked_shape
from ..ufunc_loops import find_loop
from .common import (
    RULES,
    Rule,
    Writer,
    array_arg,
    loop_scratch,
    only_params,
    result_dtype,
    shape_tuple,
    ufunc_loop,
)

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
    a, b = array_arg(node, 0, "an operand"), array_arg(node, 1, "an operand")
    ra, rb = len(ranked_shape(a)), len(ranked_shape(b))
    dt = result_dtype(node)
    if node.op is OpKind.DOT:
        if not (1 <= ra <= 2 and 1 <= rb <= 2):
            raise Unsupported(f"dot of ranks {ra} and {rb} (1-D and 2-D operands only)")
    elif not (1 <= ra <= 3 and 1 <= rb <= 3):
        raise Unsupported(f"matmul of ranks {ra} and {rb} (up to one batch axis)")
    for x in (a, b):
        if not np.can_cast(aval_of_node(x).dtype, dt, "safe"):
            raise Unsupported(f"{node.op.value} of {x.dtype} into {dt}")
    if dt.kind == "f":
        if find_loop(np.matmul, (dt,) * 3) is None:
            raise Unsupported(f"no NumPy matmul loop for {dt}")
    elif dt.kind not in "biu":
        raise Unsupported(f"{node.op.value} of {dt}")
    return a, b, dt


def plain_matmul(node: Node) -> bool:
    """Is ``node`` a 2-D @ 2-D product of one dtype (the common form: into a buffer a loop
    may reuse, and chained products as a loop)?"""
    a, b = node.args[0], node.args[1]
    return (
        isinstance(a, Node)
        and isinstance(b, Node)
        and aval_of_node(a).shape is not None
        and aval_of_node(b).shape is not None
        and len(ranked_shape(a)) == 2
        and len(ranked_shape(b)) == 2
        and aval_of_node(a).dtype == aval_of_node(b).dtype == node.dtype
    )


def _emit_matmul(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    a_node, b_node, dt = _matmul_ranks(node)
    ra, rb = len(ranked_shape(a_node)), len(ranked_shape(b_node))
    a, b = args[0].name, args[1].name
    dts = ctor(dt)
    if np.dtype(a_node.dtype) != dt:
        v = w.fresh("m")
        out.line(f"{v} = {a}.astype({dts})")
        a = v
    if np.dtype(b_node.dtype) != dt:
        v = w.fresh("m")
        out.line(f"{v} = {b}.astype({dts})")
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
                w.signal(out, f"not ({x}.flags.c_contiguous or {x}.flags.f_contiguous)")
            else:
                w.signal(out, f"{x}.strides[0] <= 0 and {x}.shape[0] > 1")
    va, vb = w.fresh("ma"), w.fresh("mb")
    out.line(f"{va} = {a3}")
    out.line(f"{vb} = {b3}")
    w.signal(out, f"{va}.shape[2] != {vb}.shape[1]")
    batched = ra == 3 or rb == 3
    nb = "1"
    if batched:
        nb = w.fresh("nb")
        w.signal(
            out,
            f"{va}.shape[0] != {vb}.shape[0] and {va}.shape[0] != 1 and {vb}.shape[0] != 1",
        )
        out.line(f"{nb} = max({va}.shape[0], {vb}.shape[0])")
    out_dims = (
        ([nb] if batched else [])
        + ([f"{va}.shape[1]"] if ra > 1 else [])
        + ([f"{vb}.shape[2]"] if rb > 1 else [])
    )
    scalar = not out_dims
    o = w.fresh("mo")
    if scalar:
        out.line(f"{o} = np.empty((1, 1, 1), {dts})")
        o3 = o
    else:
        shape = shape_tuple(out_dims)
        test = " and ".join(f"{{sp}}.shape[{i}] == {d}" for i, d in enumerate(out_dims))
        w._out_buffer(node, shape, test, dts, out, o)
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
        out.line(
            f"_mm_float({va}, {vb}, {o3}, {ufunc_loop(w, np.matmul, (dt,) * 3)}, "
            f"{loop_scratch(w)}, {sa0}, {sa1}, {sb0}, {sb2}, {so1}, {so2})"
        )
    else:
        name = "_mm_bool" if dt.kind == "b" else "_mm_int"
        w.helpers[name] = _MM_BOOL if dt.kind == "b" else _MM_INT
        out.line(f"{name}({va}, {vb}, {o3})")
    if scalar:
        out.line(f"{t} = {o}[0, 0, 0]")
        return "scalar"
    out.line(f"{t} = {o}")
    return "fresh"


RULES[OpKind.DOT] = Rule(lambda n: _matmul_ranks(n) and None, _emit_matmul)


# 2-D @ 2-D of one dtype


# Four output columns at a time, accumulated in registers: the inner loop stores nothing, so
# LLVM needs no run-time alias checks between ``out`` and the operands. Measured on W2
# (100 products of 10x10 int32): 46 µs, against 60-70 µs for the i-k-j loop over rows (its
# vector loop, alias checks and 8 + 2 tail do not pay on 10-wide rows) and 57 µs for the
# hand-written Numba kernel. Products and sums wrap in the operands' own dtype, as NumPy's
# integer matmul loop does (``_wadd``/``_wmul``: Numba's ``+``/``*`` would widen to int64 and
# tell LLVM that the sums never overflow, which they may).
_MATMUL_INT = """\
@_inline
def _matmul_int(a, b, out):
    n, m, p = a.shape[0], a.shape[1], b.shape[1]
    for i in range(n):
        j = 0
        while j + 4 <= p:
            s0 = s1 = s2 = s3 = out.dtype.type(0)
            for k in range(m):
                aik = a[i, k]
                r = b[k]
                s0 = _wadd(s0, _wmul(aik, r[j]))
                s1 = _wadd(s1, _wmul(aik, r[j + 1]))
                s2 = _wadd(s2, _wmul(aik, r[j + 2]))
                s3 = _wadd(s3, _wmul(aik, r[j + 3]))
            out[i, j] = s0
            out[i, j + 1] = s1
            out[i, j + 2] = s2
            out[i, j + 3] = s3
            j += 4
        while j < p:
            s0 = out.dtype.type(0)
            for k in range(m):
                s0 = _wadd(s0, _wmul(a[i, k], b[k, j]))
            out[i, j] = s0
            j += 1
    return out
"""

_MATMUL_BOOL = """\
@_inline
def _matmul_bool(a, b, out):
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            out[i, j] = False
        for k in range(a.shape[1]):
            if a[i, k]:
                for j in range(b.shape[1]):
                    out[i, j] = out[i, j] or b[k, j]
    return out
"""

# NumPy's own matmul inner loop (a gufunc loop: outer count, then m, n, p; outer strides,
# then the core strides of a, b and out), called as np.matmul calls it on these arrays.
_MATMUL_LOOP = """\
@_inline
def _matmul_loop(a, b, out, f, d, ptrs, dims, steps):
    ptrs[0] = a.ctypes.data
    ptrs[1] = b.ctypes.data
    ptrs[2] = out.ctypes.data
    dims[0] = 1
    dims[1] = a.shape[0]
    dims[2] = a.shape[1]
    dims[3] = b.shape[1]
    steps[0] = 0
    steps[1] = 0
    steps[2] = 0
    steps[3] = a.strides[0]
    steps[4] = a.strides[1]
    steps[5] = b.strides[0]
    steps[6] = b.strides[1]
    steps[7] = out.strides[0]
    steps[8] = out.strides[1]
    if dims[1] > 0 and dims[3] > 0:
        if dims[2] == 0:
            out[:] = 0
        else:
            _call_loop(f, ptrs.ctypes.data, dims.ctypes.data, steps.ctypes.data, d)
    return out
"""


def matmul_call(w: Writer, node: Node, a: str, b: str, out: str) -> str:
    """The statement computing ``out = a @ b`` for a 2-D @ 2-D product of one dtype (``out``
    a fresh C-contiguous buffer)."""
    dt = np.dtype(node.dtype)
    if dt.kind != "f":
        name = "_matmul_bool" if dt.kind == "b" else "_matmul_int"
        w.helpers[name] = _MATMUL_BOOL if dt.kind == "b" else _MATMUL_INT
        return f"{name}({a}, {b}, {out})"
    found = find_loop(np.matmul, (dt,) * 3)
    idx = len(w.loop_args)
    w.loop_args.append(found)  # type: ignore[arg-type]
    w.helpers["_matmul_loop"] = _MATMUL_LOOP
    if "mm_pp" not in w.scratch_names:
        # the loop's pointer, size and stride arrays: allocated once per call of the
        # function, shared by its products (they run one after the other)
        w.scratch_names.add("mm_pp")
        w.preamble.extend(
            [
                "mm_pp = np.empty(3, np.uintp)",
                "mm_dims = np.empty(4, np.intp)",
                "mm_st = np.empty(9, np.intp)",
            ]
        )
    return f"_matmul_loop({a}, {b}, {out}, {w.loop_ref(idx)}, mm_pp, mm_dims, mm_st)"


def _check_plain_matmul(node: Node) -> None:
    dt = aval_of_node(node).dtype
    if dt.kind == "f" and find_loop(np.matmul, (dt,) * 3) is None:
        raise Unsupported(f"no NumPy matmul loop for {dt}")
    if dt.kind not in "fiub":
        raise Unsupported(f"matmul of {dt}")


def _emit_plain_matmul(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    a, b = args[0].name, args[1].name
    w.signal(out, f"{a}.shape[1] != {b}.shape[0]")
    # Never one of the operands: a spare is a dead buffer, and a new one is new.
    w._out_buffer(
        node,
        f"({a}.shape[0], {b}.shape[1])",
        f"{{sp}}.shape[0] == {a}.shape[0] and {{sp}}.shape[1] == {b}.shape[1]",
        ctor(np.dtype(node.dtype)),
        out,
        t,
    )
    out.line(matmul_call(w, node, a, b, t))
    return "fresh"


def _check_matmul(node: Node) -> None:
    if plain_matmul(node):
        _check_plain_matmul(node)
    else:
        _matmul_ranks(node)


def _emit_any_matmul(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    emit = _emit_plain_matmul if plain_matmul(node) else _emit_matmul
    return emit(w, node, args, t, out)


RULES[OpKind.MATMUL] = Rule(_check_matmul, _emit_any_matmul)


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
    only_params(node, {"mode"})
    a, v = array_arg(node, 0, "an array"), array_arg(node, 1, "a kernel")
    dt = result_dtype(node)
    if dt.kind != "f" or np.dtype(a.dtype) != dt or np.dtype(v.dtype) != dt:
        raise Unsupported(
            f"{node.op.value} of {a.dtype} and {v.dtype} (one float dtype: "
            "NumPy's integer dot and small_correlate differ)"
        )
    if len(ranked_shape(a)) != 1 or len(ranked_shape(v)) != 1:
        raise Unsupported(f"{node.op.value} of arrays other than 1-D")
    mode = node.attrs.get("mode", "valid")
    if mode not in _CORRELATE_MODES:
        raise Unsupported(f"{node.op.value} mode {mode!r}")
    if find_loop(np.matmul, (dt,) * 3) is None:
        raise Unsupported(f"no NumPy matmul loop for {dt}")
    return dt, _CORRELATE_MODES[mode]


def _emit_correlate(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """``np.convolve``: the longer array correlated with the shorter one reversed (NumPy's
    composition); ``np.correlate``: the arrays as given, swapped when the first is shorter
    and the result then reversed (NumPy's ``correlate2``). An empty array signals NumPy's
    ValueError."""
    dt, mode = _check_correlate(node)
    a, v = w.fresh("cv"), w.fresh("cv")
    out.line(f"{a} = np.ascontiguousarray({args[0].name})")
    out.line(f"{v} = np.ascontiguousarray({args[1].name})")
    w.signal(out, f"{a}.shape[0] == 0 or {v}.shape[0] == 0")
    w.helpers["_mm_float"] = _MM_FLOAT
    w.helpers["_correlate"] = _CORRELATE
    loop = f"{ufunc_loop(w, np.matmul, (dt,) * 3)}, {loop_scratch(w)}"
    if node.op is OpKind.CONVOLVE:
        longer = f"_correlate({a}, np.ascontiguousarray({v}[::-1]), {mode}, {loop})"
        shorter = f"_correlate({v}, np.ascontiguousarray({a}[::-1]), {mode}, {loop})"
    else:
        longer = f"_correlate({a}, {v}, {mode}, {loop})"
        shorter = f"np.ascontiguousarray(_correlate({v}, {a}, {mode}, {loop})[::-1])"
    with out.block(f"if {a}.shape[0] >= {v}.shape[0]:") as body:
        body.line(f"{t} = {longer}")
    with out.block("else:") as body:
        body.line(f"{t} = {shorter}")
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
    only_params(node, set())
    a = array_arg(node, 0, "a matrix")
    if len(ranked_shape(a)) != 2:
        raise Unsupported(f"{node.op.value} of a stack of matrices (2-D only)")
    rank_b = 0
    for x in node.args[: 2 if node.op is OpKind.SOLVE else 1]:
        if not isinstance(x, Node) or np.dtype(x.dtype).kind not in "iuf":
            raise Unsupported(f"{node.op.value} of {getattr(x, 'dtype', type(x).__name__)}")
    if node.op is OpKind.SOLVE:
        rank_b = len(ranked_shape(array_arg(node, 1, "b")))
        if rank_b not in (1, 2):
            raise Unsupported(f"solve with a {rank_b}-D b")
    if np.dtype(node.dtype) not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise Unsupported(f"{node.op.value} into {node.dtype}")
    ufunc = _linalg_loop(node.op, rank_b)
    if find_loop(ufunc, (np.dtype(np.float64),) * ufunc.nargs) is None:
        raise Unsupported(f"no NumPy {ufunc.__name__} loop for float64")
    return ufunc, rank_b


def _emit_linalg(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """One call of the gufunc loop ``np.linalg`` makes, on float64 copies (NumPy computes
    every real dtype in double, then casts to the result's dtype), with the core strides
    of those copies: the loop copies them into its Fortran buffer and calls LAPACK
    (``dgesv``, ``dgetrf``...) exactly as under NumPy. NumPy's errors — a matrix that is
    not square, shapes that do not match, a singular matrix (``solve``/``inv``: NaNs and
    its invalid flag, which ``np.linalg`` turns into LinAlgError) — and non-finite inputs
    (whose invalid operations NumPy would also report) signal."""
    ufunc, rank_b = _check_linalg(node)
    pp, dims, st = loop_scratch(w).split(", ")
    f, d = ufunc_loop(w, ufunc, (np.dtype(np.float64),) * ufunc.nargs).split(", ")
    ops = [w.fresh("la") for _ in range(1 + (node.op is OpKind.SOLVE))]
    for v, a in zip(ops, args):
        out.line(f"{v} = np.ascontiguousarray({a.name}).astype(np.float64)")
    a = ops[0]
    w.signal(out, f"{a}.shape[0] != {a}.shape[1] or {a}.shape[0] == 0")
    if node.op is not OpKind.DET:
        for v in ops:
            w.signal(out, f"not np.all(np.isfinite({v}))")
    o = w.fresh("la")
    if node.op is OpKind.SOLVE:
        b = ops[1]
        w.signal(out, f"{b}.shape[0] != {a}.shape[0]")
        if rank_b == 2:
            w.signal(out, f"{b}.shape[1] == 0")
        out.line(f"{o} = np.empty({b}.shape, np.float64)")
        cores = (
            [f"{a}.strides[0]", f"{a}.strides[1]"]
            + [f"{b}.strides[{k}]" for k in range(rank_b)]
            + [f"{o}.strides[{k}]" for k in range(rank_b)]
        )
        ptrs = [a, b, o]
        sizes = [f"{a}.shape[0]"] + ([f"{b}.shape[1]"] if rank_b == 2 else [])
    elif node.op is OpKind.INV:
        out.line(f"{o} = np.empty({a}.shape, np.float64)")
        cores = [f"{a}.strides[0]", f"{a}.strides[1]", f"{o}.strides[0]", f"{o}.strides[1]"]
        ptrs, sizes = [a, o], [f"{a}.shape[0]"]
    else:
        out.line(f"{o} = np.empty(1, np.float64)")
        cores = [f"{a}.strides[0]", f"{a}.strides[1]"]
        ptrs, sizes = [a, o], [f"{a}.shape[0]"]
    for k, p in enumerate(ptrs):
        out.line(f"{pp}[{k}] = {p}.ctypes.data")
        out.line(f"{st}[{k}] = 0")  # one matrix: the outer loop runs once
    out.line(f"{dims}[0] = 1")
    for k, s in enumerate(sizes):
        out.line(f"{dims}[{k + 1}] = {s}")
    for k, s in enumerate(cores):
        out.line(f"{st}[{len(ptrs) + k}] = {s}")
    out.line(f"_call_loop({f}, {pp}.ctypes.data, {dims}.ctypes.data, {st}.ctypes.data, {d})")
    if node.op is not OpKind.DET:
        w.signal(out, f"np.any(np.isnan({o}))")
    cast = "" if np.dtype(node.dtype) == np.float64 else f".astype({ctor(np.dtype(node.dtype))})"
    if node.op is OpKind.DET:
        out.line(f"{t} = {o}{cast}[0]")
        return "scalar"
    out.line(f"{t} = {o}{cast}")
    return "fresh"


for _kind in (OpKind.SOLVE, OpKind.INV, OpKind.DET):
    RULES[_kind] = Rule(lambda n: _check_linalg(n) and None, _emit_linalg)
