"""The error an op without an ONNX form raises, naming the op, its source line and the fix."""

from __future__ import annotations

from typing import Any

from kernel_ext.errors import KxError


class OnnxExportError(KxError, NotImplementedError):
    """The graph holds an op (or an op's form) that has no faithful ONNX translation.

    A ``NotImplementedError``: the function is valid and runs under ``kx.function``; only its
    ONNX form is missing (never approximated instead). The message names the op, the line of
    the user's code that made it, and the fix."""


def where(node: Any) -> str:
    """``file:line: `text``` of the user's line that made ``node`` ("" when unknown)."""
    source = getattr(node, "source", None)
    if source is None:
        at = getattr(node, "meta", {}).get("where")
        return f" at {at}" if at else ""
    return f" at {source.file}:{source.line}: `{source.text}`"


def refuse(node: Any, why: str, fix: str) -> OnnxExportError:
    """The error for ``node``: ``op 'name' at file:line: `text` has no ONNX form: why. Fix: ...``"""
    return OnnxExportError(
        f"op '{node.op.value}' (node {node.name!r}){where(node)} has no ONNX "
        f"form: {why}. Fix: {fix}."
    )
