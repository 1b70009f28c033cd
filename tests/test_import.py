"""The package's import contract."""

import subprocess
import sys


def test_import_kernel_ext_does_not_import_heavy_modules():
    code = (
        "import sys, kernel_ext as kx; "
        "heavy = [m for m in ('numba', 'IPython', 'ipywidgets', 'comm', 'llvmlite', "
        "'dask', 'distributed') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


def test_public_api_names():
    import kernel_ext as kx

    for name in (
        "function",
        "Function",
        "ConcreteFunction",
        "TensorSpec",
        "Variable",
        "print",
        "config",
        "TraceType",
        "errors",
    ):
        assert hasattr(kx, name), name
    assert callable(kx.config.run_functions_eagerly)
    assert callable(kx.config.functions_run_eagerly)
