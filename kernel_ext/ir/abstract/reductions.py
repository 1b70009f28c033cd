"""The shape of a reduction's result (``reduced_shape``: every layer's reductions ask it) and
the abstract evaluation of ``ufunc.at``. The reductions' and scans' own rules are in
:mod:`kernel_ext.ops.reductions`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import OpKind
from .core import (
    AbstractValue,
    Shape,
    abstract_rule,
    broadcast_shapes,
    format_shape,
    normalize_axes,
    shape_of,
)
from .indexing import getitem_shape


def reduced_shape(shape: Shape | None, axis: Any, keepdims: bool) -> Shape | None:
    if shape is None:
        return () if axis is None and not keepdims else None
    if not shape and isinstance(axis, int) and axis in (0, -1):
        return ()  # NumPy reduces a 0-d array along "axis 0" (or -1) to itself
    axes = normalize_axes(axis, len(shape))
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


@abstract_rule(OpKind.UFUNC_AT)
def _ufunc_at(
    attrs: dict[str, Any], a: AbstractValue, b: Any, *dyn: AbstractValue
) -> AbstractValue:
    ufunc = attrs["ufunc"]
    target = getitem_shape(a.shape, attrs["index"], dyn)
    if b is not None:
        vshape = shape_of(b)
        if target is not None and vshape is not None:
            merged = broadcast_shapes(vshape, target)
            if merged is not None and len(merged) > len(target):
                raise ValueError(
                    f"array is not broadcastable to correct shape "
                    f"{format_shape(vshape)} into {format_shape(target)}"
                )
    # the loop NumPy picks for a's dtype with b (an error here is NumPy's error eagerly)
    probe = np.ones(1, a.dtype)
    with np.errstate(all="ignore"):
        if b is None:
            ufunc.at(probe, [0])
        else:
            ufunc.at(probe, [0], np.ones(1, b.dtype) if isinstance(b, AbstractValue) else b)
    return a
