"""Trace records: why each trace happened, compared with the traces before it.

Each trace of a Function leaves a :class:`TraceRecord`. For every trace after the first, the
record holds the *closest* earlier signature and the per-argument differences to it
(:class:`ArgumentDiff`: shape, dtype, Python value, object identity, structure), so the notebook
UI, the retracing warning and ``--strict`` errors all say the same thing. The comparison with
earlier traces is indexed (:class:`TraceIndex`) and runs when a record is first read.

The fixes a record suggests come from :mod:`kernel_ext.engine.fixes`; the captured values it
froze from :mod:`kernel_ext.engine.snapshots`. Everything here runs on the slow path only (a
trace, a report), never on a cache hit.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..trace.state import set_location_formatter
from ..trace.types import (
    Composite,
    Dataclass,
    Dict,
    Literal,
    Sequence_,
    TensorSpec,
    TraceType,
    VariableType,
    WeakRef,
)

if TYPE_CHECKING:
    from .fixes import Fix
    from .snapshots import CapturedValue

CAUSE_LABELS = {
    "first_trace": "first trace",
    "shape": "shape",
    "rank": "rank",
    "dtype": "dtype",
    "python_value": "python value",
    "python_to_array": "python value → array",
    "array_to_python": "array → python value",
    "type": "python type",
    "object": "object identity",
    "function_object": "new function object",
    "structure": "structure",
    "new_signature": "new signature",
    "released": "earlier traces released (the object they were keyed by died)",
}


def cause_label(cause: str) -> str:
    """``"python_value"`` -> ``"python value"`` (the words the UI shows)."""
    return CAUSE_LABELS.get(cause, cause.replace("_", " "))


@dataclass(frozen=True)
class ArgumentDiff:
    """One argument (or part of one) that differs from the closest earlier trace."""

    argument: str  # e.g. "x", "config['lr']", "batch[0]"
    kind: str  # "shape", "dtype", "rank", "python_value", "object", "structure", "type", ...
    old: str
    new: str
    # The trace types themselves, for explanations that need more than text (not compared).
    old_type: Any = field(default=None, compare=False, repr=False)
    new_type: Any = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.argument}: {self.old} -> {self.new} ({self.kind.replace('_', ' ')})"

    def sentence(self) -> str:
        """The difference said for people: ``x: float32[2] → float32[3] (dimension 0)``."""
        return describe_diff(self)


@dataclass(frozen=True)
class Explanation:
    """Why a trace happened: the closest earlier trace, the differences, the fixes."""

    cause: str  # "first_trace", "shape", "dtype", "python_value", ...
    diffs: list[ArgumentDiff] = field(default_factory=list)
    closest: int | None = None  # index of the closest earlier trace
    closest_signature: str = ""  # the signature of trace #closest
    advice: str = ""  # why it retraced and what to do, for people
    fixes: list[Fix] = field(default_factory=list)
    suggested_signature: tuple | None = None  # derived input_signature (TensorSpecs, values)


def _explained(name: str) -> property:
    def get(self: TraceRecord) -> Any:
        return getattr(self.explanation, name)

    get.__name__ = name
    get.__doc__ = f"``Explanation.{name}`` (worked out on first read)."
    return property(get)


@dataclass
class TraceRecord:
    """One trace of a Function (``Function.retraces`` lists them in order).

    The explanation (closest trace, differences, fixes) compares the new signature with every
    earlier one, so it is worked out when first read — by the UI, a report, a warning or a
    ``--strict`` check — not on every retrace: a function retraced for 50 shapes in a loop
    would otherwise pay a quadratic diagnosis nobody looks at. ``explain_with`` holds what
    it needs, frozen at trace time.
    """

    index: int  # 1-based trace number
    signature: str  # the traced input signature, one line
    explain_with: Explanation | Callable[[], Explanation] = field(repr=False, compare=False)
    trace_ms: float = 0.0
    compile_ms: float = 0.0
    call_site: str = ""
    call_number: int = 0  # which call of the Function caused it
    via: str = "call"  # "call" or "get_concrete_function"
    captured: tuple[CapturedValue, ...] = ()  # globals/closure values read at trace time
    function_name: str = ""
    magic_fixes: bool = False  # show fixes as %%tffunction options (made by the magic)

    @property
    def explanation(self) -> Explanation:
        if not isinstance(self.explain_with, Explanation):
            self.explain_with = self.explain_with()
        return self.explain_with

    cause = _explained("cause")
    diffs = _explained("diffs")
    closest = _explained("closest")
    closest_signature = _explained("closest_signature")
    advice = _explained("advice")
    fixes = _explained("fixes")
    suggested_signature = _explained("suggested_signature")

    @property
    def cost_ms(self) -> float:
        return self.trace_ms + self.compile_ms

    @property
    def fix(self) -> str | None:
        """The best fix as copyable Python code (None for a first trace)."""
        return self.fixes[0].code if self.fixes else None

    def summary(self) -> str:
        """One line: ``trace #2 vs trace #1: n: int 10 -> int 20 (python value)``."""
        if self.cause == "first_trace":
            return f"trace #{self.index}: first trace ({self.signature})"
        what = "; ".join(str(d) for d in self.diffs) or cause_label(self.cause)
        closest = f" vs trace #{self.closest}" if self.closest else ""
        return f"trace #{self.index}{closest}: {what}"

    def explain(self, call_site: Callable[[str], str] | None = None) -> str:
        """The whole explanation as plain text (what ``--strict`` errors and reports show)."""
        return explain_text(self, call_site)


# ---------------------------------------------------------------------------------------------
# Bounded history
# ---------------------------------------------------------------------------------------------

#: Records of released traces (the object keying them died) kept whole, the latest ones; the
#: older ones fold into :class:`ReleasedTraces`. A record of a live trace is always kept.
MAX_RELEASED_RECORDS = 64


@dataclass
class ReleasedTraces:
    """What is left of records folded away by :func:`bound_records`: how many traces, their
    trace numbers and what they cost. A notebook that calls a function with a new object per
    call releases a trace per object; their records would otherwise grow without end."""

    count: int = 0
    first: int | None = None  # the lowest and highest trace number folded
    last: int | None = None
    trace_ms: float = 0.0
    compile_ms: float = 0.0

    def add(self, record: TraceRecord) -> None:
        self.count += 1
        self.first = record.index if self.first is None else min(self.first, record.index)
        self.last = record.index if self.last is None else max(self.last, record.index)
        self.trace_ms += record.trace_ms
        self.compile_ms += record.compile_ms

    def summary(self) -> str:
        """``"12 earlier traces released (#3–#40), 8.1 ms"``; ``""`` when none."""
        if not self.count:
            return ""
        numbers = f"#{self.first}" if self.first == self.last else f"#{self.first}–#{self.last}"
        return (
            f"{self.count} earlier trace{'s' if self.count > 1 else ''} released ({numbers}, "
            f"keyed by objects that died), {self.trace_ms + self.compile_ms:.1f} ms; "
            "their explanations are no longer kept"
        )


def bound_records(
    records: Sequence[TraceRecord], live: set[int], keep_released: int | None = None
) -> tuple[list[TraceRecord], list[TraceRecord]]:
    """Split ``records`` (in trace order) into those kept and those to fold: every record
    whose trace number is in ``live``, and the latest ``keep_released`` of the others
    (default :data:`MAX_RELEASED_RECORDS`), are kept in order; the older released ones are
    returned for :meth:`ReleasedTraces.add`."""
    if keep_released is None:
        keep_released = MAX_RELEASED_RECORDS
    released = [r for r in records if r.index not in live]
    if len(released) <= keep_released:
        return list(records), []
    folded = released[: len(released) - keep_released]
    dropped = {id(r) for r in folded}
    return [r for r in records if id(r) not in dropped], folded


def format_call_site(raw: str) -> str:
    """``"file:line"`` as people should read it; the notebook extension installs a formatter
    that says ``"cell [5], line 3"`` instead of the kernel's temporary file name."""
    if not raw:
        return "unknown"
    formatter = _call_site_formatter or _default_call_site_formatter
    if formatter is not None:
        try:
            return formatter(raw)
        except Exception:  # noqa: BLE001 - a formatting problem must not hide the explanation
            pass
    return raw


_call_site_formatter: Callable[[str], str] | None = None
# What stands in while none is installed: under IPython, one naming cells (kernel_ext's
# package import installs it, so a notebook says "cell [5], line 3" without %load_ext).
_default_call_site_formatter: Callable[[str], str] | None = None


def set_call_site_formatter(formatter: Callable[[str], str] | None) -> None:
    """Install how raw call sites (``file:line``) are shown (the notebook maps cells); the
    locations trace-time errors name are shown the same way. None: the default again."""
    global _call_site_formatter
    _call_site_formatter = formatter
    set_location_formatter(formatter or _default_call_site_formatter)


def set_default_call_site_formatter(formatter: Callable[[str], str] | None) -> None:
    """Install the formatter used while :func:`set_call_site_formatter` has none."""
    global _default_call_site_formatter
    _default_call_site_formatter = formatter
    if _call_site_formatter is None:
        set_location_formatter(formatter)


def explain_text(record: TraceRecord, call_site: Callable[[str], str] | None = None) -> str:
    """Plain-text explanation of one trace: what changed, where, what it cost, the fix."""
    site = (call_site or format_call_site)(record.call_site) if record.call_site else "unknown"
    name = record.function_name or "function"
    cost = (
        f"{record.cost_ms:.1f} ms (trace {record.trace_ms:.1f} + compile {record.compile_ms:.1f})"
    )
    if record.cause == "first_trace":
        return (
            f"{name}: trace #{record.index}, first trace, at {site}\n"
            f"  signature: ({record.signature})\n  cost: {cost}"
        )
    lines = [f"{name}: trace #{record.index} retraced ({cause_label(record.cause)}) at {site}"]
    if record.closest:
        lines.append(
            f"  closest earlier signature, trace #{record.closest}: ({record.closest_signature})"
        )
    lines.append(f"  new signature: ({record.signature})")
    for d in record.diffs:
        lines.append(f"  - {describe_diff(d)}")
    lines.append(f"  cost: {cost}")
    if record.advice:
        lines.append(f"  why: {record.advice}")
    for i, fix in enumerate(record.fixes):
        code = fix.magic if record.magic_fixes and fix.magic else fix.code
        lines.append(
            f"  {'fix' if i == 0 else 'or '}: {code}" + (f"    # {fix.note}" if fix.note else "")
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Differences
# ---------------------------------------------------------------------------------------------

_FUNCTION_TYPES = frozenset(
    {
        "function",
        "method",
        "builtin_function_or_method",
        "partial",
        "method-wrapper",
        "cython_function_or_method",
    }
)


def _leaf_kind(old: TraceType, new: TraceType) -> str:
    if isinstance(old, TensorSpec) and isinstance(new, TensorSpec):
        if old.dtype != new.dtype:
            return "dtype"
        if old.shape is None or new.shape is None or len(old.shape) != len(new.shape):
            return "rank"
        return "shape"
    if isinstance(old, Literal) and isinstance(new, Literal):
        return "python_value" if type(old.value) is type(new.value) else "type"
    if isinstance(old, Literal) and isinstance(new, TensorSpec):
        return "python_to_array"
    if isinstance(old, TensorSpec) and isinstance(new, Literal):
        return "array_to_python"
    if isinstance(old, WeakRef) and isinstance(new, WeakRef):
        if old.type_name in _FUNCTION_TYPES and new.type_name in _FUNCTION_TYPES:
            return "function_object"
        return "object"
    if isinstance(old, VariableType) and isinstance(new, VariableType):
        return "object"
    if isinstance(old, Composite) and type(old) is type(new):
        return "structure"
    return "type"


def describe(t: TraceType) -> str:
    """``float32[2, 3]``, ``int 3``, ``[TensorSpec(...), ...]``: a trace type for people
    (``TraceType.describe``; structures show their repr)."""
    return t.describe()


def diff_types(old: TraceType, new: TraceType, path: str) -> list[ArgumentDiff]:
    """Leaf-level differences between two trace types (empty if ``new`` fits ``old``)."""
    if new.is_subtype_of(old):
        return []
    if isinstance(old, Composite) and old.same_structure(new):
        out: list[ArgumentDiff] = []
        same = cast("Composite", new)  # (same_structure: of old's own class)
        for i, (a, b) in enumerate(zip(old.components, same.components)):
            out.extend(diff_types(a, b, _child_path(old, path, i)))
        return out
    return [ArgumentDiff(path, _leaf_kind(old, new), describe(old), describe(new), old, new)]


def _child_path(t: Composite, path: str, i: int) -> str:
    if isinstance(t, Dict):
        return f"{path}[{t.keys[i]!r}]"
    if isinstance(t, Dataclass):
        return f"{path}.{t.names[i]}"
    if isinstance(t, Sequence_) and hasattr(t.container, "_fields"):
        return f"{path}.{t.container._fields[i]}"
    return f"{path}[{i}]"


def diff_call(
    names: Sequence[str], old: Sequence[TraceType], new: Sequence[TraceType]
) -> list[ArgumentDiff]:
    out: list[ArgumentDiff] = []
    for name, a, b in zip(names, old, new):
        out.extend(diff_types(a, b, name))
    return out


def _count_diffs(old: TraceType, new: TraceType) -> int:
    """How many leaves :func:`diff_types` would report, without describing them."""
    if new.is_subtype_of(old):
        return 0
    if isinstance(old, Composite) and old.same_structure(new):
        same = cast("Composite", new)  # (same_structure: of old's own class)
        return sum(_count_diffs(a, b) for a, b in zip(old.components, same.components))
    return 1


def closest_trace(
    names: Sequence[str],
    candidates: Sequence[tuple[int, Sequence[TraceType]]],
    new: Sequence[TraceType],
) -> tuple[int | None, list[ArgumentDiff]]:
    """The earlier trace with the fewest differing leaves, and those differences.

    Ties go to the latest such trace: it is the one the user most likely meant to reuse.
    Candidates are ranked by counting; only the winner's differences are described.
    """
    best: tuple[int, Sequence[TraceType]] | None = None
    best_count = 0
    for index, types_ in candidates:
        count = sum(_count_diffs(a, b) for a, b in zip(types_, new))
        if best is None or count <= best_count:
            best, best_count = (index, types_), count
    if best is None:
        return None, []
    return best[0], diff_call(names, best[1], new)


def _running(state: tuple | None, t: TraceType) -> tuple:
    """One argument's merge so far, extended by ``t``: ``("tensor", spec or None)`` while every
    type was a TensorSpec (TensorFlow's supertype, folded left as :func:`merge_column` folds
    it), ``("literal", Literal)`` while every type was that one Python value, else
    ``("other",)``."""
    if state is None:
        if type(t) is TensorSpec:
            return ("tensor", t)
        return ("literal", t) if type(t) is Literal else ("other",)
    if state[0] == "tensor" and type(t) is TensorSpec:
        merged = None if state[1] is None else state[1].most_specific_common_supertype([t])
        return ("tensor", merged if isinstance(merged, TensorSpec) else None)
    if state[0] == "literal" and type(t) is Literal and t == state[1]:
        return state
    return ("other",)


def _leaf_key(t: TraceType) -> Hashable | None:
    """A hashable stand-in for ``t`` such that, for an *exact* earlier type ``old``,
    ``new.is_subtype_of(old)`` holds exactly when the two keys are equal; None for anything
    else (composites, ``None`` dims, named specs, user types: compared one by one)."""
    cls = type(t)
    if cls is TensorSpec:
        if t.shape is None or None in t.shape:  # type: ignore[attr-defined]
            return None
        return ("tensor", t.shape, t.dtype)  # type: ignore[attr-defined]
    if cls in (Literal, VariableType, WeakRef):
        try:
            hash(t)
        except TypeError:
            return None
        return t
    return None


class TraceIndex:
    """Earlier traces' types, indexed so that ranking the closest one (:meth:`closest`) does
    not compare the new signature with every earlier one.

    Append-only, like the history it mirrors (an explanation freezes "the first ``n``").
    Traces whose every argument is an exact leaf (:func:`_leaf_key`; an array's shape and
    dtype, a Python value, an object) are found through one dict per argument: such a trace
    differs from the new signature in exactly the arguments whose keys differ, so its
    count is ``arguments - matches``; the others are compared type by type. A function
    retraced 500 times then explains its retraces in linear, not quadratic, time.
    """

    def __init__(self) -> None:
        self.entries: list[tuple[int, tuple]] = []  # (record index, input types)
        self.by_argument: list[dict[Hashable, list[int]]] = []
        self.exact: list[int] = []  # positions found through the dicts
        self.slow: list[int] = []  # positions compared type by type
        # Per prefix, per argument: the merge of its types so far (see merged_column).
        self.prefix: list[tuple[Any, ...]] = []

    def add(self, index: int, types_: Sequence[TraceType]) -> None:
        position = len(self.entries)
        self.entries.append((index, tuple(types_)))
        before = self.prefix[-1] if self.prefix else None
        self.prefix.append(
            tuple(_running(None if before is None else before[i], t) for i, t in enumerate(types_))
        )
        keys = [_leaf_key(t) for t in types_]
        if any(k is None for k in keys):
            self.slow.append(position)
            return
        while len(self.by_argument) < len(keys):
            self.by_argument.append({})
        for j, k in enumerate(keys):
            self.by_argument[j].setdefault(k, []).append(position)
        self.exact.append(position)

    def merged_column(self, n: int, new: Sequence[TraceType], i: int) -> Any:
        """What :func:`merge_column` answers for argument ``i`` over the first ``n`` entries
        and ``new``: in constant time while the argument has only been arrays, or one
        unchanged Python value (the cases a retrace loop produces), else by reading them."""
        state = _running(self.prefix[n - 1][i] if n else None, new[i])
        if state[0] == "tensor":
            return state[1]
        if state[0] == "literal":
            return state[1].value
        return merge_column([t[i] for _, t in self.entries[:n]] + [new[i]])

    def closest(
        self, names: Sequence[str], n: int, new: Sequence[TraceType]
    ) -> tuple[int | None, list[ArgumentDiff]]:
        """:func:`closest_trace` over the first ``n`` entries (same answer, ties included)."""
        keys = [_leaf_key(t) for t in new]
        if any(k is None for k in keys):
            return closest_trace(names, self.entries[:n], new)
        matches: dict[int, int] = {}
        for j, k in enumerate(keys):
            if j < len(self.by_argument):
                for p in self.by_argument[j].get(k, ()):
                    if p < n:
                        matches[p] = matches.get(p, 0) + 1
        # Exact traces without a single match all differ in every argument: of those only
        # the latest can win (ties go to the latest), so it is the one considered.
        candidates = set(matches)
        latest = bisect.bisect_left(self.exact, n) - 1
        if latest >= 0:
            candidates.add(self.exact[latest])
        slow = [p for p in self.slow if p < n]
        candidates.update(slow)
        slow_set = set(slow)
        best: tuple[int, tuple] | None = None
        best_count = 0
        for p in sorted(candidates):
            index, types_ = self.entries[p]
            if p in slow_set:
                count = sum(_count_diffs(a, b) for a, b in zip(types_, new))
            else:
                count = len(types_) - matches.get(p, 0)
            if best is None or count <= best_count:
                best, best_count = (index, types_), count
        if best is None:
            return None, []
        return best[0], diff_call(names, best[1], new)


def cause_of(diffs: Sequence[ArgumentDiff]) -> str:
    kinds = {d.kind for d in diffs}
    for kind in (
        "type",
        "python_to_array",
        "array_to_python",
        "structure",
        "dtype",
        "rank",
        "shape",
        "python_value",
        "function_object",
        "object",
    ):
        if kind in kinds:
            return kind
    return "new_signature"


def describe_diff(d: ArgumentDiff) -> str:
    """One difference in words, with the consequence that matters for that kind."""
    arrow = f"{d.old} → {d.new}"
    old, new = d.old_type, d.new_type
    if d.kind == "shape" and isinstance(old, TensorSpec) and isinstance(new, TensorSpec):
        changed = [
            str(i)
            # (a shape difference is one between two shapes of one known rank)
            for i, (a, b) in enumerate(zip(cast("tuple", old.shape), cast("tuple", new.shape)))
            if a is not None and a != b
        ]
        dims = "dimension" + ("s " if len(changed) > 1 else " ") + join_and(changed)
        return f"{d.argument}: shape {arrow} ({dims} changed)"
    if d.kind == "rank":
        return f"{d.argument}: rank changed, {arrow}"
    if d.kind == "dtype":
        return f"{d.argument}: dtype changed, {arrow}"
    if d.kind == "python_value" and isinstance(old, Literal) and isinstance(new, Literal):
        return (
            f"{d.argument}: Python {type(old.value).__name__} {old.value!r} → "
            f"{new.value!r} (a Python value is part of the signature: every new value "
            "traces again)"
        )
    if d.kind == "python_to_array" and isinstance(old, Literal):
        return (
            f"{d.argument}: Python {type(old.value).__name__} {old.value!r} → array "
            f"{d.new} (a Python value and an array never share a trace)"
        )
    if d.kind == "array_to_python" and isinstance(new, Literal):
        return (
            f"{d.argument}: array {d.old} → Python {type(new.value).__name__} "
            f"{new.value!r} (a Python value and an array never share a trace)"
        )
    if d.kind == "function_object":
        return (
            f"{d.argument}: a new function object ({d.new}); functions are keyed by "
            "identity, and a lambda or def evaluated again is a new object"
        )
    if d.kind == "object":
        return (
            f"{d.argument}: another object ({d.new}, was {d.old}); objects are keyed by "
            "identity/equality unless their class defines __tracing_type__"
        )
    if d.kind == "structure":
        return f"{d.argument}: structure changed, {arrow}"
    return f"{d.argument}: type changed, {arrow}"


def join_and(items: Sequence[str]) -> str:
    """``["a", "b", "c"]`` -> ``"a, b and c"``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# ---------------------------------------------------------------------------------------------
# Merged types (what the suggested input_signature is made of)
# ---------------------------------------------------------------------------------------------

#: Python numbers an input_signature may turn into 0-d arrays.
NUMERIC_LITERALS = (bool, int, float, complex)


def merge_column(column: Sequence[TraceType]) -> Any:
    """One argument's types over several traces, merged into what an ``input_signature``
    entry for it would be: the Python value if it never varied, the common TensorSpec of
    arrays (``None`` dims where sizes varied), a 0-d spec for numbers that were passed both as
    Python numbers and 0-d arrays; ``None`` when no entry fits (objects, mixed dtypes)."""
    if all(isinstance(t, Literal) for t in column) and len(set(column)) == 1:
        return cast("Literal", column[0]).value  # never varied: keep the Python value itself
    if all(isinstance(t, TensorSpec) for t in column):
        merged = column[0].most_specific_common_supertype(list(column[1:]))
        return merged if isinstance(merged, TensorSpec) else None
    literals = [t.value for t in column if isinstance(t, Literal)]
    arrays = [t for t in column if isinstance(t, TensorSpec)]
    if not all(isinstance(v, NUMERIC_LITERALS) for v in literals) or len(literals) + len(
        arrays
    ) != len(column):
        return None
    if any(a.shape != () for a in arrays) or len({a.dtype for a in arrays}) > 1:
        return None
    dtype = arrays[0].dtype if arrays else np.asarray(literals).dtype
    return TensorSpec((), dtype)
