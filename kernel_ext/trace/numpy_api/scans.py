"""Scans composed of others: the array API's ``np.cumulative_sum``/``np.cumulative_prod``
(``ufunc.accumulate`` and a concatenated identity). ``np.cumsum``/``np.cumprod`` and their nan
forms record one op each: their entry points are in :mod:`kernel_ext.ops.reductions.scans`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from .common import (
    array_arg,
    composition,
    ndim_of,
    static_shape,
)
from .shape import atleast_1d


def _cumulative(ufunc: np.ufunc) -> Callable:
    def handler(
        x: Any, /, *, axis: Any = None, dtype: Any = None, include_initial: bool = False
    ) -> Any:
        x = atleast_1d(array_arg(x))
        if axis is None:
            if ndim_of(x) >= 2:
                raise ValueError(
                    "For arrays which have more than one dimension ``axis`` argument is required."
                )
            axis = 0
        res = ufunc.accumulate(x, axis=axis, dtype=dtype)
        if include_initial:
            shape = list(static_shape(res))
            shape[normalize_axis_index(axis, len(shape))] = 1
            res = np.concatenate([np.full(shape, ufunc.identity, res.dtype), res], axis=axis)
        return res

    return handler


composition(np.cumulative_sum)(_cumulative(np.add))


composition(np.cumulative_prod)(_cumulative(np.multiply))
