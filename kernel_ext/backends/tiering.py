"""Tiered ``auto``: a hot trace moves to the whole-graph compiled executor when its own calls
show that it is faster, as a JIT tiers up.

``backend="auto"`` starts every trace on the fused executor (the NumPy executor with fused
Numba segments: nothing to wait for). A trace that has been called :data:`HOT_CALLS` times,
or has spent :data:`HOT_NS` in its calls (a long loop is hot sooner; a graph holding a loop
is hot on its first call, :data:`LOOP_CLEAR_WIN`), asks for the whole graph
compiled into one Numba function (the ``jit_compile=True`` path, :mod:`.whole_graph`) in the
background. Once that is compiled, the next :data:`TRIAL_CALLS` calls (fewer for slow calls:
:data:`TRIAL_NS`) run *both* executors on the same arguments, alternating which goes first,
and keep the fused result:

* if any result differs from the fused one in any bit, the whole-graph executor is dropped
  (``auto`` never changes a result mid-session);
* otherwise the faster one serves from then on: the whole graph when its median time is at
  most :data:`MIN_GAIN` of the fused one, else the fused executor.

The decision is remembered per compiled program (a retrace of the same code at the same
sizes does not try again), also in the disk cache (a restarted kernel does not either), and
the ConcreteFunction is told so that cache hits call the winner directly
(:attr:`Tier.listeners`). Only traces whose second run a trial can make unobservable tier
up: no variable or opaque op, draws only as :func:`hoist_draws` can make them. A trace that
updates array arguments in place (written back, as NumPy's ``x[i] = v`` is) or gives a list,
dict or dataclass argument new items tiers up too: during the trial the whole graph runs on
copies of the arguments, and the updated copies must equal the caller's arguments to the bit
as well.
The monitor, the sidebar and ``%retrace_report`` show :attr:`Tier.note`.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import os
import statistics
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from ..ir import Graph, Node, OpGroup, OpKind
from ..ir.graph import subgraphs
from ..ir.interpreter import LOWER
from ..ir.params import CallParams, ConstantParams
from ..ir.structure import TreeNode
from ..trace.random_calls import generator_state, set_generator_state
from .executable import Executable

#: Calls of a trace before its whole-graph executor is asked for.
HOT_CALLS = 32
#: ... or time spent in its calls (ns), whichever comes first: a call that runs a long
#: loop is hot after a few calls, as a JIT's back-edge counter makes a loop hot.
HOT_NS = 200_000_000
#: Calls that run both executors once the whole graph is compiled ...
TRIAL_CALLS = 12
#: ... or fewer, down to TRIAL_MIN, once the trial has taken TRIAL_NS (slow calls need few
#: samples, and each trial call runs both executors).
TRIAL_MIN = 3
TRIAL_NS = 1_000_000_000
#: The whole graph must take at most this share of the fused executor's time to serve
#: (both give the same bits: this only keeps a tie from being decided by noise).
MIN_GAIN = 0.95
#: Part of every remembered decision's key: raised when the executors' Python side changes
#: (a decision measured with the old one must be measured again).
DECISIONS_VERSION = "2"
#: Whole-graph functions longer than this (lines of generated source) never tier: Numba
#: takes ~50 ms a line (an unrolled 40-step stencil, 1083 lines: about a minute of a core;
#: it then ran 0.06x eager), and while it compiles no other kernel can (segment kernels are
#: queued first, but one compile runs at a time). As HotSpot's ``DontCompileHugeMethods``;
#: ``jit_compile=True`` still compiles.
MAX_LINES = 1200
#: A graph holding a loop asks for its whole graph on its first call: the fused executor
#: runs a loop's iterations from Python (microseconds each), the compiled function as a
#: native loop (nanoseconds), so there is nothing to wait for. Its trial ends after one call
#: when the whole graph took at most this share of the fused executor's time (a gap that
#: noise on a loaded machine does not make).
LOOP_CLEAR_WIN = 0.5
#: Graphs with fewer ops than this never tier: one compiled call costs more than the
#: executor's few NumPy calls (``a + b``), and the compile would only take the cores.
MIN_OPS = 2

#: Decisions already made, by whole-graph program: ("whole" | "fused", note).
_DECIDED: dict[str, tuple[str, str]] = {}
_DECIDED_LOCK = threading.Lock()
#: Decisions are also kept in the disk cache (``<cache>/tiers``), so a later session (a
#: restarted kernel) serves a program measured before without a new trial.
ON_DISK = True


def _decision_file(key: str) -> Path:
    from .kernel_cache import cache_root, versions_tag

    text = f"{versions_tag()}:{DECISIONS_VERSION}:{key}"
    tag = hashlib.sha256(text.encode()).hexdigest()[:32]
    return cache_root() / "tiers" / f"{tag}.txt"


def recall_decision(key: str) -> tuple[str, str] | None:
    """The decision made for the whole-graph program ``key`` in this process or, with
    :data:`ON_DISK`, in an earlier one (None: never measured)."""
    with _DECIDED_LOCK:
        known = _DECIDED.get(key)
    if known is not None or not ON_DISK:
        return known
    try:
        winner, note = _decision_file(key).read_text(encoding="utf-8").split("\n", 1)
    except (OSError, ValueError):
        return None
    if winner not in ("whole", "fused"):
        return None
    known = (winner, f"{note} (measured in an earlier session)")
    with _DECIDED_LOCK:
        _DECIDED[key] = known
    return known


def remember_decision(key: str, winner: str, note: str) -> None:
    """Keep the decision for ``key`` (in memory; on disk too with :data:`ON_DISK`, written
    to a temporary name and renamed, so a concurrent reader never sees half of it)."""
    with _DECIDED_LOCK:
        _DECIDED[key] = (winner, note)
    if not ON_DISK:
        return
    try:
        path = _decision_file(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(f"{winner}\n{note}")
        os.replace(tmp, path)
    except OSError:  # a read-only or full disk costs a trial next session, nothing more
        pass


def holds_loops(graph: Graph) -> bool:
    """Does ``graph`` (its branches included) hold a graph loop?"""
    return any(
        node.op is OpKind.WHILE or any(holds_loops(g) for g in subgraphs(node))
        for node in graph.nodes
    )


def worth_it(graph: Graph) -> bool:
    """Enough ops (sub-graphs counted) that one compiled call could beat the executor."""
    return graph.count_ops() >= MIN_OPS


def effects(graph: Graph, tree: TreeNode) -> frozenset[str] | None:
    """What a second run of the trace could change, as far as a trial can undo it: the empty
    set for nothing; ``"arguments"`` when it writes new contents into array arguments (the
    trial runs on copies of them); ``"random"`` when it draws random numbers that
    :func:`hoist_draws` can make before the compiled function runs (the trial restores the
    generators' states). A run-time check (``int(x)`` of a NaN, a traced ``assert``) only
    raises: when a trial's run raises, the call is the fused executor's (:meth:`Tier._trial`).
    None for any other effect (a variable, an opaque call, a draw inside
    a loop or branch or from a traced argument): no tiering. A container argument the trace
    changes (a list, dict or dataclass given new items) counts as ``"arguments"``."""
    found: set[str] = set()

    def ok(g: Graph, top: bool) -> bool:
        for node in g.nodes:
            if node.op is OpKind.RANDOM_CALL and top and _hoistable(node):
                found.add("random")
            elif node.op is OpKind.CHECK:
                pass  # raises or does nothing; the trial runs the executor that raises
            elif node.op.group in (OpGroup.STATEFUL, OpGroup.OPAQUE):
                return False
            if any(not ok(s, False) for s in subgraphs(node)):
                return False
        return True

    def kinds(t: TreeNode) -> set[str]:
        out = {t.kind}
        for c in t.children or ():
            out |= kinds(c)
        return out

    if not ok(graph, True):
        return None
    # Container arguments the trace changes (replayed: ``state["n"] = state["n"] + 1``)
    # are arguments it updates too: the trial's second run gets copies of them.
    if kinds(tree) & {"writeback", "input", "replay"}:
        found.add("arguments")
    return frozenset(found)


_RNG_TYPES = (np.random.Generator, np.random.RandomState)


def _hoistable(node: Node) -> bool:
    """A draw whose arguments are all known before the call (constants), from a generator
    the function did not make, giving one array: it can be made before the compiled function
    runs, in program order, with the same numbers."""
    return (
        isinstance(getattr(cast("CallParams", node.params).fn, "__self__", None), _RNG_TYPES)
        and all(a.op is OpKind.CONSTANT for a in node.inputs)
        and node.shape is not None  # (None: no value, several, or unknown rank)
    )


def hoist_draws(graph: Graph, n_params: int) -> tuple[Graph, list[Callable[[], Any]], list[Any]]:
    """``graph`` with each top-level random draw replaced by a new input (parameter number
    ``n_params``, ``n_params + 1``, ...), the callables making those draws in program order,
    and the generators they draw from. Calling the draws and then the new graph with them is
    what the original graph does: the draws depend on no computed value, and nothing else in
    the graph touches a generator (:func:`effects`)."""
    draws: list[Callable[[], Any]] = []
    owners: list[Any] = []

    def hoist(new: Graph, node: Node) -> Node | None:
        if node.op is not OpKind.RANDOM_CALL:
            return None
        made = new.placeholder(
            node.name, node.shape, node.dtype, path=(("arg", n_params + len(draws)),)
        )
        values = [cast("ConstantParams", a.params).value for a in node.inputs]
        draws.append(functools.partial(LOWER[OpKind.RANDOM_CALL](node), *values))
        owner = cast("CallParams", node.params).fn.__self__
        if not any(o is owner for o in owners):
            owners.append(owner)
        return made

    new = graph.rebuilt(substitute=hoist)
    return new, draws, owners


def with_draws(whole: Executable, draws: list[Callable[[], Any]]) -> Executable:
    """``whole`` (compiled from :func:`hoist_draws`'s graph) called with the draws made
    first, in program order, after the call's own parameters."""
    if not draws:
        return whole
    inner = whole.run
    names = ", ".join(f"_d{i}()" for i in range(len(draws)))
    namespace: dict[str, Any] = {"_inner": inner, **{f"_d{i}": d for i, d in enumerate(draws)}}
    exec(
        compile(f"def run(*params):\n    return _inner(*params, {names})\n", "<kx-draws>", "exec"),
        namespace,
    )
    # (no direct entry: the draws must be made per call, before the compiled function runs)
    return dataclasses.replace(whole, run=namespace["run"], direct=None)


class Tier:
    """The tiering state of one executable; :meth:`run` is what the trace calls."""

    def __init__(
        self,
        base: Executable,
        make_whole: Callable[[], Executable],
        updates_arguments: bool = False,
        rngs: Sequence[Any] = (),
        loops: bool = False,
    ) -> None:
        self.base = base
        #: The graph holds a loop: hot from its first call (:data:`LOOP_CLEAR_WIN`).
        self.loops = loops
        #: The trace writes into its array arguments: the trial's second run gets copies.
        self.updates_arguments = updates_arguments
        #: The generators the trace draws from: the trial's second run starts from the
        #: states the first one started from, and must leave the same states.
        self.rngs = tuple(rngs)
        self._base_run = base.run
        self._make_whole = make_whole
        self.whole: Executable | None = None
        self.calls = 0
        #: Time spent in the calls counted so far (ns).
        self.spent = 0
        self.state = "counting"  # counting, compiling, trial, whole, fused
        self.note = (
            f"fused; tiers up after {HOT_CALLS} calls or {HOT_NS // 1_000_000} ms "
            "of calls if the whole graph is faster"
        )
        if loops:
            self.note = (
                "fused; its loops are compiled as one function from the first "
                "call, which serves once ready if it is faster"
            )
        self.samples: tuple[list[int], list[int]] = ([], [])
        #: Called with the winning run function once decided (the ConcreteFunction
        #: retargets its cache hits).
        self.listeners: list[Callable[[Callable[..., Any]], None]] = []
        self._lock = threading.Lock()
        self._known: tuple[str, str] | None = None  # a decision recalled, to take once ready

    # -- the call ---------------------------------------------------------------------------
    def run(self, *params: Any) -> Any:
        state = self.state
        if state == "counting":
            self.calls += 1
            if self.loops or self.calls >= HOT_CALLS or self.spent >= HOT_NS:
                self._start(params)
                return self._base_run(*params)
            t0 = time.perf_counter_ns()
            try:
                return self._base_run(*params)
            finally:
                self.spent += time.perf_counter_ns() - t0
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
        if report.get("lines", 0) > MAX_LINES:
            self._finish(
                "fused",
                f"fused (whole graph too large to compile in the "
                f"background: {report['lines']} lines, limit {MAX_LINES})",
            )
            return
        key = str(report.get("kernel"))
        known = recall_decision(key)
        self.whole = whole
        if known is not None and known[0] == "fused":  # this program was measured before
            self._finish(*known, remember=False)
            return
        # A program measured faster whole before still waits for its function: until then
        # the fused executor serves (the whole graph's own fallback would cost more), and
        # _trial takes the decision as soon as it is compiled, without sampling.
        self._known = known
        self._key = key
        states = [generator_state(g) for g in self.rngs]
        # asks for the compiled function (in the background): its runner's request()
        # runs nothing; a wrapped runner (draws made first) is run once on private copies
        request = getattr(whole.run, "__globals__", {}).get("request")
        try:
            if request is not None:
                request(*params)
            else:
                whole.run(*self._private(params))
        except Exception as e:  # noqa: BLE001 - the fused executor keeps serving
            self._finish("fused", f"fused (whole graph failed: {type(e).__name__})")
            return
        finally:  # (this run's draws are not the call's: the call's own run makes them)
            for g, st in zip(self.rngs, states):
                set_generator_state(g, st)
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
        if self._known is not None:
            self._finish(*self._known, remember=False)
            return self._base_run(*params)
        fused_t, whole_t = self.samples
        try:
            mine = self._private(params)
        except Exception:  # noqa: BLE001 - an argument that cannot be copied: no trial
            self._finish("fused", "fused (its arguments cannot be copied for a trial)")
            return self._base_run(*params)
        fused_first = not len(fused_t) % 2  # alternate which runs first (caches, clocks)
        start = [generator_state(g) for g in self.rngs]
        # A run that raises (a failed check, NumPy's error) leaves the call to the fused
        # executor: its error, and the arguments as NumPy leaves them (the whole graph ran
        # on copies). Only one executor raising is a difference: the fused one serves.
        if fused_first:
            a, ta = _timed(self._base_run, params)
        else:
            try:
                b, tb = _timed(whole.run, mine)
            except Exception:  # noqa: BLE001 - the fused executor's run raises it
                for g, st in zip(self.rngs, start):
                    set_generator_state(g, st)
                a = self._base_run(*params)
                self._finish(
                    "fused", "fused (the whole graph raised where the fused executor did not)"
                )
                return a
        end = [generator_state(g) for g in self.rngs]
        for g, st in zip(self.rngs, start):  # the second run draws the same numbers
            set_generator_state(g, st)
        if fused_first:
            try:
                b, tb = _timed(whole.run, mine)
            except Exception:  # noqa: BLE001 - the fused executor's result stands
                self._finish(
                    "fused", "fused (the whole graph raised where the fused executor did not)"
                )
                return a
        else:
            try:
                a, ta = _timed(self._base_run, params)
            except Exception:
                self._finish(
                    "fused", "fused (the whole graph did not raise where the fused executor did)"
                )
                raise
        fused_t.append(ta)
        whole_t.append(tb)
        if (
            not same(a, b)
            or (self.updates_arguments and not same(params, mine))
            or not same(end, [generator_state(g) for g in self.rngs])
        ):
            self._finish("fused", "fused (the whole graph's results differ in the last bits)")
            return a
        if self.loops and tb <= LOOP_CLEAR_WIN * ta:
            self._finish(
                "whole",
                f"whole graph ({ta / max(tb, 1):.1f}× faster than fused: "
                f"{tb / 1e3:.1f} vs {ta / 1e3:.1f} µs a call)",
            )
            return a
        if len(fused_t) >= TRIAL_CALLS or (
            len(fused_t) >= TRIAL_MIN and sum(fused_t) + sum(whole_t) >= TRIAL_NS
        ):
            f, w = statistics.median(fused_t), statistics.median(whole_t)
            if w <= MIN_GAIN * f:
                self._finish(
                    "whole",
                    f"whole graph ({f / max(w, 1):.1f}× faster than fused: "
                    f"{w / 1e3:.1f} vs {f / 1e3:.1f} µs a call)",
                )
            else:
                self._finish(
                    "fused",
                    f"fused (whole graph not faster: {w / 1e3:.1f} vs {f / 1e3:.1f} µs a call)",
                )
        return a

    def _finish(self, winner: str, note: str, remember: bool = True) -> None:
        key = getattr(self, "_key", None)
        if remember and key is not None and self.whole is not None:
            remember_decision(key, winner, note)
        self.note = note
        self.state = winner
        run = self.whole.run if winner == "whole" and self.whole is not None else self._base_run
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
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(
            same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    if isinstance(a, (np.ndarray, np.generic, float, complex)):
        # (Python floats too: 0.0 == -0.0 and nan != nan, but their bits differ / agree)
        if (
            type(a) is not type(b)
            or np.shape(a) != np.shape(b)
            or np.asarray(a).dtype != np.asarray(b).dtype
        ):
            return False
        return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    try:
        return a is b or bool(type(a) is type(b) and a == b)
    except Exception:  # noqa: BLE001
        return False


def tiered(
    base: Executable,
    make_whole: Callable[[], Executable],
    updates_arguments: bool = False,
    rngs: Sequence[Any] = (),
    loops: bool = False,
) -> Executable:
    """``base`` with tier-up: its ``run`` counts calls and may move to ``make_whole()``;
    ``updates_arguments``: the trace writes into its array arguments; ``rngs``: the
    generators it draws from; ``loops``: the graph holds a loop (see :class:`Tier`)."""
    tier = Tier(base, make_whole, updates_arguments, rngs, loops)
    base.run = tier.run
    base.tier = tier
    return base


__all__ = [
    "HOT_CALLS",
    "HOT_NS",
    "LOOP_CLEAR_WIN",
    "MAX_LINES",
    "MIN_GAIN",
    "MIN_OPS",
    "TRIAL_CALLS",
    "TRIAL_MIN",
    "TRIAL_NS",
    "Tier",
    "effects",
    "hoist_draws",
    "holds_loops",
    "same",
    "tiered",
    "with_draws",
    "worth_it",
]
