"""``jit_compile=True`` on large inputs and on unrolled matrix-product chains.

* :func:`~kernel_ext.backends.parallel.parallel_sum` splits a float sum at NumPy's own pairwise
  split points, so the halves summed on two threads and added give ``np.sum``'s bits; every
  case here compares bytes, on sizes around the split thresholds, both float dtypes, N-d,
  strided and reversed arrays (the last two must take the unsplit path).
* A ``jit_compile=True`` call whose input is large runs on the fused executor (whose sums are
  those exact parallel sums), and its result is NumPy's bit for bit.
* ``power(x, 100)``'s 100 chained products compile to one loop with the same result.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends import compiler, cost, fused, parallel

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow


def _bits(a, b) -> bool:
    return type(a) is type(b) and np.asarray(a).tobytes() == np.asarray(b).tobytes()


class _CountingPool:
    """The thread pool, counting submitted chunks (proof that a split happened)."""

    def __init__(self, pool) -> None:
        self.pool, self.submitted = pool, 0

    def submit(self, *args, **kwargs):
        self.submitted += 1
        return self.pool.submit(*args, **kwargs)


@pytest.fixture
def pool(monkeypatch):
    counting = _CountingPool(parallel.worker_pool())
    monkeypatch.setattr(parallel, "worker_pool", lambda: counting)
    return counting


# -- parallel_sum ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [2, 3, 4, 8])
def test_parallel_sum_is_numpys_sum_bit_for_bit(monkeypatch, pool, dtype, threads):
    monkeypatch.setattr(parallel, "THREADS", threads)
    monkeypatch.setattr(parallel, "SUM_PARALLEL_MIN", 1)
    rng = np.random.default_rng(threads)
    sizes = [
        1,
        7,
        8,
        9,
        127,
        128,
        129,
        130,
        136,
        255,
        256,
        257,
        1000,
        4097,
        65537,
        262147,
        1_000_003,
    ]
    for n in sizes:
        x = (rng.standard_normal(n) * rng.uniform(1, 1e4)).astype(dtype)
        before = pool.submitted
        assert _bits(parallel.parallel_sum(x), x.sum()), n
        if n > 128:
            assert pool.submitted > before, n  # really split
        if n % 2 == 0:
            m = x.reshape(2, -1)  # C-contiguous N-d: one run of n elements for NumPy too
            assert _bits(parallel.parallel_sum(m), m.sum()), n


def test_parallel_sum_keeps_numpy_for_what_it_cannot_prove(monkeypatch, pool):
    monkeypatch.setattr(parallel, "THREADS", 2)
    monkeypatch.setattr(parallel, "SUM_PARALLEL_MIN", 1)
    x = np.random.default_rng(0).standard_normal(300_001).astype(np.float32)
    cases = [
        x[::2],
        x[::-1],
        x[:300_000].reshape(600, 500).T,
        x.astype(np.float16),
        (x * 100).astype(np.int32),
    ]
    for v in cases:
        assert _bits(parallel.parallel_sum(v), v.sum())
    assert pool.submitted == 0
    # specials propagate as in NumPy
    y = x.copy()
    y[12345] = np.nan
    assert np.isnan(parallel.parallel_sum(y))
    y[12345] = np.inf
    assert _bits(parallel.parallel_sum(y), y.sum())
    z = -np.zeros(1000, np.float64)
    assert _bits(parallel.parallel_sum(z), z.sum())


def test_small_sums_stay_in_one_call(monkeypatch, pool):
    monkeypatch.setattr(parallel, "THREADS", 2)
    x = np.ones(parallel.SUM_PARALLEL_MIN - 1, np.float32)
    assert _bits(parallel.parallel_sum(x), x.sum())
    assert pool.submitted == 0


# -- large jit_compile=True calls --------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [2, 4])
def test_a_split_ufunc_sums_its_result_bit_for_bit(monkeypatch, pool, dtype, threads):
    """``parallel_ufunc_sum``: each core sums the share it wrote, cut where NumPy's pairwise
    summation cuts, so the sum is ``np.sum``'s of the result (and the result ``np.tanh``'s)."""
    monkeypatch.setattr(parallel, "THREADS", threads)
    rng = np.random.default_rng(threads)
    for n in (1000, 4097, 65537, 262147, 1_000_003):
        x = (rng.standard_normal(n) * 3).astype(dtype)
        before = pool.submitted
        out, total = parallel.parallel_ufunc_sum(np.tanh, x, np.dtype(dtype), 1000)
        assert _bits(out, np.tanh(x)) and _bits(total, np.tanh(x).sum()), n
        assert pool.submitted > before
    out, total = parallel.parallel_ufunc_sum(np.tanh, x[::2], np.dtype(dtype), 1000)
    assert total is None and _bits(out, np.tanh(x[::2]))  # strided: not split, not summed
    ints = np.arange(5000, dtype=np.int32)
    out, total = parallel.parallel_ufunc_sum(np.negative, ints, np.dtype(np.int32), 1000)
    assert total is None and _bits(out, -ints)


def _loop(x, thr):
    while np.sum(x) > thr:
        x = np.tanh(x)
    return x


def _large_loop(monkeypatch):
    """The seed's loop as a ``jit_compile=True`` function, and an input large enough to be
    handed to the executor on two cores."""
    monkeypatch.setattr(parallel, "THREADS", 2)
    monkeypatch.setattr(cost.os, "cpu_count", lambda: 2)
    n = cost.HANDOVER_MIN_ELEMENTS + 1000
    x = np.ones(n, np.float32)
    thr = np.float32(0.2 * n)
    f = kx.function(_loop, jit_compile=True)
    return f, x, thr


def test_the_loop_test_reads_the_sum_its_body_made(monkeypatch, pool):
    """``while sum(x) > t: x = tanh(x)`` on the executor: the body's split tanh also sums
    its result, and the next test takes that sum (NumPy's bits) instead of reading x again;
    a body output the test does not sum gets no sum."""
    f, x, thr = _large_loop(monkeypatch)
    want = _loop(x, thr)
    assert f(x, thr).tobytes() == want.tobytes()
    source = f.get_concrete_function(x, thr).executable.run.__globals__["_fallback"]
    calls = {"pus": 0, "psum": 0}
    for name, key in (("_parallel_ufunc_sum", "pus"), ("_parallel_sum", "psum")):
        real = source.__globals__[name]
        monkeypatch.setitem(
            source.__globals__,
            name,
            lambda *a, real=real, key=key: calls.__setitem__(key, calls[key] + 1) or real(*a),
        )
    assert f(x, thr).tobytes() == want.tobytes()
    assert calls["pus"] > 10 and calls["psum"] == 1  # only the first test sums x itself

    def other(x, thr):
        while np.max(x) > thr:
            x = np.tanh(x)
        return x

    g = kx.function(other, jit_compile=True)
    y = np.full(x.size, 3.0, np.float32)
    assert g(y, np.float32(0.5)).tobytes() == other(y, np.float32(0.5)).tobytes()


def test_large_inputs_run_on_the_executor_with_exact_parallel_sums(monkeypatch, pool):
    f, x, thr = _large_loop(monkeypatch)
    got = f(x, thr)
    want = _loop(x, thr)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    report, *fallbacks = f.get_concrete_function(x, thr).executable.segments
    # the executor's kernels are reported too (what a large call runs); its tanh is NumPy's
    # own call on each core's share, no kernel
    assert all(fb["role"] == "fallback" for fb in fallbacks)
    assert not [fb for fb in fallbacks if fb["ops"] == ["tanh"]]
    assert report["kind"] == "whole-graph"
    assert report["handover_size"] is not None and report["handover_size"] <= x.size
    assert report["parallel_sums"] == 1
    assert pool.submitted > 0  # the sums (and the tanh kernel) were split
    # a large call goes to the executor (the compiled function may exist: kernels are
    # shared by source, and other tests compile this one)
    run_globals = f.get_concrete_function(x, thr).executable.run.__globals__
    calls = []
    executor = run_globals["_fallback"]
    monkeypatch.setitem(run_globals, "_fallback", lambda *a: calls.append(1) or executor(*a))
    assert f(x, thr).tobytes() == want.tobytes()
    assert calls == [1]


def test_small_inputs_keep_the_compiled_function(monkeypatch):
    monkeypatch.setattr(cost.os, "cpu_count", lambda: 2)
    f = kx.function(_loop, jit_compile=True)
    x = np.ones(5, np.float32)
    f(x, np.float32(1.0))
    got = f(x, np.float32(1.0))
    report, *fallbacks = f.get_concrete_function(x, np.float32(1.0)).executable.segments
    assert all(fb["role"] == "fallback" for fb in fallbacks)
    assert report["state"] == "ready"
    assert got.tobytes() == _loop(x, np.float32(1.0)).tobytes()


def test_one_core_never_hands_over(monkeypatch):
    monkeypatch.setattr(cost.os, "cpu_count", lambda: 1)
    assert cost.whole_graph_handover([1, 2, 3]) is None
    monkeypatch.setattr(cost.os, "cpu_count", lambda: 4)
    assert cost.whole_graph_handover([]) is None
    assert cost.whole_graph_handover([10**9]) == 10**9
    assert cost.whole_graph_handover([5]) == cost.HANDOVER_MIN_ELEMENTS


def test_the_fallback_sums_like_the_compiled_function():
    """Before the function is compiled (and when it signals) the executor runs; its plain
    float sums are NumPy's own there too, so the first call's result is the same."""

    def f(x):
        return np.sum(x), np.sum(x * x)

    x = np.random.default_rng(3).standard_normal(10_001).astype(np.float32)
    first = kx.function(f, jit_compile=True)
    old = fused.set_synchronous(False)
    try:
        got = first(x)  # runs on the executor while the function compiles
    finally:
        fused.set_synchronous(old)
        compiler.wait_for_kernels(300)
    assert _bits(got[0], np.sum(x))


def test_plain_float_sum_classification():
    seen = {}

    def f(x, i):
        seen["nodes"] = None
        return (
            np.sum(x),
            np.sum(x, axis=0),
            np.sum(x, keepdims=True),
            np.sum(i),
            np.sum(x, axis=(0, 1)),
            np.mean(x),
        )

    g = kx.function(f, backend="numpy")
    x = np.ones((3, 4), np.float32)
    g(x, np.ones(3, np.int32))
    graph = g.get_concrete_function(x, np.ones(3, np.int32)).graph
    flags = [fused.plain_float_sum(n) for n in graph.nodes if n.op.value in ("sum", "mean")]
    assert flags == [True, False, False, False, True, False]


# -- matrix-product chains ---------------------------------------------------------------------


def _power(x, y):
    result = np.eye(x.shape[0], dtype=x.dtype)
    for _ in [0] * y:  # a Python list: unrolled into a chain of products
        result = np.matmul(x, result)
    return result


def _right_power(x, y):
    result = np.ones((3, x.shape[0]), dtype=x.dtype)
    for _ in [0] * y:
        result = result @ x
    return result


@pytest.mark.parametrize(
    "dtype", [np.int32, np.int64, np.uint8, np.int8, np.uint64, np.float32, np.float64]
)
@pytest.mark.parametrize("fn", [_power, _right_power])
def test_unrolled_product_chains_compile_to_one_loop(dtype, fn):
    rng = np.random.default_rng(0)
    for size, steps in ((10, 30), (5, 4), (7, 1)):
        if np.dtype(dtype).kind == "f":
            x = (rng.standard_normal((size, size)) * 0.4).astype(dtype)
        else:
            x = rng.integers(0, 4, (size, size)).astype(dtype)
        f = kx.function(fn, jit_compile=True)
        f(x, steps)
        got = f(x, steps)
        want = fn(x, steps)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (size, steps)
        ex = f.get_concrete_function(x, steps).executable
        assert ex.segments[0]["state"] == "ready"
        source = ex.run.__globals__["_H"].ksrc.source
        assert ("for _ in range(" in source) == (steps >= 4)  # x @ eye folds away
        assert source.count("_matmul_") <= 3  # one product in the code, not `steps`


def test_a_chain_link_read_elsewhere_is_not_overwritten():
    def f(x):
        a = x @ x
        b = x @ a
        c = x @ b
        d = x @ c
        e = x @ d
        return e, b  # b is read after the chain: the chain must stop there

    x = np.random.default_rng(1).integers(0, 3, (6, 6)).astype(np.int64)
    g = kx.function(f, jit_compile=True)
    g(x)
    got = g(x)
    want = f(x)
    for a, b in zip(got, want):
        assert a.tobytes() == b.tobytes()


def test_a_chain_with_incompatible_shapes_raises_numpys_error():
    def f(x, y):
        r = x @ y
        r = r @ y
        r = r @ y
        return r

    g = kx.function(f, jit_compile=True)
    x, y = np.ones((2, 3)), np.ones((3, 3))
    g(x, y)
    assert g(x, y).tobytes() == f(x, y).tobytes()
    with pytest.raises(ValueError):
        g(np.ones((2, 3)), np.ones((3, 4)))
