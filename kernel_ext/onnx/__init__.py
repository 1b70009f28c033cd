"""``kx.onnx``: export a traced function's graph as an ONNX model that onnxruntime runs.

``kx.onnx.export(fn, "model.onnx")`` writes one ONNX model per concrete function (a
``kx.function`` with several traces needs ``signature=``); every op is translated by one rule
of :data:`kernel_ext.onnx.rules.RULES`, and an op without an ONNX form is refused with
:class:`OnnxExportError` naming the op, its line and the fix. ``docs/onnx.md`` has the op
table, the tolerances onnxruntime is held to, and the corpus coverage. Needs the optional
extra ``[onnx]`` (onnx, onnxruntime), imported only when a model is built.

The op rules register when ``kernel_ext`` is imported (each op's translation sits beside its
other rules in :mod:`kernel_ext.ops`), so this package's ``__init__`` stays light: the exporter
(and with it ``kernel_ext.saved_model``) loads on the first use of ``export``.
"""

from __future__ import annotations

from typing import Any

from kernel_ext.onnx.refusal import OnnxExportError

_EXPORTER_NAMES = frozenset({"DEFAULT_OPSET", "export", "input_feed"})


def __getattr__(name: str) -> Any:
    """``export``, ``input_feed`` and ``DEFAULT_OPSET``, from the exporter on first use."""
    if name in _EXPORTER_NAMES:
        from kernel_ext.onnx import exporter

        return getattr(exporter, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DEFAULT_OPSET", "OnnxExportError", "export", "input_feed"]
