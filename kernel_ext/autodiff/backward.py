"""The backward pass: cotangents of recorded graph nodes, built as new nodes of the trace.

:func:`backward` walks the forward nodes a tape recorded in reverse program order from the
target, applies each op's rule from :data:`~kernel_ext.autodiff.rules.VJP` and sums the
cotangents of every node read more than once. What it records is an ordinary graph: it lands
in the trace that is current when ``tape.gradient`` runs (so a tape recording *that* sees the
backward ops and can differentiate them again: higher order), and the optimiser and fused
backends treat it like the forward ops.

Control flow: a ``cond``'s cotangent is a ``cond`` on the same predicate whose branches
re-run their forward branch (:func:`inline_graph`) and differentiate it (its rule is
:mod:`kernel_ext.ops.structure.control_flow`'s); a graph ``while`` loop stacks its iterations'
state and runs a reverse loop (:mod:`.while_gradients`).
Opaque NumPy calls and random draws on the path raise
:class:`~kernel_ext.errors.NonDifferentiableError` naming the function and the line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import numpy as np

from .. import errors
from ..ir import (
    OPAQUE_CALLS,
    FallbackReasons,
    Graph,
    Node,
    OpGroup,
    OpKind,
    call_name,
    fallback_reason,
    subgraphs,
)
from ..trace import Tensor, TraceContext, current_context
from ..trace.source_lines import attributed_to
from .rules import VJP, Primal

#: The note marking nodes a backward pass made (``node.meta["backward"] is True``).
BACKWARD = "backward"

#: The note of a ``while`` node rewritten to stack its state (:mod:`.while_gradients`): the
#: :class:`~.while_gradients.StackedLoop` (``node.meta["stacked"]``).
STACKED = "stacked"

#: Nodes with no inputs to differentiate: the leaves of every backward walk.
LEAVES = frozenset({OpKind.PLACEHOLDER, OpKind.CONSTANT, OpKind.READ_VARIABLE})


def recording_trace() -> TraceContext:
    """The trace a gradient is recorded in: the callers run inside one (``current_context``
    is ``None`` only in eager code)."""
    return cast("TraceContext", current_context())


def differentiable(aval: Any) -> bool:
    """Do values of this abstract value carry gradients (real floating point)?"""
    return aval is not None and not isinstance(aval, tuple) and aval.dtype.kind == "f"


def backward(
    owner: TraceContext,
    targets: Sequence[tuple[Node, Any]],
    recorded: Callable[[Node], bool],
    sources: Iterable[Node],
) -> dict[Node, Any]:
    """Cotangents of ``sources`` (nodes of ``owner``'s graph) for ``targets`` (``(node,
    cotangent)`` pairs), differentiating through the nodes ``recorded`` accepts; recorded into
    the current trace. A source nothing connects to the targets is absent from the result."""
    sources = set(sources)
    here = current_context()
    start = len(here.graph.nodes) if here is not None else 0
    try:
        return _backward(owner, targets, recorded, sources)
    finally:
        if here is not None:
            mark_backward(here.graph.nodes[start:])


def mark_backward(nodes: Iterable[Node]) -> None:
    """Mark ``nodes`` (and the nodes of their branches and loop bodies) as made by a backward
    pass: ``backward`` in their meta, which the graph views show."""
    for node in nodes:
        node.meta[BACKWARD] = True
        for graph in subgraphs(node):
            mark_backward(graph.nodes)


def _backward(
    owner: TraceContext,
    targets: Sequence[tuple[Node, Any]],
    recorded: Callable[[Node], bool],
    sources: set[Node],
) -> dict[Node, Any]:
    order, depends = _between(owner, targets, recorded, sources)
    cts: dict[Node, Any] = {}
    multi: dict[Node, dict[int, Any]] = {}
    for node, ct in targets:
        if node in depends and differentiable(node.aval):
            _accumulate(cts, node, ct)
    found: dict[Node, Any] = {}
    for node in reversed(order):
        if node not in depends:
            continue
        g = _cotangent_of(node, cts, multi)
        if g is None:
            continue
        if node in sources:
            found[node] = g
        if not recorded(node) or node.op in LEAVES:
            continue
        if node.op is OpKind.GET_OUTPUT:
            slot = multi.setdefault(node.inputs[0], {})
            index = node.params.index
            slot[index] = g if slot.get(index) is None else slot[index] + g
            continue
        _propagate(owner, node, g, cts, depends)
    return found


def _between(
    owner: TraceContext,
    targets: Sequence[tuple[Node, Any]],
    recorded: Callable[[Node], bool],
    sources: set[Node],
) -> tuple[list[Node], set[Node]]:
    """Which nodes lie between the sources and the targets: the ancestors of a target
    (through recorded nodes), in graph order, and those of them that depend on a source."""
    ancestors: set[Node] = set()
    stack = [n for n, _ in targets]
    while stack:
        n = stack.pop()
        if n in ancestors:
            continue
        ancestors.add(n)
        if recorded(n) and n.op not in LEAVES:
            stack.extend(n.inputs)
    order = [n for n in owner.graph.nodes if n in ancestors]
    depends: set[Node] = set()
    for n in order:
        if n in sources or (
            recorded(n) and n.op not in LEAVES and any(i in depends for i in n.inputs)
        ):
            depends.add(n)
    return order, depends


def _cotangent_of(node: Node, cts: dict[Node, Any], multi: dict[Node, dict[int, Any]]) -> Any:
    """``node``'s cotangent so far (a list per output of a multi-output node), or None when
    nothing flows into it."""
    if node.multi_output:
        g: Any = [multi.get(node, {}).get(i) for i in range(len(node.outputs))]
        return None if all(x is None for x in g) else g
    return cts.get(node)


def _propagate(
    owner: TraceContext, node: Node, g: Any, cts: dict[Node, Any], depends: set[Node]
) -> None:
    """Apply ``node``'s VJP rule to its cotangent ``g`` and add the results to the
    cotangents of its inputs that depend on a source."""
    rule = VJP.get(node.op)
    if rule is None:
        raise _no_rule(node)
    primal = Primal(
        node,
        [owner.tensor(a) if isinstance(a, Node) else a for a in node.args],
        None if node.multi_output else owner.tensor(node),
    )
    with attributed_to(node):  # the gradient's nodes belong to the forward op's line
        for arg, ct in zip(node.args, rule(primal, g)):
            if ct is None or not isinstance(arg, Node) or arg not in depends:
                continue
            if not differentiable(arg.aval):
                if _complex(arg.aval):
                    raise _complex_path(node, arg)
                continue
            if callable(ct):
                ct = ct()
            _accumulate(cts, arg, ct)


def _accumulate(cts: dict[Node, Any], node: Node, ct: Any) -> None:
    """Add ``ct`` to ``node``'s cotangent, cast to its dtype (a float32 input of a float64
    op gets a float32 gradient, as TensorFlow does)."""
    if isinstance(ct, Tensor) and ct.dtype != node.dtype:
        ct = ct.astype(node.dtype)
    elif not isinstance(ct, Tensor):
        ct = np.asarray(ct, dtype=node.dtype)
    old = cts.get(node)
    cts[node] = ct if old is None else old + ct


def _complex(aval: Any) -> bool:
    return aval is not None and not isinstance(aval, tuple) and aval.dtype.kind == "c"


def _complex_path(node: Node, arg: Node) -> errors.NonDifferentiableError:
    where = node.meta.get("where")
    return errors.NonDifferentiableError(
        f"cannot differentiate through complex values: op '{node.op.value}'"
        f"{' at ' + where if where else ''} (node '{node.name}') reads the complex value "
        f"'{arg.name}' ({arg.dtype}), which depends on a differentiated source. "
        "Gradients are real only (NumPy has no complex derivative convention to follow). "
        "Fix: compute with real arrays (real and imaginary parts as separate float arrays), "
        "or wrap the complex part in kx.stop_gradient(...) if no gradient should flow "
        "through it."
    )


def _no_rule(node: Node) -> errors.NonDifferentiableError:
    where = node.meta.get("where")
    at = f" at {where}" if where else ""
    if node.op in OPAQUE_CALLS:
        what = "random draw" if node.op is OpKind.RANDOM_CALL else "opaque NumPy call"
        return errors.NonDifferentiableError(
            f"cannot differentiate through the {what} {call_name(node.params.fn)}{at} "
            f"(node '{node.name}'): it runs NumPy as it is at each call, so it has no "
            "gradient rule. Fix: express it with traced NumPy operations "
            "(kx.supported_numpy_functions()), or wrap its result in kx.stop_gradient(...) "
            "if no gradient should flow through it."
        )
    reason = fallback_reason(NO_GRADIENT_REASONS, node.op)
    because = f": {reason}" if reason else ""
    return errors.NonDifferentiableError(
        f"no gradient rule for op '{node.op.value}'{at} (node '{node.name}'){because}. Fix: "
        "wrap the value in kx.stop_gradient(...) if no gradient should flow through it; "
        "docs/gradients.md lists the ops with rules."
    )


# -- replaying a graph into the current trace --------------------------------------------------


class Unavailable:
    """The value of a node that cannot be replayed (a random draw): an error if used."""

    def __init__(self, node: Node) -> None:
        self.node = node


def inline_graph(
    graph: Graph, inputs: Sequence[Any], variables: dict | None = None
) -> tuple[dict[Node, Any], list[Node]]:
    """Record ``graph``'s nodes again in the current trace, its placeholders fed ``inputs``.

    Returns the new value of every old node and the new nodes, in order. Side effects are
    not repeated: prints and variable writes are skipped (a later read in the graph sees the
    written value through ``variables``, variable -> value), and a random draw becomes
    :class:`Unavailable`, an error where anything reads it.
    """
    ctx = current_context()
    assert ctx is not None
    start = len(ctx.graph.nodes)
    env: dict[Node, Any] = dict(zip(graph.inputs, inputs))
    written = {} if variables is None else variables
    for node in graph.nodes:
        op = node.op
        if op is OpKind.PLACEHOLDER:
            continue
        args = []
        for a in node.args:
            v = env[a] if isinstance(a, Node) else a
            if isinstance(v, Unavailable):
                raise errors.NonDifferentiableError(
                    f"cannot differentiate through the random draw "
                    f"{call_name(v.node.params.fn)}"
                    f"{' at ' + v.node.meta['where'] if v.node.meta.get('where') else ''}:"
                    " a replay for the gradient would draw other numbers. Fix: compute the "
                    "gradient inside the kx.function that draws them (a tape there sees the "
                    "draw), or pass the draws in as an argument."
                )
            args.append(v)
        if op is OpKind.READ_VARIABLE:
            var = node.params.variable
            env[node] = written[var] if var in written else ctx.read_variable(var)
        elif op in (OpKind.ASSIGN_VARIABLE, OpKind.ASSIGN_ADD_VARIABLE, OpKind.ASSIGN_SUB_VARIABLE):
            var = node.params.variable
            old = written[var] if var in written else ctx.read_variable(var)
            value = (
                args[0]
                if op is OpKind.ASSIGN_VARIABLE
                else (old + args[0] if op is OpKind.ASSIGN_ADD_VARIABLE else old - args[0])
            )
            written[var] = np.broadcast_to(
                np.asarray(value, var.dtype)
                if not isinstance(value, Tensor)
                else value.astype(var.dtype),
                var.shape,
            )
        elif op is OpKind.PRINT:
            continue
        elif op is OpKind.RANDOM_CALL:
            env[node] = Unavailable(node)
        elif op is OpKind.WHILE and STACKED in node.meta:
            # a loop a gradient already made stack its state: the copy stacks too, and gets
            # its own record of where (the old one names nodes of the replayed graph)
            from .while_gradients import restack

            meta = {k: v for k, v in node.meta.items() if k != STACKED}
            env[node] = ctx.bind(op, args, node.params, name=node.name, meta=meta)
            restack(ctx, env[node].node, node.meta[STACKED])
        else:
            env[node] = ctx.bind(op, args, node.params, name=node.name, meta=node.meta)
    return env, ctx.graph.nodes[start:]


# -- the rule table's coverage -----------------------------------------------------------------


def rule_kinds() -> dict[str, list[OpKind]]:
    """Every op by how the backward pass treats it: ``rule`` (a VJP rule), ``zero`` (zero
    gradient: piecewise constant, or integer/boolean results), ``leaf`` (sources and variable
    reads), ``error`` (raises, naming the op: opaque calls, random draws, writes, print)."""
    from .rules import ZERO_GRADIENT

    out: dict[str, list[OpKind]] = {"rule": [], "zero": [], "leaf": [], "error": []}
    for kind in OpKind:
        if kind in LEAVES:
            out["leaf"].append(kind)
        elif kind in ZERO_GRADIENT:
            out["zero"].append(kind)
        elif kind in VJP or kind is OpKind.GET_OUTPUT:
            out["rule"].append(kind)
        else:
            out["error"].append(kind)
    return out


#: Why the ops that raise NonDifferentiableError (``rule_kinds()["error"]``) have no rule.
NO_GRADIENT_REASONS: FallbackReasons = {
    OpGroup.STATEFUL: "a side effect or a write, not a value computed from the sources "
    "(variable writes, print, check); a random draw runs NumPy as it is",
    OpGroup.OPAQUE: "runs NumPy's function as it is at each call: no rule can see inside it",
    OpKind.TENSOR_ARRAY_WRITE: "no rule written; rows collected with x[i] = row (setitem) or "
    "np.stack have one",
    OpKind.HISTOGRAM: "no rule written (counts are piecewise constant in the samples; the "
    "gradient in weights is not written)",
    OpKind.INTERP: "no rule written (piecewise linear in x and fp)",
    OpKind.REAL: "complex values: gradients are real only (NumPy has no complex derivative "
    "convention to follow)",
    OpKind.IMAG: "complex values: gradients are real only",
    OpKind.FFT: "complex results: gradients are real only",
}


_HOW = {
    "rule": "VJP rule",
    "zero": "zero (piecewise constant, or an integer/bool result)",
    "leaf": "leaf (a source: placeholder, constant, variable read)",
    "error": "raises NonDifferentiableError",
}


def rule_table() -> str:
    """The op -> rule table of ``docs/gradients.md`` (a test checks the file against it):
    ``python -c "from kernel_ext.autodiff import rule_table; print(rule_table())"``."""
    from .rules import NOTES

    how = {kind: what for what, kinds in rule_kinds().items() for kind in kinds}
    lines = ["| op | group | gradient | notes |", "|----|-------|----------|-------|"]
    for kind in OpKind:
        lines.append(
            f"| `{kind.value}` | {kind.group.value} | {_HOW[how[kind]]} | {NOTES.get(kind, '')} |"
        )
    return "\n".join(lines)


__all__ = [
    "BACKWARD",
    "LEAVES",
    "STACKED",
    "OpGroup",
    "Unavailable",
    "backward",
    "differentiable",
    "inline_graph",
    "mark_backward",
    "rule_kinds",
    "rule_table",
]
