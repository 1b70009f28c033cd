"""Sources: ``placeholder`` (a graph input) and ``constant`` (a value held by the graph).

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`). A placeholder has
no lowering: the interpreter and the executors bind graph inputs themselves, and the ONNX
exporter makes them the model's inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir.abstract.core import ABSTRACT_EVAL, AbstractValue, aval_of
from ...ir.graph import Node
from ...ir.interpreter import LOWER
from ...ir.ops import OpKind
from ...onnx.builder import GraphBuilder
from ...onnx.rules.common import RULES as ONNX

# --- placeholder ---


@ABSTRACT_EVAL.register(OpKind.PLACEHOLDER)
def _placeholder(attrs: dict[str, Any]) -> AbstractValue:
    return AbstractValue(attrs["shape"], np.dtype(attrs["dtype"]))


# --- constant ---


@ABSTRACT_EVAL.register(OpKind.CONSTANT)
def _constant(attrs: dict[str, Any]) -> AbstractValue:
    return aval_of(attrs["value"])


@LOWER.register(OpKind.CONSTANT)
def _lower_constant(node: Node) -> Callable[..., Any]:
    value = node.attrs["value"]
    return lambda: value


@ONNX.register(OpKind.CONSTANT)
def _onnx_constant(b: GraphBuilder, node: Node) -> list[str]:
    return [b.const(node.attrs["value"])]
