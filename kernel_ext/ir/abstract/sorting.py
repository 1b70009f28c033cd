"""Abstract-evaluation rules of bits and counting: packbits, unpackbits, bincount.

(Sorting, searching and sets register theirs in :mod:`kernel_ext.ops.sorting`.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import OpKind
from .core import (
    AbstractValue,
    Shape,
    abstract_rule,
    known_rank,
    normalize_axis,
    probe_dtype,
)


@abstract_rule(OpKind.BINCOUNT)
def _bincount(attrs: dict[str, Any], x: AbstractValue, weights: Any) -> AbstractValue:
    # max(x) + 1, at least minlength: a length only the values decide
    dtype = probe_dtype(lambda a, w: np.bincount(a, w, attrs.get("minlength", 0)), x, weights)
    return AbstractValue((None,), dtype)


def _bits_axis(attrs: dict[str, Any], a: AbstractValue, fn: str) -> tuple[Shape, int]:
    axis = attrs.get("axis")
    if axis is None:
        return (a.size,), 0
    shape = known_rank(a, fn)
    return shape, normalize_axis(axis, len(shape))


@abstract_rule(OpKind.PACKBITS)
def _packbits(attrs: dict[str, Any], a: AbstractValue) -> AbstractValue:
    if a.dtype.kind not in "iub":
        raise TypeError("Expected an input array of integer or boolean data type")
    shape, axis = _bits_axis(attrs, a, "packbits")
    n = shape[axis]
    out = list(shape)
    out[axis] = None if n is None else -(-n // 8)
    return AbstractValue(tuple(out), np.dtype(np.uint8))


@abstract_rule(OpKind.UNPACKBITS)
def _unpackbits(attrs: dict[str, Any], a: AbstractValue) -> AbstractValue:
    if a.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    shape, axis = _bits_axis(attrs, a, "unpackbits")
    n, count = shape[axis], attrs.get("count")
    bits = None if n is None else 8 * n
    if count is not None and bits is not None:
        bits = count if count >= 0 else max(bits + count, 0)
    elif count is not None and count >= 0:
        bits = count
    out = list(shape)
    out[axis] = bits
    return AbstractValue(tuple(out), np.dtype(np.uint8))
