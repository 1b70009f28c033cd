"""The rules of the array-helper ops (gufuncs, copies, order statistics, the
multi-result ufuncs) against central finite differences in float64 on hypothesis-generated
inputs; integer-valued ops give no gradient; a path through complex values raises."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from autodiff.gradcheck import SETTINGS, arrays, check, distinct
from hypothesis import given
from hypothesis import strategies as st

import kernel_ext as kx
from kernel_ext import errors

NAN_AT_1 = np.arange(4) == 1  # a NaN column for the nan functions (its gradient is 0)

# name -> (function of one (3, 4) array x, low, high)
UNARY_CASES = {
    "degrees": (np.degrees, -2, 2),
    "radians": (np.radians, -2, 2),
    "nextafter": (lambda a: np.nextafter(a, 5.0), -2, 2),
    "ldexp": (lambda a: np.ldexp(a, np.array([1, 2, 3, -1])), -2, 2),
    "modf": (lambda a: np.modf(a)[0] * 2.0 + np.modf(a)[1], 0.1, 0.9),
    "frexp": (lambda a: np.frexp(a)[0], 0.6, 0.9),
    "divmod": (lambda a: np.divmod(a, 0.7)[1], 0.1, 0.6),
    "vdot": (lambda a: np.vdot(a, a.T * np.arange(1.0, 4.0)), -2, 2),
    "diagflat": (lambda a: np.diagflat(a[:2], 1), -2, 2),
    "diagflat_below": (lambda a: np.diagflat(a[:2], -2), -2, 2),
    "insert_axis": (lambda a: np.insert(a, [1, 3], a[:, :1] * 2.0, axis=1), -2, 2),
    "insert_flat": (lambda a: np.insert(a, 2, a[0, :2]), -2, 2),
    "insert_slice": (lambda a: np.insert(a, slice(0, 2), a[1], axis=0), -2, 2),
    "bincount": (
        lambda a: np.bincount(
            np.array([0, 2, 2, 1, 4, 0]), weights=a[0, :2].repeat(3), minlength=6
        ),
        -2,
        2,
    ),
    "compress": (lambda a: np.compress([True, False, True], a, axis=0), -2, 2),
    "compress_flat": (lambda a: np.compress(np.ravel(a) > 0, a), -2, 2),
    "trim_zeros": (lambda a: np.trim_zeros(np.ravel(a) * (np.arange(12) % 5 != 0)), -2, 2),
    "nancumprod": (lambda a: np.nancumprod(np.where(NAN_AT_1, np.nan, a), axis=1), 0.5, 1.5),
    "add_reduceat": (lambda a: np.add.reduceat(a, [0, 2, 3], axis=1), -2, 2),
}


@pytest.mark.parametrize("name", sorted(UNARY_CASES))
@SETTINGS
@given(data=st.data())
def test_coverage_rule_matches_finite_differences(name: str, data: Any) -> None:
    fn, lo, hi = UNARY_CASES[name]
    x = data.draw(arrays((3, 4), lo, hi))
    if name in ("compress_flat", "trim_zeros") and np.any(np.abs(x) < 1e-3):
        return
    check(fn, x)


@SETTINGS
@given(m=arrays((2, 3, 4)), x=arrays((3, 4)), v=arrays((4,)), u=arrays((3,)))
def test_gufunc_products_broadcast_back(
    m: np.ndarray, x: np.ndarray, v: np.ndarray, u: np.ndarray
) -> None:
    check(np.vecdot, m, x)
    check(np.matvec, m, v)
    check(np.vecmat, u, m)


@pytest.mark.parametrize("mode", ["valid", "same", "full"])
@pytest.mark.parametrize("lengths", [(5, 3), (3, 5), (4, 4), (1, 3)])
@SETTINGS
@given(data=st.data())
def test_correlate_and_convolve_rules_for_every_mode(mode: str, lengths: tuple, data: Any) -> None:
    a = data.draw(arrays((lengths[0],)))
    v = data.draw(arrays((lengths[1],)))
    check(lambda x, y: np.correlate(x, y, mode), a, v)
    check(lambda x, y: np.convolve(x, y, mode), a, v)


ORDER_CASES = {
    "unique": lambda a: np.unique(a),
    "unique_counts": lambda a: np.unique(a, return_counts=True)[0],
    "partition": lambda a: np.partition(a, 2, axis=1) * np.arange(1.0, 5.0),
    "partition_flat": lambda a: np.partition(a, 5, axis=None) * np.arange(1.0, 13.0),
    "percentile": lambda a: np.percentile(a, [10, 50, 95], axis=1),
    "quantile": lambda a: np.quantile(a, 0.3),
    "quantile_keepdims": lambda a: np.quantile(a, [0.3, 0.8], axis=0, keepdims=True),
    "nanmedian": lambda a: np.nanmedian(np.where(NAN_AT_1, np.nan, a), axis=1),
    "nanpercentile": lambda a: np.nanpercentile(np.where(NAN_AT_1, np.nan, a), 30, axis=1),
    "nanquantile": lambda a: np.nanquantile(np.where(NAN_AT_1, np.nan, a), [0.2, 0.7]),
}


@pytest.mark.parametrize("name", sorted(ORDER_CASES))
@SETTINGS
@given(x=arrays((3, 4)))
def test_order_statistic_rules_match_finite_differences(name: str, x: np.ndarray) -> None:
    if not distinct(x):
        return  # a finite difference would reorder ties
    check(ORDER_CASES[name], x)


def test_unique_gives_a_repeated_value_to_its_first_occurrence() -> None:
    g = kx.grad(lambda a: np.sum(np.unique(a) * np.array([1.0, 10.0])))(
        np.array([2.0, 1.0, 2.0, 1.0])
    )
    np.testing.assert_array_equal(g, [10.0, 1.0, 0.0, 0.0])


def test_quantile_methods_other_than_linear_raise() -> None:
    with pytest.raises(NotImplementedError, match="method='nearest'"):
        kx.grad(lambda a: np.quantile(a, 0.4, method="nearest"))(np.arange(5.0))


@pytest.mark.parametrize(
    "fn",
    [
        lambda a: np.argwhere(a > 0).astype(np.float64).sum() + np.sum(a),
        lambda a: np.searchsorted(np.array([0.0, 1.0]), a).astype(np.float64).sum() + np.sum(a),
        lambda a: np.nanargmax(a).astype(np.float64) + np.sum(a),
        lambda a: np.spacing(a).sum() * 0.0 + np.sum(a),
    ],
)
def test_integer_valued_coverage_ops_contribute_no_gradient(fn: Any) -> None:
    np.testing.assert_array_equal(kx.grad(fn)(np.array([0.5, -1.0, 2.0])), np.ones(3))


def test_a_gradient_path_through_complex_values_raises_instead_of_dropping_it() -> None:
    with pytest.raises(errors.NonDifferentiableError, match=r"complex values.*'fft'"):
        kx.grad(lambda a: np.sum(np.abs(np.fft.fft(a))))(np.arange(4.0))
    # a complex value off the path is fine
    g = kx.grad(lambda a: np.sum(a * a) + np.abs(np.fft.fft(np.ones(4)))[0])(np.arange(3.0))
    np.testing.assert_allclose(g, 2 * np.arange(3.0))
