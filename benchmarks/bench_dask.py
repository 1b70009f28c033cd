"""Dask benchmark (issue 18): W3's chain on a chunked Dask array, on a 2-worker LocalCluster.

    python benchmarks/bench_dask.py            # 40M float32 elements in 100 chunks
    python benchmarks/bench_dask.py --quick    # 10M elements in 100 chunks (the table run)
    python benchmarks/bench_dask.py --full     # the issue's size: 200M elements, 100 chunks

* **W14**: ``tanh(a*x+b)*sigmoid(x)+0.5*x*x-c`` on four float32 Dask arrays of the same
  chunking, traced once with ``kx.function`` (one fused Numba task per chunk), against the
  same expression written with ``dask.array`` (one task per NumPy op per chunk), both on a
  ``distributed.LocalCluster`` of 2 single-threaded worker processes on loopback. Targets:
  ≤ 0.5x dask.array's time and ≤ 1/5 of its tasks. A ``fast_math=True`` row shows the same
  graph with the kernels' inline approximations.

The inputs are made with ``da.random`` and persisted on the workers first, and each result is
persisted (computed and kept on the workers, not sent back), so the timings are the
expression's own work: building the graph, scheduling it and computing the chunks. Tasks
are counted in the graph as built (the expression's layers, the inputs' own tasks left
out; the totals with them are in the same row), and after Dask's own optimisation, which
fuses chains of blockwise layers before scheduling. Kernels are compiled on the workers by
a warm-up run first. Timings are the best of several repeats (the machine is shared).
Without dask and distributed installed the rows say so and are skipped.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from table import Row, format_table

CHUNKS = 100


def _w3(x: Any, a: Any, b: Any, c: Any) -> Any:
    return np.tanh(a * x + b) * (1 / (1 + np.exp(-x))) + 0.5 * x * x - c


def _w3_dask(x: Any, a: Any, b: Any, c: Any) -> Any:
    import dask.array as da

    return da.tanh(a * x + b) * (1 / (1 + da.exp(-x))) + 0.5 * x * x - c


def _own_tasks(result: Any, inputs: list) -> tuple[int, int]:
    """(tasks the expression added, tasks in all) of ``result``'s graph as built."""
    graph = dict(result.__dask_graph__())
    inherited: set = set()
    for x in inputs:
        inherited |= set(dict(x.__dask_graph__()))
    return len(set(graph) - inherited), len(graph)


def _optimised_tasks(result: Any) -> int:
    import dask

    (opt,) = dask.optimize(result)
    return len(dict(opt.__dask_graph__()))


def _held(keys: list, dask_scheduler: Any = None) -> bool:
    """(Run on the scheduler) does it still hold any of ``keys``?"""
    return any(k in dask_scheduler.tasks for k in keys)


def _best_s(client: Any, build: Callable[[], Any], repeat: int) -> float:
    """Best time of building ``build()``'s graph and persisting its result on the workers.
    Each result is released, and forgotten by the scheduler, before the next run: graph
    keys are deterministic, and a result still held would be reused, not computed."""
    import dask.core
    import distributed

    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        held = client.persist(build())
        distributed.wait(held)
        best = min(best, time.perf_counter() - t0)
        keys = list(dask.core.flatten(held.__dask_keys__()))
        del held
        while client.run_on_scheduler(_held, keys):
            time.sleep(0.01)
    return best


def bench_w14(n: int, repeat: int, chunks: int = CHUNKS) -> list[Row]:
    """W14's rows for ``n`` float32 elements in ``chunks`` chunks."""
    if importlib.util.find_spec("dask") is None or importlib.util.find_spec("distributed") is None:
        return [
            (
                "W14 Dask: skipped (dask/distributed not installed: "
                'pip install "jupyterlab-tffunction[dask]")',
                "",
                "",
                "",
            )
        ]
    import dask.array as da
    import distributed

    import kernel_ext as kx

    label = f"{n // 1_000_000}M" if n >= 1_000_000 else str(n)
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            protocol="tcp",
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        rng = da.random.default_rng(0)
        inputs = [
            rng.standard_normal(n, chunks=-(-n // chunks), dtype=np.float32) for _ in range(4)
        ]
        inputs = client.persist(inputs)
        distributed.wait(inputs)
        f = kx.function(_w3)
        fm = kx.function(_w3, fast_math=True)

        def ours() -> Any:
            return f(*inputs)

        def ours_fm() -> Any:
            return fm(*inputs)

        def theirs() -> Any:
            return _w3_dask(*inputs)

        # warm-up: traces once and compiles the kernel once per worker (or loads it)
        for build in (ours, ours_fm, theirs):
            _best_s(client, build, 1)
        # same values (W3 is bitwise on the fused path): checked on a few chunks
        probe = slice(0, min(n, 1_000_000))
        np.testing.assert_array_equal(
            f(*inputs)[probe].compute(), _w3_dask(*inputs)[probe].compute()
        )
        np.testing.assert_allclose(
            fm(*inputs)[probe].compute(), _w3_dask(*inputs)[probe].compute(), rtol=1e-5, atol=1e-5
        )
        t_ours = _best_s(client, ours, repeat)
        t_fm = _best_s(client, ours_fm, repeat)
        t_theirs = _best_s(client, theirs, repeat)
        own, total = _own_tasks(f(*inputs), inputs)
        own_d, total_d = _own_tasks(_w3_dask(*inputs), inputs)
        opt_ours, opt_d = _optimised_tasks(f(*inputs)), _optimised_tasks(_w3_dask(*inputs))
    head = f"W14 W3 chain, {label} f32 in {chunks} chunks, 2-worker LocalCluster"
    return [
        (
            f"{head}: dask.array expression ({own_d} tasks + {total_d - own_d} input tasks)",
            f"{t_theirs * 1e3:.0f} ms",
            "",
            "",
        ),
        (
            f"W14 kx.function on the same Dask arrays ({own} tasks + {total - own} input tasks)",
            f"{t_ours * 1e3:.0f} ms",
            f"{t_ours / t_theirs:.2f}x dask.array time",
            "≤ 0.50x",
        ),
        (
            "W14 kx.function(fast_math=True) (inline approximations, same tasks)",
            f"{t_fm * 1e3:.0f} ms",
            f"{t_fm / t_theirs:.2f}x dask.array time",
            "",
        ),
        (
            "W14 tasks the expression adds: kx.function / dask.array",
            f"{own} / {own_d}",
            f"{own / own_d:.3f} (1/{own_d / own:.1f})",
            "≤ 0.200 (1/5)",
        ),
        (
            "W14 tasks after dask.optimize (Dask fuses blockwise layers itself): kx / dask",
            f"{opt_ours} / {opt_d}",
            f"{opt_ours / opt_d:.3f}",
            "",
        ),
    ]


def rows(quick: bool) -> list[Row]:
    """The rows ``benchmarks/run.py`` prints: 10M elements with ``quick``, else 40M."""
    return bench_w14(10_000_000 if quick else 40_000_000, 2 if quick else 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10M elements (smoke test)")
    parser.add_argument(
        "--full", action="store_true", help="the issue's size: 200M elements (3.2 GB of inputs)"
    )
    parser.add_argument("--size", type=int, default=None, help="elements (overrides)")
    args = parser.parse_args()
    n = args.size or (200_000_000 if args.full else 10_000_000 if args.quick else 40_000_000)
    print(format_table(bench_w14(n, 2 if args.quick else 3)))


if __name__ == "__main__":
    main()
