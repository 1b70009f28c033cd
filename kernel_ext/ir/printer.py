"""The stable text form of a graph, used by ``repr``, tests and the UI.

Example::

    graph f(x: float32[2], y: float32[2]) {
      %add = add(%x, %y) : float32[2]
      %tanh = tanh(%add) : float32[2]
      return (%tanh)
    }

Stable means: the same graph always prints the same text (attrs sorted, floats by ``repr``,
big constants summarised), so tests can compare it and the UI can diff it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .abstract import AbstractValue
from .calls import CallTemplate, call_name
from .graph import Graph, Node, subgraphs
from .ops import OPAQUE_CALLS, OpKind

_INLINE_CONSTANT_SIZE = 8


def format_value(value: Any) -> str:
    """A short stable rendering of a literal or attribute value."""
    if isinstance(value, Node):
        return f"%{value.name}"
    if isinstance(value, np.ndarray):
        if value.size <= _INLINE_CONSTANT_SIZE:
            body = np.array2string(value, separator=", ", threshold=_INLINE_CONSTANT_SIZE)
            return f"{body.replace(chr(10), '')}:{value.dtype.name}"
        return f"<{value.dtype.name}{list(value.shape)}>"
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if isinstance(value, slice):
        parts = ["" if p is None else format_value(p) for p in (value.start, value.stop)]
        text = ":".join(parts)
        return text + (f":{format_value(value.step)}" if value.step is not None else "")
    if value is Ellipsis:
        return "..."
    if isinstance(value, tuple):
        return (
            "(" + ", ".join(format_value(v) for v in value) + ("," if len(value) == 1 else "") + ")"
        )
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if hasattr(value, "name") and hasattr(value, "dtype") and hasattr(value, "assign"):
        return f"Variable({value.name})"
    if isinstance(value, CallTemplate):
        parts = [format_value(a) for a in value.args]
        parts += [f"{k}={format_value(v)}" for k, v in value.kwargs]
        return "(" + ", ".join(parts) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, AbstractValue):
        return str(value)
    if callable(value) and not isinstance(value, type):
        return call_name(value)  # an opaque call's function: its name, never its address
    return repr(value)


def describe_call(node: Node) -> tuple[str, str] | None:
    """``("opaque", "np.einsum")`` for a ``numpy_call``, ``("random", "np.random.rand")`` for
    a ``random_call``, None for other nodes: how the views name a callable run as it is."""
    if node.op not in OPAQUE_CALLS:
        return None
    kind = "random" if node.op is OpKind.RANDOM_CALL else "opaque"
    return kind, call_name(node.params.fn)


def opaque_calls(graph: Graph) -> list[tuple[str, str]]:
    """:func:`describe_call` of every such node of ``graph`` and its sub-graphs, in order."""
    out: list[tuple[str, str]] = []
    for node in graph.nodes:
        described = describe_call(node)
        if described is not None:
            out.append(described)
        for sub in subgraphs(node):
            out.extend(opaque_calls(sub))
    return out


def format_attrs(node: Node) -> str:
    items = []
    for key in sorted(node.params):
        if key in ("value", "shape", "dtype") and node.op in (OpKind.PLACEHOLDER, OpKind.CONSTANT):
            continue
        if (
            key in ("captured", "out_avals", "out_aval")
            or isinstance(node.params[key], Graph)
            or (
                isinstance(node.params[key], tuple)
                and node.params[key]
                and isinstance(node.params[key][0], Graph)
            )
        ):
            continue
        items.append(f"{key}={format_value(node.params[key])}")
    return ", ".join(items)


def format_node(node: Node) -> str:
    if node.op is OpKind.CONSTANT:
        rhs = f"constant({format_value(node.params.value)})"
    else:
        args = [format_value(a) for a in node.args]
        attrs = format_attrs(node)
        rhs = f"{node.op.value}(" + ", ".join(args + ([attrs] if attrs else [])) + ")"
    lhs = f"%{node.name} = " if node.aval is not None else ""
    if node.multi_output:
        ty = " : (" + ", ".join(str(a) for a in node.outputs) + ")"
    else:
        ty = f" : {node.aval}" if node.aval is not None else ""
    return f"{lhs}{rhs}{ty}"


def _subgraph_labels(node: Node) -> list[tuple[str, Graph]]:
    if node.op is OpKind.COND:
        t, f = node.params.branches
        return [("true_branch", t), ("false_branch", f)]
    if node.op is OpKind.WHILE:
        return [("cond", node.params.cond), ("body", node.params.body)]
    return []


def format_graph(graph: Graph, label: str = "graph", indent: str = "") -> str:
    params = ", ".join(
        f"%{p.name}: {p.aval}" if label != "graph" else f"{p.name}: {p.aval}" for p in graph.inputs
    )
    head = f"graph {graph.name}" if label == "graph" else label
    lines = [f"{indent}{head}({params}) {{"]
    for node in graph.nodes:
        if node.op is OpKind.PLACEHOLDER:
            continue
        lines.append(indent + "  " + format_node(node))
        for sub_label, sub in _subgraph_labels(node):
            lines.append(format_graph(sub, sub_label, indent + "    "))
    lines.append(indent + "  return (" + ", ".join(f"%{o.name}" for o in graph.outputs) + ")")
    lines.append(indent + "}")
    return "\n".join(lines)
