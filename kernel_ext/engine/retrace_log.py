"""The retrace log of a Function: its traces in order, the record that explains each, and the
retracing warning.

Every trace a :class:`~kernel_ext.engine.function.Function` makes enters its
:class:`RetraceLog`: the history (index, input types, signature) that a later trace is compared
with, the :class:`~kernel_ext.engine.trace_records.TraceRecord` of each trace (bounded: records
of released traces fold into :class:`~kernel_ext.engine.trace_records.ReleasedTraces`), and
the recent trace count that decides the :class:`~kernel_ext.errors.RetracingWarning`. All of
it runs on the slow path only (a trace, a report), never on a cache hit.
"""

from __future__ import annotations

import collections
import functools
import sys
import warnings
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from .. import errors
from .fixes import fix_for, suggest_fixes
from .snapshots import CapturedValue, snapshot_captures
from .trace_records import (
    Explanation,
    ReleasedTraces,
    TraceIndex,
    TraceRecord,
    bound_records,
    cause_of,
)

#: The warning: ``WARN_TRACES`` traces within the last ``WARN_WINDOW`` calls, at most
#: ``WARN_MAX`` warnings per Function.
WARN_WINDOW, WARN_TRACES, WARN_MAX = 10, 5, 2


class RetraceLog:
    """The traces of one Function, in order: what explains each new trace (the closest
    earlier one, the differences, the fixes), the records kept, and when to warn."""

    def __init__(self) -> None:
        # (index, input types, signature) of every live trace in order, for explanations;
        # only ever appended to, so a record can freeze "the traces before me" as a length.
        self.history: list[tuple[int, tuple, str]] = []
        self.history_index = TraceIndex()  # the same traces, indexed by argument types
        self.records: list[TraceRecord] = []  # bounded: see keep_only
        self.records_made = 0
        self.released = ReleasedTraces()  # what is left of records folded away
        self.trace_call_numbers: collections.deque[int] = collections.deque(maxlen=WARN_WINDOW)
        self.warnings_issued = 0

    def new_record(
        self,
        name: str,
        names: Sequence[str],
        signature: str,
        call_types: tuple,
        details: dict[str, Any],
        strict: bool,
    ) -> TraceRecord:
        """The :class:`TraceRecord` of the trace just made for ``call_types`` (traced as
        ``signature``): what changed against the closest earlier trace, the fixes.
        ``details`` are the record's other fields (times, call site, captured values, ...).

        ``strict`` (``%%tffunction --strict``) raises here instead, before the new trace
        enters the cache, with the whole explanation as the message.
        """
        index = self.records_made + 1
        if not self.history:
            first = Explanation("released" if self.records_made else "first_trace")
            return TraceRecord(index, signature, first, **details)
        # What the explanation needs, frozen now; the comparison itself runs when read.
        history, by_types, n_earlier = self.history, self.history_index, len(self.history)

        def explanation() -> Explanation:
            earlier = history[:n_earlier]
            closest, diffs = by_types.closest(names, n_earlier, call_types)
            advice, fixes, suggested = suggest_fixes(
                name,
                names,
                [t for _, t, _ in earlier],
                call_types,
                diffs,
                functools.partial(by_types.merged_column, n_earlier, call_types),
            )
            closest_signature = next((s for i, _, s in earlier if i == closest), "")
            return Explanation(
                cause_of(diffs), diffs, closest, closest_signature, advice, fixes, suggested
            )

        record = TraceRecord(index, signature, explanation, **details)
        if strict:
            raise errors.StrictRetraceError(
                "strict function would retrace (the new trace was discarded):\n" + record.explain()
            )
        return record

    def add(self, record: TraceRecord, trace_types: tuple, call_number: int) -> None:
        """Log a trace that entered the cache (made at call ``call_number``)."""
        self.history.append((record.index, trace_types, record.signature))
        self.history_index.add(record.index, trace_types)
        self.records.append(record)
        self.records_made += 1
        self.trace_call_numbers.append(call_number)

    def keep_only(self, live: Sequence[tuple[TraceRecord, tuple]]) -> None:
        """Forget the released traces: ``live`` are the (record, input types) of the traces
        left, in order. Records of released traces beyond the latest few fold into counts,
        so a session calling with a new object each time stays flat."""
        # a new list: records made so far keep the history they froze
        self.history = [(record.index, types_, record.signature) for record, types_ in live]
        self.history_index = TraceIndex()
        for record, types_ in live:
            self.history_index.add(record.index, types_)
        self.records, folded = bound_records(self.records, {record.index for record, _ in live})
        for record in folded:
            self.released.add(record)

    def maybe_warn(self, record: TraceRecord, name: str, calls: int) -> None:
        """Warn (:class:`~kernel_ext.errors.RetracingWarning`) when this trace, made at call
        ``calls``, is one of too many recent ones."""
        recent = sum(1 for c in self.trace_call_numbers if c > calls - WARN_WINDOW)
        if recent < WARN_TRACES or self.warnings_issued >= WARN_MAX or not record.diffs:
            return
        self.warnings_issued += 1
        changed = "; ".join(str(d) for d in record.diffs)
        warnings.warn(
            f"kx.function '{name}' traced {recent} times in its last {WARN_WINDOW} calls "
            f"(latest: {changed}). Tracing runs the Python body again and is expensive. Fix: "
            f"{fix_for(name, record.diffs)}.\n{record.explain()}",
            errors.RetracingWarning,
            stacklevel=_user_stacklevel(),
        )


def frozen_captures(python_function: Callable) -> tuple[CapturedValue, ...]:
    """Globals/closure values the body read, frozen by this trace (stale-global check)."""
    try:
        return snapshot_captures(python_function)
    except Exception:  # noqa: BLE001 - a diagnostic must never break a trace
        return ()


def _user_frame() -> FrameType | None:
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        fname = frame.f_code.co_filename.replace("\\", "/")
        if "/kernel_ext/" not in fname and not fname.startswith("<kx-graph"):
            return frame
        frame = frame.f_back
    return None


def user_call_site() -> str:
    """``file:line`` of the innermost frame outside kernel_ext (``""`` when none)."""
    frame = _user_frame()
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else ""


def _user_stacklevel() -> int:
    level = 1
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if "/kernel_ext/" not in frame.f_code.co_filename.replace("\\", "/"):
            return level
        frame = frame.f_back
        level += 1
    return 1
