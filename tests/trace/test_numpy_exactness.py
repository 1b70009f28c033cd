"""NumPy functions the tracer composes from ops give NumPy's own bits, not nearly them."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx


@pytest.mark.parametrize(
    "shape, ord_", [((7,), None), ((7,), 2), ((3, 4), None), ((3, 4), "fro"), ((2, 3, 2), None)]
)
def test_linalg_norm_is_numpys_dot_based_norm(shape, ord_):
    f = kx.function(lambda v: np.linalg.norm(v, ord=ord_))
    for seed in range(50):
        v = np.random.default_rng(seed).standard_normal(shape)
        got, want = f(v), np.linalg.norm(v, ord=ord_)
        assert got == want and type(got) is type(want)


def test_linalg_norm_of_integers_is_computed_in_float64():
    big = np.array([3_000_000_000, 4_000_000_000], np.int64)  # squares overflow int64
    assert kx.function(np.linalg.norm)(big) == np.linalg.norm(big)


def test_a_range_indexes_like_its_integers():
    f = kx.function(lambda p, y: p[range(len(y)), y])
    p, y = np.arange(12.0).reshape(3, 4), np.array([3, 0, 2])
    np.testing.assert_array_equal(f(p, y), p[range(3), y])


def test_python_number_carried_by_a_graph_loop_stays_weak():
    def halve_until_small(x):
        n = 0
        while x.sum() > 1:
            x = x / 2
            n += 1
        return x * n, n

    x = np.ones(4, np.float32)
    want = halve_until_small(x)
    got = kx.function(halve_until_small)(x)
    assert got[0].dtype == want[0].dtype == np.float32  # n is weak: float32 * n stays float32
    np.testing.assert_array_equal(got[0], want[0])
    assert type(got[1]) is int and got[1] == want[1]


def test_python_number_from_a_branch_stays_weak():
    def pick(x, c):
        if c > 0:
            k = 2
        else:
            k = 3
        return x * k, k

    x = np.ones(2, np.float32)
    f = kx.function(pick)
    for c in (np.float64(1.0), np.float64(-1.0)):
        want, got = pick(x, c), f(x, c)
        assert got[0].dtype == np.float32 and type(got[1]) is int and got[1] == want[1]


def test_common_ndarray_attributes_exist_on_traced_values():
    def uses_attributes(x):
        flat = x.flatten()
        flat[0] = 100.0  # a copy: x is untouched
        y = x.copy()
        y.put([0, 3], [7.0, 8.0])
        z = x.copy()
        z.partition(1)
        return (
            flat,
            y,
            x.real + 0,
            x.imag + 0,
            x.diagonal() + 0,
            x.trace(),
            x.repeat(2),
            z[:1] + 0,
            x.itemsize,
            x.nbytes,
            x.conjugate(),
        )

    x = np.arange(9.0).reshape(3, 3) - 3
    want, got = uses_attributes(x.copy()), kx.function(uses_attributes)(x.copy())
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
        assert type(g) is type(w)


def test_memory_layout_attributes_say_why_they_are_missing():
    from kernel_ext import errors

    with pytest.raises(errors.SymbolicValueError, match="strides describes memory"):
        kx.function(lambda x: x.strides)(np.ones(2))


def test_ufunc_at_is_an_update_of_its_first_argument():
    def scatter(idx, vals, acc):
        np.add.at(acc, idx, vals)
        local = np.zeros(3)
        np.maximum.at(local, idx % 3, vals)
        return local

    idx, vals = np.array([0, 1, 1, 3]), np.arange(4.0)
    a1, a2 = np.ones(5), np.ones(5)
    want, got = scatter(idx, vals, a1), kx.function(scatter)(idx, vals, a2)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(a2, a1)


def test_int_float_bool_of_traced_values_are_python_numbers():
    def stats(x):
        return int((x > 0).sum()), float(x.max()), bool(x.min() < 0)

    x = np.array([-1.5, 2.0, 3.0], np.float32)
    want, got = stats(x), kx.function(stats)(x)
    assert want == got and [type(v) for v in got] == [int, float, bool]


def test_int_of_a_traced_float_truncates_toward_zero_as_python():
    f = kx.function(lambda x: int(x.sum()))
    for x in ([1.25, 1.5], [-0.25, -0.5], [-3.75, 0.0], [2.0**62, 0.0], [-(2.0**63), 0.0]):
        want, got = int(np.array(x).sum()), f(np.array(x))
        assert type(got) is int and got == want
    # Python's own errors, raised when the call runs
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        f(np.array([np.nan, 1.0]))
    with pytest.raises(OverflowError, match="cannot convert float infinity to integer"):
        f(np.array([-np.inf, 1.0]))
    # eagerly a larger Python int: a clear error, never a wrapped-around int64
    with pytest.raises(OverflowError, match="outside the int64 range"):
        f(np.array([2.0**63, 0.0]))


def test_or_evaluates_its_right_side_only_when_python_would():
    def accept(d, rng):
        return d <= 0 or rng.random() < 0.5

    for d in (np.float64(-1.0), np.float64(1.0)):
        r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
        want, got = accept(d, r1), kx.function(accept)(d, r2)
        assert bool(want) == bool(got)
        assert r1.bit_generator.state == r2.bit_generator.state  # the same number of draws
