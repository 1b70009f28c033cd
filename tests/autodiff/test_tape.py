"""GradientTape, kx.grad and the optimizers: the seeds' examples, control flow, structures,
errors, higher order and training loops."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import errors

# -- the seeds --------------------------------------------------------------------------------


def test_seed_gradient_of_a_function_called_under_an_eager_tape() -> None:
    @kx.function
    def add(a: Any, b: Any) -> Any:
        return a + b

    v = kx.Variable(1.0)
    with kx.GradientTape() as tape:
        result = add(v, 1.0)
    assert result == 2.0
    assert tape.gradient(result, v) == 1.0


def test_eager_tape_chains_several_function_calls_on_a_watched_array() -> None:
    square = kx.function(lambda x: x * x)
    total = kx.function(lambda x: np.sum(np.sin(x)))
    x = np.array([0.5, 1.0, 2.0])
    with kx.GradientTape() as tape:
        tape.watch(x)
        y = total(square(x))
    np.testing.assert_allclose(tape.gradient(y, x), np.cos(x * x) * 2 * x)


def _train_step(w: Any, x: Any, y: Any, optimizer: Any) -> None:
    with kx.GradientTape() as tape:
        loss = np.sum(np.square(w * x - y))
    gradients = tape.gradient(loss, [w])
    optimizer.apply_gradients(zip(gradients, [w]))


def test_seed_second_optimizer_in_one_function_raises_value_error() -> None:
    opt1 = kx.optimizers.Adam(learning_rate=1e-2)
    opt2 = kx.optimizers.Adam(learning_rate=1e-3)
    train_step = kx.function(_train_step)
    w = kx.Variable(2.0)
    x = np.array([-1.0])
    y = np.array([2.0])
    train_step(w, x, y, opt1)
    assert w.numpy() != 2.0  # the step ran
    with pytest.raises(ValueError):
        train_step(w, x, y, opt2)
    with pytest.raises(errors.VariableCreationError):
        train_step(w, x, y, kx.optimizers.SGD(momentum=0.9))


def test_seed_one_concrete_function_per_optimizer_is_the_workaround() -> None:
    opt1 = kx.optimizers.Adam(learning_rate=1e-2)
    opt2 = kx.optimizers.Adam(learning_rate=1e-3)
    w = kx.Variable(2.0)
    x = np.array([-1.0])
    y = np.array([2.0])
    step1 = kx.function(_train_step).get_concrete_function(w, x, y, opt1)
    step2 = kx.function(_train_step).get_concrete_function(w, x, y, opt2)
    before = w.numpy()
    for i in range(10):
        if i % 2 == 0:
            step1(w, x, y)
        else:
            step2(w, x, y)
    assert opt1.iterations.numpy() == 5 and opt2.iterations.numpy() == 5
    # w * -1 should approach 2: w moves down from 2 toward -2
    assert w.numpy() < before


# -- inside a trace ---------------------------------------------------------------------------


def test_ops_after_the_tape_block_are_not_recorded() -> None:
    @kx.function
    def f(x: Any) -> Any:
        with kx.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        return tape.gradient(np.sum(y), x)  # np.sum ran after the block: as TensorFlow, None

    assert f(np.ones(2)) is None


def test_tape_inside_a_function_differentiates_the_traced_graph() -> None:
    @kx.function
    def f(x: Any) -> Any:
        with kx.GradientTape() as tape:
            tape.watch(x)
            y = np.sum(np.tanh(x) * x**2)
        return tape.gradient(y, x)

    x = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(f(x), 2 * x * np.tanh(x) + x**2 * (1 - np.tanh(x) ** 2))
    ops = {n.op.value for n in f.get_concrete_function(x).graph.get_operations()}
    assert "tanh" in ops and "multiply" in ops  # the backward pass is ordinary ops


def test_unwatched_and_integer_sources_get_none_or_zeros() -> None:
    @kx.function
    def f(x: Any, n: Any) -> Any:
        with kx.GradientTape(persistent=True) as tape:
            y = np.sum(x * n)
        none = tape.gradient(y, [x, n])
        zero = tape.gradient(y, [x, n], unconnected_gradients="zero")
        return none, zero

    none, zero = f(np.ones(3), np.arange(3))
    assert none == [None, None]
    np.testing.assert_array_equal(zero[0], np.zeros(3))
    np.testing.assert_array_equal(zero[1], np.zeros(3, np.int64))


def test_gradient_keeps_the_structure_of_the_sources() -> None:
    @kx.function
    def f(a: Any, b: Any) -> Any:
        with kx.GradientTape() as tape:
            tape.watch([a, b])
            y = np.sum(a * b) + np.sum(b)
        return tape.gradient(y, {"a": a, "pair": (b, [a])})

    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    g = f(a, b)
    assert set(g) == {"a", "pair"} and isinstance(g["pair"], tuple)
    np.testing.assert_array_equal(g["a"], b)
    np.testing.assert_array_equal(g["pair"][0], a + 1)
    np.testing.assert_array_equal(g["pair"][1][0], b)


def test_variables_read_under_the_tape_are_watched_unless_asked_not_to() -> None:
    w = kx.Variable(np.array([1.0, 2.0]))
    frozen = kx.Variable(np.array([3.0, 4.0]), trainable=False)

    @kx.function
    def f(x: Any) -> Any:
        with kx.GradientTape(persistent=True) as tape:
            y = np.sum(w * x * frozen)
        with kx.GradientTape(watch_accessed_variables=False) as quiet:
            z = np.sum(w * x)
        return tape.gradient(y, [w, frozen]), quiet.gradient(z, w)

    (gw, gfrozen), gquiet = f(np.array([1.0, 1.0]))
    np.testing.assert_array_equal(gw, [3.0, 4.0])
    assert gfrozen is None and gquiet is None


def test_stop_gradient_and_stop_recording_cut_the_path() -> None:
    @kx.function
    def f(x: Any) -> Any:
        with kx.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x * kx.stop_gradient(x * 3.0)
            with tape.stop_recording():
                z = x * x
            total = np.sum(y + z)
        return tape.gradient(total, x)

    np.testing.assert_array_equal(f(np.array([1.0, 2.0])), [3.0, 6.0])


def test_non_persistent_tape_refuses_a_second_gradient() -> None:
    @kx.function
    def f(x: Any) -> Any:
        with kx.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        tape.gradient(y, x)
        return tape.gradient(y, x)

    with pytest.raises(RuntimeError, match="persistent"):
        f(np.ones(2))


def test_reset_forgets_what_was_recorded() -> None:
    @kx.function
    def f(x: Any) -> Any:
        with kx.GradientTape() as tape:
            tape.watch(x)
            y = x * x
            tape.reset()
            tape.watch(x)
            z = np.sum(y * x)
        return tape.gradient(z, x)

    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(f(x), x * x)  # y is a constant to the reset tape


def test_gradient_through_a_traced_if_differentiates_the_branch_taken() -> None:
    @kx.function
    def f(x: Any) -> Any:
        with kx.GradientTape() as tape:
            tape.watch(x)
            if np.sum(x) > 0:
                y = np.sum(x**3)
            else:
                y = np.sum(np.sin(x))
        return tape.gradient(y, x)

    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(f(x), 3 * x**2)
    np.testing.assert_allclose(f(-x), np.cos(-x))
    ops = [n.op.value for n in f.get_concrete_function(x).graph.get_operations()]
    assert "cond" in ops  # the backward cond (the forward one's value is unused: pruned)


def test_gradient_through_an_unrolled_python_loop() -> None:
    @kx.function
    def f(x: Any) -> Any:
        with kx.GradientTape() as tape:
            tape.watch(x)
            y = x
            for _ in range(3):
                y = np.sin(y)
            total = np.sum(y)
        return tape.gradient(total, x)

    x = np.array([0.3, 0.7])
    s1 = np.sin(x)
    s2 = np.sin(s1)
    np.testing.assert_allclose(f(x), np.cos(s2) * np.cos(s1) * np.cos(x))


def test_opaque_call_on_the_path_raises_naming_the_function() -> None:
    @kx.function
    def f(x: Any) -> Any:
        with kx.GradientTape() as tape:
            tape.watch(x)
            y = np.sum(np.i0(x) * x)
        return tape.gradient(y, x)

    with pytest.raises(errors.NonDifferentiableError, match="i0"):
        f(np.array([1.0, 2.0, 3.0]))


def test_jacobian_of_a_small_output() -> None:
    @kx.function
    def f(x: Any) -> Any:
        with kx.GradientTape() as tape:
            tape.watch(x)
            y = np.stack([x[0] * x[1], np.sin(x[1])])
        return tape.jacobian(y, x)

    x = np.array([2.0, 3.0])
    np.testing.assert_allclose(f(x), [[3.0, 2.0], [0.0, np.cos(3.0)]])


def test_hessian_of_a_quadratic_form_with_nested_tapes() -> None:
    a = np.array([[2.0, 1.0, 0.0], [0.5, 3.0, 1.0], [0.0, -1.0, 1.5]])

    @kx.function
    def hessian(x: Any) -> Any:
        with kx.GradientTape() as outer:
            outer.watch(x)
            with kx.GradientTape() as inner:
                inner.watch(x)
                q = x @ a @ x
            g = inner.gradient(q, x)
        return outer.jacobian(g, x)

    np.testing.assert_allclose(hessian(np.array([0.3, -1.0, 2.0])), a + a.T)


# -- kx.grad ----------------------------------------------------------------------------------


def test_grad_and_value_and_grad_eagerly_and_inside_a_function() -> None:
    def f(x: Any, y: Any) -> Any:
        return np.sum(np.sin(x) * y)

    x, y = np.array([0.1, 0.2]), np.array([3.0, 4.0])
    np.testing.assert_allclose(kx.grad(f)(x, y), np.cos(x) * y)
    gx, gy = kx.grad(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gy, np.sin(x))
    value, g = kx.value_and_grad(f, argnums=1)(x, y)
    np.testing.assert_allclose(value, f(x, y))
    np.testing.assert_allclose(g, np.sin(x))

    @kx.function
    def inside(x: Any, y: Any) -> Any:
        return kx.grad(f)(x, y) * 2.0

    np.testing.assert_allclose(inside(x, y), 2 * np.cos(x) * y)


def test_grad_has_aux_and_higher_order() -> None:
    def f(x: Any) -> Any:
        return x**3, x * 2.0

    g, aux = kx.grad(f, has_aux=True)(2.0)
    assert g == 12.0 and aux == 4.0
    assert kx.grad(kx.grad(lambda x: x**3))(2.0) == 12.0
    assert kx.grad(kx.grad(kx.grad(lambda x: x**3)))(2.0) == 6.0


def test_grad_refuses_a_non_scalar_value() -> None:
    with pytest.raises(TypeError, match="scalar"):
        kx.grad(lambda x: x * 2.0)(np.ones(3))


# -- training ---------------------------------------------------------------------------------


def test_linear_regression_in_one_function_reaches_the_least_squares_optimum() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3))
    y = x @ np.array([1.5, -2.0, 0.5]) + 0.3 + rng.normal(scale=0.1, size=64)
    w = kx.Variable(np.zeros(3))
    b = kx.Variable(0.0)
    opt = kx.optimizers.SGD(learning_rate=0.1, momentum=0.5)

    @kx.function
    def step(x: Any, y: Any) -> Any:
        with kx.GradientTape() as tape:
            loss = np.mean((x @ w + b - y) ** 2)
        grads = tape.gradient(loss, [w, b])
        opt.apply_gradients(zip(grads, [w, b]))
        return loss

    for _ in range(300):
        step(x, y)
    design = np.hstack([x, np.ones((64, 1))])
    best, *_ = np.linalg.lstsq(design, y, rcond=None)
    np.testing.assert_allclose(np.append(w.numpy(), b.numpy()), best, atol=1e-6)
    assert step.experimental_get_tracing_count() == 1


@pytest.mark.parametrize(
    "make",
    [
        lambda: kx.optimizers.SGD(0.1),
        lambda: kx.optimizers.Adam(0.01),
        lambda: kx.optimizers.RMSprop(0.01),
    ],
)
def test_two_layer_mlp_loss_decreases(make: Any) -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(128, 4)).astype(np.float32)
    y = (np.sin(x[:, :1]) + x[:, 1:2] ** 2).astype(np.float32)
    w1 = kx.Variable(rng.normal(scale=0.5, size=(4, 16)).astype(np.float32))
    b1 = kx.Variable(np.zeros(16, np.float32))
    w2 = kx.Variable(rng.normal(scale=0.5, size=(16, 1)).astype(np.float32))
    b2 = kx.Variable(np.zeros(1, np.float32))
    params = [w1, b1, w2, b2]
    opt = make()

    @kx.function
    def step(x: Any, y: Any) -> Any:
        with kx.GradientTape() as tape:
            h = np.maximum(x @ w1 + b1, 0.0)
            loss = np.mean((np.tanh(h @ w2 + b2) * 3.0 - y) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    losses = [step(x, y) for _ in range(200)]
    assert losses[-1].dtype == np.float32
    assert w1.numpy().dtype == np.float32
    assert losses[-1] < 0.5 * losses[0]


def test_variable_read_only_inside_a_branch_raises_rather_than_answering_none() -> None:
    w = kx.Variable(2.0)

    @kx.function
    def f(x: Any) -> Any:
        with kx.GradientTape() as tape:
            y = w * x if x > 0 else x
        return tape.gradient(y, w)

    with pytest.raises(errors.NonDifferentiableError, match="read it once before"):
        f(np.float64(1.0))

    @kx.function
    def fixed(x: Any) -> Any:
        with kx.GradientTape() as tape:
            wv = w.read_value()
            y = wv * x if x > 0 else x
        return tape.gradient(y, w)

    assert fixed(np.float64(3.0)) == 3.0 and fixed(np.float64(-3.0)) == 0.0
