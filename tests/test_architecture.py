"""The house rules of docs/ARCHITECTURE.md, checked on the package's source.

The layer contracts live in pyproject.toml (``[tool.importlinter]``) and run through
import-linter, so an import that points up a layer, or Numba/IPython outside its layer, fails
here. The second rule import-linter cannot see: no module reaches into another module's
underscore names (``from .x import _y``, or ``x._y`` on an imported module); what one module
needs of another is public.
"""

from __future__ import annotations

import ast
import contextlib
import io
import logging
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "kernel_ext"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_path(parts: list[str]) -> Path | None:
    """The file or package of a dotted kernel_ext module path (relative to the repo root)."""
    base = ROOT.joinpath(*parts)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _resolve(path: Path, node: ast.ImportFrom) -> list[str] | None:
    """The dotted parts of the module a ``from ... import`` names, or None (not ours)."""
    if node.level:
        pkg = list(path.relative_to(ROOT).parent.parts)
        if node.level > 1:
            pkg = pkg[: len(pkg) - (node.level - 1)]
        return pkg + (node.module.split(".") if node.module else [])
    if node.module and node.module.split(".")[0] == "kernel_ext":
        return node.module.split(".")
    return None


def private_name_uses(path: Path, source: str | None = None) -> list[str]:
    """Every use in ``path`` (or ``source``, as if it were that file) of another kernel_ext
    module's underscore name."""
    text = path.read_text() if source is None else source
    tree = ast.parse(text, filename=str(path))
    found: list[str] = []
    module_aliases: set[str] = set()  # local names bound to kernel_ext modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            parts = _resolve(path, node)
            if parts is None:
                continue
            for alias in node.names:
                if _private(alias.name):
                    found.append(
                        f"{path.relative_to(ROOT)}:{node.lineno} imports "
                        f"{'.'.join(parts)}.{alias.name}"
                    )
                elif _module_path(parts + [alias.name]) is not None:
                    module_aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "kernel_ext":
                    if any(_private(p) for p in parts):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {alias.name}")
                    if alias.asname:
                        module_aliases.add(alias.asname)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in module_aliases
            and _private(node.attr)
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} uses {node.value.id}.{node.attr}")
    return found


def test_layer_contracts_hold() -> None:
    cli = pytest.importorskip("importlinter.cli")
    out = io.StringIO()
    # import-linter configures logging with disable_existing_loggers: every logger made so far
    # (ours among them) would stay disabled for the tests that run after this one
    loggers = [
        lg for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger)
    ]
    disabled = {id(lg): lg.disabled for lg in loggers}
    try:
        with contextlib.redirect_stdout(out):
            code = cli.lint_imports(
                config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True
            )
    finally:
        for lg in loggers:
            lg.disabled = disabled[id(lg)]
    report = out.getvalue()
    assert "Contracts: 5 kept, 0 broken" in report, report
    assert code == 0, report


def test_no_module_imports_another_modules_private_names() -> None:
    found = [use for path in sorted(PACKAGE.rglob("*.py")) for use in private_name_uses(path)]
    assert found == [], "\n".join(found)


def test_private_name_check_finds_each_form() -> None:
    # The check above must be able to fail: each forbidden form, as if written in ir/graph.py.
    found = private_name_uses(
        PACKAGE / "ir" / "graph.py",
        "from .ops import _G\n"
        "from kernel_ext.ir.ops import _UFUNC_OF\n"
        "from . import ops as o\n"
        "x = o._TYPE_NAMES\n"
        "from .ops import OpKind\n",
    )
    assert len(found) == 3, found
    assert any("kernel_ext.ir.ops._G" in f for f in found)
    assert any("_UFUNC_OF" in f for f in found)
    assert any("o._TYPE_NAMES" in f for f in found)
