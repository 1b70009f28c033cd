"""The kernel side of the JupyterLab sidebar: the ``kernel_ext.inspector`` comm.

``start(ipython)`` (called by ``%load_ext kernel_ext``) does three things, following
``docs/protocol.md``:

1. registers the comm target ``kernel_ext.inspector`` with the kernel's comm manager; each
   sidebar opens a comm to it, sends ``request_snapshot`` and later ``request_graph``;
2. opens one *announcement* comm towards the lab and keeps it open.  A kernel's comm
   targets cannot be listed (``comm_info_request`` lists open comms), so this comm is how a
   sidebar learns that the extension is loaded, now or after a page reload;
3. keeps the sidebars up to date with throttled ``update`` messages.

What is watched, and how cheaply
--------------------------------
Traces are engine events (:mod:`kernel_ext.engine.events`); cache hits are plain counters on
``Function.stats``, never events, so that a hit stays a dict lookup.  The notebook layer's
one poll thread (:mod:`.activity`, shared with the monitor widgets) calls :meth:`Inspector.poll`
every ``interval`` seconds, but only while a cell runs (between IPython's ``pre_run_cell``
and ``post_run_cell``) or after a trace; each poll compares a small fingerprint per function
and builds the full record only for functions that changed.  A cell's end flushes at once,
so every cell ends with the sidebar up to date.  Updates therefore go out at most every
``interval`` seconds while a cell runs, and once after it.

The facts sent (signature rows, retrace entries, segments, value texts) come from
:mod:`.records`, like those of every other view; this module shapes them into the protocol's
messages (:mod:`.protocol`) and owns the comms.

Trust
-----
Every frontend message passes through :func:`protocol.validate_frontend_message`;
malformed ones are dropped with a logged warning.  Ids in requests are only compared with
the ids this module made; nothing from the frontend is evaluated, imported or used as an
attribute name.  All strings sent are raw text: escaping is the renderer's job.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import comm as comm_package

from ..engine import explain, registry
from ..ir.graph import subgraphs
from . import exporting, nodetext, protocol, records
from .activity import activity
from .cells import CellLocator
from .protocol import (
    Counters,
    FunctionInfo,
    GraphEdge,
    GraphNode,
    GraphPayload,
    GraphSegment,
    RetraceInfo,
    SignatureInfo,
)

__all__ = ["Inspector", "current", "function_id", "function_info", "graph_payload", "start", "stop"]

logger = logging.getLogger(__name__)

#: Seconds between two polls (and so between two updates) while a cell runs.
UPDATE_INTERVAL_S = 0.25

#: Frontend comms kept at most.  A page reload leaves its comm open in the kernel (the
#: browser never closes it), and every update costs one IOPub message per comm, so beyond
#: this a new comm makes room by closing another: the oldest *unanswered* one (it never made
#: a valid request: nothing listens for our answers), else the one idle longest (its latest
#: request is the oldest: a reloaded page's stays at its first snapshot).  A comm in use (a
#: request within :data:`COMM_IN_USE_S`) is never closed: a frontend opening comms in a loop
#: cannot evict the sidebar someone is using; when every comm is in use the new one is
#: refused instead.  A live sidebar whose comm is closed reconnects (it had received
#: messages).
MAX_FRONTEND_COMMS = 32

#: Seconds after its latest valid request during which a frontend comm counts as in use.
COMM_IN_USE_S = 60.0


# --------------------------------------------------------------------------------------------
# Messages: the protocol's dicts, assembled from :mod:`.records`.  Pure functions, so tests
# can call them directly.
# --------------------------------------------------------------------------------------------


def function_info(function: Any, locator: CellLocator | None = None) -> FunctionInfo:
    """The sidebar's record of one ``kx.Function``.

    ``locator`` names the notebook cell code comes from (``"[3]"``): the defining cell and
    every retrace's call site; without one, neither is known.
    """
    locator = locator or CellLocator()
    stats = function.stats
    signatures = [_signature_info(row) for row in records.signature_rows(function)]
    retraces = [_retrace_info(function.name, record, locator) for record in function.retraces]
    trace_ms = _finite(stats.get("trace_ms", 0.0))
    compile_ms = _finite(stats.get("compile_ms", 0.0))
    last_run = stats.get("last_run_us")
    counts = records.call_counts(stats)
    counters: Counters = {
        "calls": counts.calls,
        "traces": counts.traces,
        "cache_hits": counts.cache_hits,
        "failed_calls": counts.failed_calls,
        "trace_ms": trace_ms,
        "compile_ms": compile_ms,
        # Sampled by the engine (one cache hit in 64 is timed): None before the first.
        "last_run_us": None if last_run is None else _finite(last_run),
    }
    cell = locator.defining_cell(function)
    return {
        "id": function_id(function),
        "name": function.name,
        "cell": None if cell is None else f"[{cell}]",
        "counters": counters,
        "signatures": signatures,
        "retraces": retraces,
        "cost_ms": trace_ms + compile_ms,
    }


def _signature_info(row: records.SignatureRow) -> SignatureInfo:
    info: SignatureInfo = {
        "id": row.id,
        "inputs": row.inputs,
        "outputs": row.outputs,
        "last_used": row.last_used,
        "nodes_traced": row.nodes_traced,
        "nodes_optimised": row.nodes_optimised,
        "backend": row.backend_text,
        "served_by": row.served_by,
    }
    # Optional fields are left out when there is nothing to say (older sidebars ignore them).
    if row.tier:
        info["tier"] = row.tier
    if row.compile:
        info["compile"] = row.compile
    if row.compile_state:
        info["compile_state"] = row.compile_state
    if row.dashboard:
        info["dashboard"] = row.dashboard
    return info


def function_id(function: Any) -> str:
    """The protocol id of a Function: its registry number, stable for its lifetime."""
    return f"f-{function.id}"


def graph_payload(concrete_function: Any) -> GraphPayload:
    """The graph of one concrete function, as nodes and data-flow edges.

    Every operation of the (optimised) graph becomes a node: ``op`` is the op kind, ``label``
    the node's name (parameter names for placeholders), ``shape``/``dtype`` its abstract
    value; ``text``, ``kind``, ``note`` and ``output`` say what it computes and how to mark it
    (:mod:`.nodetext`); ``line``/``source`` the line of user code that made it.
    Control-flow ops (cond, while) are one node each, their sub-graphs summarised in the
    label; the ops of their branches and bodies follow as nodes ``inside`` them (their
    parameters left out), so a view can draw a loop as one box holding its body. Segments
    come from the executable (fused kernels), when the backend reports any.
    """
    graph = concrete_function.graph
    outputs = {id(node) for node in graph.outputs}
    fused = records.segments(concrete_function.executable)
    segment_of = {
        name: fused[position].id for name, position in records.segment_index(fused).items()
    }
    nodes: list[GraphNode] = []
    edges: list[GraphEdge] = []
    where: dict[tuple[str, int], str] = {}  # file:line -> "cell [5], line 7", once each

    def add(operations: list[Any], prefix: str, inside: str | None) -> None:
        ids = {id(node): f"{prefix}{index}" for index, node in enumerate(operations)}
        for index, node in enumerate(operations):
            if inside is not None and records.op_name(node) == "placeholder":
                continue  # a branch's or body's parameter: the control-flow node's operand
            node_id = f"{prefix}{index}"
            shape, dtype = records.shape_and_dtype(node.aval)
            entry: GraphNode = {
                "id": node_id,
                "op": records.op_name(node),
                "label": _node_label(node),
                "shape": shape,
                "dtype": dtype,
            }
            segment = segment_of.get(node.name) if inside is None else None
            if segment is not None:
                entry["segment"] = segment
            entry["text"] = nodetext.clip(nodetext.node_text(node))
            entry["kind"] = nodetext.node_kind(node)
            entry["note"] = nodetext.node_note(node)
            entry["output"] = inside is None and id(node) in outputs
            if records.is_backward(node):
                entry["backward"] = True
            source = getattr(node, "source", None)
            if source is not None:
                key = (source.file, source.line)
                if key not in where:
                    where[key] = _line_location(source.file, source.line)
                entry["line"] = where[key]
                entry["source"] = source.text
            if inside is not None:
                entry["inside"] = inside
            nodes.append(entry)
            seen: set[str] = set()
            for source_node in node.inputs:
                # Inputs are nodes of the same graph; a node read twice is one edge.
                source_id = ids.get(id(source_node))
                if (
                    source_id is not None
                    and source_id not in seen
                    and not (inside is not None and records.op_name(source_node) == "placeholder")
                ):
                    seen.add(source_id)
                    edges.append({"source": source_id, "target": node_id})
            for k, sub in enumerate(subgraphs(node)):
                add(sub.get_operations(), f"{node_id}.{k}.", node_id)

    add(graph.get_operations(), "n", None)
    payload: GraphPayload = {"nodes": nodes, "edges": edges}
    if fused:
        payload["segments"] = [_segment_info(segment) for segment in fused]
    return payload


def _line_location(file: str, line: int) -> str:
    """``"cell [5], line 7"`` (the installed call-site formatter names cells), else
    ``"model.py, line 7"``: never a temporary file's full name."""
    raw = f"{file}:{line}"
    shown = explain.format_call_site(raw)
    return f"{os.path.basename(file)}, line {line}" if shown == raw else shown


def _retrace_info(name: str, record: explain.TraceRecord, locator: CellLocator) -> RetraceInfo:
    # The sidebar shows no call site rather than a temporary file name, and fixes as
    # %%tffunction options for functions the magic made.
    entry = records.retrace_entry(record, locator.known_call_site, record.magic_fixes)
    fix = None
    if entry["category"] != "first_trace":
        if entry["fixes"]:
            fix = entry["fixes"][0]
        elif record.diffs:  # no fix in code: the engine's advice in words
            fix = explain.fix_for(name, record.diffs)
    return {
        "trace": entry["trace"],
        "cause": entry["cause"],
        "diffs": [
            {"argument": d["argument"], "old": d["old"], "new": d["new"]} for d in entry["diffs"]
        ],
        "cost_ms": _finite(record.trace_ms) + _finite(record.compile_ms),
        "fix": fix,
        "call_site": entry["call_site"],
    }


def _segment_info(segment: records.Segment) -> GraphSegment:
    label = segment.label
    if not label:
        label = f"{segment.kind or 'fused'} segment, {len(segment.nodes)} ops"
        if segment.state:
            label += f", {segment.state}"
    return {"id": segment.id, "backend": segment.backend, "label": label}


def _node_label(node: Any) -> str:
    """The sidebar's label: the name, a note (opaque call, loop, sub-graph sizes) and
    ``· backward`` for a node a gradient's backward pass made."""
    return _plain_label(node) + (" · backward" if records.is_backward(node) else "")


def _plain_label(node: Any) -> str:
    inner = subgraphs(node)
    note = records.opaque_note(node) or records.loop_note(node)
    if note is not None:
        return f"{node.name} ({note})"
    if not inner:
        return str(node.name)
    count = sum(len(g.nodes) for g in inner)
    return f"{node.name} ({len(inner)} sub-graphs, {count} nodes)"


def _finite(value: Any) -> float:
    number = float(value)
    return number if math.isfinite(number) else 0.0


def _fingerprint(function: Any) -> tuple:
    """Cheap summary that changes whenever the function's record would."""
    stats = function.stats
    return (
        stats.get("calls"),
        stats.get("traces"),
        stats.get("eager_calls"),
        stats.get("last_run_us"),
        len(function.concrete_functions),
        len(function.retraces),
        records.compile_states(function),
    )


# --------------------------------------------------------------------------------------------
# The comm side
# --------------------------------------------------------------------------------------------


class Inspector:
    """The comm endpoint of one kernel: announcement, frontend comms, updates.

    One instance per kernel (see :func:`start`).  ``interval`` is the throttle in seconds;
    ``poll=False`` leaves it out of the poll thread (tests drive :meth:`flush` themselves;
    each cell's end still flushes).
    """

    def __init__(
        self,
        shell: Any,
        *,
        interval: float = UPDATE_INTERVAL_S,
        poll: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.shell = shell
        self.interval = interval
        self._locator = CellLocator(shell)
        self._lock = threading.RLock()
        self._comms: list[Any] = []  # frontend comms: they get updates
        # comm -> clock time of its latest valid request; absent: unanswered so far
        self._last_request: dict[Any, float] = {}
        self._clock = clock
        self._announcement: Any = None
        self._sent: dict[str, tuple] = {}  # function id -> fingerprint last broadcast
        self._stopped = False
        self._poll = poll
        self._unfollow: Callable[[], None] | None = None  # undoes the follow of start()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Register the target, follow the shell's cells, open the announcement comm."""
        comm_package.get_comm_manager().register_target(protocol.COMM_TARGET, self._on_open)
        self._unfollow = activity.follow(self.shell)
        activity.add(self, poll=self._poll)
        self.announce()

    @property
    def stopped(self) -> bool:
        """:meth:`stop` was called: this inspector sends nothing any more."""
        return self._stopped

    def announce(self) -> None:
        """Open the announcement comm unless it is open (idempotent)."""
        with self._lock:
            if self._announcement is not None:
                return
            announcement = comm_package.create_comm(
                target_name=protocol.COMM_TARGET,
                data=dict(protocol.snapshot_message(self._all_functions())),
            )
            self._announcement = announcement
            # Frontends may talk on it too; answer like on any comm.
            announcement.on_msg(lambda msg: self._on_message(announcement, msg))
            announcement.on_close(lambda msg: self._forget_announcement(announcement))

    def stop(self) -> None:
        """Undo :meth:`start`: close every comm, stop polling and following cells."""
        with self._lock:
            self._stopped = True
            comms, self._comms = self._comms, []
            self._last_request.clear()
            announcement, self._announcement = self._announcement, None
        activity.discard(self)
        if self._unfollow is not None:
            self._unfollow()
            self._unfollow = None
        manager = comm_package.get_comm_manager()
        if manager.targets.get(protocol.COMM_TARGET) == self._on_open:
            manager.unregister_target(protocol.COMM_TARGET, self._on_open)
        for comm in [*comms, announcement]:
            if comm is not None:
                _close_quietly(comm)

    @property
    def frontend_comms(self) -> list[Any]:
        """The open comms that sidebars opened (they receive updates)."""
        with self._lock:
            return list(self._comms)

    @property
    def announcement(self) -> Any:
        return self._announcement

    # -- comms ---------------------------------------------------------------------------------
    def _on_open(self, comm: Any, open_msg: dict) -> None:
        """Target handler: a sidebar opened a comm; its open data is its first request."""
        with self._lock:
            if self._stopped:
                _close_quietly(comm)
                return
            stale = []
            while len(self._comms) >= MAX_FRONTEND_COMMS:
                victim = self._comm_to_close()
                if victim is None:
                    break
                self._comms.remove(victim)
                self._last_request.pop(victim, None)
                stale.append(victim)
            refused = len(self._comms) >= MAX_FRONTEND_COMMS
            if not refused:
                self._comms.append(comm)
        for old in stale:
            _close_quietly(old)
        if refused:
            logger.warning(
                "kernel_ext.inspector: refusing a new sidebar comm: all %d open comms are in use",
                MAX_FRONTEND_COMMS,
            )
            _close_quietly(comm)
            return
        comm.on_msg(lambda msg: self._on_message(comm, msg))
        comm.on_close(lambda msg: self._forget(comm))
        self._on_message(comm, open_msg)

    def _comm_to_close(self) -> Any:
        """The frontend comm to close to make room (see :data:`MAX_FRONTEND_COMMS`): the
        oldest unanswered one, else the one idle longest; None when all are in use."""
        unanswered = [c for c in self._comms if c not in self._last_request]
        if unanswered:
            return unanswered[0]  # in opening order
        idle_since = self._clock() - COMM_IN_USE_S
        idle = [c for c in self._comms if self._last_request[c] < idle_since]
        return min(idle, key=self._last_request.__getitem__, default=None)

    def _forget(self, comm: Any) -> None:
        with self._lock:
            if comm in self._comms:
                self._comms.remove(comm)
            self._last_request.pop(comm, None)

    def _forget_announcement(self, comm: Any) -> None:
        with self._lock:
            if self._announcement is comm:
                self._announcement = None

    def _on_message(self, comm: Any, msg: Any) -> None:
        """Answer one frontend message (``msg`` is the whole Jupyter message)."""
        content = msg.get("content") if isinstance(msg, dict) else None
        data = content.get("data") if isinstance(content, dict) else None
        request = protocol.validate_frontend_message(data)  # logs why when None
        if request is None:
            return
        with self._lock:
            if comm in self._comms:  # a valid request: this comm is in use
                self._last_request[comm] = self._clock()
        if request["type"] == "request_snapshot":
            reply: dict = dict(protocol.snapshot_message(self._all_functions()))
        elif request["type"] == "request_export":
            reply = self._export_reply(request["function"], request["format"], request["path"])
        else:
            reply = self._graph_reply(request["function"], request["signature"])
        self._send(comm, reply)

    def _export_reply(self, function_id_: str, fmt: str, path: str) -> dict:
        """Write the function out as ``%tffunction_save`` would; a refusal is an answer
        (``ok`` false, the exporter's message), never an exception in the kernel."""
        function = next(
            (f for f in registry.live_functions() if function_id(f) == function_id_), None
        )
        if function is None:
            message = f"no function {function_id_!r} in this kernel (it may have been deleted)"
            return dict(protocol.export_message(function_id_, fmt, path, False, message))
        try:
            written = exporting.export(function, path, fmt)
        except exporting.ExportRefused as e:
            return dict(protocol.export_message(function_id_, fmt, path, False, str(e)))
        except Exception:  # noqa: BLE001 - an exporter bug must not break the kernel or comm
            logger.warning("kernel_ext.inspector: export failed", exc_info=True)
            message = "the export failed inside kernel_ext (see the kernel log)"
            return dict(protocol.export_message(function_id_, fmt, path, False, message))
        message = f"wrote {exporting.describe(fmt)} of {function.name} to {written}"
        return dict(protocol.export_message(function_id_, fmt, written, True, message))

    def _graph_reply(self, function_id_: str, signature_id: str) -> dict:
        function = next(
            (f for f in registry.live_functions() if function_id(f) == function_id_), None
        )
        if function is None:
            return dict(
                protocol.error_message(
                    f"no function {function_id_!r} in this kernel (it may have been deleted)"
                )
            )
        for cf in function.concrete_functions:
            if records.signature_id(cf) == signature_id:
                try:
                    graph = graph_payload(cf)
                except Exception:  # noqa: BLE001 - say so instead of leaving the panel waiting
                    logger.warning("kernel_ext.inspector: cannot describe graph", exc_info=True)
                    return dict(
                        protocol.error_message(
                            "the kernel could not describe this graph (see the kernel log)"
                        )
                    )
                return dict(protocol.graph_message(function_id_, signature_id, graph))
        return dict(
            protocol.error_message(f"function {function_id_!r} has no signature {signature_id!r}")
        )

    def _send(self, comm: Any, message: dict) -> bool:
        try:
            comm.send(message)
            return True
        except Exception:  # noqa: BLE001 - a broken comm must not break the user's cell
            logger.warning(
                "kernel_ext.inspector: dropping a comm that failed to send", exc_info=True
            )
            self._forget(comm)
            return False

    # -- records -------------------------------------------------------------------------------
    def _all_functions(self) -> list[FunctionInfo]:
        return [info for info in map(self._info, registry.live_functions()) if info is not None]

    def _info(self, function: Any) -> FunctionInfo | None:
        try:
            return function_info(function, self._locator)
        except Exception:  # noqa: BLE001 - one odd function must not hide the others
            logger.warning(
                "kernel_ext.inspector: cannot describe %s", function_id(function), exc_info=True
            )
            return None

    # -- updates -------------------------------------------------------------------------------
    def flush(self) -> bool:
        """Send one ``update`` with every function changed since the last; True if sent."""
        with self._lock:
            if not self._comms or self._stopped:
                return False
            changed: list[FunctionInfo] = []
            live: set[str] = set()
            for function in registry.live_functions():
                fid = function_id(function)
                live.add(fid)
                try:
                    fingerprint = _fingerprint(function)
                except Exception:  # noqa: BLE001
                    continue
                if self._sent.get(fid) == fingerprint:
                    continue
                info = self._info(function)
                if info is not None:
                    changed.append(info)
                    self._sent[fid] = fingerprint
            removed = sorted(fid for fid in self._sent if fid not in live)
            for fid in removed:
                del self._sent[fid]
            if not changed and not removed:
                return False
            message = dict(protocol.update_message(changed, removed))
            for comm in list(self._comms):
                self._send(comm, message)
            return True

    # -- the poller's calls (:class:`.activity.Watcher`) ------------------------------------------
    def poll(self) -> None:
        """While a cell runs or after a trace: send what changed, if anything did."""
        try:
            self.flush()
        except Exception:  # noqa: BLE001 - keep polling
            logger.warning("kernel_ext.inspector: update failed", exc_info=True)

    def cell_finished(self) -> None:
        """After each cell: send what changed at once."""
        try:
            self.flush()
        except Exception:  # noqa: BLE001 - never turn a cell's success into an error
            logger.warning("kernel_ext.inspector: update after cell failed", exc_info=True)


def _close_quietly(comm: Any) -> None:
    try:
        comm.close()
    except Exception:  # noqa: BLE001
        logger.debug("kernel_ext.inspector: closing a comm failed", exc_info=True)


# --------------------------------------------------------------------------------------------
# The extension's entry points
# --------------------------------------------------------------------------------------------

_current: Inspector | None = None
_start_lock = threading.Lock()


def start(ipython: Any, **options: Any) -> None:
    """Start the inspector for ``ipython`` (``%load_ext kernel_ext`` calls this).

    Idempotent: a second call for the same shell only reopens the announcement comm if a
    frontend closed it.  ``options`` go to :class:`Inspector` (tests: ``interval``, ``poll``).
    """
    global _current
    with _start_lock:
        if _current is not None and _current.shell is ipython and not _current.stopped:
            _current.announce()
            return
        if _current is not None:
            _current.stop()
        inspector = Inspector(ipython, **options)
        inspector.start()
        _current = inspector


def stop() -> None:
    """Stop the running inspector, if any (``%unload_ext``)."""
    global _current
    with _start_lock:
        if _current is not None:
            _current.stop()
            _current = None


def current() -> Inspector | None:
    """The running inspector, or None."""
    return _current
