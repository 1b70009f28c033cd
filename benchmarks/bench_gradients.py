"""Gradient benchmarks (issue 15): a training step and the backward pass of a fused chain.

    python benchmarks/bench_gradients.py [--quick]     # this suite's rows only

* **W8**: one SGD training step of an MLP 784-256-256-10 (ReLU), batch 256, float32, softmax
  cross-entropy, as one traced ``kx.function`` (``GradientTape`` + ``kx.optimizers.SGD``)
  against the same step written by hand in NumPy (forward, handwritten backward, in-place
  update). Target: ≤ 0.8x the NumPy step's time. ``jax.jit(value_and_grad)`` and
  ``tf.function`` (``GradientTape``) rows appear when those packages are installed.
* **W9**: the gradient of W3's chain ``tanh(a*x+b)*sigmoid(x)+0.5*x*x-c`` (summed) with
  respect to ``x`` over 10M float32 elements, against the forward chain; both traced with the
  default (fused) backend. Target: ≤ 2x the forward time.

Timings are the best of several repeats (the machine is shared), as in ``run.py``. W8's two
steps are timed in alternating rounds (each the best of a few repeats) and the row shows the
medians and the median of the per-round ratios: on a loaded machine the load drifts within
a run, and the ratio of two medians taken minutes apart drifted with it (1.1x to 3.3x).
"""

from __future__ import annotations

import importlib.util
import itertools
import statistics
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np
from table import Row, main

import kernel_ext as kx

SIZES = (784, 256, 256, 10)
BATCH = 256
LEARNING_RATE = 0.01


def _best_ms(fn: Callable[[], object], number: int, repeat: int) -> float:
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def _interleaved_ms(
    a: Callable[[], object], b: Callable[[], object], number: int, rounds: int
) -> tuple[float, float, float]:
    """Medians of ``a``'s and ``b``'s time per call (ms) and of their per-round ratio
    ``b / a``, timing them alternately (each round: the best of 3 repeats of ``number``)."""
    a(), b()
    ta, tb, ratio = [], [], []
    for _ in range(rounds):
        x = min(timeit.repeat(a, number=number, repeat=3)) / number * 1e3
        y = min(timeit.repeat(b, number=number, repeat=3)) / number * 1e3
        ta.append(x)
        tb.append(y)
        ratio.append(y / x)
    return statistics.median(ta), statistics.median(tb), statistics.median(ratio)


def _fmt(ms: float) -> str:
    return f"{ms:.2f} ms"


def _mlp_data(seed: int = 0) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in itertools.pairwise(SIZES):
        params.append(
            (rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        )
        params.append(np.zeros(fan_out, np.float32))
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    labels = rng.integers(0, SIZES[-1], BATCH)
    onehot = np.eye(SIZES[-1], dtype=np.float32)[labels]
    return params, x, onehot


def numpy_step(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> np.float32:
    """The training step by hand: forward, handwritten backward, SGD in place."""
    w1, b1, w2, b2, w3, b3 = params
    z1 = x @ w1 + b1
    h1 = np.maximum(z1, 0)
    z2 = h1 @ w2 + b2
    h2 = np.maximum(z2, 0)
    logits = h2 @ w3 + b3
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(axis=1, keepdims=True)
    loss = np.mean(np.log(s[:, 0]) - np.sum(shifted * y, axis=1))
    dlogits = (e / s - y) / np.float32(x.shape[0])
    dw3 = h2.T @ dlogits
    db3 = dlogits.sum(axis=0)
    dh2 = dlogits @ w3.T
    dh2 *= z2 > 0
    dw2 = h1.T @ dh2
    db2 = dh2.sum(axis=0)
    dh1 = dh2 @ w2.T
    dh1 *= z1 > 0
    dw1 = x.T @ dh1
    db1 = dh1.sum(axis=0)
    for p, g in zip(params, (dw1, db1, dw2, db2, dw3, db3)):
        p -= np.float32(LEARNING_RATE) * g
    return loss


def cross_entropy(logits: Any, y: Any) -> Any:
    """Mean softmax cross-entropy of one-hot ``y`` (log-sum-exp, shifted by the max)."""
    shifted = logits - kx.stop_gradient(np.max(logits, axis=1, keepdims=True))
    return np.mean(np.log(np.sum(np.exp(shifted), axis=1)) - np.sum(shifted * y, axis=1))


def make_traced_step(params: list[np.ndarray]) -> tuple[Callable, list[kx.Variable]]:
    variables = [kx.Variable(p.copy()) for p in params]
    optimizer = kx.optimizers.SGD(learning_rate=LEARNING_RATE)

    @kx.function
    def train_step(x: Any, y: Any) -> Any:
        w1, b1, w2, b2, w3, b3 = variables
        with kx.GradientTape() as tape:
            h1 = np.maximum(x @ w1 + b1, 0)
            h2 = np.maximum(h1 @ w2 + b2, 0)
            loss = cross_entropy(h2 @ w3 + b3, y)
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return loss

    return train_step, variables


def bench_w8(quick: bool) -> list[Row]:
    params, x, y = _mlp_data()
    number, repeat = (3, 3) if quick else (10, 9)
    # Same starting point, same update: the two steps agree (float32 rounding aside).
    hand = [p.copy() for p in params]
    step, variables = make_traced_step(params)
    loss_hand, loss_ours = numpy_step(hand, x, y), step(x, y)
    np.testing.assert_allclose(loss_ours, loss_hand, rtol=1e-4)
    for v, p in zip(variables, hand):
        np.testing.assert_allclose(v.numpy(), p, rtol=1e-3, atol=1e-5)
    cf = step.get_concrete_function(x, y)
    executable = getattr(cf, "executable", None)
    # Warm up as a training loop does: auto compiles a fused kernel once calls have pushed
    # enough elements through it, in the background; time the steady state, not that.
    for _ in range(2):
        for _ in range(40):
            step(x, y)
        if executable is not None and hasattr(executable, "wait"):
            executable.wait(300)
    base, ours, ratio = _interleaved_ms(
        lambda: numpy_step(hand, x, y), lambda: step(x, y), 5, 3 if quick else 15
    )
    rows: list[Row] = [
        ("W8 MLP 784-256-256-10 train step, batch 256 f32: NumPy by hand", _fmt(base), "", ""),
        ("W8 kx.function (GradientTape + SGD)", _fmt(ours), f"{ratio:.2f}x NumPy time", "≤ 0.8x"),
    ]
    for name, make in (("jax.jit(value_and_grad)", _jax_step), ("tf.function", _tf_step)):
        if importlib.util.find_spec(name.split(".")[0]) is None:
            continue
        peer = make(params, x, y)
        t = _best_ms(peer, number, repeat)
        rows.append((f"W8 {name} (optional peer)", _fmt(t), f"{t / base:.2f}x NumPy time", ""))
    return rows


def _jax_step(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp

    def loss_fn(ps: list, x: Any, y: Any) -> Any:
        w1, b1, w2, b2, w3, b3 = ps
        h1 = jnp.maximum(x @ w1 + b1, 0)
        h2 = jnp.maximum(h1 @ w2 + b2, 0)
        logits = h2 @ w3 + b3
        return jnp.mean(jax.nn.logsumexp(logits, axis=1) - jnp.sum(logits * y, axis=1))

    @jax.jit
    def step(ps: list, x: Any, y: Any) -> Any:
        loss, grads = jax.value_and_grad(loss_fn)(ps, x, y)
        return loss, [p - LEARNING_RATE * g for p, g in zip(ps, grads)]

    state = {"ps": [jnp.asarray(p) for p in params]}
    xj, yj = jnp.asarray(x), jnp.asarray(y)

    def run() -> Any:
        loss, state["ps"] = step(state["ps"], xj, yj)
        return loss.block_until_ready()

    return run


def _tf_step(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> Callable[[], Any]:
    import tensorflow as tf

    variables = [tf.Variable(p) for p in params]
    optimizer = tf.keras.optimizers.SGD(learning_rate=LEARNING_RATE)

    @tf.function
    def step(x: Any, y: Any) -> Any:
        w1, b1, w2, b2, w3, b3 = variables
        with tf.GradientTape() as tape:
            h1 = tf.nn.relu(x @ w1 + b1)
            h2 = tf.nn.relu(h1 @ w2 + b2)
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(y, h2 @ w3 + b3))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    return lambda: step(x, y).numpy()


def w3(x: Any, a: Any, b: Any, c: Any) -> Any:
    """W3's chain (``run.py``, ``bench_numba.py``)."""
    return np.tanh(a * x + b) * (1 / (1 + np.exp(-x))) + 0.5 * x * x - c


def _w3_total(x: Any, a: Any, b: Any, c: Any) -> Any:
    return np.sum(w3(x, a, b, c))


def bench_w9(quick: bool) -> list[Row]:
    n = 1_000_000 if quick else 10_000_000
    rng = np.random.default_rng(0)
    x, a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(4))
    number, repeat = (2, 3) if quick else (3, 7)
    forward = kx.function(w3)
    gradient = kx.function(kx.grad(_w3_total))
    np.testing.assert_allclose(
        gradient(x[:1000], a[:1000], b[:1000], c[:1000]),
        _w3_dx(x[:1000], a[:1000], b[:1000]),
        rtol=1e-4,
        atol=1e-5,
    )
    for fn in (forward, gradient):
        fn(x, a, b, c)
        executable = getattr(fn.get_concrete_function(x, a, b, c), "executable", None)
        if executable is not None and hasattr(executable, "wait"):
            executable.wait(300)
    t_forward = _best_ms(lambda: forward(x, a, b, c), number, repeat)
    t_grad = _best_ms(lambda: gradient(x, a, b, c), number, repeat)
    t_numpy = _best_ms(lambda: _w3_dx(x, a, b), number, repeat)
    label = f"{n // 1_000_000}M"
    return [
        (f"W9 W3 chain forward, {label} f32: kx.function (auto)", _fmt(t_forward), "", ""),
        (
            "W9 d sum(W3)/dx: kx.function(kx.grad(...)) (auto)",
            _fmt(t_grad),
            f"{t_grad / t_forward:.2f}x forward time",
            "≤ 2x",
        ),
        (
            "W9 d sum(W3)/dx by hand in NumPy",
            _fmt(t_numpy),
            f"{t_numpy / t_forward:.2f}x forward time",
            "",
        ),
    ]


def _w3_dx(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The derivative of W3's chain in x, by hand (the NumPy reference)."""
    t = np.tanh(a * x + b)
    s = 1 / (1 + np.exp(-x))
    return (1 - t * t) * a * s + t * s * (1 - s) + x


def rows(quick: bool) -> list[Row]:
    return bench_w8(quick) + bench_w9(quick)


if __name__ == "__main__":
    main(rows, __doc__.splitlines()[0])
