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
Traces are engine events (:mod:`kernel_ext.engine.events`): the listener only sets a flag.
Cache hits are plain counters on ``Function.stats``, never events, so that a hit stays a
dict lookup.  A background thread polls those counters every ``interval`` seconds, but only
while a cell runs (between IPython's ``pre_run_cell`` and ``post_run_cell``) or after an
event; each poll compares a small fingerprint per function and builds the full record only
for functions that changed.  ``post_run_cell`` flushes at once, so every cell ends with the
sidebar up to date.  Updates therefore go out at most every ``interval`` seconds while a
cell runs, and once after it.

Trust
-----
Every frontend message passes through :func:`protocol.validate_frontend_message`;
malformed ones are dropped with a logged warning.  Ids in requests are only compared with
the ids this module made; nothing from the frontend is evaluated, imported or used as an
attribute name.  All strings sent are raw text: escaping is the renderer's job.
"""

from __future__ import annotations

import inspect
import logging
import math
import os
import threading
import time
from typing import Any, Callable

import comm as comm_package

from ..engine import events, explain, registry
from ..engine.explain import describe
from ..ir.graph import subgraphs
from ..trace.types import Literal
from . import protocol
from .cells import is_temporary_file
from .protocol import (
    ArgumentDiff,
    Counters,
    FunctionInfo,
    GraphEdge,
    GraphNode,
    GraphPayload,
    GraphSegment,
    RetraceInfo,
    SignatureInfo,
)

try:  # the notebook layer (issue 5); the sidebar works without it, with fewer cell names
    from . import cells as _cells
except ImportError:  # pragma: no cover - only while that layer is absent
    _cells = None  # type: ignore[assignment]

__all__ = ["Inspector", "current", "function_info", "graph_payload", "start", "stop"]

logger = logging.getLogger(__name__)

#: Seconds between two polls (and so between two updates) while a cell runs.
UPDATE_INTERVAL_S = 0.25

#: Frontend comms kept at most.  A page reload leaves its comm open in the kernel (the
#: browser never closes it), and every update costs one IOPub message per comm, so the
#: oldest comms are closed beyond this.  A live sidebar whose comm is closed this way just
#: reconnects (it had received messages), so the cap only matters with more live sidebars
#: than this on one kernel.
MAX_FRONTEND_COMMS = 32

#: Engine cause categories -> the protocol's words (docs/protocol.md, RetraceInfo.cause), for
#: an engine without ``explain.CAUSE_LABELS``; that table wins where it exists.
_CAUSES = {
    "first_trace": "first trace",
    "python_value": "python value",
    "object": "object identity",
    "function_object": "new function object",
    "new_signature": "new signature",
}

CellLabeler = Callable[[str], "str | None"]


# --------------------------------------------------------------------------------------------
# Records: engine objects -> protocol dicts.  Pure functions, so tests can call them directly.
# --------------------------------------------------------------------------------------------


def function_info(function: Any, cell_of: CellLabeler | None = None) -> FunctionInfo:
    """The sidebar's record of one ``kx.Function``.

    ``cell_of(filename)`` names the notebook cell a code object comes from (``"[3]"``) or
    returns None; it labels the defining cell and every retrace's call site.
    """
    cell_of = cell_of or (lambda filename: None)
    stats = function.stats
    concrete = function.concrete_functions
    records = function.retraces
    name = _function_name(function)
    last_used = _last_used_signature(function)
    parameters = _parameter_names(function)
    signatures: list[SignatureInfo] = []
    for cf in concrete:
        sid = _signature_id(cf)
        signatures.append({
            "id": sid,
            "inputs": _safe_text(lambda: _inputs_text(parameters, cf)),
            "outputs": _safe_text(cf.output_text),
            "last_used": sid == last_used,
            "nodes_traced": int(cf.node_counts.get("traced", 0)),
            "nodes_optimised": int(cf.node_counts.get("optimised", 0)),
            "backend": str(cf.executable.backend),
        })
    retraces: list[RetraceInfo] = [_retrace_info(name, record, cell_of) for record in records]
    trace_ms = _finite(stats.get("trace_ms", 0.0))
    compile_ms = _finite(stats.get("compile_ms", 0.0))
    last_run = stats.get("last_run_us")
    counters: Counters = {
        "calls": int(stats.get("calls", 0)),
        "traces": int(stats.get("traces", 0)),
        "cache_hits": int(stats.get("cache_hits", 0)),
        "trace_ms": trace_ms,
        "compile_ms": compile_ms,
        # Sampled by the engine (one cache hit in 64 is timed): None before the first.
        "last_run_us": None if last_run is None else _finite(last_run),
    }
    return {
        "id": function_id(function),
        "name": name,
        "cell": _definition_cell(function, cell_of),
        "counters": counters,
        "signatures": signatures,
        "retraces": retraces,
        "cost_ms": trace_ms + compile_ms,
    }


def function_id(function: Any) -> str:
    """The protocol id of a Function: its registry number, stable for its lifetime."""
    return f"f-{function.id}"


def graph_payload(concrete_function: Any) -> GraphPayload:
    """The graph of one concrete function, as nodes and data-flow edges.

    Every operation of the (optimised) graph becomes a node: ``op`` is the op kind, ``label``
    the node's name (parameter names for placeholders), ``shape``/``dtype`` its abstract
    value.  Control-flow ops (cond, while) are drawn as one node each; their sub-graphs are
    summarised in the label.  Segments come from the executable (fused kernels), when the
    backend reports any.
    """
    operations = concrete_function.graph.get_operations()
    ids = {id(node): f"n{index}" for index, node in enumerate(operations)}
    segments, segment_of = _segments(concrete_function.executable)
    nodes: list[GraphNode] = []
    edges: list[GraphEdge] = []
    for index, node in enumerate(operations):
        shape, dtype = _value_text(node.aval)
        entry: GraphNode = {
            "id": f"n{index}",
            "op": str(getattr(node.op, "value", node.op)),
            "label": _node_label(node),
            "shape": shape,
            "dtype": dtype,
        }
        segment = segment_of.get(node.name)
        if segment is not None:
            entry["segment"] = segment
        nodes.append(entry)
        seen: set[str] = set()
        for source in node.inputs:
            # Inputs are nodes of the same graph; a node read twice is one edge.
            source_id = ids.get(id(source))
            if source_id is not None and source_id not in seen:
                seen.add(source_id)
                edges.append({"source": source_id, "target": f"n{index}"})
    payload: GraphPayload = {"nodes": nodes, "edges": edges}
    if segments:
        payload["segments"] = segments
    return payload


def _function_name(function: Any) -> str:
    # ``kx.function(f, name=...)`` overrides the Python name; the engine keeps it in _name.
    name = getattr(function, "_name", None) or getattr(function, "__name__", None)
    return str(name) if name else "function"


def _signature_id(concrete_function: Any) -> str:
    # The trace number: unlike the position in concrete_functions it survives the removal of
    # traces whose weakly referenced arguments died.
    return str(concrete_function.record.index)


def _parameter_names(function: Any) -> list[str] | None:
    try:
        return list(inspect.signature(function.python_function).parameters)
    except (TypeError, ValueError):
        return None


def _inputs_text(parameters: list[str] | None, concrete_function: Any) -> str:
    """``"x: float32[2, None], n: 3"``: tensors as dtype[shape], Python values as literals."""
    types = concrete_function.input_types
    if parameters is None or len(parameters) != len(types):
        return str(concrete_function.signature_text())
    parts = []
    for name, trace_type in zip(parameters, types):
        if isinstance(trace_type, Literal):
            text = repr(trace_type.value)
        else:
            text = describe(trace_type)
        parts.append(f"{name}: {text}")
    return ", ".join(parts)


def _last_used_signature(function: Any) -> str | None:
    """The signature the latest graph call ran (the engine records it per call)."""
    cf = getattr(function, "last_concrete_function", None)
    return None if cf is None else _signature_id(cf)


def _retrace_info(name: str, record: Any, cell_of: CellLabeler) -> RetraceInfo:
    diffs: list[ArgumentDiff] = [
        {"argument": str(d.argument), "old": str(d.old), "new": str(d.new)}
        for d in record.diffs
    ]
    labels = getattr(explain, "CAUSE_LABELS", _CAUSES)
    cause = labels.get(record.cause) or str(record.cause).replace("_", " ")
    return {
        "trace": int(record.index),
        "cause": cause,
        "diffs": diffs,
        "cost_ms": _finite(record.trace_ms) + _finite(record.compile_ms),
        "fix": _fix_text(name, record),
        "call_site": _call_site_text(record.call_site, cell_of),
    }


def _fix_text(name: str, record: Any) -> str | None:
    """The record's best fix as copyable code: ``%%tffunction`` options for a function the
    magic made, Python otherwise; None for a first trace."""
    if record.cause == "first_trace":
        return None
    fixes = getattr(record, "fixes", None)
    if fixes:
        best = fixes[0]
        magic = getattr(best, "magic", None)
        return str(magic if getattr(record, "magic_fixes", False) and magic else best.code)
    if not record.diffs or not hasattr(explain, "fix_for"):
        return None
    return str(explain.fix_for(name, record.diffs))


def _call_site_text(call_site: str, cell_of: CellLabeler) -> str | None:
    """``"/tmp/ipykernel_1/123.py:3"`` -> ``"cell [5], line 3"``; never a temporary file."""
    if not call_site:
        return None
    filename, _, line = call_site.rpartition(":")
    if not filename or not line.isdigit():
        return None
    cell = cell_of(filename)
    if cell is not None:
        return f"cell {cell}, line {line}"
    if filename.startswith("<") or is_temporary_file(filename):
        return None
    return f"{os.path.basename(filename)}, line {line}"


def _definition_cell(function: Any, cell_of: CellLabeler) -> str | None:
    # A %%tffunction function knows the cell that made its current version.
    info = _cells.cell_info(function) if _cells is not None else None
    if info is not None and getattr(info, "cell", None) is not None:
        return f"[{info.cell}]"
    python_function = getattr(function, "python_function", None)
    code = getattr(python_function, "__code__", None)
    return cell_of(code.co_filename) if code is not None else None


def _node_label(node: Any) -> str:
    inner = subgraphs(node)
    if not inner:
        return str(node.name)
    count = sum(len(g.nodes) for g in inner)
    return f"{node.name} ({len(inner)} sub-graphs, {count} nodes)"


def _value_text(aval: Any) -> tuple[str, str]:
    """Protocol ``shape`` and ``dtype`` of an abstract value (``"?"``: unknown rank)."""
    if aval is None:
        return "", ""  # an op without a value (print, variable write)
    if isinstance(aval, tuple):  # a multi-output op (cond/while): one "(...)" of values
        parts = [dtype + shape for shape, dtype in map(_value_text, aval)]
        return "(" + ", ".join(parts) + ")", ""
    shape = getattr(aval, "shape", None)
    if shape is None:
        shape_text = "?"
    else:
        shape_text = "[" + ", ".join("None" if d is None else str(d) for d in shape) + "]"
    dtype = getattr(aval, "dtype", None)
    return shape_text, getattr(dtype, "name", str(dtype))


def _segments(executable: Any) -> tuple[list[GraphSegment], dict[str, str]]:
    """Fused segments reported by an executable, and node name -> segment id.

    Each entry of ``Executable.segments`` is a dict; read here: ``id`` (shown as ``s<id>``,
    default the position), ``backend`` (default the executable's), ``nodes`` (node names, or
    nodes), and for the label ``label``, else ``kind`` and ``state`` (e.g. "compiling").
    """
    segments: list[GraphSegment] = []
    segment_of: dict[str, str] = {}
    backend = str(getattr(executable, "backend", ""))
    for index, raw in enumerate(getattr(executable, "segments", None) or ()):
        if not isinstance(raw, dict):
            continue
        sid = f"s{raw.get('id', index)}"
        members = [str(getattr(n, "name", n)) for n in raw.get("nodes", ()) or ()]
        label = raw.get("label")
        if not label:
            label = f"{raw.get('kind') or 'fused'} segment, {len(members)} ops"
            if raw.get("state"):
                label += f", {raw['state']}"
        segments.append({"id": sid, "backend": str(raw.get("backend") or backend),
                         "label": str(label)})
        for member in members:
            segment_of.setdefault(member, sid)
    return segments, segment_of


def _safe_text(describe: Callable[[], str]) -> str:
    # A description that fails must not take the whole snapshot down with it.
    try:
        return str(describe())
    except Exception:  # noqa: BLE001
        logger.debug("kernel_ext.inspector: cannot describe a signature", exc_info=True)
        return "?"


def _finite(value: Any) -> float:
    number = float(value)
    return number if math.isfinite(number) else 0.0


def _fingerprint(function: Any) -> tuple:
    """Cheap summary that changes whenever the function's record would."""
    stats = function.stats
    return (stats.get("calls"), stats.get("traces"), stats.get("eager_calls"),
            stats.get("last_run_us"), len(function.concrete_functions), len(function.retraces))


# --------------------------------------------------------------------------------------------
# Cells
# --------------------------------------------------------------------------------------------


def _cell_labeler(shell: Any) -> CellLabeler:
    """``filename -> "[n]"`` for code compiled from notebook cells, else None.

    IPython's compiler remembers the execution count of every cell it compiled
    (``compile._filename_map``); a cell run as ``In [5]`` gives ``"[5]"``.  The notebook
    layer's :class:`~kernel_ext.jupyter.cells.CellLocator` knows the same and more (code the
    ``%%tffunction`` magic compiled); it is used when present.
    """
    locator = _cells.CellLocator(shell) if _cells is not None else None
    compiler = getattr(shell, "compile", None)

    def cell_of(filename: str) -> str | None:
        if locator is not None:
            number = locator.cell_number(filename)
        else:
            mapping = getattr(compiler, "_filename_map", None)
            number = mapping.get(filename) if isinstance(mapping, dict) else None
        return f"[{number}]" if isinstance(number, int) else None

    return cell_of


# --------------------------------------------------------------------------------------------
# The comm side
# --------------------------------------------------------------------------------------------


class Inspector:
    """The comm endpoint of one kernel: announcement, frontend comms, updates.

    One instance per kernel (see :func:`start`).  ``interval`` is the throttle in seconds;
    ``poll=False`` leaves out the background thread (tests drive :meth:`flush` themselves).
    """

    def __init__(self, shell: Any, *, interval: float = UPDATE_INTERVAL_S,
                 poll: bool = True) -> None:
        self.shell = shell
        self.interval = interval
        self._cell_of = _cell_labeler(shell)
        self._lock = threading.RLock()
        self._comms: list[Any] = []          # frontend comms: they get updates
        self._announcement: Any = None
        self._sent: dict[str, tuple] = {}    # function id -> fingerprint last broadcast
        self._busy = False                   # a cell is running
        self._dirty = False                  # an engine event since the last flush
        self._last_poll = -math.inf
        self._wake = threading.Event()
        self._stopped = False
        self._unsubscribe: Callable[[], None] | None = None
        self._thread: threading.Thread | None = None
        self._poll = poll

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Register the target, hooks and event listener; open the announcement comm."""
        comm_package.get_comm_manager().register_target(protocol.COMM_TARGET, self._on_open)
        self.shell.events.register("pre_run_cell", self._pre_run_cell)
        self.shell.events.register("post_run_cell", self._post_run_cell)
        self._unsubscribe = events.subscribe(self._on_event)
        if self._poll:
            self._thread = threading.Thread(target=self._run, name="kernel_ext-inspector",
                                            daemon=True)
            self._thread.start()
        self.announce()

    def announce(self) -> None:
        """Open the announcement comm unless it is open (idempotent)."""
        with self._lock:
            if self._announcement is not None:
                return
            announcement = comm_package.create_comm(
                target_name=protocol.COMM_TARGET,
                data=dict(protocol.snapshot_message(self._all_functions())))
            self._announcement = announcement
            # Frontends may talk on it too; answer like on any comm.
            announcement.on_msg(lambda msg: self._on_message(announcement, msg))
            announcement.on_close(lambda msg: self._forget_announcement(announcement))

    def stop(self) -> None:
        """Undo :meth:`start`: close every comm, remove hooks, end the thread."""
        with self._lock:
            self._stopped = True
            comms, self._comms = self._comms, []
            announcement, self._announcement = self._announcement, None
        self._wake.set()
        if self._unsubscribe is not None:
            self._unsubscribe()
        for name, callback in (("pre_run_cell", self._pre_run_cell),
                               ("post_run_cell", self._post_run_cell)):
            try:
                self.shell.events.unregister(name, callback)
            except ValueError:
                pass
        manager = comm_package.get_comm_manager()
        if manager.targets.get(protocol.COMM_TARGET) == self._on_open:
            manager.unregister_target(protocol.COMM_TARGET, self._on_open)
        for comm in [*comms, announcement]:
            if comm is not None:
                _close_quietly(comm)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)

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
            self._comms.append(comm)
            stale = self._comms[:-MAX_FRONTEND_COMMS]
            del self._comms[:-MAX_FRONTEND_COMMS]
        for old in stale:
            _close_quietly(old)
        comm.on_msg(lambda msg: self._on_message(comm, msg))
        comm.on_close(lambda msg: self._forget(comm))
        self._on_message(comm, open_msg)

    def _forget(self, comm: Any) -> None:
        with self._lock:
            if comm in self._comms:
                self._comms.remove(comm)

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
        if request["type"] == "request_snapshot":
            reply: dict = dict(protocol.snapshot_message(self._all_functions()))
        else:
            reply = self._graph_reply(request["function"], request["signature"])
        self._send(comm, reply)

    def _graph_reply(self, function_id_: str, signature_id: str) -> dict:
        function = next((f for f in registry.live_functions()
                         if function_id(f) == function_id_), None)
        if function is None:
            return dict(protocol.error_message(f"no function {function_id_!r} in this kernel "
                                               "(it may have been deleted)"))
        for cf in function.concrete_functions:
            if _signature_id(cf) == signature_id:
                try:
                    graph = graph_payload(cf)
                except Exception:  # noqa: BLE001 - say so instead of leaving the panel waiting
                    logger.warning("kernel_ext.inspector: cannot describe graph", exc_info=True)
                    return dict(protocol.error_message("the kernel could not describe this "
                                                       "graph (see the kernel log)"))
                return dict(protocol.graph_message(function_id_, signature_id, graph))
        return dict(protocol.error_message(
            f"function {function_id_!r} has no signature {signature_id!r}"))

    def _send(self, comm: Any, message: dict) -> bool:
        try:
            comm.send(message)
            return True
        except Exception:  # noqa: BLE001 - a broken comm must not break the user's cell
            logger.warning("kernel_ext.inspector: dropping a comm that failed to send",
                           exc_info=True)
            self._forget(comm)
            return False

    # -- records -------------------------------------------------------------------------------
    def _all_functions(self) -> list[FunctionInfo]:
        return [info for info in map(self._info, registry.live_functions()) if info is not None]

    def _info(self, function: Any) -> FunctionInfo | None:
        try:
            return function_info(function, self._cell_of)
        except Exception:  # noqa: BLE001 - one odd function must not hide the others
            logger.warning("kernel_ext.inspector: cannot describe %s", function_id(function),
                           exc_info=True)
            return None

    # -- updates -------------------------------------------------------------------------------
    def flush(self) -> bool:
        """Send one ``update`` with every function changed since the last; True if sent."""
        with self._lock:
            self._dirty = False
            self._last_poll = time.monotonic()
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

    def _on_event(self, event: Any) -> None:
        # Runs inside the user's call (a trace just finished): only raise a flag.
        self._dirty = True
        self._wake.set()

    def _pre_run_cell(self, info: Any) -> None:
        self._busy = True
        self._wake.set()

    def _post_run_cell(self, result: Any) -> None:
        self._busy = False
        try:
            self.flush()
        except Exception:  # noqa: BLE001 - never turn a cell's success into an error
            logger.warning("kernel_ext.inspector: update after cell failed", exc_info=True)

    def _run(self) -> None:
        """The poll thread: sleeps while idle, polls every ``interval`` while busy/dirty."""
        while not self._stopped:
            if self._busy or self._dirty:
                delay = max(0.0, self._last_poll + self.interval - time.monotonic())
                if delay > 0:
                    self._wake.wait(delay)
            else:
                self._wake.wait()
            self._wake.clear()
            if self._stopped:
                return
            if (self._busy or self._dirty) and \
                    time.monotonic() >= self._last_poll + self.interval:
                try:
                    self.flush()
                except Exception:  # noqa: BLE001 - keep polling
                    logger.warning("kernel_ext.inspector: update failed", exc_info=True)


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
        if _current is not None and _current.shell is ipython and not _current._stopped:
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
