"""``%retrace_report``: every traced function of the kernel, ranked by what tracing cost.

For each function: calls, traces, cache-hit rate, trace + compile time, where it was defined
and its edit history; for each retrace its explanation (call site as cell and line, the closest
earlier signature, every argument that differs with old → new, the cost, a fix in copyable
code); captured globals whose value changed since a trace; and one combined fix derived from
everything the function has seen (e.g. an ``--input-signature`` with ``None`` for the
dimensions that took several values).

:func:`build_report` makes plain data (also the ``--json`` output); :class:`RetraceReport`
renders it as HTML in the notebook with a plain-text fallback.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..engine import explain
from . import records, render, units
from .cells import CellLocator, cell_info
from .records import RetraceEntry

__all__ = [
    "FunctionReport",
    "JSONReport",
    "RetraceReport",
    "build_report",
    "combined_fixes",
    "report_html",
    "report_json",
    "report_text",
]


def combined_fixes(function: Any, magic: bool) -> tuple[str, list[str], list[str]]:
    """``(advice, fixes, partial)`` for every retrace seen so far (not only the latest).

    Every fix was replayed against the traced signatures (``explain.suggest_fixes`` checks
    them): ``fixes`` would have left one trace, ``partial`` fewer than now, each saying how
    many ("… — 2 traces instead of 3").
    """
    retraced = [r for r in function.retraces if r.cause != "first_trace"]
    concrete = function.concrete_functions
    if not retraced or len(concrete) < 2:
        return "", [], []
    diffs = [d for r in retraced for d in r.diffs]
    names = records.parameter_names(function)
    types_ = [cf.input_types for cf in concrete]
    advice, fixes, _ = explain.suggest_fixes(function.name, names, types_[:-1], types_[-1], diffs)
    # an argument fix as the call the user wrote, at the latest retrace's call site
    site = retraced[-1].call_site
    fixes = [explain.fix_at_call_site(f, function.name, site) for f in fixes]
    whole = records.fix_texts([f for f in fixes if f.traces == 1], magic)
    partial = [
        f"{text} — {f.effect}"
        for f in fixes
        if f.traces is not None and f.traces > 1
        for text in records.fix_texts([f], magic)
        if text not in whole
    ]
    return advice, whole, partial


@dataclass
class FunctionReport:
    name: str
    id: int
    cell: str | None
    kind: str  # "decorated", "def" (%%tffunction def), "cell"
    calls: int
    traces: int
    cache_hits: int
    hit_rate: float | None
    trace_ms: float
    compile_ms: float
    cost_ms: float
    history: list[str]
    retraces: list[RetraceEntry]
    stale: list[str]
    advice: str
    #: Fixes that would have left one trace (replayed against the traced signatures).
    fixes: list[str]
    first_traces: list[RetraceEntry] = field(default_factory=list)
    #: Opaque NumPy calls and random draws in the function's traces (records.opaque_notes).
    opaque: list[str] = field(default_factory=list)
    #: What AutoGraph made of each loop statement in the function's traces.
    loops: list[str] = field(default_factory=list)
    #: Calls that raised before running a graph (not cache hits).
    failed_calls: int = 0
    #: Released traces whose records were folded away (``ReleasedTraces.summary``), or "".
    released: str = ""
    #: Fixes that would have removed some of the retraces, each with the traces it leaves.
    partial_fixes: list[str] = field(default_factory=list)


def _matches(function: Any, names: Sequence[str], namespace: dict | None) -> bool:
    """A name picks the Function bound to that variable, and the earlier versions an edited
    cell replaced (their retraces stay in view); else every Function of that name."""
    if not names:
        return True
    for name in names:
        bound = namespace.get(name) if namespace is not None else None
        if hasattr(bound, "retraces") and hasattr(bound, "stats"):
            if bound is function or (function.name == name and _replaced(function)):
                return True
        elif function.name == name:
            return True
    return False


def _replaced(function: Any) -> bool:
    info = cell_info(function)
    return info is not None and info.replaced_by is not None


def build_report(
    functions: Iterable[Any],
    locator: CellLocator | None = None,
    names: Sequence[str] = (),
    include_all: bool = False,
    namespace: dict | None = None,
) -> list[FunctionReport]:
    """Reports for ``functions`` (those named in ``names`` when given), most costly first.

    Without ``include_all``, functions never traced are left out and first traces are not
    listed (they are expected); with it, everything is.
    """
    locator = locator or CellLocator()
    out: list[FunctionReport] = []
    for fn in functions:
        if not _matches(fn, names, namespace):
            continue
        stats = fn.stats
        if not stats.get("traces") and not include_all and not names:
            continue
        info = cell_info(fn)
        if info is not None and info.replaced_by is not None and not include_all and not names:
            continue  # an edited cell's old version (still referenced somewhere)
        magic = info is not None
        number = locator.defining_cell(fn)
        cell = None if number is None else f"[{number}]"
        if cell is not None and info is not None and info.replaced_by is not None:
            cell += f", replaced by an edit in cell [{info.replaced_by}]"
        entries = [records.retrace_entry(r, locator.call_site, magic) for r in fn.retraces]
        retraces = [e for e in entries if e["category"] != "first_trace"]
        first = [e for e in entries if e["category"] == "first_trace"]
        advice, fixes, partial = combined_fixes(fn, magic)
        counts = records.call_counts(stats)
        calls, hits = counts.calls, counts.cache_hits
        released = getattr(fn, "released_traces", None)
        trace_ms = float(stats.get("trace_ms", 0.0))
        compile_ms = float(stats.get("compile_ms", 0.0))
        out.append(
            FunctionReport(
                name=fn.name,
                id=int(getattr(fn, "id", 0)),
                cell=cell,
                kind=("decorated" if info is None else info.mode),
                calls=calls,
                traces=int(stats.get("traces", 0)),
                cache_hits=hits,
                hit_rate=counts.hit_rate,
                # (as measured: the views format these once, as the monitor and the sidebar
                # format the same counters; rounding first could round a figure twice)
                trace_ms=trace_ms,
                compile_ms=compile_ms,
                cost_ms=trace_ms + compile_ms,
                history=list(info.history) if info is not None else [],
                retraces=retraces,
                stale=[s.sentence() for s in explain.stale_captures(fn)],
                advice=advice,
                fixes=fixes,
                first_traces=first if include_all else [],
                opaque=_opaque_of(fn),
                loops=_loops_of(fn),
                failed_calls=counts.failed_calls,
                released=released.summary() if released is not None else "",
                partial_fixes=partial,
            )
        )
    out.sort(key=lambda r: (-r.cost_ms, r.name))
    return out


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------


def _loops_of(function: Any) -> list[str]:
    """Loop notes and, under tiered ``auto``, how each trace runs."""
    notes: dict[str, None] = {}
    for row in records.signature_rows(function):
        for note in row.loops:
            notes.setdefault(note)
        if row.tier:  # tiered auto: how it runs now, in words (as the sidebar says it)
            notes.setdefault(f"trace #{row.id} {row.served_by}")
    return list(notes)


def _opaque_of(function: Any) -> list[str]:
    notes: dict[str, None] = {}
    for row in records.signature_rows(function):
        for note in row.opaque:
            notes.setdefault(note)
    return list(notes)


def _figures(r: FunctionReport) -> str:
    """The counters of one function, each labelled, in the views' one unit rule."""
    failed = f" · failed calls {r.failed_calls:,}" if r.failed_calls else ""
    return (
        f"calls {r.calls:,} · traces {r.traces:,} · cache hits "
        f"{units.hit_rate(r.cache_hits, r.calls)}{failed} · tracing "
        f"{units.duration(r.trace_ms)} + compiling {units.duration(r.compile_ms)} = "
        f"{units.duration(r.cost_ms)}"
    )


def _header(r: FunctionReport) -> str:
    where = f" (cell {r.cell})" if r.cell else ""
    return f"{r.name}{where}: {_figures(r)}"


def _entry_text(e: RetraceEntry, indent: str = "  ") -> list[str]:
    lines = [
        f"{indent}trace #{e['trace']} ({e['cause']}) at {e['call_site']}, cost "
        f"{units.duration(e['cost_ms'])} (tracing {units.duration(e['trace_ms'])} + "
        f"compiling {units.duration(e['compile_ms'])})"
    ]
    if e["closest"]:
        lines.append(
            f"{indent}  closest earlier signature, trace #{e['closest']}: "
            f"({e['closest_signature']})"
        )
    lines.append(
        f"{indent}  {'new signature' if e['closest'] else 'signature'}: ({e['signature']})"
    )
    lines += [f"{indent}  - {d['sentence']}" for d in e["diffs"]]
    if e["advice"]:
        lines.append(f"{indent}  why: {e['advice']}")
    lines += [
        f"{indent}  {'fix' if i == 0 else 'or '}: {f}" + (f"  — {effect}" if effect else "")
        for i, (f, effect) in enumerate(zip(e["fixes"], _effects(e)))
    ]
    return lines


def _effects(e: RetraceEntry) -> list[str]:
    return list(e.get("effects") or [""] * len(e["fixes"]))


def _whole_header(r: FunctionReport) -> str:
    return f"to avoid all of these retraces ({explain.plural(1, 'trace')} instead of {r.traces}):"


def report_text(reports: Sequence[FunctionReport]) -> str:
    if not reports:
        return "No traced functions yet: call a kx.function or run a %%tffunction cell."
    n = len(reports)
    lines = [
        f"Retrace report: {units.plural(n, 'traced function')}, ranked by tracing + compiling time"
    ]
    for r in reports:
        lines += ["", _header(r)]
        lines += [f"  history: {h}" for h in r.history[-4:]]
        lines += [f"  {note}" for note in r.opaque + r.loops]
        for e in r.first_traces:
            lines += _entry_text(e)
        if r.released:
            lines.append(f"  {r.released}")
        for e in r.retraces:
            lines += _entry_text(e)
        if not r.retraces and not r.released:
            lines.append("  no retraces")
        for s in r.stale:
            lines.append(f"  stale capture: {s}")
        if r.fixes and len(r.retraces) > 1:
            lines.append(f"  {_whole_header(r)}")
            lines += [f"    {'' if i == 0 else 'or '}{f}" for i, f in enumerate(r.fixes)]
        if r.partial_fixes and len(r.retraces) > 1:
            lines.append("  to avoid some of them:")
            lines += [f"    {f}" for f in r.partial_fixes]
    return "\n".join(lines)


def report_html(reports: Sequence[FunctionReport]) -> str:
    esc = render.esc
    if not reports:
        return (
            f'<div style="{render.STYLE}">No traced functions yet: call a kx.function '
            "or run a %%tffunction cell.</div>"
        )
    parts = [
        f'<div class="kx-report" style="{render.STYLE}">',
        f"<div><b>Retrace report</b>: {units.plural(len(reports), 'traced function')}, "
        "ranked by tracing + compiling time</div>",
    ]
    for r in reports:
        where = f" <span style='color:#666'>cell {esc(r.cell)}</span>" if r.cell else ""
        parts.append(
            '<div style="border:1px solid #ced4da; border-radius:6px; padding:6px 8px; '
            f'margin:6px 0;"><div style="font-size:13px;"><b>{esc(r.name)}</b>{where}</div>'
            f"<div>{esc(_figures(r))}</div>"
        )
        if r.released:
            parts.append(f"<div style='color:#666'>{esc(r.released)}</div>")
        if r.history:
            parts.append(
                "<div style='color:#666'>" + " · ".join(esc(h) for h in r.history[-4:]) + "</div>"
            )
        parts.append(render.stale_html(r.stale))
        parts += [f"<div style='color:#495057'>{esc(note)}</div>" for note in r.opaque + r.loops]
        entries = r.first_traces + r.retraces
        if entries:
            parts.append(render.retrace_log_html(sorted(entries, key=lambda e: e["trace"])))
        else:
            parts.append("<div style='color:#666'>no retraces</div>")
        if r.fixes and len(r.retraces) > 1:
            fixes = "".join(
                f"<div>{'' if i == 0 else 'or '}<code>{esc(f)}</code></div>"
                for i, f in enumerate(r.fixes)
            )
            parts.append(f"<div><b>{esc(_whole_header(r))}</b>{fixes}</div>")
        if r.partial_fixes and len(r.retraces) > 1:
            fixes = "".join(f"<div><code>{esc(f)}</code></div>" for f in r.partial_fixes)
            parts.append(f"<div><b>to avoid some of them:</b>{fixes}</div>")
        parts.append("</div>")
    parts.append("</div>")
    return "".join(parts)


def report_json(reports: Sequence[FunctionReport]) -> dict:
    """The reports as plain data, times rounded to the microsecond."""
    functions = []
    for r in reports:
        data = asdict(r)
        for key in ("trace_ms", "compile_ms", "cost_ms"):
            data[key] = round(data[key], 3)
        functions.append(data)
    return {"functions": functions}


class RetraceReport:
    """What ``%retrace_report`` returns: HTML in the notebook, plain text elsewhere."""

    def __init__(self, reports: list[FunctionReport]) -> None:
        self.reports = reports

    @property
    def text(self) -> str:
        return report_text(self.reports)

    def _repr_html_(self) -> str:
        return report_html(self.reports)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text)

    def __repr__(self) -> str:
        return self.text

    def to_json(self) -> dict:
        return report_json(self.reports)


class JSONReport(dict):
    """``%retrace_report --json``: a plain dict (for tools) shown as JSON."""

    def _repr_json_(self) -> tuple[dict, dict]:
        return dict(self), {"expanded": True}

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(json.dumps(self, indent=1))
