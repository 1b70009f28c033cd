"""Executors for finished graphs, and the one entry point the engine compiles through.

``compile_traced(traced, tree, n_params, optimize=..., backend=..., jit_compile=...)``
optimises a traced graph and returns it with an :class:`Executable`: the callable a
ConcreteFunction runs on every call, plus what the UI reports about it (backend, fused segments
with their compile state, compile time). ``compile_for`` compiles an optimised graph.

Backends:

* ``"numpy"`` — the NumPy code generator (:mod:`.numpy_backend`), the reference executor;
* ``"numba"`` — every fusible segment compiled by Numba for the CPU (:mod:`.fused`);
* ``"auto"`` (default) — the cost model (:mod:`.cost`) picks the segments worth fusing; CUDA
  when a real GPU is present;
* ``"cuda"`` — fused segments as CUDA kernels (:mod:`.numba_cuda`; the CUDA simulator counts
  when ``NUMBA_ENABLE_CUDASIM=1``).

* ``"dask"`` — Dask arrays in, Dask arrays out (the :mod:`.dask_backend` package): fused
  segments become one blockwise task per block running their Numba kernel; chosen by itself
  when a call passes Dask arrays. Dask is imported by that package only, when such a trace is
  compiled.

``jit_compile=True`` compiles the whole graph, control flow included, into one Numba function
(:mod:`.whole_graph`). Numba itself is imported lazily, by the compile step only:
``import kernel_ext`` never loads it.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

from ..ir import Graph
from ..ir.structure import TreeNode
from . import tiering
from .executable import (
    DIRECT_MISS,
    ArgumentSpec,
    ArraySpec,
    CallGate,
    DirectEntryFactory,
    Executable,
    NumPyScalar,
    PythonValue,
)
from .numpy_backend import compile_graph, generate_source
from .sharing import SharedExecutables, erase_sizes, size_pattern_key, tree_key

BACKENDS = ("auto", "numpy", "numba", "cuda", "dask")
#: Re-raise errors of the fusing backend instead of falling back to NumPy (for tests).
STRICT = os.environ.get("KERNEL_EXT_STRICT", "") not in ("", "0")
#: Tiered ``auto`` (:mod:`.tiering`): hot pure traces may move to the whole-graph executor.
#: ``KERNEL_EXT_TIERING=0`` turns it off (tests of the fused executor alone set it).
TIERING = os.environ.get("KERNEL_EXT_TIERING", "1") not in ("", "0")
#: Fused executors shared by traces that differ only in sizes (see :mod:`.sharing`).
SHARED = SharedExecutables()


@functools.lru_cache(maxsize=1)
def dask_available() -> bool:
    return importlib.util.find_spec("dask") is not None


@functools.lru_cache(maxsize=1)
def numba_available() -> bool:
    return importlib.util.find_spec("numba") is not None


def validate_options(backend: str, jit_compile: bool | None, fast_math: bool = False) -> None:
    """Reject backend options this installation cannot honour, naming the choices."""
    if backend not in BACKENDS:
        raise ValueError(
            f"kx.function(backend={backend!r}): available backends are "
            f"{', '.join(map(repr, BACKENDS))}"
        )
    if backend == "dask":
        if not dask_available():
            raise ValueError(
                "kx.function(backend='dask') needs Dask, which is not installed. "
                'Fix: pip install "jupyterlab-tffunction[dask]".'
            )
        if jit_compile:
            raise ValueError(
                "kx.function(jit_compile=True, backend='dask'): Dask runs the "
                "graph block by block, not as one compiled function. Fix: leave "
                "jit_compile unset."
            )
    if (backend in ("numba", "cuda") or jit_compile) and not numba_available():
        what = f"backend={backend!r}" if backend in ("numba", "cuda") else "jit_compile=True"
        raise ValueError(
            f"kx.function({what}) needs Numba, which is not installed. "
            "Fix: pip install numba, or use backend='numpy'."
        )
    if backend == "cuda" and not _cuda_usable():
        raise ValueError(
            "kx.function(backend='cuda') needs a CUDA GPU that Numba can use "
            "(or Numba's simulator: NUMBA_ENABLE_CUDASIM=1). Fix: use "
            "backend='auto', which picks CUDA when a GPU is present."
        )
    if jit_compile and backend == "numpy":
        raise ValueError(
            "kx.function(jit_compile=True, backend='numpy'): whole-graph "
            "compilation needs Numba. Fix: use backend='auto' or 'numba'."
        )
    if fast_math and (backend == "numpy" or not numba_available()):
        raise ValueError(
            "kx.function(fast_math=True) approximates functions inside fused "
            "Numba kernels; the NumPy executor has none. Fix: use "
            "backend='auto' or 'numba' (with Numba installed), or drop "
            "fast_math."
        )


def compile_traced(
    traced: Graph,
    tree: TreeNode,
    n_params: int,
    *,
    optimize: Callable[[Graph], Graph],
    backend: str = "auto",
    jit_compile: bool | None = None,
    fast_math: bool = False,
    name: str = "graph",
) -> tuple[Graph | None, Executable]:
    """Optimise a freshly traced graph with ``optimize`` and compile it: ``(optimised graph,
    executable)``.

    Traces that differ only in sizes share one executor (fused, or whole-graph with
    ``jit_compile``; :mod:`.sharing`), keyed by the *traced* graph: the first trace of a size
    pattern is optimised and compiled for its own static shapes; the second compiles
    ``optimize(erase_sizes(traced))`` — optimised with the sizes unknown, so no pass decision
    rests on a size (``dim`` stays an op, broadcasting rules that need a size stay
    unapplied) — and leaves it in the table; every later one takes that executable as it is
    and returns ``None`` for the graph: the caller optimises it only if someone asks (the UI,
    ``cf.graph``), so a retrace costs its trace and little more.
    """
    t0 = time.perf_counter()
    if backend == "dask":  # (no executor sharing: a Dask trace's graph is built per call)
        graph = optimize(traced)
        return graph, compile_for(
            graph, tree, n_params, backend=backend, fast_math=fast_math, name=name
        )
    if backend != "numpy" and numba_available():
        # (a whole-graph function is CPU code, whatever the backend)
        target = "cpu" if jit_compile else _target(backend)
        mode = "jit_compile" if jit_compile else _mode(backend)
        if fast_math:  # a fast-math executor must never serve an exact function
            mode += "+fast_math"
        key = _share_key(traced, tree, n_params, mode, target)
        if key is not None:
            seen, shared = SHARED.lookup(key)
            if shared is not None:
                return None, Executable(
                    shared.run,
                    shared.source,
                    shared.backend,
                    shared.segments,
                    (time.perf_counter() - t0) * 1e3,
                    shared.tier,
                    direct=shared.direct,
                )
            if seen:
                erased = compile_for(
                    optimize(erase_sizes(traced)),
                    tree,
                    n_params,
                    backend=backend,
                    jit_compile=jit_compile,
                    fast_math=fast_math,
                    name=name,
                )
                SHARED.store(key, erased)
                graph = optimize(traced)
                return graph, Executable(
                    erased.run,
                    erased.source,
                    erased.backend,
                    erased.segments,
                    (time.perf_counter() - t0) * 1e3,
                    erased.tier,
                    direct=erased.direct,
                )
    graph = optimize(traced)
    return graph, compile_for(
        graph,
        tree,
        n_params,
        backend=backend,
        jit_compile=jit_compile,
        fast_math=fast_math,
        name=name,
    )


def _target(backend: str) -> str:
    return "cuda" if backend == "cuda" or (backend == "auto" and _real_gpu()) else "cpu"


def _mode(backend: str) -> str:
    return "auto" if backend == "auto" else "numba"


def compile_for(
    graph: Graph,
    tree: TreeNode,
    n_params: int,
    *,
    backend: str = "auto",
    jit_compile: bool | None = None,
    fast_math: bool = False,
    name: str = "graph",
) -> Executable:
    """Compile an optimised ``graph`` for the requested backend; ``fast_math``: fused CPU
    kernels use the approximations of :mod:`.fast_math` (within their documented ulp
    bounds) instead of NumPy's loops."""
    t0 = time.perf_counter()
    if backend == "dask":
        from .dask_backend import compile_dask

        return compile_dask(graph, tree, n_params, name=name, fast_math=fast_math)
    if jit_compile:
        from .whole_graph import compile_whole_graph

        return compile_whole_graph(graph, tree, n_params, name=name, fast_math=fast_math)
    if backend == "numpy" or not numba_available():
        run, source = compile_graph(graph, tree, n_params, filename=f"<kx-graph {name}>")
        return Executable(run, source, "numpy", compile_ms=(time.perf_counter() - t0) * 1e3)
    target = _target(backend)
    from .compiler import segment_reports
    from .fused import compile_fused

    mode = _mode(backend)
    try:
        run, source, plans = compile_fused(
            graph,
            tree,
            n_params,
            mode=mode,
            target=target,
            filename=f"<kx-fused {name}>",
            fast_math=fast_math and target == "cpu",
        )
    except Exception as e:
        # A bug in the fusing backend must never cost the user their function: the NumPy
        # executor computes the same results (STRICT, set by the tests, surfaces it).
        if STRICT or backend in ("numba", "cuda"):
            raise
        warnings.warn(
            f"kernel_ext: fusing '{name}' failed ({type(e).__name__}: {e}); it runs "
            "on the NumPy executor. Please report this.",
            RuntimeWarning,
            stacklevel=3,
        )
        run, source = compile_graph(graph, tree, n_params, filename=f"<kx-graph {name}>")
        return Executable(run, source, "numpy", compile_ms=(time.perf_counter() - t0) * 1e3)
    label = "numpy" if not plans else ("numba-cuda" if target == "cuda" else "numba-cpu")
    if target == "cuda" and plans:
        from .numba_cuda_probe import real_gpu_available

        if not real_gpu_available():
            label = "numba-cuda-sim"
    executable = Executable(
        run, source, label, segment_reports(plans, label), (time.perf_counter() - t0) * 1e3
    )
    effects = (
        tiering.effects(graph, tree)
        if mode == "auto" and target == "cpu" and TIERING and tiering.worth_it(graph)
        else None
    )
    if effects is not None:
        from .whole_graph import compile_whole_graph, unsupported_reason

        whole, draws, rngs = (
            tiering.hoist_draws(graph, n_params) if "random" in effects else (graph, [], [])
        )
        if unsupported_reason(whole) is None:
            return tiering.tiered(
                executable,
                lambda: tiering.with_draws(
                    compile_whole_graph(whole, tree, n_params + len(draws), name=name), draws
                ),
                updates_arguments="arguments" in effects,
                rngs=rngs,
                loops=tiering.holds_loops(whole),
            )
    return executable


def _share_key(graph: Graph, tree: TreeNode, n_params: int, mode: str, target: str) -> Any:
    """The key under which traces that differ only in sizes share a fused executor
    (:mod:`.sharing`), or None."""
    pattern = size_pattern_key(graph)
    if pattern is None:
        return None
    tkey = tree_key(tree)
    return None if tkey is None else (mode, target, n_params, tkey, pattern)


def _cuda_usable() -> bool:
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0"):
        return True
    return _real_gpu()


def _real_gpu() -> bool:
    """A real CUDA GPU (not the simulator), checked without importing Numba when there is
    no CUDA driver at all."""
    from .numba_cuda_probe import real_gpu_available

    return real_gpu_available()


__all__ = [
    "BACKENDS",
    "DIRECT_MISS",
    "ArgumentSpec",
    "ArraySpec",
    "CallGate",
    "DirectEntryFactory",
    "Executable",
    "NumPyScalar",
    "PythonValue",
    "compile_for",
    "compile_graph",
    "compile_traced",
    "dask_available",
    "generate_source",
    "numba_available",
    "validate_options",
]
