"""Abstract evaluation of counting: bincount (sorting, searching and sets register theirs in
:mod:`kernel_ext.ops.sorting`, the bit ops in :mod:`kernel_ext.ops.shape`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops import OpKind
from .core import (
    AbstractValue,
    abstract_rule,
    probe_dtype,
)


@abstract_rule(OpKind.BINCOUNT)
def _bincount(attrs: dict[str, Any], x: AbstractValue, weights: Any) -> AbstractValue:
    # max(x) + 1, at least minlength: a length only the values decide
    dtype = probe_dtype(lambda a, w: np.bincount(a, w, attrs.get("minlength", 0)), x, weights)
    return AbstractValue((None,), dtype)
