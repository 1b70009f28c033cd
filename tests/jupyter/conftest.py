"""Fixtures for the notebook-layer tests: a real IPython shell with the magics installed.

Tests use ``InteractiveShell.instance()`` (the one the inspector's tests use too), install the
extension's magics with :func:`kernel_ext.jupyter.install` and run cells through
``shell.run_cell`` exactly as a kernel does, so cell numbers, IPython's compiler cache and
``UsageError`` handling are the real ones.
"""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

import kernel_ext.jupyter as kj


class Cells:
    """Run cells in the shell; ``run`` fails the test on an error, ``error`` expects one."""

    def __init__(self, shell: InteractiveShell, magics: Any) -> None:
        self.shell = shell
        self.magics = magics
        self.ns = shell.user_ns
        self.number = 0  # the In [n] of the last cell run

    def run(self, code: str) -> Any:
        result = self.shell.run_cell(code, store_history=True)
        self.number = result.execution_count
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            raise AssertionError(f"cell failed: {error!r}\n{code}") from error
        return result.result

    def error(self, code: str) -> BaseException:
        result = self.shell.run_cell(code, store_history=True)
        self.number = result.execution_count
        error = result.error_before_exec or result.error_in_exec
        assert error is not None, f"cell did not fail:\n{code}"
        return error


@pytest.fixture
def cells() -> Any:
    shell = InteractiveShell.instance()
    magics = kj.install(shell)
    cells = Cells(shell, magics)
    cells.run("import numpy as np\nimport kernel_ext as kx")
    yield cells
    kj.uninstall(shell)
