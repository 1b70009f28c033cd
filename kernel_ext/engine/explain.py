"""Retrace explanations: which argument changed, how, what it cost, how to avoid it.

Each trace of a Function leaves a :class:`TraceRecord`. For every trace after the first, the
record holds the *closest* earlier signature and the per-argument differences to it (shape,
dtype, Python value, object identity, structure), so the notebook UI, the retracing warning and
``--strict`` errors can all say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..trace.types import (Dataclass, Dict, Literal, Sequence_, TensorSpec, TraceType,
                           VariableType, WeakRef, _Composite)


@dataclass(frozen=True)
class ArgumentDiff:
    """One argument (or part of one) that differs from the closest earlier trace."""

    argument: str  # e.g. "x", "config['lr']", "batch[0]"
    kind: str      # "shape", "dtype", "rank", "python_value", "object", "structure", "type"
    old: str
    new: str

    def __str__(self) -> str:
        return f"{self.argument}: {self.old} -> {self.new} ({self.kind.replace('_', ' ')})"


@dataclass
class TraceRecord:
    """One trace of a Function (``Function.retraces`` lists them in order)."""

    index: int                    # 1-based trace number
    cause: str                    # "first_trace", "shape", "dtype", "python_value", ...
    signature: str                # the traced input signature, one line
    diffs: list[ArgumentDiff] = field(default_factory=list)
    closest: int | None = None    # index of the closest earlier trace
    trace_ms: float = 0.0
    compile_ms: float = 0.0
    call_site: str = ""
    call_number: int = 0          # which call of the Function caused it
    via: str = "call"             # "call" or "get_concrete_function"

    def explain(self) -> str:
        if self.cause == "first_trace":
            return f"trace #{self.index}: first trace ({self.signature})"
        what = "; ".join(str(d) for d in self.diffs) or self.cause
        closest = f" vs trace #{self.closest}" if self.closest else ""
        return f"trace #{self.index}{closest}: {what}"


def _leaf_kind(old: TraceType, new: TraceType) -> str:
    if isinstance(old, TensorSpec) and isinstance(new, TensorSpec):
        if old.dtype != new.dtype:
            return "dtype"
        if old.shape is None or new.shape is None or len(old.shape) != len(new.shape):
            return "rank"
        return "shape"
    if isinstance(old, Literal) and isinstance(new, Literal):
        return "python_value" if type(old.value) is type(new.value) else "type"
    if isinstance(old, (WeakRef, VariableType)) and type(old) is type(new):
        return "object"
    if isinstance(old, _Composite) and type(old) is type(new):
        return "structure"
    return "type"


def describe(t: TraceType) -> str:
    return t.describe() if not isinstance(t, _Composite) else repr(t)


def diff_types(old: TraceType, new: TraceType, path: str) -> list[ArgumentDiff]:
    """Leaf-level differences between two trace types (empty if ``new`` fits ``old``)."""
    if new.is_subtype_of(old):
        return []
    if isinstance(old, _Composite) and old._same_structure(new):
        out: list[ArgumentDiff] = []
        for i, (a, b) in enumerate(zip(old.components, new.components)):
            out.extend(diff_types(a, b, _child_path(old, path, i)))
        return out
    return [ArgumentDiff(path, _leaf_kind(old, new), describe(old), describe(new))]


def _child_path(t: _Composite, path: str, i: int) -> str:
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


def closest_trace(names: Sequence[str], candidates: Sequence[tuple[int, Sequence[TraceType]]],
                  new: Sequence[TraceType]) -> tuple[int | None, list[ArgumentDiff]]:
    """The earlier trace with the fewest differing leaves, and those differences."""
    best: tuple[int | None, list[ArgumentDiff]] = (None, [])
    for index, types in candidates:
        diffs = diff_call(names, types, new)
        if best[0] is None or len(diffs) < len(best[1]):
            best = (index, diffs)
    return best


def cause_of(diffs: Sequence[ArgumentDiff]) -> str:
    kinds = {d.kind for d in diffs}
    for kind in ("type", "structure", "dtype", "rank", "shape", "python_value", "object"):
        if kind in kinds:
            return kind
    return "new_signature"


def fix_for(function_name: str, diffs: Sequence[ArgumentDiff]) -> str:
    """A short, copyable suggestion for the most common causes."""
    kinds = {d.kind for d in diffs}
    args = sorted({d.argument.split("[")[0].split(".")[0] for d in diffs})
    if "python_value" in kinds:
        arg = next(d.argument for d in diffs if d.kind == "python_value")
        return (f"pass {arg} as a NumPy value (e.g. np.int32({arg}) or np.asarray({arg})) so "
                "that its value is a graph input instead of part of the signature")
    if kinds & {"shape", "rank"}:
        return (f"use kx.function({function_name}, reduce_retracing=True), or an "
                f"input_signature with None for the dimensions of {', '.join(args)} that vary")
    if "object" in kinds:
        return ("pass the same object each call (a new function/lambda or object per call "
                "always retraces), or give its class a __tracing_type__")
    return f"keep the types of {', '.join(args)} stable between calls"
