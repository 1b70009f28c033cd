"""The pipeline: composition, fixed point, verification, and passes inside sub-graphs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from passes_support import assert_identical, ops, snapshot, special_values, trace_raw

import kernel_ext as kx
from kernel_ext.ir import AbstractValue, Graph, GraphLintError, OpKind, interpret, lint, subgraphs
from kernel_ext.passes import (
    DEFAULT_PIPELINE,
    eliminate_common_subexpressions,
    fold_constants,
    map_subgraphs,
    prune_dead_code,
    run_pipeline,
    simplify,
)

f32 = np.float32
K = OpKind


def _messy_body(name: str = "body") -> Graph:
    """A sub-graph with work for every pass: foldable, simplifiable, duplicated, dead."""
    b = Graph(name)
    a = b.placeholder("a", (3,), f32)
    k = b.create_node(K.ADD, (b.constant(np.ones(3, f32)), 1.0))  # folds
    t1 = b.create_node(K.TANH, (b.create_node(K.MULTIPLY, (a, 1)),))  # x * 1
    t2 = b.create_node(K.TANH, (a,))  # twin of t1
    b.create_node(K.EXP, (a,))  # dead
    b.outputs = [b.create_node(K.ADD, (b.create_node(K.MULTIPLY, (t1, k)), t2)), a]
    return b


def _cond(g: Graph, x: object, branches: tuple[Graph, Graph]) -> object:
    """A ``cond`` node of ``g`` on ``sum(x) > 0`` running ``branches`` on ``x``."""
    pred = g.create_node(K.GREATER, (g.create_node(K.SUM, (x,), {"axis": None}), 0))
    avals = tuple(o.aval for o in branches[0].outputs)
    return g.create_node(K.COND, (pred, x), {"branches": branches, "out_avals": avals}, aval=avals)


def _outputs_of(g: Graph, node: object, n: int) -> list:
    return [g.create_node(K.GET_OUTPUT, (node,), {"index": i}) for i in range(n)]


def test_default_pipeline_is_fold_simplify_cse_prune():
    assert (
        fold_constants,
        simplify,
        eliminate_common_subexpressions,
        prune_dead_code,
    ) == DEFAULT_PIPELINE


def test_pipeline_reaches_a_fixed_point():
    g = Graph("f")
    x = g.placeholder("x", (3,), f32)
    y = g.create_node(K.ADD, (g.create_node(K.MULTIPLY, (x, 1)), -0.0))
    g.outputs = [g.create_node(K.ADD, (g.create_node(K.TANH, (y,)), g.create_node(K.TANH, (x,))))]
    out = run_pipeline(g, verify=True)
    assert ops(out) == ["tanh", "add"]
    for p in DEFAULT_PIPELINE:
        assert p(out) == (out, False)


def test_verify_names_the_pass_that_broke_an_invariant():
    def scramble(graph: Graph) -> tuple[Graph, bool]:
        broken = graph.rebuilt(graph.nodes)
        broken.nodes.reverse()
        return broken, True

    g = Graph("f")
    x = g.placeholder("x", (3,), f32)
    g.outputs = [g.create_node(K.TANH, (x,))]
    with pytest.raises(GraphLintError, match="after pass scramble"):
        run_pipeline(g, (fold_constants, scramble), verify=True)


def test_passes_reach_into_sub_graphs_and_keep_their_arity():
    body, other = _messy_body(), _messy_body("other")
    g = Graph("f")
    x = g.placeholder("x", (3,), f32)
    node = _cond(g, x, (body, other))
    g.outputs = _outputs_of(g, node, 2)
    before, body_text = snapshot(body), str(body)
    out = run_pipeline(g, verify=True)
    (cond,) = [n for n in out.nodes if n.op is K.COND]
    new_body = cond.params["branches"][0]
    assert new_body is not body and snapshot(body) == before and str(body) == body_text
    assert str(new_body) == (
        "graph body(a: float32[3]) {\n"
        "  %add = constant([2., 2., 2.]:float32) : float32[3]\n"
        "  %tanh = tanh(%a) : float32[3]\n"
        "  %multiply_1 = multiply(%tanh, %add) : float32[3]\n"
        "  %add_1 = add(%multiply_1, %tanh) : float32[3]\n"
        "  return (%add_1, %a)\n}"
    )
    lint(new_body)
    assert len(new_body.inputs) == 1 and len(new_body.outputs) == 2
    assert ops(new_body) == ["constant", "tanh", "multiply", "add"]
    xs = np.array([0.5, -1.0, 2.0], f32)
    for a, b in zip(interpret(new_body, [xs]), interpret(body, [xs])):
        assert_identical(a, b)


def test_nested_sub_graphs_and_tuples_of_sub_graphs_are_optimised():
    middle = Graph("middle")
    a = middle.placeholder("a", (3,), f32)
    middle.outputs = _outputs_of(
        middle, _cond(middle, a, (_messy_body("inner"), _messy_body("inner_else"))), 2
    )
    g = Graph("f")
    x = g.placeholder("x", (3,), f32)
    g.outputs = _outputs_of(g, _cond(g, x, (middle, _messy_body("other"))), 2)
    out = run_pipeline(g, verify=True)
    (cond,) = [n for n in out.nodes if n.op is K.COND]
    new_middle, new_other = cond.params["branches"]
    (inner_cond,) = [n for n in new_middle.nodes if n.op is K.COND]
    assert (
        ops(inner_cond.params["branches"][0])
        == ops(new_other)
        == ["constant", "tanh", "multiply", "add"]
    )


def test_map_subgraphs_reports_changes_and_leaves_the_node_alone():
    g = Graph("f")
    x = g.placeholder("x", (3,), f32)
    body = _messy_body()
    node = _cond(g, x, (body, _messy_body("other")))
    attrs, changed = map_subgraphs(node, lambda sub: (sub, False))
    assert not changed and attrs == node.params and attrs is not node.params
    attrs, changed = map_subgraphs(node, prune_dead_code)
    assert changed and attrs["branches"][0] is not body and node.params["branches"][0] is body


# -- control flow as the AutoGraph layer builds it ---------------------------------------------


def _cond_graph() -> Graph:
    g = Graph("f")
    x = g.placeholder("x", (3,), f32)
    pred = g.create_node(K.GREATER, (g.create_node(K.SUM, (x,), {"axis": None}), 0))
    true_b, false_b = _messy_body("true_branch"), Graph("false_branch")
    a = false_b.placeholder("a", (3,), f32)
    false_b.outputs = [
        false_b.create_node(
            K.NEGATIVE, (false_b.create_node(K.NEGATIVE, (false_b.create_node(K.ADD, (a, 0.5)),)),)
        ),
        a,
    ]
    avals = (AbstractValue((3,), np.dtype(f32)),) * 2
    cond = g.create_node(K.COND, (pred, x), {"branches": (true_b, false_b), "out_avals": avals})
    g.outputs = [g.create_node(K.GET_OUTPUT, (cond,), {"index": 0})]
    return g


def test_cond_branches_are_optimised_and_results_unchanged():
    g = _cond_graph()
    lint(g)
    out = run_pipeline(g, verify=True)
    cond = next(n for n in out.nodes if n.op is K.COND)
    true_b, false_b = cond.params["branches"]
    assert ops(true_b) == ["constant", "tanh", "multiply", "add"]
    assert ops(false_b) == ["add"]
    for xs in (np.array([1.0, 2.0, -0.5], f32), np.array([-1.0, -2.0, 0.5], f32)):
        assert_identical(interpret(out, [xs])[0], interpret(g, [xs])[0])


def test_while_body_is_optimised_and_stateful_loops_survive_pruning():
    g = Graph("f")
    x = g.placeholder("x", (3,), f32)
    i0 = g.constant(np.int64(0))
    cond_g = Graph("cond")
    ci, _, _ = (
        cond_g.placeholder("i", (), np.int64),
        cond_g.placeholder("acc", (3,), f32),
        cond_g.placeholder("x", (3,), f32),
    )
    limit = cond_g.create_node(K.ADD, (cond_g.constant(np.int64(2)), 3))  # folds to 5
    cond_g.outputs = [cond_g.create_node(K.LESS, (ci, limit))]
    body = Graph("body")
    bi, acc, bx = (
        body.placeholder("i", (), np.int64),
        body.placeholder("acc", (3,), f32),
        body.placeholder("x", (3,), f32),
    )
    step = body.create_node(
        K.ADD,
        (
            body.create_node(K.TANH, (bx,)),
            body.create_node(K.TANH, (body.create_node(K.MULTIPLY, (bx, 1.0)),)),
        ),
    )
    body.create_node(K.PRINT, (bi,), {"template": ("i", None), "sep": " ", "end": "\n"})
    body.outputs = [body.create_node(K.ADD, (bi, 1)), body.create_node(K.ADD, (acc, step))]
    avals = (AbstractValue((), np.dtype(np.int64)), AbstractValue((3,), np.dtype(f32)))
    loop = g.create_node(
        K.WHILE, (i0, x, x), {"cond": cond_g, "body": body, "n_vars": 2, "out_avals": avals}
    )
    unused = g.create_node(
        K.WHILE,
        (i0, x, x),
        {  # same loop without the print: pure, dead
            "cond": cond_g,
            "body": body.rebuilt([n for n in body.nodes if n.op is not K.PRINT]),
            "n_vars": 2,
            "out_avals": avals,
        },
    )
    assert unused in g.nodes
    g.outputs = [g.create_node(K.GET_OUTPUT, (loop,), {"index": 1})]
    lint(g)
    out = run_pipeline(g, verify=True)
    loops = [n for n in out.nodes if n.op is K.WHILE]
    assert len(loops) == 1  # the pure unused loop is pruned, the printing one stays
    new_body, new_cond = loops[0].params["body"], loops[0].params["cond"]
    assert ops(new_body) == ["tanh", "add", "print", "add", "add"]
    assert ops(new_cond) == ["constant", "less"]
    xs = np.array([0.1, 0.2, 0.3], f32)
    assert_identical(interpret(out, [xs])[0], interpret(g, [xs])[0])


# -- AutoGraph programs: the passes inside real cond/while bodies ------------------------------


def _loop(x):
    total = np.zeros_like(x)
    while np.sum(total) < 10:
        total = total + np.tanh(x * 1) + np.tanh(x) + np.ones_like(x) * 2
    return total


def _branch(x):
    if np.sum(x) > 0:
        y = -(-x) * 1 + np.ones_like(x) * 3  # noqa: B002 - a double negation to simplify
    else:
        y = np.tanh(x) + np.tanh(x) - 0
    return y, x.astype(x.dtype)


def _nested(x):
    acc = x + -0.0
    for i in kx.range(3):
        if np.max(acc) > 1:
            acc = acc / 1.0 - np.sin(x) * np.sin(x)
        else:
            acc = acc * 1.0 + np.exp(np.zeros_like(x) + 1)
    return acc


def _subgraph_ops(graph: Graph) -> int:
    """Nodes inside control-flow sub-graphs, all levels."""
    return sum(len(sub.nodes) + _subgraph_ops(sub) for n in graph.nodes for sub in subgraphs(n))


@pytest.mark.parametrize("fn", [_loop, _branch, _nested])
def test_autograph_bodies_are_optimised_and_agree_with_python(fn):
    for x in (
        np.array([0.5, -1.0, 2.0], f32),
        np.array([-3.0, 0.25, -0.0], f32),
        special_values(np.float32, 5),
    ):
        raw = trace_raw(fn, x)
        assert _subgraph_ops(raw) > 0
        optimised = run_pipeline(raw, verify=True)
        assert _subgraph_ops(optimised) < _subgraph_ops(raw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = fn(x)
            got = kx.function(fn)(x)
            from_raw, from_optimised = interpret(raw, [x]), interpret(optimised, [x])
        for w, g, r, o in zip(_leaves(want), _leaves(got), from_raw, from_optimised):
            assert_identical(g, w, fn.__name__)
            assert_identical(o, r, fn.__name__)


def _leaves(value):
    return list(value) if isinstance(value, tuple) else [value]
