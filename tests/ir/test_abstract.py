"""Abstract evaluation: broadcasting and ufunc result types agree with NumPy's own answers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel_ext.ir import OpKind
from kernel_ext.ir.abstract import AbstractValue, abstract_eval, broadcast_shapes

_shapes = st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple)


@settings(max_examples=300, deadline=None)
@given(st.lists(_shapes, min_size=1, max_size=4))
def test_broadcast_shapes_is_numpys_on_known_shapes(shapes):
    try:
        expected = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ValueError):
            broadcast_shapes(*shapes)
        return
    assert broadcast_shapes(*shapes) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(_shapes, min_size=1, max_size=4), st.data())
def test_broadcast_shapes_with_unknown_dims_is_consistent_with_every_filling(shapes, data):
    """A ``None`` dim stands for any size: the answer's known dims hold for every filling that
    NumPy accepts, and its unknown dims are exactly where fillings disagree."""
    masked = [
        tuple(None if data.draw(st.booleans(), label="mask") else d for d in s) for s in shapes
    ]
    try:
        got = broadcast_shapes(*masked)
    except ValueError:
        with pytest.raises(ValueError):
            np.broadcast_shapes(*shapes)
        return
    assert got is not None and len(got) == max(len(s) for s in shapes)
    real = np.broadcast_shapes(*shapes) if _compatible(shapes) else None
    if real is not None:
        assert all(g is None or g == r for g, r in zip(got, real))


def _compatible(shapes):
    try:
        np.broadcast_shapes(*shapes)
        return True
    except ValueError:
        return False


def test_broadcast_shapes_of_unknown_rank_is_unknown():
    assert broadcast_shapes((3,), None) is None
    assert broadcast_shapes() == ()
    assert broadcast_shapes((), ()) == ()


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "float16", "float32", "bool"])
@pytest.mark.parametrize("literal", [2, 2.5, True, 1j])
def test_ufunc_result_types_follow_nep50_with_weak_literals_every_time(dtype, literal):
    """Answers are memoised per operand dtypes: asking twice must give NumPy's answer twice."""
    x = np.ones(3, dtype)
    try:
        expected = np.add(x, literal).dtype
    except (TypeError, OverflowError):
        return
    for _ in range(2):
        aval = abstract_eval(OpKind.ADD, {}, [AbstractValue((3,), np.dtype(dtype)), literal])
        assert aval.dtype == expected and aval.shape == (3,)
