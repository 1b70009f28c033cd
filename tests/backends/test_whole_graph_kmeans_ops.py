"""``jit_compile=True`` with argmin/argmax along an axis, ``ufunc.at`` and ``bincount`` (a
k-means step, W13), and short sums along the last axis written out in NumPy's order (both
executors). Every result is compared with NumPy's bit for bit, and every jit case checks that
the graph really compiled as one function.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import backends
from kernel_ext.backends.sharing import SharedExecutables
from kernel_ext.passes import short_sums

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow


def _same(got, want, what: str = "") -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (what, g.dtype, w.dtype, g.shape, w.shape)
    assert g.tobytes() == w.tobytes(), (what, g, w)


def _compiled(f, *args):
    g = kx.function(f, jit_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        g(*args)
    main = [
        s for s in g.get_concrete_function(*args).executable.segments if s.get("role") != "fallback"
    ]
    assert [s["kind"] for s in main] == ["whole-graph"] and main[0]["state"] == "ready", main
    return g


def _check(f, *args) -> None:
    """Whole-graph and NumPy agree bit for bit (outputs as tuples or single arrays)."""
    with np.errstate(all="ignore"):
        want = f(*args)
    got = _compiled(f, *args)(*args)
    if isinstance(want, tuple):
        for k, (a, b) in enumerate(zip(got, want)):
            _same(a, b, f"output {k}")
    else:
        _same(got, want)


def _kmeans(pts, centres):
    d = np.sum((pts[:, None, :] - centres[None, :, :]) ** 2, axis=2)
    lab = np.argmin(d, axis=1)
    sums = np.zeros_like(centres)
    np.add.at(sums, lab, pts)
    counts = np.bincount(lab, minlength=centres.shape[0])
    return sums / np.maximum(counts, 1)[:, None]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 500])
def test_a_kmeans_step_is_numpys_bit_for_bit_on_both_executors(dtype, n, unshared):
    rng = np.random.default_rng(n)
    pts = rng.standard_normal((n, 8)).astype(dtype)
    centres = rng.standard_normal((16, 8)).astype(dtype)
    want = _kmeans(pts, centres)
    _same(_compiled(_kmeans, pts, centres)(pts, centres), want, "jit_compile")
    _same(kx.function(_kmeans)(pts, centres), want, "auto")


def _arg_all(x):
    return (
        np.argmin(x, axis=0),
        np.argmax(x, axis=1),
        np.argmin(x, axis=-1, keepdims=True),
        np.argmax(x),
        np.argmin(x, keepdims=True),
        np.argmax(x[1]),
    )


@pytest.mark.parametrize(
    "x",
    [
        np.array([[3.0, 1.0, 1.0, 2.0], [np.nan, 0.0, np.nan, -1.0], [-0.0, 0.0, 5.0, 5.0]]),
        np.array(
            [[2.0, np.inf, -np.inf], [np.inf, np.inf, 1.0], [-np.inf, -np.inf, np.nan]], np.float32
        ),
        np.array([[4, 4, -9], [7, -9, 7], [0, 0, 0]], np.int16),
        np.array([[True, False, True], [False, False, False], [True, True, True]]),
        np.arange(24, dtype=np.uint8).reshape(2, 3, 4)[:, ::-1, 1:],
    ],
    ids=["nan-first", "inf-f32", "int16-ties", "bool", "uint8-view-3d"],
)
def test_argmin_and_argmax_agree_nans_ties_and_axes(x):
    _check(_arg_all, x)


def test_argmin_of_an_empty_axis_raises_numpys_error():
    f = _compiled(lambda x: np.argmin(x, axis=1), np.ones((2, 3)))
    spec = [kx.TensorSpec([None, None], np.float64)]
    g = kx.function(lambda x: np.argmin(x, axis=1), jit_compile=True, input_signature=spec)
    _same(g(np.ones((2, 3))), f(np.ones((2, 3))))
    with pytest.raises(ValueError):
        g(np.ones((2, 0)))


def _at(base, idx, vals, scalar):
    a = base.copy()
    np.add.at(a, idx, vals)
    np.subtract.at(a, idx[::2], vals[::2])
    b = base[:, 0].copy()
    np.multiply.at(b, idx, scalar)
    return a, b


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8])
def test_ufunc_at_adds_in_index_order(dtype):
    """Repeated indices accumulate one after the other, as NumPy's unbuffered loop does (a
    float sum in another order would differ in the last bits); ints wrap."""
    rng = np.random.default_rng(5)
    base = (rng.standard_normal((6, 3)) * 100).astype(dtype)
    idx = rng.integers(-6, 6, 200)
    vals = (rng.standard_normal((200, 3)) * 1e3).astype(dtype)
    _check(_at, base, idx, vals, dtype(3))


def test_ufunc_at_out_of_range_raises_numpys_error():
    base, vals = np.zeros((4, 2)), np.ones((3, 2))
    g = _compiled(_at, base, np.array([0, 1, 2]), vals, np.float64(2.0))
    with pytest.raises(IndexError):
        g(base, np.array([0, 4, 1]), vals, np.float64(2.0))
    with pytest.raises(IndexError):
        g(base, np.array([0, -5, 1]), vals, np.float64(2.0))


@pytest.mark.parametrize(
    "x",
    [
        np.array([0, 3, 3, 1, 9]),
        np.array([], np.int64),
        np.array([True, False, True]),
        np.array([2, 2], np.uint16),
    ],
)
def test_bincount_with_and_without_minlength(x):
    _check(lambda v: (np.bincount(v), np.bincount(v, minlength=6)), x)


def test_bincount_of_a_negative_value_raises_numpys_error():
    f = lambda v: np.bincount(v, minlength=3) * 2  # noqa: E731
    g = _compiled(f, np.array([0, 1]))
    with pytest.raises(ValueError):
        g(np.array([0, -1]))


# -- short sums ------------------------------------------------------------------------------


@pytest.fixture
def unshared(monkeypatch):
    """No executor shared with an earlier test's trace of another size: a shared one is
    compiled from a graph with unknown sizes, whose sums are not written out (a kernel sums
    them, within the documented bound), and these tests check the written-out ones."""
    monkeypatch.setattr(backends, "SHARED", SharedExecutables())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 5, 7, 8, 9, 15, 16])
def test_short_sums_are_numpys_order_bit_for_bit(dtype, n, unshared):
    """Terms of wildly different magnitudes (so any other order shows), signed zeros too."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((300, n)) * 10.0 ** rng.integers(-6, 7, (300, n))).astype(dtype)
    x[:7] = -0.0
    y = rng.standard_normal(n).astype(dtype)

    def f(x, y):
        return np.sum(x * y - 1.5, axis=1), np.sum(np.abs(x[:, None, :] * y), axis=-1)

    _check(f, x, y)
    want = f(x, y)
    got = kx.function(f)(x, y)
    for a, b in zip(got, want):
        _same(a, b, "auto")


def test_only_qualifying_sums_are_written_out():
    def f(x, i):
        a = np.sum(x * 2.0, axis=1)  # written out
        b = np.sum(x * 3.0, axis=0)  # not the last axis
        c = np.sum(x * 4.0, axis=1, keepdims=True)
        e = x * 5.0
        d = np.sum(e, axis=1) + e[0, 0]  # the expression is read elsewhere
        n = np.sum(i * 2, axis=1)  # an integer sum (its dtype is int64)
        return a, b, c, d, n

    x = np.ones((4, 3), np.float32)
    i = np.ones((4, 3), np.int32)
    graph = kx.function(f, backend="numpy").get_concrete_function(x, i).graph
    new, changed = short_sums.unroll_short_sums(graph)
    assert changed
    sums = [n for n in new.nodes if n.op.value == "sum"]
    assert len(sums) == 4
    assert sum(short_sums.is_term(n) for n in new.nodes) == 3  # (0 + t0) + t1 + t2
    # nothing qualifying, nothing changed
    assert (
        short_sums.unroll_short_sums(
            kx.function(lambda x: np.sum(x, axis=0), backend="numpy").get_concrete_function(x).graph
        )[1]
        is False
    )


def test_a_long_axis_keeps_its_sum():
    x = np.ones((4, short_sums.MAX_TERMS + 1))
    graph = (
        kx.function(lambda x: np.sum(x * 2.0, axis=1), backend="numpy")
        .get_concrete_function(x)
        .graph
    )
    assert short_sums.unroll_short_sums(graph)[1] is False


def test_small_auto_calls_keep_numpys_sum():
    """Under auto, a sum too small to fuse stays one NumPy call (written out it would be
    ~4 NumPy calls per element of the axis)."""

    def f(x):
        return np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=2)

    x = np.random.default_rng(1).standard_normal((3, 4))
    g = kx.function(f)
    _same(g(x), f(x))
    source = g.get_concrete_function(x).executable.source
    assert ".sum(" in source or "_sum" in source
