"""Dask blocks run the fused executor's Numba kernels: one compiled kernel per segment, reached
by every task of it, compiled once per process (or loaded from the disk cache), with results
equal to NumPy's bit for bit where the fused path is (float sums within the documented
bound), on the threaded scheduler and on a distributed LocalCluster."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import kernel_ext as kx

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
pytest.importorskip("numba")

from kernel_ext.backends.dask_backend import blocks  # noqa: E402 (after the skips)

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow

#: 1-d and 2-d chunkings, uneven ones and single-element blocks included.
CHUNKS_2D = [((5, 5), (7,)), ((3, 4, 3), (2, 5)), ((1,) * 10, (4, 3))]


def _w3(x, a, b, c):
    return np.tanh(a * x + b) * (1 / (1 + np.exp(-x))) + 0.5 * x * x - c


def _programs_of(result):
    """The BlockPrograms the tasks of ``result``'s graph call."""
    found = []
    for task in dict(result.__dask_graph__()).values():
        fn = getattr(task, "func", None)
        if isinstance(fn, blocks.BlockProgram):
            found.append(fn)
    return found


def _data(dtype, shape=(10, 7), n=4, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for _ in range(n)]


@pytest.mark.parametrize("chunks", CHUNKS_2D, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dask_elementwise_blocks_run_the_kernel_bitwise_equal_to_numpy(chunks, dtype):
    arrays = _data(dtype)
    f = kx.function(_w3)
    out = f(*[da.from_array(a, chunks=chunks) for a in arrays])
    programs = _programs_of(out)
    assert programs and all(p.kernel is not None for p in programs)
    before = sum(blocks.COMPILES.values())
    got = out.compute(scheduler="threads")
    want = _w3(*arrays)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # bit for bit (NaN-free data)
    # one kernel for all the blocks: at most its two variants compiled, whatever the count
    assert sum(blocks.COMPILES.values()) - before <= 2


@pytest.mark.parametrize("chunks", CHUNKS_2D, ids=str)
def test_dask_contiguous_and_strided_blocks_take_the_flat_and_nd_kernels(chunks):
    x = np.linspace(-2, 2, 70).reshape(10, 7)
    f = kx.function(lambda x: np.sqrt(np.abs(np.sin(x) * 3.0 + 1.0)) - 0.5)
    want = np.sqrt(np.abs(np.sin(x) * 3.0 + 1.0)) - 0.5
    # contiguous blocks (flat kernel) from a rechunked graph; strided views (nd kernel)
    contiguous = da.from_array(x, chunks=chunks).map_blocks(np.ascontiguousarray)
    strided = da.from_array(x, chunks=chunks).map_blocks(np.asfortranarray)
    for arg in (contiguous, strided):
        np.testing.assert_array_equal(f(arg).compute(scheduler="sync"), want)
    key = _programs_of(f(contiguous))[0].kernel.key
    assert f"{key}:flat" in blocks.COMPILES and f"{key}:nd" in blocks.COMPILES


@pytest.mark.parametrize("chunks", CHUNKS_2D, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_dask_fused_reductions_take_their_partials_from_the_kernel(chunks, dtype):
    if np.dtype(dtype).kind == "i":
        x, y = (np.random.default_rng(3).integers(-9, 10, (10, 7)).astype(dtype) for _ in range(2))
    else:
        x, y = _data(dtype, n=2)

    def program(x, y):
        z = x * y + x
        return z.sum(axis=0), (z - y).sum(), (x * 2 + y).mean(axis=1), (x - y).any(axis=0)

    f = kx.function(program)
    got = f(da.from_array(x, chunks=chunks), da.from_array(y, chunks=chunks))
    programs = [p for g in got for p in _programs_of(g)]
    assert any(p.kernel is not None and p.kernel_reduces for p in programs)
    want = program(x, y)
    for g, w in zip(dask.compute(*got, scheduler="threads"), want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":
            # float64 lanes in another order than NumPy's pairwise sum: the documented bound
            tol = 1e-5 if w.dtype == np.float32 else 1e-12
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(g, w)


def test_dask_a_kernel_flag_reruns_the_block_through_numpy():
    # A NaN cast to an integer is a value only NumPy defines: the kernel flags the block
    # and NumPy computes it (its result, and its warning, as eagerly)
    x = np.array([[1.5, np.nan, -2.5, 4.0], [0.5, 1.0, np.inf, -1.0]])
    f = kx.function(lambda x: (x * 2.0 + 1.0).astype(np.int32) + 1)
    out = f(da.from_array(x, chunks=(1, 2)))
    assert all(p.kernel is not None for p in _programs_of(out))
    with np.errstate(invalid="ignore"):
        want = (x * 2.0 + 1.0).astype(np.int32) + 1
        got = out.compute(scheduler="sync")
    np.testing.assert_array_equal(got, want)


def test_dask_block_programs_pickle_small_without_compiled_code():
    arrays = _data(np.float32)
    f = kx.function(_w3)
    out = f(*[da.from_array(a, chunks=(5, 7)) for a in arrays])
    out.compute(scheduler="sync")  # compiled in this process now
    (program,) = set(_programs_of(out))
    data = pickle.dumps(program)
    # the kernel's source text and the detached ops, never a dispatcher or the graph
    assert len(data) < 16_000
    assert b"CPUDispatcher" not in data and b"numba" not in data.replace(b"numba_", b"")
    copy = pickle.loads(data)
    named = dict(zip("xabc", (a[:5] for a in arrays)))
    assert sorted(copy.input_names) == sorted(named)
    np.testing.assert_array_equal(copy(*[named[n] for n in copy.input_names]), _w3(**named))


def test_dask_kernels_on_a_threaded_local_cluster_equal_numpy():
    distributed = pytest.importorskip("distributed")
    arrays = _data(np.float32, shape=(12, 9))
    f = kx.function(lambda x, a, b, c: (_w3(x, a, b, c), (a * x - b).sum(axis=0)))
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
        elementwise, total = f(*[da.from_array(a, chunks=((5, 7), (4, 5))) for a in arrays])
        got, got_total = client.compute([elementwise, total], sync=True)
    x, a, b, c = arrays
    np.testing.assert_array_equal(got, _w3(x, a, b, c))
    np.testing.assert_allclose(got_total, (a * x - b).sum(axis=0), rtol=1e-5, atol=1e-5)


def _compiles_here() -> dict:
    from kernel_ext.backends.dask_backend import blocks as worker_blocks

    return dict(worker_blocks.COMPILES)


def test_dask_kernels_compile_once_per_worker_process():
    distributed = pytest.importorskip("distributed")
    x = np.linspace(-3, 3, 64 * 50, dtype=np.float32).reshape(64, 50)
    f = kx.function(lambda x: np.tanh(x * 1.5 + 0.25) * x - 1.0)
    arg = da.from_array(x, chunks=(4, 50))  # 16 tasks, each a C-contiguous block
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=2,
            processes=True,
            protocol="tcp",
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        out = f(arg)
        (program,) = set(_programs_of(out))
        got = client.compute(out, sync=True)
        counts = client.run(_compiles_here)
    np.testing.assert_array_equal(got, np.tanh(x * 1.5 + 0.25) * x - 1.0)
    key = f"{program.kernel.key}:flat"
    per_worker = [c.get(key, 0) for c in counts.values()]
    assert len(per_worker) == 2
    # 16 tasks, yet each worker process compiled (or loaded) the kernel at most once
    assert all(n <= 1 for n in per_worker) and sum(per_worker) >= 1
