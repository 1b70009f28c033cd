"""Abstract-evaluation rules of flip and copy, dim, arange, the TensorArray write, real and
imag (the ufuncs', ``where``'s, ``cast``'s and ``clip``'s are registered with each op in
:mod:`kernel_ext.ops.elementwise`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import OpKind
from .core import (
    AbstractValue,
    abstract_rule,
    normalize_axes,
    normalize_axis,
    shape_of,
)


@abstract_rule(OpKind.FLIP, OpKind.COPY)
def _same(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    if x.shape is not None and attrs.get("axis") is not None:
        normalize_axes(attrs["axis"], len(x.shape))
    return x


@abstract_rule(OpKind.DIM)
def _dim(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    if x.shape is not None:
        normalize_axis(attrs["axis"], len(x.shape))
    return AbstractValue((), np.dtype(np.int64))


@abstract_rule(OpKind.ARANGE)
def _arange(attrs: dict[str, Any], start: Any, stop: Any, step: Any) -> AbstractValue:
    dtype = np.dtype(attrs["dtype"])
    if all(isinstance(a, (int, float)) for a in (start, stop, step)):
        return AbstractValue((len(np.arange(start, stop, step)),), dtype)
    return AbstractValue((None,), dtype)


@abstract_rule(OpKind.TENSOR_ARRAY_WRITE)
def _tensor_array_write(
    attrs: dict[str, Any], buffer: AbstractValue, index: Any, value: Any
) -> AbstractValue:
    vshape = shape_of(value)
    return AbstractValue(
        None if vshape is None else (None,) + tuple(vshape), np.dtype(attrs["dtype"])
    )


# Shapes by NumPy's documented rules (``None`` dims flow through); dtypes, and NumPy's refusal
# of an argument it does not take, from NumPy itself on small stand-ins (``probe_dtype``, the
# 1x1 identity of ``_linalg_probe``).


@abstract_rule(OpKind.REAL, OpKind.IMAG)
def _real_imag(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    return AbstractValue(x.shape, np.empty(0, x.dtype).real.dtype)
