"""Bounded loop indexes: which index checks the whole-graph compiler may drop, and the results.

``index_ranges`` must be sound (an index it calls bounded never leaves its range at run time:
the compiled code then reads without a check); these tests pin what it proves on the loops
people write and what it must leave alone, and that the compiled code still answers as NumPy
(results, arguments, and NumPy's IndexError where an index runs out of range).
"""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends import compiler
from kernel_ext.backends.index_ranges import index_ranges
from kernel_ext.ir import OpKind


def _graph(fn, *args):
    return kx.function(fn, backend="numpy").get_concrete_function(*args).graph


def _triangle(A):
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= A[j, j] * 0.1
    return A


def _shifted(x):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i + 1] - x[i]  # x[i + 1] runs out of range at the last i
    return out


def _gather(x, idx):
    out = np.zeros(idx.shape[0])
    for i in range(idx.shape[0]):
        out[i] = x[idx[i]]  # data decides the index: never bounded
    return out


def _halving(x, start):
    i = np.minimum(np.maximum(start, 0), 0)  # a traced counter known to start at 0
    m = x.shape[0]
    while i < m:  # the bound is carried (it shrinks): proves nothing about i
        x[i] += 1.0
        i += 1
        m -= 1
    return x


def _wrapping(x, s):
    i = np.maximum(np.minimum(s, np.int8(120)), np.int8(100))  # 100..120
    return x[i + np.int8(20)]  # 120..140 in int8 arithmetic: wraps past 127


def test_counted_loops_bound_their_counters_by_their_ranges():
    # 30 rows: above loops.SHORT_RANGE, so both loops are graph loops (not unrolled)
    graph = _graph(_triangle, np.ones((30, 30)))
    ranges = index_ranges(graph)
    by_name: dict[str, set[tuple[int, int]]] = {}
    for node, r in ranges.items():
        by_name.setdefault(node.name, set()).add(r)
    # range(1, 30) counts 0..28 and its item 1 + k runs 1..29; range(i) counts at most 0..28
    assert by_name["loop_index"] == {(0, 28)}
    assert (1, 29) in by_name["add"]
    reads = [
        n for g in _all_graphs(graph) for n in g.nodes if n.op in (OpKind.GETITEM, OpKind.SETITEM)
    ]
    assert len(reads) == 3
    for n in reads:
        for index in n.args[1 if n.op is OpKind.GETITEM else 2 :]:
            lo, hi = ranges[index]
            assert lo >= 0 and hi <= 29


def _all_graphs(graph):
    yield graph
    for n in graph.nodes:
        for key in ("cond", "body"):
            if key in n.params:
                yield from _all_graphs(n.params[key])
        for branch in n.params.get("branches", ()):
            yield from _all_graphs(branch)


def test_a_counter_tested_against_a_carried_bound_stays_unbounded():
    graph = _graph(_halving, np.ones(6), np.int64(3))
    (loop,) = [n for g in _all_graphs(graph) for n in g.nodes if n.op is OpKind.WHILE]
    body = loop.params["body"]
    assert not any(ph in index_ranges(graph) for ph in body.inputs)


def test_a_sum_that_wraps_in_its_dtype_has_no_range():
    graph = _graph(_wrapping, np.arange(200.0), np.int8(110))
    ranges = index_ranges(graph)
    clamp = [n for n in graph.nodes if n.op in (OpKind.MAXIMUM, OpKind.WHERE)][-1]
    assert ranges[clamp] == (100, 120)
    (total,) = [n for n in graph.nodes if n.op is OpKind.ADD]
    assert total not in ranges


@pytest.fixture
def synchronous():
    old = compiler.set_synchronous(True)
    yield
    compiler.set_synchronous(old)


def _compiled_source(f, *args) -> str:
    return f.get_concrete_function(*args).executable.run.__globals__["_H"].ksrc.source


@pytest.mark.usefixtures("synchronous")
def test_in_range_indexes_lose_their_check_and_the_results_stay_numpys():
    A = np.arange(900.0).reshape(30, 30) / 900
    f = kx.function(_triangle, jit_compile=True)
    got, want = f(A.copy()), _triangle(A.copy())
    np.testing.assert_array_equal(got, want)
    source = _compiled_source(f, A)
    loop = source.split("def graph(", 1)[1]
    assert "< -" not in loop, "an index check left on a counted loop's index"


@pytest.mark.usefixtures("synchronous")
def test_an_index_that_can_leave_its_range_keeps_its_check_and_numpys_error():
    x = np.arange(12.0)
    f = kx.function(_shifted, jit_compile=True)
    with pytest.raises(IndexError):
        _shifted(x.copy())
    with pytest.raises(IndexError):
        f(x.copy())
    source = _compiled_source(f, x)
    assert "< -" in source.split("def graph(", 1)[1]


@pytest.mark.usefixtures("synchronous")
@pytest.mark.parametrize("n", [3, 9, 20, 33])  # both sides of loops.SHORT_RANGE (8)
def test_data_chosen_indexes_keep_their_check(n):
    x = np.arange(float(n))
    idx = np.arange(n)[::-1].copy()
    f = kx.function(_gather, jit_compile=True)
    np.testing.assert_array_equal(f(x, idx), _gather(x, idx))
    bad = idx.copy()
    bad[-1] = n  # one past the end: NumPy's IndexError
    with pytest.raises(IndexError):
        _gather(x, bad)
    with pytest.raises(IndexError):
        f(x, bad)


@pytest.mark.usefixtures("synchronous")
def test_a_wrapped_index_reads_what_numpy_reads():
    x = np.arange(200.0)
    f = kx.function(_wrapping, jit_compile=True)
    for s in (np.int8(100), np.int8(110), np.int8(120)):
        np.testing.assert_array_equal(f(x, s), _wrapping(x, s))


def _upper_sweep(A, v):
    """Rows from the diagonal and columns below it: ``range(i, n)`` and ``range(i + 1, n)``
    count from a start the outer loop sets."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i, n):
            A[i, j] += v[j]
        for k in range(i + 1, n):
            A[k, i] -= v[k] * A[i, i]
    return A


def _from_the_end(r, y):
    """``r[k - i - 1]`` with ``i < k``: an index whose interval dips below 0 (from the end,
    never out of range), as Levinson-Durbin reads it."""
    out = np.zeros(r.shape[0])
    for k in range(1, r.shape[0]):
        s = 0.0
        for i in range(k):
            s += r[k - i - 1] * y[i]
        out[k] = s
    return out


def _to_a_traced_stop(x, m):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        for j in range(i, m):  # m comes with the call: j may pass the end
            out[i] += x[j]
    return out


def _indexes(graph):
    for g in _all_graphs(graph):
        for n in g.nodes:
            if n.op in (OpKind.GETITEM, OpKind.SETITEM):
                yield from n.args[1 if n.op is OpKind.GETITEM else 2 :]


@pytest.mark.parametrize("n", [12, 30])
def test_the_item_of_a_range_from_a_start_stays_below_its_stop(n):
    graph = _graph(_upper_sweep, np.ones((n, n)), np.ones(n))
    ranges = index_ranges(graph)
    indexes = list(_indexes(graph))
    assert indexes
    for index in indexes:
        lo, hi = ranges[index]  # (every index bounded)
        assert lo >= 0 and hi <= n - 1, (index.name, lo, hi)


def test_a_range_to_a_traced_stop_stays_unbounded_above():
    graph = _graph(_to_a_traced_stop, np.ones(30), np.int64(31))
    ranges = index_ranges(graph)
    reads = [  # x[j]
        n.args[1]
        for g in _all_graphs(graph)
        for n in g.nodes
        if n.op is OpKind.GETITEM and n.args[0].name == "x" and len(n.args) == 2
    ]
    assert reads
    for j in reads:
        assert j not in ranges or ranges[j][1] >= 30, ranges[j]


@pytest.mark.slow  # (two functions compiled: seconds from a cold kernel cache)
@pytest.mark.usefixtures("synchronous")
def test_ranges_from_a_start_and_from_the_end_lose_their_checks_and_stay_numpys():
    rng = np.random.default_rng(7)
    A, v = rng.standard_normal((30, 30)), rng.standard_normal(30)
    f = kx.function(_upper_sweep, jit_compile=True)
    mine, theirs = A.copy(), A.copy()
    np.testing.assert_array_equal(f(mine, v), _upper_sweep(theirs, v))
    np.testing.assert_array_equal(mine, theirs)
    assert "< -" not in _compiled_source(f, A, v).split("def graph(", 1)[1]
    r, y = rng.standard_normal(30), rng.standard_normal(30)
    g = kx.function(_from_the_end, jit_compile=True)
    np.testing.assert_array_equal(g(r, y), _from_the_end(r, y))
    assert "< -" not in _compiled_source(g, r, y).split("def graph(", 1)[1]


@pytest.mark.slow  # (compiled: seconds from a cold kernel cache)
@pytest.mark.usefixtures("synchronous")
def test_a_range_to_a_traced_stop_keeps_numpys_index_error():
    x = np.arange(30.0)
    f = kx.function(_to_a_traced_stop, jit_compile=True)
    np.testing.assert_array_equal(f(x, np.int64(30)), _to_a_traced_stop(x, np.int64(30)))
    with pytest.raises(IndexError):
        _to_a_traced_stop(x, np.int64(31))
    with pytest.raises(IndexError):
        f(x, np.int64(31))
