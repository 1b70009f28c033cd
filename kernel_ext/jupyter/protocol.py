"""The kernel <-> lab inspector protocol, typed once for the Python side.

``docs/protocol.md`` is the contract; this module is its executable form, and
``labextension/src/protocol.ts`` is the TypeScript twin.  Keep the three in step:
a field added here is added there, in the same words.

The module imports only the standard library, so that the engine's tests, the
magics and the comm handler can all use it without pulling in IPython/comm.

Two directions, two levels of trust:

* Kernel -> lab messages are built by our own code; :func:`check_kernel_message`
  exists so tests can assert that what the kernel sends matches the contract.
* Lab -> kernel messages come from a browser and are untrusted input.
  :func:`validate_frontend_message` turns them into a normalised ``dict`` or
  ``None`` (malformed: ignore it; a warning is logged).  Nothing in a frontend
  message is ever executed, evaluated or used as an attribute name.
"""

import logging
import math
import types
import typing
from typing import Any, Literal, NotRequired, TypedDict, Union

__all__ = [
    "COMM_TARGET",
    "EXPORT_FORMATS",
    "MAX_ID_LENGTH",
    "MAX_PATH_LENGTH",
    "PROTOCOL_VERSION",
    "ArgumentDiff",
    "Counters",
    "ErrorMessage",
    "ExportMessage",
    "FrontendMessage",
    "FunctionInfo",
    "GraphEdge",
    "GraphMessage",
    "GraphNode",
    "GraphPayload",
    "GraphSegment",
    "KernelMessage",
    "RequestExportMessage",
    "RequestGraphMessage",
    "RequestSnapshotMessage",
    "RetraceInfo",
    "SignatureInfo",
    "SnapshotMessage",
    "UpdateMessage",
    "check_kernel_message",
    "error_message",
    "export_message",
    "graph_message",
    "snapshot_message",
    "update_message",
    "validate_frontend_message",
]

logger = logging.getLogger(__name__)

#: The one comm target, registered by ``%load_ext kernel_ext``.
COMM_TARGET = "kernel_ext.inspector"

#: Bumped only for incompatible changes (a field removed, renamed or re-typed,
#: a meaning changed).  Adding an optional field or a new message type does not
#: bump it: both sides ignore fields and types they do not know.
PROTOCOL_VERSION = 1

#: Function and signature ids from the frontend longer than this are rejected:
#: the kernel's own ids are short, so a long one is garbage or abuse.
MAX_ID_LENGTH = 256


# --------------------------------------------------------------------------
# Shared records.  All strings are plain text (never HTML); the renderer
# escapes them.
# --------------------------------------------------------------------------


class Counters(TypedDict):
    calls: int
    traces: int
    cache_hits: int
    #: Calls that raised before running a graph (wrong arguments, a signature mismatch, a
    #: failed trace); neither cache hits nor traces.  Optional: older kernels omit it.
    failed_calls: NotRequired[int]
    trace_ms: float
    compile_ms: float
    #: Duration of the most recent call in microseconds; None before any call.
    last_run_us: float | None


class SignatureInfo(TypedDict):
    #: Stable within the function (e.g. the concrete function's index); used
    #: in ``request_graph``.
    id: str
    #: Pretty input specs, e.g. ``"x: float32[2, None], n: 3"``.
    inputs: str
    #: Pretty output specs, e.g. ``"float32[2, None]"``.
    outputs: str
    #: True for the signature the latest call dispatched to (at most one).
    last_used: bool
    nodes_traced: int
    nodes_optimised: int
    #: Executor name: ``"numpy"``, ``"numba_cpu"``, ``"numba_cuda"``.
    backend: str
    #: Which path serves it, for people: ``"NumPy executor"``, ``"fused kernels
    #: (numba-cpu)"``, ``"whole graph (numba-cpu)"``, ``"CUDA kernels (numba-cuda)"``,
    #: ``"tiered auto: <tier>"``. Optional (added without a version bump).
    served_by: NotRequired[str]
    #: Under tiered ``auto``: which executor serves it and why (``ConcreteFunction.tier``).
    tier: NotRequired[str]
    #: Background compilation of its kernels, for people; absent or "" when nothing to say.
    compile: NotRequired[str]
    #: The kernels' state: ``"pending"``, ``"queued"``, ``"compiling"``, ``"ready"``,
    #: ``"failed"``; absent without kernels.
    compile_state: NotRequired[str]
    #: Dask backend: the dashboard URL (``http(s)://``) of the ``distributed.Client`` that
    #: existed at the latest call; absent without one. Shown as a link beside the backend
    #: (``"dask · 36 tasks"``).
    dashboard: NotRequired[str]


class ArgumentDiff(TypedDict):
    #: Argument path, e.g. ``"x"`` or ``"params['lr']"``.
    argument: str
    old: str
    new: str


class RetraceInfo(TypedDict):
    #: 1-based trace number within the function.
    trace: int
    #: Cause category, e.g. ``"first trace"``, ``"shape"``, ``"dtype"``,
    #: ``"python value"``, ``"object identity"``, ``"new function object"``.
    cause: str
    diffs: list[ArgumentDiff]
    cost_ms: float
    #: Copyable code that avoids the retrace; None when there is none.
    fix: str | None
    #: ``"cell [5], line 3"``; None when unknown.
    call_site: str | None


class FunctionInfo(TypedDict):
    #: Stable for the life of the Function object; keys updates and requests.
    id: str
    name: str
    #: Defining cell, e.g. ``"[3]"``; None when not defined in a cell.
    cell: str | None
    counters: Counters
    signatures: list[SignatureInfo]
    retraces: list[RetraceInfo]
    #: Total time spent tracing + compiling; the sidebar orders by it.
    cost_ms: float


class GraphNode(TypedDict):
    id: str
    op: str
    label: str
    #: Pretty shape, e.g. ``"[2, None]"``; ``"?"`` for unknown rank.
    shape: str
    dtype: str
    #: Id of the fused segment the node belongs to; absent/None when unfused.
    segment: NotRequired[str | None]
    #: What the node computes, for people: the op with its literal operands and attributes,
    #: graph inputs written ``·`` (``"multiply(·, 2)"``, ``"sum(·, axis=0)"``); a parameter's
    #: name for an input. Views show it instead of ``label = op``.
    text: NotRequired[str]
    #: How views mark the node: ``"input"``, ``"constant"``, ``"captured"``, ``"opaque"``,
    #: ``"random"``, ``"loop"``, ``"control_flow"``, ``"stateful"`` or ``"op"``.
    kind: NotRequired[str]
    #: One line said with the node (an opaque call's or a graph loop's note), or None.
    note: NotRequired[str | None]
    #: True for a node whose value the function returns.
    output: NotRequired[bool]
    #: True for a node a gradient's backward pass made (views group and colour it apart).
    backward: NotRequired[bool]
    #: Where the line of user code that made the node is: ``"cell [5], line 7"``,
    #: ``"model.py, line 12"``; absent/None when unknown (parameters).
    line: NotRequired[str | None]
    #: That line's text: ``"h = np.maximum(x @ w1 + b1, 0)"`` (views group by line).
    source: NotRequired[str | None]
    #: The id of the control-flow node (cond, while) whose branch or body holds this node;
    #: absent/None for a node of the function's own graph.
    inside: NotRequired[str | None]


class GraphEdge(TypedDict):
    source: str
    target: str


class GraphSegment(TypedDict):
    id: str
    #: Executor the segment compiles for, e.g. ``"numba_cpu"``.
    backend: str
    #: Short description, e.g. ``"elementwise chain (4 ops)"``.
    label: str


class GraphPayload(TypedDict):
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    #: Optional description of the segments named by ``GraphNode.segment``.
    segments: NotRequired[list[GraphSegment]]


# --------------------------------------------------------------------------
# Messages.  Every message has ``type`` and ``protocol_version``.
# --------------------------------------------------------------------------


class SnapshotMessage(TypedDict):
    type: Literal["snapshot"]
    protocol_version: int
    functions: list[FunctionInfo]


class UpdateMessage(TypedDict):
    type: Literal["update"]
    protocol_version: int
    #: Functions that changed, complete (an entry replaces the previous one).
    functions: list[FunctionInfo]
    #: Ids of functions that no longer exist.
    removed: list[str]


class GraphMessage(TypedDict):
    type: Literal["graph"]
    protocol_version: int
    function: str
    signature: str
    graph: GraphPayload


class ErrorMessage(TypedDict):
    type: Literal["error"]
    protocol_version: int
    message: str


class ExportMessage(TypedDict):
    """The answer to ``request_export``: ``ok`` with the absolute ``path`` written, or not,
    with ``message`` saying why and the fix (the exporter's own words)."""

    type: Literal["export"]
    protocol_version: int
    function: str
    format: str
    path: str
    ok: bool
    message: str


class RequestSnapshotMessage(TypedDict):
    type: Literal["request_snapshot"]
    protocol_version: int


class RequestGraphMessage(TypedDict):
    type: Literal["request_graph"]
    protocol_version: int
    function: str
    signature: str


class RequestExportMessage(TypedDict):
    """Write the function out: ``format`` one of :data:`EXPORT_FORMATS`; ``path`` relative
    to the kernel's working directory or absolute."""

    type: Literal["request_export"]
    protocol_version: int
    function: str
    format: str
    path: str


KernelMessage = SnapshotMessage | UpdateMessage | GraphMessage | ErrorMessage | ExportMessage
FrontendMessage = RequestSnapshotMessage | RequestGraphMessage | RequestExportMessage

#: The export formats a ``request_export`` may name (jupyter/exporting.py writes them).
EXPORT_FORMATS = ("saved_model", "onnx", "source")

#: Paths from the frontend longer than this are rejected (no file system takes more).
MAX_PATH_LENGTH = 4096

_KERNEL_TYPES: dict[str, type] = {
    "snapshot": SnapshotMessage,
    "update": UpdateMessage,
    "graph": GraphMessage,
    "error": ErrorMessage,
    "export": ExportMessage,
}
_FRONTEND_TYPES: dict[str, type] = {
    "request_snapshot": RequestSnapshotMessage,
    "request_graph": RequestGraphMessage,
    "request_export": RequestExportMessage,
}


# --------------------------------------------------------------------------
# Builders: the kernel side calls these so ``type``/``protocol_version`` are
# never forgotten.
# --------------------------------------------------------------------------


def snapshot_message(functions: list[FunctionInfo]) -> SnapshotMessage:
    return {"type": "snapshot", "protocol_version": PROTOCOL_VERSION, "functions": functions}


def update_message(functions: list[FunctionInfo], removed: list[str]) -> UpdateMessage:
    return {
        "type": "update",
        "protocol_version": PROTOCOL_VERSION,
        "functions": functions,
        "removed": removed,
    }


def graph_message(function: str, signature: str, graph: GraphPayload) -> GraphMessage:
    return {
        "type": "graph",
        "protocol_version": PROTOCOL_VERSION,
        "function": function,
        "signature": signature,
        "graph": graph,
    }


def error_message(message: str) -> ErrorMessage:
    return {"type": "error", "protocol_version": PROTOCOL_VERSION, "message": message}


def export_message(function: str, fmt: str, path: str, ok: bool, message: str) -> ExportMessage:
    return {
        "type": "export",
        "protocol_version": PROTOCOL_VERSION,
        "function": function,
        "format": fmt,
        "path": path,
        "ok": ok,
        "message": message,
    }


# --------------------------------------------------------------------------
# Structural checking, driven by the TypedDicts above so the types are
# written once.  Handles exactly the annotation forms used in this module.
# --------------------------------------------------------------------------


def _check(value: Any, annotation: Any, path: str, problems: list[str]) -> None:
    origin = typing.get_origin(annotation)
    if annotation is Any:
        return
    if annotation is type(None):
        if value is not None:
            problems.append(f"{path}: expected null, got {type(value).__name__}")
        return
    if origin is Literal:
        if value not in typing.get_args(annotation):
            problems.append(f"{path}: expected one of {typing.get_args(annotation)!r}")
        return
    if origin in (Union, types.UnionType):
        options = typing.get_args(annotation)
        # Accept the value if any branch accepts it; report the first branch's
        # complaint otherwise (the unions here are "X | None", so that is X's).
        attempts: list[list[str]] = []
        for option in options:
            branch: list[str] = []
            _check(value, option, path, branch)
            if not branch:
                return
            attempts.append(branch)
        problems.extend(attempts[0])
        return
    if origin is list:
        if not isinstance(value, list):
            problems.append(f"{path}: expected a list, got {type(value).__name__}")
            return
        (item_type,) = typing.get_args(annotation)
        for index, item in enumerate(value):
            _check(item, item_type, f"{path}[{index}]", problems)
        return
    if typing.is_typeddict(annotation):
        _check_typeddict(value, annotation, path, problems)
        return
    # bool is an int subclass in Python but a different JSON type: keep them apart.
    if annotation is bool:
        if not isinstance(value, bool):
            problems.append(f"{path}: expected a boolean, got {type(value).__name__}")
        return
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"{path}: expected an integer, got {type(value).__name__}")
        return
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append(f"{path}: expected a number, got {type(value).__name__}")
        elif not math.isfinite(value):
            # NaN/Infinity are not JSON; browsers' JSON.parse rejects them.
            problems.append(f"{path}: expected a finite number, got {value!r}")
        return
    if annotation is str:
        if not isinstance(value, str):
            problems.append(f"{path}: expected a string, got {type(value).__name__}")
        return
    raise TypeError(f"protocol checker does not handle annotation {annotation!r}")


def _check_typeddict(value: Any, schema: Any, path: str, problems: list[str]) -> None:
    if not isinstance(value, dict):
        problems.append(f"{path}: expected an object, got {type(value).__name__}")
        return
    hints = typing.get_type_hints(schema)
    for key in schema.__required_keys__:
        if key not in value:
            problems.append(f"{path}.{key}: missing")
    for key, annotation in hints.items():
        if key in value:
            _check(value[key], annotation, f"{path}.{key}", problems)
    # Unknown keys are allowed on purpose: that is how optional fields are
    # added without bumping PROTOCOL_VERSION.


def check_kernel_message(msg: Any) -> list[str]:
    """Return every way *msg* departs from the contract (empty list: valid).

    Meant for tests of the kernel side: ``assert check_kernel_message(m) == []``.
    """
    if not isinstance(msg, dict):
        return [f"message: expected an object, got {type(msg).__name__}"]
    schema = _KERNEL_TYPES.get(msg.get("type"))  # type: ignore[arg-type]
    if schema is None:
        return [f"message.type: unknown kernel message type {msg.get('type')!r}"]
    problems: list[str] = []
    _check_typeddict(msg, schema, "message", problems)
    if msg.get("protocol_version") != PROTOCOL_VERSION and not problems:
        problems.append(f"message.protocol_version: expected {PROTOCOL_VERSION}")
    if msg["type"] in ("snapshot", "update") and not problems:
        problems.extend(_check_function_invariants(msg["functions"]))
    return problems


def _check_function_invariants(functions: list[FunctionInfo]) -> list[str]:
    """Rules the types cannot express: unique ids, one last-used signature."""
    problems: list[str] = []
    seen: set[str] = set()
    for index, function in enumerate(functions):
        if function["id"] in seen:
            problems.append(f"message.functions[{index}].id: duplicate {function['id']!r}")
        seen.add(function["id"])
        last_used = [s["id"] for s in function["signatures"] if s["last_used"]]
        if len(last_used) > 1:
            problems.append(
                f"message.functions[{index}].signatures: {len(last_used)} marked last_used"
            )
        signature_ids = [s["id"] for s in function["signatures"]]
        if len(set(signature_ids)) != len(signature_ids):
            problems.append(f"message.functions[{index}].signatures: duplicate ids")
    return problems


def validate_frontend_message(msg: Any) -> dict[str, Any] | None:
    """Validate a message received from the lab; ``None`` means "ignore it".

    *msg* is the comm message's ``content["data"]``.  On success a fresh dict
    holding only the known fields is returned, so extra keys sent by a newer or
    hostile frontend never reach the handler.  Every rejection is logged as a
    warning (with the reason, not the payload, which may be large).
    """
    reason = _frontend_problem(msg)
    if reason is not None:
        logger.warning("kernel_ext.inspector: ignoring frontend message: %s", reason)
        return None
    schema = _FRONTEND_TYPES[msg["type"]]
    return {key: msg[key] for key in typing.get_type_hints(schema) if key in msg}


def _frontend_problem(msg: Any) -> str | None:
    if not isinstance(msg, dict):
        return f"expected an object, got {type(msg).__name__}"
    kind = msg.get("type")
    if not isinstance(kind, str) or kind not in _FRONTEND_TYPES:
        # Say which type without echoing arbitrary data into the log.
        shown = repr(kind)[:40] if isinstance(kind, str) else type(kind).__name__
        return f"unknown message type {shown}"
    version = msg.get("protocol_version")
    if isinstance(version, bool) or not isinstance(version, int):
        return "protocol_version missing or not an integer"
    if version != PROTOCOL_VERSION:
        return f"protocol_version {version} is not supported (kernel speaks {PROTOCOL_VERSION})"
    problems: list[str] = []
    _check_typeddict(msg, _FRONTEND_TYPES[kind], "message", problems)
    if problems:
        return "; ".join(problems)
    for key in ("function", "signature"):
        value = msg.get(key)
        if isinstance(value, str) and not 0 < len(value) <= MAX_ID_LENGTH:
            return f"message.{key}: length must be 1..{MAX_ID_LENGTH}"
    if kind == "request_export":
        if msg["format"] not in EXPORT_FORMATS:
            return f"message.format: expected one of {', '.join(EXPORT_FORMATS)}"
        path = msg["path"]
        if not len(path.strip()) > 0 or len(path) > MAX_PATH_LENGTH or "\0" in path:
            return f"message.path: expected 1..{MAX_PATH_LENGTH} characters, no NUL"
    return None
