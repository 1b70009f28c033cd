"""The code-quality checks run as part of the suite: ruff (lint and format), mypy, ESLint.

Each test runs the tool the way a developer does (configured in pyproject.toml and
eslint.config.js) and fails with the tool's own report. A missing tool skips the test, except
under CI (``CI`` set), where every check is mandatory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def _python_tool(name: str) -> str:
    """The console script ``name`` of this interpreter's environment (or on PATH)."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f'{name} missing: `pip install -e ".[test]"` installs it')
        pytest.skip(f'{name} is not installed (pip install -e ".[test]")')
    return found


def _run(command: list[str], env: dict[str, str] | None = None) -> None:
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    report = (result.stdout[-8000:] + result.stderr[-4000:]).strip()
    if result.returncode != 0:
        pytest.fail(f"`{' '.join(command)}` failed:\n{report}", pytrace=False)


def test_ruff_finds_nothing_to_fix():
    _run([_python_tool("ruff"), "check", "--no-cache", "."])


def test_the_python_code_is_ruff_formatted():
    _run([_python_tool("ruff"), "format", "--check", "--no-cache", "."])


@pytest.mark.slow  # 15 s without mypy's cache, as a fresh clone has it; pre-commit runs it too
def test_mypy_finds_no_type_errors():
    # [tool.mypy] names the files and the strictness per package. Its incremental cache
    # (.mypy_cache, ignored by git) makes a rerun take seconds; a cold run about half a minute.
    _run([_python_tool("mypy")])


def test_eslint_finds_no_problems_in_the_typescript():
    # package.json's lint script: the project's lint standard for the extension
    jlpm = shutil.which("jlpm") or str(Path(sys.executable).parent / "jlpm")
    if not (ROOT / "node_modules" / ".bin" / "eslint").exists() or not Path(jlpm).exists():
        if os.environ.get("CI"):
            pytest.fail("eslint missing: `pip install -e .` installs the extension's dependencies")
        pytest.skip("the lab extension's dependencies are not installed (pip install -e .)")
    env = dict(os.environ, PATH=f"{Path(jlpm).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    _run([jlpm, "lint"], env=env)
