"""Control flow: ``cond`` and ``while`` (sub-graphs run on the node's operands) and
``get_output`` (one result of a multi-result node).

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`). The whole-graph
compiler writes ``cond``/``while``/``get_output`` in its own forms
(:mod:`kernel_ext.backends.whole_graph.control_flow`), and so does the NumPy executor
(:mod:`kernel_ext.backends.emit.host`): control flow is each writer's own. ONNX writes
``cond`` as ``If`` and ``while`` as ``Loop``, their graphs as sub-graphs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.backward import backward, differentiable, inline_graph
from ...autodiff.rules import NOTES, VJP, Primal
from ...autodiff.while_gradients import while_vjp
from ...ir.abstract.core import ABSTRACT_EVAL, AbstractValue
from ...ir.graph import Graph, Node
from ...ir.interpreter import LOWER, interpret
from ...ir.ops import OpKind
from ...ir.params import CondParams, GetOutputParams, WhileParams
from ...onnx.builder import GraphBuilder, elem_type, onnx_modules
from ...onnx.rules.common import RULES as ONNX
from ...onnx.rules.common import output_avals
from ...trace import Tensor, current_context
from ...trace.control_flow import cond as kx_cond

K = OpKind

# --- cond, while ---


@ABSTRACT_EVAL.register(K.COND, K.WHILE)
def _control_flow(params: CondParams | WhileParams, *args: Any) -> tuple[AbstractValue, ...]:
    return tuple(params.out_avals)


# --- cond ---


@LOWER.register(K.COND)
def _lower_cond(node: Node) -> Callable[..., Any]:
    params = cast("CondParams", node.params)
    true_graph, false_graph = params.branches

    def cond(pred: Any, *operands: Any) -> tuple[Any, ...]:
        return tuple(interpret(true_graph if pred else false_graph, operands))

    return cond


@VJP.register(K.COND)
def _cond_vjp(p: Primal, gs: list[Any]) -> list[Any]:
    """A ``cond``'s cotangents: a ``cond`` on the same predicate whose branches each re-run
    their forward branch and differentiate it (the forward values are recomputed, not kept)."""
    params = cast("CondParams", p.params)
    pred, *operands = p.args
    t_graph, f_graph = params.branches
    wanted = [
        i for i, x in enumerate(operands) if isinstance(x, Tensor) and differentiable(x.node.aval)
    ]
    if not wanted:
        return [None] * len(p.args)

    def branch(graph: Graph) -> Callable[[], tuple[Any, ...]]:
        def run() -> tuple[Any, ...]:
            ctx = current_context()
            assert ctx is not None  # (cond traces the branch)
            env, new = inline_graph(graph, operands)
            made = set(new)
            targets = []
            for out, g in zip(graph.outputs, gs):
                value = env.get(out, None)
                if g is not None and isinstance(value, Tensor):
                    targets.append((ctx.lift(value), g))
            # a placeholder (operand) used as an output is not new: lift gives its capture
            sources = {i: ctx.lift(operands[i]) for i in wanted}
            found = backward(ctx, targets, lambda n: n in made, sources.values())
            return tuple(_or_zeros(found.get(sources[i]), operands[i]) for i in wanted)

        return run

    results = kx_cond(pred, branch(t_graph), branch(f_graph), name=f"{p.node.name}_grad")
    out: list[Any] = [None] * len(p.args)
    for i, ct in zip(wanted, results):
        out[1 + i] = ct
    return out


def _or_zeros(ct: Any, like: Tensor) -> Any:
    if ct is None:
        return np.zeros_like(like)
    return ct.astype(like.dtype) if ct.dtype != like.dtype else ct


NOTES.add(K.COND, "a cond on the same predicate re-running each branch")


@ONNX.register(K.COND)
def _onnx_cond(b: GraphBuilder, node: Node) -> list[str]:
    params = cast("CondParams", node.params)
    pred = node.args[0]
    pred_name = (
        b.to_bool(b.value(pred), pred.dtype)
        if isinstance(pred, Node)
        else b.operand(pred, np.bool_)
    )
    operands = [
        b.value(a) if isinstance(a, Node) else b.operand(a, np.asarray(a).dtype)
        for a in node.args[1:]
    ]
    out_dtypes = [aval.dtype for aval in output_avals(node)]
    branches = []
    for label, graph in zip(("then", "else"), params.branches):
        bindings = dict(zip(graph.inputs, operands))
        branches.append(b.subgraph(graph, bindings, [], out_dtypes, f"{node.name}_{label}"))
    return b.add(
        "If",
        [pred_name],
        len(out_dtypes),
        hint=node.name,
        then_branch=branches[0],
        else_branch=branches[1],
    )


# --- while ---


@LOWER.register(K.WHILE)
def _lower_while(node: Node) -> Callable[..., Any]:
    params = cast("WhileParams", node.params)
    cond_graph, body_graph = params.cond, params.body
    n_vars = params.n_vars

    def loop(*args: Any) -> tuple[Any, ...]:
        values, captures = list(args[:n_vars]), list(args[n_vars:])
        while interpret(cond_graph, values + captures)[0]:
            values = interpret(body_graph, values + captures)
        return tuple(values)

    return loop


# The loop's gradient (stacking the forward loop's state, a reverse loop replaying the body's
# VJP) is the backward pass's own machinery: kernel_ext/autodiff/while_gradients.py.
VJP.add(K.WHILE, while_vjp)
NOTES.add(
    K.WHILE,
    "stacks each iteration's state, then a reverse loop replays the body's VJP; "
    "loop variables keep their shapes; any order (the reverse loop is a loop)",
)


@ONNX.register(K.WHILE)
def _onnx_while(b: GraphBuilder, node: Node) -> list[str]:
    """A graph loop as ONNX's ``Loop`` without a trip count: the condition graph runs once
    before the loop and again at the end of each body, on the new values."""
    params = cast("WhileParams", node.params)
    _, helper, _ = onnx_modules()
    n = params.n_vars
    cond_graph, body_graph = params.cond, params.body
    args = [
        b.value(a) if isinstance(a, Node) else b.operand(a, np.asarray(a).dtype) for a in node.args
    ]
    dtypes = [aval.dtype for aval in output_avals(node)]
    # (a loop-carried value keeps one dtype in ONNX: the initial values take the loop's)
    inits = [
        b.cast(v, a.dtype if isinstance(a, Node) else np.asarray(a).dtype, dt)
        for v, a, dt in zip(args[:n], node.args[:n], dtypes)
    ]
    captures = args[n:]
    first = GraphBuilder(b.model, b.rules, b.env)
    first.env.update({p: [v] for p, v in zip(cond_graph.inputs, inits + captures)})
    first.emit(cond_graph)
    b.nodes.extend(first.nodes)
    out = cond_graph.outputs[0]
    keep_going = b.to_bool(first.value(out), out.dtype)

    iteration, cond_in = b.fresh(f"{node.name}_iter"), b.fresh(f"{node.name}_cond_in")
    carried = [b.fresh(f"{node.name}_var{i}") for i in range(n)]
    inputs = [
        helper.make_tensor_value_info(iteration, elem_type(np.int64), []),
        helper.make_tensor_value_info(cond_in, elem_type(np.bool_), []),
    ]
    inputs += [
        helper.make_tensor_value_info(name, elem_type(dt), None)
        for name, dt in zip(carried, dtypes)
    ]
    bindings = dict(zip(body_graph.inputs, carried + captures))

    def finish(inner: GraphBuilder, new_values: list[str]) -> list[str]:
        again = GraphBuilder(inner.model, inner.rules, inner.env)
        again.env.update({p: [v] for p, v in zip(cond_graph.inputs, new_values + captures)})
        again.emit(cond_graph)
        inner.nodes.extend(again.nodes)
        test = cond_graph.outputs[0]
        return [inner.to_bool(again.value(test), test.dtype), *new_values]

    body = b.subgraph(body_graph, bindings, inputs, dtypes, f"{node.name}_body", finish)
    return b.add("Loop", ["", keep_going, *inits], n, hint=node.name, body=body)


# --- get_output ---


@ABSTRACT_EVAL.register(K.GET_OUTPUT)
def _get_output(params: GetOutputParams, x: tuple[AbstractValue, ...]) -> AbstractValue:
    output: AbstractValue = x[params.index]
    return output


@LOWER.register(K.GET_OUTPUT)
def _lower_get_output(node: Node) -> Callable[..., Any]:
    params = cast("GetOutputParams", node.params)
    index = params.index
    return lambda values: values[index]


@ONNX.register(K.GET_OUTPUT)
def _onnx_get_output(b: GraphBuilder, node: Node) -> list[str]:
    params = cast("GetOutputParams", node.params)
    return [b.env[node.args[0]][params.index]]


# (the backward pass routes a get_output's cotangent to its node's output itself)
NOTES.add(K.GET_OUTPUT, "routes the cotangent to its cond or while output")
