"""The Numba CPU backend: fused kernels agree with NumPy, and the executor around them works.

Differential: generated programs (dtypes, 0-d, size-0, broadcasting, non-contiguous and
read-only inputs, NumPy scalars) give the same results eagerly, on the NumPy executor and on
fused Numba kernels: bitwise for every elementwise op and integer/bool reduction, and within
the float summation bound (docs/ARCHITECTURE.md) for float sums and means.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest
from programs import FUSIBLE_BINARY, FUSIBLE_UNARY, make_fusible_program, make_program

import kernel_ext as kx
from kernel_ext.backends import codegen, compiler, fused

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow


def _same(got, want, what: str) -> None:
    """Same dtype, shape and values (NaN == NaN; -0.0 == 0.0)."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} != {w.dtype}"
    assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
    np.testing.assert_array_equal(g, w, err_msg=what)


def _summation_bound(reduced, step_name: str, want) -> np.ndarray:
    """|fused - NumPy| bound of a float sum/mean: both are within a few ulps of sum|v|."""
    name, rest = step_name.split("(", 1)
    axis = eval(rest.split("axis=")[1].split(",")[0])
    keep = "keepdims=True" in rest
    v = np.abs(np.asarray(reduced, dtype=np.float64))
    with np.errstate(all="ignore"):
        total = np.sum(v, axis=axis, keepdims=keep)
        if name == "mean":
            count = v.size if axis is None else v.shape[axis]
            total = total / max(count, 1)
    eps = np.finfo(np.asarray(want).dtype).eps
    return 8 * eps * total + np.finfo(np.asarray(want).dtype).tiny


def _run(prog, backend):
    f = kx.function(prog, backend=backend)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return f(*prog.inputs), f


@pytest.mark.parametrize("chunk", range(4))
def test_fused_programs_agree_with_numpy(chunk):
    for seed in range(chunk, 36, 4):
        prog = make_fusible_program(seed)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            eager = prog(*prog.inputs)
        ref, _ = _run(prog, "numpy")
        got, f = _run(prog, "numba")
        where = f"seed {seed}: {prog.describe()}"
        segments = f.get_concrete_function(*prog.inputs).executable.segments
        assert all(s["state"] in ("ready", "pending") for s in segments), (where, segments)
        float_sum = (
            prog.reduced is not None
            and prog.steps[-1][0].split("(")[0] in ("sum", "mean")
            and np.asarray(eager[-1]).dtype.kind == "f"
        )
        for k, (g, r, e) in enumerate(zip(got, ref, eager)):
            _same(r, e, f"{where} -> output {k} (NumPy executor vs eager)")
            if float_sum and k == len(got) - 1:
                g_, e_ = np.asarray(g), np.asarray(e)
                assert type(g) is type(r) and g_.dtype == e_.dtype and g_.shape == e_.shape
                bound = _summation_bound(prog.reduced, prog.steps[-1][0], e)
                ok = (
                    (np.abs(g_.astype(np.float64) - e_) <= bound)
                    | (g_ == e_)
                    | (np.isnan(g_) & np.isnan(e_))
                )
                assert ok.all(), f"{where}: {g_} vs {e_} (bound {bound})"
            else:
                assert type(g) is type(r), where
                _same(g, r, f"{where} -> output {k} (Numba vs NumPy executor)")


def test_general_programs_agree_bitwise_with_numpy(monkeypatch):
    """Random programs mixing fusible and non-fusible ops (shape ops, indexing, matmul,
    reductions): the fused executor schedules segments around the rest. Float sums stay in
    NumPy here so every result, and everything computed from it, is bitwise comparable."""
    monkeypatch.setattr(codegen, "BITWISE_ONLY", True)
    for seed in range(0, 300, 20):
        prog = make_program(seed)
        ref, _ = _run(prog, "numpy")
        got, _ = _run(prog, "numba")
        for k, (g, r) in enumerate(zip(got, ref)):
            assert type(g) is type(r), f"seed {seed}: {prog.describe()}"
            _same(g, r, f"seed {seed}: {prog.describe()} -> output {k}")


def _edge(dtype, n=24):
    rng = np.random.default_rng(3)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.array([True, False] * (n // 2))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        vals = [0, 1, 2, 3, 7, 8, 63, 64, info.max, info.min, info.max - 1, info.min + 1]
        if dt.kind == "i":
            vals += [-1, -2, -3, -7, -8, -64]
        vals += list(rng.integers(max(info.min, -100), min(info.max, 100), n))
        return np.array(vals[:n], dtype=object).astype(dt)
    vals = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        2.0,
        3.0,
        np.inf,
        -np.inf,
        np.nan,
        1e-40,
        -1e-300,
        3e38,
        1e300,
        7.0,
        -7.0,
        100.5,
        1e-7,
        0.75,
    ]
    vals += list(rng.standard_normal(n) * 5)
    with np.errstate(all="ignore"):
        return np.array(vals[:n]).astype(dt)


# Integer and bool kernels are tested on the ops they compute themselves; the float functions
# of integers are a cast (tested here) plus the float kernels' NumPy loop calls.
_INT_OPS = (
    "negative",
    "absolute",
    "square",
    "sign",
    "invert",
    "logical_not",
    "positive",
    "add",
    "subtract",
    "multiply",
    "floor_divide",
    "remainder",
    "fmod",
    "power",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "equal",
    "not_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "left_shift",
    "right_shift",
    "isnan",
    "isfinite",
    "signbit",
    "floor",
    "divide",
)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int64, np.uint64, np.bool_])
def test_every_op_matches_numpy_on_edge_values(dtype):
    """Each supported op on its dtype's edge values (0, -0.0, inf, NaN, MIN, MAX, shifts by
    the width, division by zero ...), all pairs by broadcasting, in one kernel per dtype."""
    x = _edge(dtype)[:, None]
    y = _edge(dtype)[None, :]
    ops = []
    float_ = np.dtype(dtype).kind == "f"
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for uf in FUSIBLE_UNARY:
            try:
                if float_ or uf.__name__ in _INT_OPS:
                    uf(x * np.ones_like(y))
                    ops.append((uf, 1))
            except (TypeError, ValueError):
                pass
        for uf in FUSIBLE_BINARY:
            try:
                if float_ or uf.__name__ in _INT_OPS:
                    uf(x, np.abs(y) if uf is np.power and not float_ else y)
                    ops.append((uf, 2))
            except (TypeError, ValueError):
                pass

    def f(x, y):
        xx = x * np.ones_like(y)
        out = [
            uf(xx) if k == 1 else uf(x, np.abs(y) if uf is np.power and not float_ else y)
            for uf, k in ops
        ]
        out.append(np.where(x > y, x, y))
        out.append(np.clip(xx, 1, 3) if np.dtype(dtype) != np.bool_ else xx)
        for dt in (np.float32, np.int8, np.uint16, np.int64, np.bool_, np.float64):
            out.append(xx.astype(dt))
        return out

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = f(x, y)
        got = kx.function(f, backend="numba")(x, y)
    cf = kx.function(f, backend="numba").get_concrete_function(x, y)
    assert cf.executable.segments, "nothing was fused"
    names = [uf.__name__ for uf, _ in ops] + ["where", "clip", "astype..."]
    for k, (g, w) in enumerate(zip(got, want)):
        _same(g, w, f"{np.dtype(dtype).name}: {names[min(k, len(names) - 1)]}")


def test_literals_are_typed_as_numpy_types_them():
    x = np.arange(-5, 6, dtype=np.int8)
    f32 = np.linspace(-3, 3, 11).astype(np.float32)

    def f(x, y):
        return (
            x * 3 + 1,
            x // 0,
            x % -1,
            (x << 9),
            (x >> 9),
            y * 0.1 + 2,
            y**2,
            y**0.5,
            y**-1,
            y**3,
            x**2,
            (y > 0.5) & (x < 2),
            np.float32(2) * y,
        )

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = f(x, f32)
        got = kx.function(f, backend="numba")(x, f32)
    for k, (g, w) in enumerate(zip(got, want)):
        _same(g, w, f"expression {k}")


@pytest.mark.parametrize(
    "layout", ["contiguous", "strided", "broadcast", "readonly", "0-d", "empty"]
)
def test_layouts_and_shapes(layout):
    rng = np.random.default_rng(1)
    base = rng.standard_normal((6, 2100)).astype(np.float32)
    b = rng.standard_normal(2100).astype(np.float32)
    if layout == "strided":
        base = base[:, ::2]
        b = b[::2]
    elif layout == "broadcast":
        b = b[:1]
    elif layout == "readonly":
        base.setflags(write=False)
        b.setflags(write=False)
    elif layout == "0-d":
        base, b = np.float32(1.5), np.array(2.5, np.float32)
    elif layout == "empty":
        base, b = base[:0], b

    def f(x, b):
        y = np.tanh(x * 2.0 + b) - x
        if np.ndim(y) == 0:
            return y, np.sum(y * y), np.max(np.abs(y)), np.mean(y, keepdims=True)
        return y, np.sum(y * y), np.max(np.abs(y), axis=-1), np.mean(y, axis=0, keepdims=True)

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = kx.function(f, backend="numpy")(base, b)
        got = kx.function(f, backend="numba")(base, b)
    _same(got[0], want[0], "map")
    _same(got[2], want[2], "max")
    for k in (1, 3):
        g, w = np.asarray(got[k]), np.asarray(want[k])
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6)


def test_large_arrays_run_on_all_cores_with_the_same_results():
    rng = np.random.default_rng(2)
    x = rng.standard_normal(1_200_000).astype(np.float32)
    i = rng.integers(-1000, 1000, 1_200_000).astype(np.int32)

    def f(x, i):
        y = np.tanh(x * 0.5 + 1.0) * np.exp(-x)
        return y, np.sum(i * 3 - 7), np.max(y), np.any(y > 100.0), np.mean(x * x)

    want = kx.function(f, backend="numpy")(x, i)
    got = kx.function(f, backend="numba")(x, i)
    for k in range(4):
        _same(got[k], want[k], f"output {k}")
    np.testing.assert_allclose(got[4], want[4], rtol=1e-6)


def test_values_only_numpy_defines_fall_back_to_numpy():
    """A NaN cast to int, an integer to a negative power: the kernel flags them and the
    segment reruns through NumPy, which gives its own answer (and its own error)."""
    x = np.array([1.5, np.nan, -2.0, 1e20], np.float32)

    def cast(x):
        return (x * 2.0).astype(np.int32) + 1

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = kx.function(cast, backend="numba")(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(got, cast(x), "cast")
    assert any("invalid value" in str(w.message) for w in caught)

    def ipow(a, b):
        return (a + 1) ** b

    a = np.arange(4, dtype=np.int64)
    f = kx.function(ipow, backend="numba")
    _same(f(a, np.array([1, 2, 3, 0])), ipow(a, np.array([1, 2, 3, 0])), "power")
    with pytest.raises(ValueError, match="negative integer powers"):
        f(a, np.array([1, -2, 3, 0]))


def test_auto_keeps_single_ops_on_numpy_and_fuses_chains():
    """One op moves the same memory fused or not (and ``a + b`` keeps the bare hot path);
    a chain saves one temporary per op, which pays from a handful of elements on."""
    small = np.ones(8, np.float32)
    f = kx.function(lambda a, b: a + b)
    f(small, small)
    assert f.get_concrete_function(small, small).executable.backend == "numpy"
    g = kx.function(lambda x: np.tanh(x * 2.0 + 1.0) * x)
    big = np.ones(200_000, np.float32)
    _same(g(big), np.tanh(big * 2.0 + 1.0) * big, "fused")
    cf = g.get_concrete_function(big)
    assert cf.executable.backend == "numba-cpu"
    (seg,) = cf.executable.segments
    assert seg["ops"] == ["multiply", "add", "tanh", "multiply"]


def test_one_large_transcendental_runs_on_every_core(monkeypatch):
    """A single ``tanh`` moves the same memory fused or not, but its compute splits over the
    cores: from its parallel size on, NumPy's own call runs on each core's share (same bits,
    no kernel to compile); below, and for cheap single ops, one NumPy call."""
    from kernel_ext.backends import cost, parallel

    monkeypatch.setattr(cost.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(parallel, "THREADS", 2)
    cost._UNARY_SIZES.clear()
    big = np.linspace(-3, 3, 400_000).astype(np.float32)
    for fn, backend in ((np.tanh, "auto"), (lambda x: np.exp(x) * 1.0, "auto")):
        g = kx.function(fn, backend=backend)
        g(big)
        cf = g.get_concrete_function(big)
        assert cf.executable.segments == []  # no kernel
        assert "_parallel_ufunc(" in cf.executable.source
        submitted = []
        real = parallel.worker_pool

        class Spy:
            def submit(self, *args):
                submitted.append(args[0])
                return real().submit(*args)

        monkeypatch.setattr(parallel, "worker_pool", lambda: Spy())
        _same(g(big), fn(big), "split")
        monkeypatch.setattr(parallel, "worker_pool", real)
        assert len(submitted) == 1 and submitted[0] in (np.tanh, np.exp)
    small = big[:1000].copy()
    g = kx.function(np.tanh)
    submitted.clear()
    monkeypatch.setattr(parallel, "worker_pool", lambda: Spy())
    _same(g(small), np.tanh(small), "small")  # (an executor for any size: checked per call)
    monkeypatch.setattr(parallel, "worker_pool", real)
    assert submitted == []
    h = kx.function(lambda x: x + 1.0)
    h(big)
    assert "_parallel_ufunc(" not in h.get_concrete_function(big).executable.source
    ints = np.arange(400_000, dtype=np.int32)
    _same(kx.function(np.tanh)(ints), np.tanh(ints), "int input, float64 loop")
    strided = np.linspace(-1, 1, 800_000).astype(np.float32)[::2]
    _same(kx.function(np.exp)(strided), np.exp(strided), "strided: one call")


def test_unknown_sizes_decide_per_call():
    g = kx.function(lambda x: np.tanh(x * 2.0 + 1.0) * x, reduce_retracing=True)
    for n in (10, 11, 300_000):
        x = np.linspace(-1, 1, n).astype(np.float32)
        _same(g(x), np.tanh(x * 2.0 + 1.0) * x, f"n={n}")
    assert g.experimental_get_tracing_count() <= 2


def test_segment_reports_describe_each_kernel():
    x = np.ones(1000, np.float32)
    f = kx.function(lambda x: (np.sum(np.exp(x) * 2.0), x * 3.0 - 1.0), backend="numba")
    f(x)
    reports = f.get_concrete_function(x).executable.segments
    # one kernel: the map reads x too, so it joins the reduction's kernel (sibling fusion)
    assert [r["kind"] for r in reports] == ["reduce"]
    assert reports[0]["ops"] == ["exp", "multiply", "sum", "multiply", "subtract"] or sorted(
        reports[0]["ops"]
    ) == sorted(["exp", "multiply", "sum", "multiply", "subtract"])
    assert len(reports[0]["outputs"]) == 2
    for r in reports:
        assert r["backend"] == "numba-cpu" and r["state"] == "ready"
        assert r["cache"] in ("flat:hit", "flat:miss") and r["compile_ms"] >= 0
        assert set(r) >= {"ops", "nodes", "inputs", "outputs", "kernel", "reason"}


def test_fused_code_inside_loops_and_branches():
    def f(x, n):
        i = 0
        while i < n:
            x = np.tanh(x * 0.5 + 0.1) + x * 0.25
            i += 1
        if np.sum(x) > 0:
            y = x * 2.0 + 1.0
        else:
            y = x * -2.0 - 1.0
        return y

    x = np.linspace(-2, 2, 3000).astype(np.float32)
    want = kx.function(f, backend="numpy")(x, np.int64(5))
    ff = kx.function(f, backend="numba")
    _same(ff(x, np.int64(5)), want, "loop")
    assert len(ff.get_concrete_function(x, np.int64(5)).executable.segments) >= 3


def test_python_threads_call_kernels_concurrently():
    x = np.linspace(-1, 1, 600_000).astype(np.float32)
    f = kx.function(lambda x: np.tanh(x * 2.0 + 1.0) * x - 0.5, backend="numba")
    want = f(x)
    errors: list[BaseException] = []

    def worker():
        try:
            for _ in range(5):
                _same(f(x), want, "thread")
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_background_compilation_never_blocks_a_call():
    fused.set_synchronous(False)
    # A literal no other test uses makes a kernel this process has not compiled yet.
    salt = float(np.random.default_rng().integers(1, 10**6)) + 0.5
    f = kx.function(lambda x: np.sqrt(x * x + salt) - x, backend="numba")
    x = np.linspace(0, 1, 5000)
    first = f(x)
    cf = f.get_concrete_function(x)
    (seg,) = cf.executable.segments
    assert seg["state"] in ("queued", "compiling", "ready")
    assert cf.executable.wait(timeout=120)
    assert seg["state"] == "ready"
    handle = compiler.handle_of("cpu", seg["kernel"])
    assert handle.flat is not None
    _same(f(x), first, "after the switch")
    _same(first, np.sqrt(x * x + salt) - x, "first call (NumPy)")


def test_whole_graph_function_is_not_compiled_again_by_a_call():
    """A ``jit_compile=True`` function compiled in the background serves the next calls
    without compiling on the calling thread: writable, read-only and strided arrays all
    reach its two compiled signatures (C and any layout), one each."""
    fused.set_synchronous(False)
    salt = float(np.random.default_rng().integers(1, 10**6)) + 0.25

    def f(x, y):
        return np.tanh(x) * y + salt

    g = kx.function(f, jit_compile=True)
    x = np.linspace(-2, 2, 60).reshape(6, 10)
    y = np.linspace(0, 1, 10)
    _same(g(x, y), f(x, y), "first call (the fused executor)")
    cf = g.get_concrete_function(x, y)
    assert cf.executable.wait(timeout=300)
    whole = cf.executable.segments[0]
    assert whole["kind"] == "whole-graph" and whole["state"] == "ready"
    handle = compiler.handle_of("cpu", whole["kernel"])
    frozen = x.copy()
    frozen.setflags(write=False)
    for args in ((x, y), (frozen, y), (x.copy(), y.copy())):
        _same(g(*args), f(*args), "the compiled function")
    assert len(handle.graph_c.signatures) == 1
    strided = np.linspace(-2, 2, 120).reshape(6, 20)[:, ::2]
    _same(g(strided, y), f(strided, y), "the first strided call (the fused executor)")
    assert cf.executable.wait(timeout=300)
    _same(g(strided, y), f(strided, y), "strided, compiled")
    _same(g(x, y), f(x, y), "C-contiguous again")
    assert len(handle.graph_a.signatures) == 1 and len(handle.graph_c.signatures) == 1
    assert handle.graph_a is not handle.graph_c
