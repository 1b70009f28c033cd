"""Dict arguments: one trace for any key order, and the caller's order wherever it shows.

``{1: 2, 3: 4}`` and ``{3: 4, 1: 2}`` have one trace type (TensorFlow's rule), so a function
that only looks keys up traces once for both. A function that iterates a dict argument (a
comprehension over ``params.items()``, ``list(d)``, ``sum(d.values())``) sees the caller's
order eagerly, so its trace is right for the traced order only: a call with another order
runs as plain Python (NumPy's answer by construction, counted as an eager call).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kernel_ext as kx

PATHS = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}


def scaled(params, lam):
    """An L2-penalised copy of a parameter dict, in the style of a training loop."""
    out = {name: w * lam for name, w in params.items()}
    out["penalty"] = sum(np.sum(w * w) for w in params.values())
    return out


def order_and_values(d):
    return [(k, type(v), np.asarray(v).dtype, np.asarray(v).tolist()) for k, v in d.items()]


@pytest.mark.parametrize("path", PATHS)
def test_dict_result_keeps_the_argument_key_order(path):
    f = kx.function(scaled, **PATHS[path])
    for params in (
        {"w": np.ones((2, 3)), "b": np.arange(3.0)},
        {"b": np.arange(3.0), "w": np.ones((2, 3))},
    ) * 2:
        want = scaled(copy.deepcopy(params), 0.5)
        got = f(params, 0.5)
        assert list(got) == list(want)
        assert order_and_values(got) == order_and_values(want)
    assert f.experimental_get_tracing_count() == 1


def test_lookups_share_one_trace_and_run_it_for_any_order():
    f = kx.function(lambda d: d["a"] - d["b"], backend="numpy")
    a, b = np.ones(2), np.zeros(2)
    np.testing.assert_array_equal(f({"a": a, "b": b}), [1, 1])
    np.testing.assert_array_equal(f({"b": b, "a": a}), [1, 1])
    assert f.experimental_get_tracing_count() == 1
    assert f.eager_call_count == 0


def test_a_call_in_another_order_of_an_iterating_trace_runs_eagerly_and_says_why():
    def keys_of(d):
        return [k for k in d]

    f = kx.function(keys_of, backend="numpy")
    a = {"x": np.zeros(2), "y": np.ones(2)}
    b = {"y": np.ones(2), "x": np.zeros(2)}
    assert f(a) == ["x", "y"]
    assert f(b) == ["y", "x"]
    assert f.eager_call_count == 1
    assert "keys in another order (['y', 'x'])" in f.last_eager_reason
    assert f(a) == ["x", "y"] and f.eager_call_count == 1
    assert f.experimental_get_tracing_count() == 1


@settings(max_examples=25, deadline=None)
@given(st.permutations(["alpha", "beta", "gamma", "delta"]))
def test_iteration_order_and_float_sums_match_eager_for_any_insertion_order(keys):
    def total_in_order(d):
        acc = 0.0
        for v in d.values():
            acc = acc + v  # float addition order decides the bits
        return acc, tuple(d)

    f = kx.function(total_in_order, backend="numpy")
    d = {k: np.float64(0.1) * 10.0 ** (3 * i) for i, k in enumerate(sorted(keys))}
    f(dict(sorted(d.items())))  # the first trace in sorted order
    d = {k: d[k] for k in keys}
    got, want = f(d), total_in_order(d)
    assert got[1] == want[1]
    assert got[0].tobytes() == want[0].tobytes()


def test_an_input_signature_dict_in_another_order_gets_the_callers_order():
    spec = kx.TensorSpec([None], np.float64)

    def keys_of(d):
        return [k for k in d], d["w"] * 2

    f = kx.function(keys_of, backend="numpy", input_signature=[{"w": spec, "b": spec}])
    assert f({"w": np.zeros(2), "b": np.ones(3)})[0] == ["w", "b"]
    assert f({"b": np.ones(3), "w": np.zeros(2)})[0] == ["b", "w"]
    assert f.experimental_get_tracing_count() == 1


def test_a_nested_dict_in_a_list_argument_is_guarded_too():
    def flat(batch):
        return [k for d in batch for k in d]

    f = kx.function(flat, backend="numpy")
    assert f([{"p": np.ones(1), "q": np.ones(1)}]) == ["p", "q"]
    assert f([{"q": np.ones(1), "p": np.ones(1)}]) == ["q", "p"]
