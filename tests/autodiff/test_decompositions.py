"""The rules of the matrix decompositions, ``np.pad``'s modes, ``median`` and the running
extremes (``np.maximum.accumulate``) against central finite differences in float64, on
hypothesis-generated inputs (``autodiff.gradcheck.check``); and their documented
conventions (the triangle NumPy reads, repeated values, ties, what raises)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from autodiff.gradcheck import SETTINGS, arrays, check, distinct
from hypothesis import given
from hypothesis import strategies as st

import kernel_ext as kx

LINALG = {"rtol": 1e-4, "atol": 1e-6}


def separated(values: np.ndarray, gap: float = 0.05) -> bool:
    """Singular values or eigenvalues at least ``gap`` apart (and from 0): the vectors are
    well conditioned, so finite differences stay on one smooth branch."""
    v = np.sort(np.abs(np.ravel(values)))
    return bool(v[0] > gap and np.all(np.diff(np.sort(np.ravel(values))) > gap))


def outer(u: Any, v: Any) -> Any:
    """``u[:, k] v[:, k]^T`` for every column ``k``: vectors are defined up to sign (LAPACK may
    flip one between two finite-difference points), these products are not."""
    return np.expand_dims(u, -2) * np.expand_dims(v, -3)


def flat(*parts: Any) -> Any:
    return np.concatenate([np.ravel(p) for p in parts])


matrix_shapes = st.sampled_from([(3, 3), (4, 2), (2, 4), (2, 3, 2)])


@SETTINGS
@given(data=st.data())
def test_svd_rule_with_thin_factors_matches_finite_differences(data: Any) -> None:
    a = data.draw(matrix_shapes.flatmap(arrays))
    if not separated(np.linalg.svd(a, compute_uv=False)):
        return

    def f(x: Any) -> Any:
        u, s, vh = np.linalg.svd(x, full_matrices=False)
        v = np.swapaxes(vh, -1, -2)
        return flat(outer(u, u), s, outer(u, v), outer(v, v))

    check(f, a, **LINALG)
    check(lambda x: np.linalg.svd(x, compute_uv=False), a, **LINALG)
    check(np.linalg.svdvals, a, **LINALG)


@SETTINGS
@given(a=arrays((3, 3)))
def test_svd_rule_with_full_matrices_of_a_square_matrix(a: np.ndarray) -> None:
    if not separated(np.linalg.svd(a, compute_uv=False)):
        return

    def f(x: Any) -> Any:
        u, s, vh = np.linalg.svd(x)
        return flat(outer(u, u), s, outer(u, vh.T))

    check(f, a, **LINALG)


def test_svd_full_matrices_of_a_non_square_matrix_gives_values_and_raises_for_the_basis() -> None:
    a = np.random.default_rng(0).normal(size=(4, 2))
    check(lambda x: np.linalg.svd(x)[1], a, **LINALG)
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        kx.grad(lambda x: np.sum(np.linalg.svd(x)[0]))(a)


def test_repeated_singular_values_and_eigenvalues_follow_the_documented_convention() -> None:
    """Coupling terms of equal values are taken as 0: the gradient of the values alone, and
    of a vector whose value is simple, is exact beside a repeated pair."""
    a = np.diag([3.0, 1.0, 1.0])
    np.testing.assert_allclose(kx.grad(lambda x: np.sum(np.linalg.svd(x)[1]))(a), np.eye(3))
    np.testing.assert_allclose(
        kx.grad(lambda x: np.linalg.eigvalsh(x)[2])(a), np.diag([1.0, 0.0, 0.0])
    )
    w = np.array([0.3, -0.7, 1.1])

    def top_vector(x: Any) -> Any:
        v = np.linalg.eigh(x)[1][:, 2]
        return np.sum(v * np.sign(v[0]) * w)

    top = kx.grad(top_vector)

    def numeric(x: np.ndarray) -> np.ndarray:  # at a symmetric perturbation of the lower part
        out = np.zeros_like(x)
        for i, j in zip(*np.tril_indices(3)):
            d = np.zeros_like(x)
            d[i, j] = d[j, i] = 1e-6
            out[i, j] = (top_vector(x + d) - top_vector(x - d)) / 2e-6
        return out

    g = top(a)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, numeric(a), atol=1e-6)


def symmetric(x: np.ndarray) -> np.ndarray:
    return x + x.T


@SETTINGS
@given(x=arrays((3, 3)), uplo=st.sampled_from(["L", "U"]))
def test_eigh_and_eigvalsh_rules_read_one_triangle_as_numpy_does(x: np.ndarray, uplo: str) -> None:
    a = symmetric(x)
    if not separated(np.linalg.eigvalsh(a) + 10.0):
        return

    def f(m: Any) -> Any:
        w, v = np.linalg.eigh(m, UPLO=uplo)
        return flat(w, outer(v, v))

    # finite differences of every element, the unread triangle included (its gradient is 0)
    check(f, a, **LINALG)
    check(lambda m: np.linalg.eigvalsh(m, UPLO=uplo), a, **LINALG)
    g = kx.grad(lambda m: np.sum(np.linalg.eigvalsh(m, UPLO=uplo) ** 2))(a)
    unread = np.triu(g, 1) if uplo == "L" else np.tril(g, -1)
    assert not unread.any()


@SETTINGS
@given(x=arrays((3, 3)), upper=st.booleans())
def test_cholesky_rule_reads_one_triangle_as_numpy_does(x: np.ndarray, upper: bool) -> None:
    a = x @ x.T + 3.0 * np.eye(3)
    check(lambda m: np.linalg.cholesky(m, upper=upper), a, **LINALG)


@SETTINGS
@given(data=st.data(), mode=st.sampled_from(["reduced", "r"]))
def test_qr_rule_for_tall_square_and_wide_matrices(data: Any, mode: str) -> None:
    # LAPACK's Householder step skips a column already zero below the diagonal and picks
    # signs by the pivot's: NumPy's Q and R jump there (no derivative), so the test keeps a
    # dominant diagonal and no zeros below it
    a = data.draw(matrix_shapes.flatmap(arrays)) + 0.25
    a = a + 5.0 * np.eye(*a.shape[-2:])
    if np.min(np.abs(a)) < 0.05:
        return
    if mode == "r":
        check(lambda m: np.linalg.qr(m, mode="r"), a, **LINALG)
    else:
        check(lambda m: flat(*np.linalg.qr(m)), a, **LINALG)


def test_qr_complete_of_a_tall_matrix_raises_for_q_and_raw_raises() -> None:
    a = np.random.default_rng(1).normal(size=(4, 2))
    check(lambda m: np.linalg.qr(m, mode="complete")[1], a, **LINALG)
    check(lambda m: flat(*np.linalg.qr(m.T, mode="complete")), a, **LINALG)  # wide: unique
    with pytest.raises(NotImplementedError, match="mode='reduced'"):
        kx.grad(lambda m: np.sum(np.linalg.qr(m, mode="complete")[0]))(a)
    with pytest.raises(NotImplementedError, match="raw"):
        kx.grad(lambda m: np.sum(np.linalg.qr(m, mode="raw")[1]))(a)


@SETTINGS
@given(data=st.data())
def test_pinv_rule_matches_finite_differences(data: Any) -> None:
    a = data.draw(matrix_shapes.flatmap(arrays))
    if not separated(np.linalg.svd(a, compute_uv=False)):
        return
    check(np.linalg.pinv, a, **LINALG)


@SETTINGS
@given(x=arrays((3, 3)))
def test_pinv_hermitian_reads_the_lower_triangle(x: np.ndarray) -> None:
    a = symmetric(x)
    if not separated(np.linalg.eigvalsh(a)):
        return
    check(lambda m: np.linalg.pinv(m, hermitian=True), a, **LINALG)


@SETTINGS
@given(a=arrays((5, 3)), b=st.sampled_from([(5,), (5, 2)]).flatmap(arrays))
def test_lstsq_rule_for_the_solution_and_the_singular_values(a: np.ndarray, b: np.ndarray) -> None:
    if not separated(np.linalg.svd(a, compute_uv=False)):
        return
    check(lambda m, y: np.linalg.lstsq(m, y)[0], a, b, **LINALG)
    check(lambda m, y: np.linalg.lstsq(m, y)[3] * np.sum(y), a, b, **LINALG)


def test_lstsq_residuals_gradient_raises_naming_the_fix() -> None:
    rng = np.random.default_rng(2)
    with pytest.raises(NotImplementedError, match=r"np.sum\(\(a @ x - b\) \*\* 2"):
        kx.grad(lambda m: np.sum(np.linalg.lstsq(m, np.ones(5))[1]))(rng.normal(size=(5, 3)))


PAD_CASES = {
    "edge": {},
    "wrap": {},
    "reflect": {},
    "symmetric": {},
    "reflect_odd": {"mode": "reflect", "reflect_type": "odd"},
    "symmetric_odd": {"mode": "symmetric", "reflect_type": "odd"},
    "linear_ramp": {},
    "linear_ramp_ends": {"mode": "linear_ramp", "end_values": ((1.0, -2.0), (0.5, 3.0))},
    "mean": {},
    "mean_stat": {"mode": "mean", "stat_length": ((1, 2), (3, 2))},
    "maximum": {},
    "maximum_stat": {"mode": "maximum", "stat_length": 2},
    "minimum": {},
    "median": {},
    "median_stat": {"mode": "median", "stat_length": (2, 3)},
    "constant": {"mode": "constant", "constant_values": 4.0},
}


@pytest.mark.parametrize("case", sorted(PAD_CASES))
@SETTINGS
@given(
    x=arrays((3, 4)), widths=st.sampled_from([((2, 1), (3, 5)), ((0, 4), (1, 0)), ((5, 5), (2, 2))])
)
def test_pad_rule_for_every_mode_matches_finite_differences(
    case: str, x: np.ndarray, widths: tuple
) -> None:
    options = dict(PAD_CASES[case])
    options.setdefault("mode", case)
    if options["mode"] in ("maximum", "minimum", "median") and not distinct(x):
        return  # a finite difference straddling a tie of the statistic
    check(lambda a: np.pad(a, widths, **options), x)


def test_pad_maximum_gives_ties_to_the_first_occurrence() -> None:
    g = kx.grad(lambda a: np.sum(np.pad(a, (2, 0), mode="maximum")))(np.array([1.0, 4.0, 4.0]))
    np.testing.assert_array_equal(g, [1.0, 3.0, 1.0])


@SETTINGS
@given(x=arrays((3, 4)), axis=st.sampled_from([None, 0, 1, (0, 1)]), keepdims=st.booleans())
def test_median_rule_matches_finite_differences(x: np.ndarray, axis: Any, keepdims: bool) -> None:
    if not distinct(x):
        return
    check(lambda a: np.median(a, axis=axis, keepdims=keepdims), x)


@pytest.mark.parametrize("ufunc", ["maximum", "minimum", "fmax", "fmin"])
@SETTINGS
@given(x=arrays((3, 4)), axis=st.sampled_from([0, 1, -1]))
def test_running_extreme_rule_matches_finite_differences(
    ufunc: str, x: np.ndarray, axis: int
) -> None:
    if not distinct(x):
        return
    check(lambda a: getattr(np, ufunc).accumulate(a, axis=axis), x)


def test_running_maximum_gives_ties_to_the_first_occurrence() -> None:
    g = kx.grad(lambda a: np.sum(np.maximum.accumulate(a)))(np.array([1.0, 3.0, 3.0, 2.0, 5.0]))
    np.testing.assert_array_equal(g, [1.0, 3.0, 0.0, 0.0, 1.0])
