"""Reductions (``np.sum``, ``np.std``, ``np.argmax``, the nan family, ``np.median`` and the
quantiles): the parameters in each handler's signature are the ones it implements
(signatures.py); ``where=``, ``initial=``, ``mean=`` and the like run NumPy's own call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir import OpKind
from ..context import bind
from ..opaque import numpy_call
from ..signatures import numpy_signature
from ..tensor import Tensor
from ..zero_d import mark_array
from .common import (
    axis_attr,
    bool_option,
    bound_arguments,
    declare,
    frozen,
    given,
    implements,
    is_static_value,
)
from .writes import overwriting_call


def _reduction(kind: OpKind) -> Callable:
    def handler(a: Any, axis: Any = None, dtype: Any = None, keepdims: Any = False) -> Any:
        attrs: dict[str, Any] = {"axis": axis_attr(axis), "keepdims": bool_option(keepdims)}
        if dtype is not None:
            attrs["dtype"] = np.dtype(dtype)
        return bind(kind, (a,), attrs)

    return handler


implements(np.sum)(_reduction(OpKind.SUM))


implements(np.prod)(_reduction(OpKind.PROD))


implements(np.mean)(_reduction(OpKind.MEAN))


def _moment(kind: OpKind) -> Callable:
    """``np.std`` / ``np.var``: ``correction=`` is the array API's name of ``ddof``, as NumPy
    maps it (both given is NumPy's ValueError)."""
    func = kind.numpy_function

    def handler(
        a: Any,
        axis: Any = None,
        dtype: Any = None,
        ddof: Any = 0,
        keepdims: Any = False,
        *,
        correction: Any = np._NoValue,
    ) -> Any:
        if correction is not np._NoValue:
            if not _is_zero(ddof):
                raise ValueError("ddof and correction can't be provided simultaneously.")
            ddof = correction
        if not isinstance(ddof, (int, float, np.integer, np.floating)) or isinstance(ddof, bool):
            return numpy_call(
                func,
                (a,),
                {"axis": axis, "dtype": dtype, "ddof": ddof, "keepdims": bool_option(keepdims)},
            )
        attrs: dict[str, Any] = {"axis": axis_attr(axis), "keepdims": bool_option(keepdims)}
        if dtype is not None:
            attrs["dtype"] = np.dtype(dtype)
        if ddof:
            attrs["ddof"] = ddof
        return bind(kind, (a,), attrs)

    return handler


def _is_zero(value: Any) -> bool:
    return not isinstance(value, Tensor) and np.ndim(value) == 0 and value == 0


implements(np.std)(_moment(OpKind.STD))


implements(np.var)(_moment(OpKind.VAR))


def _minmax(kind: OpKind) -> Callable:
    def handler(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
        return bind(kind, (a,), {"axis": axis_attr(axis), "keepdims": bool_option(keepdims)})

    return handler


implements(np.max, np.amax)(_minmax(OpKind.MAX))


implements(np.min, np.amin)(_minmax(OpKind.MIN))


def _logical(kind: OpKind) -> Callable:
    def handler(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
        return bind(kind, (a,), {"axis": axis_attr(axis), "keepdims": bool_option(keepdims)})

    return handler


implements(np.any)(_logical(OpKind.ANY))


implements(np.all)(_logical(OpKind.ALL))


def _arg(kind: OpKind) -> Callable:
    def handler(a: Any, axis: Any = None, *, keepdims: Any = False) -> Any:
        return bind(kind, (a,), {"axis": axis_attr(axis), "keepdims": bool_option(keepdims)})

    return handler


implements(np.argmax)(_arg(OpKind.ARGMAX))


implements(np.argmin)(_arg(OpKind.ARGMIN))


@implements(np.count_nonzero)
def _count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    return bind(
        OpKind.SUM,
        (np.not_equal(a, 0),),
        {"axis": axis_attr(axis), "keepdims": keepdims, "dtype": np.dtype(np.intp)},
    )


def _nan_reduction(
    kind: OpKind,
    *,
    dtype: bool = False,
    ddof: bool = False,
    q: bool = False,
    method: bool = False,
    initial: bool = False,
) -> Callable:
    """The handler of ``np.<kind>``: one ``kind`` node with static axis/keepdims (and dtype,
    ddof, q, method where the function has them), or an opaque call for the other options."""
    func = kind.numpy_function

    def handler(*args: Any, **kwargs: Any) -> Any:
        p = bound_arguments(func, args, kwargs)
        opaque = any(
            given(p.get(name))
            for name in ("where", "weights", "interpolation", "mean", "correction")
        )
        opaque |= initial and given(p.get("initial"))
        opaque |= q and not is_static_value(p["q"])
        opaque |= ddof and not isinstance(p.get("ddof", 0), (int, float, np.number))
        if p.get("overwrite_input"):
            return overwriting_call(func, "a", args, kwargs)
        if opaque:
            return numpy_call(func, args, kwargs)
        attrs: dict[str, Any] = {}
        if q:
            attrs["q"] = frozen(p["q"])
        attrs["axis"] = axis_attr(p.get("axis"))
        keepdims = p.get("keepdims", False)
        attrs["keepdims"] = False if keepdims is np._NoValue else bool(keepdims)
        if dtype and p.get("dtype") is not None:
            attrs["dtype"] = np.dtype(p["dtype"])
        if ddof and p.get("ddof", 0):
            attrs["ddof"] = p["ddof"]
        if method and p.get("method", "linear") != "linear":
            attrs["method"] = p["method"]
        result = bind(kind, (p["a"],), attrs)
        # (the median and quantile family reshape a keepdims result: a 0-d one is an array)
        return mark_array(result) if attrs["keepdims"] and kind in _RESHAPED_KEEPDIMS else result

    handler.__name__ = f"_{kind.value}"
    # (it binds every parameter itself: the options no op covers run NumPy's own call)
    return declare(handler, numpy_signature(func).parameters.keys())


_RESHAPED_KEEPDIMS = frozenset(
    {
        OpKind.MEDIAN,
        OpKind.NANMEDIAN,
        OpKind.PERCENTILE,
        OpKind.NANPERCENTILE,
        OpKind.QUANTILE,
        OpKind.NANQUANTILE,
    }
)


implements(np.nansum)(_nan_reduction(OpKind.NANSUM, dtype=True, initial=True))


implements(np.nanprod)(_nan_reduction(OpKind.NANPROD, dtype=True, initial=True))


implements(np.nanmean)(_nan_reduction(OpKind.NANMEAN, dtype=True))


implements(np.nanmax)(_nan_reduction(OpKind.NANMAX, initial=True))


implements(np.nanmin)(_nan_reduction(OpKind.NANMIN, initial=True))


implements(np.nanstd)(_nan_reduction(OpKind.NANSTD, dtype=True, ddof=True))


implements(np.nanvar)(_nan_reduction(OpKind.NANVAR, dtype=True, ddof=True))


implements(np.nanargmax)(_nan_reduction(OpKind.NANARGMAX))


implements(np.nanargmin)(_nan_reduction(OpKind.NANARGMIN))


implements(np.median)(_nan_reduction(OpKind.MEDIAN))


implements(np.nanmedian)(_nan_reduction(OpKind.NANMEDIAN))


for _kind in (OpKind.PERCENTILE, OpKind.NANPERCENTILE, OpKind.QUANTILE, OpKind.NANQUANTILE):
    implements(_kind.numpy_function)(_nan_reduction(_kind, q=True, method=True))
