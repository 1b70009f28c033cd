"""Bits: packbits and unpackbits.

Each op's NumPy entry point, abstract evaluation and reference lowering (see
:mod:`kernel_ext.ops`). Their results are integers: no gradient
(``autodiff.rules.ZERO_GRADIENT``), and no ONNX form (its reasons stay in
``onnx.rules.refusals``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir import AbstractValue, Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL, Shape, normalize_axis
from ...ir.abstract.core import known_rank
from ...ir.interpreter import LOWER
from ...ir.params import PackbitsParams, UnpackbitsParams
from ...trace.context import bind
from ...trace.numpy_api.common import implements

K = OpKind


def _bits_axis(
    params: PackbitsParams | UnpackbitsParams, a: AbstractValue, fn: str
) -> tuple[Shape, int]:
    axis = params.axis
    if axis is None:
        return (a.size,), 0
    shape = known_rank(a, fn)
    return shape, normalize_axis(axis, len(shape))


# --- packbits ---


@implements(np.packbits)
def _numpy_packbits(a: Any, /, axis: Any = None, bitorder: str = "big") -> Any:
    return bind(OpKind.PACKBITS, (a,), {"axis": axis, "bitorder": bitorder})


@ABSTRACT_EVAL.register(K.PACKBITS)
def _packbits(params: PackbitsParams, a: AbstractValue) -> AbstractValue:
    if a.dtype.kind not in "iub":
        raise TypeError("Expected an input array of integer or boolean data type")
    shape, axis = _bits_axis(params, a, "packbits")
    n = shape[axis]
    out = list(shape)
    out[axis] = None if n is None else -(-n // 8)
    return AbstractValue(tuple(out), np.dtype(np.uint8))


@LOWER.register(K.PACKBITS)
def _lower_packbits(node: Node) -> Callable[..., Any]:
    return functools.partial(np.packbits, **node.params.kwargs())


# --- unpackbits ---


@implements(np.unpackbits)
def _numpy_unpackbits(a: Any, /, axis: Any = None, count: Any = None, bitorder: str = "big") -> Any:
    return bind(OpKind.UNPACKBITS, (a,), {"axis": axis, "count": count, "bitorder": bitorder})


@ABSTRACT_EVAL.register(K.UNPACKBITS)
def _unpackbits(params: UnpackbitsParams, a: AbstractValue) -> AbstractValue:
    if a.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    shape, axis = _bits_axis(params, a, "unpackbits")
    n, count = shape[axis], params.count
    bits = None if n is None else 8 * n
    if count is not None and bits is not None:
        bits = count if count >= 0 else max(bits + count, 0)
    elif count is not None and count >= 0:
        bits = count
    out = list(shape)
    out[axis] = bits
    return AbstractValue(tuple(out), np.dtype(np.uint8))


@LOWER.register(K.UNPACKBITS)
def _lower_unpackbits(node: Node) -> Callable[..., Any]:
    return functools.partial(np.unpackbits, **node.params.kwargs())
