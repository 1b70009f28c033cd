"""matmul/dot/outer/einsum, cond -> If, graph loops -> Loop, and variables as initializers,
in onnxruntime against eager NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx_support import Exported, assert_matches, check, onnx, session, spec, values

import kernel_ext as kx


def op_types(graph: Any) -> set[str]:
    """The ONNX op types in ``graph`` and its sub-graphs."""
    found = set()
    for node in graph.node:
        found.add(node.op_type)
        for attr in node.attribute:
            if attr.g.node:
                found |= op_types(attr.g)
    return found


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_matrix_products_match_numpy(dtype: Any) -> None:
    family = "linalg" if np.dtype(dtype).kind == "f" else "exact"

    def products(a: Any, b: Any, v: Any) -> Any:
        return (
            a @ b,
            np.dot(a, b),
            a @ v,
            v @ b,
            np.dot(v, v),
            np.outer(v, v),
            np.matmul(np.stack([a, a]), b),
            np.einsum("ij,jk->ik", a, b),
            np.vecdot(a, v),
        )

    a, b = values((5, 3), dtype, 50, special=False), values((4, 3), dtype, 51, special=False)
    v = values((3,), dtype, 52, special=False)

    def fixed(a: Any, b: Any, v: Any) -> Any:
        return products(a, b.T, v)

    check(
        fixed,
        [spec([None, 3], dtype), spec([4, 3], dtype), spec([3], dtype)],
        [(a, b, v), (a[:2], b, v)],
        family,
    )


def test_mixed_dtype_matmul_promotes_as_numpy() -> None:
    def product(a: Any, b: Any) -> Any:
        return a @ b

    check(
        product,
        [spec([2, 3], np.int32), spec([3, 2], np.float32)],
        [(values((2, 3), np.int32, 53), values((3, 2), np.float32, 54, special=False))],
        "linalg",
    )


def test_cond_becomes_if_and_takes_either_branch() -> None:
    def branchy(x: Any, t: Any) -> Any:
        if x.sum() > t:
            y = x * 2
        else:
            y = x - 1.0
        return y, np.where(y > 0, y, 0.0).max()

    f = check(
        branchy,
        [spec([None], np.float64), spec([], np.float64)],
        [
            (values((6,), np.float64, 55, special=False), np.float64(-100.0)),
            (values((3,), np.float64, 56, special=False), np.float64(100.0)),
        ],
        "exact",
    )
    assert "If" in op_types(f.model.graph)


def test_while_loop_becomes_loop_with_a_run_time_trip_count() -> None:
    def halve(x: Any, n: Any) -> Any:
        i = 0
        while i < n:
            x = x * 0.5 + i
            i += 1
        return x, i

    f = check(
        halve,
        [spec([None, 2], np.float32), spec([], np.int64)],
        [
            (values((3, 2), np.float32, 57, special=False), np.int64(4)),
            (values((1, 2), np.float32, 58, special=False), np.int64(0)),
        ],
        "exact",
    )
    assert "Loop" in op_types(f.model.graph)


def test_for_range_loop_with_a_branch_inside_matches_numpy() -> None:
    def accumulate(x: Any, n: Any) -> Any:
        total = np.zeros_like(x)
        for k in range(n):
            if k % 2 == 0:
                total = total + x * k
            else:
                total = total - x
        return total

    check(
        accumulate,
        [spec([None], np.float64), spec([], np.int64)],
        [
            (values((4,), np.float64, 59, special=False), np.int64(5)),
            (values((2,), np.float64, 60, special=False), np.int64(1)),
        ],
        "exact",
    )


def test_nested_loops_match_numpy() -> None:
    def table(x: Any, n: Any) -> Any:
        out = x
        i = 0
        while i < n:
            j = 0
            while j < i:
                out = out + j
                j += 1
            i += 1
        return out

    check(
        table,
        [spec([None], np.int64), spec([], np.int64)],
        [(values((3,), np.int64, 61), np.int64(4)), (values((1,), np.int64, 62), np.int64(2))],
        "exact",
    )


def test_variables_become_initializers_with_their_values_at_export() -> None:
    w = kx.Variable(np.arange(6.0).reshape(3, 2), name="w")
    b = kx.Variable(np.array([0.5, -1.0]), name="b")

    def layer(x: Any) -> Any:
        return np.tanh(x @ w + b)

    f = Exported(layer, spec([None, 3], np.float64))
    names = {t.name for t in f.model.graph.initializer}
    assert len(names) == 2 and {i.name for i in f.model.graph.input}.isdisjoint(names)
    x = values((4, 3), np.float64, 63, special=False)
    with np.errstate(all="ignore"):
        want = np.tanh(x @ np.arange(6.0).reshape(3, 2) + np.array([0.5, -1.0]))
    assert_matches(f.run(x)[0], want, "transcendental")


def test_loop_over_rows_of_a_none_dim_array_reads_its_run_time_length() -> None:
    def running(x: Any) -> Any:
        total = np.zeros(x.shape[1])
        for row in x:
            total = total + row * len(x)
        return total

    check(
        running,
        [spec([None, 3], np.float64)],
        [
            (values((5, 3), np.float64, 64, special=False),),
            (values((2, 3), np.float64, 65, special=False),),
        ],
        "exact",
    )


def test_the_usage_example_of_the_docs_runs(tmp_path: Any) -> None:
    W = kx.Variable(values((3, 4), np.float32, 66, special=False), name="W")
    b = kx.Variable(values((4,), np.float32, 67, special=False), name="b")

    @kx.function(input_signature=[kx.TensorSpec([None, 3], np.float32)])
    def predict(x: Any) -> Any:
        h = np.tanh(x @ W + b)
        return h.argmax(axis=1), h.max(axis=1)

    kx.onnx.export(predict, tmp_path / "predict.onnx")
    cf = predict.get_concrete_function()
    ses = session(onnx.load(str(tmp_path / "predict.onnx")))
    batch = values((6, 3), np.float32, 68, special=False)
    labels, scores = ses.run(None, kx.onnx.input_feed(cf, batch))
    want_labels, want_scores = predict.python_function(batch)
    assert_matches(labels, want_labels, "exact")
    assert_matches(scores, want_scores, "transcendental")


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_, np.uint8])
def test_einsum_with_ellipsis_vdot_and_boolean_products_match_numpy(dtype: Any) -> None:
    family = "linalg" if np.dtype(dtype).kind == "f" else "exact"

    def products(a: Any, b: Any) -> Any:
        return (
            np.einsum("...ij,...jk->...ik", a, b),
            np.einsum("ij->i", a),
            np.vdot(a, a),
            a @ b,
            np.dot(a[0], b[:, 0]),
        )

    a, b = values((2, 3), dtype, 69, special=False), values((3, 2), dtype, 70, special=False)
    check(products, [spec([2, 3], dtype), spec([3, 2], dtype)], [(a, b)], family)
