"""GraphDef-style export (TensorFlow's node list and protobuf-like text) and DOT export."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .abstract import AbstractValue
from .calls import call_name
from .graph import Graph, Node
from .ops import OPAQUE_CALLS, OpKind
from .printer import format_value


@dataclass
class NodeDef:
    """One node as TensorFlow's ``NodeDef``: ``input`` names the input nodes."""

    name: str
    op: str
    input: list[str] = field(default_factory=list)
    attr: dict[str, Any] = field(default_factory=dict)


@dataclass
class GraphDef:
    """The serialisable node list; ``str()`` gives protobuf-like text."""

    node: list[NodeDef]

    def __str__(self) -> str:
        out: list[str] = []
        for n in self.node:
            out.append("node {")
            out.append(f'  name: "{_escape(n.name)}"')
            out.append(f'  op: "{n.op}"')
            for inp in n.input:
                out.append(f'  input: "{_escape(inp)}"')
            for key in sorted(n.attr):
                out.append("  attr {")
                out.append(f'    key: "{key}"')
                out.append(f"    value {{ {_attr_text(n.attr[key])} }}")
                out.append("  }")
            out.append("}")
        return "\n".join(out)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _attr_text(value: Any) -> str:
    if isinstance(value, np.dtype):
        return f"type: DT_{value.name.upper()}"
    if isinstance(value, bool):
        return f"b: {str(value).lower()}"
    if isinstance(value, int):
        return f"i: {value}"
    if isinstance(value, float):
        return f"f: {value!r}"
    if isinstance(value, tuple) and all(isinstance(d, (int, type(None))) for d in value):
        dims = " ".join(f"dim {{ size: {-1 if d is None else d} }}" for d in value)
        return f"shape {{ {dims} }}"
    return f's: "{_escape(format_value(value))}"'


def _node_attrs(node: Node) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if node.multi_output:
        attrs["Tout"] = ", ".join(str(a) for a in node.outputs)
    elif isinstance(node.aval, AbstractValue):
        attrs["T"] = node.aval.dtype
        attrs["_output_shape"] = node.aval.shape if node.aval.shape is not None else "unknown"
    for key, value in node.params.items():
        if key in ("captured", "out_avals", "out_aval"):
            continue
        if isinstance(value, Graph):
            value = f"graph {value.name} ({len(value.nodes)} nodes)"
        elif isinstance(value, tuple) and value and all(isinstance(v, Graph) for v in value):
            value = ", ".join(f"graph {g.name} ({len(g.nodes)} nodes)" for g in value)
        if key == "dtype":
            value = np.dtype(value)
        attrs[key] = value
    for i, a in enumerate(node.args):
        if not isinstance(a, Node):
            attrs[f"literal_{i}"] = a
    return attrs


def as_graph_def(graph: Graph) -> GraphDef:
    """The graph as a :class:`GraphDef`; placeholders are named after their parameters."""
    nodes = []
    for node in graph.nodes:
        nodes.append(
            NodeDef(
                name=node.name,
                op=node.op.type_name,
                input=[a.name for a in node.inputs],
                attr=_node_attrs(node),
            )
        )
    return GraphDef(nodes)


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(graph: Graph) -> str:
    """Graphviz DOT text: one box per node (op, shape, dtype), edges from inputs to users."""
    lines = [
        f"digraph {_dot_quote(graph.name)} {{",
        "  rankdir=TB;",
        '  node [shape=box, fontname="monospace"];',
    ]
    for node in graph.nodes:
        label = f"{node.name}\n{node.op.value}"
        if node.op in OPAQUE_CALLS:
            label += f" {call_name(node.params.fn)}"
        if node.aval is not None:
            label += f"\n{node.aval}"
        style = ""
        if node.op is OpKind.PLACEHOLDER:
            style = ", shape=ellipse"
        elif node.op in OPAQUE_CALLS:
            style = ', style="filled,dashed", fillcolor=lightgrey'
        elif node.op.is_stateful:
            style = ", style=filled, fillcolor=lightyellow"
        lines.append(f"  {_dot_quote(node.name)} [label={_dot_quote(label)}{style}];")
    for node in graph.nodes:
        for inp in node.inputs:
            lines.append(f"  {_dot_quote(inp.name)} -> {_dot_quote(node.name)};")
    for i, out in enumerate(graph.outputs):
        lines.append(f'  "__output_{i}" [label="output {i}", shape=plaintext];')
        lines.append(f'  {_dot_quote(out.name)} -> "__output_{i}";')
    lines.append("}")
    return "\n".join(lines)
