"""Integer arithmetic in compiled code wraps exactly as NumPy's, on every width.

Numba lowers signed ``+``, ``-`` and ``*`` with LLVM's ``nsw`` flag (overflow is undefined),
and LLVM then proves things NumPy's wrapping integers do not satisfy: ``(x + 1) > x`` becomes
``True``, ``abs(x - 5)`` becomes non-negative, ``max - min`` keeps its sign. Generated kernels
use wrapping intrinsics instead (``numba_decorators.wrapping_add`` ...); these tests hold every
backend that compiles code — fused kernels (``backend="numba"``), ``auto`` once a kernel is
hot, and whole graphs (``jit_compile=True``) — to NumPy's bits where the arithmetic overflows
on purpose.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends import fused

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
MODES = ["numba", "jit", "auto-hot"]


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable, str], Callable]:
    """``compiled(fn, mode)``: ``fn`` under one of :data:`MODES` (``auto-hot``: backend
    "auto" with kernels compiled from the first call, as they are once hot)."""
    monkeypatch.setattr(fused, "HOT_ELEMENTS", 0)

    def make(fn: Callable, mode: str) -> Callable:
        if mode == "jit":
            return kx.function(fn, jit_compile=True)
        return kx.function(fn, backend="auto" if mode == "auto-hot" else "numba")

    return make


def _bitwise(got: Any, want: Any, what: str) -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} != {w.dtype}"
    assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
    assert g.tobytes() == w.tobytes(), f"{what}: {g.ravel()[:6]} != {w.ravel()[:6]}"


def _run(f: Callable, *args: Any) -> Any:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        f(*args)  # compiles (synchronously in backend tests)
        return f(*args)


def _eager(fn: Callable, *args: Any) -> Any:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


def _extremes(dtype: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    top = np.full(n, info.max, dtype)
    bottom = np.full(n, info.min, dtype)
    return top, bottom


def _gt_after_increment(x):
    return (x + 1) > x


def _lt_after_decrement(x):
    return (x - 1) < x


def _abs_of_difference(x):
    return np.abs(x - 5), np.abs(x - 5) >= 0


def _max_minus_min(a, b):
    return np.maximum(a, b) - np.minimum(b, a)


def _doubled_halved(x):
    return (x * 2) // 2 == x


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_overflowing_integer_arithmetic_wraps_as_numpy(compiled, mode, dtype):
    """The issue's expressions at each dtype's extremes, 2,048 elements (auto fuses them)."""
    n = 2048
    top, bottom = _extremes(dtype, n)
    m = (bottom + np.array(5, dtype)).astype(dtype)  # abs(m - 5) at the minimum
    cases = [
        (_gt_after_increment, (top,)),
        (_lt_after_decrement, (bottom,)),
        (_abs_of_difference, (m,)),
        (_max_minus_min, (top, bottom)),
        (_doubled_halved, (top,)),
    ]
    for fn, args in cases:
        got = _run(compiled(fn, mode), *args)
        want = _eager(fn, *args)
        for k, (g, w) in enumerate(
            zip(
                got if isinstance(got, tuple) else (got,),
                want if isinstance(want, tuple) else (want,),
            )
        ):
            _bitwise(g, w, f"{fn.__name__} output {k} ({mode})")


def _sum_of_increments(x):
    return np.sum(x * 3 + 1), np.sum((x + 1) > x)


def _prod_of_squares(x):
    return np.prod(x * x + 1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "dtype", [np.int8, np.int32, np.int64, np.uint32, np.uint64], ids=lambda d: np.dtype(d).name
)
def test_overflowing_integer_reductions_wrap_as_numpy(compiled, mode, dtype):
    """300,001-element sums and products whose terms and totals overflow (split over the
    cores where the executor splits)."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(13)
    x = rng.integers(info.min, info.max, 300_001, dtype=dtype, endpoint=True)
    x[:3] = [info.max, info.min, info.max - 1]
    for fn in (_sum_of_increments, _prod_of_squares):
        got = _run(compiled(fn, mode), x)
        want = _eager(fn, x)
        for k, (g, w) in enumerate(
            zip(
                got if isinstance(got, tuple) else (got,),
                want if isinstance(want, tuple) else (want,),
            )
        ):
            _bitwise(g, w, f"{fn.__name__} output {k} ({mode}, {np.dtype(dtype).name})")


def _powers(x, e):
    return x**e + x, np.square(x) - 1


@pytest.mark.parametrize("mode", ["numba", "jit"])
@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint64], ids=lambda d: np.dtype(d).name)
def test_integer_powers_wrap_as_numpy(compiled, mode, dtype):
    x = np.array([3, 7, -3, 2, 5, 127, -128, 99][:8], dtype=np.int64).astype(dtype)
    e = np.array([50, 41, 63, 64, 27, 2, 3, 33], dtype=dtype)
    got = _run(compiled(_powers, mode), x, e)
    want = _eager(_powers, x, e)
    for k, (g, w) in enumerate(zip(got, want)):
        _bitwise(g, w, f"powers output {k} ({mode})")


def _matmul_loop(a, b):
    r = a
    for _ in kx.range(3):
        r = r @ b + 1
    return r


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_whole_graph_integer_products_wrap_as_numpy(dtype):
    """The whole-graph compiler's own integer matmul loop wraps in the dtype, as NumPy's."""
    info = np.iinfo(dtype)
    a = np.full((5, 6), info.max // 3, dtype)
    b = np.full((6, 6), info.max // 5 + 7, dtype)
    f = kx.function(_matmul_loop, jit_compile=True)
    got = _run(f, a, b)
    want = kx.function(_matmul_loop, backend="numpy")(a, b)
    _bitwise(got, want, "matmul loop")
    kinds = [s.get("kind") for s in f.get_concrete_function(a, b).executable.segments]
    assert "whole-graph" in kinds, kinds
