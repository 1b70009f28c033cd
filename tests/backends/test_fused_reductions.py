"""Fused reductions and the flat runner's output buffers.

Reductions fold element ``blk + j`` into lane ``j`` and fold the lanes pairwise every
``CHUNK_BLOCKS`` blocks (docs/backends.md, Exactness): integer and bool results are bitwise
NumPy's at every length and thread split, float sums and means are within
``8·eps·Σ|xᵢ|`` of NumPy's even for long float64 sums, and ``backend="auto"`` fuses float
sums and means (not float max/min or products). Flat runners reuse their previous large
output only when nothing else can see it.
"""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends import codegen, compiler, fused, runners

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _sync():
    old = fused.set_synchronous(True)
    yield
    fused.set_synchronous(old)


def _same(got, want, what: str) -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, what
    np.testing.assert_array_equal(g, w, err_msg=what)


def _within_bound(got, want, terms, what: str, count: int = 1) -> None:
    """``|fused − NumPy| ≤ 8·eps·Σ|terms| / count`` (eps of the result dtype)."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, what
    total = np.sum(np.abs(np.asarray(terms, dtype=np.float64)), axis=None) / count
    bound = 8 * np.finfo(w.dtype).eps * total
    err = np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))
    assert err <= bound, f"{what}: |{g} - {w}| = {err} > {bound}"


BLOCK, CHUNK = codegen.BLOCK, codegen.CHUNK_BLOCKS
# around a block, a chunk of blocks and the cascade's carries; the large ones run threaded
SIZES = [
    1,
    5,
    BLOCK - 1,
    BLOCK,
    BLOCK + 1,
    CHUNK * BLOCK - 3,
    CHUNK * BLOCK,
    CHUNK * BLOCK + 1,
    3 * CHUNK * BLOCK + 1000,
    700_001,
]


@pytest.mark.parametrize("n", SIZES)
def test_integer_and_bool_reductions_are_bitwise_at_every_length(n):
    rng = np.random.default_rng(n)
    i = rng.integers(-1000, 1000, n).astype(np.int32)
    u = rng.integers(0, 200, n).astype(np.uint8)

    def f(i, u):
        return (
            np.sum(i * 3 - 7),
            np.max(i * 2),
            np.min(i - 5),
            np.any(i > 990),
            np.all(u < 199),
            np.sum(u + u),
            np.prod(i % 3 + 1 - 1 + 1),
        )

    want = f(i, u)
    got = kx.function(f, backend="numba")(i, u)
    for k, (g, w) in enumerate(zip(got, want)):
        _same(g, w, f"n={n} output {k}")


@pytest.mark.parametrize("n", SIZES)
def test_float_sums_are_within_the_bound_at_every_length(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n)

    def f(x, y):
        return np.mean((x - 1.5) ** 2), np.sum(y * 3.0), np.max(x * 2.0)

    got = kx.function(f, backend="numba")(x, y)
    want = f(x, y)
    _within_bound(got[0], want[0], (x - np.float32(1.5)) ** 2, f"n={n} mean", count=n)
    _within_bound(got[1], want[1], y * 3.0, f"n={n} sum")
    _same(got[2], want[2], f"n={n} max")


@pytest.mark.parametrize("layout", ["flat", "transposed", "rows"])
def test_long_float64_sums_stay_within_the_bound(layout):
    """4M positive float64 terms: one running sum per lane would drift past the bound
    (its error grows like the square root of its length); the pairwise fold does not."""
    rng = np.random.default_rng(7)
    x = rng.random(4_000_000) + 1.0
    if layout == "flat":

        def f(x):
            return np.sum(x * 1.5)
    elif layout == "transposed":
        x = x.reshape(2000, 2000).T

        def f(x):
            return np.sum(x * 1.5)
    else:
        x = x.reshape(4, 1_000_000)

        def f(x):
            return np.sum(x * 1.5, axis=-1)

    got = kx.function(f, backend="numba")(x)
    want = f(x)
    if layout == "rows":
        for r in range(x.shape[0]):
            _within_bound(got[r], want[r], x[r] * 1.5, f"row {r}")
    else:
        _within_bound(got, want, x * 1.5, layout)


def test_auto_fuses_float_means_but_keeps_max_and_products_in_numpy():
    """W4's shape: the mean joins the kernel once it is hot (one call here processes more
    than ``HOT_ELEMENTS``); float max/min and products stay NumPy's."""
    rng = np.random.default_rng(4)
    n = compiler.HOT_ELEMENTS + 4097
    yt, yp = (rng.standard_normal(n).astype(np.float32) for _ in range(2))

    def w4(yt, yp):
        return np.mean((yt - yp) ** 2)

    f = kx.function(w4)
    got = f(yt, yp)
    (seg,) = f.get_concrete_function(yt, yp).executable.segments
    assert seg["ops"] == ["subtract", "square", "mean"] and seg["state"] == "ready", seg
    _within_bound(got, w4(yt, yp), (yt - yp) ** 2, "auto mean", count=n)
    got = f(yt, yp)  # the kernel's result now (the first call compiled it)
    _within_bound(got, w4(yt, yp), (yt - yp) ** 2, "auto mean (kernel)", count=n)

    def others(x):
        return np.max(x * 2.0 + 1.0), np.prod(x * 0.5 + 1.0), np.sum((x * 2).astype(np.int64))

    g = kx.function(others)
    _same(g(yt)[0], others(yt)[0], "auto max")
    ops = [s["ops"] for s in g.get_concrete_function(yt).executable.segments]
    assert all("max" not in o and "prod" not in o for o in ops), ops
    for k, (a, b) in enumerate(zip(g(yt), others(yt))):
        _same(a, b, f"auto output {k}")


def test_a_dropped_output_is_reused_and_a_visible_one_never():
    n = (runners.RECYCLE_BYTES // 4) + 10
    x = np.arange(n, dtype=np.float32)

    def f(x, k):
        return np.tanh(x * k + 1.0) * x

    g = kx.function(f, backend="numba")
    ks = [np.float32(v) for v in (0.5, 1.5, 2.5, 3.5, 4.5, 5.5)]
    held = g(x, ks[0])
    nxt = g(x, ks[1])
    assert nxt is not held
    _same(held, f(x, ks[0]), "held result untouched")
    ident = id(nxt)
    del nxt
    gc.collect()
    again = g(x, ks[2])
    assert id(again) == ident, "a dropped output is reused"
    _same(again, f(x, ks[2]), "reused result")
    view = again[::3]
    del again
    other = g(x, ks[3])
    _same(view, f(x, ks[2])[::3], "a view keeps its base")
    ref = weakref.ref(other)
    del other
    fresh = g(x, ks[4])
    # not reused: once the runner lets it go it is gone, or else unchanged
    assert ref() is not fresh, "a weakly referenced output is never reused"
    if ref() is not None:
        _same(ref(), f(x, ks[3]), "weakly referenced result untouched")
    _same(fresh, f(x, ks[4]), "fresh")


def test_threads_sharing_a_runner_never_share_an_output():
    n = (runners.RECYCLE_BYTES // 4) + 10
    x = np.linspace(-2, 2, n).astype(np.float32)

    def f(x, k):
        return np.exp(x * k) - k

    g = kx.function(f, backend="numba")
    g(x, np.float32(0.0))
    errors: list[str] = []

    def work(t: int) -> None:
        for r in range(6):
            k = np.float32(t + r / 8)
            got = g(x, k)
            if not np.array_equal(got, f(x, k)):
                errors.append(f"thread {t} round {r}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# Shapes whose reduced axis is not the innermost: NumPy adds the rows one after another in
# float32 there (no pairwise summation), and the fused kernel does the same, so its sums and
# means are NumPy's to the bit (W8's bias gradients are such column sums).
ROW_BY_ROW = [
    ((256, 256), 0),
    ((1000, 2), 0),
    ((3, 1000), 0),
    ((7, 5, 300), 0),
    ((7, 500, 30), 1),
    ((7, 500, 30), 0),
    ((4096, 16), 0),
    ((2, 3), 0),
    ((5, 1, 40), 0),
]


@pytest.mark.parametrize("shape,axis", ROW_BY_ROW)
def test_float32_sums_over_an_outer_axis_are_bitwise_numpy(shape, axis):
    rng = np.random.default_rng(sum(shape) + axis)
    # magnitudes over six decades: float32 row-by-row rounding shows in nearly every column
    g = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 3, shape)).astype(np.float32)
    mask = rng.random(shape) > 0.4
    bias = rng.standard_normal(shape[-1]).astype(np.float32)

    def f(mask, g, bias):
        w = np.where(mask, g, 0.0)
        return (
            w,
            np.sum(w, axis=axis),
            np.mean(g * 2.0 + bias, axis=axis, keepdims=True),
            np.sum(g, axis=axis),
        )

    got = kx.function(f, backend="numba")(mask, g, bias)
    for k, (a, b) in enumerate(zip(got, f(mask, g, bias))):
        _same(a, b, f"{shape} axis {axis} output {k}")
    if shape[axis] == 2:
        return  # one addition per column: every order rounds alike
    float64_order = np.sum(g.astype(np.float64), axis=axis).astype(np.float32)
    assert not np.array_equal(float64_order, f(mask, g, bias)[3]), (
        "the data must tell float32 row-by-row sums from float64 ones"
    )


@pytest.mark.parametrize("case", ["fortran", "transposed", "innermost"])
def test_outer_axis_sums_numpy_sums_pairwise_stay_within_the_bound(case):
    """Where NumPy's order is not row by row — the array it reduces is F-ordered, or the
    reduced axis is innermost once size-1 axes are dropped — the kernel accumulates in
    float64, within the documented bound (float32 running sums would not be)."""
    rng = np.random.default_rng(11)
    shape = (20_000, 1) if case == "innermost" else (5000, 6)
    g = (rng.random(shape) + 1.0).astype(np.float32)
    if case == "fortran":
        g = np.asfortranarray(g)
    elif case == "transposed":
        g = np.ascontiguousarray(g.T).T

    def f(g):
        return np.sum(g * 3.0, axis=0), np.mean(g - 0.5, axis=0)

    got = kx.function(f, backend="numba")(g)
    want = f(g)
    for c in range(shape[1]):
        _within_bound(got[0][c], want[0][c], g[:, c] * np.float32(3.0), f"{case} sum {c}")
        _within_bound(
            got[1][c], want[1][c], g[:, c] - np.float32(0.5), f"{case} mean {c}", count=shape[0]
        )


def test_outer_axis_reductions_of_broadcast_and_strided_inputs_match_numpy():
    """The ``nd`` kernel reads unit-stride rows in place and copies the others (a column
    broadcast along the row, a strided view) into a block buffer: results stay NumPy's."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 2500)).astype(np.float32)
    col = rng.standard_normal((300, 1)).astype(np.float32)
    strided = rng.standard_normal((300, 5000)).astype(np.float32)[:, ::2]

    def f(x, col, s):
        return np.maximum(x + col, 0.0) * s, np.sum(x * col, axis=0)

    got = kx.function(f, backend="numba")(x, col, strided)
    want = f(x, col, strided)
    _same(got[0], want[0], "map over broadcast and strided rows")
    # the sum reads only C-contiguous inputs (the strided one feeds the map alone)
    _same(got[1], want[1], "outer-axis sum of a column broadcast")
