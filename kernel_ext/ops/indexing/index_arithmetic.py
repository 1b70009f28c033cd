"""ravel_multi_index, unravel_index: conversions between flat and multi-dimensional indices.

Both have integer results (``autodiff.rules.ZERO_GRADIENT``); their ONNX refusals are in
``onnx/rules/refusals.py`` and the whole-graph compiler's reasons in its ``FALLBACK_REASONS``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...ir import Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL, AbstractValue, broadcast_shapes
from ...ir.abstract.core import INTP, dtype_of, shape_of
from ...ir.interpreter import LOWER
from ...ir.params import RavelMultiIndexParams, UnravelIndexParams
from ...trace import bind, numpy_call
from ...trace.numpy_api.common import array_arg, bind_outputs, implements, is_traced, static_attr

K = OpKind

# --- ravel_multi_index ---


@implements(np.ravel_multi_index)
def _ravel_multi_index(multi_index: Any, dims: Any, mode: Any = "raise", order: str = "C") -> Any:
    if is_traced(dims):
        return numpy_call(np.ravel_multi_index, (multi_index, dims), {"mode": mode, "order": order})
    attrs = {"dims": static_attr(np.atleast_1d(dims)), "mode": static_attr(mode), "order": order}
    return bind(OpKind.RAVEL_MULTI_INDEX, tuple(array_arg(i) for i in multi_index), attrs)


@ABSTRACT_EVAL.register(K.RAVEL_MULTI_INDEX)
def _abstract_ravel_multi_index(params: RavelMultiIndexParams, *index: Any) -> AbstractValue:
    dims = params.dims
    if len(index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    probe = tuple(np.zeros((1,) * len(shape_of(i) or ()), dtype_of(i)) for i in index)
    kw = params.kwargs("dims")
    if all(d > 0 for d in dims):
        np.ravel_multi_index(probe, dims, **kw)  # NumPy's checks of dtypes, mode and order
    return AbstractValue(broadcast_shapes(*[shape_of(i) for i in index]), INTP)


@LOWER.register(K.RAVEL_MULTI_INDEX)
def _lower_ravel_multi_index(node: Node) -> Callable[..., Any]:
    params = cast("RavelMultiIndexParams", node.params)
    dims = params.dims
    kw = params.kwargs("dims")
    return lambda *index: np.ravel_multi_index(index, dims, **kw)


# --- unravel_index ---


@implements(np.unravel_index)
def _unravel_index(indices: Any, shape: Any, order: str = "C") -> tuple[Any, ...]:
    if is_traced(shape):
        return cast(
            "tuple[Any, ...]", numpy_call(np.unravel_index, (indices, shape), {"order": order})
        )
    attrs = {"shape": static_attr(np.atleast_1d(shape)), "order": order}
    return tuple(bind_outputs(OpKind.UNRAVEL_INDEX, (array_arg(indices),), attrs, "unravel_index"))


@ABSTRACT_EVAL.register(K.UNRAVEL_INDEX)
def _abstract_unravel_index(
    params: UnravelIndexParams, indices: AbstractValue
) -> tuple[AbstractValue, ...]:
    shape = params.shape
    if indices.dtype.kind not in "iub":
        raise TypeError("only int indices permitted")
    return tuple(AbstractValue(indices.shape, INTP) for _ in shape)


@LOWER.register(K.UNRAVEL_INDEX)
def _lower_unravel_index(node: Node) -> Callable[..., Any]:
    return functools.partial(np.unravel_index, **node.params.kwargs())
