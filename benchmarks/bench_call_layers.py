"""Where a call of a compiled loop kernel spends its time, layer by layer, against hand Numba.

    python benchmarks/bench_call_layers.py                      # the microsecond kernels
    python benchmarks/bench_call_layers.py --only popcounts,lu  # any of bench_loops' kernels

For each kernel of ``bench_loops.py`` (at its default size) the table shows, in microseconds
per call (best of several timeit runs, same inputs, same process):

* ``njit``: the hand-written loop, ``numba.njit(kernel)(*args)``;
* ``graph``: the function the whole-graph compiler generates, called through Numba's
  dispatcher with every argument the runner passes it (the inputs, the graph's constant
  arrays, the table of NumPy loops) — compiled here from the same source, so what it adds
  over ``njit`` is the generated code and its extra arguments;
* ``run``: the runner (``Executable.run``) that picks the contiguous or any-layout variant,
  calls ``graph`` and builds the result;
* ``keyed``: ``kx.function(kernel, jit_compile=True)(*args)`` with its direct entry kept
  off: the argument key, the cache lookup, the guard and ``run`` (every call before direct
  entries);
* ``call``: the user's call as it is: from the third call of a signature, its direct entry
  (``backends/whole_graph/direct.py``) tests the arguments and calls ``graph`` itself.

The last columns are the layers' own costs (``graph - njit``, ``keyed - graph``,
``call - graph``). On kernels of a few microseconds these layers decide the ratio to hand
Numba; on long ones they vanish.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import timeit
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the kernel_ext of this checkout
sys.path.insert(0, str(HERE))

#: bench_loops' kernels that run in a few microseconds at the default size
SHORT = "popcounts,prefix_sum,trisolv,sparse_matvec,iir_filter,histogram,xorshift_stream"


def _best_us(fn: Callable[[], Any]) -> float:
    number = 200
    while min(timeit.repeat(fn, number=number, repeat=1)) < 0.05:
        number *= 4
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def _generated_graph(cf: Any, folder: Path, name: str) -> tuple[Callable, list[Any]]:
    """The whole-graph function of ``cf``'s graph, compiled from its source in a module of
    its own, and the extra arguments the runner passes after the inputs."""
    from kernel_ext.backends.whole_graph.build import _for_compiling, write_function

    writer, source = write_function(_for_compiling(cf.graph), cf.output_tree)
    (folder / f"kx_layers_{name}.py").write_text(source)
    module = importlib.import_module(f"kx_layers_{name}")
    extra = list(writer.constants)
    if writer.loop_args:
        extra.append(np.array([a for pair in writer.loop_args for a in pair], np.uintp))
    return module.graph, extra


def measure(name: str, kernel: Callable, make: Callable[[], tuple], folder: Path) -> str:
    import numba

    import kernel_ext as kx
    from kernel_ext.backends import compiler

    args = [a.copy() if isinstance(a, np.ndarray) else a for a in make()]
    hand = numba.njit(kernel)
    hand(*args)
    f = kx.function(kernel, jit_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(*args)
    compiler.wait_for_kernels(timeout=300)
    f(*args)
    cf = f.get_concrete_function(*args)
    graph, extra = _generated_graph(cf, folder, name)
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    graph(*arrays, *extra)
    run = cf.executable.run
    keyed = kx.function(kernel, jit_compile=True)
    keyed(*args)
    keyed._direct_from = sys.maxsize  # (never armed: every call takes the keyed path)
    t = {
        "njit": _best_us(lambda: hand(*args)),
        "graph": _best_us(lambda: graph(*arrays, *extra)),
        "run": _best_us(lambda: run(*args)),
        "keyed": _best_us(lambda: keyed(*args)),
        "call": _best_us(lambda: f(*args)),
    }
    layers = (t["graph"] - t["njit"], t["keyed"] - t["graph"], t["call"] - t["graph"])
    return (
        f"{name:<16} {t['njit']:8.2f} {t['graph']:8.2f} {t['run']:8.2f} {t['keyed']:8.2f} "
        f"{t['call']:8.2f} | "
        + " ".join(f"{d:+8.2f}" for d in layers)
        + f" | {t['njit'] / t['call']:6.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=SHORT, help="comma-separated kernel names")
    options = parser.parse_args(argv)
    import bench_loops

    wanted = [n for n in options.only.split(",") if n]
    cases = {name: (kernel, make) for name, kernel, make in bench_loops._cases(48)}
    head = (
        f"{'kernel':<16} {'njit':>8} {'graph':>8} {'run':>8} {'keyed':>8} {'call':>8} | "
        f"{'graph':>8} {'keyed':>8} {'call':>8} | vs njit"
    )
    print(f"{'':<16} {'microseconds per call':^44} | {'over njit, over graph':^26} |")
    print(head)
    print("-" * len(head))
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, tmp)
        for name in wanted:
            kernel, make = cases[name]
            print(measure(name, kernel, make, Path(tmp)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
