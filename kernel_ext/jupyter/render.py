"""HTML and SVG renderings for the notebook: graphs, signatures, counters, retrace logs.

Every string that can carry user-derived text (function and parameter names, literal values,
reprs, call sites, explanations) goes through :func:`esc` (``html.escape`` with quotes) at the
point it is inserted into markup; nothing here trusts its input. The output is self-contained
(inline styles, no scripts), so it survives in a saved notebook where widgets do not render.

The graph picture is a small layered layout done here (no Graphviz needed, no script: it
survives in a saved notebook): each box sits one row below its deepest input, rows keep program
order and wrap at :data:`PICTURE_WIDTH`, edges are curves from a box to its users. Above
:data:`GROUP_ABOVE` nodes a box is one source line of one pass (``line 7: h = …``, ``5 ops``),
as the sidebar's graph view starts grouped by line, so a 100-node training step reads at 1:1.
Fused segments get a coloured, dashed outline and a legend; captured constants and variable
ops have their own colours, and so do the nodes a gradient's backward pass made (the
``backward`` note of their meta), to tell a training step's forward and backward halves apart.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

from ..engine import explain
from ..ir.graph import subgraphs
from ..ir.params import ConstantParams, VariableParams
from . import nodetext, records, units
from .records import RetraceEntry, Segment

__all__ = [
    "GRAPH_NOTE",
    "STYLE",
    "counters_html",
    "esc",
    "graph_html",
    "graph_svg",
    "monitor_snapshot_html",
    "retrace_log_html",
    "signatures_html",
    "stale_html",
]


def esc(text: Any) -> str:
    """Escape for HTML text and attribute values (quotes included)."""
    return html.escape(str(text), quote=True)


STYLE = (
    "font-family: var(--jp-ui-font-family, sans-serif); font-size: 12px; "
    "line-height: 1.4; color: var(--jp-ui-font-color1, #222);"
)
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
_KIND_MARK = {
    "input": "input",
    "opaque": "runs NumPy",
    "random": "random draw",
    "loop": "graph loop",
    "captured": "captured",
}
#: Text on the node boxes: their fills are light in every theme, so the ink is fixed.
_NODE_INK = "#212529"
#: Text on the cell's own background (legend, notes): the theme's ink.
_THEME_INK = "fill: var(--jp-ui-font-color1, #222);"
#: Fused segments' outlines: the sidebar's palette (``labextension/style/base.css``,
#: ``.jp-kx-seg-N``), so a segment has one colour in the cell, the sidebar and the main area.
_SEGMENT_COLOURS = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#9c755f",
)
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
        return "captured" if node.params.captured else "constant"
    if records.is_backward(node):
        return "backward"
    if records.opaque_note(node) is not None:
        return "opaque"
    if group in ("stateful", "control_flow"):
        return group
    return "default"


def _clip(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


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


#: Above this many nodes the picture groups them by source line, as the sidebar's graph
#: view starts collapsed above the same size (labextension/src/graphgroups.ts).
GROUP_ABOVE = 40
#: Rows (and the legend) wrap at this width: the picture fits a notebook cell at 1:1, so its
#: 11 px labels are drawn at 11 px.
PICTURE_WIDTH = 640


class _Item:
    """One box of the picture: a node, or the ops one source line made (grouped)."""

    def __init__(self, members: list[Any]) -> None:
        self.members = members
        self.lines: tuple[str, str] = ("", "")
        self.width = 0.0
        self.fill = _FILL["default"]
        self.stroke, self.dash, self.sw = "#495057", "", 1.0
        self.title = ""
        #: The fused segment whose outline the box wears (its position), or None.
        self.segment: int | None = None


def _line_key(node: Any) -> tuple | None:
    """What groups a node in a big picture: its pass and its source line (None: alone)."""
    source = getattr(node, "source", None)
    if source is None or subgraphs(node) or records.op_name(node) == "placeholder":
        return None
    return (records.is_backward(node), source.file, source.line)


def _short_line(node: Any) -> str:
    """``line 7`` of a node's source line."""
    return f"line {node.source.line}"


def graph_svg(concrete_function: Any, max_nodes: int = 160) -> str:
    """An SVG picture of a concrete function's (optimised) graph.

    Up to :data:`GROUP_ABOVE` nodes, one box per node; above, one box per source line of each
    pass (``line 7: h = np.maximum(x @ w1 + b1, 0)``, ``5 ops``), as the sidebar's graph view
    starts: its tooltip lists the ops. Rows and the legend wrap at :data:`PICTURE_WIDTH` so the
    picture fits a cell at its natural size and every label is drawn at 11 px.
    """
    graph = concrete_function.graph
    nodes = list(graph.get_operations())
    clipped = len(nodes) > max_nodes
    nodes = nodes[:max_nodes]
    outputs = {id(n) for n in graph.outputs}
    segments = records.segments(getattr(concrete_function, "executable", None))
    member = records.segment_index(segments)

    grouped = len(nodes) > GROUP_ABOVE
    items, item_of = _graph_items(nodes, grouped, outputs, member)
    inputs_of, placed_rows, row_of = _graph_rows(items, item_of)

    legend = _legend_entries(nodes, outputs)
    legend_rows = _wrap_legend(legend)
    legends = _segment_legends(items, segments, grouped)
    seg_w = max((36 + len(text) * _CHAR_W for _, text in legends), default=0)
    row_widths = [
        sum(items[i].width for i in row) + _COL_GAP * (len(row) - 1) for row in placed_rows
    ]
    legend_w = max((w for w, _ in legend_rows), default=0) + 20
    total_w = max(max(row_widths, default=100) + 20, legend_w, seg_w)
    pos: dict[int, tuple[float, float]] = {}
    for r, row in enumerate(placed_rows):
        x = (total_w - row_widths[r]) / 2
        for i in row:
            pos[i] = (x, 10 + r * (_BOX_H + _ROW_GAP))
            x += items[i].width + _COL_GAP
    legend_h = 18 * (len(legends) + len(legend_rows)) + 8
    total_h = 10 + len(placed_rows) * (_BOX_H + _ROW_GAP) + legend_h

    # Fit to the output's width, never enlarged: width 100% of the cell, at most the natural
    # width, height from the viewBox's aspect ratio. Pure SVG/CSS, so a saved notebook (no
    # widgets, no scripts) fits the same; zoom and pan are the sidebar's.
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" '
        f'viewBox="0 0 {total_w:.0f} {total_h:.0f}" preserveAspectRatio="xMidYMin meet" '
        f'role="img" aria-label="{esc("graph " + graph.name)}" class="kx-graph" '
        f'style="font-family: sans-serif; font-size: 11px; width: 100%; '
        f'max-width: {total_w:.0f}px; height: auto; display: block;">',
        '<defs><marker id="kx-arrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="6" markerHeight="6" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z" fill="#868e96"/></marker></defs>',
    ]
    parts += _edge_paths(items, pos, inputs_of, row_of)
    parts += _box_parts(items, pos)
    parts += _legend_parts(legend_rows, legends, total_h - legend_h + 14)
    if clipped:
        parts.append(
            f'<text x="10" y="{total_h - 2:.0f}" style="fill: var(--jp-error-color1, '
            f'#c92a2a);">first {max_nodes} '
            "nodes shown</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _graph_items(
    nodes: list, grouped: bool, outputs: set[int], member: dict
) -> tuple[list[_Item], dict[int, int]]:
    """The picture's boxes (one per node, or grouped, one per source line of each pass) and
    the box of each node (by id)."""
    items: list[_Item] = []
    item_of: dict[int, int] = {}
    by_key: dict[tuple, int] = {}
    for n in nodes:
        key = _line_key(n) if grouped else None
        if key is not None and key in by_key:
            items[by_key[key]].members.append(n)
        else:
            if key is not None:
                by_key[key] = len(items)
            items.append(_Item([n]))
        item_of[id(n)] = by_key[key] if key is not None else len(items) - 1
    for item in items:
        if len(item.members) == 1:
            _describe_node(item, item.members[0], outputs, member)
        else:
            _describe_line(item, outputs, member)
        item.width = max(len(item.lines[0]), len(item.lines[1])) * _CHAR_W + 16
    return items, item_of


def _graph_rows(
    items: list[_Item], item_of: dict[int, int]
) -> tuple[list[list[int]], list[list[int]], list[int]]:
    """Each box's input boxes, the rows of boxes, and each box's row.

    Layers: an item sits one row below its deepest input (inputs from a later item, a
    helper's line used again, are left out: rows keep program order). A layer wider than the
    cell wraps into several rows."""
    level: list[int] = []
    inputs_of: list[list[int]] = []
    for i, item in enumerate(items):
        ins = sorted(
            {
                item_of[id(src)]
                for n in item.members
                for src in n.inputs
                if id(src) in item_of and item_of[id(src)] < i
            }
        )
        inputs_of.append(ins)
        level.append(1 + max((level[j] for j in ins), default=-1))
    rows: dict[int, list[int]] = {}
    for i, lv in enumerate(level):
        rows.setdefault(lv, []).append(i)
    placed_rows: list[list[int]] = []
    row_of: list[int] = [0] * len(items)
    for lv in sorted(rows):
        current: list[int] = []
        width = 0.0
        for i in rows[lv]:
            if current and width + _COL_GAP + items[i].width > PICTURE_WIDTH:
                placed_rows.append(current)
                current, width = [], 0.0
            width += (_COL_GAP if current else 0) + items[i].width
            current.append(i)
        placed_rows.append(current)
    for r, row in enumerate(placed_rows):
        for i in row:
            row_of[i] = r
    return inputs_of, placed_rows, row_of


def _segment_legends(
    items: list[_Item], segments: list, grouped: bool
) -> list[tuple[int | None, str]]:
    """The legend's compiled kernels. Grouped, a box wears a segment's outline only when the
    segment holds all its ops: the legend lists those, and counts the others (the sidebar's
    "by kernel" shows them)."""
    outlined = {item.segment for item in items}
    legends: list[tuple[int | None, str]] = [
        (k, f"{_legend(g)} [{g.backend}]")
        for k, g in enumerate(segments)
        if not grouped or k in outlined
    ]
    if len(legends) < len(segments):
        more = len(segments) - len(legends)
        legends.append(
            (
                None,
                f"{'and ' if legends else ''}{more} compiled kernel"
                f"{'s' * (more != 1)} inside the lines above (the sidebar's "
                "graph, by kernel, shows them)",
            )
        )
    return legends


def _edge_paths(
    items: list[_Item],
    pos: dict[int, tuple[float, float]],
    inputs_of: list[list[int]],
    row_of: list[int],
) -> list[str]:
    """The arrows from each box's inputs to it."""
    parts = []
    for i, item in enumerate(items):
        x2, y2 = pos[i]
        cx2 = x2 + item.width / 2
        for j in inputs_of[i]:
            x1, y1 = pos[j]
            cx1, by1 = x1 + items[j].width / 2, y1 + _BOX_H
            span = row_of[i] - row_of[j]
            if span > 1 or span < 1:
                # Skipping rows (or within a wrapped layer): bow out sideways so the edge
                # does not hide behind the boxes of the rows in between.
                bow = (40 + 12 * abs(span)) * (1 if (i + j) % 2 else -1)
                d = (
                    f"M {cx1:.1f} {by1:.1f} C {cx1 + bow:.1f} {by1 + 30:.1f}, "
                    f"{cx2 + bow:.1f} {y2 - 30:.1f}, {cx2:.1f} {y2 - 1:.1f}"
                )
            else:
                mid = (by1 + y2) / 2
                d = (
                    f"M {cx1:.1f} {by1:.1f} C {cx1:.1f} {mid:.1f}, {cx2:.1f} {mid:.1f}, "
                    f"{cx2:.1f} {y2 - 1:.1f}"
                )
            parts.append(
                f'<path d="{d}" fill="none" stroke="#868e96" stroke-width="1.2" '
                'marker-end="url(#kx-arrow)"/>'
            )
    return parts


def _box_parts(items: list[_Item], pos: dict[int, tuple[float, float]]) -> list[str]:
    """The boxes, each with its two lines and its tooltip."""
    parts = []
    for i, item in enumerate(items):
        x, y = pos[i]
        w = item.width
        a, b = item.lines
        group = ' class="kx-graph-line"' if len(item.members) > 1 else ""
        parts.append(
            f"<g{group}><title>{esc(item.title)}</title>"
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{_BOX_H}" rx="5" '
            f'fill="{item.fill}" stroke="{item.stroke}" stroke-width="{item.sw}"'
            f"{item.dash}/>"
            f'<text x="{x + w / 2:.1f}" y="{y + 14:.1f}" text-anchor="middle" '
            f'font-weight="bold" fill="{_NODE_INK}">{esc(a)}</text>'
            f'<text x="{x + w / 2:.1f}" y="{y + 27:.1f}" text-anchor="middle" '
            f'fill="{_NODE_INK}">{esc(b)}</text></g>'
        )
    return parts


def _legend_parts(legend_rows: list, legends: list[tuple[int | None, str]], ly: float) -> list[str]:
    """The legend under the picture, its first row at ``ly``: the node colours, then the
    compiled kernels' outlines."""
    parts = []
    for r, (_, entries) in enumerate(legend_rows):
        x = 10.0
        y = ly + 18 * r
        for text, fill in entries:
            stroke = (
                ' stroke="#2b8a3e" stroke-width="2.5"' if text == "output" else ' stroke="#495057"'
            )
            parts.append(
                f'<rect x="{x:.1f}" y="{y - 10:.1f}" width="12" height="12" '
                f'fill="{fill}"{stroke}/><text x="{x + 16:.1f}" '
                f'y="{y:.1f}" style="{_THEME_INK}">{esc(text)}</text>'
            )
            x += 16 + len(text) * _CHAR_W + 12
    for line, (k, text) in enumerate(legends):
        y = ly + 18 * (line + len(legend_rows))
        if k is not None:
            colour = _SEGMENT_COLOURS[k % len(_SEGMENT_COLOURS)]
            parts.append(
                f'<rect x="10" y="{y - 10:.1f}" width="12" height="12" '
                f'fill="white" stroke="{colour}" stroke-width="2" '
                'stroke-dasharray="5 3"/>'
            )
        parts.append(f'<text x="26" y="{y:.1f}" style="{_THEME_INK}">{esc(text)}</text>')
    return parts


def _describe_node(item: _Item, n: Any, outputs: set[int], member: dict) -> None:
    """A box of one node: what it computes (literal operands included, ``multiply(·, 2)``,
    never the IR's unique names), then its value with a word for what a reader must know
    (an opaque NumPy call, a random draw, a graph loop); its tooltip says the rest."""
    kind = nodetext.node_kind(n)
    detail = records.value_text(n.aval)
    inner = subgraphs(n)
    if inner and not detail:
        detail = f"{len(inner)} sub-graphs"
    mark = _KIND_MARK.get(kind)
    if mark:
        detail = f"{mark} · {detail}" if detail else mark
    item.lines = (_clip(nodetext.node_text(n), 34), _clip(detail, 34))
    item.fill = _FILL[_category(n)]
    seg = member.get(n.name)
    if seg is not None:
        item.stroke = _SEGMENT_COLOURS[seg % len(_SEGMENT_COLOURS)]
        item.dash, item.sw = ' stroke-dasharray="5 3"', 2.0
        item.segment = seg
    if id(n) in outputs:
        item.stroke, item.sw = "#2b8a3e", 2.5
    title = f"{nodetext.node_text(n)} → {records.value_text(n.aval)} (node {n.name})"
    source = getattr(n, "source", None)
    if source is not None:
        title += f"\nmade at {_where(source)}"  # (the sidebar's words)
    params = n.params
    if isinstance(params, ConstantParams) and params.captured:
        title += " (captured constant, frozen at trace time)"
    if isinstance(params, VariableParams):
        title += f" (kx.Variable {getattr(params.variable, 'name', '')})"
    note = records.opaque_note(n) or records.loop_note(n)
    if note is not None:
        title += f" ({note})"
    if records.is_backward(n):
        title += " (backward pass)"
    if id(n) in outputs:
        title += " (output)"
    for sub in inner:  # control flow: what its branches / bodies compute
        ops = [op for m in sub.get_operations() if (op := records.op_name(m)) != "placeholder"]
        title += f"\n{sub.name}: {_clip(', '.join(ops) or 'no ops', 120)}"
    item.title = title


def _describe_line(item: _Item, outputs: set[int], member: dict) -> None:
    """A box of the ops one source line made: ``line 7: h = np.maximum(…)``, then how many
    ops (and ``gradient`` for a backward pass's); coloured as its ops are (one fused
    segment: its outline; an output among them: the output's)."""
    first = item.members[0]
    backward = records.is_backward(first)
    count = len(item.members)
    value = records.value_text(item.members[-1].aval)
    item.lines = (
        _clip(f"{_short_line(first)}: {first.source.text}", 46),
        _clip(
            f"{count} ops" + (" · gradient" if backward else "") + (f" · {value}" if value else ""),
            46,
        ),
    )
    kinds = {_category(n) for n in item.members}
    item.fill = (
        _FILL["backward"]
        if backward
        else _FILL[next(iter(kinds)) if len(kinds) == 1 else "default"]
    )
    segs = {member.get(n.name) for n in item.members}
    if len(segs) == 1 and None not in segs:
        seg = next(iter(segs))
        assert seg is not None  # (None is not in segs)
        item.stroke = _SEGMENT_COLOURS[seg % len(_SEGMENT_COLOURS)]
        item.dash, item.sw = ' stroke-dasharray="5 3"', 2.0
        item.segment = seg
    if any(id(n) in outputs for n in item.members):
        item.stroke, item.sw = "#2b8a3e", 2.5
    ops = ", ".join(nodetext.node_text(n) for n in item.members)
    item.title = (
        f"{_where(first.source)}: {first.source.text}\n"
        f"{count} ops{' of the backward pass (the gradient)' if backward else ''}: "
        f"{_clip(ops, 400)}"
    )


def _where(source: Any) -> str:
    """``cell [5], line 7`` of a node's source line in a cell; ``line 7`` in a file (the
    picture is under the cell that called it: the sidebar's tooltip names the file)."""
    raw = f"{source.file}:{source.line}"
    shown = explain.format_call_site(raw)
    return f"line {source.line}" if shown == raw or not shown.startswith("cell") else shown


def _legend_entries(nodes: list[Any], outputs: set[int]) -> list[tuple[str, str]]:
    """The picture's colour key: the kinds of box it draws, each once."""
    present = {_category(n) for n in nodes}
    entries = [
        ("input", "placeholder"),
        ("captured constant", "captured"),
        ("constant", "constant"),
        ("variable / print", "stateful"),
        ("control flow", "control_flow"),
        ("NumPy call / random draw", "opaque"),
        ("op", "default"),
        ("backward (gradient) op", "backward"),
    ]
    out = [(text, _FILL[key]) for text, key in entries if key in present or key == "default"]
    if outputs:
        out.append(("output", "white"))
    return out


def _wrap_legend(entries: list[tuple[str, str]]) -> list[tuple[float, list[tuple[str, str]]]]:
    """The legend's entries in rows no wider than :data:`PICTURE_WIDTH`, with each row's width."""
    rows: list[tuple[float, list[tuple[str, str]]]] = []
    current: list[tuple[str, str]] = []
    width = 0.0
    for text, fill in entries:
        w = 28 + len(text) * _CHAR_W
        if current and width + w > PICTURE_WIDTH:
            rows.append((width, current))
            current, width = [], 0.0
        current.append((text, fill))
        width += w
    if current:
        rows.append((width, current))
    return rows


#: Said under the monitor's graph: it fits the cell; zooming is the sidebar's.
GRAPH_NOTE = (
    "fitted to the cell's width · hover a box for details · to zoom and pan, select "
    "this signature in the Traced functions sidebar (it can also open the graph in "
    "the main area)"
)


def graph_html(svg: str) -> str:
    """The monitor's graph section: the fitted picture and the note on where to zoom."""
    return (
        f'<div class="kx-graph-area">{svg}<div class="kx-graph-note" '
        f'style="{STYLE} {_MUTED} font-size:11px;">{esc(GRAPH_NOTE)}</div></div>'
    )


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
    per_call = (
        "duration of a recent call, as the engine timed it (every 64th cache hit is timed)"
        if measured
        else "estimate: wall time of the latest stretch of "
        "calls divided by the calls in it (an upper bound)"
    )
    cells = [
        ("calls", f"{counts.calls:,}", ""),
        ("traces", f"{counts.traces:,}", ""),
        (
            "cache hits",
            units.hit_rate(counts.cache_hits, counts.calls),
            "calls that ran an existing trace, of all calls",
        ),
    ]
    if counts.failed_calls:
        cells.append(
            (
                "failed calls",
                f"{counts.failed_calls:,}",
                "calls that raised before "
                "running a graph: wrong arguments, a signature mismatch, a failed trace",
            )
        )
    cells += [
        (
            "tracing",
            units.duration(stats.get("trace_ms", 0)),
            "time spent running the Python body to build this function's graphs",
        ),
        (
            "compiling at trace",
            units.duration(stats.get("compile_ms", 0)),
            "time this function's traces spent optimising and preparing their executors; "
            "kernels compiled in the background are timed in the graph's legend",
        ),
        ("last run" if measured else "per call (estimate)", last, per_call),
    ]
    items = "".join(
        f'<div style="display:inline-block; margin-right:16px;" '
        f'title="{esc(tip)}"><div style="{_MUTED} font-size:11px;">{esc(k)}</div>'
        f'<div style="font-size:15px; font-weight:600; white-space:nowrap;">'
        f"{esc(v)}</div></div>"
        for k, v, tip in cells
    )
    return f'<div class="kx-counters" style="{STYLE}">{items}</div>'


def tokens_html(text: str) -> str:
    """``text`` escaped, each argument or type (``x: float32[16, 128]``) one unbreakable
    token: lines break only between arguments, never inside a type (as in the sidebar)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth <= (1 if text.startswith("(") else 0):
            parts.append(text[start : i + 1])
            start = i + 1
    parts.append(text[start:])
    return " ".join(
        f'<span style="white-space:nowrap;">{esc(p.strip())}</span>' for p in parts if p.strip()
    )


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
        body.append(
            f'<tr style="{weight}">{td}{esc(mark)}</td>{td}#{esc(r["id"])}</td>'
            f"{code}({tokens_html(r['inputs'])})</td>{td}→</td>"
            f"{code}{tokens_html(r['outputs'])}</td>"
            f"{td}{esc(r['nodes'])}</td>{td}{esc(r['backend'])}"
            f"{_dashboard_link(r.get('dashboard'))}</td></tr>"
        )
        # NumPy calls and draws made at every call; loops unrolled or made graph loops.
        # How it runs, in one plain sentence (the sidebar's words; the tier's note on
        # hover), and its kernels' compile progress.
        served = r.get("served_by") or r.get("tier") or ""
        detail = (
            f"{r['tier']} (executor: {r['backend']})"
            if r.get("tier")
            else f"executor: {r.get('backend', '')}"
        )
        notes = [(served, detail)] if served else []
        if r.get("compile"):
            notes.append((r["compile"], ""))
        notes += [(note, "") for note in (*(r.get("opaque") or ()), *(r.get("loops") or ()))]
        for note, tip in notes:
            title = f' title="{esc(tip)}"' if tip else ""
            body.append(
                f'<tr><td></td><td></td><td colspan="5" style="{_MUTED}"{title}>'
                f"{esc(note)}</td></tr>"
            )
    th = '<th style="padding:1px 8px 1px 0;">'
    # Cells without a heading are td (an empty th says nothing to a screen reader).
    head = (
        f"<tr><td></td>{th}trace</th>{th}inputs</th><td></td>{th}outputs</th>"
        f"{th}nodes (traced → optimised)</th>{th}backend</th></tr>"
    )
    return (
        f'<table class="kx-signatures" style="{STYLE} border-collapse:collapse; '
        f'text-align:left;">{head}{"".join(body)}</table>'
    )


def _dashboard_link(url: Any) -> str:
    """`` · dashboard`` linking a Dask dashboard (an http(s) URL only), or ""."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return ""
    return (
        f' · <a class="kx-dashboard" href="{esc(url)}" target="_blank" '
        f'rel="noopener noreferrer" title="{esc(url)}">dashboard</a>'
    )


def retrace_log_html(entries: Iterable[RetraceEntry]) -> str:
    """``entries``: from :func:`kernel_ext.jupyter.records.retrace_entry`."""
    items = []
    for e in entries:
        diffs = "".join(f"<li>{esc(d['sentence'])}</li>" for d in e["diffs"])
        effects = list(e.get("effects") or [""] * len(e["fixes"]))
        fixes = "".join(
            f'<div><span style="{_MUTED}">{"fix" if i == 0 else "or"}:</span> '
            f'<code style="{_MONO}">{esc(f)}</code>'
            + (f' <span style="{_MUTED}">— {esc(effect)}</span>' if effect else "")
            + "</div>"
            for i, (f, effect) in enumerate(zip(e["fixes"], effects))
        )
        closest = ""
        if e.get("closest"):
            closest = (
                f'<div style="{_MUTED}">closest earlier signature #{esc(e["closest"])}: '
                f'<code style="{_MONO}">({esc(e["closest_signature"])})</code></div>'
            )
        why = f'<div style="{_MUTED}">{esc(e["advice"])}</div>' if e.get("advice") else ""
        items.append(
            f'<li style="margin-bottom:6px;"><b>trace #{esc(e["trace"])}</b> · '
            f"{esc(e['cause'])} · at {esc(e['call_site'])} · cost "
            f"{esc(units.duration(e['cost_ms']))}"
            f'<div><code style="{_MONO}">({esc(e["signature"])})</code></div>{closest}'
            f'<ul style="margin:2px 0;">{diffs}</ul>{why}{fixes}</li>'
        )
    if not items:
        return f'<div style="{STYLE} {_MUTED}">no traces yet</div>'
    # numbered by trace ("trace #2"), not by position in the list: no list numbers
    return (
        f'<ul class="kx-retraces" style="{STYLE} list-style:none; padding-left:0;">'
        f"{''.join(items)}</ul>"
    )


def stale_html(sentences: Sequence[str]) -> str:
    if not sentences:
        return ""
    items = "".join(f"<li>{esc(s)}</li>" for s in sentences)
    return (
        f'<div class="kx-stale" style="{STYLE} color:var(--jp-error-color1, #c92a2a);">'
        f"<b>captured values changed since tracing</b>"
        f'<ul style="margin:2px 0;">{items}</ul></div>'
    )


def monitor_snapshot_html(
    title: str, counters: str, signatures: str, graph: str, log: str, stale: str, note: str = ""
) -> str:
    """The static stand-in for a monitor widget (what a saved notebook shows)."""
    note_html = f'<div style="{_MUTED}">{esc(note)}</div>' if note else ""
    graph_html = (
        (f'<details><summary>graph</summary><div style="overflow:auto;">{graph}</div></details>')
        if graph
        else ""
    )
    return (
        f'<div class="kx-monitor" style="{STYLE} border:1px solid #ced4da; '
        f'border-radius:6px; padding:8px; margin:4px 0;">'
        f'<div style="font-size:13px; font-weight:600;">{esc(title)}</div>{note_html}'
        f"{counters}{stale}<details open><summary>signatures</summary>{signatures}"
        f"</details>{graph_html}<details><summary>retrace log</summary>{log}</details>"
        "</div>"
    )
