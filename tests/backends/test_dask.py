"""The Dask backend: traced functions on Dask arrays equal the same functions on NumPy arrays,
fused into one task per block, on the threaded scheduler and on a distributed LocalCluster."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import errors
from kernel_ext.trace.types import DaskArraySpec, TensorSpec, make_trace_type

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

SHAPE = (7, 6)
#: Several chunkings of SHAPE, uneven ones included.
CHUNKINGS = [((7,), (6,)), ((3, 4), (2, 4)), ((2, 2, 3), (1, 5)), ((1,) * 7, (3, 3))]


def _chain(x, y):
    return np.tanh(x * 2.0 + y) - 1.0


def _chain_sum(x, y):
    return (np.exp(x) * y + 1.0).sum(axis=1)


def _mixed(x, y):
    z = np.maximum(x - y, 0.5) * 3.0
    return {
        "z": z,
        "total": z.sum(),
        "cols": (x * y).mean(axis=0),
        "rows": np.max(x + y, axis=1, keepdims=True),
        "mm": x @ y.T,
    }


def _broadcasting(x, row):
    return np.where(x > row, x - row, row * 2.0).min(axis=0)


def _integers(x, y):
    return (x * 3 + y) % 7, (x * y).sum(axis=0), (x > y).any(axis=1), np.prod(x % 3 + 1)


def _shapes(x, y):
    t = (x + y).T
    return t.reshape(-1)[:10], np.concatenate([x, y], axis=0)[::2], np.cumsum(x, axis=1)


PROGRAMS = [_chain, _chain_sum, _mixed, _integers, _shapes]


def _inputs(dtype):
    rng = np.random.default_rng(0)
    if np.dtype(dtype).kind == "i":
        return (rng.integers(-5, 6, SHAPE).astype(dtype), rng.integers(-5, 6, SHAPE).astype(dtype))
    return rng.standard_normal(SHAPE).astype(dtype), rng.standard_normal(SHAPE).astype(dtype)


def _check_equal(got, want, dtype):
    if isinstance(want, dict):
        assert got.keys() == want.keys()
        for k in want:
            _check_equal(got[k], want[k], dtype)
        return
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _check_equal(g, w, dtype)
        return
    assert isinstance(got, da.Array)
    value = got.compute()
    want = np.asarray(want)
    assert value.shape == want.shape and value.dtype == want.dtype
    if np.dtype(want.dtype).kind == "f":
        # blocks sum in another order than NumPy's pairwise sum: within rounding
        tol = 1e-5 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(value, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(value, want)


# (the float-only programs are not paired with integer inputs)
CASES = [
    (p, d)
    for p in PROGRAMS
    for d in (np.float32, np.float64, np.int32)
    if not (p in (_chain, _chain_sum) and np.dtype(d).kind == "i")
]


@pytest.mark.parametrize(
    "program, dtype", CASES, ids=[f"{p.__name__}-{np.dtype(d).name}" for p, d in CASES]
)
@pytest.mark.parametrize("chunks", CHUNKINGS, ids=str)
def test_dask_results_equal_numpy_results(program, chunks, dtype):
    x, y = _inputs(dtype)
    f = kx.function(program)
    got = f(da.from_array(x, chunks=chunks), da.from_array(y, chunks=chunks))
    with dask.config.set(scheduler="threads"):
        _check_equal(got, program(x, y), dtype)


@pytest.mark.parametrize("chunks", CHUNKINGS, ids=str)
def test_dask_broadcast_operands_follow_the_domain(chunks):
    x = np.random.default_rng(1).standard_normal(SHAPE)
    row = np.linspace(-1, 1, SHAPE[1])
    f = kx.function(_broadcasting)
    got = f(da.from_array(x, chunks=chunks), da.from_array(row, chunks=chunks[1]))
    _check_equal(got, _broadcasting(x, row), np.float64)


def test_dask_fused_segment_is_one_task_per_block():
    x = da.ones((8, 8), chunks=(2, 4))  # 8 blocks
    f = kx.function(lambda x: np.sqrt(np.abs(np.sin(x) * 3.0 + 1.0)) - 0.5)
    out = f(x)
    layers = out.__dask_graph__().layers
    ours = [name for name in layers if name not in x.__dask_graph__().layers]
    assert len(ours) == 1  # one blockwise layer for six NumPy ops ...
    assert len(dict(layers[ours[0]])) == x.npartitions  # ... with one task per block
    np.testing.assert_allclose(out.compute(), np.sqrt(np.abs(np.sin(1.0) * 3.0 + 1.0)) - 0.5)


def test_dask_reduction_fuses_the_chain_into_its_per_block_part():
    x = da.ones((8, 8), chunks=(2, 4))
    f = kx.function(lambda x: (np.exp(x) * 2.0 + x).sum(axis=0))
    out = f(x)
    graph = dict(out.__dask_graph__())
    own = len(dict(x.__dask_graph__()))
    # one fused task per block, plus Dask's tree-reduction tasks over the 8 partials: far
    # fewer than the three elementwise layers Dask would write for the expression itself
    direct = (da.exp(x) * 2.0 + x).sum(axis=0)
    assert len(graph) - own < len(dict(direct.__dask_graph__())) - own
    np.testing.assert_allclose(out.compute(), np.full(8, (np.e * 2.0 + 1.0) * 8))


def test_dask_arguments_trace_once_per_signature_with_chunks_in_the_type():
    f = kx.function(lambda x: x * 2.0)
    a = np.arange(12.0).reshape(3, 4)
    f(da.from_array(a, chunks=(1, 4)))
    f(da.from_array(a + 1, chunks=(1, 4)))
    assert f.experimental_get_tracing_count() == 1
    f(da.from_array(a, chunks=(3, 2)))  # other blocks: another graph
    assert f.experimental_get_tracing_count() == 2
    result = f(a)  # a NumPy array never runs a Dask trace
    assert isinstance(result, np.ndarray)
    assert f.experimental_get_tracing_count() == 3


def test_dask_spec_relaxes_sizes_and_their_chunks_together():
    a = make_trace_type(da.ones((4, 6), chunks=(2, 3)))
    b = make_trace_type(da.ones((4, 8), chunks=(2, 4)))
    assert a == DaskArraySpec((4, 6), np.float64, ((2, 2), (3, 3)))
    common = a.most_specific_common_supertype([b])
    assert common == DaskArraySpec((4, None), np.float64, ((2, 2), None))
    assert a.is_subtype_of(common) and b.is_subtype_of(common)
    assert not common.is_subtype_of(a)
    rechunked = make_trace_type(da.ones((4, 6), chunks=(1, 3)))
    assert not rechunked.is_subtype_of(a)
    assert not a.is_subtype_of(TensorSpec((4, 6), np.float64))
    assert not TensorSpec((4, 6), np.float64).is_subtype_of(a)
    assert "dask float64[4,6]" in a.describe() or "dask" in a.describe()


def test_dask_reduce_retracing_shares_one_trace_across_lengths():
    f = kx.function(lambda x: (x + 1.0).sum(axis=1), reduce_retracing=True)
    for n in (4, 6, 10):
        out = f(da.ones((3, n), chunks=(3, 2)))
        np.testing.assert_allclose(out.compute(), np.full(3, 2.0 * n))
    assert f.experimental_get_tracing_count() == 2  # the exact first, then (3, None)


def test_dask_backend_option_takes_numpy_arguments():
    f = kx.function(lambda x: np.cos(x) + 1.0, backend="dask")
    x = np.linspace(0, 1, 5)
    out = f(x)
    assert isinstance(out, da.Array)
    np.testing.assert_array_equal(out.compute(), np.cos(x) + 1.0)


def test_dask_graph_loop_raises_naming_the_op_and_the_fix():
    def count_down(x):
        while x.sum() > 1.0:
            x = x / 2.0
        return x

    f = kx.function(count_down)
    with pytest.raises(errors.DaskUnsupportedError, match=r"'while'.*\.compute\(\)"):
        f(da.ones(4, chunks=2))


def test_dask_op_without_a_dask_form_raises_naming_the_op_and_the_fix():
    f = kx.function(lambda x: np.unique(x))
    with pytest.raises(errors.DaskUnsupportedError, match=r"'unique'.*compute\(\).*map_blocks"):
        f(da.ones(4, chunks=2))


def test_dask_opaque_call_raises_naming_the_function():
    f = kx.function(lambda x: np.i0(x))
    with pytest.raises(errors.DaskUnsupportedError, match=r"numpy_call of np.i0.*map_blocks"):
        f(da.ones(4, chunks=2))


def test_dask_in_place_update_of_an_argument_raises():
    def bump(x):
        x += 1.0
        return x.sum()

    with pytest.raises(errors.DaskUnsupportedError, match="in place"):
        kx.function(bump)(da.ones(4, chunks=2))


def test_dask_unknown_chunk_sizes_raise_with_the_fix():
    x = da.arange(10, chunks=5)
    y = x[x > 3]  # sizes unknown until computed
    with pytest.raises(errors.TraceTypeError, match="compute_chunk_sizes"):
        kx.function(lambda v: v * 2)(y)


def test_dask_results_equal_numpy_on_a_distributed_local_cluster():
    distributed = pytest.importorskip("distributed")
    x, y = _inputs(np.float64)
    f = kx.function(_mixed)
    with (
        distributed.LocalCluster(
            n_workers=1,
            threads_per_worker=2,
            processes=False,
            protocol="tcp",
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        got = f(
            da.from_array(x, chunks=((3, 4), (2, 4))), da.from_array(y, chunks=((3, 4), (2, 4)))
        )
        computed = client.compute(got, sync=True)
    want = _mixed(x, y)
    for k in want:
        np.testing.assert_allclose(computed[k], want[k], rtol=1e-12, atol=1e-12)


def test_dask_signature_row_shows_the_backend_and_the_task_count():
    from kernel_ext.jupyter import records

    f = kx.function(lambda x: np.exp(x) + 1.0)
    out = f(da.ones((4, 4), chunks=(2, 2)))
    (row,) = records.signature_rows(f)
    assert row.backend == "dask"
    assert row.tasks == len(dict(out.__dask_graph__()))
    assert row.backend_text == f"dask · {row.tasks} tasks"
