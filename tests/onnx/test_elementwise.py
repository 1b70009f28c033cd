"""Elementwise ops in onnxruntime against eager NumPy: every dtype NumPy accepts, weak
literals, mixed dtypes (NumPy's promotion made explicit), 0-d values, ``None`` dims."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from onnx_support import Exported, check, spec, values

import kernel_ext as kx

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]
EXACT_UNARY = [
    np.negative,
    np.positive,
    np.absolute,
    np.fabs,
    np.sign,
    np.square,
    np.sqrt,
    np.floor,
    np.ceil,
    np.trunc,
    np.rint,
    np.isnan,
    np.isinf,
    np.isfinite,
    np.logical_not,
    np.invert,
    np.reciprocal,
]
TRANSCENDENTAL_UNARY = [
    np.exp,
    np.exp2,
    np.expm1,
    np.log,
    np.log2,
    np.log10,
    np.log1p,
    np.sin,
    np.cos,
    np.tan,
    np.arcsin,
    np.arccos,
    np.arctan,
    np.sinh,
    np.cosh,
    np.tanh,
    np.arcsinh,
    np.arccosh,
    np.arctanh,
    np.deg2rad,
    np.rad2deg,
]
EXACT_BINARY = [
    np.add,
    np.subtract,
    np.multiply,
    np.divide,
    np.floor_divide,
    np.remainder,
    np.fmod,
    np.maximum,
    np.minimum,
    np.fmax,
    np.fmin,
    np.equal,
    np.not_equal,
    np.less,
    np.less_equal,
    np.greater,
    np.greater_equal,
    np.logical_and,
    np.logical_or,
    np.logical_xor,
    np.bitwise_and,
    np.bitwise_or,
    np.bitwise_xor,
    np.heaviside,
]


def _numpy_accepts(fn: Callable[..., Any], *dtypes: Any) -> bool:
    try:
        with np.errstate(all="ignore"):
            fn(*[np.ones(2, d) for d in dtypes])
        return True
    except TypeError:
        return False


def _unary(uf: np.ufunc) -> Callable[[Any], Any]:
    def apply(x: Any) -> Any:
        return uf(x)

    apply.__name__ = uf.__name__
    return apply


def _binary(uf: np.ufunc) -> Callable[[Any, Any], Any]:
    def apply(x: Any, y: Any) -> Any:
        return uf(x, y)

    apply.__name__ = uf.__name__
    return apply


#: onnxruntime's CPU provider has float32 kernels only for these: a float64 loop is refused
FLOAT32_ONLY = [
    np.tan,
    np.arcsin,
    np.arccos,
    np.arctan,
    np.sinh,
    np.cosh,
    np.arcsinh,
    np.arccosh,
    np.arctanh,
]


def _loop_out(uf: np.ufunc, dtype: Any) -> np.dtype:
    return np.dtype(uf.resolve_dtypes((np.dtype(dtype), None))[1])


def _unary_cases(ufuncs: list) -> list:
    """(ufunc, dtype) pairs NumPy accepts whose loop has an ONNX form (not float16, integer
    reciprocal, or float64 for FLOAT32_ONLY: each refusal is tested below)."""
    return [
        pytest.param(uf, d, id=f"{uf.__name__}-{np.dtype(d).name}")
        for uf in ufuncs
        for d in DTYPES
        if _numpy_accepts(uf, d)
        and not (uf is np.reciprocal and np.dtype(d).kind in "iub")
        and _loop_out(uf, d) != np.float16
        and not (uf in FLOAT32_ONLY and _loop_out(uf, d) == np.float64)
    ]


@pytest.mark.parametrize("uf", FLOAT32_ONLY)
def test_float64_loops_without_an_onnxruntime_kernel_are_refused(uf: np.ufunc) -> None:
    with pytest.raises(kx.onnx.OnnxExportError, match=f"'{uf.__name__}'.*no float64 kernel"):
        Exported(_unary(uf), spec([None], np.float64))


def test_float16_values_are_refused() -> None:
    with pytest.raises(kx.onnx.OnnxExportError, match="float16"):
        Exported(_unary(np.log1p), spec([3], np.bool_))


@pytest.mark.parametrize("uf,dtype", _unary_cases(EXACT_UNARY))
def test_exact_unary_ops_match_numpy_bitwise(uf: np.ufunc, dtype: Any) -> None:
    calls = [(values((7, 3), dtype, seed=1),), (values((2, 3), dtype, seed=2),)]
    check(_unary(uf), [spec([None, 3], dtype)], calls, "exact")


@pytest.mark.parametrize("uf,dtype", _unary_cases(TRANSCENDENTAL_UNARY))
def test_transcendental_unary_ops_match_numpy_within_tolerance(uf: np.ufunc, dtype: Any) -> None:
    x = values((40,), dtype, seed=3)
    if np.dtype(dtype).kind == "f":
        x[4:10] = [1e-9, -1e-9, 1e-20, 0.5, -0.5, 30.0]  # log1p/expm1's tiny arguments
    check(_unary(uf), [spec([None], dtype)], [(x,), (x[5:9],)], "transcendental")


def _binary_cases() -> list:
    out = []
    for uf in EXACT_BINARY:
        for d in DTYPES:
            if _numpy_accepts(uf, d, d) and np.float16 not in uf.resolve_dtypes(
                (np.dtype(d), np.dtype(d), None)
            ):
                out.append(pytest.param(uf, d, d, id=f"{uf.__name__}-{np.dtype(d).name}"))
        for a, b in [
            (np.int32, np.float32),
            (np.int64, np.float32),
            (np.float32, np.float64),
            (np.bool_, np.int32),
            (np.int32, np.int64),
        ]:
            if _numpy_accepts(uf, a, b) and np.float16 not in uf.resolve_dtypes(
                (np.dtype(a), np.dtype(b), None)
            ):
                out.append(
                    pytest.param(
                        uf, a, b, id=f"{uf.__name__}-{np.dtype(a).name}-{np.dtype(b).name}"
                    )
                )
    return out


@pytest.mark.parametrize("uf,a,b", _binary_cases())
def test_binary_ops_match_numpy_bitwise_with_numpy_promotion(uf: np.ufunc, a: Any, b: Any) -> None:
    x, y = values((6, 4), a, seed=4), values((4,), b, seed=5)
    x2, y2 = values((1, 4), a, seed=6), values((4,), b, seed=7)
    check(_binary(uf), [spec([None, 4], a), spec([4], b)], [(x, y), (x2, y2)], "exact")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_division_family_matches_numpy_on_zeros_and_signs(dtype: Any) -> None:
    def divisions(x: Any, y: Any) -> Any:
        return x // y, x % y, np.fmod(x, y)

    x = np.array([7, -7, 7, -7, 0, 5, -3, 1], dtype)
    y = np.array([2, 2, -2, -2, 3, 0, 0, 3], dtype)
    if np.dtype(dtype).kind == "f":
        x = np.concatenate([x, np.array([1.0, -0.0, np.inf, 5.5, np.nan], dtype)])
        y = np.concatenate([y, np.array([0.1, 2.0, 3.0, np.inf, 1.0], dtype)])
    check(divisions, [spec([None], dtype), spec([None], dtype)], [(x, y), (x[:3], y[:3])], "exact")


@pytest.mark.parametrize("literal", [1, -2, 2.5, True, 0.1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_weak_python_literals_keep_numpy_result_dtypes(literal: Any, dtype: Any) -> None:
    def with_literal(x: Any) -> Any:
        return x + literal, x * literal, x > literal, np.maximum(x, literal)

    check(with_literal, [spec([None], dtype)], [(values((5,), dtype, 8),)], "exact")


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_zero_d_values_stay_zero_d(dtype: Any) -> None:
    def scalar_math(x: Any, y: Any) -> Any:
        return np.abs(x) + y, x == y, np.where(x > y, x, y)

    calls = [(np.asarray(values((6,), dtype, 9)[4]), np.asarray(values((6,), dtype, 10)[5]))]
    check(scalar_math, [spec([], dtype), spec([], dtype)], calls, "exact")


def test_integer_power_with_literal_exponent_wraps_as_numpy() -> None:
    def powers(x: Any) -> Any:
        return x**2, x**3, x**0, np.power(x, 41)

    x = np.array([3, -7, 123456789, 0, 1], np.int64)
    check(powers, [spec([None], np.int64)], [(x,), (x[1:3],)], "exact")


def test_float_power_matches_numpy_within_tolerance() -> None:
    def powers(x: Any, y: Any) -> Any:
        return x**y, x**2, np.float_power(x, 0.5)

    x = np.abs(values((9,), np.float64, 11))
    y = values((9,), np.float64, 12, special=False)
    check(powers, [spec([None], np.float64), spec([None], np.float64)], [(x, y)], "transcendental")


@pytest.mark.parametrize("src,dst", [(a, b) for a in DTYPES for b in DTYPES if a != b])
def test_casts_match_numpy_astype(src: Any, dst: Any) -> None:
    def cast(x: Any) -> Any:
        return x.astype(dst)

    x = values((8,), src, 13, special=False)
    if np.dtype(src).kind == "f":
        x[:3] = [np.nan, -0.0, 2.75] if np.dtype(dst) == np.bool_ else [-2.75, -0.0, 2.75]
    check(cast, [spec([None], src)], [(x,)], "exact")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_where_and_clip_match_numpy(dtype: Any) -> None:
    def select(c: Any, x: Any, y: Any) -> Any:
        return np.where(c, x, y), np.where(x > 0, x, 0), np.clip(x, -3, 4), np.clip(y, None, 2)

    c = values((3, 5), np.bool_, 14)
    check(
        select,
        [spec([None, 5], np.bool_), spec([None, 5], dtype), spec([5], dtype)],
        [
            (c, values((3, 5), dtype, 15), values((5,), dtype, 16)),
            (c[:1], values((1, 5), dtype, 17), values((5,), dtype, 18)),
        ],
        "exact",
    )


def test_maximum_propagates_nan_and_fmax_ignores_it() -> None:
    def extremes(x: Any, y: Any) -> Any:
        return np.maximum(x, y), np.minimum(x, y), np.fmax(x, y), np.fmin(x, y)

    x = np.array([np.nan, 1.0, np.nan, -0.0], np.float32)
    y = np.array([2.0, np.nan, np.nan, 0.0], np.float32)
    check(extremes, [spec([4], np.float32), spec([4], np.float32)], [(x, y)], "exact")


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_shifts_match_numpy_past_the_bit_width(dtype: Any) -> None:
    def shifts(x: Any, k: Any) -> Any:
        return x >> k, x << k, x >> 1, np.left_shift(x, 3)

    bits = 8 * np.dtype(dtype).itemsize
    x = np.array([5, 1, 100, 7, 0, 3, 9, 2], dtype)
    if np.dtype(dtype).kind == "i":
        x[1::2] *= -1
    k = np.array([0, 1, 3, bits - 1, bits, bits + 5, 2, 1], dtype)
    check(shifts, [spec([None], dtype), spec([None], dtype)], [(x, k), (x[:3], k[:3])], "exact")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_hypot_matches_numpy_without_overflow(dtype: Any) -> None:
    def length(x: Any, y: Any) -> Any:
        return np.hypot(x, y)

    x, y = values((9,), dtype, 19), values((9,), dtype, 20)
    if np.dtype(dtype).kind == "f":
        big = np.finfo(dtype).max / 4
        x[4:9] = [big, 0.0, np.inf, np.nan, 1e-30]
        y[4:9] = [big, -0.0, np.nan, 2.0, 3e-30]
    check(
        length,
        [spec([None], dtype), spec([None], dtype)],
        [(x, y), (x[2:5], y[2:5])],
        "transcendental",
    )


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.uint16, np.uint32])
def test_narrow_integers_wrap_as_numpy(dtype: Any) -> None:
    def arithmetic(x: Any, y: Any) -> Any:
        return (
            x + y,
            x * y,
            -x,
            x - y,
            np.maximum(x, y),
            x < y,
            x // np.maximum(y, 1),
            x.max(axis=0),
            np.sort(x),
            x.cumsum(dtype=dtype),
            np.where(x > y, x, y),
            np.clip(x, 2, 50),
            x @ y.T,
        )

    info = np.iinfo(dtype)
    x = np.random.default_rng(3).integers(info.min, info.max, (4, 3), endpoint=True)
    y = np.random.default_rng(4).integers(info.min, info.max, (4, 3), endpoint=True)
    x, y = x.astype(dtype), y.astype(dtype)
    check(
        arithmetic,
        [spec([None, 3], dtype), spec([None, 3], dtype)],
        [(x, y), (x[:1], y[:1])],
        "exact",
    )
