"""Every VJP rule against central finite differences in float64, on generated inputs.

``check`` differentiates ``sum(f(*args) * w)`` (``w`` a fixed random weight, so symmetric
inputs cannot cancel a wrong sign) with ``kx.grad`` through a traced ``kx.function`` and
compares with central differences of plain NumPy ``f``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from autodiff.gradcheck import SETTINGS, arrays, check, distinct, numeric_grad
from hypothesis import given
from hypothesis import strategies as st

import kernel_ext as kx

shapes = st.sampled_from([(), (3,), (2, 3)])
# pairs of shapes that broadcast: the gradient must be summed back to each
pairs = st.sampled_from(
    [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 2)), ((2, 3), (2, 1))]
)

UNARY = {
    "negative": (np.negative, -2, 2),
    "abs": (np.abs, 0.1, 2),
    "sqrt": (np.sqrt, 0.2, 3),
    "cbrt": (np.cbrt, 0.2, 3),
    "square": (np.square, -2, 2),
    "reciprocal": (np.reciprocal, 0.3, 2),
    "exp": (np.exp, -2, 2),
    "exp2": (np.exp2, -2, 2),
    "expm1": (np.expm1, -2, 2),
    "log": (np.log, 0.2, 3),
    "log2": (np.log2, 0.2, 3),
    "log10": (np.log10, 0.2, 3),
    "log1p": (np.log1p, -0.5, 2),
    "sin": (np.sin, -2, 2),
    "cos": (np.cos, -2, 2),
    "tan": (np.tan, -1, 1),
    "arcsin": (np.arcsin, -0.8, 0.8),
    "arccos": (np.arccos, -0.8, 0.8),
    "arctan": (np.arctan, -2, 2),
    "sinh": (np.sinh, -2, 2),
    "cosh": (np.cosh, -2, 2),
    "tanh": (np.tanh, -2, 2),
    "arcsinh": (np.arcsinh, -2, 2),
    "arccosh": (np.arccosh, 1.2, 3),
    "arctanh": (np.arctanh, -0.8, 0.8),
    "deg2rad": (np.deg2rad, -2, 2),
    "rad2deg": (np.rad2deg, -2, 2),
    "positive": (np.positive, -2, 2),
    "fabs": (np.fabs, 0.1, 2),
    "power_literal": (lambda x: x**3, -2, 2),
    "square_op": (lambda x: x**2, -2, 2),
    "copy": (np.copy, -2, 2),
    "floor": (lambda x: np.floor(x) * x, 0.1, 0.9),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(data=st.data())
def test_unary_rule_matches_finite_differences(name: str, data: Any) -> None:
    fn, lo, hi = UNARY[name]
    x = data.draw(shapes.flatmap(lambda s: arrays(s, lo, hi)))
    check(fn, x)


def test_cast_gradient_comes_back_in_the_operand_dtype() -> None:
    x = np.array([1.0, -2.0, 0.5])
    g = kx.grad(lambda a: np.sum(a.astype(np.float32) ** 2))(x)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, 2 * x, rtol=1e-6)
    g32 = kx.grad(lambda a: np.sum(a * np.float64(3.0)))(x.astype(np.float32))
    assert g32.dtype == np.float32


BINARY = {
    "add": (np.add, (-2, 2), (-2, 2)),
    "subtract": (np.subtract, (-2, 2), (-2, 2)),
    "multiply": (np.multiply, (-2, 2), (-2, 2)),
    "divide": (np.divide, (-2, 2), (0.5, 2)),
    "power": (np.power, (0.5, 2), (-2, 2)),
    "float_power": (np.float_power, (0.5, 2), (-2, 2)),
    "arctan2": (np.arctan2, (0.5, 2), (0.5, 2)),
    "hypot": (np.hypot, (0.5, 2), (0.5, 2)),
    "logaddexp": (np.logaddexp, (-2, 2), (-2, 2)),
    "logaddexp2": (np.logaddexp2, (-2, 2), (-2, 2)),
    "maximum": (np.maximum, (-2, 2), (-2, 2)),
    "minimum": (np.minimum, (-2, 2), (-2, 2)),
    "fmax": (np.fmax, (-2, 2), (-2, 2)),
    "fmin": (np.fmin, (-2, 2), (-2, 2)),
    "copysign": (lambda a, b: np.copysign(a, b), (0.5, 2), (0.5, 2)),
    "remainder": (np.remainder, (0.1, 0.9), (1.5, 2)),
    "fmod": (np.fmod, (0.1, 0.9), (1.5, 2)),
    "where": (lambda a, b: np.where(a > 0, a * b, b), (-2, 2), (-2, 2)),
    "clip": (lambda a, b: np.clip(a, -0.5, b), (-2, 2), (0.7, 2)),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@SETTINGS
@given(data=st.data())
def test_binary_rule_broadcasts_back_and_matches_finite_differences(name: str, data: Any) -> None:
    fn, (alo, ahi), (blo, bhi) = BINARY[name]
    sa, sb = data.draw(pairs)
    a = data.draw(arrays(sa, alo, ahi))
    b = data.draw(arrays(sb, blo, bhi))
    # keep away from the kinks, where a finite difference straddles two pieces
    x, y = np.broadcast_arrays(a, b)
    kinks = {"where": [x], "clip": [x + 0.5, x - y]}.get(
        name, [x - y] if name in ("maximum", "minimum", "fmax", "fmin") else []
    )
    if any(np.any(np.abs(k) < 1e-3) for k in kinks):
        return
    check(fn, a, b)


REDUCTIONS = {
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "var": np.var,
    "std": np.std,
}
axes = st.sampled_from([None, 0, 1, -1, (0, 1)])


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@SETTINGS
@given(x=arrays((2, 3), 0.5, 2), axis=axes, keepdims=st.booleans())
def test_reduction_rule_with_axes_and_keepdims(
    name: str, x: np.ndarray, axis: Any, keepdims: bool
) -> None:
    if name in ("max", "min") and not distinct(x):
        return  # ties (or near-ties a finite difference straddles): checked below against
        # the documented convention
    if name == "std" and not distinct(x):
        return  # a zero-variance slice: sqrt at 0 has no derivative
    check(lambda a: REDUCTIONS[name](a, axis=axis, keepdims=keepdims) * 1.0, x)


def test_max_reduction_gives_ties_to_the_first_occurrence() -> None:
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    g = kx.grad(lambda a: np.sum(np.max(a, axis=1)))(x)
    np.testing.assert_array_equal(g, [[0, 1, 0], [1, 0, 0]])
    g = kx.grad(lambda a: np.max(a))(np.array([[3.0, 1.0], [3.0, 3.0]]))
    np.testing.assert_array_equal(g, [[1, 0], [0, 0]])
    g = kx.grad(lambda a: np.sum(np.min(a, axis=(0, 1), keepdims=True)))(
        np.array([[2.0, 0.0], [0.0, 5.0]])
    )
    np.testing.assert_array_equal(g, [[0, 1], [0, 0]])


def test_maximum_gives_ties_to_the_first_operand() -> None:
    g = kx.grad(lambda a, b: np.sum(np.maximum(a, b)), argnums=(0, 1))(
        np.array([1.0, 2.0]), np.array([1.0, 3.0])
    )
    np.testing.assert_array_equal(g[0], [1, 0])
    np.testing.assert_array_equal(g[1], [0, 1])


@SETTINGS
@given(x=arrays((2, 3), 0.5, 2), axis=st.sampled_from([None, 0, 1]))
def test_scan_rules(x: np.ndarray, axis: Any) -> None:
    check(lambda a: np.cumsum(a, axis=axis), x)
    check(lambda a: np.cumprod(a, axis=axis), x)


@SETTINGS
@given(x=arrays((2, 3), -2, 2), axis=st.sampled_from([None, 0, 1, -1]))
def test_sort_rule_routes_each_gradient_to_its_element(x: np.ndarray, axis: Any) -> None:
    if not distinct(x):
        return  # ties: a finite difference reorders them
    check(
        lambda a: (
            np.sort(a, axis=axis) * np.arange(1.0, 7.0).reshape((6,) if axis is None else (2, 3))
        ),
        x,
    )


SHAPE_OPS = {
    "reshape": lambda a: np.reshape(a, (3, 2)),
    "ravel": lambda a: np.ravel(a),
    "transpose": lambda a: np.transpose(a),
    "T": lambda a: a.T * 2.0,
    "swapaxes": lambda a: np.swapaxes(a[None], 0, 2),
    "expand_dims": lambda a: np.expand_dims(a, 1),
    "squeeze": lambda a: np.squeeze(a[:, None, :], axis=1),
    "broadcast_to": lambda a: np.broadcast_to(a[:1], (4, 3)),
    "concatenate": lambda a: np.concatenate([a, a * a, a[:1]], axis=0),
    "concatenate_none": lambda a: np.concatenate([a, a[0]], axis=None),
    "stack": lambda a: np.stack([a, np.sin(a)], axis=1),
    "flip": lambda a: np.flip(a, axis=1),
    "getitem_slice": lambda a: a[1:, ::-1],
    "getitem_int": lambda a: a[1],
    "getitem_ints": lambda a: a[np.array([0, 0, 1])],
    "getitem_mask": lambda a: a[a > 0.0],
}


@pytest.mark.parametrize("name", sorted(SHAPE_OPS))
@SETTINGS
@given(x=arrays((2, 3), -2, 2))
def test_shape_and_indexing_rules(name: str, x: np.ndarray) -> None:
    if name == "getitem_mask" and np.any(np.abs(x) < 1e-3):
        return
    check(SHAPE_OPS[name], x)


def test_dynamic_index_gradient() -> None:
    @kx.function
    def f(x: Any, i: Any) -> Any:
        with kx.GradientTape() as tape:
            tape.watch(x)
            y = np.sum(x[i] * x[i, 0])
        return tape.gradient(y, x)

    x = np.arange(6.0).reshape(2, 3)
    g = f(x, np.int64(1))
    np.testing.assert_allclose(g, [[0, 0, 0], [3 + 3 + 4 + 5, 3, 3]])


def test_setitem_gradient_goes_to_the_written_value_and_the_rest() -> None:
    def f(a: Any, b: Any) -> Any:
        out = a * 1.0
        out[1:, 0] = b * 3.0
        return out * out

    check(f, np.arange(1.0, 7.0).reshape(3, 2), np.array([0.5, 1.5]))


@SETTINGS
@given(a=arrays((2, 3)), b=arrays((3, 2)), v=arrays((3,)))
def test_matmul_dot_outer_rules(a: np.ndarray, b: np.ndarray, v: np.ndarray) -> None:
    check(np.matmul, a, b)
    check(np.matmul, a, v)
    check(np.matmul, v, b)
    check(np.matmul, v, v)
    check(np.dot, a, b)
    check(np.dot, a, v)
    check(np.outer, a, v)
    check(lambda x, y: np.matmul(np.stack([x, x * 2.0]), y), a, b)  # batched


@SETTINGS
@given(m=arrays((3, 3), -1, 1), b=arrays((3,)), bb=arrays((3, 2)))
def test_linalg_rules(m: np.ndarray, b: np.ndarray, bb: np.ndarray) -> None:
    a = m + 3.0 * np.eye(3)  # well conditioned
    check(np.linalg.inv, a, rtol=1e-4, atol=1e-5)
    check(np.linalg.det, a, rtol=1e-4, atol=1e-5)
    check(np.linalg.solve, a, b, rtol=1e-4, atol=1e-5)
    check(np.linalg.solve, a, bb, rtol=1e-4, atol=1e-5)


def test_norm_composes_from_rules() -> None:
    check(lambda a: np.linalg.norm(a), np.array([[1.0, -2.0], [3.0, 0.5]]))
    check(lambda a: np.linalg.norm(a, axis=1), np.array([[1.0, -2.0], [3.0, 0.5]]))


# -- nan reductions, einsum, pad, slogdet, ufunc methods, data-dependent shapes ----------------


def with_nans(x: np.ndarray) -> np.ndarray:
    """``x`` with a NaN in its first row (the nan functions skip it; its gradient is 0)."""
    x = x.copy()
    x[0, 1] = np.nan
    return x


NAN_REDUCTIONS = {
    "nansum": np.nansum,
    "nanmean": np.nanmean,
    "nanprod": np.nanprod,
    "nanmax": np.nanmax,
    "nanmin": np.nanmin,
    "nanvar": np.nanvar,
    "nanstd": np.nanstd,
}


@pytest.mark.parametrize("name", sorted(NAN_REDUCTIONS))
@SETTINGS
@given(x=arrays((3, 4), 0.5, 2.0), axis=st.sampled_from([None, 0, 1]), keepdims=st.booleans())
def test_nan_reduction_rule_skips_nans_and_matches_finite_differences(
    name: str, x: np.ndarray, axis: Any, keepdims: bool
) -> None:
    if name in ("nanmax", "nanmin") and not distinct(x):
        return
    fn = NAN_REDUCTIONS[name]
    x = with_nans(x)
    if name == "nanstd" and np.min(np.nanstd(x, axis=axis)) < 1e-2:
        return  # the square root's kink at 0
    f = lambda a: fn(a, axis=axis, keepdims=keepdims)  # noqa: E731
    w = np.random.default_rng(0).uniform(0.5, 1.5, np.shape(f(x)))
    g = kx.grad(lambda a: np.sum(f(a) * w))(x)
    expected = numeric_grad(lambda a: float(np.sum(f(a) * w)), [x], 0)
    assert g[0, 1] == 0.0
    keep = ~np.isnan(x)
    np.testing.assert_allclose(g[keep], expected[keep], rtol=1e-5, atol=1e-6)


def test_nancumsum_rule_matches_finite_differences() -> None:
    x = with_nans(np.random.default_rng(2).normal(size=(3, 4)))
    w = np.random.default_rng(3).uniform(0.5, 1.5, (3, 4))
    for axis in (0, 1):
        g = kx.grad(lambda a: np.sum(np.nancumsum(a, axis=axis) * w))(x)
        expected = numeric_grad(lambda a: float(np.sum(np.nancumsum(a, axis=axis) * w)), [x], 0)
        keep = ~np.isnan(x)
        np.testing.assert_allclose(g[keep], expected[keep], rtol=1e-5, atol=1e-6)
        assert g[0, 1] == 0.0


EINSUMS = {
    "ij,jk->ik": [(3, 4), (4, 2)],
    "ij,ij->": [(3, 4), (3, 4)],
    "bij,bjk->bik": [(2, 3, 4), (2, 4, 2)],
    "ij->ji": [(3, 4)],
    "ij->i": [(3, 4)],
    "i,j->ij": [(3,), (4,)],
    "ij,jk": [(3, 4), (4, 2)],
    "ijk,k->ij": [(2, 3, 4), (4,)],
    "ij,jk,kl->il": [(2, 3), (3, 4), (4, 2)],
}


@pytest.mark.parametrize("subscripts", sorted(EINSUMS))
def test_einsum_rule_permutes_subscripts_and_matches_finite_differences(subscripts: str) -> None:
    rng = np.random.default_rng(4)
    args = [rng.normal(size=s) for s in EINSUMS[subscripts]]
    check(lambda *a: np.einsum(subscripts, *a), *args)


@pytest.mark.parametrize("case", ["pad", "diff", "triu", "tril", "slogdet"])
def test_pad_diff_triangles_and_slogdet_match_finite_differences(case: str) -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    fn = {
        "pad": lambda a: np.pad(a, ((1, 2), (0, 1))),
        "diff": lambda a: np.concatenate(
            [np.ravel(np.diff(a, n=2, axis=0)), np.ravel(np.diff(a, axis=1))]
        ),
        "triu": lambda a: np.triu(a, 1),
        "tril": lambda a: np.tril(a),
        "slogdet": lambda a: np.linalg.slogdet(a)[1],
    }[case]
    check(fn, x)


@pytest.mark.parametrize("ufunc", ["add", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize("axis", [0, 1, None])
def test_ufunc_reduce_rule_matches_finite_differences(ufunc: str, axis: Any) -> None:
    x = np.random.default_rng(6).permutation(12).reshape(3, 4) * 0.1 + 0.5
    check(lambda a: getattr(np, ufunc).reduce(a, axis=axis), x)


@pytest.mark.parametrize("ufunc", ["add", "multiply"])
def test_ufunc_accumulate_rule_matches_finite_differences(ufunc: str) -> None:
    x = np.random.default_rng(7).uniform(0.5, 1.5, (3, 4))
    for axis in (0, 1):
        check(lambda a: getattr(np, ufunc).accumulate(a, axis=axis), x)


def test_add_at_scatters_and_its_rule_gathers_with_repeated_positions() -> None:
    idx = np.array([0, 2, 2, 1, 2])

    def f(a: Any, b: Any) -> Any:
        out = a.copy()
        np.add.at(out, idx, b)
        np.subtract.at(out, [3], b[0])
        return out * out

    rng = np.random.default_rng(8)
    check(f, rng.normal(size=4), rng.normal(size=5))
