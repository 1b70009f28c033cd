"""Trace types: the subtype lattice laws, checked on generated shapes with hypothesis."""

from __future__ import annotations

import collections

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import kernel_ext as kx
from kernel_ext.trace.types import Dict, Literal, Sequence_, TensorSpec, make_trace_type

dims = st.one_of(st.none(), st.integers(0, 4))
shapes = st.one_of(st.none(), st.lists(dims, max_size=3).map(tuple))
dtypes = st.sampled_from([np.float32, np.float64, np.int32, np.bool_])
specs = st.builds(TensorSpec, shapes, dtypes)


@settings(max_examples=300, deadline=None)
@given(specs, specs)
def test_common_supertype_is_a_supertype_of_both(a, b):
    sup = a.most_specific_common_supertype([b])
    if a.dtype != b.dtype:
        assert sup is None
    else:
        assert a.is_subtype_of(sup) and b.is_subtype_of(sup)


@settings(max_examples=300, deadline=None)
@given(specs, specs, specs)
def test_subtyping_is_reflexive_and_transitive(a, b, c):
    assert a.is_subtype_of(a)
    if a.is_subtype_of(b) and b.is_subtype_of(c):
        assert a.is_subtype_of(c)


@settings(max_examples=200, deadline=None)
@given(specs, specs)
def test_supertype_is_most_specific(a, b):
    sup = a.most_specific_common_supertype([b])
    if sup is not None and sup.shape is not None:
        # no dimension is widened to None unless the two disagree there
        for da, db, ds in zip(a.shape, b.shape, sup.shape):
            assert ds is None or (ds == da == db)


@given(st.lists(st.integers(0, 3), min_size=0, max_size=3))
def test_arrays_map_to_their_shape_and_dtype(shape):
    arr = np.zeros(shape, np.float32)
    assert make_trace_type(arr) == TensorSpec(tuple(shape), np.float32)


def test_structures_and_literals():
    Pair = collections.namedtuple("Pair", "a b")
    t = make_trace_type({"b": [1, np.ones(2)], "a": Pair(None, "s")})
    assert isinstance(t, Dict) and t.keys == ("a", "b")
    assert t == make_trace_type({"a": Pair(None, "s"), "b": [1, np.zeros(2)]})
    assert t != make_trace_type({"a": Pair(None, "s"), "b": (1, np.zeros(2))})
    assert isinstance(t.components[1], Sequence_)
    assert Literal(1) != Literal(1.0) != Literal(True)
    assert Literal(float("nan")) == Literal(float("nan"))


def test_tracing_type_protocol_is_used():
    class Celsius:
        def __init__(self, degrees):
            self.degrees = degrees

        def __tracing_type__(self, context):
            return Literal(round(self.degrees))

    calls = []

    @kx.function
    def f(x, temp):
        calls.append(1)
        return x + 1

    f(np.ones(1), Celsius(20.2))
    f(np.ones(1), Celsius(19.8))
    assert len(calls) == 1
    f(np.ones(1), Celsius(25.0))
    assert len(calls) == 2
