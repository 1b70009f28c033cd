"""Reductions that record more than one op: ``np.count_nonzero`` (a sum of ``!= 0``). The
reductions that record one op each (``np.sum``, ``np.std``, the nan family, the quantiles) have
their entry points in :mod:`kernel_ext.ops.reductions`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir import OpKind
from ..context import bind
from .common import axis_attr, implements


@implements(np.count_nonzero)
def _count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    return bind(
        OpKind.SUM,
        (np.not_equal(a, 0),),
        {"axis": axis_attr(axis), "keepdims": keepdims, "dtype": np.dtype(np.intp)},
    )
