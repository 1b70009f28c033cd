"""The NumPy entry points the reductions and scans share: the handler factories that each op's
section registers for its NumPy function (``implements(np.nansum)(nan_reduction_handler(
K.NANSUM, ...))``).

The parameters in each handler's signature are the ones it implements (``trace.signatures``);
``where=``, ``initial=``, ``mean=`` and the like run NumPy's own call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir import OpKind
from ...trace.context import bind
from ...trace.numpy_api.common import (
    axis_attr,
    bool_option,
    bound_arguments,
    declare,
    frozen,
    given,
    is_static_value,
)
from ...trace.numpy_api.writes import overwriting_call
from ...trace.opaque import numpy_call
from ...trace.signatures import numpy_signature
from ...trace.tensor import Tensor
from ...trace.zero_d import mark_array


def reduction_handler(kind: OpKind) -> Callable[..., Any]:
    def handler(a: Any, axis: Any = None, dtype: Any = None, keepdims: Any = False) -> Any:
        attrs: dict[str, Any] = {"axis": axis_attr(axis), "keepdims": bool_option(keepdims)}
        if dtype is not None:
            attrs["dtype"] = np.dtype(dtype)
        return bind(kind, (a,), attrs)

    return handler


def moment_handler(kind: OpKind) -> Callable[..., Any]:
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


def minmax_handler(kind: OpKind) -> Callable[..., Any]:
    def handler(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
        return bind(kind, (a,), {"axis": axis_attr(axis), "keepdims": bool_option(keepdims)})

    return handler


def logical_handler(kind: OpKind) -> Callable[..., Any]:
    def handler(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
        return bind(kind, (a,), {"axis": axis_attr(axis), "keepdims": bool_option(keepdims)})

    return handler


def arg_handler(kind: OpKind) -> Callable[..., Any]:
    def handler(a: Any, axis: Any = None, *, keepdims: Any = False) -> Any:
        return bind(kind, (a,), {"axis": axis_attr(axis), "keepdims": bool_option(keepdims)})

    return handler


def nan_reduction_handler(
    kind: OpKind,
    *,
    dtype: bool = False,
    ddof: bool = False,
    q: bool = False,
    method: bool = False,
    initial: bool = False,
) -> Callable[..., Any]:
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


def scan_handler(kind: OpKind) -> Callable[..., Any]:
    def handler(a: Any, axis: Any = None, dtype: Any = None) -> Any:
        attrs: dict[str, Any] = {"axis": None if axis is None else int(axis)}
        if dtype is not None:
            attrs["dtype"] = np.dtype(dtype)
        return bind(kind, (a,), attrs)

    return handler


def nan_scan_handler(kind: OpKind) -> Callable[..., Any]:
    func = kind.numpy_function

    @declare.parameters("a", "axis", "dtype")
    def handler(*args: Any, **kwargs: Any) -> Any:
        p = bound_arguments(func, args, kwargs)
        attrs: dict[str, Any] = {"axis": None if p["axis"] is None else int(p["axis"])}
        if p.get("dtype") is not None:
            attrs["dtype"] = np.dtype(p["dtype"])
        return bind(kind, (p["a"],), attrs)

    return handler
