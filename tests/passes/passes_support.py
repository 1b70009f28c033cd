"""Helpers for the pass tests: unoptimised traces, bitwise comparison, special values."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import kernel_ext as kx
from kernel_ext.ir import Graph, Node, interpret

_ENGINE = sys.modules["kernel_ext.engine.function"]


def trace_raw(fn: Callable, *args: Any) -> Graph:
    """The graph ``kx.function(fn)`` traces for ``args``, before any pass ran."""
    saved = _ENGINE.run_pipeline
    _ENGINE.run_pipeline = lambda graph: graph
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # AutoGraph cannot read source of generated code
            return kx.function(fn).get_concrete_function(*args).graph
    finally:
        _ENGINE.run_pipeline = saved


def array_inputs(values: list[Any]) -> list[Any]:
    """The arguments that became placeholders (arrays and NumPy scalars), in order."""
    return [v for v in values if isinstance(v, (np.ndarray, np.generic))]


def assert_identical(a: Any, b: Any, what: str = "") -> None:
    """Same dtype, same shape, and the same bits (NaN payloads and signed zeros included).

    Extended-precision floats carry padding bytes with no meaning; those are compared by value,
    NaN-ness and sign bit instead.
    """
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}"
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    # float128 / complex256 are x87 80-bit values padded to 16 / 32 bytes
    padded = a.dtype.kind in "fc" and a.dtype.itemsize > (8 if a.dtype.kind == "f" else 16)
    if padded:
        for pa, pb in ((a.real, b.real), (a.imag, b.imag)) if a.dtype.kind == "c" else ((a, b),):
            assert np.array_equal(pa, pb, equal_nan=True), f"{what}: {a!r} != {b!r}"
            assert np.array_equal(np.signbit(pa), np.signbit(pb)), f"{what}: sign bits differ"
        return
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes(), (
        f"{what}: {a!r} != {b!r}"
    )


def run_graph(graph: Graph, inputs: list[Any]) -> tuple[list[Any] | None, list[str]]:
    """``interpret(graph, inputs)`` and what happened: the outputs (or ``None`` if it raised)
    and the sorted names of the warnings / exception raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = interpret(graph, inputs)
            raised: list[str] = []
        except Exception as e:
            out, raised = None, [type(e).__name__]
    return out, sorted({w.category.__name__ for w in caught} | set(raised))


def special_values(dtype: Any, n: int = 67) -> np.ndarray:
    """``n`` values of ``dtype`` that break careless rewrites: NaN of both signs, signed zeros,
    infinities, extremes, subnormals, integer limits. ``n`` > 16 reaches NumPy's SIMD loops."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(0)
    if dtype.kind == "b":
        base = np.array([True, False])
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        base = np.array(
            [info.min, info.max, 0, 1, 2, info.max - 1, info.min + 1]
            + ([-1, -2] if dtype.kind == "i" else []),
            dtype,
        )
    else:
        real = np.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype
        info = np.finfo(real)
        floats = np.array(
            [np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 0.5, -2.5, 1 / 3], real
        )
        floats = np.concatenate(
            [
                floats,
                np.array(
                    [
                        info.max,
                        -info.max,
                        info.tiny,
                        -info.tiny,
                        info.smallest_subnormal,
                        -info.smallest_subnormal,
                    ],
                    real,
                ),
            ]
        )
        if dtype.kind == "c":
            base = np.empty((len(floats), len(floats)), dtype)
            base.real, base.imag = floats[:, None], floats[None, :]  # no arithmetic: no NaN
            base = base.ravel()
        else:
            base = floats
    reps = -(-n // len(base))
    values = np.tile(base, reps)[:n] if len(base) < n else base
    return rng.permutation(values).astype(dtype)


def ops(graph: Graph) -> list[str]:
    """The op names of ``graph``'s non-placeholder nodes, in program order."""
    return [n.op.value for n in graph.nodes if n.op.value != "placeholder"]


def snapshot(graph: Graph) -> list[tuple[Node, str, tuple, dict]]:
    """Everything a pure pass must leave alone in its input graph."""
    return [(n, n.name, n.args, dict(n.params)) for n in graph.nodes]
