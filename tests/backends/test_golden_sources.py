"""Generated code for representative graphs, checked against reviewed copies (golden files).

A change to a code generator shows up here as a readable diff of the code it writes: the
NumPy executor's straight-line function, the fused executor's host code and one kernel
module (and the CUDA kernel of the same segment), whole-graph functions: nested index
loops, a solver's ``while`` on its residual, and rows fused into one pass (layer norm and
softmax), and the direct entry that serves a compiled function's cache hits. When the
change is intended, write the new copies and review their diff in the commit:

    KX_WRITE_GOLDEN=1 python -m pytest tests/backends/test_golden_sources.py

Every copy is also compiled by Python (``compile``), as every emitted function must be.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends import compiler

GOLDEN = Path(__file__).parent / "golden"


def dense(x, w, b):
    return np.tanh(x @ w + b)


def softmax_rows(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def jacobi_solve(A, b):
    # a solver as textbooks write it: sweep until the residual is small
    x = np.zeros_like(b)
    r = b - A @ x
    while np.sqrt(np.sum(r * r)) > 1e-10:
        x = x + r / np.diag(A)
        r = b - A @ x
    return x


def layer_norm_softmax(x):
    z = (x - x.mean(axis=1, keepdims=True)) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def triangle(A):
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= A[j, j] * 0.1
    return A


@pytest.fixture(autouse=True)
def synchronous():
    old = compiler.set_synchronous(True)
    yield
    compiler.set_synchronous(old)


def _numpy_executor() -> str:
    x, w, b = np.ones((4, 3)), np.ones((3, 5)), np.zeros(5)
    return kx.function(dense, backend="numpy").get_concrete_function(x, w, b).source


def _fused_host() -> str:
    x = np.linspace(0.0, 1.0, 64 * 64).reshape(64, 64)
    return kx.function(softmax_rows, backend="numba").get_concrete_function(x).source


def _fused_kernel() -> str:
    x = np.linspace(0.0, 1.0, 64 * 64).reshape(64, 64)
    f = kx.function(softmax_rows, backend="numba")
    f(x)
    run = f.get_concrete_function(x).executable.run
    seg = run.__globals__["_seg1"]  # exp(x - max) and its row sums: a map and a reduction
    handles = [v for v in seg.__globals__.values() if hasattr(v, "ksrc")]
    (handle,) = {id(h): h for h in handles if "exp" in h.ksrc.source}.values()
    return handle.ksrc.source


def _whole_graph() -> str:
    A = np.arange(900.0).reshape(30, 30) / 900
    f = kx.function(triangle, jit_compile=True)  # (its source, not compiled)
    return f.get_concrete_function(A).executable.run.__globals__["_H"].ksrc.source


def _whole_graph_solver() -> str:
    A = np.eye(8) * 4.0 + np.ones((8, 8)) * 0.1
    b = np.arange(8.0)
    f = kx.function(jacobi_solve, jit_compile=True)  # (its source, without compiling it)
    return f.get_concrete_function(A, b).executable.run.__globals__["_H"].ksrc.source


def _whole_graph_rows() -> str:
    x = np.linspace(0.0, 1.0, 64 * 32, dtype=np.float32).reshape(64, 32)
    f = kx.function(layer_norm_softmax, jit_compile=True)  # (its source, not compiled)
    return f.get_concrete_function(x).executable.run.__globals__["_H"].ksrc.source


def scale_lower(A, v, a):
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] = A[i, j] * a + v[j]
    return A.sum()


def _direct_entry() -> str:
    # the direct entry of a trace that writes into an argument and takes a 0-d one
    A, v, a = np.ones((12, 12)), np.arange(12.0), np.array(0.5)
    f = kx.function(scale_lower, jit_compile=True)  # (its entry's source, not compiled)
    specs = [(x.shape, x.dtype) for x in (A, v, a)]
    return f.get_concrete_function(A, v, a).executable.direct.source(specs, frozenset({0}))[0]


def _cuda_kernel() -> str:
    # The CUDA kernel of the map of softmax_rows, written from its segment (no device needed)
    from kernel_ext.backends.codegen import can_compile, generate
    from kernel_ext.passes.fusion import partition

    # (another size pattern than the fused tests' 64 x 64: a second trace of one pattern
    # would make their executor the size-generic one, shared across traces)
    x = np.linspace(0.0, 1.0, 32 * 16).reshape(32, 16)
    graph = kx.function(softmax_rows, backend="numba").get_concrete_function(x).graph
    segments = partition(graph, lambda n: can_compile(n, "cuda"))
    (seg,) = [s for s in segments if any(n.op.value == "exp" for n in s.nodes)]
    return generate(seg, "cuda").source


SOURCES: dict[str, Callable[[], str]] = {
    "cuda_kernel_softmax.py": _cuda_kernel,
    "numpy_executor_dense.py": _numpy_executor,
    "fused_host_softmax.py": _fused_host,
    "fused_kernel_softmax.py": _fused_kernel,
    "whole_graph_triangle.py": _whole_graph,
    "whole_graph_solver.py": _whole_graph_solver,
    "whole_graph_row_fusion.py": _whole_graph_rows,
    "direct_entry.py": _direct_entry,
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_generated_source_matches_its_reviewed_copy(name):
    source = SOURCES[name]()
    compile(source, name, "exec")  # the emitted code is valid Python
    path = GOLDEN / name
    if os.environ.get("KX_WRITE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(source)
    want = path.read_text()
    diff = "".join(
        difflib.unified_diff(
            want.splitlines(True), source.splitlines(True), f"golden/{name}", "generated"
        )
    )
    assert source == want, (
        f"the generated code changed:\n{diff}\nIf intended: KX_WRITE_GOLDEN=1 python -m pytest "
        "tests/backends/test_golden_sources.py, and review the diff of tests/backends/golden/"
    )
