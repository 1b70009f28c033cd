"""Executors for finished graphs, and the one entry point the engine compiles through.

``compile_for(graph, tree, n_params, options)`` returns an :class:`Executable`: the callable a
ConcreteFunction runs on every call, plus what the UI reports about it (backend, fused
segments, compile state). Today every graph runs on the NumPy code generator
(:mod:`.numpy_backend`); the Numba CPU and CUDA executors plug in here (``numba_cpu`` /
``numba_cuda``, imported lazily: ``import kernel_ext`` never loads Numba).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..ir import Graph
from ..trace.pytree import TreeNode
from .numpy_backend import compile_graph, generate_source

BACKENDS = ("auto", "numpy")


@dataclass
class Executable:
    """A compiled graph: ``run(*params)`` and the facts the UI shows about it."""

    run: Callable[..., Any]
    source: str
    backend: str = "numpy"
    segments: list[dict[str, Any]] = field(default_factory=list)
    compile_ms: float = 0.0


def validate_options(backend: str, jit_compile: bool | None) -> None:
    """Reject backend options this installation cannot honour, naming the choices."""
    if backend not in BACKENDS:
        raise ValueError(f"kx.function(backend={backend!r}): available backends are "
                         f"{', '.join(map(repr, BACKENDS))}")
    if jit_compile:
        raise ValueError("kx.function(jit_compile=True) needs the Numba whole-graph backend, "
                         "which this version does not have yet. Fix: leave jit_compile unset.")


def compile_for(graph: Graph, tree: TreeNode, n_params: int, *, backend: str = "auto",
                jit_compile: bool | None = None, name: str = "graph") -> Executable:
    """Compile ``graph`` for the requested backend."""
    run, source = compile_graph(graph, tree, n_params, filename=f"<kx-graph {name}>")
    return Executable(run, source, "numpy")


__all__ = ["BACKENDS", "Executable", "compile_for", "compile_graph", "generate_source",
           "validate_options"]
