"""Fast-math mode (``kx.function(..., fast_math=True)``): every approximation stays within its
documented ulp bound of NumPy over wide input ranges, special values are NumPy's, the mode is
part of the kernel's identity, and the kernels vectorise."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends import codegen, fast_math, kernel_cache, numba_cpu
from kernel_ext.passes.fusion import partition

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow


def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in units in the last place: the floats' bits as ordered integers (so the
    spacing of subnormals counts near zero); 0 where both are NaN, inf where one is."""
    itype = np.int32 if got.dtype == np.float32 else np.int64
    lowest = np.iinfo(itype).min

    def ordered(a: np.ndarray) -> np.ndarray:
        bits = a.view(itype).astype(np.int64)
        return np.where(bits < 0, lowest - bits, bits)

    a, b = ordered(got), ordered(want)
    # exact in int64 where the signs agree; across zero the distance is huge anyway (and the
    # int64 difference of two float64 extremes could wrap)
    d = np.where(
        (a < 0) == (b < 0),
        np.abs(a - b).astype(np.float64),
        np.abs(a.astype(np.float64) - b.astype(np.float64)),
    )
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    d[nan_got & nan_want] = 0.0
    d[nan_got != nan_want] = np.inf
    return d


def edge_values(dtype: np.dtype) -> np.ndarray:
    """Zeros, NaN, the smallest normal, subnormals, and the largest finite values."""
    fi = np.finfo(dtype)
    return np.array(
        [
            0.0,
            -0.0,
            np.nan,
            fi.tiny,
            -fi.tiny,
            fi.tiny / 4,
            -fi.tiny / 8,
            fi.smallest_subnormal,
            -fi.smallest_subnormal,
            1.0,
            -1.0,
            0.5,
            0.625,
            -0.625,
        ],
        dtype,
    )


def wide_inputs(fn: str, dtype: np.dtype, n: int = 400_000) -> np.ndarray:
    """Uniform over the function's interesting range, log-uniform over every magnitude
    (both signs), and the edge values."""
    rng = np.random.default_rng(16)
    fi = np.finfo(dtype)
    lo, hi = {
        "exp": (-110.0, 90.0) if dtype == np.float32 else (-750.0, 712.0),
        "log": (0.0, 1e6),
        "tanh": (-20.0, 20.0),
        "sin": (-fast_math.TRIG_LIMIT, fast_math.TRIG_LIMIT),
        "cos": (-fast_math.TRIG_LIMIT, fast_math.TRIG_LIMIT),
    }[fn]
    mags = np.exp(rng.uniform(np.log(fi.smallest_subnormal) + 1, np.log(fi.max) - 1, n))
    if fn in ("sin", "cos"):
        mags = mags[mags <= fast_math.TRIG_LIMIT]
    signed = mags * rng.choice([-1.0, 1.0], mags.size)
    with np.errstate(over="ignore"):
        parts = [rng.uniform(lo, hi, n), rng.standard_normal(n), signed]
        return np.concatenate([p.astype(dtype) for p in parts] + [edge_values(dtype)])


def fast(fn, **options):
    return kx.function(fn, backend="numba", fast_math=True, **options)


UNARY = sorted(k for k in fast_math.ULP_BOUNDS if k[0] != "pow")


@pytest.mark.parametrize("name, dtype", UNARY)
def test_fast_math_stays_within_its_ulp_bound_of_numpy(name, dtype):
    ufunc = getattr(np, name)
    x = wide_inputs(name, np.dtype(dtype))
    f = fast(lambda x: ufunc(x))
    with np.errstate(all="ignore"):
        got, want = f(x), ufunc(x)
    (segment,) = f.get_concrete_function(x).executable.segments
    assert segment["state"] == "ready"  # the kernel computed this, not NumPy
    assert got.dtype == want.dtype
    assert ulp_distance(got, want).max() <= fast_math.ULP_BOUNDS[(name, dtype)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fast_math_special_values_are_numpys(dtype):
    fi = np.finfo(dtype)
    x = np.array(
        [
            0.0,
            -0.0,
            np.inf,
            -np.inf,
            np.nan,
            -1.0,
            fi.max,
            -fi.max,
            fi.smallest_subnormal,
            -fi.smallest_subnormal,
        ],
        dtype,
    )
    for name in ("exp", "log", "tanh"):
        ufunc = getattr(np, name)
        with np.errstate(all="ignore"):
            got, want = fast(lambda x: ufunc(x))(x), ufunc(x)
        finite = np.isfinite(want) & (want != 0)
        np.testing.assert_array_equal(got[~finite], want[~finite], err_msg=name)
        np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sin_and_cos_beyond_the_limit_are_computed_by_numpy(dtype):
    x = np.array([1.0, 0.5, fast_math.TRIG_LIMIT * 4, np.inf, -np.inf, np.nan, -1e30], dtype)
    for ufunc in (np.sin, np.cos):
        with np.errstate(all="ignore"):
            got, want = fast(lambda x: ufunc(x) * 1.0)(x), ufunc(x) * 1.0
        np.testing.assert_array_equal(got, want)  # the segment reran in NumPy: bitwise


def test_float32_power_stays_within_its_ulp_bound_of_numpy():
    rng = np.random.default_rng(3)
    x = np.exp(rng.uniform(-80, 80, 300_000)).astype(np.float32)
    y = rng.uniform(-8, 8, x.size).astype(np.float32)
    f = fast(lambda x, y: np.power(x, y))
    with np.errstate(all="ignore"):
        got, want = f(x, y), np.power(x, y)
    assert f.get_concrete_function(x, y).executable.segments[0]["state"] == "ready"
    assert ulp_distance(got, want).max() <= fast_math.ULP_BOUNDS[("pow", "float32")]


def test_float32_power_special_cases_are_numpys():
    x = np.array([0.0, -0.0, -2.0, -2.0, -2.0, np.inf, -np.inf, np.nan, 1.0, 2.0, 3.0], np.float32)
    y = np.array([2.5, -1.5, 3.0, 2.0, 0.5, 2.0, 3.0, 0.0, np.nan, np.inf, -np.inf], np.float32)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(fast(lambda x, y: np.power(x, y))(x, y), np.power(x, y))


def test_sigmoid_is_within_the_exp_bound_plus_rounding():
    x = wide_inputs("tanh", np.dtype(np.float32))
    with np.errstate(all="ignore"):
        got = fast(lambda x: 1 / (1 + np.exp(-x)))(x)
        want = 1 / (1 + np.exp(-x))
    assert ulp_distance(got, want).max() <= fast_math.ULP_BOUNDS[("exp", "float32")] + 2


def test_a_fast_math_kernel_never_serves_an_exact_function():
    def w3(x, a, b, c):
        return np.tanh(a * x + b) * (1 / (1 + np.exp(-x))) + 0.5 * x * x - c

    rng = np.random.default_rng(0)
    args = [rng.standard_normal(50_000).astype(np.float32) for _ in range(4)]
    approx = kx.function(w3, backend="numba", fast_math=True)
    got = approx(*args)
    exact = kx.function(w3, backend="numba")
    np.testing.assert_array_equal(exact(*args), w3(*args))  # bitwise: NumPy's loops
    assert not np.array_equal(got, w3(*args))
    kernels = [
        cf.executable.segments[0]["kernel"]
        for cf in (approx.get_concrete_function(*args), exact.get_concrete_function(*args))
    ]
    assert kernels[0] != kernels[1]


def test_fast_math_is_refused_without_a_numba_backend():
    with pytest.raises(ValueError, match="fast_math"):
        kx.function(lambda x: np.exp(x), backend="numpy", fast_math=True)


def test_fast_math_applies_to_whole_graph_functions():
    def body(x):
        return np.tanh(x) * 2.0 + np.exp(-x)

    x = np.linspace(-5, 5, 4096).astype(np.float32)
    f = kx.function(body, jit_compile=True, fast_math=True)
    got = f(x)
    cf = f.get_concrete_function(x)
    cf.executable.wait(300)
    got = f(x)
    assert cf.executable.segments[0]["kind"] == "whole-graph"
    assert cf.executable.segments[0]["state"] == "ready"
    assert "_fm_tanh_float32" in cf.executable.source or not np.array_equal(got, body(x))
    np.testing.assert_allclose(got, body(x), rtol=1e-6, atol=0)


@pytest.mark.parametrize("dtype, vector", [(np.float32, "x float>"), (np.float64, "x double>")])
def test_fast_math_kernels_vectorise(dtype, vector, tmp_path, monkeypatch):
    def w3(x, a, b, c):
        return np.tanh(a * x + b) * (1 / (1 + np.exp(-x))) + np.sin(x) - np.log(c)

    x = np.ones(16, dtype)
    graph = kx.function(w3, backend="numpy").get_concrete_function(x, x, x, x).graph
    (seg,) = partition(graph, lambda n: codegen.can_compile(n, fast_math=True))
    ksrc = codegen.generate(seg, fast_math=True)
    assert "_call_loop(" not in ksrc.source.split("def k_flat")[1]  # no NumPy loop calls
    # compiled afresh (code loaded from Numba's disk cache carries no LLVM IR to inspect)
    monkeypatch.setenv("KERNEL_EXT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    kernel_cache.forget(kernel_cache.entry_name(ksrc.source))
    dispatcher, hit = numba_cpu.compile_variant(ksrc, "flat")
    assert not hit
    llvm = dispatcher.inspect_llvm(dispatcher.signatures[0])
    assert f"<8 {vector}" in llvm or f"<16 {vector}" in llvm or f"<4 {vector}" in llvm
