"""CUDA kernels under Numba's CUDA simulator (run in their own process by
``test_cuda_simulator.py``: the simulator must be chosen before Numba is imported).

Launches stay tiny (one or two blocks of 32 threads: every simulated CUDA thread is a Python
thread). On a machine with a real GPU, the ``gpu`` tests run the same kernels for real.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from programs import make_fusible_program

import kernel_ext as kx
from kernel_ext.backends import fused

DEVICE_MATH = ("exp", "log", "tanh", "sqrt")


@pytest.fixture(autouse=True)
def _sync():
    old = fused.set_synchronous(True)
    yield
    fused.set_synchronous(old)


def _programs(limit: int, max_size: int = 600):
    found, seed = [], 0
    while len(found) < limit:
        prog = make_fusible_program(seed)
        seed += 1
        if max(np.size(x) for x in prog.inputs) <= max_size:
            found.append((seed - 1, prog))
    return found


def _compare(got, want, approx: bool, what: str) -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, what
    if approx and w.dtype.kind == "f":
        tol = 1e-5 if w.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, w, err_msg=what)


def test_the_simulator_is_on():
    from numba import config

    assert config.ENABLE_CUDASIM
    assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


@pytest.mark.parametrize("chunk", range(2))
def test_cuda_kernels_agree_with_numpy(chunk):
    """NumPy eager == NumPy executor == CUDA kernels: exact, except where device math
    (exp/log/tanh) or a float reduction's summation order enters (a few ulp)."""
    fused_segments = 0
    for seed, prog in _programs(30)[chunk::2]:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = kx.function(prog, backend="numpy")(*prog.inputs)
            f = kx.function(prog, backend="cuda")
            got = f(*prog.inputs)
        segments = f.get_concrete_function(*prog.inputs).executable.segments
        assert all(s["state"] in ("ready", "pending") for s in segments), segments
        fused_segments += sum(s["state"] == "ready" for s in segments)
        text = prog.describe()
        approx = any(m + "(" in text for m in DEVICE_MATH) or prog.reduced is not None
        for k, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, approx, f"seed {seed}: {text} -> {k}")
    assert fused_segments >= 5  # the kernels really ran


def test_a_fused_chain_and_its_reduction_on_the_device():
    x = np.linspace(-2, 2, 90).astype(np.float32)
    i = np.arange(90, dtype=np.int32)

    def f(x, i):
        y = np.tanh(x * 0.5 + 1.0) * x - 0.25
        return y, np.sum(i * i - 3), np.max(y), np.mean(y * y), np.any(i > 80)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = kx.function(f, backend="cuda")(x, i)
    want = f(x, i)
    cf = kx.function(f, backend="cuda").get_concrete_function(x, i)
    assert cf.executable.backend in ("numba-cuda-sim", "numba-cuda")
    _compare(got[0], want[0], True, "map")
    _compare(got[1], want[1], False, "int sum")
    _compare(got[2], want[2], True, "max")
    _compare(got[3], want[3], True, "mean")
    _compare(got[4], want[4], False, "any")


def test_values_only_numpy_defines_fall_back_on_cuda_too():
    x = np.array([1.5, np.nan, -2.0], np.float32)

    def f(x):
        return (x * 2.0).astype(np.int32) + 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = kx.function(f, backend="cuda")(x)
        want = f(x)
    _compare(got, want, False, "cast")


def _count_inputs(monkeypatch) -> list[bool]:
    """Record, for every kernel input, whether it was on the device already."""
    from kernel_ext.backends import numba_cuda

    seen: list[bool] = []
    real = numba_cuda._input

    def spy(a, shape):
        seen.append(numba_cuda.on_device(a))
        return real(a, shape)

    monkeypatch.setattr(numba_cuda, "_input", spy)
    return seen


def test_intermediates_between_segments_stay_on_the_device(monkeypatch):
    """``y / sum(y)``: ``y`` leaves the first kernel (with the sum) as a device array and the
    second kernel reads it there; only the inputs go over and the result comes back."""
    x = np.linspace(-1, 1, 50).astype(np.float32)

    def normalise(x):
        y = np.exp(x) * 2.0 + 1.0
        return y / np.sum(y)

    f = kx.function(normalise, backend="cuda")
    f(x)  # compiles the kernels (synchronously here)
    seen = _count_inputs(monkeypatch)
    got = f(x)
    _compare(got, normalise(x), True, "normalise")
    cf = f.get_concrete_function(x)
    assert [seg["ops"] for seg in cf.executable.segments] == [
        ["exp", "multiply", "add", "sum"],
        ["divide"],
    ]
    assert seen == [False, True]  # x copied over; y read where the first kernel left it
    assert isinstance(got, np.ndarray)


def test_a_graph_input_goes_to_the_device_once_per_call(monkeypatch):
    from kernel_ext.backends import numba_cuda

    x = np.linspace(-1, 1, 40).astype(np.float32)

    def shifted(x):
        y = np.exp(x) * 2.0
        return y / np.sum(y) + x  # the second kernel reads y (device) and x again

    f = kx.function(shifted, backend="cuda")
    f(x)
    sent: list[np.ndarray] = []
    real = numba_cuda.cuda.to_device
    monkeypatch.setattr(
        numba_cuda.cuda,
        "to_device",
        lambda a, *args, **kw: sent.append(np.asarray(a)) or real(a, *args, **kw),
    )
    for _ in range(2):  # a second call copies x again: the memory is per call
        _compare(f(x), shifted(x), True, "shifted")
    data = [a for a in sent if a.dtype == np.float32]  # (the kernels' flags are int32)
    assert len(data) == 2 and all(np.array_equal(a, x) for a in data)


def test_broadcast_inputs_go_over_at_their_own_size(monkeypatch):
    from kernel_ext.backends import numba_cuda

    x = np.linspace(-1, 1, 6 * 8).astype(np.float32).reshape(6, 8)
    bias = np.linspace(0, 1, 8).astype(np.float32)
    col = np.arange(6, dtype=np.float32).reshape(6, 1)

    def affine(x, bias, col):
        return np.tanh(x * 2.0 + bias) - col * 0.5

    f = kx.function(affine, backend="cuda")
    f(x, bias, col)
    sent: list[tuple] = []
    real = numba_cuda.cuda.to_device
    monkeypatch.setattr(
        numba_cuda.cuda,
        "to_device",
        lambda a, *args, **kw: sent.append(np.shape(a)) or real(a, *args, **kw),
    )
    _compare(f(x, bias, col), affine(x, bias, col), True, "affine")
    # x, bias as (1, 8), col as (6, 1); col * 0.5 (its own (6, 1) kernel) stays on the device
    assert sorted(s for s in sent if s != (1,)) == [(1, 8), (6, 1), (6, 8)]
    assert [seg["ops"] for seg in f.get_concrete_function(x, bias, col).executable.segments] == [
        ["multiply"],
        ["multiply", "add", "tanh", "subtract"],
    ]


def test_values_read_by_host_code_come_back(monkeypatch):
    """An intermediate that host code (a matmul) also reads is copied back; the graph's
    results are host arrays."""
    x = np.linspace(-1, 1, 16).astype(np.float32).reshape(4, 4)

    def mixed(x):
        y = np.tanh(x) * 3.0 + 1.0
        return (y - np.max(y)) * 2.0, y @ y

    f = kx.function(mixed, backend="cuda")
    f(x)
    seen = _count_inputs(monkeypatch)
    got = f(x)
    want = mixed(x)
    for g, w, what in zip(got, want, ("map", "matmul")):
        assert isinstance(g, np.ndarray)
        _compare(g, w, True, what)
    assert not any(seen)  # y also feeds the matmul: it came back, so it goes over again


gpu = pytest.mark.skipif(
    "not __import__('kernel_ext.backends.numba_cuda_probe', fromlist=['x']).real_gpu_available()",
    reason="no real CUDA GPU",
)


@gpu
def test_a_large_chain_on_a_real_gpu():  # pragma: no cover - needs a GPU
    rng = np.random.default_rng(0)
    x, a, b, c = (rng.standard_normal(1_000_000).astype(np.float32) for _ in range(4))

    def w3(x, a, b, c):
        return np.tanh(a * x + b) * (1 / (1 + np.exp(-x))) + 0.5 * x * x - c

    got = kx.function(w3, backend="cuda")(x, a, b, c)
    np.testing.assert_allclose(got, w3(x, a, b, c), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Exactly NumPy on the device: wrapping integers, signed zeros, NaN payloads (bitwise)
# ---------------------------------------------------------------------------------------------


def _same_bits(got, want, what: str) -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, what
    assert g.tobytes() == w.tobytes(), f"{what}: {g.ravel()[:6]!r} != {w.ravel()[:6]!r}"


def _on_device(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = fn(*args)
        f = kx.function(fn, backend="cuda")
        f(*args)
        got = f(*args)
    segments = f.get_concrete_function(*args).executable.segments
    assert any(s["state"] == "ready" for s in segments), segments
    return (got if isinstance(got, tuple) else (got,)), (
        want if isinstance(want, tuple) else (want,)
    )


def _overflows(x, m):
    return (x + 1) > x, np.abs(m - 5), np.maximum(x, m) - np.minimum(m, x), np.sum(x * 3 + 1)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint64], ids=lambda d: np.dtype(d).name)
def test_integer_overflow_wraps_on_the_device(dtype):
    info = np.iinfo(dtype)
    x = np.full(40, info.max, dtype)
    m = np.full(40, info.min, dtype) + np.array(5, dtype)
    got, want = _on_device(_overflows, x, m)
    for k, (g, w) in enumerate(zip(got, want)):
        _same_bits(g, w, f"output {k}")


def _zeros_and_nans(z, w, x):
    return (
        np.maximum(z, w) * 1.0,
        np.minimum(z, w) * 1.0,
        np.clip(z, 0, 3) * 1.0,
        np.clip(x * 1.0, np.nan, 3),
        np.heaviside(x, 0.5) * 1.0,
        np.where(z == 0, np.inf, 1.0) - np.inf,
    )


def test_signed_zeros_and_nan_payloads_on_the_device():
    from programs import nan_with_payload

    z = np.array([-0.0, 0.0, -0.0, 0.0] * 5)
    w = np.array([0.0, -0.0, -0.0, 0.0] * 5)
    x = np.array([1.0, -0.0, 2.0, 0.0] * 5)
    x[::3] = nan_with_payload(np.float64, 0x4321, negative=True)
    got, want = _on_device(_zeros_and_nans, z, w, x)
    for k, (g, w_) in enumerate(zip(got, want)):
        _same_bits(g, w_, f"output {k}")


#: Numeric edge programs run on the device, as many as on each CPU backend (their sizes are
#: tiny: one or two simulated blocks); ``KX_NUMERIC_PROGRAMS`` adds the slow run's.
CUDA_NUMERIC_PROGRAMS = 240 + int(os.environ.get("KX_NUMERIC_PROGRAMS", "0"))


def test_numeric_edge_programs_are_bitwise_numpy_on_the_device(monkeypatch):
    """The CPU's numeric differential (``test_numeric_differential.py``) on CUDA kernels:
    bitwise, programs with device math (exp/tanh: libdevice, within ulps) left out."""
    from programs import bit_pattern, make_numeric_program

    from kernel_ext.backends import codegen

    monkeypatch.setattr(codegen, "BITWISE_ONLY", True)
    ran = seed = kernels = 0
    while ran < CUDA_NUMERIC_PROGRAMS:
        prog = make_numeric_program(seed)
        seed += 1
        if any(m + "(" in prog.describe() for m in DEVICE_MATH):
            continue
        ran += 1
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = prog(*prog.inputs)
            f = kx.function(prog, backend="cuda")
            f(*prog.inputs)
            got = f(*prog.inputs)
        segments = f.get_concrete_function(*prog.inputs).executable.segments
        kernels += sum(s["state"] == "ready" for s in segments)
        for k, (g, w) in enumerate(zip(got, want)):
            gb, wb = bit_pattern(g), bit_pattern(w)
            assert gb[1:] == wb[1:], f"seed {seed - 1}: {prog.describe()} -> {k}: {g!r} != {w!r}"
    assert kernels >= CUDA_NUMERIC_PROGRAMS // 2  # the kernels really ran
    print(f"\nCUDA simulator: {ran} numeric programs, {kernels} kernels, bitwise NumPy")
