"""Dead-code pruning: drop pure nodes whose values nobody uses (TensorFlow's non-strict rule).

Stateful nodes (prints, variable reads and writes) always stay, with everything they read, and
keep their program order. A pruned node never runs, so its run-time errors never fire, exactly
as the seed guides show for graphs.
"""

from __future__ import annotations

from ..ir import Graph, Node
from ..ir.graph import has_effects


def prune(graph: Graph) -> tuple[Graph, bool]:
    """``Graph -> (Graph, changed)``: keep outputs, stateful nodes and what they depend on."""
    live: set[Node] = set()
    stack = list(graph.outputs) + [n for n in graph.nodes if has_effects(n)]
    while stack:
        node = stack.pop()
        if node in live:
            continue
        live.add(node)
        stack.extend(node.inputs)
    if all(n in live or n in graph.inputs for n in graph.nodes):
        return graph, False
    return graph.rebuilt(n for n in graph.nodes if n in live), True
