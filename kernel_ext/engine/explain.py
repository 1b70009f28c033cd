"""Retrace explanations: the one import for everything the notebook layer shows about a retrace.

Which argument changed, how, what it cost and how to avoid it lives in three modules, one per
concept; this module gathers their public names (``from kernel_ext.engine import explain``):

* :mod:`kernel_ext.engine.trace_records` — :class:`TraceRecord` (one per trace), its
  :class:`Explanation` and :class:`ArgumentDiff` s, the indexed comparison with earlier traces
  (:class:`TraceIndex`), cause labels and the plain-text explanation;
* :mod:`kernel_ext.engine.fixes` — :class:`Fix` es and the derived ``input_signature``;
* :mod:`kernel_ext.engine.snapshots` — captured globals and closure values, and which of them
  changed after a trace froze them (:func:`stale_captures`).

Plus :func:`configure`, the notebook options of one Function.
"""

from __future__ import annotations

from typing import Any

from .. import errors
from ..trace.types import Literal, TensorSpec, WeakRef
from .fixes import (
    Fix,
    derive_input_signature,
    fix_at_call_site,
    fix_for,
    plural,
    replay,
    signature_code,
    spec_text,
    suggest_fixes,
    traces_with,
)
from .snapshots import (
    CapturedValue,
    StaleCapture,
    fingerprint,
    short_text,
    snapshot_captures,
    stale_captures,
)
from .trace_records import (
    CAUSE_LABELS,
    ArgumentDiff,
    Explanation,
    TraceIndex,
    TraceRecord,
    cause_label,
    cause_of,
    closest_trace,
    describe,
    describe_diff,
    diff_call,
    diff_types,
    explain_text,
    format_call_site,
    merge_column,
    set_call_site_formatter,
    set_default_call_site_formatter,
)

StrictRetraceError = errors.StrictRetraceError  # the magics import it from here

__all__ = [
    "CAUSE_LABELS",
    "ArgumentDiff",
    "CapturedValue",
    "Explanation",
    "Fix",
    "Literal",
    "StaleCapture",
    "StrictRetraceError",
    "TensorSpec",
    "TraceIndex",
    "TraceRecord",
    "WeakRef",
    "cause_label",
    "cause_of",
    "closest_trace",
    "configure",
    "derive_input_signature",
    "describe",
    "describe_diff",
    "diff_call",
    "diff_types",
    "explain_text",
    "fingerprint",
    "fix_at_call_site",
    "fix_for",
    "format_call_site",
    "merge_column",
    "plural",
    "replay",
    "set_call_site_formatter",
    "set_default_call_site_formatter",
    "short_text",
    "signature_code",
    "snapshot_captures",
    "spec_text",
    "stale_captures",
    "suggest_fixes",
    "traces_with",
]


def configure(
    function: Any, *, strict: bool | None = None, magic_fixes: bool | None = None
) -> None:
    """Notebook options of one Function (``Function.configure``), read when it traces.

    ``strict``: raise :class:`StrictRetraceError` instead of retracing (the first trace is
    always allowed); ``%%tffunction --strict`` sets it. ``magic_fixes``: explanations show
    fixes as ``%%tffunction`` options (the function was made by the magic).
    """
    function.configure(strict=strict, magic_fixes=magic_fixes)
