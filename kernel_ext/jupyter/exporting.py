"""Writing a traced function out, for ``%tffunction_save`` and the sidebar's Export action.

One door to the three exporters — a saved-model directory (``kx.saved_model.save``), an ONNX
model (``kernel_ext.onnx.export``, an optional extra) and standalone NumPy source
(``kx.saved_model.export_source``) — so that the magic and the sidebar write the same files
and refuse with the same words. What goes wrong in a way the user can fix (an op with no ONNX
form, a path that exists, the onnx extra missing) is an :class:`ExportRefused` carrying the
exporter's own message; anything else is a bug and propagates.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any

from .protocol import EXPORT_FORMATS

__all__ = ["FORMATS", "ExportRefused", "default_path", "describe", "export"]

#: The formats, by the names the protocol (``request_export``) and the magic use.
FORMATS = EXPORT_FORMATS

_WHAT = {
    "saved_model": "a saved model",
    "onnx": "an ONNX model",
    "source": "standalone NumPy source",
}
_SUFFIX = {"saved_model": "_saved", "onnx": ".onnx", "source": ".py"}


class ExportRefused(Exception):
    """An export that could not be done as asked; ``str()`` says why and the fix."""


def default_path(name: str, fmt: str) -> str:
    """Where an export of the function ``name`` goes unless the user says otherwise."""
    return f"{name}{_SUFFIX[fmt]}"


def describe(fmt: str) -> str:
    """What an export in ``fmt`` writes, in words ("an ONNX model")."""
    return _WHAT[fmt]


def export(obj: Any, path: str, fmt: str) -> str:
    """Write ``obj`` (a ``kx.function``, a ConcreteFunction or a model object) to ``path``
    in ``fmt`` (one of :data:`FORMATS`); returns the absolute path written. A relative
    ``path`` is taken from the kernel's working directory, as Python's ``open`` takes it."""
    if fmt not in FORMATS:
        raise ExportRefused(f"unknown export format {fmt!r}; expected one of {FORMATS}")
    from .. import saved_model

    written = os.path.abspath(path)
    try:
        if fmt == "onnx":
            _onnx_module().export(obj, written)
        elif fmt == "source":
            saved_model.export_source(obj, written)
        else:
            saved_model.save(obj, written)
    except (TypeError, ValueError, FileExistsError, NotImplementedError, OSError) as e:
        # (the exporters' refusals: SaveError and SavedModelFormatError are ValueErrors,
        # OnnxExportError a NotImplementedError; an unwritable path an OSError)
        raise ExportRefused(str(e)) from None
    return written


def _onnx_module() -> Any:
    """``kernel_ext.onnx`` (imported here: onnx and onnxruntime are an optional extra)."""
    if importlib.util.find_spec("kernel_ext.onnx") is None:
        raise ExportRefused(
            "this kernel_ext has no ONNX exporter (kernel_ext.onnx). Fix: update kernel_ext, "
            "or export as a saved model or as source."
        )
    try:
        return importlib.import_module("kernel_ext.onnx")
    except ImportError as e:
        raise ExportRefused(
            f"the ONNX export needs the onnx package ({e}). Fix: pip install "
            '"jupyterlab-tffunction[onnx]", or export as a saved model or as source.'
        ) from None
