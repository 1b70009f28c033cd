"""``kx.stop_gradient`` under an eager ``GradientTape`` (``autodiff/tape.py``,
``autodiff/eager.py``): a watched array or a variable read under the tape, stopped, records a
``copy`` node marked ``stop_gradient``, so eager gradients equal the traced ones and the
analytic ones (``d/dx sum(x * sg(x)) = x``, not ``2x``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import kernel_ext as kx

sg = kx.stop_gradient

#: (loss, its analytic gradient): a stop_gradient at the top, of a sub-expression, in a chain
CASES: dict[str, tuple[Callable[[Any], Any], Callable[[np.ndarray], np.ndarray]]] = {
    "x*sg(x)": (lambda x: np.sum(x * sg(x)), lambda x: x),
    "sg(x*x)+x in sin": (lambda x: np.sum(np.sin(sg(x * x) + x)), lambda x: np.cos(x * x + x)),
    "chain exp(sg(tanh(x))*x)": (
        lambda x: np.sum(np.exp(sg(np.tanh(x)) * x)),
        lambda x: np.tanh(x) * np.exp(np.tanh(x) * x),
    ),
    "sg of everything": (lambda x: np.sum(sg(x * x)) + np.sum(x), lambda x: np.ones_like(x)),
}

_values = hnp.arrays(np.float64, st.integers(1, 6), elements=st.floats(-2.0, 2.0, allow_nan=False))


def _traced_gradient(loss: Callable[[Any], Any], x: np.ndarray) -> np.ndarray:
    """The same tape code inside a kx.function (the reference the eager tape must equal)."""

    @kx.function(backend="numpy")
    def g(x):
        with kx.GradientTape() as tape:
            tape.watch(x)
            y = loss(x)
        return tape.gradient(y, x)

    return g(x)


def _close(got: Any, want: np.ndarray) -> None:
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("case", list(CASES))
@settings(max_examples=15, deadline=None)
@given(x=_values)
def test_eager_tape_on_a_watched_array_stops_the_gradient(case, x):
    loss, analytic = CASES[case]
    with kx.GradientTape() as tape:
        xr = tape.watch(x)
        y = loss(xr)
    got = tape.gradient(y, xr)
    _close(got, analytic(x))
    _close(got, _traced_gradient(loss, x))


@pytest.mark.parametrize("case", list(CASES))
def test_eager_tape_on_a_variable_stops_the_gradient(case):
    loss, analytic = CASES[case]
    x = np.random.default_rng(1).uniform(-2, 2, 5)
    v = kx.Variable(x)
    with kx.GradientTape() as tape:
        y = loss(v)
    got = tape.gradient(y, v)
    _close(got, analytic(x))
    _close(got, _traced_gradient(loss, x))


def test_the_issues_example_gives_x_not_two_x():
    x = kx.Variable([1.0, 2.0])
    with kx.GradientTape() as tape:
        y = np.sum(x * kx.stop_gradient(x))
    np.testing.assert_array_equal(tape.gradient(y, x), [1.0, 2.0])


def test_stop_gradient_keeps_values_and_form_eagerly():
    x = np.arange(3.0)
    with kx.GradientTape() as tape:
        xr = tape.watch(x)
        s = sg(xr)
        t = sg(np.sum(xr))
    np.testing.assert_array_equal(np.asarray(s), x)
    assert np.asarray(t).shape == () and float(t) == 3.0
    plain = np.arange(2.0)
    assert sg(plain) is plain  # no tape: the value itself


@pytest.mark.parametrize("case", list(CASES))
def test_grad_and_value_and_grad_stop_the_gradient_eagerly(case):
    loss, analytic = CASES[case]
    x = np.random.default_rng(2).uniform(-2, 2, 4)
    _close(kx.grad(loss)(x), analytic(x))
    value, g = kx.value_and_grad(loss)(x)
    assert np.asarray(value) == loss(x)
    _close(g, analytic(x))


def test_nested_eager_tapes_keep_the_stop_gradient_in_the_second_order():
    x = np.array([0.5, -1.5, 2.0])
    with kx.GradientTape() as outer:
        xo = outer.watch(x)
        with kx.GradientTape() as inner:
            xi = inner.watch(xo)
            y = np.sum(xi * xi * sg(xi))
        g = inner.gradient(y, xi)
        z = np.sum(g)
    second = outer.gradient(z, xo)
    _close(np.asarray(g), 2 * x * x)
    _close(second, 2 * x)

    @kx.function(backend="numpy")
    def traced(x):
        with kx.GradientTape() as outer:
            outer.watch(x)
            with kx.GradientTape() as inner:
                inner.watch(x)
                y = np.sum(x * x * sg(x))
            g = inner.gradient(y, x)
            z = np.sum(g)
        return outer.gradient(z, x)

    _close(second, traced(x))


def test_stop_recording_block_leaves_values_unrecorded():
    x = np.arange(1.0, 4.0)
    with kx.GradientTape() as tape:
        xr = tape.watch(x)
        with tape.stop_recording():
            c = sg(xr)
        y = np.sum(xr * np.asarray(c))
    _close(tape.gradient(y, xr), x)
