"""ravel_multi_index, unravel_index: conversions between flat and multi-dimensional indices.

Both have integer results (``autodiff.rules.ZERO_GRADIENT``); their ONNX refusals are in
``onnx/rules/refusals.py`` and the whole-graph compiler's reasons in its ``FALLBACK_REASONS``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir import Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL, AbstractValue, broadcast_shapes
from ...ir.abstract.core import INTP, dtype_of, shape_of
from ...ir.interpreter import LOWER

K = OpKind

# --- ravel_multi_index ---


@ABSTRACT_EVAL.register(K.RAVEL_MULTI_INDEX)
def _abstract_ravel_multi_index(attrs: dict[str, Any], *index: Any) -> AbstractValue:
    dims = attrs["dims"]
    if len(index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    probe = tuple(np.zeros((1,) * len(shape_of(i) or ()), dtype_of(i)) for i in index)
    kw = {k: v for k, v in attrs.items() if k != "dims"}
    if all(d > 0 for d in dims):
        np.ravel_multi_index(probe, dims, **kw)  # NumPy's checks of dtypes, mode and order
    return AbstractValue(broadcast_shapes(*[shape_of(i) for i in index]), INTP)


@LOWER.register(K.RAVEL_MULTI_INDEX)
def _lower_ravel_multi_index(node: Node) -> Callable[..., Any]:
    kw = dict(node.params)
    dims = kw.pop("dims")
    return lambda *index: np.ravel_multi_index(index, dims, **kw)


# --- unravel_index ---


@ABSTRACT_EVAL.register(K.UNRAVEL_INDEX)
def _abstract_unravel_index(
    attrs: dict[str, Any], indices: AbstractValue
) -> tuple[AbstractValue, ...]:
    shape = attrs["shape"]
    if indices.dtype.kind not in "iub":
        raise TypeError("only int indices permitted")
    return tuple(AbstractValue(indices.shape, INTP) for _ in shape)


@LOWER.register(K.UNRAVEL_INDEX)
def _lower_unravel_index(node: Node) -> Callable[..., Any]:
    return functools.partial(np.unravel_index, **node.params)
