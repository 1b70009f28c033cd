"""Engine objects as plain records: the facts every notebook view shows, computed once here.

The four views of the notebook layer — the sidebar's comm (:mod:`.inspector`), the monitor
widget (:mod:`.monitor`), ``%retrace_report`` (:mod:`.report`) and the HTML/SVG pictures
(:mod:`.render`) — show the same facts about a ``kx.Function``: its parameter names, one row
per concrete signature, one entry per trace with its explanation, the fused segments of an
executor, the text of an abstract value.  Each fact has its home here, and each view only
*presents* it (as a protocol message, a widget, a report, markup).

Everything here is pure: plain functions from engine objects to dataclasses, TypedDicts,
strings.  No IPython, ipywidgets or comm import, no state, nothing written; so this module is
cheap to import and its tests need neither a shell nor a kernel.

What the views read of the engine is its public surface: ``Function.name``, ``.stats``,
``.concrete_functions``, ``.retraces``, ``.last_concrete_function``; ``ConcreteFunction``'s
``input_types``, ``record``, ``node_counts``, ``executable``, ``output_text()``; the
``TraceRecord`` fields; and :mod:`kernel_ext.engine.explain` for words (cause labels, diff
sentences, fixes).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from ..engine import explain
from ..ir.printer import describe_call, opaque_calls
from . import units
from .units import percent

__all__ = [
    "CallCounts",
    "DiffEntry",
    "RetraceEntry",
    "Segment",
    "SignatureRow",
    "call_counts",
    "compile_progress",
    "compile_states",
    "fix_pairs",
    "fix_texts",
    "fixes_at_call_site",
    "inputs_text",
    "is_backward",
    "last_used_id",
    "loop_note",
    "op_name",
    "opaque_note",
    "opaque_notes",
    "parameter_names",
    "parameter_names_of",
    "retrace_entry",
    "segment_index",
    "segments",
    "served_by",
    "shape_and_dtype",
    "shape_text",
    "signature_id",
    "signature_rows",
    "value_text",
]

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------------------


def parameter_names(function: Any) -> list[str]:
    """Parameter names of a ``kx.Function``, in order (``self`` excluded for a method: its
    ``python_function`` is then the bound method)."""
    return parameter_names_of(function.python_function)


def parameter_names_of(python_function: Any) -> list[str]:
    """Parameter names of any callable; ``[]`` when Python cannot say (some builtins)."""
    try:
        return list(inspect.signature(python_function).parameters)
    except (TypeError, ValueError):
        return []


# ---------------------------------------------------------------------------------------------
# Counters
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CallCounts:
    """How a Function's calls went, as every view counts them (``Function.stats``)."""

    calls: int
    traces: int
    #: Calls that ran an existing trace.
    cache_hits: int
    #: Calls that ran the Python body instead (eager mode, a call guard).
    eager_calls: int
    #: Calls that raised before running a graph (wrong arguments, an input_signature
    #: mismatch, an argument that cannot be traced, a failed trace): no cache hits.
    failed_calls: int

    @property
    def hit_rate(self) -> float | None:
        """Cache hits per call (``None`` before any call); failed calls count as calls."""
        return self.cache_hits / self.calls if self.calls else None

    def hit_rate_text(self) -> str:
        """``" (75%)"``, ``" (99.7%)"`` (never 100% unless every call hit: the views' one
        rule, :func:`.units.percent`), or ``""`` before any call."""
        return "" if not self.calls else f" ({percent(self.cache_hits, self.calls)})"


def call_counts(stats: dict) -> CallCounts:
    """The counters of ``Function.stats`` (a missing one is 0)."""

    def count(key: str) -> int:
        return int(stats.get(key) or 0)

    return CallCounts(
        count("calls"),
        count("traces"),
        count("cache_hits"),
        count("eager_calls"),
        count("failed_calls"),
    )


# ---------------------------------------------------------------------------------------------
# Values and graph nodes
# ---------------------------------------------------------------------------------------------


def op_name(node: Any) -> str:
    """The op kind of a graph node as text (``"tanh"``, ``"placeholder"``, ``"cond"``)."""
    return str(getattr(node.op, "value", node.op))


def opaque_note(node: Any) -> str | None:
    """What every view says of a node that runs a Python callable as it is, or None:
    ``"opaque: np.einsum — runs NumPy at each call"`` (a NumPy function without an op of its
    own), ``"random: np.random.rand — draws at each call"`` (a random draw)."""
    described = describe_call(node) if hasattr(node, "op") else None
    return None if described is None else _note(*described)


def _note(kind: str, name: str) -> str:
    if kind == "random":
        return f"random: {name} — draws at each call"
    return f"opaque: {name} — runs NumPy at each call"


def loop_note(node: Any) -> str | None:
    """What every view says of a graph loop AutoGraph made from a loop statement, or None:
    ``"loop at cell [3], line 4: `for j in range(n):`"``."""
    where = getattr(node, "meta", {}).get("where") if op_name(node) == "while" else None
    return None if not where else f"loop at {where}"


def is_backward(node: Any) -> bool:
    """Did a gradient's backward pass make this node (``tape.gradient``, ``kx.grad``: the
    ``backward`` note ``kernel_ext.autodiff`` sets in its ``meta``)? The views colour and
    label it apart."""
    return bool(getattr(node, "meta", {}).get("backward"))


def opaque_notes(graph: Any) -> tuple[str, ...]:
    """The :func:`opaque_note` of every node of ``graph`` and its sub-graphs, each once, in
    program order."""
    return tuple(dict.fromkeys(_note(*d) for d in opaque_calls(graph)))


def value_text(aval: Any) -> str:
    """An abstract value as the IR prints it: ``"float32[2, None]"``, ``"float32[*]"`` for
    unknown rank; a multi-output op (cond, while) as ``"(float32[2], int64[])"``; ``""`` for an
    op without a value (print, a variable write)."""
    if aval is None:
        return ""
    if isinstance(aval, tuple):
        return "(" + ", ".join(value_text(a) for a in aval) + ")"
    return str(aval)


def shape_text(shape: Sequence[int | None] | None) -> str:
    """A shape as the sidebar protocol writes it: ``"[2, None]"``, ``"[]"``, ``"?"`` for
    unknown rank (docs/protocol.md, ``GraphNode.shape``)."""
    if shape is None:
        return "?"
    return "[" + ", ".join("None" if d is None else str(d) for d in shape) + "]"


def shape_and_dtype(aval: Any) -> tuple[str, str]:
    """The protocol's ``(shape, dtype)`` of an abstract value: ``("[2, 3]", "float64")``.

    A multi-output op has no single dtype: its values go whole into ``shape`` as
    ``"(float32[2], int64[])"`` and ``dtype`` is ``""``; so does an op without a value.
    """
    if aval is None:
        return "", ""
    if isinstance(aval, tuple):
        parts = [dtype + shape for shape, dtype in map(shape_and_dtype, aval)]
        return "(" + ", ".join(parts) + ")", ""
    dtype = getattr(aval, "dtype", None)
    return shape_text(getattr(aval, "shape", None)), getattr(dtype, "name", str(dtype))


# ---------------------------------------------------------------------------------------------
# Concrete signatures
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SignatureRow:
    """One concrete signature (trace) of a Function, as every view lists it."""

    #: The trace number as text (``"2"``): unlike a position in ``concrete_functions`` it
    #: survives the release of traces keyed by objects that died.
    id: str
    #: Parameters with their types, Python values as literals: ``"x: float32[2], n: 3"``.
    inputs: str
    #: The engine's one-line signature of the trace: ``"x: float32[2], n: 3"`` (the same
    #: text as ``inputs`` where the parameter names pair up with the types).
    signature: str
    #: The returned structure: ``"float32[2]"``, ``"(float32[], int64[3])"``.
    outputs: str
    #: The signature the latest graph call ran.
    last_used: bool
    nodes_traced: int
    nodes_optimised: int
    #: The executor: ``"numpy"``, ``"numba"``, ...
    backend: str
    #: Opaque NumPy calls and random draws of the trace (:func:`opaque_notes`).
    opaque: tuple[str, ...] = ()
    #: What AutoGraph made of each loop statement: iterations unrolled, graph loops
    #: (``ConcreteFunction.loops``).
    loops: tuple[str, ...] = ()
    #: Which executor serves the trace and why, under tiered ``auto`` (``cf.tier``), or "".
    tier: str = ""
    #: Dask backend: tasks in the Dask graph of the latest call (None: not Dask, or not
    #: called yet).
    tasks: int | None = None
    #: Dask backend: the dashboard address of the ``distributed.Client`` that existed at the
    #: latest call (None: no client, or not Dask); the views link it beside the task count.
    dashboard: str | None = None

    @property
    def backend_text(self) -> str:
        """The backend as the views show it: ``"numba-cpu"``, ``"dask · 36 tasks"``."""
        return self.backend if self.tasks is None else f"{self.backend} · {self.tasks} tasks"

    #: Which path serves the trace, for people (:func:`served_by`): ``"NumPy executor"``,
    #: ``"fused kernels (numba-cpu)"``, ``"whole graph (numba-cpu)"``, ``"CUDA kernels
    #: (numba-cuda)"``, or under tiered ``auto`` ``"tiered auto: <the tier note>"``.
    served_by: str = ""
    #: Background compilation of its kernels, for people (:func:`compile_progress`), or "".
    compile: str = ""
    #: The kernels' summary state: ``"pending"``, ``"queued"``, ``"compiling"``,
    #: ``"ready"``, ``"failed"``; "" without kernels.
    compile_state: str = ""


def signature_id(concrete_function: Any) -> str:
    """The id of a concrete function in every view: its trace number, as text."""
    return str(concrete_function.record.index)


def last_used_id(function: Any) -> str | None:
    """The :func:`signature_id` the latest graph call ran (None before any graph call)."""
    cf = function.last_concrete_function
    return None if cf is None else signature_id(cf)


def inputs_text(parameters: Sequence[str], concrete_function: Any) -> str:
    """``"x: float32[2, None], n: 3"``: tensors as dtype[shape], Python values as literals,
    structures with their parts so (``cfg: {'lr': 0.1, 'w': float32[2]}``): the engine's
    ``describe``, the same text as the signature its explanations print.

    Falls back to the engine's ``signature_text()`` when the names do not pair up with the
    input types one to one (``*args``, ``**kwargs``).
    """
    types = concrete_function.input_types
    if len(parameters) != len(types):
        return str(concrete_function.signature_text())
    return ", ".join(f"{name}: {explain.describe(t)}" for name, t in zip(parameters, types))


def signature_rows(function: Any) -> list[SignatureRow]:
    """One :class:`SignatureRow` per live concrete function, in trace order."""
    parameters = parameter_names(function)
    last_used = last_used_id(function)
    rows = []
    for cf in function.concrete_functions:
        sid = signature_id(cf)
        counts = cf.node_counts
        backend = str(getattr(cf.executable, "backend", ""))
        found = _segments_or_none(cf.executable)
        compile_text, compile_state = compile_progress(found)
        tier = str(getattr(cf, "tier", "") or "")
        dask = getattr(cf.executable, "dask", None)
        rows.append(
            SignatureRow(
                id=sid,
                inputs=_text_or_mark(lambda: inputs_text(parameters, cf)),  # noqa: B023 - called now
                signature=str(cf.record.signature),
                outputs=_text_or_mark(cf.output_text),
                last_used=sid == last_used,
                nodes_traced=int(counts.get("traced", 0)),
                nodes_optimised=int(counts.get("optimised", 0)),
                backend=backend,
                opaque=_notes_or_none(cf),
                loops=tuple(getattr(cf, "loops", ())),
                tier=tier,
                served_by=served_by(
                    backend,
                    found,
                    tier,
                    str(getattr(getattr(cf.executable, "tier", None), "state", "") or ""),
                ),
                compile=compile_text,
                compile_state=compile_state,
                tasks=None if dask is None else dask.tasks,
                dashboard=None if dask is None else dashboard_url(dask.dashboard),
            )
        )
    return rows


def dashboard_url(link: Any) -> str | None:
    """A dashboard address the views may link: an ``http(s)://`` URL, else None (a link
    built from anything else, ``javascript:`` say, is never rendered)."""
    if not isinstance(link, str) or not link.startswith(("http://", "https://")):
        return None
    return link


def served_by(backend: str, found: Sequence[Segment], tier: str = "", tier_state: str = "") -> str:
    """How a trace runs, in one plain sentence every view shows (the details, such as the
    tier's note, go on hover): ``"runs as 13 compiled kernels (numba-cpu)"``, ``"runs as one
    compiled function (numba-cpu)"``, ``"runs through NumPy, one call per operation"``.

    Under tiered ``auto`` (``tier`` its note, ``tier_state`` where it is: counting,
    compiling, trial, whole, fused) the sentence says what happens next: ``"…; will try one
    compiled function after more calls"``.
    """
    kernels = [s for s in found if s.kind != "whole-graph"]
    whole = len(kernels) < len(found)
    if backend == "numpy" or not found:
        base = "runs through NumPy, one call per operation"
    elif tier_state == "whole" or (whole and not tier):
        base = f"runs as one compiled function ({backend})"
    elif backend.startswith("numba-cuda"):
        base = f"runs as {units.plural(len(kernels), 'CUDA kernel')} ({backend})"
    else:
        base = f"runs as {units.plural(len(kernels), 'compiled kernel')} ({backend})"
    if not tier:
        return base
    return base + _TIER_NEXT.get(tier_state, "")


#: What a tiered ``auto`` trace does next, by the tier's state (said after the sentence).
_TIER_NEXT = {
    "counting": "; will try one compiled function after more calls",
    "compiling": "; compiling one compiled function to compare",
    "trial": "; timing one compiled function against them",
    "fused": "; one compiled function was not faster",
}


#: Kernel states that count as compiled or not to be compiled at all.
_SETTLED = ("ready", "failed")

#: Waiting kernels named in the progress sentence (the rest are counted).
_WAITING_NAMED = 3


def compile_progress(found: Sequence[Segment]) -> tuple[str, str]:
    """``(text, state)`` of an executable's kernels: ``("compiling in the background: 2 of 13
    kernels ready, about 4.10 s left; waiting: s3 (multiply → tanh), s4 (sum) and 9 more;
    NumPy runs them meanwhile", "compiling")``; ``("", "ready")`` once every kernel is ready;
    ``("", "")`` without kernels. The estimate is the mean compile time of the kernels done
    so far, times those left. A failed kernel is said (its ops run through NumPy) whatever
    the others do."""
    live = [s for s in found if s.state and s.state != "unsupported"]
    states = [s.state for s in live]
    if not states:
        return "", ""
    total, ready, failed = len(states), states.count("ready"), states.count("failed")
    if failed:
        return (
            f"{failed} of {units.plural(total, 'kernel')} failed to compile: their ops "
            "run through NumPy",
            "failed",
        )
    if ready == total:
        return "", "ready"
    state = "compiling" if "compiling" in states else "queued" if "queued" in states else "pending"
    done = [s.compile_ms for s in live if s.state == "ready" and s.compile_ms]
    left = total - ready
    estimate = f", about {units.duration(sum(done) / len(done) * left)} left" if done else ""
    waiting = [s for s in live if s.state not in _SETTLED]
    named = [
        f"{s.id} ({_clip(' → '.join(s.ops) or s.kind or 'fused', 40)})"
        + (" compiling now" if s.state == "compiling" else "")
        for s in waiting[:_WAITING_NAMED]
    ]
    more = len(waiting) - len(named)
    names = ", ".join(named) + (f" and {more} more" if more > 0 else "")
    return (
        f"compiling in the background: {ready} of {units.plural(total, 'kernel')} ready"
        f"{estimate}; waiting: {names}; NumPy runs them meanwhile",
        state,
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def compile_states(function: Any) -> tuple:
    """Every kernel state of a function's traces: cheap, for the views' change checks (a
    kernel that finishes compiling changes what they show, with no call or trace)."""
    out = []
    for cf in function.concrete_functions:
        for raw in getattr(cf.executable, "segments", None) or ():
            if isinstance(raw, dict):
                out.append(raw.get("state"))
        tier = getattr(cf.executable, "tier", None)
        if tier is not None:
            out.append(tier.note)
    return tuple(out)


def _notes_or_none(concrete_function: Any) -> tuple[str, ...]:
    # The traced graph: the one the user's code made (the optimised one may have folded some).
    try:
        return opaque_notes(concrete_function.graph)
    except Exception:  # noqa: BLE001 - a view must not fail on a graph it cannot read
        logger.debug("kernel_ext.jupyter: cannot read a graph", exc_info=True)
        return ()


def _segments_or_none(executable: Any) -> list[Segment]:
    try:
        return segments(executable)
    except Exception:  # noqa: BLE001 - a view must not fail on a report it cannot read
        logger.debug("kernel_ext.jupyter: cannot read segment reports", exc_info=True)
        return []


def _text_or_mark(describe: Callable[[], str]) -> str:
    # A description that fails must not take a whole view down with it: "?" stands in.
    try:
        return str(describe())
    except Exception:  # noqa: BLE001
        logger.debug("kernel_ext.jupyter: cannot describe a signature", exc_info=True)
        return "?"


# ---------------------------------------------------------------------------------------------
# Fused segments
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """One fused segment an executor reports (``Executable.segments``: one dict each).

    Only the keys read here are relied on; a missing key has the default shown.
    """

    #: ``"s<id>"``: the executor's ``id``, else the entry's position in the list.
    id: str
    #: The executor the segment compiles for (default: the executable's backend).
    backend: str
    #: The names of the graph nodes fused into it.
    nodes: tuple[str, ...]
    #: The executor's own label for it, if it gave one.
    label: str | None = None
    #: ``"elementwise"``, ``"reduce"``, ... (None when not given).
    kind: str | None = None
    #: The op kinds, in order (for a legend: ``tanh → sum``).
    ops: tuple[str, ...] = ()
    #: Where its compilation is: ``"pending"``, ``"ready"``, ... (None when not given).
    state: str | None = None
    #: Milliseconds its compilation took so far (0 when not given).
    compile_ms: float = 0.0


def segments(executable: Any) -> list[Segment]:
    """The fused segments of an executable (none for the NumPy executor, or ``None``)."""
    backend = str(getattr(executable, "backend", ""))
    out = []
    for position, raw in enumerate(getattr(executable, "segments", None) or ()):
        if not isinstance(raw, dict):
            continue
        out.append(
            Segment(
                id=f"s{raw.get('id', position)}",
                backend=str(raw.get("backend") or backend),
                nodes=tuple(str(getattr(n, "name", n)) for n in raw.get("nodes", ()) or ()),
                label=str(raw["label"]) if raw.get("label") else None,
                kind=str(raw["kind"]) if raw.get("kind") else None,
                ops=tuple(str(o) for o in raw.get("ops", ()) or ()),
                state=str(raw["state"]) if raw.get("state") else None,
                compile_ms=float(raw.get("compile_ms") or 0.0),
            )
        )
    return out


def segment_index(found: Iterable[Segment]) -> dict[str, int]:
    """Node name -> position of the first segment that fuses it (a node is in at most one;
    the first wins should an executor report it twice)."""
    index: dict[str, int] = {}
    for position, segment in enumerate(found):
        for name in segment.nodes:
            index.setdefault(name, position)
    return index


# ---------------------------------------------------------------------------------------------
# Traces and their explanations
# ---------------------------------------------------------------------------------------------


class DiffEntry(TypedDict):
    """One argument that differs from the closest earlier trace."""

    argument: str  # "x", "config['lr']", "batch[0]"
    kind: str  # the engine's kind: "shape", "dtype", "python_value", ...
    old: str  # "float32[2]"
    new: str  # "float32[3]"
    sentence: str  # the difference said for people, with its consequence


class RetraceEntry(TypedDict):
    """One trace as plain data: what the report, the monitor's log and ``--json`` show."""

    trace: int  # 1-based trace number
    cause: str  # in words: "python value"
    category: str  # the engine's category: "python_value"
    call_site: str | None  # as the view's call-site formatter says it
    signature: str  # the traced signature, one line
    closest: int | None  # the closest earlier trace, if any
    closest_signature: str
    diffs: list[DiffEntry]
    trace_ms: float  # rounded to the µs
    compile_ms: float
    cost_ms: float
    advice: str  # why it retraced and what to do, for people
    fixes: list[str]  # copyable code, best first, without repeats
    #: What each fix does, replayed against the recorded calls ("1 trace instead of 3"),
    #: parallel to ``fixes`` ("" where it could not be replayed).
    effects: list[str]
    via: str  # "call" or "get_concrete_function"


def fix_texts(fixes: Iterable[explain.Fix], magic: bool) -> list[str]:
    """Fixes as copyable code, best first, without repeats: ``%%tffunction`` options when
    ``magic`` (the function came from the magic) and the fix has that form, else Python."""
    return [text for text, _ in fix_pairs(fixes, magic)]


def fix_pairs(fixes: Iterable[explain.Fix], magic: bool) -> list[tuple[str, str]]:
    """``(code, effect)`` per fix, as :func:`fix_texts` lists them, with what each does to
    the recorded calls (:attr:`kernel_ext.engine.fixes.Fix.effect`)."""
    out: dict[str, str] = {}
    for fix in fixes:
        out.setdefault(fix.magic if magic and fix.magic else fix.code, fix.effect)
    return list(out.items())


def fixes_at_call_site(record: explain.TraceRecord) -> list[explain.Fix]:
    """The record's fixes, an argument fix rewritten as the call the user wrote
    (``decay(w, np.float64(lr))``) where the call site's line can be read."""
    return [
        explain.fix_at_call_site(f, record.function_name, record.call_site) for f in record.fixes
    ]


def retrace_entry(
    record: explain.TraceRecord, call_site: Callable[[str], str | None], magic: bool
) -> RetraceEntry:
    """One trace (a ``TraceRecord``) as a :class:`RetraceEntry`.

    ``call_site`` turns the engine's raw ``"file:line"`` (``""`` when unknown) into what the
    view shows: the report says ``"cell [5], line 3"`` or ``"unknown"``, the sidebar None for
    what it cannot say without a temporary file name.  Reading the entry works out the
    record's explanation (closest trace, differences, fixes) if nothing has yet.
    """
    fixes = fix_pairs(fixes_at_call_site(record), magic)
    return {
        "trace": record.index,
        "cause": explain.cause_label(record.cause),
        "category": record.cause,
        "call_site": call_site(record.call_site),
        "signature": record.signature,
        "closest": record.closest,
        "closest_signature": record.closest_signature,
        "diffs": [
            {
                "argument": d.argument,
                "kind": d.kind,
                "old": d.old,
                "new": d.new,
                "sentence": explain.describe_diff(d),
            }
            for d in record.diffs
        ],
        "trace_ms": round(record.trace_ms, 3),
        "compile_ms": round(record.compile_ms, 3),
        "cost_ms": round(record.cost_ms, 3),
        "advice": record.advice,
        "fixes": [code for code, _ in fixes],
        "effects": [effect for _, effect in fixes],
        "via": record.via,
    }
