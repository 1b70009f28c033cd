"""The eager tape over plain NumPy code: ``x = tape.watch(x)`` returns a recording array,
NumPy code on it is recorded, and the gradient equals the one a ``kx.function`` computes
for the same code (hypothesis-generated inputs)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from autodiff.gradcheck import SETTINGS, arrays
from hypothesis import given

import kernel_ext as kx
from kernel_ext import errors
from kernel_ext.autodiff.eager import RecordingArray

TARGET = np.array([0.5, -1.0, 2.0])


def model(x: Any, w: Any) -> Any:
    """Broadcasting, indexing, a matmul, reductions with axes, a mask, a method."""
    h = np.tanh(x @ w + x[:, :1] * 0.5)
    picked = h[h > 0.0]
    return np.mean((h - TARGET) ** 2, axis=0).sum() + np.sum(picked) + h.T.max() * 0.1


@SETTINGS
@given(x=arrays((4, 2), -2, 2), w=arrays((2, 3), -1, 1))
def test_plain_numpy_code_on_watched_arrays_matches_the_traced_gradient(
    x: np.ndarray, w: np.ndarray
) -> None:
    h = np.tanh(x @ w + x[:, :1] * 0.5)
    if np.any(np.abs(h) < 1e-3):
        return  # the mask's edge
    with kx.GradientTape() as tape:
        xr, wr = tape.watch([x, w])
        loss = model(xr, wr)
    assert isinstance(xr, RecordingArray) and isinstance(loss, RecordingArray)
    np.testing.assert_allclose(loss, model(x, w))  # NumPy's values, computed as NumPy
    gx, gw = tape.gradient(loss, [xr, wr])
    expected = kx.grad(model, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(gx, expected[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gw, expected[1], rtol=1e-12, atol=1e-12)
    assert type(gx) is np.ndarray


def test_watch_returns_the_recording_array_and_only_code_using_it_is_recorded() -> None:
    x = np.array([1.0, 2.0])
    with kx.GradientTape(persistent=True) as tape:
        xr = tape.watch(x)
        on_original = np.sum(x * x)  # TensorFlow's form: plain NumPy, nothing recorded
        on_recording = np.sum(xr * xr)
    assert tape.gradient(on_original, xr) is None
    np.testing.assert_allclose(tape.gradient(on_recording, xr), 2 * x)
    np.testing.assert_allclose(
        tape.gradient(on_recording, [xr], unconnected_gradients="zero"), [2 * x]
    )


def test_trainable_variables_read_under_an_eager_tape_are_recorded_at_their_read_value() -> None:
    w = kx.Variable(np.array([1.0, 2.0]))
    frozen = kx.Variable(np.array([3.0, 4.0]), trainable=False)
    with kx.GradientTape() as tape:
        loss = np.sum(w * w * frozen) + w[0] * 3.0
    w.assign([10.0, 10.0])  # the gradient uses the value the code read
    g_w, g_frozen = tape.gradient(loss, [w, frozen])
    np.testing.assert_allclose(g_w, [2 * 1.0 * 3.0 + 3.0, 2 * 2.0 * 4.0])
    assert g_frozen is None

    with kx.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(frozen)
        loss = np.sum(w.read_value() * frozen)
    g_w, g_frozen = tape.gradient(loss, [w, frozen])
    assert g_w is None
    np.testing.assert_allclose(g_frozen, [10.0, 10.0])


def test_in_place_updates_and_out_arguments_are_recorded() -> None:
    def f(a: Any) -> Any:
        b = a * 2.0
        b[1] = a[0] ** 3
        b += a
        np.multiply(b, a, out=b)
        return np.sum(b * b)

    x = np.array([1.0, 2.0, 3.0])
    with kx.GradientTape() as tape:
        xr = tape.watch(x)
        loss = f(xr)
    np.testing.assert_allclose(loss, f(x.copy()))
    np.testing.assert_allclose(tape.gradient(loss, xr), kx.grad(f)(x), rtol=1e-12)


def test_kx_function_called_on_recording_arrays_joins_the_recording() -> None:
    @kx.function
    def layer(a: Any, scale: float) -> Any:
        return np.sin(a) * scale

    x = np.array([0.5, 1.0])
    with kx.GradientTape() as tape:
        xr = tape.watch(x)
        loss = np.sum(layer(xr, 2.0) * xr)
    np.testing.assert_allclose(tape.gradient(loss, xr), 2 * np.cos(x) * x + 2 * np.sin(x))


def test_the_seed_eager_form_on_plain_arrays_still_replays_function_calls() -> None:
    @kx.function
    def add(a: Any, b: Any) -> Any:
        return a + b

    v = np.array(2.0)
    with kx.GradientTape() as tape:
        tape.watch(v)  # the result not used: TensorFlow's form
        result = add(v, 1.0)
    assert tape.gradient(result, v) == 1.0


def test_operations_after_the_block_and_plain_arrays_are_not_sources() -> None:
    x = np.array([1.0, 2.0])
    c = np.array([3.0, 4.0])
    with kx.GradientTape(persistent=True) as tape:
        xr = tape.watch(x)
        y = xr * c
    c[:] = 100.0  # captured when used: the recording keeps the old values
    np.testing.assert_allclose(tape.gradient(y, xr), [3.0, 4.0])
    assert not isinstance(np.sum(y), RecordingArray)  # after the block: plain NumPy
    assert tape.gradient(np.sum(y), xr) is None


def test_an_opaque_numpy_call_on_the_path_raises_naming_the_function() -> None:
    with kx.GradientTape() as tape:
        x = tape.watch(np.array([[3.0, 1.0], [2.0, 5.0]]))
        y = np.piecewise(x, [x < 2.5, x >= 2.5], [lambda a: a * a, lambda a: a])
        loss = np.sum(y)
    with pytest.raises(errors.NonDifferentiableError, match=r"opaque NumPy call np\.piecewise"):
        tape.gradient(loss, x)


def test_a_view_made_by_an_unrecorded_method_is_refused_rather_than_cut() -> None:
    with kx.GradientTape() as tape:
        x = tape.watch(np.arange(4.0).reshape(2, 2))
        d = x.diagonal()  # an ndarray method NumPy runs without the array protocols
        with pytest.raises(errors.NonDifferentiableError, match=r"np\.diagonal"):
            np.sum(d * x[0])
        np.testing.assert_allclose(np.sum(np.diagonal(x) * x[0]), 3.0)


def test_jacobian_and_output_gradients_of_recorded_code() -> None:
    x = np.array([0.3, -0.7])
    with kx.GradientTape(persistent=True) as tape:
        xr = tape.watch(x)
        y = np.stack([np.sin(xr[0]) * xr[1], xr[0] ** 2])
    np.testing.assert_allclose(
        tape.jacobian(y, xr), [[np.cos(x[0]) * x[1], np.sin(x[0])], [2 * x[0], 0.0]]
    )
    np.testing.assert_allclose(
        tape.gradient(y, xr, output_gradients=np.array([1.0, 2.0])),
        [np.cos(x[0]) * x[1] + 4 * x[0], np.sin(x[0])],
    )
