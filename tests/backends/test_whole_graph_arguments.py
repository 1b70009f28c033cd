"""``jit_compile=True``: arguments the function writes into, written in place or not.

A compiled function that cannot signal (no check in it can hand the call to the fused
executor) writes an updated argument in place, as eager NumPy does: its C-contiguous form is
the caller's own array, and the store at the end finds the writes already there. One that can
signal writes into a private copy and stores it at the end, so that a call handed over finds
the caller's arrays untouched. Every case compares the results *and* the arguments after the
call with eager NumPy, bit for bit, and reads the generated source to see which of the two
it got.
"""

from __future__ import annotations

import gc
import importlib
import warnings

import numba
import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends.compiler import KernelHandle

from .whole_graph_support import same

# Each case compiles a function of its own (seconds from a cold kernel cache): the full suite
# and CI run them; the quick subset meets in-place arguments in test_whole_graph_direct.py.
pytestmark = pytest.mark.slow


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _agree(f, make):
    """One call of ``f`` and of eager NumPy on arguments made by ``make()``: the same
    results (or the same error) and the same arguments after the call."""
    mine, theirs = make(), make()
    want = error = None
    try:
        want = f.python_function(*theirs)
    except Exception as e:  # noqa: BLE001 - NumPy's own error is the expected one
        error = e
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if error is not None:
            with pytest.raises(type(error)):
                f(*mine)
        else:
            same(f(*mine), want)
    for m, t in zip(mine, theirs):
        same(m, t)


def _graph_source(f, *args) -> str:
    """The whole-graph module ``f``'s trace for ``args`` compiled."""
    run = f.get_concrete_function(*args).executable.run
    handle = run.__globals__["_H"]
    assert isinstance(handle, KernelHandle)
    return handle.ksrc.source


def factor_in_place(A):
    """A triangular sweep in place, every index in range by the loop bounds (no check):
    every write lands in the argument."""
    n = A.shape[0]
    for i in range(1, n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i - 1, j] * A[j, j]) / (A[j, j] + 1.0)
    return A[n - 1, n - 1]


def count_into(counts, idx):
    """Data-chosen writes: an index out of range is NumPy's IndexError, so the compiled
    function checks each one and can signal."""
    for i in range(idx.shape[0]):
        counts[idx[i]] += 1
    return counts.sum()


def _spd(n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    m = rng.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def _warm(f, make, calls: int = 3) -> None:
    for _ in range(calls):
        _agree(f, make)


@pytest.mark.parametrize("n", [2, 9, 40])
def test_an_argument_is_written_in_place_when_nothing_can_signal(n):
    f = kx.function(factor_in_place, jit_compile=True)
    _warm(f, lambda: (_spd(n),))
    source = _graph_source(f, _spd(n))
    # one signal: the test of the argument's shape, before anything is written
    assert source.count("kx-fallback") == 1 and "p0.shape[0] != " in source
    assert "np.ascontiguousarray(p0)\n" in source  # the caller's array, no copy of it
    assert "_store_back2(p0," in source


def test_a_function_that_can_signal_writes_a_private_copy():
    f = kx.function(count_into, jit_compile=True)

    def make(bad: bool = False):
        idx = np.array([0, 3, 3, 1, 2, 3], np.int64)
        if bad:
            idx[4] = 7  # out of range: NumPy raises after writing the first four counts
        return np.zeros(4, np.int64), idx

    _warm(f, make)
    source = _graph_source(f, *make())
    assert source.count("kx-fallback") > 1  # (besides the shapes' test)
    assert "np.ascontiguousarray(p0).copy()" in source
    # the compiled function signals; the fused executor's rerun starts from the untouched
    # counts and stops where NumPy stops
    _agree(f, lambda: make(bad=True))
    _agree(f, make)


def test_a_strided_argument_is_written_through_a_copy_and_stored_back():
    f = kx.function(factor_in_place, jit_compile=True)

    def strided():
        wide = np.zeros((7, 14))
        wide[:, ::2] = _spd(7)
        return (wide[:, ::2],)

    def whole():
        wide = np.zeros((7, 14))
        wide[:, ::2] = _spd(7)
        return (wide,)

    _warm(f, lambda: (_spd(7),))
    for _ in range(3):  # (the any-layout variant of the same trace)
        mine, theirs = whole(), whole()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got = f(mine[0][:, ::2])
        want = factor_in_place(theirs[0][:, ::2])
        same(got, want)
        same(mine[0], theirs[0])
    _agree(f, strided)


def test_an_argument_updated_in_a_loop_and_read_after_it_keeps_numpys_order():
    def smooth(u, steps):
        n = u.shape[0]
        before = u.copy()
        for _ in range(steps):
            for i in range(1, n - 1):
                u[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1]
        return u - before, u[0] + u[n - 1]

    f = kx.function(smooth, jit_compile=True)
    rng = np.random.default_rng(3)
    base = rng.standard_normal(33)
    for steps in (0, 1, 5):
        _warm(f, lambda: (base.copy(), steps))


def test_two_updated_arguments_are_both_written_in_place():
    def swap_scaled(a, b):
        for i in range(a.shape[0]):
            t = a[i]
            a[i] = b[i] * 2.0
            b[i] = t - 1.0
        return a.sum() + b.sum()

    f = kx.function(swap_scaled, jit_compile=True)
    rng = np.random.default_rng(4)
    a0, b0 = rng.standard_normal(17), rng.standard_normal(17)
    _warm(f, lambda: (a0.copy(), b0.copy()))
    source = _graph_source(f, a0, b0)
    assert source.count("_store_back1(") == 3  # its definition and the two stores
    # the same array passed twice: the guard's path, as NumPy would run it
    one = a0.copy()
    theirs = a0.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = f(one, one)
    same(got, swap_scaled(theirs, theirs))
    same(one, theirs)


def _store_back(rank: int):
    """The store-back helper of a rank, compiled as the generated module compiles it."""
    writer = importlib.import_module("kernel_ext.backends.whole_graph.writer")
    indexing = importlib.import_module("kernel_ext.backends.whole_graph.indexing")
    assign = f"_assign{rank}_{rank}"
    namespace = {"np": np, "_kernel": numba.njit}
    exec(indexing._assign_source(assign, rank, rank), namespace)
    exec(writer.EXTENT_SOURCE, namespace)
    exec(writer._store_back_source("store", rank, assign), namespace)
    return namespace["store"]


def test_the_store_back_copies_overlapping_views_as_numpy_does():
    store1, store2 = _store_back(1), _store_back(2)
    cases = [
        ("itself", lambda a: a, 1),
        ("reversed", lambda a: a[::-1], 1),
        ("shifted", lambda a: np.concatenate([a[1:], a[:1]]), 1),  # (a fresh array)
        ("transposed", lambda a: a.T, 2),  # same first byte, other strides
        ("flipped rows", lambda a: a[::-1], 2),
        ("disjoint", lambda a: a.copy() * 3.0, 2),
    ]
    for what, view, rank in cases:
        base = np.arange(16.0).reshape(4, 4) if rank == 2 else np.arange(9.0)
        mine, theirs = base.copy(), base.copy()
        (store1 if rank == 1 else store2)(mine, view(mine))
        np.copyto(theirs, view(theirs))  # NumPy buffers an overlapping copy
        same(mine, theirs)
    gc.collect()


def test_a_uniform_constant_carried_into_a_loop_is_filled_not_copied():
    def histogram_of(x, bins):
        counts = np.zeros(bins, np.int64)
        for i in range(x.shape[0]):
            counts[min(max(int(x[i] * bins), 0), bins - 1)] += 1
        return counts

    rng = np.random.default_rng(5)
    x = rng.random(50)
    limit = importlib.import_module("kernel_ext.backends.whole_graph.writer").FILLED_MAX
    for bins in (limit, limit + 1):  # filled in the function / passed as an argument
        f = kx.function(histogram_of, jit_compile=True)
        _warm(f, lambda: (x.copy(), bins))
        source = _graph_source(f, x, bins)
        body = source[source.index("def graph(") :]
        assert body.startswith("def graph(p0):"), body[:60]  # no constant argument
        assert body.count(f"np.zeros(({bins},), np.int64)") == 1
        assert "ascontiguousarray(c" not in body


def test_a_returned_constant_is_the_callers_own_copy():
    def table_and_total(x):
        table = np.arange(300.0)
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i]
        return table, s

    f = kx.function(table_and_total, jit_compile=True)
    x = np.ones(5)
    _warm(f, lambda: (x.copy(),))
    first, _ = f(x)
    assert first.flags.writeable
    first[0] = 99.0  # the caller's copy: the next call's table is untouched
    again, _ = f(x)
    assert again[0] == 0.0 and again is not first


def _last_sum(x):
    s = x[0]
    for i in range(1, x.shape[0]):
        s = s + x[i]  # wraps in the array's dtype, as NumPy's scalars do
    return s


@pytest.mark.parametrize(
    "x",
    [
        np.array([100, 27, 1, -128], np.int8),
        np.array([65535, 1, 7], np.uint16),
        np.arange(-5, 40, dtype=np.int32),
        np.array([2**62, 2**62, -5], np.int64),
        np.array([2**63 + 5, 2**62, 3], np.uint64),
    ],
    ids=lambda x: x.dtype.name,
)
def test_an_integer_result_comes_back_as_the_numpy_scalar_of_its_dtype(x):
    f = kx.function(_last_sum, jit_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (NumPy's scalar overflow warning)
        want = _last_sum(x.copy())
        for _ in range(4):  # the runner, then the direct entry
            got = f(x.copy())
            assert type(got) is type(want) and got == want, (got, want)
    assert f._direct is not None


def test_a_buffer_made_with_np_empty_is_filled_in_the_function_not_passed_in():
    def running_max(x):
        out = np.empty(x.shape[0])  # every element written before it is read
        best = x[0]
        for i in range(x.shape[0]):
            best = max(best, x[i])
            out[i] = best
        return out

    rng = np.random.default_rng(8)
    x = rng.standard_normal(300)  # (above FILLED_MAX: a constant would be an argument)
    f = kx.function(running_max, jit_compile=True)
    _warm(f, lambda: (x.copy(),))
    source = _graph_source(f, x)
    assert "def graph(p0):" in source, source[source.index("def graph") :][:80]
