"""Tiered ``auto``: a hot trace moves to the whole-graph compiled executor when its own calls
show that it is faster, as a JIT tiers up.

``backend="auto"`` starts every trace on the fused executor (the NumPy executor with fused
Numba segments: nothing to wait for). A trace that has been called :data:`HOT_CALLS` times
asks for the whole graph compiled into one Numba function (the ``jit_compile=True`` path,
:mod:`.whole_graph`) in the background. Once that is compiled, the next :data:`TRIAL_CALLS`
calls run *both* executors on the same arguments, alternating which goes first, and keep the
fused result:

* if any result differs from the fused one in any bit, the whole-graph executor is dropped
  (``auto`` never changes a result mid-session);
* otherwise the faster one serves from then on: the whole graph when its median time is at
  most :data:`MIN_GAIN` of the fused one, else the fused executor.

The decision is remembered per compiled program (a retrace of the same code at the same
sizes does not try again), and the ConcreteFunction is told so that cache hits call the
winner directly (:attr:`Tier.listeners`). Only traces without effects tier up (no variable,
random or opaque op, no container argument changed): running them twice during the trial is
unobservable. A trace that updates array arguments in place (written back, as NumPy's
``x[i] = v`` is) tiers up too: during the trial the whole graph runs on copies of the
arguments, and the updated copies must equal the caller's arrays to the bit as well.
The monitor, the sidebar and ``%retrace_report`` show :attr:`Tier.note`.
"""

from __future__ import annotations

import copy
import statistics
import threading
import time
import warnings
from typing import Any, Callable

import numpy as np

from ..ir import Graph, OpGroup
from ..ir.graph import subgraphs
from ..trace.pytree import TreeNode
from .executable import Executable

#: Calls of a trace before its whole-graph executor is asked for.
HOT_CALLS = 32
#: Calls that run both executors once the whole graph is compiled.
TRIAL_CALLS = 12
#: The whole graph must take at most this share of the fused executor's time to serve.
MIN_GAIN = 0.85
#: Graphs with fewer ops than this never tier: one compiled call costs more than the
#: executor's few NumPy calls (``a + b``), and the compile would only take the cores.
MIN_OPS = 2

#: Decisions already made, by whole-graph program: ("whole" | "fused", note).
_DECIDED: dict[str, tuple[str, str]] = {}
_DECIDED_LOCK = threading.Lock()


def worth_it(graph: Graph) -> bool:
    """Enough ops (sub-graphs counted) that one compiled call could beat the executor."""
    return graph.count_ops() >= MIN_OPS


def effects(graph: Graph, tree: TreeNode) -> str | None:
    """What a second run of the trace could change: ``"none"``; ``"arguments"`` when it only
    writes new contents into array arguments (a trial can run on copies of them); None when
    it has other effects (a stateful or opaque op, sub-graphs included, or a container
    argument replayed), which rule tiering out."""
    def ok(g: Graph) -> bool:
        for node in g.nodes:
            if node.op.group in (OpGroup.STATEFUL, OpGroup.OPAQUE):
                return False
            if any(not ok(s) for s in subgraphs(node)):
                return False
        return True

    def kinds(t: TreeNode) -> set[str]:
        found = {t.kind}
        for c in t.children or ():
            found |= kinds(c)
        return found
    if not ok(graph):
        return None
    found = kinds(tree)
    if "replay" in found:
        return None
    return "arguments" if found & {"writeback", "input"} else "none"



class Tier:
    """The tiering state of one executable; :meth:`run` is what the trace calls."""

    def __init__(self, base: Executable, make_whole: Callable[[], Executable],
                 updates_arguments: bool = False) -> None:
        self.base = base
        #: The trace writes into its array arguments: the trial's second run gets copies.
        self.updates_arguments = updates_arguments
        self._base_run = base.run
        self._make_whole = make_whole
        self.whole: Executable | None = None
        self.calls = 0
        self.state = "counting"   # counting, compiling, trial, whole, fused
        self.note = f"fused; tiers up after {HOT_CALLS} calls if the whole graph is faster"
        self.samples: tuple[list[int], list[int]] = ([], [])
        #: Called with the winning run function once decided (the ConcreteFunction
        #: retargets its cache hits).
        self.listeners: list[Callable[[Callable[..., Any]], None]] = []
        self._lock = threading.Lock()

    # -- the call ---------------------------------------------------------------------------
    def run(self, *params: Any) -> Any:
        state = self.state
        if state == "counting":
            self.calls += 1
            if self.calls >= HOT_CALLS:
                self._start(params)
            return self._base_run(*params)
        if state == "trial":
            return self._trial(params)
        if state == "whole":
            return self.whole.run(*params)  # type: ignore[union-attr]
        return self._base_run(*params)

    def _start(self, params: tuple) -> None:
        with self._lock:
            if self.state != "counting":
                return
            self.state = "compiling"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                whole = self._make_whole()
        except Exception as e:  # noqa: BLE001 - the fused executor keeps serving
            self._finish("fused", f"fused (whole graph failed: {type(e).__name__})")
            return
        report = whole.segments[0] if whole.segments else {}
        if report.get("kind") != "whole-graph" or report.get("state") == "unsupported":
            self._finish("fused", f"fused (whole graph unsupported: {report.get('reason')})")
            return
        key = str(report.get("kernel"))
        with _DECIDED_LOCK:
            known = _DECIDED.get(key)
        self.whole = whole
        if known is not None:  # this program was measured before
            self._finish(*known, remember=False)
            return
        self._key = key
        try:  # asks for the compiled function (in the background)
            whole.run(*self._private(params))
        except Exception as e:  # noqa: BLE001 - the fused executor keeps serving
            self._finish("fused", f"fused (whole graph failed: {type(e).__name__})")
            return
        self.state = "trial"

    def _private(self, params: tuple) -> tuple:
        """``params`` itself, or copies of it when the trace writes into its arguments."""
        return copy.deepcopy(params) if self.updates_arguments else params

    def _trial(self, params: tuple) -> Any:
        whole = self.whole
        assert whole is not None
        state = whole.segments[0].get("state")
        if state != "ready":  # (_start asked for it; the fused executor serves meanwhile)
            if state == "failed":
                self._finish("fused", "fused (whole graph failed to compile)")
            return self._base_run(*params)
        fused_t, whole_t = self.samples
        try:
            mine = self._private(params)
        except Exception:  # noqa: BLE001 - an argument that cannot be copied: no trial
            self._finish("fused", "fused (its arguments cannot be copied for a trial)")
            return self._base_run(*params)
        if len(fused_t) % 2:  # alternate which runs first (caches, clocks)
            b, tb = _timed(whole.run, mine)
            a, ta = _timed(self._base_run, params)
        else:
            a, ta = _timed(self._base_run, params)
            b, tb = _timed(whole.run, mine)
        fused_t.append(ta)
        whole_t.append(tb)
        if not same(a, b) or self.updates_arguments and not same(params, mine):
            self._finish("fused", "fused (the whole graph's results differ in the last bits)")
            return a
        if len(fused_t) >= TRIAL_CALLS:
            f, w = statistics.median(fused_t), statistics.median(whole_t)
            if w <= MIN_GAIN * f:
                self._finish("whole", f"whole graph ({f / max(w, 1):.1f}× faster than fused: "
                                      f"{w / 1e3:.1f} vs {f / 1e3:.1f} µs a call)")
            else:
                self._finish("fused", f"fused (whole graph not faster: {w / 1e3:.1f} vs "
                                      f"{f / 1e3:.1f} µs a call)")
        return a

    def _finish(self, winner: str, note: str, remember: bool = True) -> None:
        key = getattr(self, "_key", None)
        if remember and key is not None and self.whole is not None:
            with _DECIDED_LOCK:
                _DECIDED[key] = (winner, note)
        self.note = note
        self.state = winner
        run = self.whole.run if winner == "whole" and self.whole is not None \
            else self._base_run
        if winner == "whole" and self.whole is not None:
            self.base.backend = f"{self.whole.backend} whole-graph (tiered)"
        for listener in list(self.listeners):
            try:
                listener(run)
            except Exception:  # noqa: BLE001 - a listener must never break a call
                pass


def _timed(run: Callable[..., Any], params: tuple) -> tuple[Any, int]:
    t0 = time.perf_counter_ns()
    result = run(*params)
    return result, time.perf_counter_ns() - t0


def same(a: Any, b: Any) -> bool:
    """Equal to the bit: the same structure, dtypes, shapes and bytes (NaN payloads and
    signed zeros included)."""
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (np.ndarray, np.generic, float, complex)):
        # (Python floats too: 0.0 == -0.0 and nan != nan, but their bits differ / agree)
        if type(a) is not type(b) or np.shape(a) != np.shape(b) or \
                np.asarray(a).dtype != np.asarray(b).dtype:
            return False
        return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    try:
        return a is b or bool(type(a) is type(b) and a == b)
    except Exception:  # noqa: BLE001
        return False


def tiered(base: Executable, make_whole: Callable[[], Executable],
           updates_arguments: bool = False) -> Executable:
    """``base`` with tier-up: its ``run`` counts calls and may move to ``make_whole()``;
    ``updates_arguments``: the trace writes into its array arguments (see :class:`Tier`)."""
    tier = Tier(base, make_whole, updates_arguments)
    base.run = tier.run
    base.tier = tier
    return base


__all__ = ["HOT_CALLS", "MIN_GAIN", "MIN_OPS", "TRIAL_CALLS", "Tier", "effects", "same",
           "tiered", "worth_it"]
