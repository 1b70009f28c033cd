"""Kernel handles and the background compiler: when and where fused kernels get compiled.

A :class:`KernelHandle` stands for one generated kernel module (shared by every segment, trace
and Function with the same kernel text) and its compiled variants (``flat``, ``nd``, ``cuda``,
and a whole-graph function's ``graph_c``/``graph_a``). Runners read a variant on every call
(None until compiled) and ask :meth:`KernelHandle.need` for a missing one.

Compilation never blocks a call, and this module never imports Numba: a variant is requested
the first time a runner needs it and compiled by one background thread (:data:`COMPILER`),
started when the requesting call has returned (so the first call's NumPy work does not compete
with the compiler for the GIL); the runner switches to the kernel on the first call after it is
ready. :func:`set_synchronous` (or ``KERNEL_EXT_SYNC_COMPILE=1``) compiles in the calling
thread instead, for tests and benchmarks. Each handle keeps the UI's segment reports
(:func:`segment_reports`) current as its state changes.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import queue
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .codegen import KernelSource

if TYPE_CHECKING:  # (the fused executor imports this module, not the other way round)
    from .fused import SegmentPlan

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
        self.graph_c: Any = None  # whole-graph function, C-contiguous array arguments
        self.graph_a: Any = None  # ... any-layout array arguments
        self.graph_args: dict[str, tuple] = {}
        self.state: dict[str, str] = {}
        self.compile_ms: dict[str, float] = {}
        self.cache: dict[str, str] = {}
        self.error: str | None = None
        self.reports: weakref.WeakValueDictionary[int, SegmentReport] = (
            weakref.WeakValueDictionary()
        )
        self.work: dict[str, int] = {}
        self._lock = threading.Lock()
        self._had_reports = False

    def orphaned(self) -> bool:
        """Did executables ask for this kernel (its segment reports) and are all gone?"""
        return self._had_reports and not self.reports

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
            self._had_reports = bool(self.reports)
            self.update_reports()
            COMPILER.defer(self, variant)
        return None

    def need_graph(self, args: tuple, writable: frozenset[int] = frozenset()) -> Any:
        """Request the whole-graph function for arguments like ``args`` (its signature is
        made from their dtypes, ranks and layout; array arguments are typed read-only, so
        read-only arrays are taken too, except those at the positions in ``writable``: the
        function writes into them)."""
        contiguous = all(d[0] != "array" or d[3] == "C" for d in map(describe_argument, args))
        variant = "graph_c" if contiguous else "graph_a"
        if variant not in self.graph_args:
            descr = []
            for i, a in enumerate(args):
                d = describe_argument(a)
                if d[0] == "array" and variant == "graph_a":
                    d = d[:3] + ("A",)
                if d[0] == "array" and i in writable:
                    d = d + ("writable",)
                descr.append(d)
            self.graph_args[variant] = tuple(descr)
        return self.need(variant)

    def compile(self, variant: str) -> None:
        """Compile (or load from the disk cache) one variant; idempotent and thread-safe."""
        with self._lock:
            if getattr(self, variant) is not None or self.state.get(variant) == "failed":
                return
            self.state[variant] = "compiling"
            self.update_reports()
            t0 = time.perf_counter()
            try:
                if self.ksrc.target == "cuda":
                    from . import numba_cuda

                    compiled, hit = numba_cuda.compile_variant(self.ksrc, variant)
                else:
                    from . import numba_cpu

                    compiled, hit = numba_cpu.compile_variant(
                        self.ksrc, variant, self.graph_args.get(variant)
                    )
            except Exception as e:  # a kernel that fails to compile runs through NumPy
                self.state[variant] = "failed"
                self.error = f"{type(e).__name__}: {e}"
                self.update_reports()
                warnings.warn(
                    f"kernel_ext: a fused kernel failed to compile and its ops run "
                    f"through NumPy ({self.error.splitlines()[0][:300]})",
                    RuntimeWarning,
                    stacklevel=2,
                )
                return
            self.compile_ms[variant] = (time.perf_counter() - t0) * 1000.0
            self.cache[variant] = "hit" if hit else "miss"
            setattr(self, variant, compiled)
            self.state[variant] = "ready"
            self.update_reports()

    def update_reports(self) -> None:
        """Copy this handle's compile state into every report dict that shows it."""
        states = dict(self.state)
        for report in list(self.reports.values()):
            report["state"] = _summary_state(states)
            report["variants"] = states
            report["compile_ms"] = round(sum(self.compile_ms.values()), 3)
            report["cache"] = ",".join(f"{k}:{v}" for k, v in sorted(self.cache.items())) or None
            report["error"] = self.error
        _state_changed()


logger = logging.getLogger(__name__)

#: Called (no arguments, on the compiling thread) whenever a kernel's state changes: the
#: engine turns it into a ``"compile"`` event, so views idle between cells still see a kernel
#: that finished compiling in the background.
_STATE_LISTENERS: list[Callable[[], None]] = []


def on_state_change(listener: Callable[[], None]) -> Callable[[], None]:
    """Call ``listener()`` after every change of a kernel's compile state; returns a function
    that stops it."""
    _STATE_LISTENERS.append(listener)

    def stop() -> None:
        if listener in _STATE_LISTENERS:
            _STATE_LISTENERS.remove(listener)

    return stop


def _state_changed() -> None:
    for listener in list(_STATE_LISTENERS):
        try:
            listener()
        except Exception:  # noqa: BLE001 - an observer must never break a compile
            logger.debug("kernel_ext: a compile-state listener failed", exc_info=True)


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


def handle_of(target: str, key: str) -> KernelHandle | None:
    """The handle of the kernel whose source hash is ``key`` (a report's ``kernel``), if any."""
    return _HANDLES.get((target, key))


class SegmentReport(dict):
    """One fused segment as the UI sees it (a dict, weakly referenced by its kernel handle,
    which keeps its compile state current)."""


#: ``auto`` compiles a kernel once its calls have processed this many elements (about a
#: millisecond of NumPy work, against a second of compilation).
HOT_ELEMENTS = 1 << 20


class _Compiler:
    """A single background thread compiling queued kernel variants in order, fused segment
    kernels before whole-graph functions (a tier-up's function may take a minute to
    compile; a segment kernel a new function waits for, a second).

    Requests made during a call are *deferred* (:meth:`defer`) and handed to the thread by
    :meth:`flush`, which the executor calls when the call returns.
    """

    def __init__(self) -> None:
        self.deferred: list[tuple[KernelHandle, str]] = []
        #: (priority, order, request): 0 segment kernels, 1 whole graphs; -1 the stop
        self._queue: queue.PriorityQueue[tuple[int, int, Any]] = queue.PriorityQueue()
        self._order = itertools.count()
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
            priority = 1 if item[1].startswith("graph") else 0
            self._queue.put((priority, next(self._order), item))
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(
                target=self._work, name="kernel_ext-compiler", daemon=True
            )
            self._thread.start()

    def _work(self) -> None:
        # atexit runs its handlers last-registered first: registered again now that Numba
        # is imported (its handlers and weakref's finalizers, which dispose of LLVM objects,
        # were registered when it was), the wait for a running compile comes before them.
        # (Numba through numba_decorators: its errors then leave sys.stdout alone.)
        from . import numba_decorators  # noqa: F401

        atexit.register(self.shutdown)
        while True:
            item = self._queue.get()[2]
            if item is None:
                return
            handle, variant = item
            try:
                if handle.orphaned():
                    # every executable that asked for it is gone (a redefined function, a
                    # finished test): compiling it would only hold Numba's lock, which a
                    # caller compiling in its own thread (a Dask block) waits for
                    with handle._lock:
                        if handle.state.get(variant) == "queued":
                            del handle.state[variant]
                    continue
                handle.compile(variant)
            finally:
                with self._idle:
                    self._busy -= 1
                    self._idle.notify_all()

    def shutdown(self, timeout: float = 300.0) -> None:
        """At interpreter exit: drop queued work and let a running compile finish. The wait
        is long on purpose: a compile still inside LLVM when the interpreter tears down
        aborts the process (an LLVM assertion; seen once at the end of the test suite, with
        a whole-graph compile running), so exit waits for it."""
        self.deferred[:] = []
        try:
            while True:
                self._queue.get_nowait()
                with self._idle:
                    self._busy -= 1
        except queue.Empty:
            pass
        if self._thread is not None and self._thread.is_alive():
            self._queue.put((-1, next(self._order), None))
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


def segment_reports(plans: Sequence[SegmentPlan], backend: str) -> list[dict[str, Any]]:
    """What the UI shows per fused segment (kept current as kernels compile)."""
    reports: list[dict[str, Any]] = []
    for i, p in enumerate(plans):
        seg = p.segment
        report = SegmentReport(
            {
                "id": i,
                "kind": seg.kind,
                "backend": backend,
                "ops": [n.op.value for n in seg.nodes],
                "nodes": [n.name for n in seg.nodes],
                "inputs": [n.name for n in seg.inputs],
                "outputs": [n.name for n in seg.outputs],
                "kernel": p.ksrc.key,
                "min_size": p.decision.min_size,
                "reason": p.decision.reason,
                "state": "pending",
                "variants": {},
                "compile_ms": 0.0,
                "cache": None,
                "error": None,
            }
        )
        p.handle.reports[id(report)] = report
        p.handle.update_reports()
        reports.append(report)
    return reports


def describe_argument(value: Any) -> tuple:
    """What a whole-graph function's compiled signature needs to know about one argument:
    ``("array", dtype, ndim, "C" or "A")`` or ``("scalar", dtype)``."""
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return ("array", value.dtype.str, value.ndim, "C" if value.flags.c_contiguous else "A")
    return ("scalar", np.asarray(value).dtype.str)


__all__ = [
    "COMPILER",
    "HOT_ELEMENTS",
    "KernelHandle",
    "SegmentReport",
    "describe_argument",
    "handle_for",
    "handle_of",
    "segment_reports",
    "set_synchronous",
    "synchronous",
    "wait_for_kernels",
]
