"""Ufunc methods on traced values (``reduce``, ``accumulate``, ``reduceat``, ``outer``):
each binds NumPy's own signature, keeps static arguments as attrs and falls back to an opaque
call for the options no op covers (``where=``, ``initial=``, ...): slower, never wrong.
``at`` is registered by its op's definition, :mod:`kernel_ext.ops.indexing.scatter_adds`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir import UFUNC_REDUCTIONS, OpKind
from ..context import bind
from ..opaque import ufunc_method_call
from ..tensor import UFUNC_METHODS, Tensor
from ..variables import Variable
from .common import axis_attr, is_static_value, ndim_of


def _opaque_method(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    return ufunc_method_call(ufunc, method, inputs, kwargs)


def _method_attrs(ufunc: np.ufunc, kwargs: dict, allowed: tuple[str, ...]) -> dict | None:
    """Static attrs of a ufunc method call, or None when an option needs the opaque call."""
    attrs: dict[str, Any] = {"ufunc": ufunc}
    for key, value in kwargs.items():
        if key not in allowed:
            return None
        if key == "axis":
            attrs["axis"] = axis_attr(value)
        elif key == "dtype":
            if value is not None:
                attrs["dtype"] = np.dtype(value)
        elif key == "keepdims":
            attrs["keepdims"] = bool(value)
        elif key == "initial":
            if value is np._NoValue:
                continue
            if not is_static_value(value) or np.ndim(value):
                return None
            attrs["initial"] = value
    return attrs


def _ufunc_reduce(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> Any:
    """``ufunc.reduce``: a sum/prod/max/min/any/all where one is the same reduction (they
    fuse), else a ``ufunc_reduce`` node."""
    if kwargs.get("where", True) is not True:
        return _opaque_method(ufunc, "reduce", inputs, kwargs)
    attrs = _method_attrs(ufunc, kwargs, ("axis", "dtype", "keepdims", "initial"))
    if attrs is None or len(inputs) != 1:
        return _opaque_method(ufunc, "reduce", inputs, kwargs)
    attrs.setdefault("axis", 0)
    attrs.setdefault("keepdims", False)
    kind = UFUNC_REDUCTIONS.get(ufunc)
    if kind is not None and "initial" not in attrs:
        del attrs["ufunc"]
        return bind(kind, inputs, attrs)
    return bind(OpKind.UFUNC_REDUCE, inputs, attrs)


def _ufunc_accumulate(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> Any:
    attrs = _method_attrs(ufunc, kwargs, ("axis", "dtype"))
    if attrs is None or len(inputs) != 1 or isinstance(attrs.get("axis", 0), tuple):
        return _opaque_method(ufunc, "accumulate", inputs, kwargs)
    attrs.setdefault("axis", 0)
    if attrs["axis"] is None:
        raise TypeError("'NoneType' object cannot be interpreted as an integer")
    return bind(OpKind.UFUNC_ACCUMULATE, inputs, attrs)


def _ufunc_reduceat(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> Any:
    attrs = _method_attrs(ufunc, kwargs, ("axis", "dtype"))
    if attrs is None or len(inputs) != 2 or not isinstance(attrs.get("axis", 0), int):
        return _opaque_method(ufunc, "reduceat", inputs, kwargs)
    attrs.setdefault("axis", 0)
    array, indices = inputs
    if isinstance(indices, (list, tuple, range)):
        indices = np.asarray(indices)
    return bind(OpKind.UFUNC_REDUCEAT, (array, indices), attrs)


def _ufunc_outer(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> Any:
    """``ufunc.outer(a, b)`` is ``ufunc(a[..., None, ..., None], b)`` with one new axis per
    dimension of ``b``: NumPy's definition, and the same loop, so it traces (and fuses) as the
    ufunc. Operands are arrays first: a Python number is strong here, as in NumPy."""
    if ufunc.nin != 2 or len(inputs) != 2:
        raise ValueError("outer product only supported for binary functions")
    a, b = (x if isinstance(x, (Tensor, Variable)) else np.asarray(x) for x in inputs)
    nb = ndim_of(b)
    if nb:
        na = ndim_of(a)
        a = np.expand_dims(a, tuple(range(na, na + nb)))
    return ufunc(a, b, **kwargs)


UFUNC_METHODS.update(
    reduce=_ufunc_reduce,
    accumulate=_ufunc_accumulate,
    reduceat=_ufunc_reduceat,
    outer=_ufunc_outer,
)
