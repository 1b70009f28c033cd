"""Ufunc methods on traced values: ``outer`` (a composition) and ``at``. Each binds NumPy's own
signature, keeps static arguments as attrs and falls back to an opaque call for the options no
op covers: slower, never wrong. ``reduce``, ``accumulate`` and ``reduceat`` record one op each:
their entry points are in :mod:`kernel_ext.ops.reductions.ufunc_methods`.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ...ir import OpKind
from ..context import bind
from ..opaque import ufunc_method_call
from ..tensor import UFUNC_METHODS, Tensor, build_template
from ..variables import Variable
from .common import ndim_of
from .writes import writable_target


def _opaque_method(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    return ufunc_method_call(ufunc, method, inputs, kwargs)


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


def _ufunc_at(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> None:
    """``ufunc.at(a, indices[, b])``: unbuffered in place, repeated indices applied once each
    (the scatter-add). Functionalized: a ``ufunc_at`` node computes the updated copy and
    ``a`` takes it as its new value (a plain array is promoted; an argument is written back).
    """
    if kwargs or len(inputs) not in (2, 3):
        return _opaque_method(ufunc, "at", inputs, kwargs)
    target = writable_target(inputs[0], f"np.{ufunc.__name__}.at", "first operand must be array")
    template, dyn = build_template(inputs[1])
    b = inputs[2] if len(inputs) == 3 else None
    if isinstance(b, (list, tuple)):
        b = np.asarray(b)
    attrs = {"ufunc": ufunc, "index": template}
    target.assign(cast("Tensor", bind(OpKind.UFUNC_AT, (target, b, *dyn), attrs)))
    return None


UFUNC_METHODS.update(outer=_ufunc_outer, at=_ufunc_at)
