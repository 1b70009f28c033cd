"""Gradients through graph ``while`` loops (``for i in range(n)`` with a traced ``n``, ``for row
in x``, ``while`` on data, buffers written in the body), checked against central finite
differences in float64 of the same function run as plain NumPy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from markers import quick_only

import kernel_ext as kx
from kernel_ext.backends import fused
from kernel_ext.ir import OpKind

EPS = 1e-6


def numeric_grad(f: Callable[[np.ndarray], float], x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += EPS
        minus[idx] -= EPS
        out[idx] = (f(plus) - f(minus)) / (2 * EPS)
    return out


def ops_of(graph: Any) -> list[OpKind]:
    """Every op of a graph, sub-graphs included."""
    out = []
    for node in graph.nodes:
        out.append(node.op)
        for key in ("cond", "body"):
            if key in node.params:
                out.extend(ops_of(node.params[key]))
    return out


def test_gradient_of_a_range_loop_with_a_traced_count_matches_finite_differences() -> None:
    def f(x: Any, n: Any) -> Any:
        y = x
        for i in range(n):
            y = np.sin(y) * x + 0.1
        return np.sum(y * y)

    x = np.array([0.3, -0.5, 1.2])
    grad = kx.function(kx.grad(f))
    for n in (0, 1, 4):
        np.testing.assert_allclose(
            grad(x, np.int64(n)), numeric_grad(lambda v: f(v, n), x), rtol=1e-6, atol=1e-8
        )
    assert grad.experimental_get_tracing_count() == 1  # one graph loop for every n


def test_gradient_of_a_loop_over_the_rows_of_an_array() -> None:
    def f(x: Any) -> Any:
        total = 0.0
        for row in x:
            total = total + np.sum(np.tanh(row) * row[0])
        return total

    x = np.random.default_rng(0).normal(size=(5, 3))
    np.testing.assert_allclose(kx.grad(f)(x), numeric_grad(f, x), rtol=1e-6, atol=1e-8)


def test_gradient_of_a_while_loop_with_a_data_dependent_condition() -> None:
    def f(x: Any) -> Any:
        y = x
        while np.sum(y) < 10.0:
            y = y * 1.5 + x
        return np.sum(y * y)

    for x in (np.array([0.3, 0.5, 1.2]), np.array([2.0, 3.0, 4.0])):  # 3 and 1 iterations
        np.testing.assert_allclose(kx.grad(f)(x), numeric_grad(f, x), rtol=1e-6, atol=1e-7)


def test_gradient_through_buffers_written_in_place_in_a_loop_body() -> None:
    def f(x: Any, n: Any) -> Any:
        out = np.zeros((4, 3))
        acc = x
        for i in range(n):
            acc = acc * x + 1.0
            out[i] = acc
            out[i, 0] = out[i, 0] * 2.0
            out[i] += x
        return np.sum(out**2)

    x = np.array([0.3, -0.5, 0.8])
    np.testing.assert_allclose(
        kx.grad(f)(x, np.int64(3)), numeric_grad(lambda v: f(v, 3), x), rtol=1e-6, atol=1e-7
    )


def test_gradient_of_a_recurrent_loop_with_respect_to_its_weights_on_a_tape() -> None:
    rng = np.random.default_rng(1)
    w0 = rng.normal(size=(3, 3)) * 0.5
    xs = rng.normal(size=(6, 3))

    def loss(w: Any, xs: Any) -> Any:
        h = np.zeros(3)
        for t in range(xs.shape[0]):
            h = np.tanh(h @ w + xs[t])
        return np.sum(h)

    w = kx.Variable(w0)

    @kx.function
    def step(xs: Any, n: Any) -> Any:
        with kx.GradientTape() as tape:
            wv = w.read_value()
            h = np.zeros(3)
            for t in range(n):
                h = np.tanh(h @ wv + xs[t])
            total = np.sum(h)
        return tape.gradient(total, w)

    np.testing.assert_allclose(
        step(xs, np.int64(6)), numeric_grad(lambda v: loss(v, xs), w0), rtol=1e-6, atol=1e-7
    )


def test_gradient_of_nested_graph_loops() -> None:
    def f(x: Any, n: Any, m: Any) -> Any:
        y = x
        for i in range(n):
            for j in range(m):
                y = np.cos(y) * x
        return np.sum(y)

    x = np.array([0.4, 0.9])
    np.testing.assert_allclose(
        kx.grad(f)(x, np.int64(2), np.int64(3)),
        numeric_grad(lambda v: f(v, 2, 3), x),
        rtol=1e-6,
        atol=1e-7,
    )


def test_gradient_of_kx_while_loop_with_several_float_and_integer_variables() -> None:
    def f(x: Any) -> Any:
        def cond(k: Any, a: Any, b: Any) -> Any:
            return k < 4

        def body(k: Any, a: Any, b: Any) -> Any:
            return k + 1, a * np.sum(b), b + a * 0.5

        _, a, b = kx.while_loop(cond, body, (np.int64(0), x[0], x[1:]))
        return np.sum(a) + np.sum(b * b)

    x = np.array([0.7, 0.3, -0.4])
    np.testing.assert_allclose(kx.grad(f)(x), numeric_grad(f, x), rtol=1e-6, atol=1e-7)


def test_a_forward_loop_stacks_its_state_only_when_a_gradient_reaches_it() -> None:
    @kx.function
    def value_only(x: Any, n: Any) -> Any:
        y = x
        for i in range(n):
            y = np.sin(y)
        return np.sum(y)

    graph = value_only.get_concrete_function(np.ones(2), np.int64(2)).graph
    assert OpKind.TENSOR_ARRAY_WRITE not in ops_of(graph)

    @kx.function
    def with_gradient(x: Any, n: Any) -> Any:
        with kx.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = x
            for i in range(n):
                y = np.sin(y)
            total = np.sum(y)
        return tape.gradient(total, x), tape.gradient(total, x)

    graph = with_gradient.get_concrete_function(np.ones(2), np.int64(2)).graph
    whiles = [n for n in graph.nodes if n.op is OpKind.WHILE]
    assert len(whiles) == 3  # the forward loop, stacking once, and one reverse loop each
    g1, g2 = with_gradient(np.array([0.2, 0.4]), np.int64(2))
    expected = np.cos(np.sin(np.array([0.2, 0.4]))) * np.cos(np.array([0.2, 0.4]))
    np.testing.assert_allclose(g1, expected)
    np.testing.assert_allclose(g2, expected)


# (a traced count makes an ``arange``, which jit_compile=True leaves to fused segments)
@pytest.mark.filterwarnings("ignore:kx.function\\(jit_compile=True\\).*arange")
@pytest.mark.parametrize(
    "options",
    [
        {"backend": "numpy"},
        {},
        {"backend": "numba"},
        {"jit_compile": True},
        {"jit_compile": True, "backend": "numba"},
    ],
)
def test_loop_gradients_run_on_every_executor(options: dict) -> None:
    def f(x: Any, n: Any) -> Any:
        y = x
        for i in range(n):
            y = y * x + 1.0
        return np.sum(y)

    x = np.array([0.5, -0.25, 1.5], np.float64)
    grad = kx.function(kx.grad(f), **options)
    np.testing.assert_allclose(
        grad(x, np.int64(3)), numeric_grad(lambda v: f(v, 3), x), rtol=1e-6, atol=1e-7
    )


@pytest.mark.parametrize("backend", quick_only(["auto", "numba"], ["auto"]))
def test_the_iteration_count_of_a_stacking_loop_enters_fused_segments(backend: str) -> None:
    """The counter a loop gains for its gradient starts as an int64, not Python's ``0``:
    ``backend="numba"`` fuses ``count + 1`` into a kernel whose 0-d operands are NumPy
    scalars (a Python int there raised TypeError)."""

    def f(x: Any, n: Any) -> Any:
        y = x
        for i in kx.range(n):
            y = np.sin(y) * x + 0.1 * y
        return np.sum(y)

    x = np.linspace(-1.0, 1.0, 5)
    want = kx.function(kx.grad(f), backend="numpy")(x, 3)
    old = fused.set_synchronous(True)  # (the kernels run at the first call)
    try:
        got = kx.function(kx.grad(f), backend=backend)(x, 3)
    finally:
        fused.set_synchronous(old)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, numeric_grad(lambda v: f(v, 3), x), rtol=1e-6, atol=1e-7)


def _range_loop(x: Any, n: Any) -> Any:
    y = x
    for i in kx.range(n):
        y = np.sin(y) * x + 0.1 * y
    return np.sum(y)


def _while_loop(x: Any, limit: Any) -> Any:
    y = x
    while np.sum(y) < limit:  # a data-dependent number of iterations
        y = y * 1.3 + 0.1
    return np.sum(y * y)


def _matrix_loop(x: Any, w: Any) -> Any:
    y = x
    for i in kx.range(3):  # a matrix state: its stack is 3-D
        y = np.tanh(y @ w)
    return np.sum(y[0] - 2.0 * y[1] + y[2])


@pytest.mark.filterwarnings("error:kx.function\\(jit_compile=True\\)")
@pytest.mark.parametrize("case", quick_only(["range", "while", "matrix", "float32"], ["while"]))
def test_loop_gradients_compile_into_one_function(case: str) -> None:
    """``jit_compile=True`` compiles the stacking loop (its ``int64`` count and ``None``
    stacks, ``tensor_array_write``) and the reverse loop reading the stacks into one Numba
    function: no fallback warning, and the whole-graph function's own result is the NumPy
    executor's to the bit."""
    rng = np.random.default_rng(3)
    if case == "range":
        fn, args = _range_loop, (np.linspace(-1.0, 1.0, 5), 4)
    elif case == "while":
        fn, args = _while_loop, (np.linspace(0.1, 1.0, 4), 50.0)
    elif case == "matrix":
        fn, args = _matrix_loop, (rng.standard_normal((3, 4)), rng.standard_normal((4, 4)) * 0.5)
    else:
        fn, args = _range_loop, (np.linspace(-1.0, 1.0, 7).astype(np.float32), 3)
    want = kx.function(kx.grad(fn), backend="numpy")(*args)
    old = fused.set_synchronous(True)
    try:
        grad = kx.function(kx.grad(fn), jit_compile=True)
        grad(*args)  # (the first call compiles the function)
        run = grad.get_concrete_function(*args).executable.run
        handle = run.__globals__["_H"]
        assert handle.state == {"graph_c": "ready"}, handle.state
        got = grad(*args)
    finally:
        fused.set_synchronous(old)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype
    x64 = np.asarray(args[0], np.float64)  # (finite differences in float64)
    np.testing.assert_allclose(
        got,
        numeric_grad(lambda v: fn(v, *args[1:]), x64),
        rtol=1e-5 if case == "float32" else 1e-6,
        atol=1e-6,
    )


# -- higher order: the reverse loop is differentiated like any other graph loop -------------------


def sin_chain(x: Any, n: Any) -> Any:
    y = x
    for i in range(n):
        y = np.sin(y) * x
    return np.sum(y)


def numeric_jacobian_of(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """Central differences of a vector-valued ``fn`` (rows: outputs)."""
    cols = []
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += EPS
        minus[idx] -= EPS
        cols.append((np.asarray(fn(plus)) - np.asarray(fn(minus))).ravel() / (2 * EPS))
    return np.stack(cols, axis=-1)


def test_second_order_through_a_graph_loop_matches_finite_differences_of_the_gradient() -> None:
    first = kx.function(kx.grad(sin_chain))
    v = np.array([1.0, -2.0])

    def along_v(x: Any, n: Any) -> Any:
        return np.sum(kx.grad(sin_chain)(x, n) * v)

    hvp = kx.function(kx.grad(along_v))
    x = np.array([0.3, 0.5])
    for n in (0, 1, 3):
        hessian = numeric_jacobian_of(lambda a: first(a, np.int64(n)), x)
        np.testing.assert_allclose(hvp(x, np.int64(n)), hessian.T @ v, rtol=1e-6, atol=1e-7)
    assert hvp.experimental_get_tracing_count() == 1  # one graph for every n


def test_hessian_of_a_graph_loop_with_nested_tapes() -> None:
    @kx.function
    def hessian(x: Any, n: Any) -> Any:
        with kx.GradientTape() as outer:
            outer.watch(x)
            with kx.GradientTape() as inner:
                inner.watch(x)
                total = sin_chain(x, n)
            g = inner.gradient(total, x)
        return outer.jacobian(g, x)

    first = kx.function(kx.grad(sin_chain))
    x = np.array([0.3, 0.5, -0.8])
    np.testing.assert_allclose(
        hessian(x, np.int64(3)),
        numeric_jacobian_of(lambda a: first(a, np.int64(3)), x),
        rtol=1e-6,
        atol=1e-7,
    )


def test_third_order_through_a_graph_loop() -> None:
    def second(x: Any, n: Any) -> Any:
        return np.sum(kx.grad(sin_chain)(x, n))

    def summed_second(x: Any, n: Any) -> Any:
        return np.sum(kx.grad(second)(x, n))

    third = kx.grad(summed_second)
    reference = kx.function(kx.grad(second))
    x = np.array([0.3, 0.5])
    np.testing.assert_allclose(
        third(x, np.int64(2)),
        numeric_jacobian_of(lambda a: reference(a, np.int64(2)), x).sum(axis=0),
        rtol=1e-6,
        atol=1e-7,
    )


@pytest.mark.parametrize("case", ["nested", "data_dependent_while", "rnn_weights"])
def test_hessian_vector_products_through_nested_and_data_dependent_loops(case: str) -> None:
    rng = np.random.default_rng(3)

    def nested(x: Any, n: Any) -> Any:
        y = x
        for i in range(n):  # n is traced: two graph loops, one inside the other
            for j in range(n + 1):
                y = np.cos(y) * x
        return np.sum(y * y)

    def data_dependent_while(x: Any, n: Any) -> Any:
        y = x
        while np.sum(y) < 10.0:
            y = y * 1.5 + x * x
        return np.sum(y * y)

    def rnn_weights(w: Any, n: Any) -> Any:
        h = np.zeros(3)
        for t in range(n):
            h = np.tanh(h @ np.reshape(w, (3, 3)) + w[:3] * t + 0.5)
        return np.sum(h)

    f = {
        "nested": nested,
        "data_dependent_while": data_dependent_while,
        "rnn_weights": rnn_weights,
    }[case]
    x = {
        "nested": np.array([0.3, 0.5]),
        "data_dependent_while": np.array([0.3, 0.5]),
        "rnn_weights": rng.normal(size=9) * 0.5,
    }[case]
    n = np.int64({"nested": 2, "data_dependent_while": 0, "rnn_weights": 4}[case])
    v = rng.normal(size=x.shape)
    first = kx.function(kx.grad(f))

    def along_v(a: Any, k: Any) -> Any:
        return np.sum(kx.grad(f)(a, k) * v)

    hvp = kx.function(kx.grad(along_v))
    np.testing.assert_allclose(
        hvp(x, n), numeric_jacobian_of(lambda a: first(a, n), x).T @ v, rtol=1e-5, atol=1e-6
    )
    graph = hvp.get_concrete_function(x, n).graph
    assert ops_of(graph).count(OpKind.WHILE) >= 3  # forward, reverse, reverse of reverse
