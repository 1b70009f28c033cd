"""Reinplacing: functional ``setitem`` runs as NumPy's in-place write only where nobody can tell.

Each program runs eagerly and through every executor (NumPy, auto, numba, jit_compile) on
fresh copies of its arguments, twice (the second call reuses the executor, so a buffer or a
constant corrupted by the first call shows); results and arguments must match NumPy bit for
bit. The plan itself is checked too: a buffer filled in a loop is copied at most once.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from realcode.corpus_buffers import pairwise_dist_loop as pairwise

import kernel_ext as kx
from kernel_ext.backends.inplace import plan_inplace
from kernel_ext.ir import OpKind

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow

PATHS = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}


def check(fn, *args, path: str, float_sums: bool = False):
    """``float_sums``: the program sums floats, which fused kernels may add in another order
    (the documented bound of every path but NumPy's); those compare to 1e-12."""
    traced = kx.function(fn, **PATHS[path])
    for seed in range(2):
        call = tuple(a + seed if isinstance(a, np.ndarray) else a for a in args)
        eager_args, traced_args = copy.deepcopy(call), copy.deepcopy(call)
        want = fn(*eager_args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # jit_compile falling back
            got = traced(*traced_args)
        for w, g in zip(
            want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)
        ):
            w, g = np.asarray(w), np.asarray(g)
            assert w.dtype == g.dtype, (w.dtype, g.dtype)
            if float_sums and path != "numpy":
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-15)
            else:
                assert np.array_equal(w, g, equal_nan=True), (seed, w, g)
        for a, b in zip(eager_args, traced_args):
            assert np.array_equal(np.asarray(a), np.asarray(b)), (seed, a, b)
    return traced


def setitems(graph):
    found = []
    for node in graph.nodes:
        if node.op is OpKind.SETITEM:
            found.append(node)
        for key in ("branches",):
            for g in node.params.get(key, ()):
                found += setitems(g)
        if node.op is OpKind.WHILE:
            found += setitems(node.params["body"])
    return found


@pytest.mark.parametrize("path", PATHS)
def test_buffer_filled_in_a_double_loop_matches_numpy(path):
    check(pairwise, np.random.default_rng(0).standard_normal((40, 3)), path=path, float_sums=True)


def test_buffer_filled_in_a_loop_is_written_in_place_after_one_copy():
    x = np.random.default_rng(1).standard_normal((300, 2))
    graph = kx.function(pairwise, backend="numpy").get_concrete_function(x).graph
    writes = setitems(graph)  # the double loop is two nested graph loops: one write
    plan = plan_inplace(graph, lambda g: [((n,), n.inputs) for n in g.nodes])
    assert writes and all(w in plan.writes for w in writes)
    # one copy per call: the buffer np.zeros made (a constant) as it enters the outer loop;
    # the inner loop gets a buffer the graph owns and then drops
    assert [len(slots) for slots in plan.entry_copies.values()] == [1]


def constant_buffer_in_a_traced_loop(x):
    out = np.zeros(6)
    for i in range(np.argmax(x) + 1):  # a graph loop over the constant np.zeros made
        out[i] = x[i] * 2
    return out


@pytest.mark.parametrize("path", PATHS)
def test_loop_writing_a_constant_buffer_leaves_the_constant_alone(path):
    x = np.array([0.5, 1.0, 3.0, 2.0, 0.0, 1.0])
    f = check(constant_buffer_in_a_traced_loop, x, path=path)
    # a call writing fewer elements must see zeros where the previous call wrote
    np.testing.assert_array_equal(f(np.array([3.0, 1.0, 0.0, 0.0, 0.0, 0.0])), [6.0, 0, 0, 0, 0, 0])


def argument_updated_in_a_traced_loop(x, k):
    for i in range(k):
        x[i] = x[i] + x[i + 1]
    return x.sum()


@pytest.mark.parametrize("path", PATHS)
def test_loop_updating_an_argument_copies_it_once_and_writes_back(path):
    check(argument_updated_in_a_traced_loop, np.arange(8.0), np.int64(5), path=path)


def stale_read_after_write(x):
    out = x * 1.0
    out[0] = x[1]
    a = out * 2.0  # reads the buffer before the next write ...
    out[1] = -7.0
    b = a + 1.0  # ... and may be fused with this, after the write
    return b, out


@pytest.mark.parametrize("path", PATHS)
def test_value_computed_before_a_write_keeps_the_old_contents(path):
    check(stale_read_after_write, np.linspace(0.0, 1.0, 4096), path=path)


def alias_carried_by_a_loop(x):
    out = x * 1.0
    prev = out
    for i in range(np.argmax(x)):
        prev = out
        out[i] = prev[i + 1] + 1.0
    return prev, out


@pytest.mark.parametrize("path", PATHS)
def test_two_loop_slots_holding_one_buffer_stay_one_buffer(path):
    check(alias_carried_by_a_loop, np.array([0.0, 1.0, 2.0, 9.0, 1.0]), path=path)


def copy_then_fill(x):
    out = np.empty_like(x)
    prev = x.copy()
    for step in range(3):
        for i in range(1, x.shape[0] - 1):
            out[i] = (prev[i - 1] + prev[i + 1]) / 2
        out[0], out[-1] = prev[0], prev[-1]
        prev = out.copy()
    return prev


@pytest.mark.parametrize("path", PATHS)
def test_jacobi_sweeps_with_copies_match_numpy(path):
    check(copy_then_fill, np.random.default_rng(2).standard_normal(50), path=path)


def branchy_fill(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        if x[i] > 0:
            out[i] = x[i]
        else:
            out[i] = -x[i] * 2
    return out


@pytest.mark.parametrize("path", PATHS)
def test_writes_inside_traced_branches_match_numpy(path):
    check(branchy_fill, np.random.default_rng(3).standard_normal(30), path=path)


def test_a_variable_keeps_the_value_it_was_assigned_when_the_buffer_is_written_again():
    v = kx.Variable(np.zeros(3))

    @kx.function(backend="numpy")
    def f(x):
        out = x * 1.0
        out[0] = 1.0
        v.assign(out)
        out[1] = 2.0
        return out

    x = np.array([5.0, 6.0, 7.0])
    np.testing.assert_array_equal(f(x), [1.0, 2.0, 7.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 6.0, 7.0])


# -- writes into the caller's arguments --------------------------------------------------------
# An argument the function updates gets its new contents written back at the end anyway, so
# its writes may run in the caller's array itself (as eager NumPy's do) when nothing reads the
# old contents afterwards: no copy of the argument, no copy back.


def endpoints(x, v):
    x[0] = v
    x[-1] = x[0] * 2
    x[4] = x[3] + x[5]
    return x[4]


def old_contents_read_after_a_write(x):
    before = x * 2.0  # computed from the old contents ...
    x[0] = 9.0
    view = x[2:5]  # a view: NumPy's sees later writes
    x[3] = -1.0
    return before + x[0], view.copy(), before


def written_in_a_loop_and_read_by_a_view(x, n):
    head = x[:3]
    for i in range(n):
        x[i % 8] = x[(i + 1) % 8] * 0.5
    return head * 2.0


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "fn, extra",
    [
        (endpoints, (3.25,)),
        (old_contents_read_after_a_write, ()),
        (written_in_a_loop_and_read_by_a_view, (np.int64(11),)),
    ],
)
def test_writes_into_an_argument_match_numpy(path, fn, extra):
    check(fn, np.linspace(-1.0, 2.0, 10), *extra, path=path)


def test_writes_into_an_argument_run_in_place_and_skip_the_copy_back():
    from kernel_ext.backends.emit import written_back_inputs

    x = np.arange(10.0)
    cf = kx.function(endpoints, backend="numpy").get_concrete_function(x, 3.25)
    graph = cf.graph
    owned = written_back_inputs(graph, cf._tree)
    assert [n.name for n in owned] == ["x"]
    plan = plan_inplace(graph, lambda g: [((n,), n.inputs) for n in g.nodes], owned)
    assert set(plan.writes) == set(setitems(graph))  # all three, in the caller's array
    # without the ownership every write but the first (the copy of x) could still be in place
    plain = plan_inplace(graph, lambda g: [((n,), n.inputs) for n in g.nodes])
    assert len(plain.writes) == 2


def test_an_argument_read_after_the_write_is_copied_not_overwritten():
    from kernel_ext.backends.emit import written_back_inputs

    x = np.linspace(0.0, 1.0, 10)
    cf = kx.function(old_contents_read_after_a_write, backend="numpy").get_concrete_function(x)
    owned = written_back_inputs(cf.graph, cf._tree)
    first = setitems(cf.graph)[0]
    reader = next(n for n in cf.graph.nodes if n.op is OpKind.MULTIPLY)

    def reader_last(g):  # a schedule (as fusion may make) that reads the old x after the write
        order = [n for n in g.nodes if n is not reader] + ([reader] if g is cf.graph else [])
        return [((n,), n.inputs) for n in order]

    in_order = plan_inplace(cf.graph, lambda g: [((n,), n.inputs) for n in g.nodes], owned)
    reordered = plan_inplace(cf.graph, reader_last, owned)
    assert first in in_order.writes and first not in reordered.writes


def fails_half_way(x, i):
    x[0] = 7.0
    x[i] = 1.0  # an IndexError for i out of range, after the first write
    return x


@pytest.mark.parametrize("path", ["numpy", "auto"])
def test_an_error_half_way_leaves_the_argument_as_numpy_leaves_it(path):
    f = kx.function(fails_half_way, **PATHS[path])
    f(np.zeros(4), np.int64(1))  # trace with an index in range
    eager, traced = np.zeros(4), np.zeros(4)
    with pytest.raises(IndexError):
        fails_half_way(eager, np.int64(9))
    with pytest.raises(IndexError):
        f(traced, np.int64(9))
    np.testing.assert_array_equal(traced, eager)  # x[0] == 7 in both


# -- stacks of loop gradients -------------------------------------------------------------------
def sin_recurrence(x, n):
    y = x
    for _ in range(n):
        y = np.sin(y) * 1.01 + x
    return np.sum(y)


def _tensor_array_writes(graph):
    found = []
    for node in graph.nodes:
        if node.op is OpKind.TENSOR_ARRAY_WRITE:
            found.append(node)
        if node.op is OpKind.WHILE:
            found += _tensor_array_writes(node.params["body"])
    return found


def test_a_loop_gradient_writes_its_stacks_in_place():
    x, n = np.linspace(-1.0, 1.0, 50), np.int64(300)
    cf = kx.function(kx.grad(sin_recurrence), backend="numpy").get_concrete_function(x, n)
    writes = _tensor_array_writes(cf.graph)
    plan = plan_inplace(cf.graph, lambda g: [((node,), node.inputs) for node in g.nodes])
    assert writes and all(w in plan.writes for w in writes)  # no copy of a stack per row


@pytest.mark.parametrize("path", ["numpy", "auto"])
def test_a_loop_gradient_with_stacks_written_in_place_matches_the_recurrence(path):
    x, n = np.linspace(-1.0, 1.0, 50), np.int64(300)
    y, d = x.copy(), np.zeros_like(x)
    for _ in range(int(n)):  # forward-mode by hand: d = dy/dx, elementwise
        d = np.cos(y) * 1.01 * d + 1.0
        y = np.sin(y) * 1.01 + x
    g = kx.function(kx.grad(sin_recurrence), **PATHS[path])
    for _ in range(2):  # the second call reuses the executor's plan
        np.testing.assert_allclose(g(x, n), d, rtol=1e-10)
