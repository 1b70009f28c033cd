"""Reductions and scans in onnxruntime against eager NumPy: axes, keepdims, NumPy's result
dtypes (int64 sums of int32 and bool, float64 means of ints), NaN propagation, arg-extremes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from onnx_support import Exported, check, spec, values

import kernel_ext as kx

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]
AXES = [None, 0, -1, (0, 2)]


def _reduction(name: str, axis: Any, keepdims: bool) -> Callable[[Any], Any]:
    fn = getattr(np, name)

    def reduce(x: Any) -> Any:
        return fn(x, axis=axis, keepdims=keepdims)

    reduce.__name__ = name
    return reduce


def _cases(names: list[str]) -> list:
    return [
        pytest.param(n, d, a, k, id=f"{n}-{np.dtype(d).name}-{a}-{k}")
        for n in names
        for d in DTYPES
        for a in AXES
        for k in (False, True)
        if not (n in ("std", "var", "mean") and d is np.bool_)
    ]


@pytest.mark.parametrize(
    "name,dtype,axis,keepdims",
    [
        c
        for c in _cases(["sum", "prod", "max", "min", "any", "all"])
        if not (c.values[0] == "prod" and np.dtype(c.values[1]).kind != "f")
    ],
)
def test_exact_reductions_match_numpy(name: str, dtype: Any, axis: Any, keepdims: bool) -> None:
    family = "reduction" if np.dtype(dtype).kind == "f" and name in ("sum", "prod") else "exact"
    x = values((4, 3, 5), dtype, seed=20, special=name not in ("sum", "prod"))
    check(_reduction(name, axis, keepdims), [spec([None, 3, 5], dtype)], [(x,), (x[:2],)], family)


@pytest.mark.parametrize("name,dtype,axis,keepdims", _cases(["mean", "std", "var"]))
def test_mean_and_moments_match_numpy_within_tolerance(
    name: str, dtype: Any, axis: Any, keepdims: bool
) -> None:
    x = values((4, 3, 5), dtype, seed=21, special=False)
    check(
        _reduction(name, axis, keepdims), [spec([None, 3, 5], dtype)], [(x,), (x[:3],)], "reduction"
    )


def test_std_with_ddof_matches_numpy() -> None:
    def moments(x: Any) -> Any:
        return x.std(axis=0, ddof=1), x.var(ddof=1), np.std(x, axis=1)

    x = values((6, 4), np.float64, seed=22, special=False)
    check(moments, [spec([None, 4], np.float64)], [(x,), (x[:2],)], "reduction")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_argmax_and_argmin_pick_numpy_first_index_and_first_nan(dtype: Any, axis: Any) -> None:
    def extremes(x: Any) -> Any:
        return (
            np.argmax(x, axis=axis),
            np.argmin(x, axis=axis),
            np.argmax(x, axis=axis, keepdims=True),
        )

    x = values((5, 4), dtype, seed=23)
    if np.dtype(dtype).kind in "iu":
        x[1] = x[3]  # ties
    if np.dtype(dtype).kind == "f":
        x[2, 1] = np.nan
    check(extremes, [spec([None, 4], dtype)], [(x,), (x[3:],)], "exact")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_cumsum_matches_numpy(dtype: Any) -> None:
    def running(x: Any) -> Any:
        return (
            np.cumsum(x, axis=0),
            np.cumsum(x),
            x.cumsum(axis=-1),
            np.add.accumulate(x),
            np.add.accumulate(x, axis=1, dtype=np.float64),
        )

    x = values((4, 3), dtype, seed=24, special=False)
    check(running, [spec([None, 3], dtype)], [(x,), (x[:1],)], "reduction")


def test_integer_sums_are_exact_and_wrap_as_numpy() -> None:
    def totals(x: Any, y: Any) -> Any:
        return x.sum(), np.sum(x, dtype=np.int32), x.sum(axis=0, keepdims=True), y.sum(axis=1)

    x = np.full((3, 4), 2**30, np.int32)
    y = np.array([[2**60 + 1, 2, 3], [-(2**62), 2**62, 7]], np.int64)
    check(
        totals,
        [spec([None, 4], np.int32), spec([None, 3], np.int64)],
        [(x, y), (x[:0], y[:1])],
        "exact",
    )


def test_integer_products_are_refused() -> None:
    def total(x: Any) -> Any:
        return x.prod(axis=0)

    with pytest.raises(kx.onnx.OnnxExportError, match=r"'prod'.*integer products"):
        Exported(total, spec([None, 4], np.int64))


def test_max_propagates_nan_as_numpy() -> None:
    def extremes(x: Any) -> Any:
        return x.max(axis=0), x.min(axis=1), np.max(x)

    x = values((3, 4), np.float32, seed=25, special=False)
    x[1, 2] = np.nan
    check(extremes, [spec([None, 4], np.float32)], [(x,), (x[2:],)], "exact")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_nan_reductions_ignore_nans_as_numpy(dtype: Any) -> None:
    def ignoring(x: Any) -> Any:
        return (
            np.nansum(x, axis=0),
            np.nanmean(x, axis=1),
            np.nanmax(x, axis=0),
            np.nanmin(x, axis=1, keepdims=True),
            np.nansum(x),
            np.nanmax(x),
        )

    x = values((4, 3), dtype, 26, special=False)
    if np.dtype(dtype).kind == "f":
        x[1, :] = np.nan  # a row of NaNs only: nanmean/nanmin give NaN there
        x[2, 0] = np.nan
    check(ignoring, [spec([None, 3], dtype)], [(x,), (x[1:3],)], "reduction")
