"""The whole-graph compiler's matrix products that more than one rule or its writer call:
NumPy's matmul gufunc loop on 3-D views (``MM_FLOAT``: the float ``dot``/``matmul`` and the
partial overlaps of ``convolve``/``correlate``) and the 2-D @ 2-D product of one dtype
(``plain_matmul``, ``matmul_call``: the common form, which the writer chains as a loop).

The rules of the linear-algebra ops themselves are in :mod:`kernel_ext.ops.linalg`.
"""

from __future__ import annotations

import numpy as np

from ...ir import Node
from ..static_shapes import aval_of_node, ranked_shape
from ..ufunc_loops import find_loop
from .common import Writer

# NumPy's matmul gufunc loop on 3-D views (batch, rows, columns) with explicit strides: a
# dimension NumPy adds for a 1-D operand (or a broadcast batch) has stride 0, as in NumPy,
# so the loop takes the very branch (dot, gemv, gemm, syrk) np.matmul takes.
MM_FLOAT = """\
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
