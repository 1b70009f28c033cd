"""Graph loops whose trip count is known only at run time: ``kx.range(n)`` and rows of ``x``.

``for i in kx.range(n)`` and ``for row in x`` (``x`` of unknown length) become one graph loop
whose target starts typed like an item; with ``n == 0`` or an empty ``x`` Python runs no
iteration, so the traced function must not read an item either. An integer ``kx.range`` with a
constant step is counted, not materialised (item ``k`` is ``start + k * step`` in the range's
dtype), so ``jit_compile=True`` compiles the loop into one function. Each program runs eagerly
and traced on every executor, at trip counts 0, 1 and more, and must match NumPy bitwise.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from markers import cheap_paths
from same_as_numpy import assert_same

import kernel_ext as kx

PATHS = {"numpy": {"backend": "numpy"}, "auto": {}, "jit": {"jit_compile": True}}


def weighted_sum(x, n):
    total = x * 0
    for i in kx.range(n):
        total = total + x * i
    return total


def countdown(x, n):
    acc = np.zeros_like(x)
    for k in kx.range(n, 0, -1):
        acc[k % x.shape[0]] += 0.5 * k
    return acc


def row_norms(m):
    out = np.zeros(3)
    for row in m:
        out += row * row
    return np.sqrt(out)


def last_index(x, n):
    last = -1
    for i in kx.range(n):
        last = i
    return x + last


@pytest.mark.parametrize("path", cheap_paths(PATHS))
@pytest.mark.parametrize("n", [0, 1, 4])
@pytest.mark.parametrize("program", [weighted_sum, countdown, last_index])
def test_a_range_of_run_time_length_runs_zero_or_more_times_as_python_does(program, n, path):
    x = np.linspace(-1.0, 2.0, 5)
    expected = program(x.copy(), np.int64(n))
    traced = kx.function(program, **PATHS[path])
    assert_same(traced(x.copy(), np.int64(n)), expected)
    assert_same(traced(x.copy(), np.int64(0)), program(x.copy(), np.int64(0)))


@pytest.mark.parametrize("path", cheap_paths(PATHS))
@pytest.mark.parametrize("rows", [0, 1, 6])
def test_rows_of_an_array_of_run_time_length_run_zero_or_more_times(rows, path):
    m = np.arange(rows * 3, dtype=np.float64).reshape(rows, 3) - 2.5
    traced = kx.function(
        row_norms, input_signature=[kx.TensorSpec([None, 3], np.float64)], **PATHS[path]
    )
    assert_same(traced(m.copy()), row_norms(m.copy()))


def stepped_sum(x, start, stop, step, dtype):
    total = np.float64(0)
    hits = np.zeros_like(x)
    for k in kx.range(start, stop, step, dtype=dtype):
        total = total + x[k % x.shape[0]] * k
        hits[k % x.shape[0]] += 1
    return total, hits


RANGES = [
    # (start, stop, step): traced bounds are passed as arguments, others are constants
    (0, 9, 1),
    (-3, 20, 3),
    (17, -2, -1),
    (12, 1, -4),
    (5, 5, 1),
    (6, 2, 2),
]


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("bounds", RANGES, ids=str)
@pytest.mark.parametrize("path", cheap_paths(PATHS))
def test_an_integer_range_of_traced_bounds_counts_its_items_as_numpy_does(bounds, dtype, path):
    start, stop, step = bounds
    x = np.linspace(-2.0, 3.0, 7)

    def program(x, start, stop):
        return stepped_sum(x, start, stop, step, dtype)

    expected = program(x.copy(), dtype(start), dtype(stop))
    traced = kx.function(program, **PATHS[path])
    with warnings.catch_warnings():
        # jit_compile=True warns when an op falls back to fused segments: none may here
        warnings.simplefilter("error", RuntimeWarning)
        got = traced(x.copy(), dtype(start), dtype(stop))
    assert_same(got, expected)
    concrete = traced.concrete_functions[0]
    assert not any(node.op.name == "ARANGE" for node in concrete.graph.nodes)  # (counted)
    if path == "jit":  # one compiled function, the loop in it (its module holds _H)
        assert concrete.executable.wait(600)
        assert "_H" in concrete.executable.run.__globals__
