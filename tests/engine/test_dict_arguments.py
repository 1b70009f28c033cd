"""Dict arguments keep the caller's key order, as eager Python does.

A traced function that iterates a dict argument (a comprehension over ``params.items()``,
``list(d)``, ``zip(d, ...)``) must see, and return, the caller's insertion order: the order is
part of a dict's trace type, so a call with the same keys in a new order retraces instead of
being served a result built for the other order.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kernel_ext as kx
from kernel_ext.engine.explain import describe_diff

PATHS = {"numpy": {"backend": "numpy"}, "auto": {}, "numba": {"backend": "numba"},
         "jit": {"jit_compile": True}}


def scaled(params, lam):
    """An L2-penalised copy of a parameter dict, in the style of a training loop."""
    out = {name: w * lam for name, w in params.items()}
    out["penalty"] = sum(np.sum(w * w) for w in params.values())
    return out


def order_and_values(d):
    return [(k, np.asarray(v).dtype, np.asarray(v).tolist()) for k, v in d.items()]


@pytest.mark.parametrize("path", PATHS)
def test_dict_result_keeps_the_argument_key_order(path):
    f = kx.function(scaled, **PATHS[path])
    for params in ({"w": np.ones((2, 3)), "b": np.arange(3.0)},
                   {"b": np.arange(3.0), "w": np.ones((2, 3))}):
        want = scaled(copy.deepcopy(params), 0.5)
        got = f(params, 0.5)
        assert list(got) == list(want)
        assert order_and_values(got) == order_and_values(want)


def test_a_new_key_order_retraces_and_an_old_one_hits_its_trace():
    f = kx.function(lambda d: [k for k in d], backend="numpy")
    a = {"x": np.zeros(2), "y": np.ones(2)}
    b = {"y": np.ones(2), "x": np.zeros(2)}
    assert f(a) == ["x", "y"]
    assert f(b) == ["y", "x"]
    assert f(a) == ["x", "y"] and f(b) == ["y", "x"]
    assert f.experimental_get_tracing_count() == 2


@settings(max_examples=25, deadline=None)
@given(st.permutations(["alpha", "beta", "gamma", "delta"]))
def test_iteration_order_matches_eager_for_any_insertion_order(keys):
    def stack_in_order(d):
        return np.stack([v for v in d.values()]), tuple(d)
    f = kx.function(stack_in_order, backend="numpy")
    d = {k: np.full(2, float(i)) for i, k in enumerate(sorted(keys))}
    d = {k: d[k] for k in keys}
    got, want = f(d), stack_in_order(d)
    assert got[1] == want[1]
    assert np.array_equal(got[0], want[0])


def test_a_retrace_for_a_new_key_order_says_so():
    def keys_of(d):
        return [k for k in d]
    f = kx.function(keys_of, backend="numpy")
    f({"x": np.zeros(2), "y": np.ones(2)})
    f({"y": np.ones(2), "x": np.zeros(2)})
    diffs = f.retraces[1].explanation.diffs
    assert [d.argument for d in diffs] == ["d"]
    assert "the same keys in another order" in describe_diff(diffs[0])


def test_an_input_signature_fixes_the_key_order_and_says_how_to_match_it():
    spec = kx.TensorSpec([None], np.float64)

    def keys_of(d):
        return [k for k in d]
    f = kx.function(keys_of, backend="numpy", input_signature=[{"w": spec, "b": spec}])
    assert f({"w": np.zeros(2), "b": np.ones(3)}) == ["w", "b"]
    with pytest.raises(kx.errors.InputSignatureError, match=r"fixes their order as \['w', 'b'\]"):
        f({"b": np.ones(3), "w": np.zeros(2)})
    assert f.experimental_get_tracing_count() == 1
