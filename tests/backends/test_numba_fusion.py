"""The fusion partitioner: which nodes share a kernel, and the schedule that runs them."""

from __future__ import annotations

import warnings

import numpy as np

import kernel_ext as kx
from kernel_ext.ir import OpKind
from kernel_ext.passes.fusion import Segment, partition, schedule


def _graph(fn, *args):
    return kx.function(fn, backend="numpy").get_concrete_function(*args).graph


def _ops(seg: Segment) -> list[str]:
    return [n.op.value for n in seg.nodes]


X = np.ones((4, 5), np.float32)


def test_an_elementwise_chain_becomes_one_segment():
    g = _graph(
        lambda x, a, b, c: np.tanh(a * x + b) * (1 / (1 + np.exp(-x))) + 0.5 * x * x - c, X, X, X, X
    )
    segs = partition(g)
    assert len(segs) == 1
    seg = segs[0]
    assert seg.kind == "map" and seg.domain == (4, 5)
    assert {n.name for n in seg.inputs} == {"x", "a", "b", "c"}
    assert [o.name for o in seg.outputs] == [g.outputs[0].name]


def test_a_reduction_ends_its_producers_segment():
    g = _graph(lambda y, p: np.mean((y - p) ** 2), X, X)
    (seg,) = partition(g)
    assert seg.kind == "reduce" and seg.reduction.op is OpKind.MEAN
    assert _ops(seg) == ["subtract", "square", "mean"]


def test_a_reduction_consumer_starts_a_new_segment():
    g = _graph(lambda x: np.sum(x * 2.0) * 3.0 + 1.0, X)
    segs = partition(g)
    assert [_ops(s) for s in segs] == [["multiply", "sum"], ["multiply", "add"]]


def test_an_intermediate_used_outside_becomes_an_output():
    g = _graph(lambda x: (x * 2.0, np.sum(x * 2.0 + 1.0)), X)
    (seg,) = partition(g)
    assert len(seg.outputs) == 2 and seg.outputs[-1] is seg.reduction


def test_broadcast_operands_stay_inputs_of_the_bigger_domain():
    row = np.ones(5, np.float32)
    g = _graph(lambda x, r: x * np.exp(r * 2.0), X, row)
    segs = partition(g)
    domains = sorted(s.domain for s in segs)
    assert domains == [(4, 5), (5,)]


def test_non_fusible_ops_split_segments_and_the_schedule_keeps_data_order():
    g = _graph(lambda x: np.sin(np.sort(x * 2.0 + 1.0) - 1.0) * 3.0, X)
    segs = partition(g)
    assert len(segs) == 2
    kinds = ["seg" if isinstance(i, Segment) else i.op.value for i in schedule(g, segs)]
    sort = kinds.index("sort")
    assert kinds.index("seg") < sort < len(kinds) - 1 - kinds[::-1].index("seg")


def test_segments_stay_convex():
    # a -> sort -> (a + s): a and the add must not share a segment, or the segment would
    # need the sort's result before it could produce the sort's input.
    def f(x):
        a = x * 2.0
        return a + np.sort(a)

    g = _graph(f, X)
    segs = partition(g)
    schedule(g, segs)  # raises on a cycle
    add = next(n for n in g.nodes if n.op is OpKind.ADD)
    mul = next(n for n in g.nodes if n.op is OpKind.MULTIPLY)
    assert not any(add in s.nodes and mul in s.nodes for s in segs)


def test_stateful_ops_are_never_members_and_keep_their_order():
    v = kx.Variable(np.zeros((4, 5), np.float32))

    def f(x):
        v.assign(x * 2.0 + 1.0)
        y = v.read_value() * 3.0 + 1.0
        v.assign_add(y)
        return v.read_value() + 1.0

    g = _graph(f, X)
    segs = partition(g)
    for seg in segs:
        assert not any(n.op.is_stateful for n in seg.nodes)
    order = schedule(g, segs)
    effects = [i.op for i in order if not isinstance(i, Segment) and i.op.is_stateful]
    assert effects == [n.op for n in g.nodes if n.op.is_stateful]


def test_a_segment_never_exceeds_max_nodes():
    def f(x):
        for _ in [0] * 30:  # a Python list: unrolled into a chain of 60 ops
            x = x * 1.5 + 0.5
        return x

    g = _graph(f, X)
    segs = partition(g, max_nodes=16)
    assert all(len(s.nodes) <= 16 for s in segs) and len(segs) >= 4


def test_a_segment_never_spans_a_variable_write_and_a_later_read():
    # Adam writes its slots, then reads them again for the update: a fused segment holding
    # both the write's input and the new value's use would have to run before and after the
    # write (a cycle in the schedule; it used to fall back to NumPy with a warning)
    def make():
        w = kx.Variable(2.0)
        opt = kx.optimizers.Adam(0.01)

        def step(x, y):
            g = np.sum(2.0 * (w * x - y) * x)
            opt.apply_gradients([(g, w)])
            return w * 1.0

        return step, w

    results = {}
    for backend in ("numpy", "auto"):
        step, w = make()
        f = kx.function(step, backend=backend)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "fusing failed" fallback
            for k in range(3):
                out = f(np.array([-1.0 - k]), np.array([2.0]))
        results[backend] = (out, w.numpy())
    np.testing.assert_array_equal(results["auto"][0], results["numpy"][0])
    np.testing.assert_array_equal(results["auto"][1], results["numpy"][1])
