"""Sources: ``placeholder`` (a graph input) and ``constant`` (a value held by the graph).

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`). A placeholder has
no lowering: the interpreter and the executors bind graph inputs themselves, and the ONNX
exporter makes them the model's inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...ir.abstract.core import ABSTRACT_EVAL, AbstractValue, aval_of
from ...ir.graph import Node
from ...ir.interpreter import LOWER
from ...ir.ops import OpKind
from ...ir.params import ConstantParams, PlaceholderParams
from ...onnx.builder import GraphBuilder
from ...onnx.rules.common import RULES as ONNX

# --- placeholder ---


@ABSTRACT_EVAL.register(OpKind.PLACEHOLDER)
def _placeholder(params: PlaceholderParams) -> AbstractValue:
    return AbstractValue(params.shape, np.dtype(params.dtype))


# --- constant ---


@ABSTRACT_EVAL.register(OpKind.CONSTANT)
def _constant(params: ConstantParams) -> AbstractValue:
    return aval_of(params.value)


@LOWER.register(OpKind.CONSTANT)
def _lower_constant(node: Node) -> Callable[..., Any]:
    params = cast("ConstantParams", node.params)
    value = params.value
    return lambda: value


@ONNX.register(OpKind.CONSTANT)
def _onnx_constant(b: GraphBuilder, node: Node) -> list[str]:
    params = cast("ConstantParams", node.params)
    return [b.const(params.value)]
