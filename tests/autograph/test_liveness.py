"""AutoGraph's liveness analysis: a name nothing reads afterwards is no ``cond`` output and
is not loop-carried (:class:`kernel_ext.autograph.scopes.Liveness`).

Ordinary NumPy code assigns temporaries in one branch only: a margin in a naive SVM loss, a
loop index or a step after an early ``return``, a value computed after a ``continue``. Each
program below is written as such code is written outside this project and is compared with
eager NumPy on every executor: results (values, dtypes, shapes, scalar or 0-d form) and the
arguments after the call.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import kernel_ext as kx

EXECUTORS = ({"backend": "numpy"}, {"backend": "auto"}, {"backend": "numba"}, {"jit_compile": True})
EXECUTOR_IDS = ("numpy", "auto", "numba", "jit_compile")


def _same(got, want, where: str, rtol: float = 0.0) -> None:
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{where}[{k}]", rtol)
        return
    assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (
        f"{where}: {g.dtype}{g.shape} != {w.dtype}{w.shape}"
    )
    if rtol:
        np.testing.assert_allclose(g, w, rtol=rtol, err_msg=where)
    else:
        assert np.array_equal(g, w, equal_nan=True), f"{where}: {g!r} != {w!r}"


def like_numpy(fn, args: tuple, options: dict, rtol: float = 0.0, **kwargs) -> kx.Function:
    """``fn`` traced with ``options`` gives eager NumPy's results and leaves the arguments
    as eager NumPy leaves them (called twice: the trace, then the cached graph)."""
    f = kx.function(fn, **options, **kwargs)
    for _ in range(2):
        eager_args, traced_args = copy.deepcopy(args), copy.deepcopy(args)
        want = fn(*eager_args)
        got = f(*traced_args)
        _same(got, want, "result", rtol)
        _same(traced_args, eager_args, "arguments after the call")
    return f


# -- programs ---------------------------------------------------------------------------------


def svm_loss_naive(W, X, y, reg):
    """Structured SVM loss, naive implementation with loops (as in cs231n's assignment)."""
    dW = np.zeros(W.shape)
    num_classes = W.shape[1]
    num_train = X.shape[0]
    loss = 0.0
    for i in range(num_train):
        scores = X[i].dot(W)
        correct_class_score = scores[y[i]]
        for j in range(num_classes):
            if j == y[i]:
                continue
            margin = scores[j] - correct_class_score + 1
            if margin > 0:
                loss += margin
                dW[:, j] += X[i]
                dW[:, y[i]] -= X[i]
    loss /= num_train
    dW /= num_train
    loss += reg * np.sum(W * W)
    dW += 2 * reg * W
    return loss, dW


def newton_cubic(c, x):
    """A root of c0 + c1 x + c2 x^2 + c3 x^3 by Newton's method from ``x``."""
    fx = ((c[3] * x + c[2]) * x + c[1]) * x + c[0]
    if fx == 0:
        return x
    for it in range(40):
        dfx = (3 * c[3] * x + 2 * c[2]) * x + c[1]
        step = fx / dfx
        x = x - step
        fx = ((c[3] * x + c[2]) * x + c[1]) * x + c[0]
        if np.abs(step) < 1e-13:
            break
    return x


def bisect_cubic(c, a, b, tol):
    """A root of the cubic in [a, b] by bisection."""
    fa = ((c[3] * a + c[2]) * a + c[1]) * a + c[0]
    while b - a > tol:
        m = 0.5 * (a + b)
        fm = ((c[3] * m + c[2]) * m + c[1]) * m + c[0]
        if fm == 0:
            root = m  # an exact root: the interval shrinks onto it
            a = root
            b = root
        elif np.sign(fm) == np.sign(fa):
            mid = m
            a = mid
            fa = fm
        else:
            b = m
    return 0.5 * (a + b)


def positive_part_energy(x, out):
    """Sum of squares of the positive entries, row by row, into ``out``."""
    for i in range(x.shape[0]):
        total = 0.0
        for j in range(x.shape[1]):
            if x[i, j] <= 0:
                continue
            sq = x[i, j] * x[i, j]
            total += sq
        out[i] = total
    return out


rng = np.random.default_rng(25)


def _svm_args():
    W = rng.standard_normal((6, 4)) * 0.01
    X = rng.standard_normal((7, 6))
    y = rng.integers(0, 4, 7)
    return W, X, y, 0.5


# -- behaviour --------------------------------------------------------------------------------


@pytest.mark.parametrize("options", EXECUTORS, ids=EXECUTOR_IDS)
def test_svm_loss_naive_with_a_margin_assigned_after_a_continue_matches_numpy(options):
    # the fused paths may sum W * W in another order (docs/backends.md's bound)
    rtol = 0.0 if options.get("backend") == "numpy" else 1e-13
    like_numpy(svm_loss_naive, _svm_args(), options, rtol=rtol)


@pytest.mark.parametrize("options", EXECUTORS, ids=EXECUTOR_IDS)
def test_svm_loss_naive_as_a_graph_loop_over_a_traced_index_matches_numpy(options):
    # enough samples that the unrolled outer loop passes the unroll budget: its remaining
    # iterations are one graph loop whose index is traced
    rtol = 0.0 if options.get("backend") == "numpy" else 1e-13
    W = rng.standard_normal((6, 4)) * 0.01
    X = rng.standard_normal((80, 6))
    y = rng.integers(0, 4, 80)
    f = like_numpy(svm_loss_naive, (W, X, y, 0.5), options, rtol=rtol)
    notes = " ".join(f.get_concrete_function(W, X, y, 0.5).loops)
    assert "graph loop" in notes, notes


@pytest.mark.parametrize("options", EXECUTORS, ids=EXECUTOR_IDS)
def test_newton_with_an_early_return_before_its_loop_matches_numpy(options):
    c = np.array([-6.0, 11.0, -6.0, 1.0])  # roots 1, 2, 3
    f = like_numpy(newton_cubic, (c, np.float64(3.4)), options)
    # the early return is taken, and the loop is run, by the same graph
    for x0 in (np.float64(1.0), np.float64(0.2), np.float64(2.6)):
        assert f(c, x0) == newton_cubic(c, x0)
        assert type(f(c, x0)) is type(newton_cubic(c, x0))


@pytest.mark.parametrize("options", EXECUTORS, ids=EXECUTOR_IDS)
def test_bisection_with_midpoints_assigned_in_branches_matches_numpy(options):
    c = np.array([-6.0, 11.0, -6.0, 1.0])
    f = like_numpy(bisect_cubic, (c, np.float64(1.5), np.float64(2.7), np.float64(1e-10)), options)
    # an interval whose midpoint is exactly a root takes the `fm == 0` branch
    args = (c, np.float64(1.0), np.float64(3.0), np.float64(1e-10))
    assert f(*args) == bisect_cubic(*args)


@pytest.mark.parametrize("options", EXECUTORS, ids=EXECUTOR_IDS)
def test_a_temporary_after_continue_is_not_loop_carried(options):
    x = rng.standard_normal((5, 6))
    like_numpy(positive_part_energy, (x, np.zeros(5)), options)


# -- what liveness must not do ----------------------------------------------------------------


def test_a_name_read_after_the_if_must_still_be_assigned_in_both_branches():
    def f(x):
        if np.sum(x) > 0:
            y = x * 2
        return y

    with pytest.raises(ValueError, match="'y' must also be assigned in the false branch"):
        kx.function(f, backend="numpy")(np.ones(3))


def test_a_name_a_closure_reads_later_stays_an_output():
    def f(x):
        scale = np.float64(1.0)
        get = lambda: scale  # noqa: E731 (reads `scale` when called, after the if)
        if np.sum(x) > 0:
            scale = np.float64(3.0)
        return x * get()

    g = kx.function(f, backend="numpy")
    for x in (np.ones(3), -np.ones(3)):
        _same(g(x), f(x), "result")


def test_a_name_read_in_the_next_iteration_stays_loop_carried():
    def f(x):
        prev = x[0]
        acc = np.zeros_like(x[0])
        for i in range(1, x.shape[0]):
            if x[i] > prev:
                acc = acc + (x[i] - prev)
            prev = x[i]
        return acc

    x = rng.standard_normal(40)
    g = kx.function(f, backend="numpy")
    _same(g(x), f(x), "result")
