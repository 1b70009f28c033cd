"""Comparing a traced result with eager NumPy's: structure, Python and NumPy types (a NumPy
scalar is not a 0-d array), dtype, shape and bits (NaN equals NaN; -0.0 is not 0.0)."""

from __future__ import annotations

from typing import Any

import numpy as np


def assert_same(actual: Any, expected: Any) -> None:
    """``actual`` is ``expected`` as NumPy would have given it, down to the bits."""
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
        return
    assert type(actual) is type(expected), (type(actual), type(expected))
    if isinstance(expected, (np.ndarray, np.generic)):
        assert actual.dtype == expected.dtype and np.shape(actual) == np.shape(expected)
        np.testing.assert_array_equal(actual, expected, strict=True)
        if expected.dtype.kind in "fc":  # signed zeros too, which == cannot see
            assert np.array_equal(np.signbit(np.real(actual)), np.signbit(np.real(expected)))
    else:
        assert actual == expected
