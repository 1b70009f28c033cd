"""Reads a loop does not change, made once before it by the whole-graph compiler.

A read of one element of an array the loop only captures, at an index the loop does not change
and that is in range by the static shape (``weights[i]`` in the inner loop of a knapsack), is
written before the loop (``ControlFlow._invariant_reads``). These tests pin which reads move,
which stay (an index the data or a traced argument chooses, an array the loop itself writes),
and that the compiled function still answers as NumPy: results, arguments, and NumPy's
IndexError for a read that only runs when the loop does. (Kernels compile synchronously
here: ``tests/backends/conftest.py``.)
"""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends.whole_graph.build import write_function

pytestmark = pytest.mark.slow  # (each test compiles: seconds from a cold kernel cache)


def knapsack_rows(weights, values, best):
    """0/1 knapsack over a table the caller gives (written in place), heaviest capacity first."""
    for i in range(weights.shape[0]):
        for c in range(best.shape[0] - 1, weights[i] - 1, -1):
            take = best[c - weights[i]] + values[i]
            if take > best[c]:
                best[c] = take
    return best


def picked_sums(x, k, m):
    """x[k] added m times: the read runs only when the loop does."""
    s = 0.0
    for _ in range(m):
        s += x[k]
    return s


def lower_prefix(x):
    """Row i holds multiples of x[i] below the diagonal: no column at all for row 0."""
    out = np.zeros((x.shape[0], x.shape[0]))
    for i in range(x.shape[0]):
        for j in range(i):
            out[i, j] = x[i] * (j + 1)
    return out


def running_first_column(A):
    """Each row's first element grows as the row is swept: a read of the array being written."""
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            A[i, j] = A[i, 0] + 1.0
    return A


def _hoisted(f, *args) -> int:
    """How many reads the compiled function of ``f``'s trace for ``args`` makes before a loop."""
    cf = f.get_concrete_function(*args)
    writer, _ = write_function(cf.graph, cf.output_tree)
    return len(writer.hoisted)


def _same(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("capacity", [3, 40])  # rows whose inner loop never runs, and none
def test_reads_of_captured_arrays_move_before_the_loop_and_results_stay_numpys(capacity):
    rng = np.random.default_rng(3)
    weights, values = rng.integers(1, 8, 24), rng.integers(1, 20, 24)
    f = kx.function(knapsack_rows, jit_compile=True)
    mine, theirs = np.zeros(capacity, np.int64), np.zeros(capacity, np.int64)
    _same(f(weights, values, mine), knapsack_rows(weights, values, theirs))
    _same(mine, theirs)  # the caller's table, written in place as NumPy writes it
    assert _hoisted(f, weights, values, mine) == 2  # weights[i] and values[i]
    for _ in range(3):  # the compiled function's later calls, from fresh tables
        mine, theirs = np.zeros(capacity, np.int64), np.zeros(capacity, np.int64)
        _same(f(weights, values, mine), knapsack_rows(weights, values, theirs))
        _same(mine, theirs)


def test_a_read_in_a_loop_that_runs_no_iteration_has_no_effect():
    x = np.arange(1.0, 21.0)  # (past loops.SHORT_RANGE: a loop, not unrolled rows)
    f = kx.function(lower_prefix, jit_compile=True)
    _same(f(x), lower_prefix(x))  # row 0's x[0] is read before a loop of no iteration
    assert _hoisted(f, x) == 1


def test_a_traced_index_stays_in_the_loop_with_numpys_index_error():
    x = np.arange(5.0)
    f = kx.function(picked_sums, jit_compile=True)
    for k, m in ((np.int64(2), np.int64(3)), (np.int64(9), np.int64(0))):
        _same(f(x, k, m), picked_sums(x, k, m))  # k out of range, but never read: 0.0
    assert _hoisted(f, x, np.int64(9), np.int64(0)) == 0
    with pytest.raises(IndexError):
        picked_sums(x, np.int64(9), np.int64(2))
    with pytest.raises(IndexError):
        f(x, np.int64(9), np.int64(2))


def test_a_read_of_the_array_the_loop_writes_stays_in_the_loop():
    A = np.arange(12.0).reshape(3, 4)
    f = kx.function(running_first_column, jit_compile=True)
    mine, theirs = A.copy(), A.copy()
    _same(f(mine), running_first_column(theirs))
    _same(mine, theirs)
    assert _hoisted(f, A) == 0
