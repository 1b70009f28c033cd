"""Constant folding: what folds (and to exactly which dtype), what must not, and purity."""

from __future__ import annotations

import numpy as np
from passes_support import assert_identical, ops, run_graph, snapshot

import kernel_ext as kx
from kernel_ext.ir import Graph, OpKind, interpret, lint
from kernel_ext.passes import MAX_FOLD_ELEMENTS, fold_constants, prune, run_pipeline

f32 = np.float32


def test_fold_replaces_pure_node_of_constants_and_literals():
    g = Graph("f")
    x = g.placeholder("x", (3,), f32)
    c = g.constant(np.array([1, 2, 3], f32), name="c")
    two = g.create_node(OpKind.MULTIPLY, (c, 2))
    g.outputs = [g.create_node(OpKind.ADD, (x, two))]
    out, changed = fold_constants(g)
    assert changed
    lint(out)
    assert str(out) == (
        "graph f(x: float32[3]) {\n"
        "  %c = constant([1., 2., 3.]:float32) : float32[3]\n"
        "  %multiply = constant([2., 4., 6.]:float32) : float32[3]\n"
        "  %add = add(%x, %multiply) : float32[3]\n"
        "  return (%add)\n}"
    )


def test_fold_keeps_the_dtype_of_zero_d_results():
    g = Graph("f")
    c = g.constant(np.array([1.5, 2.5], f32))
    s = g.create_node(OpKind.SUM, (c,), {"axis": None, "keepdims": False})
    i = g.create_node(OpKind.ADD, (g.constant(np.int8(100)), 27))
    g.outputs = [s, i]
    out, _ = fold_constants(g)
    s2, i2 = out.outputs
    assert s2.op is OpKind.CONSTANT and i2.op is OpKind.CONSTANT
    assert s2.params["value"].shape == () and s2.params["value"].dtype == np.float32
    assert i2.params["value"].dtype == np.int8 and i2.params["value"] == 127
    assert s2.aval == s.aval and i2.aval == i.aval
    assert not s2.params["value"].flags.writeable  # constants are frozen


def test_fold_runs_to_completion_in_one_pass_along_a_chain():
    g = Graph("f")
    x = g.placeholder("x", (2,), f32)
    v = g.constant(np.ones(2, f32))
    for _ in range(5):
        v = g.create_node(OpKind.TANH, (g.create_node(OpKind.ADD, (v, 1.0)),))
    g.outputs = [g.create_node(OpKind.MULTIPLY, (x, v))]
    folded, _ = fold_constants(g)
    assert folded.outputs[0].args[1].op is OpKind.CONSTANT  # the whole chain, in one pass
    out, _ = prune(folded)
    assert ops(out) == ["constant", "multiply"]
    xs = np.array([1.0, -2.0], f32)
    assert_identical(interpret(out, [xs])[0], interpret(g, [xs])[0])


def test_fold_leaves_nodes_that_warn_at_run_time():
    g = Graph("f")
    bad = g.create_node(OpKind.SQRT, (g.constant(np.array([-1.0])),))  # invalid value
    zero = g.create_node(OpKind.FLOOR_DIVIDE, (g.constant(np.array([1])), 0))  # divide by 0
    big = g.create_node(OpKind.MULTIPLY, (g.constant(np.array([200], np.uint8)), 2))  # fine
    g.outputs = [bad, zero, big]
    out, _ = fold_constants(g)
    # (a folded output is handed out as a fresh copy of the constant)
    assert [o.op for o in out.outputs] == [OpKind.SQRT, OpKind.FLOOR_DIVIDE, OpKind.COPY]
    assert run_graph(out, [])[1] == ["RuntimeWarning"]  # still warns, when it runs


def test_fold_leaves_nodes_that_raise_so_the_error_stays_a_run_time_error():
    g = Graph("f")
    singular = g.constant(np.zeros((2, 2)))
    g.outputs = [g.create_node(OpKind.INV, (singular,))]
    out, changed = fold_constants(g)
    assert not changed and out is g
    assert run_graph(out, [])[1] == ["LinAlgError"]


def test_fold_skips_huge_results():
    n = MAX_FOLD_ELEMENTS + 1
    g = Graph("f")
    big = g.create_node(OpKind.BROADCAST_TO, (g.constant(np.float32(1)),), {"shape": (n,)})
    small = g.create_node(OpKind.BROADCAST_TO, (g.constant(np.float32(1)),), {"shape": (10,)})
    g.outputs = [big, small]
    out, _ = fold_constants(g)
    assert [o.op for o in out.outputs] == [OpKind.BROADCAST_TO, OpKind.COPY]
    assert out.outputs[1].args[0].op is OpKind.CONSTANT


def test_fold_never_touches_stateful_nodes():
    v = kx.Variable(np.arange(3, dtype=f32), name="v")
    g = Graph("f")
    c = g.constant(np.ones(3, f32))
    read = g.create_node(OpKind.READ_VARIABLE, (), {"variable": v})
    g.create_node(OpKind.ASSIGN_VARIABLE, (c,), {"variable": v})
    g.create_node(OpKind.PRINT, (c,), {"template": ("c", None), "sep": " ", "end": "\n"})
    g.outputs = [g.create_node(OpKind.ADD, (read, 1.0))]
    out = run_pipeline(g, verify=True)
    assert ops(out) == ["constant", "read_variable", "assign_variable", "print", "add"]


def test_fold_of_captured_arrays_through_kx_function():
    scale = np.full(4, 3.0, f32)

    @kx.function
    def f(x):
        c = np.ones_like(x) * 2 + np.zeros_like(x)  # traced constant chain
        return x * c + scale * 2  # scale * 2 runs eagerly at trace time

    x = np.arange(4, dtype=f32)
    cf = f.get_concrete_function(x)
    assert cf.node_counts["optimised"] < cf.node_counts["traced"]
    assert ops(cf.graph).count("constant") == 2
    assert_identical(f(x), x * (np.ones_like(x) * 2 + np.zeros_like(x)) + scale * 2)


def test_fold_reads_static_dims_from_the_shape():
    g = Graph("f")
    x = g.placeholder("x", (None, 4), f32)
    d0 = g.create_node(OpKind.DIM, (x,), {"axis": 0})
    d1 = g.create_node(OpKind.DIM, (x,), {"axis": -1})
    g.outputs = [d0, d1]
    out, _ = fold_constants(g)
    assert [o.op for o in out.outputs] == [OpKind.DIM, OpKind.CONSTANT]
    value = out.outputs[1].params["value"]
    assert value == 4 and value.dtype == np.int64 and value.shape == ()


def test_fold_is_pure_and_returns_the_same_graph_when_nothing_folds():
    g = Graph("f")
    x = g.placeholder("x", (3,), f32)
    g.outputs = [
        g.create_node(
            OpKind.ADD, (x, g.create_node(OpKind.NEGATIVE, (g.constant(np.ones(3, f32)),)))
        )
    ]
    before, text = snapshot(g), str(g)
    out, changed = fold_constants(g)
    assert changed and out is not g
    assert snapshot(g) == before and str(g) == text
    assert not set(out.nodes) & set(g.nodes)  # no node is shared between the two graphs
    again, changed_again = fold_constants(out)
    assert again is out and not changed_again


def test_folded_results_reach_the_caller_as_fresh_writable_arrays():
    g = Graph("f")
    c = g.constant(np.arange(3, dtype=f32))
    g.outputs = [g.create_node(OpKind.MULTIPLY, (c, 2.0))]
    out = run_pipeline(g, verify=True)
    assert str(out) == (
        "graph f() {\n"
        "  %multiply = constant([0., 2., 4.]:float32) : float32[3]\n"
        "  %multiply_1 = copy(%multiply) : float32[3]\n"
        "  return (%multiply_1)\n}"
    )
    assert fold_constants(out) == (out, False)  # copy(constant) is already folded
    value = interpret(out, [])[0]
    assert value.flags.writeable and not np.shares_memory(value, out.nodes[0].params["value"])


def test_folded_branch_results_are_writable_through_kx_function():
    @kx.function
    def f(x):
        if np.sum(x) > 0:
            y = np.ones_like(x) * 2
        else:
            y = x * 1
        return y

    x = np.ones(3, f32)
    for arg in (x, -x):
        result = f(arg)
        assert result.flags.writeable and not np.shares_memory(result, arg)
        result[0] = 7.0  # the caller owns it: the next call is unaffected
    assert_identical(f(x), np.full(3, 2.0, f32))
