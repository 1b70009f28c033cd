"""``np.fft``'s compositions: the shifts are rolls. The transforms' entry points (one ``fft``
op per call) live with the op, in :mod:`kernel_ext.ops.linalg.fft`."""

from __future__ import annotations

from typing import Any

import numpy as np

from .common import (
    Opaque,
    array_arg,
    composition,
    static_shape,
)
from .shape import roll


@composition(np.fft.fftshift)
def _fftshift(x: Any, axes: Any = None) -> Any:
    x = array_arg(x)
    shape = static_shape(x)
    if not shape:
        raise Opaque  # (NumPy's own error for a 0-d input)
    if axes is None:
        axes = tuple(range(len(shape)))
        shift: Any = [d // 2 for d in shape]
    elif isinstance(axes, (int, np.integer)):
        shift = shape[axes] // 2
    else:
        shift = [shape[ax] // 2 for ax in axes]
    return roll(x, shift, axes)


@composition(np.fft.ifftshift)
def _ifftshift(x: Any, axes: Any = None) -> Any:
    x = array_arg(x)
    shape = static_shape(x)
    if not shape:
        raise Opaque  # (NumPy's own error for a 0-d input)
    if axes is None:
        axes = tuple(range(len(shape)))
        shift: Any = [-(d // 2) for d in shape]
    elif isinstance(axes, (int, np.integer)):
        shift = -(shape[axes] // 2)
    else:
        shift = [-(shape[ax] // 2) for ax in axes]
    return roll(x, shift, axes)
