"""HTML and SVG renderings for the notebook: graphs, signatures, counters, retrace logs.

Every string that can carry user-derived text (function and parameter names, literal values,
reprs, call sites, explanations) goes through :func:`esc` (``html.escape`` with quotes) at the
point it is inserted into markup; nothing here trusts its input. The output is self-contained
(inline styles, no scripts), so it survives in a saved notebook where widgets do not render.

The graph picture is a small layered layout done here (no Graphviz needed): each op sits one
row below its deepest input, rows keep program order, edges are curves from an op to its users.
Fused segments get a coloured, dashed outline and a legend; captured constants and variable
ops have their own colours, and so do the nodes a gradient's backward pass made (the
``_backward`` attr), to tell a training step's forward and backward halves apart.
"""

from __future__ import annotations

import html
from typing import Any, Iterable, Sequence

from . import nodetext, records, units
from .records import RetraceEntry, Segment

__all__ = ["esc", "graph_svg", "graph_html", "GRAPH_NOTE", "counters_html", "signatures_html",
           "retrace_log_html", "stale_html", "monitor_snapshot_html", "STYLE"]


def esc(text: Any) -> str:
    """Escape for HTML text and attribute values (quotes included)."""
    return html.escape(str(text), quote=True)


STYLE = ("font-family: var(--jp-ui-font-family, sans-serif); font-size: 12px; "
         "line-height: 1.4; color: var(--jp-ui-font-color1, #222);")
_MONO = "font-family: var(--jp-code-font-family, monospace); font-size: 12px;"
_MUTED = "color: var(--jp-ui-font-color2, #666);"

# ---------------------------------------------------------------------------------------------
# Graph SVG
# ---------------------------------------------------------------------------------------------

_FILL = {
    "placeholder": "#dee2e6",
    "captured": "#ffec99",
    "constant": "#fff3bf",
    "stateful": "#ffc9c9",
    "control_flow": "#d0bfff",
    "opaque": "#ced4da",
    "backward": "#ffc078",
    "default": "#a5d8ff",
}
#: The word the picture adds to a node's second line, by :func:`nodetext.node_kind`.
_KIND_MARK = {"input": "input", "opaque": "runs NumPy", "random": "random draw",
              "loop": "graph loop", "captured": "captured"}
#: Text on the node boxes: their fills are light in every theme, so the ink is fixed.
_NODE_INK = "#212529"
#: Text on the cell's own background (legend, notes): the theme's ink.
_THEME_INK = "fill: var(--jp-ui-font-color1, #222);"
#: Fused segments' outlines: the sidebar's palette (``labextension/style/base.css``,
#: ``.jp-kx-seg-N``), so a segment has one colour in the cell, the sidebar and the main area.
_SEGMENT_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
                    "#b07aa1", "#9c755f")
_CHAR_W = 6.6
_BOX_H = 34
_ROW_GAP = 26
_COL_GAP = 14


def _category(node: Any) -> str:
    op = records.op_name(node)
    group = getattr(getattr(node.op, "group", None), "value", "")
    if op == "placeholder":
        return "placeholder"
    if op == "constant":
        return "captured" if node.attrs.get("captured") else "constant"
    if records.is_backward(node):
        return "backward"
    if records.opaque_note(node) is not None:
        return "opaque"
    if group in ("stateful", "control_flow"):
        return group
    return "default"


def _clip(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _legend(segment: Segment) -> str:
    """A segment's line in the picture's legend: its own label, else its kind and ops
    (``elementwise segment: multiply → tanh (ready, compiled in 12 ms)``)."""
    if segment.label:
        label = segment.label
    else:
        ops = _clip(" → ".join(segment.ops) or f"{len(segment.nodes)} ops", 60)
        label = f"{segment.kind or 'fused'} segment: {ops}"
    if segment.state:
        label += f" ({segment.state}"
        if segment.compile_ms:
            label += f", this kernel compiled in {units.duration(segment.compile_ms)}"
        label += ")"
    return label


def graph_svg(concrete_function: Any, max_nodes: int = 160) -> str:
    """An SVG picture of a concrete function's (optimised) graph."""
    from ..ir.graph import subgraphs

    graph = concrete_function.graph
    nodes = list(graph.get_operations())
    clipped = len(nodes) > max_nodes
    nodes = nodes[:max_nodes]
    index = {id(n): i for i, n in enumerate(nodes)}
    outputs = {id(n) for n in graph.outputs}
    segments = records.segments(getattr(concrete_function, "executable", None))
    member = records.segment_index(segments)

    level: list[int] = []
    for n in nodes:
        ins = [level[index[id(i)]] for i in n.inputs if id(i) in index]
        level.append(1 + max(ins) if ins else 0)
    rows: dict[int, list[int]] = {}
    for i, lv in enumerate(level):
        rows.setdefault(lv, []).append(i)

    # First line: what the node computes, literal operands included (``multiply(·, 2)``), never
    # the IR's unique names (``multiply_1``); second line: its value, with a word for what a
    # reader must know (an opaque NumPy call, a random draw, a graph loop).
    labels = []
    for n in nodes:
        kind = nodetext.node_kind(n)
        detail = records.value_text(n.aval)
        inner = subgraphs(n)
        if inner and not detail:
            detail = f"{len(inner)} sub-graphs"
        mark = _KIND_MARK.get(kind)
        if mark:
            detail = f"{mark} · {detail}" if detail else mark
        labels.append((_clip(nodetext.node_text(n), 34), _clip(detail, 34)))
    widths = [max(len(a), len(b)) * _CHAR_W + 16 for a, b in labels]

    pos: dict[int, tuple[float, float]] = {}
    row_widths = {lv: sum(widths[i] for i in idx) + _COL_GAP * (len(idx) - 1)
                  for lv, idx in rows.items()}
    legend = [("input", _FILL["placeholder"]), ("captured constant", _FILL["captured"]),
              ("variable / print", _FILL["stateful"]), ("control flow", _FILL["control_flow"]),
              ("NumPy call / random draw", _FILL["opaque"]), ("op", _FILL["default"]),
              ("output", "white")]
    if any(records.is_backward(n) for n in nodes):  # a gradient: forward ops vs backward ones
        legend.insert(-1, ("backward (gradient) op", _FILL["backward"]))
    legend_w = sum(28 + len(text) * _CHAR_W for text, _ in legend) + 10
    legends = [f"{_legend(g)} [{g.backend}]" for g in segments]
    seg_w = max((36 + len(text) * _CHAR_W for text in legends), default=0)
    total_w = max(max(row_widths.values(), default=100) + 20, legend_w, seg_w)
    for lv, idx in rows.items():
        x = (total_w - row_widths[lv]) / 2
        for i in idx:
            pos[i] = (x, 10 + lv * (_BOX_H + _ROW_GAP))
            x += widths[i] + _COL_GAP
    legend_h = 18 * (len(segments) + 1) + 8
    total_h = 10 + (max(rows, default=0) + 1) * (_BOX_H + _ROW_GAP) + legend_h

    # Fit to the output's width, never enlarged: width 100% of the cell, at most the natural
    # width, height from the viewBox's aspect ratio. Pure SVG/CSS, so a saved notebook (no
    # widgets, no scripts) fits the same; zoom and pan are the sidebar's.
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" '
             f'viewBox="0 0 {total_w:.0f} {total_h:.0f}" preserveAspectRatio="xMidYMin meet" '
             f'role="img" aria-label="{esc("graph " + graph.name)}" class="kx-graph" '
             f'style="font-family: sans-serif; font-size: 11px; width: 100%; '
             f'max-width: {total_w:.0f}px; height: auto; display: block;">',
             '<defs><marker id="kx-arrow" viewBox="0 0 10 10" refX="9" refY="5" '
             'markerWidth="6" markerHeight="6" orient="auto-start-reverse">'
             '<path d="M 0 0 L 10 5 L 0 10 z" fill="#868e96"/></marker></defs>']
    for i, n in enumerate(nodes):
        x2, y2 = pos[i]
        cx2 = x2 + widths[i] / 2
        seen: set[int] = set()
        for src in n.inputs:
            j = index.get(id(src))
            if j is None or j in seen:
                continue
            seen.add(j)
            x1, y1 = pos[j]
            cx1, by1 = x1 + widths[j] / 2, y1 + _BOX_H
            span = level[i] - level[j]
            if span > 1:
                # Skipping rows: bow out sideways so the edge does not hide behind the boxes
                # of the rows in between.
                bow = (40 + 12 * span) * (1 if (i + j) % 2 else -1)
                d = (f"M {cx1:.1f} {by1:.1f} C {cx1 + bow:.1f} {by1 + 30:.1f}, "
                     f"{cx2 + bow:.1f} {y2 - 30:.1f}, {cx2:.1f} {y2 - 1:.1f}")
            else:
                mid = (by1 + y2) / 2
                d = (f"M {cx1:.1f} {by1:.1f} C {cx1:.1f} {mid:.1f}, {cx2:.1f} {mid:.1f}, "
                     f"{cx2:.1f} {y2 - 1:.1f}")
            parts.append(f'<path d="{d}" fill="none" stroke="#868e96" stroke-width="1.2" '
                         'marker-end="url(#kx-arrow)"/>')
    for i, n in enumerate(nodes):
        x, y = pos[i]
        w = widths[i]
        fill = _FILL[_category(n)]
        stroke, dash, sw = "#495057", "", 1.0
        seg = member.get(n.name)
        if seg is not None:
            stroke = _SEGMENT_COLOURS[seg % len(_SEGMENT_COLOURS)]
            dash, sw = ' stroke-dasharray="5 3"', 2.0
        if id(n) in outputs:
            stroke, sw = "#2b8a3e", 2.5
        title = f"{nodetext.node_text(n)} → {records.value_text(n.aval)} (node {n.name})"
        if n.attrs.get("captured"):
            title += " (captured constant, frozen at trace time)"
        variable = n.attrs.get("variable")
        if variable is not None:
            title += f" (kx.Variable {getattr(variable, 'name', '')})"
        note = records.opaque_note(n) or records.loop_note(n)
        if note is not None:
            title += f" ({note})"
        if records.is_backward(n):
            title += " (backward pass)"
        if id(n) in outputs:
            title += " (output)"
        for sub in subgraphs(n):  # control flow: what its branches / bodies compute
            ops = [op for m in sub.get_operations()
                   if (op := records.op_name(m)) != "placeholder"]
            title += f"\n{sub.name}: {_clip(', '.join(ops) or 'no ops', 120)}"
        a, b = labels[i]
        parts.append(f'<g><title>{esc(title)}</title>'
                     f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{_BOX_H}" rx="5" '
                     f'fill="{fill}" stroke="{stroke}" stroke-width="{sw}"{dash}/>'
                     f'<text x="{x + w / 2:.1f}" y="{y + 14:.1f}" text-anchor="middle" '
                     f'font-weight="bold" fill="{_NODE_INK}">{esc(a)}</text>'
                     f'<text x="{x + w / 2:.1f}" y="{y + 27:.1f}" text-anchor="middle" '
                     f'fill="{_NODE_INK}">{esc(b)}</text></g>')
    ly = total_h - legend_h + 14
    x = 10.0
    for text, fill in legend[:-1]:
        parts.append(f'<rect x="{x:.1f}" y="{ly - 10:.1f}" width="12" height="12" '
                     f'fill="{fill}" stroke="#495057"/><text x="{x + 16:.1f}" '
                     f'y="{ly:.1f}" style="{_THEME_INK}">{esc(text)}</text>')
        x += 16 + len(text) * _CHAR_W + 12
    parts.append(f'<rect x="{x:.1f}" y="{ly - 10:.1f}" width="12" height="12" fill="white" '
                 f'stroke="#2b8a3e" stroke-width="2.5"/><text x="{x + 16:.1f}" '
                 f'y="{ly:.1f}" style="{_THEME_INK}">output</text>')
    for k, text in enumerate(legends):
        colour = _SEGMENT_COLOURS[k % len(_SEGMENT_COLOURS)]
        y = ly + 18 * (k + 1)
        parts.append(f'<rect x="10" y="{y - 10:.1f}" width="12" height="12" fill="white" '
                     f'stroke="{colour}" stroke-width="2" stroke-dasharray="5 3"/>'
                     f'<text x="26" y="{y:.1f}" style="{_THEME_INK}">{esc(text)}</text>')
    if clipped:
        parts.append(f'<text x="10" y="{total_h - 2:.0f}" style="fill: var(--jp-error-color1, '
                     f'#c92a2a);">first {max_nodes} '
                     'nodes shown</text>')
    parts.append("</svg>")
    return "".join(parts)


#: Said under the monitor's graph: it fits the cell; zooming is the sidebar's.
GRAPH_NOTE = ("fitted to the cell's width · hover a box for details · to zoom and pan, select "
              "this signature in the Traced functions sidebar (it can also open the graph in "
              "the main area)")


def graph_html(svg: str) -> str:
    """The monitor's graph section: the fitted picture and the note on where to zoom."""
    return (f'<div class="kx-graph-area">{svg}<div class="kx-graph-note" '
            f'style="{STYLE} {_MUTED} font-size:11px;">{esc(GRAPH_NOTE)}</div></div>')


# ---------------------------------------------------------------------------------------------
# Monitor parts
# ---------------------------------------------------------------------------------------------

def counters_html(stats: dict, last_run_us: float | None, measured: bool = True) -> str:
    """Calls, traces, cache hits (of calls, with the rate), failed calls (when any), the
    time tracing and compiling took, and a recent run's duration: every figure labelled,
    every duration in :func:`.units.duration` (the sidebar's rule).

    ``measured``: the engine timed that run (it times every 64th cache hit); otherwise the
    figure is an estimate from the call rate (an upper bound), and it is left out while no
    call has succeeded (a failed call's time says nothing of the graph).
    """
    counts = records.call_counts(stats)
    succeeded = counts.calls - counts.failed_calls > 0
    if not measured and not succeeded:
        last_run_us = None
    last = units.duration(None if last_run_us is None else last_run_us / 1000)
    per_call = ("duration of a recent call, as the engine timed it (every 64th cache hit "
                "is timed)" if measured else "estimate: wall time of the latest stretch of "
                "calls divided by the calls in it (an upper bound)")
    cells = [("calls", f"{counts.calls:,}", ""), ("traces", f"{counts.traces:,}", ""),
             ("cache hits", units.hit_rate(counts.cache_hits, counts.calls),
              "calls that ran an existing trace, of all calls")]
    if counts.failed_calls:
        cells.append(("failed calls", f"{counts.failed_calls:,}", "calls that raised before "
                      "running a graph: wrong arguments, a signature mismatch, a failed trace"))
    cells += [("tracing", units.duration(stats.get("trace_ms", 0)),
               "time spent running the Python body to build this function's graphs"),
              ("compiling at trace", units.duration(stats.get("compile_ms", 0)),
               "time this function's traces spent optimising and preparing their executors; "
               "kernels compiled in the background are timed in the graph's legend"),
              ("last run" if measured else "per call (estimate)", last, per_call)]
    items = "".join(f'<div style="display:inline-block; margin-right:16px;" '
                    f'title="{esc(tip)}"><div style="{_MUTED} font-size:11px;">{esc(k)}</div>'
                    f'<div style="font-size:15px; font-weight:600; white-space:nowrap;">'
                    f'{esc(v)}</div></div>'
                    for k, v, tip in cells)
    return f'<div class="kx-counters" style="{STYLE}">{items}</div>'


def tokens_html(text: str) -> str:
    """``text`` escaped, each argument or type (``x: float32[16, 128]``) one unbreakable
    token: lines break only between arguments, never inside a type (as in the sidebar)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth <= (1 if text.startswith("(") else 0):
            parts.append(text[start:i + 1])
            start = i + 1
    parts.append(text[start:])
    return " ".join(f'<span style="white-space:nowrap;">{esc(p.strip())}</span>'
                    for p in parts if p.strip())


def signatures_html(rows: Sequence[dict]) -> str:
    """``rows``: dicts with id, inputs, outputs, nodes, backend, last_used (and opaque: the
    notes of :func:`kernel_ext.jupyter.records.opaque_notes`, loops: what AutoGraph made of
    each loop statement; one line each)."""
    if not rows:
        return f'<div style="{STYLE} {_MUTED}">no concrete signature yet (not called)</div>'
    body = []
    for r in rows:
        mark = "▶" if r.get("last_used") else ""
        weight = "font-weight:600;" if r.get("last_used") else ""
        td = '<td style="padding:1px 8px 1px 0;">'
        code = f'<td style="padding:1px 8px 1px 0; {_MONO}">'
        body.append(f'<tr style="{weight}">{td}{esc(mark)}</td>{td}#{esc(r["id"])}</td>'
                    f'{code}({tokens_html(r["inputs"])})</td>{td}→</td>'
                    f'{code}{tokens_html(r["outputs"])}</td>'
                    f'{td}{esc(r["nodes"])}</td>{td}{esc(r["backend"])}'
                    f'{_dashboard_link(r.get("dashboard"))}</td></tr>')
        # NumPy calls and draws made at every call; loops unrolled or made graph loops.
        # How it runs, in one plain sentence (the sidebar's words; the tier's note on
        # hover), and its kernels' compile progress.
        served = r.get("served_by") or r.get("tier") or ""
        detail = f"{r['tier']} (executor: {r['backend']})" if r.get("tier") else \
            f"executor: {r.get('backend', '')}"
        notes = [(served, detail)] if served else []
        if r.get("compile"):
            notes.append((r["compile"], ""))
        notes += [(note, "") for note in (*(r.get("opaque") or ()), *(r.get("loops") or ()))]
        for note, tip in notes:
            title = f' title="{esc(tip)}"' if tip else ""
            body.append(f'<tr><td></td><td></td><td colspan="5" style="{_MUTED}"{title}>'
                        f'{esc(note)}</td></tr>')
    th = '<th style="padding:1px 8px 1px 0;">'
    # Cells without a heading are td (an empty th says nothing to a screen reader).
    head = (f"<tr><td></td>{th}trace</th>{th}inputs</th><td></td>{th}outputs</th>"
            f"{th}nodes (traced → optimised)</th>{th}backend</th></tr>")
    return (f'<table class="kx-signatures" style="{STYLE} border-collapse:collapse; '
            f'text-align:left;">{head}{"".join(body)}</table>')


def _dashboard_link(url: Any) -> str:
    """`` · dashboard`` linking a Dask dashboard (an http(s) URL only), or ""."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return ""
    return (f' · <a class="kx-dashboard" href="{esc(url)}" target="_blank" '
            f'rel="noopener noreferrer" title="{esc(url)}">dashboard</a>')


def retrace_log_html(entries: Iterable[RetraceEntry]) -> str:
    """``entries``: from :func:`kernel_ext.jupyter.records.retrace_entry`."""
    items = []
    for e in entries:
        diffs = "".join(f"<li>{esc(d['sentence'])}</li>" for d in e["diffs"])
        effects = list(e.get("effects") or [""] * len(e["fixes"]))
        fixes = "".join(f'<div><span style="{_MUTED}">{"fix" if i == 0 else "or"}:</span> '
                        f'<code style="{_MONO}">{esc(f)}</code>'
                        + (f' <span style="{_MUTED}">— {esc(effect)}</span>' if effect else "")
                        + "</div>"
                        for i, (f, effect) in enumerate(zip(e["fixes"], effects)))
        closest = ""
        if e.get("closest"):
            closest = (f'<div style="{_MUTED}">closest earlier signature #{esc(e["closest"])}: '
                       f'<code style="{_MONO}">({esc(e["closest_signature"])})</code></div>')
        why = f'<div style="{_MUTED}">{esc(e["advice"])}</div>' if e.get("advice") else ""
        items.append(
            f'<li style="margin-bottom:6px;"><b>trace #{esc(e["trace"])}</b> · '
            f'{esc(e["cause"])} · at {esc(e["call_site"])} · cost '
            f'{esc(units.duration(e["cost_ms"]))}'
            f'<div><code style="{_MONO}">({esc(e["signature"])})</code></div>{closest}'
            f'<ul style="margin:2px 0;">{diffs}</ul>{why}{fixes}</li>')
    if not items:
        return f'<div style="{STYLE} {_MUTED}">no traces yet</div>'
    # numbered by trace ("trace #2"), not by position in the list: no list numbers
    return (f'<ul class="kx-retraces" style="{STYLE} list-style:none; padding-left:0;">'
            f'{"".join(items)}</ul>')


def stale_html(sentences: Sequence[str]) -> str:
    if not sentences:
        return ""
    items = "".join(f"<li>{esc(s)}</li>" for s in sentences)
    return (f'<div class="kx-stale" style="{STYLE} color:var(--jp-error-color1, #c92a2a);">'
            f'<b>captured values changed since tracing</b>'
            f'<ul style="margin:2px 0;">{items}</ul></div>')


def monitor_snapshot_html(title: str, counters: str, signatures: str, graph: str,
                          log: str, stale: str, note: str = "") -> str:
    """The static stand-in for a monitor widget (what a saved notebook shows)."""
    note_html = f'<div style="{_MUTED}">{esc(note)}</div>' if note else ""
    graph_html = (f'<details><summary>graph</summary><div style="overflow:auto;">{graph}'
                  '</div></details>') if graph else ""
    return (f'<div class="kx-monitor" style="{STYLE} border:1px solid #ced4da; '
            f'border-radius:6px; padding:8px; margin:4px 0;">'
            f'<div style="font-size:13px; font-weight:600;">{esc(title)}</div>{note_html}'
            f'{counters}{stale}<details open><summary>signatures</summary>{signatures}'
            f'</details>{graph_html}<details><summary>retrace log</summary>{log}</details>'
            '</div>')
