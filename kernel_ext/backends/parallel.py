"""Parallel execution on the host: one thread pool, split kernels and split NumPy calls.

Numba's ``parallel=True`` and its threading layers are never used (the ``workqueue`` layer
aborts when two Python threads call parallel kernels). Instead, work that releases the GIL is
cut into one share per core and handed to a small :class:`~concurrent.futures.ThreadPoolExecutor`
(the calling thread takes the first share):

* :func:`run_parallel` — a fused ``k_flat`` kernel (``nogil``) over block-aligned ranges;
* :func:`parallel_ufunc` — NumPy's own call of a heavy unary ufunc on each share (same bits);
* :func:`parallel_sum` / :func:`parallel_ufunc_sum` — float sums cut exactly where NumPy's
  pairwise summation cuts, so the result is bitwise ``np.sum``'s.

A hand-off to the pool costs ~50 µs (a thread wake-up), so callers split only from sizes the
cost model names (:mod:`.cost`, :data:`SUM_PARALLEL_MIN`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .codegen import BLOCK

_POOL: ThreadPoolExecutor | None = None
#: Shares a split call is cut into: one per core, at most 8.
THREADS = max(1, min(os.cpu_count() or 1, 8))


def worker_pool() -> ThreadPoolExecutor:
    """The shared pool (``THREADS - 1`` workers; the caller runs the first share itself)."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=max(1, THREADS - 1),
                                   thread_name_prefix="kernel_ext-worker")
    return _POOL


def run_parallel(kernel: Callable[..., Any], n: int, args: tuple) -> list[Any]:
    """Run ``kernel(start, stop, *args)`` over ``[0, n)`` split into one block-aligned chunk
    per core (kernels release the GIL); returns each chunk's result in order."""
    chunk = -(-n // THREADS)
    chunk = -(-chunk // BLOCK) * BLOCK
    bounds = [(s, min(s + chunk, n)) for s in range(0, n, chunk)]
    pool = worker_pool()
    futures = [pool.submit(kernel, s, e, *args) for s, e in bounds[1:]]
    first = kernel(bounds[0][0], bounds[0][1], *args)
    return [first] + [f.result() for f in futures]


def parallel_sum(x: np.ndarray) -> Any:
    """``x.sum()`` of a float32/float64 array, **bitwise** NumPy's, its halves summed on the
    pool's threads when ``x`` is large and C-contiguous.

    ``np.sum`` of a C-contiguous array hands NumPy's ``add`` loop all ``n`` elements at once,
    and the loop sums them pairwise (``pairwise_sum`` in NumPy's ``loops_utils.h``): for
    ``n > 128`` it returns ``sum(first n2) + sum(the rest)`` with ``n2 = n // 2`` rounded down
    to a multiple of 8. So the two halves, summed separately by NumPy and added in the array's
    dtype, give NumPy's bits (the reduction's starting ``+0.0`` only normalises a ``-0.0``,
    and does so on both paths); splitting each half again the same way feeds more threads.
    Anything else (small, strided, another dtype) is summed by NumPy in one call.
    ``np.add.reduce`` releases the GIL, so the halves really run at once.
    """
    if x.size < SUM_PARALLEL_MIN or THREADS == 1 or not x.flags.c_contiguous or \
            x.dtype.kind != "f" or x.dtype.itemsize not in (4, 8):
        return x.sum()
    flat = x.reshape(-1)
    bounds, tree = _pairwise_split(flat.size)
    pool = worker_pool()
    futures = [pool.submit(np.add.reduce, flat[lo:hi]) for lo, hi in bounds[1:]]
    sums = [np.add.reduce(flat[bounds[0][0]:bounds[0][1]])] + [f.result() for f in futures]
    return _combine(tree, sums)


def _pairwise_split(n: int) -> tuple[list[tuple[int, int]], Any]:
    """NumPy's pairwise summation tree over ``n`` elements, cut one level per doubling of
    the pool: ``(leaf bounds, tree of leaf indices)`` (see :func:`parallel_sum`)."""
    bounds: list[tuple[int, int]] = []
    depth = max(1, (THREADS - 1).bit_length())

    def split(lo: int, hi: int, d: int) -> Any:
        size = hi - lo
        if d == 0 or size <= 128:
            bounds.append((lo, hi))
            return len(bounds) - 1
        n2 = size // 2
        n2 -= n2 % 8
        return (split(lo, lo + n2, d - 1), split(lo + n2, hi, d - 1))

    return bounds, split(0, n, depth)


def _combine(tree: Any, sums: list[Any]) -> Any:
    if isinstance(tree, int):
        return sums[tree]
    return _combine(tree[0], sums) + _combine(tree[1], sums)  # in the dtype: NumPy scalars


def parallel_ufunc(ufunc: np.ufunc, x: Any, dtype: np.dtype, min_size: int) -> Any:
    """``ufunc(x)`` for a unary ufunc, computed by NumPy's own call on each core's share of a
    large C-contiguous array (ufuncs release the GIL; elementwise, so the bits are NumPy's);
    anything else in one call."""
    if not isinstance(x, np.ndarray) or x.size < min_size or THREADS == 1 or \
            not x.flags.c_contiguous:
        return ufunc(x)
    out = np.empty(x.shape, dtype)
    src, dst = x.reshape(-1), out.reshape(-1)
    n = src.size
    chunk = -(-n // THREADS)
    bounds = [(s, min(s + chunk, n)) for s in range(0, n, chunk)]
    futures = [worker_pool().submit(ufunc, src[s:e], dst[s:e]) for s, e in bounds[1:]]
    ufunc(src[bounds[0][0]:bounds[0][1]], dst[bounds[0][0]:bounds[0][1]])
    for f in futures:
        f.result()
    return out


def parallel_ufunc_sum(ufunc: np.ufunc, x: Any, dtype: np.dtype,
                       min_size: int) -> tuple[Any, Any]:
    """``(ufunc(x), its sum or None)``: :func:`parallel_ufunc`, where each core also sums
    the share it just wrote (still in its cache), cut where NumPy's pairwise summation cuts,
    so the sum is **bitwise** :func:`parallel_sum`'s (and ``np.sum``'s). The loop
    ``while sum(x) > t: x = tanh(x)`` then hands its work to the pool once per iteration,
    not twice, and never reads ``x`` again for the test (the fused executor's ``while`` loops).
    None when the call is not split (small, strided, not float32/float64)."""
    if not isinstance(x, np.ndarray) or x.size < min_size or THREADS == 1 or \
            not x.flags.c_contiguous or dtype.kind != "f" or dtype.itemsize not in (4, 8):
        return parallel_ufunc(ufunc, x, dtype, min_size), None
    out = np.empty(x.shape, dtype)
    src, dst = x.reshape(-1), out.reshape(-1)
    bounds, tree = _pairwise_split(src.size)

    def share(lo: int, hi: int) -> Any:
        ufunc(src[lo:hi], dst[lo:hi])
        return np.add.reduce(dst[lo:hi])

    futures = [worker_pool().submit(share, lo, hi) for lo, hi in bounds[1:]]
    sums = [share(*bounds[0])] + [f.result() for f in futures]
    return out, _combine(tree, sums)


#: ``parallel_sum`` splits from this many elements on. Measured here (float32): a 1M sum
#: takes ~0.3 ms in NumPy; handing half to the pool costs ~50 µs, so from ~256k elements on
#: the split gains.
SUM_PARALLEL_MIN = 1 << 18


__all__ = ["SUM_PARALLEL_MIN", "THREADS", "parallel_sum", "parallel_ufunc", "parallel_ufunc_sum",
           "run_parallel", "worker_pool"]
