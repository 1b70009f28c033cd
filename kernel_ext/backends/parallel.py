"""Parallel execution on the host: one thread pool, split kernels and split NumPy calls.

Numba's ``parallel=True`` and its threading layers are never used (the ``workqueue`` layer
aborts when two Python threads call parallel kernels). Instead, work that releases the GIL is
cut into one share per core and handed to a small :class:`~concurrent.futures.ThreadPoolExecutor`
(the calling thread takes the first share):

* :func:`run_parallel` — a fused ``k_flat`` kernel (``nogil``) over block-aligned ranges;
* :func:`parallel_ufunc` — NumPy's own call of a heavy unary ufunc on each share (same bits);
* :func:`parallel_sum` / :func:`parallel_ufunc_sum` — float sums cut exactly where NumPy's
  pairwise summation cuts, so the result is bitwise ``np.sum``'s;
* :class:`RowSplit` — a row-fused ``jit_compile=True`` function's rows, one share per thread
  (each row computed by one thread: the bits of one thread).

A hand-off to the pool costs ~50 µs (a thread wake-up), so callers split only from sizes the
cost model names (:mod:`.cost`, :data:`SUM_PARALLEL_MIN`).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .codegen import BLOCK

_POOL: ThreadPoolExecutor | None = None
_WORKER = "kernel_ext-worker"
#: Shares a split call is cut into: one per core, at most 8.
THREADS = max(1, min(os.cpu_count() or 1, 8))


def worker_pool() -> ThreadPoolExecutor:
    """The shared pool (``THREADS - 1`` workers; the caller runs the first share itself)."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=max(1, THREADS - 1), thread_name_prefix=_WORKER)
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
    if (
        x.size < SUM_PARALLEL_MIN
        or THREADS == 1
        or not x.flags.c_contiguous
        or x.dtype.kind != "f"
        or x.dtype.itemsize not in (4, 8)
    ):
        return x.sum()
    flat = x.reshape(-1)
    bounds, tree = _pairwise_split(flat.size)
    pool = worker_pool()
    futures = [pool.submit(np.add.reduce, flat[lo:hi]) for lo, hi in bounds[1:]]
    sums = [np.add.reduce(flat[bounds[0][0] : bounds[0][1]])] + [f.result() for f in futures]
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
    if (
        not isinstance(x, np.ndarray)
        or x.size < min_size
        or THREADS == 1
        or not x.flags.c_contiguous
    ):
        return ufunc(x)
    out = np.empty(x.shape, dtype)
    src, dst = x.reshape(-1), out.reshape(-1)
    n = src.size
    chunk = -(-n // THREADS)
    bounds = [(s, min(s + chunk, n)) for s in range(0, n, chunk)]
    futures = [worker_pool().submit(ufunc, src[s:e], dst[s:e]) for s, e in bounds[1:]]
    ufunc(src[bounds[0][0] : bounds[0][1]], dst[bounds[0][0] : bounds[0][1]])
    for f in futures:
        f.result()
    return out


def parallel_ufunc_sum(ufunc: np.ufunc, x: Any, dtype: np.dtype, min_size: int) -> tuple[Any, Any]:
    """``(ufunc(x), its sum or None)``: :func:`parallel_ufunc`, where each core also sums
    the share it just wrote (still in its cache), cut where NumPy's pairwise summation cuts,
    so the sum is **bitwise** :func:`parallel_sum`'s (and ``np.sum``'s). The loop
    ``while sum(x) > t: x = tanh(x)`` then hands its work to the pool once per iteration,
    not twice, and never reads ``x`` again for the test (the fused executor's ``while`` loops).
    None when the call is not split (small, strided, not float32/float64)."""
    if (
        not isinstance(x, np.ndarray)
        or x.size < min_size
        or THREADS == 1
        or not x.flags.c_contiguous
        or dtype.kind != "f"
        or dtype.itemsize not in (4, 8)
    ):
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


class RowSplit:
    """A row-fused whole-graph function (:mod:`.row_fusion`) whose rows are cut into one
    share per thread: ``rows(lo, hi, *args, *outputs)`` (the generated module's row
    function, ``nogil``) runs each share, the calling thread the first.

    Called as the compiled function is, ``split(*args)`` returns its tuple of outputs. Each
    row is computed by one thread with the same code in the same order as on one thread,
    so the bits do not depend on the number of shares. A check that fails (a shape or
    layout other than the traced one) raises the rerun signal from every share before any
    row is written; the caller reruns the call on the fused executor.
    """

    def __init__(
        self,
        rows: Callable[..., Any],
        nrows: int,
        outputs: tuple[tuple[tuple[int, ...], str], ...],
        shares: int,
    ) -> None:
        self.rows = rows
        self.nrows = nrows
        self.outputs = tuple((shape, np.dtype(dt)) for shape, dt in outputs)
        self.shares = max(1, min(shares, nrows))
        cuts = [k * nrows // self.shares for k in range(self.shares + 1)]
        self.bounds = list(itertools.pairwise(cuts))
        self.calls = -1
        self.best = {False: 0, True: 0}  # the best call's ns on one thread, split
        self.split = True

    #: calls timed on each path before the faster is chosen, and calls between two trials
    SAMPLES, RETRY = 2, 1000

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        outs = tuple(np.empty(shape, dt) for shape, dt in self.outputs)
        calls = self.calls = (self.calls + 1) % self.RETRY
        if calls < 2 * self.SAMPLES:
            # Which is faster is measured, not assumed: on a loaded machine the pool's
            # threads may wait for a core while the caller could have done every row.
            split = calls % 2 == 1
            t0 = time.perf_counter_ns()
            self._run(split, args, outs)
            took = time.perf_counter_ns() - t0
            self.best[split] = took if calls < 2 else min(self.best[split], took)
            if calls == 2 * self.SAMPLES - 1:
                self.split = self.best[True] < self.best[False]
            return outs
        self._run(self.split, args, outs)
        return outs

    def _run(self, split: bool, args: tuple, outs: tuple) -> None:
        rows = self.rows
        if (
            not split
            or len(self.bounds) == 1
            or threading.current_thread().name.startswith(_WORKER)
        ):
            # (a pool worker waiting on the pool could wait for itself: one share)
            rows(0, self.nrows, *args, *outs)
            return
        futures = [worker_pool().submit(rows, lo, hi, *args, *outs) for lo, hi in self.bounds[1:]]
        try:
            rows(self.bounds[0][0], self.bounds[0][1], *args, *outs)
        finally:
            for f in futures:  # every share finished (or failed) before the call returns
                f.exception()
        for f in futures:
            f.result()


def row_split_shares(nrows: int, width: int, configured: int) -> int:
    """How many shares a row-fused function of ``nrows`` rows of ``width`` elements is cut
    into: 1 (one thread) below :data:`ROW_SPLIT_MIN_ELEMENTS` or with one row, else one
    per thread of the pool, at most ``configured`` (Numba's configured thread count,
    ``NUMBA_NUM_THREADS``) and one per :data:`ROW_SPLIT_MIN_ELEMENTS` // 2 elements, so
    each share is worth a hand-off."""
    size = nrows * width
    if size < ROW_SPLIT_MIN_ELEMENTS or nrows < 2:
        return 1
    return max(1, min(THREADS, configured, nrows, size // (ROW_SPLIT_MIN_ELEMENTS // 2)))


#: ``parallel_sum`` splits from this many elements on. Measured here (float32): a 1M sum
#: takes ~0.3 ms in NumPy; handing half to the pool costs ~50 µs, so from ~256k elements on
#: the split gains.
SUM_PARALLEL_MIN = 1 << 18

#: A row-fused function splits its rows over threads from this many elements on (and
#: then only when its timed calls show the split faster: :class:`RowSplit`).
ROW_SPLIT_MIN_ELEMENTS = 1 << 17


__all__ = [
    "ROW_SPLIT_MIN_ELEMENTS",
    "SUM_PARALLEL_MIN",
    "THREADS",
    "RowSplit",
    "parallel_sum",
    "parallel_ufunc",
    "parallel_ufunc_sum",
    "row_split_shares",
    "run_parallel",
    "worker_pool",
]
