"""The graph verifier: structural invariants every pass must preserve (run between passes)."""

from __future__ import annotations

from typing import Any

from .abstract import AbstractValue
from .graph import Graph, Node
from .ops import OpGroup, OpKind
from .params import MISSING

_LITERAL_TYPES = (bool, int, float, complex, type(None))


class GraphLintError(AssertionError):
    """A graph broke an IR invariant; the message names the node and the rule."""


def lint(graph: Graph) -> None:
    """Check ``graph``; raise :class:`GraphLintError` on the first broken invariant.

    Invariants: unique node names; every input of a node appears earlier (program order is a
    topological order); args are nodes of this graph or weak literals; value ops carry an
    :class:`AbstractValue`; placeholders are exactly ``graph.inputs``; outputs belong to the
    graph and carry values; stateful nodes name their variable where they touch one.
    """
    seen: set[Node] = set()
    names: set[str] = set()
    for i, node in enumerate(graph.nodes):
        where = f"node #{i} %{node.name} ({node.op.value})"
        if not isinstance(node.op, OpKind):
            raise GraphLintError(f"{where}: op is {node.op!r}, not an OpKind")
        if node.name in names:
            raise GraphLintError(f"{where}: duplicate name")
        names.add(node.name)
        for a in node.args:
            if isinstance(a, Node):
                if a not in seen:
                    raise GraphLintError(f"{where}: input %{a.name} is not defined before use")
                if a.aval is None:
                    raise GraphLintError(f"{where}: input %{a.name} produces no value")
                if a.multi_output != (node.op is OpKind.GET_OUTPUT):
                    raise GraphLintError(
                        f"{where}: multi-output %{a.name} must be read through "
                        "get_output (and only multi-output nodes may be)"
                    )
            elif not isinstance(a, _LITERAL_TYPES):
                raise GraphLintError(f"{where}: argument {a!r} is neither a node nor a literal")
        if node.op.group is OpGroup.SOURCE and node.args:
            raise GraphLintError(f"{where}: source ops take no inputs")
        if node.op.group is OpGroup.CONTROL_FLOW:
            _lint_control_flow(node, where)
        elif node.multi_output:
            # opaque calls and multi-result ops (svd, nonzero, unique, ...): one value each
            if not all(isinstance(a, AbstractValue) for a in node.outputs):
                raise GraphLintError(f"{where}: a multi-output call or op yields abstract values")
        elif node.op.group is not OpGroup.STATEFUL and not isinstance(node.aval, AbstractValue):
            raise GraphLintError(f"{where}: missing abstract value")
        if (
            node.op
            in (
                OpKind.READ_VARIABLE,
                OpKind.ASSIGN_VARIABLE,
                OpKind.ASSIGN_ADD_VARIABLE,
                OpKind.ASSIGN_SUB_VARIABLE,
            )
            and node.params.variable is MISSING
        ):
            raise GraphLintError(f"{where}: stateful variable op without a variable")
        seen.add(node)
    _lint_outputs(graph, seen)


def _lint_control_flow(node: Node, where: str) -> None:
    """Sub-graphs are linted too and must agree with the node on arity and types."""
    if not node.multi_output:
        raise GraphLintError(f"{where}: control flow yields a tuple of values")
    n_args = len(node.args) - (1 if node.op is OpKind.COND else 0)
    graphs = (
        node.params.branches if node.op is OpKind.COND else (node.params.cond, node.params.body)
    )
    for g in graphs:
        try:
            lint(g)
        except GraphLintError as e:
            raise GraphLintError(f"{where} sub-graph {g.name!r}: {e}") from None
        if len(g.inputs) != n_args:
            raise GraphLintError(
                f"{where}: sub-graph {g.name!r} takes {len(g.inputs)} inputs for {n_args} operands"
            )
    bodies = graphs if node.op is OpKind.COND else graphs[1:]
    for g in bodies:
        if len(g.outputs) != len(node.outputs):
            raise GraphLintError(
                f"{where}: sub-graph {g.name!r} returns {len(g.outputs)} values, "
                f"the node declares {len(node.outputs)}"
            )
    if node.op is OpKind.WHILE and len(graphs[0].outputs) != 1:
        raise GraphLintError(f"{where}: the loop condition must return one value")


def _lint_outputs(graph: Graph, seen: set[Any]) -> None:
    placeholders = [n for n in graph.nodes if n.op is OpKind.PLACEHOLDER]
    if placeholders != graph.inputs:
        raise GraphLintError("graph.inputs must list exactly the placeholder nodes, in order")
    for out in graph.outputs:
        if out not in seen:
            raise GraphLintError(f"output %{out.name} is not a node of the graph")
        if out.aval is None:
            raise GraphLintError(f"output %{out.name} produces no value")
