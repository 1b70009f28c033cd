"""Shape ops, slicing, gathers and scatters in onnxruntime against eager NumPy (all exact),
with ``None`` dims at two run-time sizes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx_support import Exported, check, spec, values

import kernel_ext as kx


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_shape_ops_match_numpy(dtype: Any) -> None:
    def shapes(x: Any) -> Any:
        return (
            x.reshape(-1),
            x.reshape(2, 3, 2),
            x.T,
            np.transpose(x, (1, 0)),
            np.expand_dims(x, 1),
            np.expand_dims(x, (0, -1)),
            x[None],
            np.flip(x, 0),
            np.flip(x),
            np.broadcast_to(x[0], (5, 6)),
            x.copy(),
        )

    check(shapes, [spec([2, 6], dtype)], [(values((2, 6), dtype, 30),)], "exact")


def test_squeeze_concatenate_and_stack_match_numpy() -> None:
    def joined(x: Any, y: Any) -> Any:
        return (
            np.squeeze(x[:, None], 1),
            np.concatenate([x, x * 2], axis=0),
            np.concatenate([x, y], axis=1),
            np.concatenate([x, y], axis=None),
            np.stack([x, x + 1], axis=1),
            np.stack([x, x]),
            np.hstack([x, y]),
        )

    x, y = values((4, 3), np.float32, 31), values((4, 2), np.int32, 32)
    check(
        joined,
        [spec([None, 3], np.float32), spec([None, 2], np.int32)],
        [(x, y), (x[:1], y[:1])],
        "exact",
    )


BASIC_INDEXES = [
    (slice(1, None),),
    (slice(None, None, -1),),
    (slice(-2, None, -2), 1),
    (Ellipsis, 0),
    (0,),
    (-1, slice(1, 3)),
    (slice(None), None, 2),
    (None, Ellipsis, None),
    (slice(2, 100),),
    (slice(-100, -1, 3), -2),
]


@pytest.mark.parametrize("index", BASIC_INDEXES, ids=[str(i) for i in BASIC_INDEXES])
def test_basic_indexing_matches_numpy(index: tuple) -> None:
    def pick(x: Any) -> Any:
        return x[index]

    x = values((5, 4), np.int64, 33)
    check(pick, [spec([None, 4], np.int64)], [(x,), (x[:3],)], "exact")


def test_dynamic_integer_and_slice_bounds_match_numpy() -> None:
    def pick(x: Any, i: Any, j: Any) -> Any:
        return x[i], x[:, j], x[i : j + 2], x[i, j]

    x = values((6, 5), np.float64, 34)
    check(
        pick,
        [spec([None, 5], np.float64), spec([], np.int64), spec([], np.int32)],
        [(x, np.int64(1), np.int32(2)), (x[:4], np.int64(-2), np.int32(-1))],
        "exact",
    )


def test_boolean_masks_match_numpy() -> None:
    def masked(x: Any, m: Any) -> Any:
        return x[x > 0], x[m], x[:, m[0]], x[m[:, 0]]

    x = values((5, 3), np.float32, 35, special=False)
    m = values((5, 3), np.bool_, 36)
    check(
        masked,
        [spec([None, 3], np.float32), spec([None, 3], np.bool_)],
        [(x, m), (x[:2], m[:2])],
        "exact",
    )


def test_integer_array_indexes_match_numpy() -> None:
    def gathered(x: Any, rows: Any, cols: Any) -> Any:
        return (
            x[rows],
            x[:, cols],
            x[rows, cols],
            x[np.arange(x.shape[0]), 1],
            x[[0, -1]],
            x[rows[:, None], cols],
            x[-1, cols],
        )

    x = values((4, 3), np.int32, 37)
    rows, cols = np.array([3, 0, -1]), np.array([2, 2, 0])
    check(
        gathered,
        [spec([4, 3], np.int32), spec([None], np.int64), spec([None], np.int64)],
        [(x, rows, cols), (x, rows[:1], cols[:1])],
        "exact",
    )


def test_array_index_after_a_slice_keeps_numpy_placement() -> None:
    def gathered(x: Any, idx: Any) -> Any:
        return x[:, idx, 1:], x[1:, :, idx], x[idx, :, idx]

    x = values((4, 4, 4), np.float64, 38)
    idx = np.array([[0, 2], [3, 1]])
    check(gathered, [spec([4, 4, 4], np.float64), spec([2, 2], np.int64)], [(x, idx)], "exact")


def test_item_assignment_matches_numpy() -> None:
    def assigned(x: Any, m: Any, idx: Any, v: Any) -> Any:
        y = x.copy()
        y[m] = 0
        y[:, 1] = 5.0
        y[idx, 0] += 1
        y[1:3] = v
        y[-1, ::-2] = np.arange(2)
        return y

    x = values((4, 4), np.float64, 39, special=False)
    m = x > 0
    check(
        assigned,
        [
            spec([4, 4], np.float64),
            spec([4, 4], np.bool_),
            spec([None], np.int64),
            spec([4], np.float64),
        ],
        [
            (x, m, np.array([0, 3]), values((4,), np.float64, 40)),
            (x, ~m, np.array([2]), values((4,), np.float64, 41)),
        ],
        "exact",
    )


def test_masked_assignment_of_an_array_fills_in_order() -> None:
    def assigned(x: Any) -> Any:
        y = x.copy()
        y[y < 0] = np.arange(20)[:1] * 10.0
        z = x.copy()
        z[x > 1] = x[x > 1] * 2
        return y, z

    x = values((3, 5), np.float64, 42, special=False)
    check(assigned, [spec([None, 5], np.float64)], [(x,), (x[:1],)], "exact")


def test_add_at_accumulates_repeated_indices() -> None:
    def scattered(x: Any, idx: Any, v: Any) -> Any:
        y = x.copy()
        np.add.at(y, idx, v)
        z = x.copy()
        np.maximum.at(z, idx, v)
        return y, z

    x = values((5,), np.int64, 43)
    check(
        scattered,
        [spec([5], np.int64), spec([None], np.int64), spec([None], np.int64)],
        [(x, np.array([0, 2, 0, 0]), np.array([1, 2, 3, 4])), (x, np.array([4]), np.array([9]))],
        "exact",
    )


def test_arange_matches_numpy() -> None:
    def counted(x: Any) -> Any:
        return np.arange(x.shape[0]) * 1.5, np.arange(1, 9, 2), np.arange(0.5, 3), x.shape[0] + x

    check(
        counted,
        [spec([5], np.float32)],
        [(values((5,), np.float32, 44),), (values((5,), np.float32, 45),)],
        "exact",
    )


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_sort_matches_numpy_with_nans_last(dtype: Any) -> None:
    def ordered(x: Any) -> Any:
        return np.sort(x), np.sort(x, axis=0), np.sort(x, axis=None)

    x = values((6, 4), dtype, 48)
    check(ordered, [spec([None, 4], dtype)], [(x,), (x[:1],)], "exact")


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_matches_numpy(mode: str) -> None:
    def padded(x: Any) -> Any:
        extra = {"constant_values": 7} if mode == "constant" else {}
        return np.pad(x, ((1, 2), (0, 3)), mode=mode, **extra), np.pad(x, 1, mode=mode)

    x = values((4, 5), np.int64, 49)
    check(padded, [spec([4, 5], np.int64)], [(x,)], "exact")


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_nonzero_and_argwhere_list_indices_in_numpy_order(dtype: Any) -> None:
    def where_set(x: Any) -> Any:
        rows, cols = np.nonzero(x)
        return rows, cols, np.argwhere(x), x[np.nonzero(x)]

    x = values((5, 4), dtype, 53, special=False)
    x[1] = 0
    check(where_set, [spec([None, 4], dtype)], [(x,), (x[1:2],)], "exact")


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.bool_])
def test_stable_argsort_matches_numpy_with_ties_and_nans(dtype: Any) -> None:
    def ranks(x: Any) -> Any:
        return (
            np.argsort(x, kind="stable"),
            np.argsort(x, axis=0, stable=True),
            np.argsort(x, axis=None, kind="stable"),
        )

    x = values((7, 5), dtype, 54)
    if np.dtype(dtype).kind in "iuf":
        x = np.round(x / 4).astype(dtype)  # many ties
    if np.dtype(dtype).kind == "f":
        x[0, :3] = np.nan
        x[3, 1] = np.inf
    check(ranks, [spec([None, 5], dtype)], [(x,), (x[2:4],)], "exact")


def test_argsort_of_numpy_default_kind_is_refused_with_the_stable_fix() -> None:
    def ranks(x: Any) -> Any:
        return np.argsort(x)

    with pytest.raises(kx.onnx.OnnxExportError, match=r"'argsort'.*kind='stable'"):
        Exported(ranks, spec([4], np.float64))


def test_wrap_padding_needs_opset_19() -> None:
    def wrapped(x: Any) -> Any:
        return np.pad(x, (1, 2), mode="wrap")

    with pytest.raises(kx.onnx.OnnxExportError, match=r"'wrap'.*opset 19"):
        Exported(wrapped, spec([5], np.int64))
    f = Exported(wrapped, spec([5], np.int64), opset=19)
    x = values((5,), np.int64, 55)
    assert np.array_equal(f.run(x)[0], wrapped(x))


@pytest.mark.parametrize("dtype", [np.float64, np.int8, np.bool_])
def test_compress_and_diagflat_match_numpy(dtype: Any) -> None:
    def selected(x: Any, c: Any) -> Any:
        return (
            np.compress(c, x, axis=0),
            np.compress(c[:2], x, axis=1),
            np.compress(c, x),
            np.diagflat(x[0]),
            np.diagflat(x, k=2),
            np.diagflat(x[:, 0], -1),
        )

    x = values((3, 3), dtype, 56)
    c = np.array([True, False, True])
    check(selected, [spec([3, 3], dtype), spec([3], np.bool_)], [(x, c), (x, ~c)], "exact")
