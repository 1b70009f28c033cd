"""Graph loops and branches on the Dask backend: a loop whose condition does not read the data
runs its body once per iteration while the Dask graph is built (each iteration lazy), a
branch on such a value takes its side; ops Dask cannot run per chunk get that axis in one
chunk; 0-d results compute to what the NumPy executor returns. Results equal eager NumPy
under several chunkings, uneven ones included."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import errors

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

SHAPE = (7, 5)
CHUNKINGS = [((7,), (5,)), ((3, 4), (2, 3)), ((2, 2, 3), (1, 4)), ((1,) * 7, (5,))]


def _range_loop(x):
    for i in kx.range(4):  # always a graph loop, trip count 4
        x = np.tanh(x) * 0.5 + i
    return x


def _rows_loop(x):
    acc = np.zeros(x.shape[1], x.dtype)
    for row in x:  # a graph loop over the first dimension (its size is static)
        acc = acc * 0.5 + row * row
    return acc


def _while_loop(x):
    _, y = kx.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * 2.0 - 1.0), (0, x))
    return y


def _branch_in_loop(x):
    for i in kx.range(5):
        if i % 2 == 0:  # a graph cond on the loop index: known while the graph is built
            x = x * 1.5
        else:
            x = x - 0.25
    return x, x.sum(axis=0)


def _loop_carried_constants(x):
    acc = np.zeros(x.shape[1], np.float32)
    for i in kx.range(3):  # acc never reads the data: NumPy while the graph is built
        acc = acc + i
        x = x * acc.sum() + acc.max()
    return x, acc


def _sorting(x):
    return np.sort(x, axis=0), np.argsort(x, axis=1), np.sort(x * 2.0, axis=None)


PROGRAMS = [
    _range_loop,
    _rows_loop,
    _while_loop,
    _branch_in_loop,
    _loop_carried_constants,
    _sorting,
]


def _compare(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w)
        return
    assert isinstance(got, da.Array)
    value = got.compute(scheduler="threads")
    assert type(value) is type(want)
    assert value.shape == want.shape and value.dtype == want.dtype
    if want.dtype.kind == "f" and want.ndim < 2 and want.shape != (SHAPE[0] * SHAPE[1],):
        # (a sum over blocks: another order than NumPy's pairwise sum)
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(value, want)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
@pytest.mark.parametrize("chunks", CHUNKINGS, ids=str)
def test_dask_data_independent_control_flow_equals_numpy(program, chunks):
    x = np.random.default_rng(4).standard_normal(SHAPE).astype(np.float32)
    f = kx.function(program)
    got = f(da.from_array(x, chunks=chunks))
    _compare(got, program(x))


def test_dask_loop_iterations_stay_lazy_and_add_their_tasks():
    x = da.ones((6, 4), chunks=(3, 2))
    f = kx.function(_range_loop)
    out = f(x)
    # nothing computed while building: each of the 4 iterations added one fused task per
    # block (4 blocks), on top of the argument's own 4 tasks
    assert len(dict(out.__dask_graph__())) == 4 + 4 * 4
    np.testing.assert_array_equal(out.compute(), _range_loop(np.ones((6, 4))))


def test_dask_loop_whose_condition_reads_the_data_raises_with_the_fix():
    def halve_until_small(x):
        while np.max(x) > 1.0:
            x = x / 2.0
        return x

    with pytest.raises(
        errors.DaskUnsupportedError, match=r"'while'.*computed value each iteration.*\.compute\(\)"
    ):
        kx.function(halve_until_small)(da.ones(4, chunks=2) * 10)


def test_dask_branch_on_the_data_raises_with_the_fix():
    def pick(x):
        return kx.cond(x.sum() > 0, lambda: x * 2.0, lambda: x - 1.0)

    with pytest.raises(errors.DaskUnsupportedError, match=r"'cond'.*computed value.*\.compute\(\)"):
        kx.function(pick)(da.ones(4, chunks=2))


def test_dask_loop_past_the_iteration_limit_raises_naming_the_limit(monkeypatch):
    from kernel_ext.backends.dask_backend import graph

    monkeypatch.setattr(graph, "MAX_ITERATIONS", 3)
    with pytest.raises(errors.DaskUnsupportedError, match="more than 3 iterations"):
        kx.function(_range_loop)(da.ones(4, chunks=2))


def test_dask_sort_rechunks_its_axis_into_one_chunk():
    x = np.random.default_rng(5).standard_normal((6, 8))
    f = kx.function(lambda x: np.sort(x, axis=1))
    out = f(da.from_array(x, chunks=(2, 3)))
    assert out.chunks == ((2, 2, 2), (8,))  # the sorted axis whole, the other as given
    np.testing.assert_array_equal(out.compute(), np.sort(x, axis=1))


ZERO_D = [
    lambda x: x.sum() * 2.0 + 1.0,
    lambda x: np.tanh(x.max()),
    lambda x: x[1, 2],
    lambda x: np.where(x.sum() > 0, x.mean(), np.float32(1.0)),
    lambda x: x.astype(np.int64).sum(),
    lambda x: (x > 0).any(),
]


@pytest.mark.parametrize("program", ZERO_D, ids=range(len(ZERO_D)))
def test_dask_zero_d_results_compute_to_what_the_numpy_executor_returns(program):
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    got = kx.function(program)(da.from_array(x, chunks=(2, 3)))
    assert isinstance(got, da.Array) and got.shape == ()  # lazy, like every Dask result
    value = got.compute()
    want = kx.function(program, backend="numpy")(x)
    # a NumPy scalar where eager NumPy gives one (np.where gives a 0-d array, which the NumPy
    # executor returns as eager NumPy does; a Dask result is lazy and computes to a scalar)
    assert type(value) is (want.dtype.type if isinstance(want, np.ndarray) else type(want))
    assert np.asarray(value).dtype == np.asarray(want).dtype and value == want
