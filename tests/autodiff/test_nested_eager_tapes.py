"""A tape inside a tape over plain NumPy (higher-order gradients).

Eager tapes that record at the same time share one trace; the inner tape's ``gradient``
is recorded by the outer one, which differentiates it again. Every second derivative is
checked against central finite differences of the first derivative (itself computed by
the tape), in float64.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from autodiff.gradcheck import EPS
from hypothesis import given, settings
from hypothesis import strategies as st

import kernel_ext as kx
from kernel_ext.autodiff.eager import RecordingArray


def _first(f: Callable[..., Any], x: np.ndarray) -> np.ndarray:
    """``df/dx`` by one eager tape (the quantity the outer tape differentiates)."""
    with kx.GradientTape() as tape:
        xr = tape.watch(x)
        y = f(xr)
    return np.asarray(tape.gradient(y, xr))


def _hvp_numeric(f: Callable[..., Any], x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``d/dx sum(w * df/dx)`` by central differences of the tape's first derivative."""
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += EPS
        minus[idx] -= EPS
        out[idx] = (np.sum(w * _first(f, plus)) - np.sum(w * _first(f, minus))) / (2 * EPS)
    return out


def _second(f: Callable[..., Any], x: np.ndarray, w: np.ndarray) -> tuple[Any, Any]:
    with kx.GradientTape() as outer:
        xo = outer.watch(x)
        with kx.GradientTape() as inner:
            xi = inner.watch(xo)
            y = f(xi)
        dy = inner.gradient(y, xi)
        weighted = np.sum(dy * w)
    return dy, outer.gradient(weighted, xo)


FUNCTIONS = {
    "sin_x_squared": lambda x: np.sum(np.sin(x) * x**2),
    "log_sum_exp": lambda x: np.log(np.sum(np.exp(x))),
    "quadratic_form": lambda x: (
        x @ np.array([[2.0, 0.5, 0.0], [0.5, 1.0, -0.3], [0.0, -0.3, 3.0]]) @ x
    ),
    "tanh_matmul": lambda x: np.sum(np.tanh(np.outer(x, x) @ x)),
    "softplus_mean": lambda x: np.mean(np.log1p(np.exp(x)) * x),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@settings(max_examples=8, deadline=None)
@given(st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3))
def test_second_derivatives_of_nested_eager_tapes_match_finite_differences(name, values):
    f = FUNCTIONS[name]
    x = np.array(values)
    w = np.array([0.7, -1.1, 1.3])
    dy, d2 = _second(f, x, w)
    np.testing.assert_allclose(np.asarray(dy), _first(f, x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(d2, _hvp_numeric(f, x, w), rtol=1e-5, atol=1e-6)


def test_the_hessian_of_a_quadratic_form_by_nested_jacobian():
    """``jacobian`` of the inner tape's gradient, on the outer tape: ``A + A.T``."""
    a = np.array([[1.0, 2.0, 0.0], [-1.0, 0.5, 3.0], [0.0, 4.0, 2.0]])
    x = np.array([0.3, -0.7, 1.1])
    with kx.GradientTape(persistent=True) as outer:
        xo = outer.watch(x)
        with kx.GradientTape() as inner:
            xi = inner.watch(xo)
            q = xi @ a @ xi
        g = inner.gradient(q, xi)
    np.testing.assert_allclose(np.asarray(g), (a + a.T) @ x, rtol=1e-12)
    np.testing.assert_allclose(outer.jacobian(g, xo), a + a.T, rtol=1e-12)


def test_the_inner_tape_sees_only_what_it_recorded():
    """A value computed before the inner tape started is a constant to it (TensorFlow's
    semantics), but not to the outer tape."""
    x = np.array([1.5, -0.5])
    with kx.GradientTape() as outer:
        xo = outer.watch(x)
        z = xo * 2.0  # recorded by the outer tape only
        with kx.GradientTape() as inner:
            xi = inner.watch(xo)
            y = np.sum(z * xi)  # inner: d/dx = z (z held constant)
        g = inner.gradient(y, xi)
        total = np.sum(g)
    np.testing.assert_allclose(np.asarray(g), 2.0 * x)
    # the outer tape differentiates g = 2x: 2 per element
    np.testing.assert_allclose(outer.gradient(total, xo), [2.0, 2.0])


def test_variables_read_under_nested_tapes_get_second_derivatives():
    v = kx.Variable(np.array([0.4, -0.9, 1.2]))
    with kx.GradientTape() as outer:
        with kx.GradientTape() as inner:
            y = np.sum(np.exp(v) * v)  # a trainable variable: watched on read by both
        g = inner.gradient(y, v)  # (1 + v) e^v
        s = np.sum(g)
    h = outer.gradient(s, v)  # (2 + v) e^v
    val = v.numpy()
    np.testing.assert_allclose(np.asarray(g), (1 + val) * np.exp(val), rtol=1e-12)
    np.testing.assert_allclose(h, (2 + val) * np.exp(val), rtol=1e-12)


def test_a_single_tape_returns_plain_arrays_and_an_ended_outer_tape_too():
    x = np.array([0.2, 0.3])
    with kx.GradientTape() as tape:
        xr = tape.watch(x)
        y = np.sum(xr**3)
    g = tape.gradient(y, xr)
    assert type(g) is np.ndarray
    with kx.GradientTape() as outer:
        xo = outer.watch(x)
        with kx.GradientTape() as inner:
            xi = inner.watch(xo)
            y = np.sum(xi**3)
    g = inner.gradient(y, xi)  # the outer tape no longer records
    assert type(g) is np.ndarray and not isinstance(g, RecordingArray)
    np.testing.assert_allclose(g, 3 * x**2)
