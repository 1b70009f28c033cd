"""Benchmarks of the graph optimiser (rows for ``benchmarks/run.py``'s table).

    python benchmarks/bench_passes.py [--quick]     # these rows alone

``rows(quick)`` returns ``(benchmark, time, ratio, target)`` rows:

- P1: tracing + optimising the seed's unrolled ``power(x, 100)`` (100 matmuls on a 10x10 int32
  matrix), end to end through ``get_concrete_function``, target ≤ 50 ms; then the optimiser
  alone on that graph (built node for node as the tracer builds it).
- P2: node counts traced → optimised for a program with foldable constants, no-op arithmetic
  and repeated subexpressions, and what that saves per call against plain NumPy.

Timings are the minimum over repeats (the noise-free estimate on a shared machine).
"""

from __future__ import annotations

import timeit
import warnings
from collections.abc import Callable

import numpy as np

import kernel_ext as kx
from kernel_ext.ir import Graph, OpKind
from kernel_ext.passes import run_pipeline

Row = tuple[str, str, str, str]


def _best_ms(fn: Callable[[], object], number: int, repeat: int) -> float:
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def power(x, y):
    result = np.eye(10, dtype=np.int32)
    for _ in range(y):
        result = np.matmul(x, result)
    return result


def power_graph(n: int = 100) -> Graph:
    """The graph tracing ``power(x, n)`` records: a constant identity, then ``n`` matmuls."""
    g = Graph("power")
    x = g.placeholder("x", (10, 10), np.int32)
    result = g.constant(np.eye(10, dtype=np.int32), name="eye")
    for _ in range(n):
        result = g.create_node(OpKind.MATMUL, (x, result))
    g.outputs = [result]
    return g


def features(x):
    """A program with work for every pass: constants to fold, no-ops, repeated terms."""
    scale = np.ones_like(x) * 2.0 + np.zeros_like(x)  # a traced constant chain
    centred = (x - 0.0) * 1.0  # exact no-ops for floats
    shifted = np.transpose(np.transpose(centred)) + -0.0
    return np.tanh(shifted) * scale + np.tanh(shifted) / scale + np.exp(scale) * 0.5


def bench_power(quick: bool) -> list[Row]:
    x = np.random.default_rng(0).integers(0, 2, (10, 10)).astype(np.int32)
    repeat = 3 if quick else 7

    def trace_and_optimise() -> kx.ConcreteFunction:
        return kx.function(power).get_concrete_function(x, 100)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # AutoGraph warns when it cannot read the source
        cf = trace_and_optimise()
        total = _best_ms(trace_and_optimise, 1, repeat * 2)
    np.testing.assert_array_equal(cf(x), power(x, 100))
    graph = power_graph()
    optimiser = _best_ms(lambda: run_pipeline(graph), 3, repeat)
    counts = cf.node_counts
    return [
        (
            "P1 trace + optimise power(x, 100), 10x10 int32",
            f"{total:.2f} ms",
            f"{counts['traced']} → {counts['optimised']} nodes",
            "≤ 50 ms",
        ),
        (
            "P1 optimiser alone on that 100-matmul graph",
            f"{optimiser:.2f} ms",
            f"{optimiser / total:.0%} of the total",
            "",
        ),
    ]


def bench_foldable(quick: bool) -> list[Row]:
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    number, repeat = (200, 3) if quick else (2_000, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = kx.function(features)
        cf = f.get_concrete_function(x)
    np.testing.assert_allclose(f(x), features(x), rtol=1e-6)
    traced, optimised = cf.node_counts["traced"], cf.node_counts["optimised"]
    base = _best_ms(lambda: features(x), number, repeat) * 1e3
    ours = _best_ms(lambda: f(x), number, repeat) * 1e3
    return [
        (
            "P2 foldable program: nodes traced → optimised",
            f"{traced} → {optimised} nodes",
            f"-{1 - optimised / traced:.0%} nodes",
            "fewer nodes",
        ),
        (
            "P2 same, per call (1,000 x f32): plain NumPy vs kx.function",
            f"{base:.1f} µs vs {ours:.1f} µs",
            f"{base / ours:.2f}x NumPy speed",
            "> 1.00x",
        ),
    ]


def rows(quick: bool) -> list[Row]:
    """All optimiser rows: ``(benchmark, time, ratio, target)``."""
    return bench_power(quick) + bench_foldable(quick)


def main() -> None:
    from table import main as run_suite

    run_suite(rows, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
