"""Fused lowerings reproduce NumPy's signed zeros and NaN bit patterns.

``-0.0 == 0.0`` and every NaN compares unequal, so a value test cannot see these: each check
compares raw bits (``.view(np.uint64)``). The CPU kernels (``backend="numba"``) and the
whole-graph compiler (``jit_compile=True``) are checked here, the CUDA simulator in
``cuda_sim_cases.py`` (``test_signed_zeros_and_nan_payloads_on_the_device``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from programs import nan_with_payload

import kernel_ext as kx

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow

MODES = {"numba": {"backend": "numba"}, "jit": {"jit_compile": True}}
FLOATS = [np.float32, np.float64]


def _bits(value: Any) -> list[str]:
    a = np.atleast_1d(np.asarray(value))
    return [hex(v) for v in a.view(f"u{a.dtype.itemsize}").ravel()]


def _check(fn: Callable, args: tuple, mode: str) -> None:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = fn(*args)
        f = kx.function(fn, **MODES[mode])
        f(*args)
        got = f(*args)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for k, (g, w) in enumerate(zip(got, want)):
        assert np.asarray(g).dtype == np.asarray(w).dtype, (fn.__name__, k)
        assert _bits(g) == _bits(w), (
            f"{fn.__name__} output {k} ({mode}): {_bits(g)[:8]} != NumPy's {_bits(w)[:8]}"
        )


def _zeros(dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    z = np.array([-0.0, 0.0, -0.0, 0.0] * 8, dtype)
    w = np.array([0.0, -0.0, -0.0, 0.0] * 8, dtype)
    return z, w


def _max_min(z, w):
    return np.maximum(z, w) * 1.0, np.minimum(z, w) * 1.0, np.maximum(w, z) + 0.0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_maximum_and_minimum_of_signed_zeros_return_numpys_zero(mode, dtype):
    """NumPy's maximum/minimum return the second operand on a tie: maximum(-0.0, 0.0) is
    +0.0, maximum(0.0, -0.0) is -0.0."""
    _check(_max_min, _zeros(dtype), mode)


def _clip_zero(z):
    return np.clip(z, 0, 3) * 1.0, np.clip(z * 1.0, -0.0, 0.0), np.clip(z, None, 0.0) * 1.0


def _clip_nan_bounds(x, lo, hi):
    return (
        np.clip(x * 1.0, np.nan, 3),
        np.clip(x * 1.0, -1.0, -np.nan),
        np.clip(x * 1.0, lo, hi),
        np.clip(x * 1.0, lo, 2.0),
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_clip_returns_numpys_signed_zero_and_nan(mode, dtype):
    """clip(-0.0, 0, 3) is -0.0 (NumPy's scalar-bound loop keeps x on a tie); a NaN bound's
    own bits come back; array bounds follow NumPy's maximum-then-minimum."""
    z, _ = _zeros(dtype)
    _check(_clip_zero, (z,), mode)
    x = np.array([1.0, -0.0, 0.0, 5.0, -3.0, np.inf] * 4, dtype)
    x[::5] = nan_with_payload(dtype, 0x1234)
    lo = np.array([0.0, 0.0, -0.0, 1.0] * 6, dtype)
    lo[1::7] = nan_with_payload(dtype, 0x99, negative=True)
    hi = np.full(24, 4.0, dtype)
    hi[2::9] = nan_with_payload(dtype, 0x5)
    _check(_clip_nan_bounds, (x, lo, hi), mode)


def _clip_int_beyond_range(x):
    return np.clip(x, np.inf, 2**64 - 1) + 0.0, np.clip(x, -(2**70), 2.5) * 1.0


@pytest.mark.parametrize("mode", MODES)
def test_clip_drops_python_int_bounds_beyond_an_integer_dtype_as_numpy_does(mode):
    """np.clip ignores a Python int bound at or past an integer array's range (and then
    computes maximum/minimum): clip(int64, inf, 2**64 - 1) is inf, not 1.8e19."""
    x = np.arange(-6, 6, dtype=np.int64).reshape(3, 4)
    _check(_clip_int_beyond_range, (x,), mode)


def _heaviside(x):
    return np.heaviside(x, 0.5) * 1.0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_heaviside_of_a_nan_is_numpys_nan(mode, dtype):
    """NumPy answers heaviside(NaN, h) with its NaN constant, not the argument's payload."""
    x = np.array([nan_with_payload(dtype, 0x77, negative=True), 1.0, -2.0, 0.0] * 4, dtype)
    _check(_heaviside, (x,), mode)


def _invalid_from_constants(b, z):
    return (
        np.where(z == 0, np.inf, 1.0) - np.inf,
        np.divide(b, False) * 1.0,
        (b * 0.0) * np.where(b, np.inf, -np.inf),
        np.true_divide(b.astype(np.float32), np.float32(0)) + np.float32(0),
    )


@pytest.mark.parametrize("mode", MODES)
def test_invalid_operations_on_constants_give_the_cpus_nan(mode):
    """inf - inf, 0 / 0 and 0 * inf where both operands are constants to LLVM (literals,
    ``where`` of literals, bools cast to floats) are folded at compile time into LLVM's
    +nan; NumPy computes them and gets the CPU's NaN (-nan on x86)."""
    b = np.array([False, True, True, False] * 5)
    z = np.array([0.0, 1.0, -0.0, 2.0] * 5)
    _check(_invalid_from_constants, (b, z), mode)


def _negated_nans(x, y):
    n = -x
    return n + y, n - n, y * -1.0, (n * 2.0) + y, -0.0 - x


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_negated_nans_keep_numpys_sign(mode, dtype):
    """LLVM moves a negation through arithmetic (``(-a) + b`` becomes ``b - a``, ``x * -1``
    becomes ``-x``), which flips a NaN's sign bit; NumPy's instructions keep the NaN operand
    as it is."""
    x = np.array([nan_with_payload(dtype, 0xAF42), 1.0, -2.0, 0.0] * 4, dtype)
    x[2::4] = nan_with_payload(dtype, 0x31, negative=True)
    y = np.array([0.5, np.inf, 3.0, -1.0] * 4, dtype)
    _check(_negated_nans, (x, y), mode)
