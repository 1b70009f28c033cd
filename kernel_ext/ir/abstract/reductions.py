"""The shape of a reduction's result (``reduced_shape``: every layer's reductions ask it; the
reductions' and scans' own rules are in :mod:`kernel_ext.ops.reductions`).
"""

from __future__ import annotations

from typing import Any

from .core import (
    Shape,
    normalize_axes,
)


def reduced_shape(shape: Shape | None, axis: Any, keepdims: bool) -> Shape | None:
    if shape is None:
        return () if axis is None and not keepdims else None
    if not shape and isinstance(axis, int) and axis in (0, -1):
        return ()  # NumPy reduces a 0-d array along "axis 0" (or -1) to itself
    axes = normalize_axes(axis, len(shape))
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)
