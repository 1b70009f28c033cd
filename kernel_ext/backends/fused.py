"""The fused executor: the NumPy executor's generated code with fused segments swapped in.

A graph compiled for ``backend="numba"`` (or ``"auto"``) is partitioned into segments
(:mod:`kernel_ext.passes.fusion`); the cost model keeps the profitable ones
(:mod:`.cost`). The executor is still one generated Python function, as in
:mod:`.numpy_backend`, except that each kept segment becomes one line calling its *runner*::

    v_out, v_total, = _seg0(v_x, v_a, v_b)

A runner is generated Python too. It checks the call's shapes and memory layout, allocates the
outputs with NumPy (or reuses its previous large output once the caller has dropped it:
:func:`take_output`), calls the segment's Numba kernel — the contiguous ``k_flat`` (split over
threads for large arrays) or the strided, broadcasting ``k_nd`` — and finishes reductions.
Until a kernel is compiled, for sizes below the cost model's break-even, for empty reductions,
or when a kernel flags a value only NumPy defines (a NaN cast to int), the runner calls the
segment's *fallback*: the same ops through NumPy, so results and errors are NumPy's own.

Compilation never blocks a call: this module does not import Numba at all. A kernel is
requested the first time a runner needs it and compiled on a background thread, started
when the requesting call has returned (so the first call's NumPy work does not compete with
the compiler for the GIL); the runner switches to the kernel on the first call after it is
ready. :func:`set_synchronous` (or ``KERNEL_EXT_SYNC_COMPILE=1``) compiles in the calling
thread instead, for tests and benchmarks. Kernels are shared by source: every segment, trace
and Function with the same kernel text uses one compiled kernel.
"""

from __future__ import annotations

import atexit
import math
import os
import queue
import sys
import threading
import time
import warnings
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import numpy as np

from ..ir import Graph, Node, OpGroup, OpKind
from ..passes.fusion import Segment, partition, schedule
from ..trace.pytree import TreeNode
from . import cost
from .codegen import BLOCK, KernelSource, Unsupported, can_compile, generate
from .numpy_backend import _Emitter, _Namer, _output_expr, _Scope

# ---------------------------------------------------------------------------------------------
# Compilation: kernel handles and the background compiler
# ---------------------------------------------------------------------------------------------

_SYNC = os.environ.get("KERNEL_EXT_SYNC_COMPILE", "").lower() in ("1", "true", "yes")


def set_synchronous(flag: bool) -> bool:
    """Compile kernels in the calling thread (True) or in the background (False, the
    default). Returns the previous setting. Tests and benchmarks use True."""
    global _SYNC
    old, _SYNC = _SYNC, bool(flag)
    return old


def synchronous() -> bool:
    return _SYNC


class KernelHandle:
    """One kernel module and its compiled variants (``flat``, ``nd``, ``cuda``).

    Runners read ``handle.flat`` / ``handle.nd`` on every call (None until compiled) and call
    :meth:`need` when a variant is missing.
    """

    def __init__(self, ksrc: KernelSource) -> None:
        self.ksrc = ksrc
        self.flat: Any = None
        self.nd: Any = None
        self.cuda: Any = None
        self.graph_c: Any = None   # whole-graph function, C-contiguous array arguments
        self.graph_a: Any = None   # ... any-layout array arguments
        self.graph_args: dict[str, tuple] = {}
        self.state: dict[str, str] = {}
        self.compile_ms: dict[str, float] = {}
        self.cache: dict[str, str] = {}
        self.error: str | None = None
        self.reports: "weakref.WeakValueDictionary[int, SegmentReport]" = \
            weakref.WeakValueDictionary()
        self.work: dict[str, int] = {}
        self._lock = threading.Lock()

    def need(self, variant: str, n: int = 0, hot: int = 0) -> Any:
        """The compiled variant, compiling it now (synchronous mode) or scheduling it
        (background mode, returns None meanwhile).

        ``hot``: request compilation only once calls needing this variant have processed
        ``hot`` elements in all (``auto`` does not spend a second of compilation on a
        kernel that would save microseconds); ``n`` is this call's element count.
        """
        compiled = getattr(self, variant)
        if compiled is not None:
            return compiled
        state = self.state.get(variant)
        if state == "failed":
            return None
        if hot:
            work = self.work.get(variant, 0) + max(n, 1)
            self.work[variant] = work
            if work < hot:
                return None
        if _SYNC:
            self.compile(variant)
            return getattr(self, variant)
        if state is None:
            self.state[variant] = "queued"
            self._update_reports()
            COMPILER.defer(self, variant)
        return None

    def need_graph(self, args: tuple) -> Any:
        """Request the whole-graph function for arguments like ``args`` (its signature is
        made from their dtypes, ranks and layout)."""
        from .whole_graph import _describe
        contiguous = all(d[0] != "array" or d[3] == "C" for d in map(_describe, args))
        variant = "graph_c" if contiguous else "graph_a"
        if variant not in self.graph_args:
            descr = []
            for a in args:
                d = _describe(a)
                if d[0] == "array" and variant == "graph_a":
                    d = d[:3] + ("A",)
                descr.append(d)
            self.graph_args[variant] = tuple(descr)
        return self.need(variant)

    def compile(self, variant: str) -> None:
        """Compile (or load from the disk cache) one variant; idempotent and thread-safe."""
        with self._lock:
            if getattr(self, variant) is not None or self.state.get(variant) == "failed":
                return
            self.state[variant] = "compiling"
            self._update_reports()
            t0 = time.perf_counter()
            try:
                if self.ksrc.target == "cuda":
                    from . import numba_cuda
                    compiled, hit = numba_cuda.compile_variant(self.ksrc, variant)
                else:
                    from . import numba_cpu
                    compiled, hit = numba_cpu.compile_variant(self.ksrc, variant,
                                                              self.graph_args.get(variant))
            except Exception as e:  # a kernel that fails to compile runs through NumPy
                self.state[variant] = "failed"
                self.error = f"{type(e).__name__}: {e}"
                self._update_reports()
                warnings.warn(f"kernel_ext: a fused kernel failed to compile and its ops run "
                              f"through NumPy ({self.error.splitlines()[0][:300]})",
                              RuntimeWarning, stacklevel=2)
                return
            self.compile_ms[variant] = (time.perf_counter() - t0) * 1000.0
            self.cache[variant] = "hit" if hit else "miss"
            setattr(self, variant, compiled)
            self.state[variant] = "ready"
            self._update_reports()

    def _update_reports(self) -> None:
        states = dict(self.state)
        for report in list(self.reports.values()):
            report["state"] = _summary_state(states)
            report["variants"] = states
            report["compile_ms"] = round(sum(self.compile_ms.values()), 3)
            report["cache"] = ",".join(f"{k}:{v}" for k, v in sorted(self.cache.items())) \
                or None
            report["error"] = self.error


def _summary_state(states: dict[str, str]) -> str:
    if not states:
        return "pending"
    for s in ("failed", "compiling", "queued"):
        if s in states.values():
            return s
    return "ready"


_HANDLES: dict[tuple[str, str], KernelHandle] = {}
_HANDLES_LOCK = threading.Lock()


def handle_for(ksrc: KernelSource) -> KernelHandle:
    """The shared handle of a kernel source (one compiled kernel per distinct source)."""
    key = (ksrc.target, ksrc.key)
    with _HANDLES_LOCK:
        h = _HANDLES.get(key)
        if h is None:
            h = _HANDLES[key] = KernelHandle(ksrc)
        return h


class SegmentReport(dict):
    """One fused segment as the UI sees it (a dict, weakly referenced by its kernel handle,
    which keeps its compile state current)."""


#: ``auto`` compiles a kernel once its calls have processed this many elements (about a
#: millisecond of NumPy work, against a second of compilation).
HOT_ELEMENTS = 1 << 20


class _Compiler:
    """A single background thread compiling queued kernel variants in order.

    Requests made during a call are *deferred* (:meth:`defer`) and handed to the thread by
    :meth:`flush`, which the executor calls when the call returns.
    """

    def __init__(self) -> None:
        self.deferred: list[tuple[KernelHandle, str]] = []
        self._queue: "queue.Queue[tuple[KernelHandle, str] | None]" = queue.Queue()
        self._thread: threading.Thread | None = None
        self._busy = 0
        self._idle = threading.Condition()

    def defer(self, handle: KernelHandle, variant: str) -> None:
        self.deferred.append((handle, variant))

    def flush(self) -> None:
        items = []
        while self.deferred:  # list.pop is atomic: a request appended meanwhile is not lost
            try:
                items.append(self.deferred.pop(0))
            except IndexError:
                break
        if not items:
            return
        with self._idle:
            self._busy += len(items)
        for item in items:
            self._queue.put(item)
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._work, name="kernel_ext-compiler",
                                            daemon=True)
            self._thread.start()

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            handle, variant = item
            try:
                handle.compile(variant)
            finally:
                with self._idle:
                    self._busy -= 1
                    self._idle.notify_all()

    def shutdown(self, timeout: float = 10.0) -> None:
        """At interpreter exit: drop queued work and let a running compile finish."""
        self.deferred[:] = []
        try:
            while True:
                self._queue.get_nowait()
                with self._idle:
                    self._busy -= 1
        except queue.Empty:
            pass
        if self._thread is not None and self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until every requested kernel is compiled; False on timeout."""
        self.flush()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self._busy:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._idle.wait(left)
        return True


COMPILER = _Compiler()
atexit.register(COMPILER.shutdown)


def wait_for_kernels(timeout: float | None = None) -> bool:
    """Wait until all background kernel compilation requested so far has finished."""
    return COMPILER.wait(timeout)


# ---------------------------------------------------------------------------------------------
# Parallel execution of flat kernels
# ---------------------------------------------------------------------------------------------

_POOL: ThreadPoolExecutor | None = None
_THREADS = max(1, min(os.cpu_count() or 1, 8))


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=max(1, _THREADS - 1),
                                   thread_name_prefix="kernel_ext-worker")
    return _POOL


def run_parallel(kernel: Callable[..., Any], n: int, args: tuple) -> list[Any]:
    """Run ``kernel(start, stop, *args)`` over ``[0, n)`` split into one block-aligned chunk
    per core (kernels release the GIL); returns each chunk's result in order."""
    chunk = -(-n // _THREADS)
    chunk = -(-chunk // BLOCK) * BLOCK
    bounds = [(s, min(s + chunk, n)) for s in range(0, n, chunk)]
    pool = _pool()
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
    if x.size < SUM_PARALLEL_MIN or _THREADS == 1 or not x.flags.c_contiguous or \
            x.dtype.kind != "f" or x.dtype.itemsize not in (4, 8):
        return x.sum()
    flat = x.reshape(-1)
    bounds, tree = _pairwise_split(flat.size)
    pool = _pool()
    futures = [pool.submit(np.add.reduce, flat[lo:hi]) for lo, hi in bounds[1:]]
    sums = [np.add.reduce(flat[bounds[0][0]:bounds[0][1]])] + [f.result() for f in futures]
    return _combine(tree, sums)


def _pairwise_split(n: int) -> tuple[list[tuple[int, int]], Any]:
    """NumPy's pairwise summation tree over ``n`` elements, cut one level per doubling of
    the pool: ``(leaf bounds, tree of leaf indices)`` (see :func:`parallel_sum`)."""
    bounds: list[tuple[int, int]] = []
    depth = max(1, (_THREADS - 1).bit_length())

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
    if not isinstance(x, np.ndarray) or x.size < min_size or _THREADS == 1 or \
            not x.flags.c_contiguous:
        return ufunc(x)
    out = np.empty(x.shape, dtype)
    src, dst = x.reshape(-1), out.reshape(-1)
    n = src.size
    chunk = -(-n // _THREADS)
    bounds = [(s, min(s + chunk, n)) for s in range(0, n, chunk)]
    futures = [_pool().submit(ufunc, src[s:e], dst[s:e]) for s, e in bounds[1:]]
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
    not twice, and never reads ``x`` again for the test (``_FusedEmitter._emit_while``).
    None when the call is not split (small, strided, not float32/float64)."""
    if not isinstance(x, np.ndarray) or x.size < min_size or _THREADS == 1 or \
            not x.flags.c_contiguous or dtype.kind != "f" or dtype.itemsize not in (4, 8):
        return parallel_ufunc(ufunc, x, dtype, min_size), None
    out = np.empty(x.shape, dtype)
    src, dst = x.reshape(-1), out.reshape(-1)
    bounds, tree = _pairwise_split(src.size)

    def share(lo: int, hi: int) -> Any:
        ufunc(src[lo:hi], dst[lo:hi])
        return np.add.reduce(dst[lo:hi])

    futures = [_pool().submit(share, lo, hi) for lo, hi in bounds[1:]]
    sums = [share(*bounds[0])] + [f.result() for f in futures]
    return out, _combine(tree, sums)


#: ``parallel_sum`` splits from this many elements on. Measured here (float32): a 1M sum
#: takes ~0.3 ms in NumPy; handing half to the pool costs ~50 µs, so from ~256k elements on
#: the split gains.
SUM_PARALLEL_MIN = 1 << 18


# ---------------------------------------------------------------------------------------------
# Output buffers
# ---------------------------------------------------------------------------------------------

#: A flat kernel's output of at least this many bytes is recycled (:func:`take_output`).
#: Measured on the dev machine: a fresh 40 MB array costs 7-8 ms of CPU in page faults and
#: zeroing when the kernel first writes it (``np.empty`` + fill 12-14 ms, filling a reused
#: one 5-6 ms), a third of W3's kernel time. Smaller arrays come from malloc's free lists,
#: already faulted in (glibc maps only allocations above its 32 MB ceiling afresh each time).
RECYCLE_BYTES = 4 << 20


def take_output(slot: list, n: int, dtype: np.dtype) -> np.ndarray:
    """A 1-D output of ``n`` elements: the runner's previous output if nothing else refers
    to it any more, else a new ``np.empty``.

    ``slot`` holds the runner's last large output (:func:`keep_output`). Its array is reused
    only when the reference count proves that nobody else can see it: the caller dropped the
    result, and no view, memoryview or weak reference of it exists (a view holds its base).
    ``list.pop`` hands the array to one thread only, so concurrent calls never share it.
    """
    try:
        old = slot.pop()
    except IndexError:
        return np.empty(n, dtype)
    # references: ``old`` and getrefcount's argument
    if (sys.getrefcount(old) == 2 and not weakref.getweakrefcount(old)
            and old.shape == (n,) and old.dtype == dtype):
        return old
    return np.empty(n, dtype)


def keep_output(slot: list, out: np.ndarray) -> None:
    """Remember ``out`` (being returned) for :func:`take_output` on the next call. The slot
    keeps one array: what a runner retains between calls is its last large output."""
    slot[:] = (out,)


# ---------------------------------------------------------------------------------------------
# Segment planning and runner generation
# ---------------------------------------------------------------------------------------------

class SegmentPlan:
    """A segment chosen for fusion, its kernel and the cost model's decision."""

    def __init__(self, seg: Segment, ksrc: KernelSource, decision: cost.Decision,
                 handle: KernelHandle) -> None:
        self.segment = seg
        self.ksrc = ksrc
        self.decision = decision
        self.handle = handle


def plain_float_sum(node: Node) -> bool:
    """Is ``node`` a float32/float64 ``sum`` over all axes in its input's dtype, nothing else
    (no keepdims)? :func:`parallel_sum` computes exactly those, bitwise."""
    if node.op is not OpKind.SUM or not node.args or not isinstance(node.args[0], Node):
        return False
    x = node.args[0]
    if x.aval is None or x.aval.shape in (None, ()) or node.aval is None:
        return False
    dt = np.dtype(x.aval.dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)) or np.dtype(node.dtype) != dt:
        return False
    rank = len(x.aval.shape)
    axis = node.attrs.get("axis")
    if axis is not None:
        axes = {int(a) % rank for a in (axis if isinstance(axis, tuple) else (axis,))}
        if axes != set(range(rank)):
            return False
    extra = set(node.attrs) - {"axis", "keepdims", "dtype"}
    return not extra and not node.attrs.get("keepdims") and \
        node.attrs.get("dtype") in (None, dt)


def plan_segments(graph: Graph, mode: str, target: str = "cpu",
                  exact_sums: bool = False) -> list[SegmentPlan]:
    """Segments of ``graph`` worth fusing under ``mode`` ("auto" or "numba").

    ``exact_sums``: a segment that is only a plain float sum (:func:`plain_float_sum`) is not
    fused; the executor sums with :func:`parallel_sum` (NumPy's bits) instead of the float64
    lanes (``jit_compile=True`` graphs, whose compiled sums are NumPy's own)."""
    # "auto" keeps every result bitwise NumPy's except float sums and means (another
    # summation order, within the documented bound); float max/min stay in NumPy unless the
    # user asked for backend="numba".
    auto = mode == "auto"

    def eligible(node: Node) -> bool:
        return can_compile(node, target, auto)

    plans = []
    for seg in partition(graph, eligible):
        if exact_sums and not seg.elementwise and seg.reduction is not None and \
                plain_float_sum(seg.reduction):
            continue
        if (mode == "auto" or exact_sums) and target == "cpu" and len(seg.nodes) == 1 and \
                seg.reduction is None and cost.parallel_unary_size(seg.nodes[0]) is not None:
            continue  # NumPy's own call, split over the cores (_FusedEmitter.emit_node)
        decision = cost.decide(seg, mode)
        if not decision.fuse:
            continue
        try:
            ksrc = generate(seg, target)
        except Unsupported:
            continue
        plans.append(SegmentPlan(seg, ksrc, decision, handle_for(ksrc)))
    return plans


def _deps(seg: Segment) -> dict[Node, set[int]]:
    """For each member, the indices of the segment's array inputs it depends on."""
    deps: dict[Node, set[int]] = {}
    index = {n: i for i, n in enumerate(seg.inputs)}
    for n in seg.nodes:
        d: set[int] = set()
        for a in n.inputs:
            if a in deps:
                d |= deps[a]
            elif a in index and a.aval.shape != ():
                d.add(index[a])
        deps[n] = d
    return deps


class _RunnerWriter:
    """Generates the runner and the NumPy fallback of one fused segment."""

    def __init__(self, plan: SegmentPlan, idx: int, namer: _Namer, hot: int = 0,
                 device_outputs: frozenset[int] = frozenset()) -> None:
        self.plan = plan
        self.hot = hot
        self.device_outputs = device_outputs  # CUDA: outputs (by index) left on the device
        self.seg = plan.segment
        self.k = plan.ksrc
        self.idx = idx
        self.namer = namer
        self.lines: list[str] = []
        self.slots: dict[int, tuple[str, int]] = {}  # recycled output -> (slot, min size)

    def bind(self, value: Any, prefix: str) -> str:
        return self.namer.bind(value, prefix)

    def fallback(self) -> str:
        """``_fbN(v0, ...)``: the segment's ops through NumPy (exact reference semantics)."""
        seg = self.seg
        name = f"_fb{self.idx}"
        params = [f"v{i}" for i in range(len(seg.inputs))]
        emitter = _Emitter(self.namer)
        scope = _Scope(f"f{self.idx}_", dict(zip(seg.inputs, params)))
        emitter.lines.append(f"def {name}({', '.join(params)}):")
        # NumPy's own temporary elision, done explicitly: an op whose operand is a temporary
        # of its shape and dtype that nothing reads later writes into it (out=), and dead
        # temporaries are freed at once. Same loops, same values; far fewer page faults.
        last_use = {a: i for i, n in enumerate(seg.nodes) for a in n.inputs}
        keep = set(seg.outputs) | set(seg.inputs)
        static = None not in seg.domain and len(seg.domain) > 0
        for i, n in enumerate(seg.nodes):
            dead = [a for a in dict.fromkeys(n.inputs)
                    if a not in keep and last_use.get(a) == i]
            ufunc = n.op.ufunc
            reuse = next((a for a in dead if static and ufunc is not None and not n.attrs
                          and a.aval.shape == n.aval.shape and a.aval.dtype == n.aval.dtype
                          and ufunc.nout == 1), None)
            if reuse is not None:
                fn = self.bind(ufunc, "_uf")
                args = [scope.var(a) if isinstance(a, Node) else emitter._literal(a)
                        for a in n.args]
                emitter.lines.append(f"    {scope.var(n)} = {fn}({', '.join(args)}, "
                                     f"out={scope.var(reuse)})")
            else:
                emitter.emit_node(n, scope, "    ")
            gone = [scope.var(a) for a in dead if a is not reuse]
            if gone:
                emitter.lines.append(f"    del {', '.join(gone)}")
        outs = "".join(scope.var(o) + ", " for o in seg.outputs)
        emitter.lines.append(f"    return ({outs})")
        self.lines += emitter.lines
        return name

    def cuda_runner(self, name: str, fb: str, handle: str, params: list[str]) -> str:
        """A CUDA segment: shapes on the host, one launch, partial sums combined here.

        Inputs may be device arrays (earlier segments' outputs kept there); the outputs in
        ``self.device_outputs`` stay on the device. The NumPy fallback gets host arrays.
        """
        seg, k, L = self.seg, self.k, self.lines
        call_fb = f"return {fb}({', '.join(f'_host({p})' for p in params)})"
        arrays = [f"v{i}" for i in k.array_inputs]
        L.append(f"def {name}({', '.join(params)}):")
        L.append("    try:")
        shapes = ", ".join(f"{a}.shape" for a in arrays)
        L.append(f"        shp = _bshape({shapes})" if arrays else "        shp = ()")
        L.append("    except ValueError:")
        L.append(f"        {call_fb}")
        L.append("    n = 1")
        L.append("    for d in shp:")
        L.append("        n *= d")
        red = k.reduction
        if red is not None:
            L.append("    if n == 0:")
            L.append(f"        {call_fb}")
        L.append(f"    kc = {handle}.cuda")
        L.append("    if kc is None:")
        L.append(f"        kc = {handle}.need('cuda', n, {self.hot})")
        L.append("        if kc is None:")
        L.append(f"            {call_fb}")
        kdt = self.bind([np.dtype(seg.outputs[i].aval.dtype) for i in k.map_outputs], "_dts")
        ksrc = self.bind(k, "_ksrc")
        scal = ", ".join(f"v{i}[()]" for i in k.scalar_inputs)
        rank = len(seg.domain)
        keep = tuple(rank > 0 and seg.outputs.index(o) in self.device_outputs
                     for o in (seg.outputs[i] for i in k.map_outputs))
        L.append(f"    bad, outs, parts = _cuda_run(kc, {ksrc}, shp, [{', '.join(arrays)}], "
                 f"[{scal}], {kdt}, {keep!r})")
        L.append("    if bad:")
        L.append(f"        {call_fb}")
        results = []
        j = 0
        for o in seg.outputs:
            if o is seg.reduction:
                comb = self.bind(_partial_combiner(red), "_comb")
                fin = self.bind(_flat_finisher(red, rank), "_fin")
                results.append(f"{fin}({comb}([(False, p) for p in parts])[1], n)")
            else:
                results.append(f"outs[{j}][0]" if rank == 0 else f"outs[{j}]")
                j += 1
        L.append(f"    return ({''.join(r + ', ' for r in results)})")
        return name

    def runner(self) -> str:
        seg, k = self.seg, self.k
        fb = self.fallback()
        if k.target == "cuda":
            handle = self.bind(self.plan.handle, "_K")
            params = [f"v{i}" for i in range(len(seg.inputs))]
            return self.cuda_runner(f"_seg{self.idx}", fb, handle, params)
        handle = self.bind(self.plan.handle, "_K")
        params = [f"v{i}" for i in range(len(seg.inputs))]
        call_fb = f"return {fb}({', '.join(params)})"
        rank = len(seg.domain)
        arrays = k.array_inputs
        static = all(d is not None for d in seg.domain)
        L = self.lines
        name = f"_seg{self.idx}"
        L.append(f"def {name}({', '.join(params)}):")
        # -- the iteration domain ---------------------------------------------------------
        if static:
            # bound, not spelled out: a retrace with other sizes then generates the same
            # source text, whose compiled code is reused (_CODE)
            L.append(f"    shp = {self.bind(tuple(seg.domain), '_shp')}")
            L.append(f"    n = {self.bind(math.prod(seg.domain), '_size')}")
        else:
            first = next(i for i in arrays if len(seg.inputs[i].aval.shape) == rank)
            others = [i for i in arrays if i != first]
            L.append(f"    shp = v{first}.shape")
            if others:
                cond = " or ".join(f"v{i}.shape != shp" for i in others)
                shapes = ", ".join(f"v{i}.shape" for i in [first] + others)
                L.append(f"    if {cond}:")
                L.append("        try:")
                L.append(f"            shp = _bshape({shapes})")
                L.append("        except ValueError:")
                L.append(f"            {call_fb}")
                # A member computed from fewer inputs may be smaller than the domain when
                # dims are unknown (a 1 broadcast against n): NumPy then gives it its own
                # shape, so such calls run through NumPy.
                deps = _deps(seg)
                full = set(arrays)
                for o in seg.outputs:
                    src = o.args[0] if o is seg.reduction else o
                    d = deps.get(src, {seg.inputs.index(src)} if src in seg.inputs else set())
                    if d != full and d:
                        sh = ", ".join(f"v{i}.shape" for i in sorted(d))
                        L.append(f"        if _bshape({sh}) != shp:")
                        L.append(f"            {call_fb}")
            L.append("    n = " + (" * ".join(f"shp[{d}]" for d in range(rank)) or "1"))
        dec = self.plan.decision
        if dec.min_size > 1 and not static:
            L.append(f"    if n < {dec.min_size}:")
            L.append(f"        {call_fb}")
        if seg.reduction is not None:
            L.append("    if n == 0:")
            L.append(f"        {call_fb}")
        red = k.reduction
        # -- the contiguous path -----------------------------------------------------------
        flat_ok = red is None or red.axis is None
        conds = []
        for i in arrays:
            a = seg.inputs[i]
            if static and a.aval.shape != seg.domain:
                flat_ok = False
            if not static and len(a.aval.shape) != rank:
                flat_ok = False
            if not (static and a.aval.shape == seg.domain):
                conds.append(f"v{i}.shape == shp")
            conds.append(f"v{i}.flags.c_contiguous")
        if flat_ok:
            if conds:
                L.append(f"    if {' and '.join(conds)}:")
                ind = "        "
            else:
                ind = "    "
            self._flat_branch(ind, handle, call_fb, params)
            if not conds:
                return name
        if rank == 0:
            L.append(f"    {call_fb}")
            return name
        self._nd_branch("    ", handle, call_fb, params)
        return name

    def _loop_args(self) -> list[str]:
        out = []
        from .ufunc_loops import find_loop
        for ufunc, loop in self.k.calls:
            found = find_loop(ufunc, loop)
            assert found is not None
            out.append(self.bind(np.uintp(found[0]), "_fp"))
            out.append(self.bind(np.uintp(found[1]), "_dp"))
        return out

    def _scalar_args(self) -> list[str]:
        return [f"v{i}[()]" for i in self.k.scalar_inputs]

    def _outputs(self, ind: str, shape_expr: str, recycle: bool = False) -> list[str]:
        """Allocate the map outputs; ``recycle`` (the flat path): large ones reuse the
        runner's previous output when the caller has dropped it (:func:`take_output`)."""
        names = []
        for i in self.k.map_outputs:
            dtype = np.dtype(self.seg.outputs[i].aval.dtype)
            dt = self.bind(dtype, "_dt")
            if recycle:
                slot = self.bind([], "_slot")
                big = -(-RECYCLE_BYTES // dtype.itemsize)
                self.lines.append(f"{ind}o{i} = _take({slot}, n, {dt}) if n >= {big} else "
                                  f"_empty(n, {dt})")
                self.slots[i] = (slot, big)
            else:
                self.lines.append(f"{ind}o{i} = _empty({shape_expr}, {dt})")
            names.append(f"o{i}")
        return names

    def _flat_branch(self, ind: str, handle: str, call_fb: str, params: list[str]) -> None:
        L, seg, k = self.lines, self.seg, self.k
        L.append(f"{ind}kf = {handle}.flat")
        L.append(f"{ind}if kf is None:")
        L.append(f"{ind}    kf = {handle}.need('flat', n, {self.hot})")
        L.append(f"{ind}    if kf is None:")
        L.append(f"{ind}        {call_fb}")
        outs = self._outputs(ind, "n", recycle=True)
        args = [f"v{i}.ravel()" for i in k.array_inputs] + self._scalar_args() + outs \
            + self._loop_args()
        argtext = ", ".join(args)
        par = self.plan.decision.parallel_size
        red = k.reduction
        L.append(f"{ind}if n >= {par}:")
        L.append(f"{ind}    parts = _run_parallel(kf, n, ({argtext}{',' if args else ''}))")
        if red is None:
            L.append(f"{ind}    bad = any(parts)")
        else:
            comb = self.bind(_partial_combiner(red), "_comb")
            L.append(f"{ind}    bad, acc = {comb}(parts)")
        L.append(f"{ind}else:")
        lhs = "bad" if red is None else "bad, acc"
        L.append(f"{ind}    {lhs} = kf(0, n{', ' if args else ''}{argtext})")
        L.append(f"{ind}if bad:")
        L.append(f"{ind}    {call_fb}")
        for i, (slot, big) in self.slots.items():
            L.append(f"{ind}if n >= {big}:")
            L.append(f"{ind}    _keep({slot}, o{i})")
        rank = len(seg.domain)
        results = []
        for i, o in enumerate(seg.outputs):
            if o is seg.reduction:
                fin = self.bind(_flat_finisher(red, rank), "_fin")  # type: ignore[arg-type]
                results.append(f"{fin}(acc, n)")
            elif rank == 0:
                results.append(f"o{i}[0]")
            elif rank == 1:
                results.append(f"o{i}")
            else:
                results.append(f"o{i}.reshape(shp)")
        L.append(f"{ind}return ({''.join(r + ', ' for r in results)})")

    def _nd_branch(self, ind: str, handle: str, call_fb: str, params: list[str]) -> None:
        L, seg, k = self.lines, self.seg, self.k
        rank = len(seg.domain)
        L.append(f"{ind}kn = {handle}.nd")
        L.append(f"{ind}if kn is None:")
        L.append(f"{ind}    kn = {handle}.need('nd', n, {self.hot})")
        L.append(f"{ind}    if kn is None:")
        L.append(f"{ind}        {call_fb}")
        outs = self._outputs(ind, "shp")
        red = k.reduction
        accs = []
        if red is not None:
            ident = self.bind(np.dtype(red.acc_dtype).type(red.identity), "_id")
            dt = self.bind(np.dtype(red.acc_dtype), "_dt")
            if red.axis is None:
                keep = f"{(1,) * rank!r}"
            else:
                keep = "(" + "".join(f"{'1' if d == red.axis else f'shp[{d}]'}, "
                                     for d in range(rank)) + ")"
            L.append(f"{ind}acc = _full({keep}, {ident}, {dt})")
            accs = ["acc"]
        dims = [f"shp[{d}]" for d in range(rank)]
        arrs = [f"_bt(v{i}, shp)" for i in k.array_inputs]
        args = dims + arrs + self._scalar_args() + outs + accs + self._loop_args()
        L.append(f"{ind}if kn({', '.join(args)}):")
        L.append(f"{ind}    {call_fb}")
        results = []
        for i, o in enumerate(seg.outputs):
            if o is seg.reduction:
                fin = self.bind(_nd_finisher(red), "_fin")  # type: ignore[arg-type]
                results.append(f"{fin}(acc, shp)")
            else:
                results.append(f"o{i}")
        L.append(f"{ind}return ({''.join(r + ', ' for r in results)})")


def _partial_combiner(red: Any) -> Callable[[list], tuple]:
    """Combine per-thread ``(bad, acc)`` results of a flat reduction."""
    acc_dt = np.dtype(red.acc_dtype)
    fold = red.op.accumulator.reduce

    def combine(parts: list) -> tuple:
        bad = any(p[0] for p in parts)
        accs = np.array([p[1] for p in parts], dtype=acc_dt)
        return bad, fold(accs)
    return combine


def _flat_finisher(red: Any, rank: int) -> Callable[[Any, int], Any]:
    """Turn a flat reduction's accumulator into NumPy's result (dtype, mean, keepdims)."""
    acc_dt, out_dt = np.dtype(red.acc_dtype), np.dtype(red.out_dtype)
    keep = (1,) * rank if red.keepdims else None
    mean = red.op is OpKind.MEAN

    def finish(acc: Any, n: int) -> Any:
        if mean:
            value = np.array(float(acc) / n).astype(out_dt)
        else:
            value = np.array(acc, dtype=acc_dt).astype(out_dt)
        return value.reshape(keep) if keep is not None else value[()]
    return finish


def _nd_finisher(red: Any) -> Callable[[np.ndarray, tuple], Any]:
    """Turn an N-d reduction's accumulator array (keepdims shape) into NumPy's result."""
    out_dt = np.dtype(red.out_dtype)
    axis, keepdims, mean = red.axis, red.keepdims, red.op is OpKind.MEAN

    def finish(acc: np.ndarray, shp: tuple) -> Any:
        if mean:
            count = math.prod(shp) if axis is None else shp[axis]
            acc = acc / count
        res = acc.astype(out_dt)
        if keepdims:
            return res
        if axis is None:
            return res.reshape(())[()]
        res = res.reshape(shp[:axis] + shp[axis + 1:])
        return res[()] if res.ndim == 0 else res
    return finish


def _cuda_run(*args: Any) -> Any:
    """Launch a CUDA segment kernel (imports the CUDA backend, hence Numba, on first use)."""
    from .numba_cuda import run_segment
    return run_segment(*args)


def _to_host(v: Any) -> Any:
    """A CUDA device array copied to the host; anything else unchanged (no CUDA import)."""
    return v.copy_to_host() if hasattr(v, "copy_to_host") else v


def _bt(v: np.ndarray, shp: tuple) -> np.ndarray:
    return v if v.shape == shp else np.broadcast_to(v, shp)


# ---------------------------------------------------------------------------------------------
# The executor
# ---------------------------------------------------------------------------------------------

class _FusedEmitter(_Emitter):
    """The NumPy executor's emitter, with each planned segment emitted as one runner call
    (in every graph: the top level and control-flow bodies alike)."""

    def __init__(self, namer: _Namer, mode: str, target: str, exact_sums: bool = False) -> None:
        super().__init__(namer)
        self.mode = mode
        self.target = target
        self.exact_sums = exact_sums
        self.parallel_sums = 0   # plain float sums emitted as parallel_sum calls
        self.parallel_ufuncs = 0  # heavy unary ufuncs emitted as parallel_ufunc calls
        self.parallel_ufunc_size: int | None = None  # the smallest size they split from
        # Loops whose test sums a loop variable that the body makes with one split ufunc:
        # the test's placeholder / the body's node -> the variable carrying that sum.
        self._sum_of_input: dict[Node, str] = {}
        self._sum_into: dict[Node, str] = {}
        self.functions: list[str] = []
        self.plans: list[SegmentPlan] = []

    def emit_node(self, node: Node, scope: _Scope, indent: str) -> None:
        if self.exact_sums and plain_float_sum(node):
            self.parallel_sums += 1
            x = scope.var(node.args[0])
            known = self._sum_of_input.get(node.args[0])
            expr = f"{known} if {known} is not None else _psum({x})" if known else f"_psum({x})"
            self.lines.append(f"{indent}{scope.var(node)} = {expr}")
            return
        size = self._parallel_size(node)
        if size is not None and (node.aval.size is None or node.aval.size >= size):
            uf = self.namer.bind(node.op.ufunc, "_uf")
            dt = self.namer.bind(np.dtype(node.aval.dtype), "_dt")
            self.parallel_ufuncs += 1
            self.parallel_ufunc_size = min(self.parallel_ufunc_size or size, size)
            x, v, total = scope.var(node.args[0]), scope.var(node), self._sum_into.get(node)
            if total:
                self.lines.append(f"{indent}{v}, {total} = _pus({uf}, {x}, {dt}, {size})")
            else:
                self.lines.append(f"{indent}{v} = _pu({uf}, {x}, {dt}, {size})")
            return
        if node in self._sum_into:  # (not split here: the test sums it itself)
            self.lines.append(f"{indent}{self._sum_into[node]} = None")
        super().emit_node(node, scope, indent)

    def _parallel_size(self, node: Node) -> int | None:
        """The size from which ``node`` runs as :func:`parallel_ufunc`, or None."""
        if self.target != "cpu" or not (self.mode == "auto" or self.exact_sums) or \
                not node.args or not isinstance(node.args[0], Node):
            return None
        return cost.parallel_unary_size(node)

    def _emit_while(self, node: Node, v: str, args: list[str], indent: str) -> None:
        if self.exact_sums:
            cond, body = node.attrs["cond"], node.attrs["body"]
            for i in range(node.attrs["n_vars"]):
                ph, made = cond.inputs[i], body.outputs[i]
                if made.op.group is OpGroup.ELEMENTWISE and \
                        self._parallel_size(made) is not None and \
                        any(plain_float_sum(c) and c.args[0] is ph for c in cond.nodes):
                    total = f"known_sum{len(self._sum_into)}"
                    self.lines.append(f"{indent}{total} = None")
                    self._sum_of_input[ph] = self._sum_into[made] = total
        super()._emit_while(node, v, args, indent)

    def emit_graph(self, graph: Graph, scope: _Scope, indent: str) -> list[str]:
        plans = plan_segments(graph, self.mode, self.target, self.exact_sums)
        if not plans:
            return super().emit_graph(graph, scope, indent)
        by_segment = {id(p.segment): p for p in plans}
        resident = _device_resident(graph, plans)
        for item in schedule(graph, [p.segment for p in plans]):
            if isinstance(item, Segment):
                plan = by_segment[id(item)]
                idx = len(self.plans)
                self.plans.append(plan)
                hot = HOT_ELEMENTS if self.mode == "auto" else 0
                keep = frozenset(i for i, o in enumerate(item.outputs) if o in resident)
                writer = _RunnerWriter(plan, idx, self.namer, hot, keep)
                runner = writer.runner()
                self.functions.append("\n".join(writer.lines))
                ins = ", ".join(scope.var(n) for n in item.inputs)
                outs = "".join(scope.var(o) + ", " for o in item.outputs)
                self.lines.append(f"{indent}{outs} = {runner}({ins})")
            else:
                self.emit_node(item, scope, indent)
        return [scope.var(o) for o in graph.outputs]


def _reads_in_place(shape: tuple | None, domain: tuple) -> bool:
    """Can a CUDA kernel over ``domain`` read a device array of ``shape`` as it is: the same
    rank, every size equal to the domain's or 1 (a broadcast dim, read at index 0)?"""
    if shape is None or len(shape) != len(domain) or not shape:
        return False
    return all(s == 1 or (s is not None and s == d) for s, d in zip(shape, domain))


def _device_resident(graph: Graph, plans: list[SegmentPlan]) -> set[Node]:
    """CUDA segment outputs that may stay on the device: every reader is another CUDA segment
    taking it as an array it can read in place (:func:`_reads_in_place`), and the graph does
    not return it. (Readers in a ``cond``/``while`` body read through the control-flow node,
    host code.)"""
    cuda_plans = [p for p in plans if p.ksrc.target == "cuda"]
    if not cuda_plans:
        return set()
    seg_of = {n: p for p in plans for n in p.segment.nodes}
    outputs = set(graph.outputs)
    users = graph.users()
    resident: set[Node] = set()
    for p in cuda_plans:
        for o in p.segment.outputs:
            if o is p.segment.reduction or o in outputs:
                continue
            readers = [u for u in users.get(o, ()) if seg_of.get(u) is not p]
            ok = bool(readers)
            for u in readers:
                q = seg_of.get(u)
                if q is None or q.ksrc.target != "cuda" or \
                        q.segment.inputs.index(o) in q.ksrc.scalar_inputs or \
                        not _reads_in_place(o.aval.shape, q.segment.domain):
                    ok = False
                    break
            if ok:
                resident.add(o)
    return resident


_CODE: dict[str, Any] = {}  # executor source -> compiled code (retraces repeat the text)


def compile_fused(graph: Graph, tree: TreeNode, n_params: int, mode: str = "auto",
                  target: str = "cpu", filename: str = "<kx-fused>", exact_sums: bool = False,
                  stats: dict[str, int] | None = None
                  ) -> tuple[Callable[..., Any], str, list[SegmentPlan]]:
    """Generate and exec the fused executor; returns ``(run, source, plans)``.

    ``exact_sums``: plain float sums run as :func:`parallel_sum` (NumPy's bits) instead of
    fused lanes; ``stats`` (if given) receives ``parallel_sums``, how many were emitted."""
    namer = _Namer()
    namer.globals.update(_empty=np.empty, _full=np.full, _bshape=np.broadcast_shapes, _bt=_bt,
                         _cuda_run=_cuda_run,
                         _run_parallel=run_parallel, _take=take_output,
                         _keep=keep_output, _deferred=COMPILER.deferred,
                         _flush=COMPILER.flush, _psum=parallel_sum, _pu=parallel_ufunc,
                         _pus=parallel_ufunc_sum,
                         _host=_to_host)
    emitter = _FusedEmitter(namer, mode, target, exact_sums)
    scope = _Scope("v_")
    params = ", ".join(f"p{i}" for i in range(n_params))
    emitter.lines.append(f"def run({params}):")
    emitter.emit_graph(graph, scope, "    ")
    result = _output_expr(tree, graph, namer, scope)
    if emitter.plans:
        emitter.lines.append(f"    _r = {result}")
        # Kernels requested during this call start compiling now that its work is done.
        emitter.lines.append("    if _deferred:")
        emitter.lines.append("        _flush()")
        emitter.lines.append("    return _r")
    else:
        emitter.lines.append(f"    return {result}")
    source = "\n\n".join(emitter.functions + ["\n".join(emitter.lines)]) + "\n"
    code = _CODE.get(source)
    if code is None:
        code = compile(source, filename, "exec")
        if len(_CODE) > 1000:
            _CODE.clear()
        _CODE[source] = code
    exec(code, namer.globals)
    if stats is not None:
        stats["parallel_sums"] = emitter.parallel_sums
        stats["parallel_ufuncs"] = emitter.parallel_ufuncs
        if emitter.parallel_ufunc_size is not None:
            stats["parallel_ufunc_size"] = emitter.parallel_ufunc_size
    run = namer.globals["run"]
    if any(p.ksrc.target == "cuda" for p in emitter.plans):
        run = _with_call_scope(run)
    return run, source, emitter.plans


def _with_call_scope(run: Callable[..., Any]) -> Callable[..., Any]:
    """``run`` inside a CUDA :class:`~.numba_cuda.call_scope` (each graph input goes to the
    device once per call); the CUDA backend, and Numba with it, imported at the first call."""
    scope: Any = None

    def run_cuda(*params: Any) -> Any:
        nonlocal scope
        if scope is None:
            from .numba_cuda import call_scope as scope
        with scope(params):
            return run(*params)

    return run_cuda


def segment_reports(plans: Sequence[SegmentPlan], backend: str) -> list[dict[str, Any]]:
    """What the UI shows per fused segment (kept current as kernels compile)."""
    reports = []
    for i, p in enumerate(plans):
        seg = p.segment
        report = SegmentReport({
            "id": i, "kind": seg.kind, "backend": backend,
            "ops": [n.op.value for n in seg.nodes], "nodes": [n.name for n in seg.nodes],
            "inputs": [n.name for n in seg.inputs], "outputs": [n.name for n in seg.outputs],
            "kernel": p.ksrc.key, "min_size": p.decision.min_size,
            "reason": p.decision.reason, "state": "pending", "variants": {},
            "compile_ms": 0.0, "cache": None, "error": None,
        })
        p.handle.reports[id(report)] = report
        p.handle._update_reports()
        reports.append(report)
    return reports


__all__ = ["COMPILER", "KernelHandle", "RECYCLE_BYTES", "SegmentPlan", "compile_fused",
           "handle_for", "keep_output", "parallel_sum", "parallel_ufunc",
           "parallel_ufunc_sum", "plain_float_sum",
           "plan_segments", "run_parallel", "segment_reports", "set_synchronous", "synchronous",
           "take_output", "wait_for_kernels"]
