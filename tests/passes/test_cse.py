"""Common-subexpression elimination: what merges, what must stay apart."""

from __future__ import annotations

import numpy as np
from passes_support import assert_identical, ops, snapshot

import kernel_ext as kx
from kernel_ext.ir import DynamicIndex, Graph, OpKind, interpret, lint
from kernel_ext.passes import eliminate_common_subexpressions as cse
from kernel_ext.passes import freeze, run_pipeline

f32 = np.float32
K = OpKind


def _graph(shape: tuple = (3,), dtype: type = f32) -> tuple[Graph, object]:
    g = Graph("f")
    return g, g.placeholder("x", shape, dtype)


def test_cse_merges_twins_and_whole_chains_in_one_pass():
    g, x = _graph()
    a = g.create_node(K.ADD, (g.create_node(K.TANH, (x,)), 1.0))
    b = g.create_node(K.ADD, (g.create_node(K.TANH, (x,)), 1.0))
    g.outputs = [g.create_node(K.MULTIPLY, (a, b))]
    out, changed = cse(g)
    assert changed
    lint(out)
    assert str(out) == (
        "graph f(x: float32[3]) {\n"
        "  %tanh = tanh(%x) : float32[3]\n"
        "  %add = add(%tanh, 1.0) : float32[3]\n"
        "  %multiply = multiply(%add, %add) : float32[3]\n"
        "  return (%multiply)\n}"
    )
    assert (g.count_ops(), out.count_ops()) == (5, 3)


def test_literals_merge_only_when_equal_including_their_type():
    g, x = _graph()
    lits = [1, 1.0, True, 0.0, -0.0, float("nan"), float("nan"), 1 + 0j]
    nodes = [g.create_node(K.ADD, (x, lit)) for lit in lits]
    g.outputs = [g.create_node(K.STACK, tuple(nodes), {"axis": 0})]
    out, _ = cse(g)
    # 1, 1.0 and True are different literals; 0.0 and -0.0 too; NaN equals NaN by its bits
    assert ops(out).count("add") == len(lits) - 1


def test_attrs_compare_by_value_through_tuples_slices_dtypes_and_arrays():
    g, x = _graph((4, 4))
    s1 = g.create_node(K.SUM, (x,), {"axis": (0, 1), "keepdims": False})
    s2 = g.create_node(K.SUM, (x,), {"axis": (0, 1), "keepdims": False})
    s3 = g.create_node(K.SUM, (x,), {"axis": (0, 1), "keepdims": True})
    i1 = g.create_node(K.GETITEM, (x,), {"index": (slice(1, None), np.array([0, 2]))})
    i2 = g.create_node(K.GETITEM, (x,), {"index": (slice(1, None), np.array([0, 2]))})
    i3 = g.create_node(K.GETITEM, (x,), {"index": (slice(1, None), np.array([0, 3]))})
    c1 = g.create_node(K.CAST, (x,), {"dtype": np.dtype(np.int32)})
    c2 = g.create_node(K.CAST, (x,), {"dtype": np.dtype("int32")})
    g.outputs = [g.create_node(K.ADD, (a, 1.0)) for a in (s1, s2, s3)] + [
        g.create_node(K.NEGATIVE, (a,)) for a in (i1, i2, i3, c1, c2)
    ]
    out, _ = cse(g)
    assert ops(out).count("sum") == 2 and ops(out).count("getitem") == 2
    assert ops(out).count("cast") == 1


def test_freeze_distinguishes_what_numpy_would():
    assert freeze(1) != freeze(1.0) != freeze(True)
    assert freeze(0.0) != freeze(-0.0) and freeze(float("nan")) == freeze(float("nan"))
    assert freeze(np.array([1, 2], np.int32)) != freeze(np.array([1, 2], np.int64))
    assert freeze(np.array([1, 2])) != freeze(np.array([[1, 2]]))
    assert freeze((1, slice(None, 2))) == freeze((1, slice(None, 2)))
    assert freeze((1,)) != freeze([1])
    assert freeze(DynamicIndex(1)) == freeze(DynamicIndex(1)) != freeze(DynamicIndex(2))
    obj_a, obj_b = object(), object()
    assert freeze(obj_a) == freeze(obj_a) != freeze(obj_b)  # unknown objects: identity


def test_stateful_nodes_never_merge():
    v = kx.Variable(np.zeros(3, f32), name="v")
    g, x = _graph()
    r1 = g.create_node(K.READ_VARIABLE, (), {"variable": v})
    g.create_node(K.ASSIGN_ADD_VARIABLE, (x,), {"variable": v})
    r2 = g.create_node(K.READ_VARIABLE, (), {"variable": v})
    for _ in range(2):
        g.create_node(K.PRINT, (x,), {"template": (None,), "sep": " ", "end": "\n"})
    g.outputs = [g.create_node(K.SUBTRACT, (r2, r1))]
    out, changed = cse(g)
    assert not changed and out is g
    assert interpret(g, [np.ones(3, f32)])  # (prints twice)


def test_nodes_with_sub_graphs_never_merge():
    body = Graph("body")
    body.outputs = [body.create_node(K.TANH, (body.placeholder("a", (3,), f32),))]
    g, x = _graph()
    pred = g.create_node(K.GREATER, (g.create_node(K.SUM, (x,), {"axis": None}), 0))
    avals = (body.outputs[0].aval,)
    c1, c2 = (
        g.create_node(K.COND, (pred, x), {"branches": (body, body), "out_avals": avals}, aval=avals)
        for _ in range(2)
    )
    o1, o2 = (g.create_node(K.GET_OUTPUT, (c,), {"index": 0}) for c in (c1, c2))
    g.outputs = [g.create_node(K.ADD, (o1, o2))]
    out, changed = cse(g)
    assert not changed and ops(out).count("cond") == 2


def test_captured_constants_stay_apart_but_made_ones_merge():
    g, x = _graph()
    k1 = g.constant(np.ones(3, f32), captured=True)
    k2 = g.constant(np.ones(3, f32), captured=True)
    m1 = g.constant(np.ones(3, f32))
    m2 = g.constant(np.ones(3, f32))
    m3 = g.constant(np.ones(3, np.float64))
    g.outputs = [g.create_node(K.ADD, (x, a)) for a in (k1, k2, m1, m2, m3)]
    out, _ = cse(g)
    assert ops(out).count("constant") == 4
    assert len(out.captures) == 2


def test_twin_outputs_stay_distinct_arrays():
    @kx.function
    def f(x):
        return np.tanh(x), np.tanh(x), x.T, x.T

    x = np.ones((2, 2), f32)
    a, b, t1, t2 = f(x)
    cf = f.get_concrete_function(x)
    assert ops(cf.graph) == ["tanh", "copy", "transpose", "transpose"]
    assert not np.shares_memory(a, b)
    assert_identical(a, b)


def test_cse_is_pure_and_idempotent():
    g, x = _graph()
    g.outputs = [g.create_node(K.ADD, (g.create_node(K.EXP, (x,)), g.create_node(K.EXP, (x,))))]
    before, text = snapshot(g), str(g)
    out, changed = cse(g)
    assert changed and snapshot(g) == before and str(g) == text
    assert cse(out) == (out, False)
    assert run_pipeline(g).count_ops() == 2
