"""Direct entries: cache hits of a compiled loop kernel that go straight into its code.

Once a signature has been called twice, a ``jit_compile=True`` function (or an ``auto`` one
that tiered up to the whole graph) serves its next calls through one generated test of the
arguments and the compiled function (``backends/whole_graph/direct.py``). Every test here
compares with eager NumPy on the values *and* the arguments after the call, and checks that
the entry really served (or really stepped aside): a call of another shape, dtype, class,
layout or writability, aliasing arguments, an error in the compiled code, verify mode.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends import DIRECT_MISS
from kernel_ext.engine.function import ArmedFunction, Function

#: Each test compiles a function of its own (a second from a cold kernel cache): the quick
#: subset keeps the entry serving, aliasing, errors, arity and its source; CI runs them all.
SLOW = pytest.mark.slow


def lower_update(A, v):
    """An in-place triangular update and a carried sum: writes one argument."""
    n = A.shape[0]
    s = 0.0
    for i in range(1, n):
        for j in range(i):
            A[i, j] -= A[j, j] * v[j]
            s += A[i, j]
    return s, A[:, 0] * 2.0


def row_sums(x):
    """Reads only: no write into an argument, so no aliasing test."""
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        t = 0.0
        for j in range(x.shape[1]):
            t += x[i, j]
        out[i] = t
    return out


def gather(x, idx):
    """Data-chosen reads: an index out of range raises NumPy's IndexError."""
    out = np.zeros(idx.shape[0])
    for i in range(idx.shape[0]):
        out[i] = x[idx[i]] * 2.0
    return out


def scaled(x, a):
    """A 0-d parameter, passed to the compiled function as its value."""
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = x[i] * a
    return y


def _inputs(n: int = 12, dtype=np.float64):
    rng = np.random.default_rng(n)
    return (rng.standard_normal((n, n)) + n * np.eye(n)).astype(dtype), rng.random(n).astype(dtype)


def _same(got, want, what: str = "") -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), what
        for g, w in zip(got, want):
            _same(g, w, what)
        return
    assert type(got) is type(want), (what, type(got), type(want))
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (what, g.dtype, w.dtype)
    assert g.tobytes() == w.tobytes(), (what, g, w)


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _warm(f, args, calls: int = 3):
    """Call ``f`` ``calls`` times on fresh copies of ``args``, each checked against NumPy;
    from the third call of a signature its direct entry serves."""
    for _ in range(calls):
        _agree(f, args)


def _agree(f, args):
    """One call of ``f`` on copies of ``args``, and eager NumPy on other copies: the same
    results and the same arguments after the call."""
    mine, theirs = _copies(args), _copies(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = f(*mine)
    want = f.python_function(*theirs)
    _same(got, want, "result")
    for m, t in zip(mine, theirs):
        _same(m, t, "argument after the call")
    return got


def _serving(f) -> bool:
    return f._direct is not None


def test_cache_hits_of_a_compiled_loop_run_through_the_direct_entry():
    f = kx.function(lower_update, jit_compile=True)
    _warm(f, _inputs())
    assert _serving(f)
    entry = f._direct
    for _ in range(5):  # every hit served, each bitwise NumPy
        _agree(f, _inputs())
    assert f._direct is entry
    assert f.experimental_get_tracing_count() == 1


def test_an_armed_entry_is_the_functions_whole_call_and_counts_every_call():
    f = kx.function(row_sums, jit_compile=True)
    x = np.arange(12.0).reshape(3, 4)
    _warm(f, (x,))
    assert f.__call__ is f._direct.__kx_call__  # no Function.__call__ frame before it
    assert type(f) is ArmedFunction and isinstance(f, Function)
    entry, before = f._direct, f._calls
    keyed = []
    f._call = lambda *a, **k: keyed.append(a) or Function._call(f, *a, **k)
    f._last_run_ns = None
    for _ in range(70):  # across a timed call (one in 64), which the entry times itself
        _same(f(x), row_sums(x))
    assert f._calls == before + 70 and not keyed
    assert f._last_run_ns is not None
    _same(f(x=x), row_sums(x=x))  # a keyword call: the keyed path, the entry kept
    assert f._direct is entry and f._calls == before + 71 and len(keyed) == 1
    del f._call
    f._direct = None
    assert type(f) is Function  # disarmed: the plain method, the usual path
    assert f.__call__ == f._call


@SLOW
def test_run_functions_eagerly_passes_an_armed_entry_by():
    ran = []

    def noted(x):
        ran.append(x.shape)
        return row_sums(x)

    f = kx.function(noted, jit_compile=True)
    x = np.ones((2, 3))
    _warm(f, (x,))
    assert _serving(f)
    traced = len(ran)
    kx.config.run_functions_eagerly(True)
    try:
        _same(f(x), row_sums(x))
    finally:
        kx.config.run_functions_eagerly(False)
    assert len(ran) == traced + 1  # the Python body ran
    _same(f(x), row_sums(x))
    assert len(ran) == traced + 1 and _serving(f)


def test_the_entry_runs_the_compiled_code_without_the_keyed_path():
    f = kx.function(row_sums, jit_compile=True)
    x = np.arange(12.0).reshape(3, 4)
    _warm(f, (x,))
    called = []
    for key, run in list(f._fast.items()):  # what a keyed cache hit would call

        def counting(*values, run=run):
            called.append(values)
            return run(*values)

        f._fast[key] = counting
    for _ in range(3):
        _agree(f, (x,))
    assert called == []  # (every 64th hit is timed through the keyed path: not in 3 calls)
    f._direct = None  # without the entry, the same calls take it
    _agree(f, (x,))
    assert len(called) == 1


@SLOW
def test_a_call_of_another_shape_misses_and_runs_its_own_trace():
    f = kx.function(lower_update, jit_compile=True)
    _warm(f, _inputs(12))
    _agree(f, _inputs(16))  # another size: the entry misses, a new trace serves
    assert f.experimental_get_tracing_count() == 2
    assert not _serving(f)  # dropped after a miss ...
    for _ in range(3):  # ... and the 12x12 trace still gives NumPy's answer
        _agree(f, _inputs(12))


@SLOW
def test_a_call_of_another_dtype_misses_and_traces_again():
    f = kx.function(row_sums, jit_compile=True)
    x = np.arange(12.0).reshape(3, 4)
    _warm(f, (x,))
    got = _agree(f, (x.astype(np.float32),))
    assert got.dtype == np.float64  # NumPy's: np.empty's default dtype
    assert f.experimental_get_tracing_count() == 2


@SLOW
def test_a_zero_d_argument_of_another_dtype_misses():
    f = kx.function(scaled, jit_compile=True)
    x = np.arange(5.0)
    _warm(f, (x, np.array(1.5)))
    assert _serving(f)
    entry = f._direct
    # a 0-d array enters the compiled function as its value, which Numba would convert:
    # the entry tests its dtype itself
    assert entry(x, np.array(1.5, np.float32)) is DIRECT_MISS
    assert entry(x, np.float64(1.5)) is DIRECT_MISS  # a NumPy scalar keys apart from 0-d
    _agree(f, (x, np.array(1.5, np.float32)))
    _agree(f, (x, np.array(2.5)))


@SLOW
@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda a: np.asfortranarray(a), id="fortran-order"),
        pytest.param(lambda a: np.repeat(a, 2, axis=1)[:, ::2], id="strided-view"),
    ],
)
def test_other_layouts_leave_the_entry_for_the_runner(make):
    f = kx.function(row_sums, jit_compile=True)
    x = np.arange(16.0).reshape(4, 4)
    _warm(f, (x,))
    entry = f._direct
    odd = make(x)
    assert entry(odd) is DIRECT_MISS
    _agree(f, (odd,))
    _warm(f, (x,))  # re-armed once the same signature is called again after the miss
    assert _serving(f)


def test_a_read_only_argument_written_into_gives_numpys_error():
    f = kx.function(lower_update, jit_compile=True)
    A, v = _inputs()
    _warm(f, (A, v))
    A.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        np.subtract(A, 1.0, out=A)  # (NumPy's error, for reference)
    with pytest.raises(ValueError, match="read-only"):
        f(A, v.copy())


def test_a_read_only_argument_that_is_only_read_is_served():
    f = kx.function(row_sums, jit_compile=True)
    x = np.arange(12.0).reshape(3, 4)
    _warm(f, (x,))
    frozen = x.copy()
    frozen.flags.writeable = False
    _same(f._direct(frozen), row_sums(frozen))


def test_aliasing_arguments_run_as_the_guard_decides():
    def axpy_rows(y, x):
        for i in range(y.shape[0]):
            y[i] += 2.0 * x[(i + 1) % x.shape[0]]
        return y

    f = kx.function(axpy_rows, jit_compile=True)
    _warm(f, (np.arange(5.0), np.ones(5)))
    assert _serving(f)
    a, b = np.arange(5.0), np.arange(5.0)
    f(a, a)  # one array as both arguments: every write is seen by the later reads
    axpy_rows(b, b)
    _same(a, b, "aliased argument")
    assert f.last_eager_reason is not None and "shares memory" in f.last_eager_reason
    base_mine, base_theirs = np.arange(6.0), np.arange(6.0)
    f(base_mine[:5], base_mine[1:])  # overlapping views
    axpy_rows(base_theirs[:5], base_theirs[1:])
    _same(base_mine, base_theirs, "overlapping views")


def test_an_error_in_the_compiled_code_is_numpys_and_leaves_the_arguments():
    f = kx.function(gather, jit_compile=True)
    x = np.arange(5.0)
    _warm(f, (x, np.array([0, 4, 2])))
    assert _serving(f)
    with pytest.raises(IndexError):
        gather(x, np.array([0, 7, 2]))
    with pytest.raises(IndexError):
        f(x, np.array([0, 7, 2]))
    _same(x, np.arange(5.0), "argument after the error")
    _agree(f, (x, np.array([1, 3, 0])))


def test_array_subclasses_never_take_the_entry():
    f = kx.function(row_sums, jit_compile=True)
    x = np.arange(12.0).reshape(3, 4)
    _warm(f, (x,))
    masked = np.ma.masked_array(x, mask=x > 6)
    assert f._direct(masked) is DIRECT_MISS  # Numba alone would type it as a plain array
    with pytest.raises(kx.errors.TraceTypeError, match="masked array"):
        f(masked)  # the engine's own answer to a subclass, as before any entry


def test_verify_mode_keeps_calls_off_the_entry():
    f = kx.function(lower_update, jit_compile=True)
    _warm(f, _inputs())
    assert _serving(f)
    f.arm_verification()
    assert not _serving(f)
    cf = f.get_concrete_function(*_inputs())
    verifier = cf.verifier
    assert verifier.remaining
    while verifier.remaining:  # each verified call goes through the verifier
        assert not _serving(f)
        _agree(f, _inputs())
    assert cf.verifier.failure is None
    _warm(f, _inputs())  # verified: the entry serves again
    assert _serving(f)


def test_keyword_and_default_calls_stay_on_the_key_path():
    def stepped(x, scale=2.0):
        y = np.empty_like(x)
        for i in range(x.shape[0]):
            y[i] = x[i] * scale
        return y

    f = kx.function(stepped, jit_compile=True)
    x = np.arange(4.0)
    for _ in range(4):
        _same(f(x), stepped(x))
        _same(f(x=x), stepped(x=x))
    assert not _serving(f)


@SLOW
def test_a_tiered_function_is_served_once_it_moved_to_the_whole_graph(monkeypatch):
    from kernel_ext import backends

    monkeypatch.setattr(backends, "TIERING", True)  # (the suite turns tiering off)
    f = kx.function(lower_update)  # auto: starts fused, tiers up (loops: from the first call)
    args = _inputs(12)  # (longer than autograph's SHORT_RANGE: graph loops, not unrolled)
    for _ in range(40):
        _agree(f, args)
        if _serving(f):
            break
    cf = f.get_concrete_function(*args)
    assert cf.executable.tier.state == "whole", cf.tier
    assert _serving(f)
    _warm(f, args)


def test_the_entry_source_tests_each_argument_once():
    f = kx.function(scaled, jit_compile=True)
    _warm(f, (np.arange(5.0), np.array(1.5)))
    source = f._direct.__kx_source__
    compile(source, "<entry>", "exec")
    # (two functions: the entry, and the entry as the Function's whole call)
    assert source.count("def ") == 2
    assert source.count("p0.__class__ is _nd") == 2
    assert "p0.dtype" not in source  # an array argument: the dispatcher checks its dtype
    assert "p1.shape == _s1" in source  # (the 0-d one is no array there)
    assert "p1.dtype is _d1" in source  # the 0-d one enters as its value: tested here
    assert "base is None" not in source  # nothing written into an argument


@SLOW
def test_the_compiled_function_tests_shapes_unless_it_serves_several():
    def shifted(x, y):  # (no loop: traces of other sizes may share one compiled function)
        return x * 1.3125 + y[0] - 0.4375

    def entry_and_graph(n: int) -> tuple[str, str]:
        f = kx.function(shifted, jit_compile=True)
        args = (np.arange(float(n)), np.arange(float(n + 2)))
        _warm(f, args)
        run = f.get_concrete_function(*args).executable.run
        return f._direct.__kx_source__, run.__globals__["_H"].ksrc.source

    # the first trace of this size pattern: compiled for its own shapes, which its first
    # statement tests, so its entry tests the arguments' class only
    entry, graph = entry_and_graph(5)
    assert "p0.shape[0] != 5 or p1.shape[0] != 7" in graph
    assert "p0.shape" not in entry and "p1.shape" not in entry
    # the second: one function for every size of the pattern, so its entry tests shapes
    # (a vector's by its length: the dispatcher checks the rank)
    entry, graph = entry_and_graph(9)
    assert "p0.shape[0] != " not in graph
    assert "len(p0) == 9" in entry and "len(p1) == 11" in entry
    for n in (5, 9):  # and both keep serving their own size, bitwise
        f = kx.function(shifted, jit_compile=True)
        _warm(f, (np.arange(float(n)), np.arange(float(n + 2))))


@SLOW
def test_a_recording_tape_replays_calls_the_entry_would_serve():
    def cumulative(x):
        y = np.empty_like(x)
        s = 0.0
        for i in range(x.shape[0]):
            s = s + x[i] * x[i]
            y[i] = s
        return y

    f = kx.function(cumulative, jit_compile=True)
    x = np.linspace(0.1, 1.0, 12)
    _warm(f, (x,))
    assert _serving(f)
    with kx.GradientTape() as tape:
        tape.watch(x)  # TensorFlow's form: plain arrays, the call replayed for the gradient
        y = f(x)
    np.testing.assert_allclose(tape.gradient(y, x), 2 * x * np.arange(12, 0, -1), rtol=1e-12)


@SLOW
def test_entries_are_made_only_below_the_handover_size():
    def checksum(data):
        acc = np.uint32(0)
        for i in range(data.shape[0]):
            acc = (acc << np.uint32(1)) ^ np.uint32(data[i]) ^ (acc >> np.uint32(31))
        return acc

    f = kx.function(checksum, jit_compile=True)
    data = np.arange(200, dtype=np.uint8)
    _warm(f, (data,))
    factory = f.get_concrete_function(data).executable.direct
    if factory.handover is None:
        pytest.skip("this graph has no handover size")
    assert _serving(f)
    big = ((factory.handover,), np.dtype(np.uint8))
    # from the handover size on, each call's executor is measured: no entry there
    assert factory([big], frozenset(), f.get_concrete_function(data).call_flat) is None


def axpy_steps(y, x, alpha, steps):
    for _ in range(steps):
        for i in range(y.shape[0]):
            y[i] = y[i] + alpha * x[i]
    return y


@SLOW
def test_python_scalars_taken_as_themselves_are_checked_by_class_and_value():
    f = kx.function(axpy_steps, jit_compile=True)
    y, x = np.arange(10.0), np.ones(10)
    _warm(f, (y, x, 0.5, 3))
    assert _serving(f)
    entry = f._direct
    assert entry(y.copy(), x, 0.25, 3) is DIRECT_MISS  # another value: another trace
    assert entry(y.copy(), x, 0.5, 4) is DIRECT_MISS
    assert entry(y.copy(), x, 0.5, 3.0) is DIRECT_MISS  # 3.0 == 3, but a float keys apart
    assert entry(y.copy(), x, np.float64(0.5), 3) is DIRECT_MISS  # a NumPy scalar too
    for alpha, steps in [(0.25, 3), (0.5, 4), (0.5, True), (0.5, 3)]:
        _agree(f, (y, x, alpha, steps))


@SLOW
@pytest.mark.parametrize("alpha", [0.0, -0.0, float("nan")])
def test_zero_and_nan_floats_keyed_by_their_bits_get_no_entry(alpha):
    f = kx.function(axpy_steps, jit_compile=True)
    y, x = np.arange(10.0), np.ones(10)
    _warm(f, (y, x, alpha, 2))
    assert not _serving(f)  # (``==`` would merge 0.0 and -0.0, and never match a NaN)
    _agree(f, (y, x, -alpha if alpha == alpha else 0.0, 2))


def test_after_a_miss_the_entry_is_armed_again_only_after_the_rearm_count():
    import importlib

    rearm = importlib.import_module("kernel_ext.engine.direct_calls").DIRECT_REARM
    f = kx.function(row_sums, jit_compile=True)
    a, b = np.ones((3, 4)), np.ones((5, 4))
    _warm(f, (a,))
    _warm(f, (b,))  # a miss (another shape), then b's own trace
    missed_at = f._calls - 2  # (the first of b's three calls missed)
    while f._calls < missed_at + rearm - 1:  # both sides of the re-arm count
        f(b)
        assert not _serving(f), f._calls - missed_at
    f(b)
    f(b)
    assert _serving(f)
    _same(f(b), row_sums(b))


def test_a_call_with_too_few_or_too_many_arguments_gets_the_functions_own_error():
    f = kx.function(row_sums, jit_compile=True)
    x = np.ones((2, 3))
    _warm(f, (x,))
    assert f._direct(x, x) is DIRECT_MISS
    assert f._direct() is DIRECT_MISS
    with pytest.raises(TypeError, match="row_sums"):
        f(x, x)
    with pytest.raises(TypeError, match="row_sums"):
        f()


@SLOW
def test_numpy_scalar_arguments_are_checked_by_their_exact_type():
    def damp(x, thr):
        while np.sum(x) > thr:
            x = np.tanh(x)
        return x

    f = kx.function(damp, jit_compile=True)
    x = np.ones(5, np.float32)
    _warm(f, (x, np.float32(1.0)))
    assert _serving(f)
    entry = f._direct
    assert entry(x, np.float64(1.0)) is DIRECT_MISS  # another dtype: another trace
    assert entry(x, np.array(1.0, np.float32)) is DIRECT_MISS  # (same key: keyed path)
    _same(entry(x, np.float32(2.0)), damp(x, np.float32(2.0)))
    for thr in (np.float64(1.0), np.array(1.0, np.float32), np.float32(3.0)):
        _agree(f, (x, thr))


def test_a_numpy_scalar_whose_class_does_not_fix_its_dtype_gets_no_entry():
    # The class test of a NumPy scalar stands for its dtype only for numbers and bools:
    # np.datetime64 covers every unit, np.str_ every length, which the call key tells apart.
    f = kx.function(scaled, jit_compile=True)
    x = np.arange(5.0)
    _warm(f, (x, np.float32(2.0)))
    cf = f.get_concrete_function(x, np.float32(2.0))
    assert f._arming_direct(cf, cf.call_flat, (x, np.float32(2.0))) is not None
    for odd in (np.datetime64(1, "s"), np.str_("ab")):
        assert f._arming_direct(cf, cf.call_flat, (x, odd)) is None
