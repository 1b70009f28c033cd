"""Creation and dims: arange and dim (the run-time length of an axis).

Each op's abstract evaluation, reference lowering and ONNX rule (see :mod:`kernel_ext.ops`).
Their results are integers or constants of the bounds: no gradient
(``autodiff.rules.ZERO_GRADIENT``). ``dim``'s whole-graph form is the writer's own
(``backends.whole_graph.writer``), and its constant folding ``passes.fold.STATIC_FOLDS``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...ir import AbstractValue, Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL, normalize_axis
from ...ir.interpreter import LOWER
from ...ir.params import AxisParams, DtypeParams
from ...onnx.builder import GraphBuilder
from ...onnx.refusal import refuse
from ...onnx.rules.common import RULES as ONNX
from ...onnx.rules.common import out_dtype

K = OpKind


# --- arange ---


@ABSTRACT_EVAL.register(K.ARANGE)
def _arange(params: DtypeParams, start: Any, stop: Any, step: Any) -> AbstractValue:
    dtype = np.dtype(params.dtype)
    if all(isinstance(a, (int, float)) for a in (start, stop, step)):
        return AbstractValue((len(np.arange(start, stop, step)),), dtype)
    return AbstractValue((None,), dtype)


@LOWER.register(K.ARANGE)
def _lower_arange(node: Node) -> Callable[..., Any]:
    dtype = np.dtype(cast("DtypeParams", node.params).dtype)
    return lambda start, stop, step: np.arange(start, stop, step, dtype=dtype)


@ONNX.register(K.ARANGE)
def arange(b: GraphBuilder, node: Node) -> list[str]:
    out = out_dtype(node)
    if out.kind not in "if" or (
        out.kind == "i"
        and any(
            np.asarray(a).dtype.kind == "f"
            if not isinstance(a, Node)
            else cast("np.dtype", a.dtype).kind == "f"
            for a in node.args
        )
    ):
        raise refuse(
            node,
            "ONNX's Range computes in the result dtype only",
            "give arange integer bounds for an integer result",
        )
    names = [b.operand(a, out) for a in node.args]
    return [b.one("Range", names)]


# --- dim ---


@ABSTRACT_EVAL.register(K.DIM)
def _dim(params: AxisParams, x: AbstractValue) -> AbstractValue:
    if x.shape is not None:
        normalize_axis(params.axis, len(x.shape))
    return AbstractValue((), np.dtype(np.int64))


@LOWER.register(K.DIM)
def _lower_dim(node: Node) -> Callable[..., Any]:
    axis = cast("AxisParams", node.params).axis
    return lambda x: np.int64(np.shape(x)[axis])


@ONNX.register(K.DIM)
def dim(b: GraphBuilder, node: Node) -> list[str]:
    x = node.args[0]
    axis = int(cast("AxisParams", node.params).axis) % x.aval.ndim
    size = b.shape_of(b.value(x), axis, axis + 1)
    return [b.cast(b.one("Squeeze", [size, b.ints([0])]), np.int64, out_dtype(node))]
