"""Executors for finished graphs: the NumPy code generator (reference speed path).

Numba CPU and CUDA executors live in ``numba_cpu`` / ``numba_cuda`` (imported lazily: Numba is
never loaded by ``import kernel_ext``).
"""

from .numpy_backend import compile_graph, generate_source

__all__ = ["compile_graph", "generate_source"]
