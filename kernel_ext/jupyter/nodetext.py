"""How one graph node reads for people, the same in the sidebar and in the monitor's picture.

The IR names nodes for uniqueness (``multiply_1``), not for reading, and keeps literal operands
inline in ``Node.args`` (torch.fx style), where an edge-only drawing never shows them: in
``np.tanh(x) * 2 * n`` with ``n=20`` the ``2`` and the ``20`` were invisible. So a node reads
as *what it computes*: the op applied to its operands, graph inputs written ``·`` (the edges
show where they come from) and literals as the IR printer writes them::

    multiply(·, 2)            sum(·, axis=0)            np.kron(·, ·)
    constant(0.5)             x                         while loop

Each node also gets a *kind* (what the pictures colour or mark: inputs, constants, opaque
NumPy calls, random draws, graph loops, other control flow, stateful ops) and a *note*, the
one-line explanation the views show next to it (``records.opaque_note`` /
``records.loop_note``, the words every view uses).
"""

from __future__ import annotations

from typing import Any

from ..ir.calls import CallTemplate, Operand, call_name
from ..ir.graph import Node, subgraphs
from ..ir.params import CallParams
from ..ir.printer import format_attrs, format_value
from . import records

__all__ = ["INPUT_MARK", "MAX_TEXT", "node_kind", "node_note", "node_text"]

#: How a graph-node operand is written in a node's text (the edge says which node).
INPUT_MARK = "·"
#: Longest node text; longer ones end in "…" (the full text is in the tooltip).
MAX_TEXT = 48


_DEFAULTS = frozenset({"keepdims=False"})


def clip(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _operand(value: Any) -> str:
    """A literal as the IR printer writes it; a graph input (node or template slot) as ``·``."""
    if isinstance(value, (Operand, Node)):
        return INPUT_MARK
    if isinstance(value, tuple):
        inner = ", ".join(_operand(v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, list):
        return "[" + ", ".join(_operand(v) for v in value) + "]"
    return format_value(value)


def node_text(node: Any) -> str:
    """What ``node`` computes, unclipped: ``multiply(·, 2)``; a parameter's name for an input."""
    op = records.op_name(node)
    if op == "placeholder":
        return str(node.name)
    if op == "constant":
        value = format_value(node.params.value)
        return f"captured {value}" if node.params.captured else f"constant({value})"
    if op == "while":
        return "while loop"
    if op == "cond":
        return "cond (if/else)"
    params = node.params
    if isinstance(params, CallParams) and isinstance(params.template, CallTemplate):
        parts = [_operand(a) for a in params.template.args]
        parts += [f"{k}={_operand(v)}" for k, v in params.template.kwargs]
        return f"{call_name(params.fn)}({', '.join(parts)})"
    parts = [_operand(a) for a in node.args]
    # NumPy's defaults say nothing: ``sum(·, axis=0)``, not ``sum(·, axis=0, keepdims=False)``
    parts += [item for item in format_attrs(node).split(", ") if item and item not in _DEFAULTS]
    return f"{op}({', '.join(parts)})"


def node_kind(node: Any) -> str:
    """``input``, ``constant``, ``captured``, ``opaque``, ``random``, ``loop``, ``control_flow``,
    ``stateful`` or ``op``: how the pictures mark the node."""
    op = records.op_name(node)
    if op == "placeholder":
        return "input"
    if op == "constant":
        return "captured" if node.params.captured else "constant"
    note = records.opaque_note(node)
    if note is not None:
        return "random" if note.startswith("random") else "opaque"
    if op == "while":
        return "loop"
    group = getattr(getattr(node.op, "group", None), "value", "")
    if group in ("control_flow", "stateful"):
        return group
    return "op"


def node_note(node: Any) -> str | None:
    """The one line a view shows with the node, or None: an opaque call's or a loop's note
    (``opaque: np.kron — runs NumPy at each call``, ``loop at cell [3], line 4: ...``), or
    what a control-flow node's sub-graphs hold."""
    note = records.opaque_note(node) or records.loop_note(node)
    if note is not None:
        return note
    inner = subgraphs(node)
    if not inner:
        return None
    count = sum(len(g.nodes) for g in inner)
    return f"{len(inner)} sub-graphs, {count} nodes"
