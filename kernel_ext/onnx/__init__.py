"""``kx.onnx``: export a traced function's graph as an ONNX model that onnxruntime runs.

``kx.onnx.export(fn, "model.onnx")`` writes one ONNX model per concrete function (a
``kx.function`` with several traces needs ``signature=``); every op is translated by one rule
of :data:`kernel_ext.onnx.rules.RULES`, and an op without an ONNX form is refused with
:class:`OnnxExportError` naming the op, its line and the fix. ``docs/onnx.md`` has the op
table, the tolerances onnxruntime is held to, and the corpus coverage. Needs the optional
extra ``[onnx]`` (onnx, onnxruntime), imported only when a model is built.
"""

from __future__ import annotations

from kernel_ext.onnx.export import DEFAULT_OPSET, export, input_feed
from kernel_ext.onnx.refusal import OnnxExportError

__all__ = ["DEFAULT_OPSET", "OnnxExportError", "export", "input_feed"]
