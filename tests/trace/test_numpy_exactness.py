"""NumPy functions the tracer composes from ops give NumPy's own bits, not nearly them."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx


@pytest.mark.parametrize("shape, ord_", [((7,), None), ((7,), 2), ((3, 4), None),
                                         ((3, 4), "fro"), ((2, 3, 2), None)])
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
