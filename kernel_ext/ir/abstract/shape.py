"""The shape helper shared beyond the rules: NumPy's reshape rule (``reshape_shape``).

The abstract-evaluation rules of the shape ops live in :mod:`kernel_ext.ops.shape`.
"""

from __future__ import annotations

import math
from typing import cast

from .core import KnownShape, Shape


def reshape_shape(shape: Shape | None, newshape: tuple[int, ...]) -> Shape | None:
    """NumPy's reshape rule, with ``-1`` resolved where the input size is known."""
    if list(newshape).count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    # (no ``None`` dim when the product is taken)
    size = None if shape is None or None in shape else math.prod(cast("KnownShape", shape))
    known = math.prod(d for d in newshape if d != -1)
    if -1 not in newshape:
        if size is not None and size != known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(newshape)}")
        return tuple(newshape)
    if size is None:
        return tuple(None if d == -1 else d for d in newshape)
    if known == 0 or size % known:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(newshape)}")
    return tuple(size // known if d == -1 else d for d in newshape)
