"""Retrace explanations: which argument changed, how, what it cost, how to avoid it.

Each trace of a Function leaves a :class:`TraceRecord`. For every trace after the first, the
record holds the *closest* earlier signature and the per-argument differences to it (shape,
dtype, Python value, object identity, structure), so the notebook UI, the retracing warning and
``--strict`` errors can all say the same thing.

A record also carries what to do about it: :class:`Fix` es in copyable code (an
``input_signature`` derived from every shape the function has seen, ``reduce_retracing``, an
array instead of a Python number, ...), and a snapshot of the globals and closure values the
traced body read (:class:`CapturedValue`), so :func:`stale_captures` can say later that a
global changed after the graph froze its value.

Everything here runs on the slow path only (a trace), never on a cache hit.
"""

from __future__ import annotations

import bisect
import dis
import functools
import types
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Sequence

import numpy as np

from .. import errors
from ..trace.types import (Dataclass, Dict, Literal, Sequence_, TensorSpec, TraceType,
                           VariableType, WeakRef, Composite)

# ---------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------

#: Cause categories -> words for people (also the sidebar protocol's ``cause`` strings).
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


StrictRetraceError = errors.StrictRetraceError  # re-exported: the magics import it here


@dataclass(frozen=True)
class ArgumentDiff:
    """One argument (or part of one) that differs from the closest earlier trace."""

    argument: str  # e.g. "x", "config['lr']", "batch[0]"
    kind: str      # "shape", "dtype", "rank", "python_value", "object", "structure", "type", ...
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
class Fix:
    """One way to avoid a retrace, as copyable code.

    ``code`` is Python (``@kx.function(...)`` options or the call's argument); ``magic`` the
    same fix for a ``%%tffunction`` cell (None when it has no magic form).
    """

    kind: str      # "input_signature", "reduce_retracing", "array_argument", "cast", ...
    code: str
    magic: str | None = None
    note: str = ""


@dataclass(frozen=True)
class CapturedValue:
    """A global or closure value the traced body read, as it was at trace time."""

    name: str                 # "SCALE", or "helper.SCALE" when read by a called helper
    kind: str                 # "global" or "closure"
    text: str                 # short description of the value at trace time
    fingerprint: Hashable     # equal fingerprints: the value did not change
    source: Any = field(compare=False, repr=False, default=None)  # globals dict or cell
    key: str = ""             # the name to look up in ``source``

    def current(self) -> tuple[bool, Any]:
        """``(exists, value)`` now."""
        if self.kind == "closure":
            try:
                return True, self.source.cell_contents
            except ValueError:
                return False, None
        if isinstance(self.source, dict) and self.key in self.source:
            return True, self.source[self.key]
        return False, None


@dataclass(frozen=True)
class Explanation:
    """Why a trace happened: the closest earlier trace, the differences, the fixes."""

    cause: str                    # "first_trace", "shape", "dtype", "python_value", ...
    diffs: list[ArgumentDiff] = field(default_factory=list)
    closest: int | None = None    # index of the closest earlier trace
    closest_signature: str = ""   # the signature of trace #closest
    advice: str = ""              # why it retraced and what to do, for people
    fixes: list[Fix] = field(default_factory=list)
    suggested_signature: tuple | None = None   # derived input_signature (TensorSpecs, values)


def _explained(name: str) -> property:
    def get(self: "TraceRecord") -> Any:
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

    index: int                    # 1-based trace number
    signature: str                # the traced input signature, one line
    explain_with: Explanation | Callable[[], Explanation] = field(repr=False, compare=False)
    trace_ms: float = 0.0
    compile_ms: float = 0.0
    call_site: str = ""
    call_number: int = 0          # which call of the Function caused it
    via: str = "call"             # "call" or "get_concrete_function"
    captured: tuple[CapturedValue, ...] = ()   # globals/closure values read at trace time
    function_name: str = ""
    magic_fixes: bool = False     # show fixes as %%tffunction options (made by the magic)

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
    def cause_text(self) -> str:
        return cause_label(self.cause)

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


def format_call_site(raw: str) -> str:
    """``"file:line"`` as people should read it; the notebook extension installs a formatter
    that says ``"cell [5], line 3"`` instead of the kernel's temporary file name."""
    if not raw:
        return "unknown"
    formatter = _call_site_formatter
    if formatter is not None:
        try:
            return formatter(raw)
        except Exception:  # noqa: BLE001 - a formatting problem must not hide the explanation
            pass
    return raw


_call_site_formatter: Callable[[str], str] | None = None


def set_call_site_formatter(formatter: Callable[[str], str] | None) -> None:
    """Install how raw call sites (``file:line``) are shown (the notebook maps cells)."""
    global _call_site_formatter
    _call_site_formatter = formatter


def explain_text(record: TraceRecord, call_site: Callable[[str], str] | None = None) -> str:
    """Plain-text explanation of one trace: what changed, where, what it cost, the fix."""
    site = (call_site or format_call_site)(record.call_site) if record.call_site else "unknown"
    name = record.function_name or "function"
    cost = f"{record.cost_ms:.1f} ms (trace {record.trace_ms:.1f} + compile " \
           f"{record.compile_ms:.1f})"
    if record.cause == "first_trace":
        return (f"{name}: trace #{record.index}, first trace, at {site}\n"
                f"  signature: ({record.signature})\n  cost: {cost}")
    lines = [f"{name}: trace #{record.index} retraced ({cause_label(record.cause)}) "
             f"at {site}"]
    if record.closest:
        lines.append(f"  closest earlier signature, trace #{record.closest}: "
                     f"({record.closest_signature})")
    lines.append(f"  new signature: ({record.signature})")
    for d in record.diffs:
        lines.append(f"  - {describe_diff(d)}")
    lines.append(f"  cost: {cost}")
    if record.advice:
        lines.append(f"  why: {record.advice}")
    for i, fix in enumerate(record.fixes):
        code = fix.magic if record.magic_fixes and fix.magic else fix.code
        lines.append(f"  {'fix' if i == 0 else 'or '}: {code}"
                     + (f"    # {fix.note}" if fix.note else ""))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Differences
# ---------------------------------------------------------------------------------------------

_FUNCTION_TYPES = frozenset({"function", "method", "builtin_function_or_method", "partial",
                             "method-wrapper", "cython_function_or_method"})


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
    return t.describe() if not isinstance(t, Composite) else repr(t)


def diff_types(old: TraceType, new: TraceType, path: str) -> list[ArgumentDiff]:
    """Leaf-level differences between two trace types (empty if ``new`` fits ``old``)."""
    if new.is_subtype_of(old):
        return []
    if isinstance(old, Composite) and old.same_structure(new):
        out: list[ArgumentDiff] = []
        for i, (a, b) in enumerate(zip(old.components, new.components)):
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


def diff_call(names: Sequence[str], old: Sequence[TraceType],
              new: Sequence[TraceType]) -> list[ArgumentDiff]:
    out: list[ArgumentDiff] = []
    for name, a, b in zip(names, old, new):
        out.extend(diff_types(a, b, name))
    return out


def _count_diffs(old: TraceType, new: TraceType) -> int:
    """How many leaves :func:`diff_types` would report, without describing them."""
    if new.is_subtype_of(old):
        return 0
    if isinstance(old, Composite) and old.same_structure(new):
        return sum(_count_diffs(a, b) for a, b in zip(old.components, new.components))
    return 1


def closest_trace(names: Sequence[str], candidates: Sequence[tuple[int, Sequence[TraceType]]],
                  new: Sequence[TraceType]) -> tuple[int | None, list[ArgumentDiff]]:
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
    type was a TensorSpec (TensorFlow's supertype, folded left as :func:`_merge_column` folds
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
        self.entries: list[tuple[int, tuple]] = []   # (record index, input types)
        self.by_argument: list[dict[Hashable, list[int]]] = []
        self.exact: list[int] = []                   # positions found through the dicts
        self.slow: list[int] = []                    # positions compared type by type
        # Per prefix, per argument: the merge of its types so far (see merged_column).
        self.prefix: list[tuple[Any, ...]] = []

    def add(self, index: int, types_: Sequence[TraceType]) -> None:
        position = len(self.entries)
        self.entries.append((index, tuple(types_)))
        before = self.prefix[-1] if self.prefix else None
        self.prefix.append(tuple(_running(None if before is None else before[i], t)
                                 for i, t in enumerate(types_)))
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
        """What :func:`_merge_column` answers for argument ``i`` over the first ``n`` entries
        and ``new``: in constant time while the argument has only been arrays, or one
        unchanged Python value (the cases a retrace loop produces), else by reading them."""
        state = _running(self.prefix[n - 1][i] if n else None, new[i])
        if state[0] == "tensor":
            return state[1]
        if state[0] == "literal":
            return state[1].value
        return _merge_column([t[i] for _, t in self.entries[:n]] + [new[i]])

    def closest(self, names: Sequence[str], n: int,
                new: Sequence[TraceType]) -> tuple[int | None, list[ArgumentDiff]]:
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
    for kind in ("type", "python_to_array", "array_to_python", "structure", "dtype", "rank",
                 "shape", "python_value", "function_object", "object"):
        if kind in kinds:
            return kind
    return "new_signature"


def describe_diff(d: ArgumentDiff) -> str:
    """One difference in words, with the consequence that matters for that kind."""
    arrow = f"{d.old} → {d.new}"
    old, new = d.old_type, d.new_type
    if d.kind == "shape" and isinstance(old, TensorSpec) and isinstance(new, TensorSpec):
        changed = [str(i) for i, (a, b) in enumerate(zip(old.shape, new.shape))
                   if a is not None and a != b]
        dims = "dimension" + ("s " if len(changed) > 1 else " ") + _and(changed)
        return f"{d.argument}: shape {arrow} ({dims} changed)"
    if d.kind == "rank":
        return f"{d.argument}: rank changed, {arrow}"
    if d.kind == "dtype":
        return f"{d.argument}: dtype changed, {arrow}"
    if d.kind == "python_value" and isinstance(old, Literal) and isinstance(new, Literal):
        return (f"{d.argument}: Python {type(old.value).__name__} {old.value!r} → "
                f"{new.value!r} (a Python value is part of the signature: every new value "
                "traces again)")
    if d.kind == "python_to_array" and isinstance(old, Literal):
        return (f"{d.argument}: Python {type(old.value).__name__} {old.value!r} → array "
                f"{d.new} (a Python value and an array never share a trace)")
    if d.kind == "array_to_python" and isinstance(new, Literal):
        return (f"{d.argument}: array {d.old} → Python {type(new.value).__name__} "
                f"{new.value!r} (a Python value and an array never share a trace)")
    if d.kind == "function_object":
        return (f"{d.argument}: a new function object ({d.new}); functions are keyed by "
                "identity, and a lambda or def evaluated again is a new object")
    if d.kind == "object":
        return (f"{d.argument}: another object ({d.new}, was {d.old}); objects are keyed by "
                "identity/equality unless their class defines __tracing_type__")
    if d.kind == "structure":
        return f"{d.argument}: structure changed, {arrow}"
    return f"{d.argument}: type changed, {arrow}"


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# ---------------------------------------------------------------------------------------------
# Fixes
# ---------------------------------------------------------------------------------------------

_NUMERIC_LITERALS = (bool, int, float, complex)


def derive_input_signature(observed: Sequence[Sequence[TraceType]],
                           varying: Iterable[int],
                           merge: Callable[[int], Any] | None = None) -> tuple | None:
    """An ``input_signature`` that accepts every observed call without retracing.

    ``observed`` holds one tuple of trace types per trace (and the new call); ``varying`` the
    positions of the parameters that changed. Dimensions that took several values become
    ``None``; Python numbers that changed become 0-d arrays (``input_signature`` converts
    later Python numbers for you). The signature covers parameters up to the last varying one;
    ``None`` when one of them cannot be expressed (objects, structures, mixed dtypes).
    ``merge(i)``, where given, answers for column ``i`` without reading ``observed``
    (:meth:`TraceIndex.merged_column`).
    """
    varying = sorted(set(varying))
    if not varying or not observed:
        return None
    out: list[Any] = []
    for i in range(varying[-1] + 1):
        if merge is not None:
            spec = merge(i)
        else:
            spec = _merge_column([types_[i] for types_ in observed if i < len(types_)])
        if spec is None:
            return None
        out.append(spec)
    return tuple(out)


def _merge_column(column: Sequence[TraceType]) -> Any:
    if all(isinstance(t, Literal) for t in column) and len(set(column)) == 1:
        return column[0].value  # never varied: keep the Python value itself
    if all(isinstance(t, TensorSpec) for t in column):
        merged = column[0].most_specific_common_supertype(list(column[1:]))
        return merged if isinstance(merged, TensorSpec) else None
    literals = [t.value for t in column if isinstance(t, Literal)]
    arrays = [t for t in column if isinstance(t, TensorSpec)]
    if not all(isinstance(v, _NUMERIC_LITERALS) for v in literals) or \
            len(literals) + len(arrays) != len(column):
        return None
    if any(a.shape != () for a in arrays) or len({a.dtype for a in arrays}) > 1:
        return None
    dtype = arrays[0].dtype if arrays else np.asarray(literals).dtype
    return TensorSpec((), dtype)


def spec_text(names: Sequence[str], signature: Sequence[Any]) -> str:
    """``"x: float32[None, 3], n: int64[]"``: the ``--input-signature`` mini-language."""
    parts = []
    for name, spec in zip(names, signature):
        text = spec.describe() if isinstance(spec, TensorSpec) else repr(spec)
        parts.append(f"{name}: {text}")
    return ", ".join(parts)


def signature_code(signature: Sequence[Any]) -> str:
    """``[kx.TensorSpec([None, 3], np.float32), 2]``: Python code for an input_signature."""
    parts = []
    for spec in signature:
        if isinstance(spec, TensorSpec):
            shape = "None" if spec.shape is None else \
                "[" + ", ".join("None" if d is None else str(d) for d in spec.shape) + "]"
            parts.append(f"kx.TensorSpec({shape}, np.{spec.dtype.name})")
        else:
            parts.append(repr(spec))
    return "[" + ", ".join(parts) + "]"


def suggest_fixes(function_name: str, names: Sequence[str],
                  history: Sequence[Sequence[TraceType]], new: Sequence[TraceType],
                  diffs: Sequence[ArgumentDiff], merge: Callable[[int], Any] | None = None
                  ) -> tuple[str, list[Fix], tuple | None]:
    """``(advice, fixes, derived input_signature)`` for a retrace with these differences.

    ``history`` is every earlier trace's types, ``new`` the call's. Fixes are ordered best
    first and are copyable: decorator options, a magic line, or the argument to pass.
    """
    kinds = {d.kind for d in diffs}
    top = [d.argument.split("[")[0].split(".")[0] for d in diffs]
    positions = [names.index(a) for a in dict.fromkeys(top) if a in names]
    signature = derive_input_signature([*history, new], positions, merge)
    fixes: list[Fix] = []

    def signature_fix(note: str = "") -> None:
        if signature is not None and not any(f.kind == "input_signature" for f in fixes):
            fixes.append(Fix(
                "input_signature",
                f"@kx.function(input_signature={signature_code(signature)})",
                f'%%tffunction --input-signature "{spec_text(names, signature)}"', note))

    advice: list[str] = []
    numeric_value = [d for d in diffs if d.kind in ("python_value", "python_to_array",
                                                    "array_to_python")
                     and _numeric_literal(d.old_type if d.kind != "array_to_python"
                                          else d.new_type)]
    shaped = [d.argument for d in diffs if d.kind in ("shape", "rank")]
    if "dtype" in kinds:
        d = next(d for d in diffs if d.kind == "dtype")
        old = d.old_type.dtype.name if isinstance(d.old_type, TensorSpec) else "the old dtype"
        advice.append(f"'{d.argument}' arrived with another dtype ({d.old} before, {d.new} "
                      "now); dtypes are part of the signature, so convert before calling.")
        fixes.append(Fix("cast", f"{d.argument}.astype(np.{old})",
                         note=f"cast {d.argument} at the call site, every call"))
    if numeric_value:
        d = numeric_value[0]
        value = next(t.value for t in (d.new_type, d.old_type) if isinstance(t, Literal))
        advice.append(f"'{d.argument}' is passed as a Python number, and Python values are "
                      "part of the signature (each new value is a new graph): pass an array "
                      "so the value becomes a graph input, or fix the signature so Python "
                      "numbers are converted to arrays.")
        signature_fix("Python numbers are converted to arrays")
        fixes.append(Fix("array_argument", f"{d.argument}=np.{_dtype_for(d)}({value!r})",
                         note=f"pass {d.argument} as an array, at every call"))
    if shaped:
        advice.append(f"the shape of {_and([repr(a) for a in dict.fromkeys(shaped)])} "
                      "changed, and each shape is a new signature: declare the dimensions "
                      "that vary as None (one graph for all sizes), or let the function "
                      "generalise them itself.")
        signature_fix("dimensions seen with several sizes are None")
        fixes.append(Fix("reduce_retracing", "@kx.function(reduce_retracing=True)",
                         "%%tffunction --reduce-retracing",
                         "widens varying dimensions to None after they change"))
    if "function_object" in kinds:
        d = next(d for d in diffs if d.kind == "function_object")
        advice.append(f"'{d.argument}' is a new function object at each call (a lambda or def "
                      "evaluated again, e.g. inside a loop or a re-run cell); functions are "
                      "keyed by identity: define it once and pass the same object.")
        fixes.append(Fix("same_object", f"{d.argument} = ...  # define once, outside the loop,"
                         " then pass the same object", note="reuse one function object"))
    if "object" in kinds:
        d = next(d for d in diffs if d.kind == "object")
        advice.append(f"'{d.argument}' is another object than before; objects without "
                      "__tracing_type__ are keyed by identity (or equality when hashable): "
                      "pass the same object, or give the class a __tracing_type__ that says "
                      "which of its attributes matter.")
        fixes.append(Fix("same_object", f"def __tracing_type__(self, context): ...  "
                         f"# on type({d.argument})", note="or pass the same object"))
    other_values = [d for d in diffs if d.kind == "python_value" and d not in numeric_value]
    if other_values and not numeric_value:
        d = other_values[0]
        advice.append(f"'{d.argument}' is a Python value that changed; each value traces once "
                      "and is then cached. That is fine for a few values (a mode flag); if it "
                      "takes many, pass it as an array or make it a kx.Variable.")
    if not advice:
        args = ", ".join(dict.fromkeys(top))
        advice.append(f"the types of {args} changed; keep them stable between calls.")
        signature_fix()
    return " ".join(advice), fixes, signature


def _numeric_literal(t: Any) -> bool:
    return isinstance(t, Literal) and isinstance(t.value, _NUMERIC_LITERALS)


def _dtype_for(d: ArgumentDiff) -> str:
    for t in (d.new_type, d.old_type):
        if isinstance(t, TensorSpec):
            return t.dtype.name
    value = d.new_type.value if isinstance(d.new_type, Literal) else d.old_type.value
    return np.asarray(value).dtype.name


def fix_for(function_name: str, diffs: Sequence[ArgumentDiff]) -> str:
    """A short suggestion in words (the retracing warning's "Fix:")."""
    kinds = {d.kind for d in diffs}
    args = sorted({d.argument.split("[")[0].split(".")[0] for d in diffs})
    if kinds & {"python_value", "python_to_array", "array_to_python"}:
        arg = next(d.argument for d in diffs
                   if d.kind in ("python_value", "python_to_array", "array_to_python"))
        return (f"pass {arg} as a NumPy value (e.g. np.int32({arg}) or np.asarray({arg})) so "
                "that its value is a graph input instead of part of the signature, or give "
                f"the function an input_signature with a 0-d kx.TensorSpec for {arg}")
    if kinds & {"shape", "rank"}:
        return (f"use kx.function({function_name}, reduce_retracing=True), or an "
                f"input_signature with None for the dimensions of {', '.join(args)} that vary")
    if "dtype" in kinds:
        return f"convert {', '.join(args)} to one dtype before calling (x.astype(...))"
    if kinds & {"object", "function_object"}:
        return ("pass the same object each call (a new function/lambda or object per call "
                "always retraces), or give its class a __tracing_type__")
    return f"keep the types of {', '.join(args)} stable between calls"


# ---------------------------------------------------------------------------------------------
# Captured globals and closure values (stale-global detection)
# ---------------------------------------------------------------------------------------------

_HASH_LIMIT_BYTES = 1 << 20   # arrays above this are fingerprinted by a strided sample
_SAMPLE_BYTES = 1 << 18       # ... of about this size
_MAX_ITEMS = 64               # containers larger than this are not tracked
_HELPER_DEPTH = 3             # follow user helper functions this deep


@dataclass(frozen=True)
class StaleCapture:
    """A captured value that changed after a trace froze it."""

    name: str
    kind: str
    traces: tuple[int, ...]   # the traces that used the old value
    old: str
    new: str                  # "undefined" when the name is gone

    def sentence(self, function_name: str = "") -> str:
        which = ", ".join(f"#{t}" for t in self.traces)
        plural = "s" if len(self.traces) > 1 else ""
        now = "is now undefined" if self.new == "undefined" else f"is now {self.new}"
        return (f"`{self.name}` was {self.old} at trace{plural} {which}, {now}; the graph "
                f"still uses {self.old}")


def snapshot_captures(python_function: Any) -> tuple[CapturedValue, ...]:
    """The data globals and closure values ``python_function`` (and helpers it calls) reads.

    Only plain data is tracked (numbers, strings, NumPy arrays and scalars, small containers of
    those): modules, functions, classes and ``kx.Variable`` s are not frozen by a trace.
    """
    out: dict[str, CapturedValue] = {}
    _snapshot(python_function, "", out, set(), 0)
    return tuple(out.values())


def _snapshot(fn: Any, prefix: str, out: dict[str, CapturedValue], seen: set[int],
              depth: int) -> None:
    fn = getattr(fn, "python_function", fn)  # a kx.Function called inside: its Python body
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType) or id(code) in seen:
        return
    seen.add(id(code))
    global_names, free_names = _names_read(code)
    namespace = getattr(fn, "__globals__", {})
    for name in global_names:
        if name not in namespace:
            continue
        value = namespace[name]
        if _is_helper(value, namespace) and depth < _HELPER_DEPTH:
            _snapshot(value, f"{prefix}{name}.", out, seen, depth + 1)
            continue
        _add(out, prefix + name, "global", value, namespace, name)
    cells = dict(zip(code.co_freevars, getattr(fn, "__closure__", None) or ()))
    for name in free_names:
        cell = cells.get(name)
        if cell is None:
            continue
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if _is_helper(value, namespace) and depth < _HELPER_DEPTH:
            _snapshot(value, f"{prefix}{name}.", out, seen, depth + 1)
            continue
        _add(out, prefix + name, "closure", value, cell, name)


@functools.lru_cache(maxsize=512)
def _names_read(code: types.CodeType) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Global and free-variable names loaded by ``code`` (nested code objects included)."""
    globals_: dict[str, None] = {}
    free: dict[str, None] = {}
    stack = [code]
    while stack:
        c = stack.pop()
        for ins in dis.get_instructions(c):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                globals_[ins.argval] = None
            elif ins.opname in ("LOAD_DEREF", "LOAD_CLASSDEREF") and c is code and \
                    ins.argval in code.co_freevars:
                free[ins.argval] = None
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return tuple(globals_), tuple(free)


def _is_helper(value: Any, namespace: dict) -> bool:
    """A user-defined Python function of the same namespace (its globals are ours too)."""
    value = getattr(value, "python_function", value)
    return isinstance(value, types.FunctionType) and value.__globals__ is namespace


def _add(out: dict[str, CapturedValue], name: str, kind: str, value: Any, source: Any,
         key: str) -> None:
    fp = fingerprint(value)
    if fp is not None and name not in out:
        out[name] = CapturedValue(name, kind, short_text(value), fp, source, key)


def fingerprint(value: Any, depth: int = 0) -> Hashable | None:
    """A hashable summary that changes when the value does; None for untracked values."""
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return (type(value).__name__, value)
    if isinstance(value, (float, complex)):
        return (type(value).__name__, repr(value))  # repr: NaN equals itself
    if isinstance(value, np.generic):
        if value.dtype.kind in "OV":
            return None
        return ("np", value.dtype.str, value.tobytes())
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OV":
            return None
        data = value
        if value.nbytes > _HASH_LIMIT_BYTES:
            # Large arrays: hash an evenly strided sample plus identity, so a trace never pays
            # more than ~1 ms per captured array. A rebinding is always seen; an in-place
            # change is seen when it touches a sampled element.
            step = -(-value.size * value.itemsize // _SAMPLE_BYTES)
            data = value.reshape(-1)[::step]
        # CRC-32: only change detection is needed, and it runs at ~3 GB/s (blake2b: ~0.5).
        digest = zlib.crc32(np.ascontiguousarray(data).data)
        kind = "array" if data is value else ("array-sample", id(value))
        return (kind, value.dtype.str, value.shape, digest)
    if depth < 2 and isinstance(value, (tuple, list)) and len(value) <= _MAX_ITEMS:
        items = tuple(fingerprint(v, depth + 1) for v in value)
        return None if None in items else (type(value).__name__, items)
    if depth < 2 and isinstance(value, dict) and len(value) <= _MAX_ITEMS:
        try:
            items = tuple(sorted((repr(k), fingerprint(v, depth + 1)) for k, v in
                                 value.items()))
        except TypeError:
            return None
        return None if any(v is None for _, v in items) else ("dict", items)
    return None


def short_text(value: Any, limit: int = 60) -> str:
    """A short, one-line description of a value for explanations."""
    if isinstance(value, np.ndarray):
        body = np.array2string(value, threshold=6, edgeitems=2, separator=", ")
        text = f"array {value.dtype.name}{list(value.shape)} {' '.join(body.split())}"
    else:
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def stale_captures(function: Any) -> list[StaleCapture]:
    """Captured globals/closure values of ``function``'s live traces that changed since."""
    by_value: dict[tuple[str, Hashable], list[int]] = {}
    first: dict[tuple[str, Hashable], CapturedValue] = {}
    live = {cf.record.index for cf in getattr(function, "concrete_functions", ())}
    for record in getattr(function, "retraces", ()):
        if live and record.index not in live:
            continue
        for cap in record.captured:
            exists, value = cap.current()
            if exists and fingerprint(value) == cap.fingerprint:
                continue
            key = (cap.name, cap.fingerprint)
            by_value.setdefault(key, []).append(record.index)
            first.setdefault(key, cap)
    out = []
    for key, traces in by_value.items():
        cap = first[key]
        exists, value = cap.current()
        out.append(StaleCapture(cap.name, cap.kind, tuple(traces), cap.text,
                                short_text(value) if exists else "undefined"))
    return out


def configure(function: Any, *, strict: bool | None = None,
              magic_fixes: bool | None = None) -> None:
    """Notebook options of one Function, read when it traces (never on a cache hit).

    ``strict``: raise :class:`StrictRetraceError` instead of retracing (the first trace is
    always allowed); ``%%tffunction --strict`` sets it. ``magic_fixes``: explanations show
    fixes as ``%%tffunction`` options (the function was made by the magic).
    """
    if strict is not None:
        function._kx_strict = bool(strict)
    if magic_fixes is not None:
        function._kx_magic_fixes = bool(magic_fixes)
