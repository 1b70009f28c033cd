"""The export API: which trace is exported, the model's inputs, outputs and symbolic dims, the
opset, the file, the checker; and refusals that name the op, its line and the fix."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx_support import Exported, onnx, session, spec, values

import kernel_ext as kx


def _line_of(fn: Any, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _angle(y: Any, x: Any) -> Any:
    r = x * x + y * y
    return np.arctan2(y, x) + r


def test_an_op_without_onnx_form_is_refused_with_its_name_line_and_fix() -> None:
    with pytest.raises(kx.onnx.OnnxExportError) as info:
        Exported(_angle, spec([3], np.float64), spec([3], np.float64))
    message = str(info.value)
    assert "'arctan2'" in message and "Atan2" in message and "Fix:" in message
    assert f"{Path(__file__).name}:{_line_of(_angle, 'arctan2')}" in message
    assert isinstance(info.value, NotImplementedError)
    assert isinstance(info.value, kx.errors.KxError)


@pytest.mark.parametrize(
    "body,op",
    [
        (lambda x: np.linalg.inv(x), "inv"),
        (lambda x: np.argsort(x, axis=0), "argsort"),
        (lambda x: np.linalg.eigvals(x).real, "numpy_call"),
        (lambda x: np.cumprod(x), "cumprod"),
        (lambda x: np.logaddexp(x, x), "logaddexp"),
        (lambda x: np.pad(x, 1, mode="symmetric"), "pad"),
        (lambda x: np.einsum("...i,...i->...", x, x[0]), "einsum"),
    ],
)
def test_ops_without_a_rule_are_refused_by_name(body: Any, op: str) -> None:
    def fn(x: Any) -> Any:
        return body(x)

    with pytest.raises(kx.onnx.OnnxExportError, match=f"op '{op}'.*Fix: "):
        Exported(fn, spec([3, 3], np.float64))


def test_state_and_side_effects_are_refused() -> None:
    counter = kx.Variable(np.zeros(2), name="counter")

    def bump(x: Any) -> Any:
        counter.assign_add(x)
        return x * 2

    with pytest.raises(kx.onnx.OnnxExportError, match=r"assign_add_variable.*no state"):
        Exported(bump, spec([2], np.float64))

    def chatty(x: Any) -> Any:
        kx.print("x is", x)
        return x + 1

    with pytest.raises(kx.onnx.OnnxExportError, match=r"'print'.*side effects"):
        Exported(chatty, spec([2], np.float64))

    def checked(x: Any) -> Any:
        if x.sum() < 0:
            raise ValueError("negative total")
        return x

    with pytest.raises(kx.onnx.OnnxExportError, match=r"'check'.*cannot raise"):
        Exported(checked, spec([2], np.float64))


def test_a_function_with_several_traces_needs_a_signature() -> None:
    @kx.function
    def double(x: Any) -> Any:
        return x * 2

    with pytest.raises(ValueError, match="no trace yet"):
        kx.onnx.export(double)
    double(np.ones(2))
    double(np.ones(2, np.int32))
    with pytest.raises(
        ValueError,
        match=r"2 traces \(\(x: float64\[2\]\); "
        r"\(x: int32\[2\]\)\).*signature=",
    ):
        kx.onnx.export(double)
    model = kx.onnx.export(double, signature=(kx.TensorSpec([None], np.int32),))
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.INT32
    chosen = double.concrete_functions[0]
    model = kx.onnx.export(double, signature=chosen)
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.DOUBLE
    with pytest.raises(TypeError, match=r"kx\.function or a ConcreteFunction"):
        kx.onnx.export(lambda x: x)


def test_input_signature_is_traced_for_export() -> None:
    @kx.function(input_signature=[kx.TensorSpec([None, 2], np.float32)])
    def scale(x: Any) -> Any:
        return x * 3

    model = kx.onnx.export(scale)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["x_dim0", 2]


def test_export_writes_a_checked_model_file(tmp_path: Path) -> None:
    f = Exported(_moments, spec([None, 3], np.float32))
    path = tmp_path / "moments.onnx"
    kx.onnx.export(f.cf, path)
    loaded = onnx.load(str(path))
    onnx.checker.check_model(loaded, full_check=True)
    assert [o.name for o in loaded.graph.output] == ["output_0", "output_1"]
    x = values((4, 3), np.float32, 70, special=False)
    got = session(loaded).run(None, {"x": x})
    np.testing.assert_allclose(got[0], x.mean(axis=0), rtol=1e-6)
    assert got[1].dtype == np.int64 and np.array_equal(got[1], np.argmax(x, axis=1))


def _moments(x: Any) -> Any:
    return x.mean(axis=0), np.argmax(x, axis=1)


@pytest.mark.parametrize("opset", [18, 21])
def test_supported_opsets_run_in_onnxruntime(opset: int) -> None:
    f = Exported(_moments, spec([None, 3], np.float64), opset=opset)
    assert f.model.opset_import[0].version == opset
    x = values((2, 3), np.float64, 71, special=False)
    assert np.array_equal(f.run(x)[1], np.argmax(x, axis=1))


def test_an_opset_below_the_rules_is_refused() -> None:
    f = kx.function(_moments).get_concrete_function(spec([2, 3], np.float64))
    with pytest.raises(ValueError, match="opset=13 is outside 18"):
        kx.onnx.export(f, opset=13)


def test_nested_arguments_feed_by_input_name() -> None:
    def combine(pair: Any, table: Any, k: int) -> Any:
        a, b = pair
        return a * table["w"] + b * k

    f = Exported(
        combine, (spec([2], np.float32), spec([2], np.float32)), {"w": spec([2], np.float32)}, 3
    )
    pair = (np.ones(2, np.float32), np.arange(2, dtype=np.float32))
    table = {"w": np.full(2, 2.0, np.float32)}
    feed = kx.onnx.input_feed(f.cf, pair, table, 3)
    assert len(feed) == 3
    assert np.array_equal(f.session.run(None, feed)[0], combine(pair, table, 3))


def test_importing_kernel_ext_does_not_import_onnx() -> None:
    code = (
        # kernel_ext.onnx itself comes with kernel_ext (kernel_ext.ops registers its rules)
        "import sys, kernel_ext as kx; kx.onnx.export; assert 'kernel_ext.onnx' in sys.modules; "
        "assert 'onnx' not in sys.modules, 'onnx loads only when a model is built'"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(root), "PATH": ""},
        check=False,
    )
    assert done.returncode == 0, done.stderr
