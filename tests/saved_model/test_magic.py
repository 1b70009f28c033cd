"""``%tffunction_save`` through a real IPython shell: saved models, usage errors, --onnx."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import kernel_ext as kx
import kernel_ext.jupyter as kj


@pytest.fixture
def shell():
    shell = InteractiveShell.instance()
    kj.install(shell)
    shell.run_cell("import numpy as np\nimport kernel_ext as kx", store_history=True)
    yield shell
    kj.uninstall(shell)


def _run(shell, code: str):
    result = shell.run_cell(code, store_history=True)
    return result.error_before_exec or result.error_in_exec


def test_the_magic_saves_a_traced_function_that_loads_elsewhere(shell, tmp_path, capsys):
    assert (
        _run(
            shell,
            "@kx.function(backend='numpy')\n"
            "def predict(x):\n"
            "    return np.tanh(x) * 2\n"
            "predict(np.linspace(-1, 1, 5))",
        )
        is None
    )
    assert _run(shell, f"%tffunction_save predict {tmp_path / 'm'}") is None
    assert "predict: wrote a saved model to" in capsys.readouterr().out
    loaded = kx.saved_model.load(tmp_path / "m", backend="numpy")
    x = np.linspace(-1, 1, 5)
    assert loaded.predict(x).tobytes() == (np.tanh(x) * 2).tobytes()


def test_usage_errors_name_the_problem(shell, tmp_path):
    error = _run(shell, f"%tffunction_save nothing_here {tmp_path / 'm'}")
    assert isinstance(error, UsageError) and "no variable named 'nothing_here'" in str(error)
    assert _run(shell, "f = kx.function(lambda x: x + 1)") is None
    error = _run(shell, f"%tffunction_save f {tmp_path / 'm'}")
    assert isinstance(error, UsageError) and "no traces" in str(error)
    error = _run(shell, f"%tffunction_save f {tmp_path / 'm'} --onnx --source")
    assert isinstance(error, UsageError) and "choose one" in str(error)
    error = _run(shell, "%tffunction_save")
    assert isinstance(error, UsageError)
    error = _run(shell, f"%tffunction_save f.nope {tmp_path / 'm'}")
    assert isinstance(error, UsageError) and "no attribute 'nope'" in str(error)


def test_a_dotted_name_saves_one_method_of_a_model(shell, tmp_path):
    assert (
        _run(
            shell,
            "class M:\n"
            "    @kx.function(backend='numpy')\n"
            "    def f(self, x):\n"
            "        return x - 1\n"
            "m = M()\n"
            "m.f(np.arange(3))",
        )
        is None
    )
    assert _run(shell, f"%tffunction_save m.f {tmp_path / 'mf'}") is None
    loaded = kx.saved_model.load(tmp_path / "mf", backend="numpy")
    assert loaded.f(np.arange(3)).tolist() == [-1, 0, 1]


def test_onnx_without_the_exporter_is_a_usage_error_naming_the_fix(shell, tmp_path, monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "kernel_ext.onnx" else find_spec(name, *rest),
    )
    assert _run(shell, "@kx.function\ndef g(x):\n    return x * 2\ng(np.ones(2))") is None
    error = _run(shell, f"%tffunction_save g {tmp_path / 'g.onnx'} --onnx")
    assert isinstance(error, UsageError) and "kernel_ext.onnx" in str(error)
