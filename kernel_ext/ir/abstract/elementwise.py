"""Abstract evaluation of the TensorArray write (the elementwise ops' rules are registered with
each op in :mod:`kernel_ext.ops.elementwise`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import OpKind
from .core import (
    AbstractValue,
    abstract_rule,
    shape_of,
)


@abstract_rule(OpKind.TENSOR_ARRAY_WRITE)
def _tensor_array_write(
    attrs: dict[str, Any], buffer: AbstractValue, index: Any, value: Any
) -> AbstractValue:
    vshape = shape_of(value)
    return AbstractValue(
        None if vshape is None else (None,) + tuple(vshape), np.dtype(attrs["dtype"])
    )
