"""Control flow: cond as If, while as Loop, with their sub-graphs."""

from __future__ import annotations

import numpy as np

from kernel_ext.ir import Node
from kernel_ext.onnx.builder import GraphBuilder, elem_type, onnx_modules
from kernel_ext.onnx.rules.common import K, output_avals, rule_for


@rule_for(K.COND)
def cond(b: GraphBuilder, node: Node) -> list[str]:
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
    for label, graph in zip(("then", "else"), node.attrs["branches"]):
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


@rule_for(K.WHILE)
def while_(b: GraphBuilder, node: Node) -> list[str]:
    """A graph loop as ONNX's ``Loop`` without a trip count: the condition graph runs once
    before the loop and again at the end of each body, on the new values."""
    _, helper, _ = onnx_modules()
    n = node.attrs["n_vars"]
    cond_graph, body_graph = node.attrs["cond"], node.attrs["body"]
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
