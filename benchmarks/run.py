"""The performance suite: one command, one table, ratios measured in the same run.

    python benchmarks/run.py            # full run
    python benchmarks/run.py --quick    # fewer repeats (smoke test)
    python benchmarks/run.py --only W10 # one workload's rows alone

Each row states its target. Timings are the minimum over repeats of the mean of a timed loop
(``timeit``), the usual way to estimate the noise-free cost on a shared machine. JAX and
TensorFlow rows appear only when those packages are installed (optional comparison targets,
never dependencies).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import time
import timeit
from collections.abc import Callable

import numpy as np
from bench_numba import seed_power
from table import format_table

import kernel_ext as kx


def per_call_us(fn: Callable[[], object], number: int, repeat: int) -> float:
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def bench_dispatch(number: int, repeat: int) -> list[tuple[str, str, str, str]]:
    a = np.ones(2, np.float32)
    b = np.ones(2, np.float32)
    f = kx.function(lambda a, b: a + b)
    base = per_call_us(lambda: a + b, number, repeat)
    ours = per_call_us(lambda: f(a, b), number, repeat)
    rows = [
        ("B1 cache-hit a+b (2 x f32): NumPy expression", f"{base:.2f} µs", "", ""),
        (
            "B1 cache-hit a+b: kx.function",
            f"{ours:.2f} µs",
            f"overhead {ours - base:.2f} µs",
            "overhead ≤ 3 µs",
        ),
    ]
    if importlib.util.find_spec("jax"):
        import jax

        jf = jax.jit(lambda a, b: a + b)
        ja, jb = jax.numpy.asarray(a), jax.numpy.asarray(b)
        t = per_call_us(lambda: jf(ja, jb).block_until_ready(), number // 10, repeat)
        rows.append(
            (
                "B1 cache-hit a+b: jax.jit (optional peer)",
                f"{t:.2f} µs",
                f"overhead {t - base:.2f} µs",
                "",
            )
        )
    if importlib.util.find_spec("tensorflow"):
        import tensorflow as tf

        tff = tf.function(lambda a, b: a + b)
        ta, tb = tf.constant(a), tf.constant(b)
        t = per_call_us(lambda: tff(ta, tb), number // 100, repeat)
        rows.append(
            (
                "B1 cache-hit a+b: tf.function (optional peer)",
                f"{t:.2f} µs",
                f"overhead {t - base:.2f} µs",
                "",
            )
        )
    return rows


def bench_trace_200(repeat: int) -> list[tuple[str, str, str, str]]:
    def chain(x):  # 40 iterations x 5 ops = the 200-op function
        for _i in range(40):
            x = np.tanh(x * 1.01 + 0.5) - x / 3.0
        return x

    x = np.ones(16, np.float32)
    best = float("inf")
    n_ops = 0
    for _ in range(repeat):
        f = kx.function(chain)
        t0 = time.perf_counter()
        f.get_concrete_function(x)
        best = min(best, time.perf_counter() - t0)
        n_ops = f.concrete_functions[0].node_counts["traced"]
    return [
        (
            f"B2 trace + compile a {n_ops}-op elementwise function",
            f"{best * 1e3:.2f} ms",
            "",
            "≤ 20 ms",
        )
    ]


def bench_power(number: int, repeat: int) -> list[tuple[str, str, str, str]]:
    power = seed_power
    x = np.random.default_rng(0).integers(0, 2, (10, 10)).astype(np.int32)
    f = kx.function(power)
    np.testing.assert_array_equal(f(x, 100), power(x, 100))
    base = per_call_us(lambda: power(x, 100), number, repeat)
    ours = per_call_us(lambda: f(x, 100), number, repeat)
    return [
        ("B3 power(x, 100), 10x10 int32: plain NumPy", f"{base:.1f} µs", "", ""),
        (
            "B3 power(x, 100): kx.function (NumPy executor)",
            f"{ours:.1f} µs",
            f"{base / ours:.2f}x NumPy speed",
            "≥ 1.00x",
        ),
    ]


def bench_dynamic_loop(number: int, repeat: int) -> list[tuple[str, str, str, str]]:
    """Seed 004: `while np.sum(x) > 1: x = np.tanh(x)` as a graph loop vs the Python loop."""

    def python_loop(x):
        while np.sum(x) > 1:
            x = np.tanh(x)
        return x

    f = kx.function(python_loop)
    rows = []
    for size, n in ((5, number), (1_000_000, max(3, number // 4000))):
        # Five ones (then zeros): the loop runs the same ~40 iterations at both sizes.
        x = np.zeros(size, np.float32)
        x[:5] = 1.0
        np.testing.assert_array_equal(f(x), python_loop(x))
        base = per_call_us(lambda: python_loop(x), n, repeat)
        ours = per_call_us(lambda: f(x), n, repeat)
        rows.append(
            (
                f"B4 while sum(x) > 1: x = tanh(x), {size:,} elements: Python + NumPy",
                _fmt_us(base),
                "",
                "",
            )
        )
        rows.append(
            (
                "B4 same as a graph while loop (NumPy executor)",
                _fmt_us(ours),
                f"{ours / base:.2f}x NumPy time",
                "≤ 1.20x",
            )
        )
    return rows


def softmax_layer_norm(x, g, b):
    """W10: row-wise softmax, then layer norm of each row (bench_numba's W10)."""
    e = np.exp(x - np.max(x, axis=1)[:, None])
    s = e / np.sum(e, axis=1)[:, None]
    mu = np.mean(s, axis=1)[:, None]
    c = s - mu
    var = np.mean(c * c, axis=1)[:, None]
    return c / np.sqrt(var + np.float32(1e-5)) * g + b


def bench_w10(number: int, repeat: int) -> list[tuple[str, str, str, str]]:
    """W10 alone (``--only W10``): NumPy and both kx paths timed in interleaved rounds
    (best of each), so a change of the machine's load hits every path alike."""
    from kernel_ext.backends import parallel
    from kernel_ext.backends.compiler import wait_for_kernels

    rng = np.random.default_rng(10)
    x = rng.standard_normal((1000, 1000)).astype(np.float32)
    g, b = (rng.standard_normal(1000).astype(np.float32) for _ in range(2))
    want = softmax_layer_norm(x, g, b)
    paths: dict[str, Callable[[], object]] = {"NumPy": lambda: softmax_layer_norm(x, g, b)}
    for label, opts in (("auto", {}), ("jit_compile=True", {"jit_compile": True})):
        f = kx.function(softmax_layer_norm, **opts)
        for _ in range(60):  # kernels compiled, auto's tiering decided, the split's trial run
            f(x, g, b)
            wait_for_kernels(300)
        np.testing.assert_allclose(f(x, g, b), want, rtol=1e-4, atol=1e-4)
        paths[label] = lambda f=f: f(x, g, b)
    best = {k: float("inf") for k in paths}
    for _ in range(repeat):
        for k, fn in paths.items():
            best[k] = min(best[k], min(timeit.repeat(fn, number=number, repeat=3)) / number)
    base = best["NumPy"]
    title = f"W10 row softmax + layer norm, 1000x1000 f32: NumPy ({parallel.THREADS} threads)"
    rows = [(title, _fmt_us(base * 1e6), "", "")]
    for k in ("auto", "jit_compile=True"):
        rows.append(
            (
                f"W10 kx.function ({k})",
                _fmt_us(best[k] * 1e6),
                f"{best[k] / base:.2f}x NumPy time",
                "≤ 0.30x",
            )
        )
    return rows


def _fmt_us(us: float) -> str:
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.2f} µs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (smoke test)")
    parser.add_argument("--only", choices=["W10"], help="one workload's rows alone")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7
    if args.only == "W10":
        print(format_table(bench_w10(10, repeat if args.quick else 15)))
        return
    rows = []
    rows += bench_dispatch(20_000 if args.quick else 200_000, repeat)
    rows += bench_trace_200(repeat)
    rows += bench_power(200 if args.quick else 2_000, repeat)
    rows += bench_dynamic_loop(2_000 if args.quick else 20_000, repeat)
    # Each layer's own suite lives beside this file and contributes rows to the one table.
    # (bench_dask prints a skip row when dask/distributed are not installed; its 200M-element
    # run is opt-in: python benchmarks/bench_dask.py --full)
    for module in ("bench_passes", "bench_numba", "bench_widgets", "bench_gradients", "bench_dask"):
        try:
            suite = importlib.import_module(module)
        except ImportError:
            continue
        rows += suite.rows(args.quick)
    print(format_table(rows))


if __name__ == "__main__":
    main()
