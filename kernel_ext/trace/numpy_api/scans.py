"""Scans along an axis: ``np.cumsum``/``np.cumprod``, their nan forms and the array API's
``np.cumulative_sum``/``np.cumulative_prod``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ...ir import OpKind
from ..context import bind
from .common import (
    array_arg,
    bound_arguments,
    composition,
    declare,
    implements,
    ndim_of,
    static_shape,
)
from .shape import atleast_1d


def _scan(kind: OpKind) -> Callable:
    def handler(a: Any, axis: Any = None, dtype: Any = None) -> Any:
        attrs: dict[str, Any] = {"axis": None if axis is None else int(axis)}
        if dtype is not None:
            attrs["dtype"] = np.dtype(dtype)
        return bind(kind, (a,), attrs)

    return handler


implements(np.cumsum)(_scan(OpKind.CUMSUM))


implements(np.cumprod)(_scan(OpKind.CUMPROD))


def _nan_scan(kind: OpKind) -> Callable:
    func = kind.numpy_function

    @declare.parameters("a", "axis", "dtype")
    def handler(*args: Any, **kwargs: Any) -> Any:
        p = bound_arguments(func, args, kwargs)
        attrs: dict[str, Any] = {"axis": None if p["axis"] is None else int(p["axis"])}
        if p.get("dtype") is not None:
            attrs["dtype"] = np.dtype(p["dtype"])
        return bind(kind, (p["a"],), attrs)

    return handler


implements(np.nancumsum)(_nan_scan(OpKind.NANCUMSUM))


implements(np.nancumprod)(_nan_scan(OpKind.NANCUMPROD))


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
