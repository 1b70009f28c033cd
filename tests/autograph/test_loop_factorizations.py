"""Textbook in-place factorisations as index loops: every executor leaves NumPy's bits.

A Python ``range`` of at most ``loops.SHORT_RANGE`` items unrolls while tracing until the
loop statement has recorded ``loops.UNROLL_NODE_BUDGET`` graph nodes, then tries its
remaining iterations as one graph loop (``kernel_ext/autograph/loops.py``); a longer range is
one graph loop from its first item. A try whose body turns out to be no loop body falls back
to unrolling; the iteration it peeled first (a Python number carried) has already run for
real, and once ran again — an outer row updated twice (the 30-row triangular update, Cholesky
with NaNs at 20 rows, wrong LU and Gram-Schmidt factors). These kernels run at sizes on both
sides of the budget, with the budget as shipped (the NumPy executor: tracing is what changes)
and lowered so small sizes cross it (every executor), compared bitwise with eager NumPy,
results and arguments.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from markers import cheap_paths

import kernel_ext as kx
from kernel_ext.autograph import loops

PATHS = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}


def triangular_update(A):
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= A[j, j] * 0.1


def cholesky(A):
    n = A.shape[0]
    for j in range(n):
        for k in range(j):
            A[j, j] -= A[j, k] * A[j, k]
        A[j, j] = np.sqrt(A[j, j])
        for i in range(j + 1, n):
            for k in range(j):
                A[i, j] -= A[i, k] * A[j, k]
            A[i, j] /= A[j, j]
    return A


def lu_doolittle(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[k, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            for k in range(i):
                A[i, j] -= A[i, k] * A[k, j]
    return A


def lu_solve(A, b):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[k, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            for k in range(i):
                A[i, j] -= A[i, k] * A[k, j]
    y = np.zeros(n)
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= A[i, j] * y[j]
        y[i] = s
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        s = y[i]
        for j in range(i + 1, n):
            s -= A[i, j] * x[j]
        x[i] = s / A[i, i]
    return x


def gram_schmidt(A):
    m, n = A.shape
    Q = np.zeros((m, n))
    R = np.zeros((n, n))
    for k in range(n):
        nrm = 0.0
        for i in range(m):
            nrm += A[i, k] * A[i, k]
        R[k, k] = np.sqrt(nrm)
        for i in range(m):
            Q[i, k] = A[i, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = 0.0
            for i in range(m):
                R[k, j] += Q[i, k] * A[i, j]
            for i in range(m):
                A[i, j] = A[i, j] - Q[i, k] * R[k, j]
    return Q, R


def _inputs(kernel, n: int) -> tuple:
    rng = np.random.default_rng(n)
    M = rng.standard_normal((n, n))
    spd = M @ M.T + n * np.eye(n)
    return {
        triangular_update: (np.arange(float(n * n)).reshape(n, n) / (n * n),),
        cholesky: (spd,),
        lu_doolittle: (spd,),
        lu_solve: (spd, rng.standard_normal(n)),
        gram_schmidt: (M + 2 * np.eye(n),),
    }[kernel]


def _same(got, expected, where: str) -> None:
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), where
        for k, (g, e) in enumerate(zip(got, expected)):
            _same(g, e, f"{where}[{k}]")
        return
    if expected is None:
        assert got is None, where
        return
    assert type(got) is type(expected), f"{where}: {type(got)} != {type(expected)}"
    assert got.dtype == expected.dtype and got.shape == expected.shape, where
    assert np.array_equal(got, expected, equal_nan=True), (
        f"{where}: max |diff| {np.nanmax(np.abs(got - expected))}"
    )


def _check(kernel, n: int, options: dict) -> None:
    args = _inputs(kernel, n)
    eager_args = [a.copy() for a in args]
    expected = kernel(*eager_args)
    assert all(np.isfinite(a).all() for a in eager_args)
    traced_args = [a.copy() for a in args]
    got = kx.function(kernel, **options)(*traced_args)
    _same(got, expected, f"{kernel.__name__}({n}) result")
    for k, (g, e) in enumerate(zip(traced_args, eager_args)):
        _same(g, e, f"{kernel.__name__}({n}) argument {k}")


KERNELS = [triangular_update, cholesky, lu_doolittle, lu_solve, gram_schmidt]


def test_triangular_update_past_the_unroll_budget_updates_each_row_once():
    # the smallest form: 30 rows pass the budget inside the outer loop (10 do not)
    for n in (10, 30):
        _check(triangular_update, n, PATHS["numpy"])


@pytest.mark.parametrize("n", [6, 20])
@pytest.mark.parametrize("kernel", KERNELS[1:], ids=lambda k: k.__name__)
def test_factorisation_matches_numpy_with_the_shipped_unroll_budget(kernel, n):
    _check(kernel, n, PATHS["numpy"])


@pytest.mark.parametrize("path", cheap_paths(PATHS))
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.__name__)
def test_factorisation_matches_numpy_across_the_unroll_budget(kernel, path, monkeypatch):
    # a budget of 40 nodes: 3 rows stay unrolled, 5 and 7 switch inside nested loops
    monkeypatch.setattr(loops, "UNROLL_NODE_BUDGET", 40)
    for n in (3, 5, 7):
        _check(kernel, n, PATHS[path])


def triangular_update_reading_j(A):
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= A[j, j] * 0.1
        A[i, 0] += j  # the inner index read after its loop: a Python int the body changes


def test_a_graph_loop_try_that_fails_leaves_the_loop_notes_of_what_ran(monkeypatch):
    # 6 rows with a budget of 10 nodes: the outer loop tries rows 3..5 as a graph loop,
    # peels row 3, finds the body is none (j, read after its loop, changes from a Python
    # int) and unrolls the rest
    monkeypatch.setattr(loops, "UNROLL_NODE_BUDGET", 10)
    f = kx.function(triangular_update_reading_j, backend="numpy")
    A = _inputs(triangular_update, 6)[0]
    notes = f.get_concrete_function(A).loops
    outer = [text for text in notes if "for i in range(1, A.shape[0])" in text]
    assert outer and outer[0].endswith(
        "— 5 iterations unrolled (the body changes `j`, a Python number it carries)"
    ), notes
    want, got = A.copy(), A.copy()
    triangular_update_reading_j(want)
    f(got)
    assert got.tobytes() == want.tobytes()


def break_in_the_first_iteration(A):
    n = A.shape[0]
    for i in range(n - 1, -1, -1):
        for j in range(n - 1, -1, -1):
            for k in range(n):
                A[j, i] -= A[i, i] * 0.1
            if j % 3 == 2:
                break
    return A


@pytest.mark.parametrize("path", cheap_paths(PATHS))
def test_a_break_taken_before_the_switch_to_a_graph_loop_ends_the_loop(path, monkeypatch):
    # the j loop passes a 10-node budget in the iteration that breaks: the iteration the
    # graph-loop try peels must not run (it did, updating row 1 as well)
    monkeypatch.setattr(loops, "UNROLL_NODE_BUDGET", 10)
    A = np.random.default_rng(0).standard_normal((3, 3))
    eager = A.copy()
    expected = break_in_the_first_iteration(eager)
    got = kx.function(break_in_the_first_iteration, **PATHS[path])(A)
    _same(got, expected, "result")
    _same(A, eager, "argument")


def test_gram_schmidt_is_converted_though_its_jumps_need_extended_args():
    # long enough that its jumps need EXTENDED_ARG in one of the two compilations the source
    # check compares (the module's and the function's alone: other cache sizes); it was run
    # unconverted, with an AutographWarning
    A = np.random.default_rng(3).standard_normal((3, 3))
    eager_A = A.copy()
    expected = gram_schmidt(eager_A)
    with warnings.catch_warnings():
        warnings.simplefilter("error", kx.errors.AutographWarning)
        got = kx.function(gram_schmidt, backend="numpy")(A)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.tobytes() == e.tobytes()
    assert A.tobytes() == eager_A.tobytes()
