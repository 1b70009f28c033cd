"""``jit_compile=True``: buffers reused across loop iterations, and sums by NumPy's own loop.

A loop-carried array may be overwritten two iterations later only when nothing can read it
any more; every case here carries values that are still referenced (passed through, viewed,
returned, captured, aliased by a branch) next to ones that are not, and checks the results
against NumPy bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow


def _same(got, want, what: str = "") -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (what, g.dtype, w.dtype, g.shape, w.shape)
    np.testing.assert_array_equal(g, w, err_msg=what)


def _check(f, *args) -> None:
    """``f`` compiled whole equals ``f`` in NumPy, for every output, bitwise."""
    want = kx.function(f, backend="numpy")(*args)
    g = kx.function(f, jit_compile=True)
    g(*args)  # the first call runs on the fused executor while the function compiles
    segments = g.get_concrete_function(*args).executable.segments
    assert [s["kind"] for s in segments if s.get("role") != "fallback"] == ["whole-graph"]
    assert all(s["kind"] in ("map", "reduce") for s in segments[1:])
    assert segments[0]["state"] == "ready"
    got = g(*args)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for k, (a, b) in enumerate(zip(got, want)):
            _same(a, b, f"output {k}")
    else:
        _same(got, want)


X = np.linspace(0.5, 2.0, 7)


def test_the_carried_value_is_recycled_and_the_result_is_numpys():
    def f(x, thr):
        while np.sum(x) > thr:
            x = np.tanh(x)
        return x

    for n in (5, 1000, 3000):
        _check(f, np.ones(n, np.float32), np.float32(0.2 * n))
    # the module recycles the old value and sums with NumPy's loop
    g = kx.function(f, jit_compile=True)
    x = np.ones(5, np.float32)
    g(x, np.float32(1.0))
    source = (
        g.get_concrete_function(x, np.float32(1.0)).executable.run.__globals__["_H"].ksrc.source
    )
    assert "_sp0 = t" in source and "_sum_loop(" in source


def test_a_value_passed_through_to_another_variable_is_not_overwritten():
    def f(x, n):
        prev = x * 1.0
        cur = x * 2.0
        i = 0
        while i < n:
            prev, cur = cur, cur * 0.5 + prev  # prev takes cur's buffer
            i += 1
        return prev, cur

    for n in (0, 1, 2, 3, 8):
        _check(f, X, np.int64(n))


def test_two_variables_holding_the_same_array():
    def f(x, n):
        a = x + 1.0
        b = a
        i = 0
        while i < n:
            a = a * 1.5
            b = b + a
            i += 1
        return a, b

    for n in (0, 1, 4):
        _check(f, X, np.int64(n))


def test_a_value_returned_by_a_branch_keeps_its_buffer():
    def f(x, n):
        y = x * 1.0
        keep = x * 0.0
        i = 0
        while i < n:
            keep = y if i % 2 == 0 else keep + 1.0  # keep aliases y on even steps
            y = y * 3.0
            i += 1
        return y, keep

    for n in (1, 2, 5):
        _check(f, X, np.int64(n))


def test_a_view_of_the_carried_value_is_carried_too():
    def f(x, n):
        y = x.reshape(3, 4) * 1.0
        t = y.T * 1.0
        i = 0
        while i < n:
            t = y.T  # a view of the old y: copied when carried
            y = y * 2.0 + 1.0
            i += 1
        return y, t

    x = np.arange(12.0)
    for n in (0, 1, 3):
        _check(f, x, np.int64(n))


def test_the_old_value_read_after_the_new_one_is_computed():
    def f(x, n):
        i = 0
        d = x * 0.0
        while i < n:
            new = x * 0.5 + 1.0
            d = new - x  # reads the old x after the new one exists
            x = new
            i += 1
        return x, d

    for n in (0, 1, 2, 6):
        _check(f, X, np.int64(n))
        _check(f, np.linspace(0, 1, 20)[::3], np.int64(n))  # a strided 1-D input


def test_an_uncopied_initial_value_used_after_the_loop_survives():
    def f(x, n):
        y = x * 2.0  # fresh: carried into the loop without a copy
        acc = y
        i = 0
        while i < n:
            acc = acc * 0.5 + y  # y is also a capture
            i += 1
        return acc, y

    for n in (0, 1, 2, 5):
        _check(f, X, np.int64(n))


def test_nested_loops_and_a_branch_inside_the_body():
    def f(x, n):
        i = 0
        while i < n:
            j = 0
            while j < 2:
                x = np.tanh(x) + 0.5
                j += 1
            if np.max(x) > 1.0:
                x = x * 0.25
            else:
                x = x + 1.0
            i += 1
        return x

    for n in (0, 1, 4):
        _check(f, X.astype(np.float32), np.int64(n))


def test_shapes_that_change_between_iterations_allocate():
    def f(x, n):
        i = 0
        while i < n:
            kx.autograph.set_loop_options(shape_invariants=[(x, (None,))])
            x = np.tanh(x[1:]) * 2.0
            i += 1
        return x

    for n in (0, 1, 3):
        _check(f, np.linspace(0, 1, 9), np.int64(n))


def test_matrix_products_ping_pong_and_stay_exact():
    def f(a, m, n):
        i = 0
        r = m
        while i < n:
            r = a @ r
            i += 1
        return r

    rng = np.random.default_rng(4)
    for dt in (np.int32, np.int64, np.float64):
        a = rng.integers(-3, 4, (6, 6)).astype(dt)
        m = rng.integers(-3, 4, (6, 6)).astype(dt)
        for n in (0, 1, 2, 7):
            _check(f, a, m, np.int64(n))
    b = rng.integers(0, 2, (5, 5)).astype(bool)
    _check(f, b, b.copy(), np.int64(3))


def test_two_dimensional_carried_values():
    def f(x, n):
        i = 0
        while i < n:
            x = np.tanh(x) * 1.5
            i += 1
        return x

    for n in (0, 1, 2, 5):
        _check(f, np.linspace(-1, 1, 12).reshape(3, 4), np.int64(n))
    # a non-contiguous input goes through the any-layout variant
    _check(f, np.linspace(-1, 1, 24).reshape(4, 6)[:, ::2], np.int64(3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_use_numpys_pairwise_loop_bitwise(dtype):
    def total(x):
        return np.sum(x), np.mean(x), np.sum(x, keepdims=True)

    rng = np.random.default_rng(5)
    for n in (1, 2, 7, 8, 9, 127, 128, 129, 1000, 8192, 8193, 100_003):
        x = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(dtype)
        _check(total, x)
        _check(total, x[::3])  # strided
        _check(total, x[::-1])  # reversed: NumPy sums in index order
    y = rng.standard_normal((37, 41)).astype(dtype)
    _check(total, y)
    _check(lambda y: np.sum(y, axis=(0, 1)), y)
    _check(total, np.array([-0.0], dtype))  # 0.0, as NumPy (the sum starts from +0.0)
