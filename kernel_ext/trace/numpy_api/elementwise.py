"""Elementwise functions that are not ufuncs, and the ones NumPy writes in Python:
``np.round``, the ``*_like`` creators, ``np.isclose``, ``np.real``/``np.imag``,
``np.nan_to_num``, ``np.unwrap``, ... (``np.where``, ``np.clip`` and ``np.astype``, one op
each, are entry points in :mod:`kernel_ext.ops.elementwise.selection`; ``np.interp`` in
:mod:`kernel_ext.ops.sorting.bins`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir import OpKind
from ..context import bind
from ..opaque import numpy_call
from ..tensor import Tensor
from ..variables import Variable
from ..zero_d import mark_scalar
from .common import Opaque, array_arg, composition, implements, is_traced, ndim_of, static_value
from .writes import overwriting_call


@implements(np.round, np.around)
def _round(a: Any, decimals: Any = 0) -> Any:
    """NumPy's ``PyArray_Round``: ``rint`` for ``decimals=0``; ``rint(a * 10**d) / 10**d``
    for ``d > 0`` and ``rint(a / 10**-d) * 10**-d`` for ``d < 0`` in ``a``'s float dtype;
    integers unchanged for ``d >= 0`` and, for ``d < 0``, computed in float64 and cast
    back to their own dtype (so ``np.round`` of an integer array is an integer array)."""
    dtype = a.dtype if isinstance(a, (Tensor, Variable)) else np.asarray(a).dtype
    decimals = operator.index(decimals)
    if dtype.kind == "c" or dtype.kind == "b" or dtype.kind not in "iuf":
        # NumPy rounds the real and imaginary parts apart (a complex division by the scale
        # rounds differently); no op builds a complex array from its parts
        return numpy_call(np.round, (a, decimals), {})
    integer = dtype.kind in "iu"
    if decimals >= 0 and integer:
        # a copy (NumPy's round of a 0-d array is a NumPy scalar, as its rint would be)
        return mark_scalar(bind(OpKind.COPY, (a,))) if isinstance(a, (Tensor, Variable)) else a
    if decimals == 0:
        return np.rint(a)
    scale = float(10.0 ** abs(decimals))
    work = a.astype(np.float64) if integer else a
    if decimals > 0:
        r = np.true_divide(np.rint(np.multiply(work, scale)), scale)
    else:
        r = np.multiply(np.rint(np.true_divide(work, scale)), scale)
    return r.astype(dtype) if integer else r


def _like(fill: Any) -> Callable:
    def handler(a: Any, dtype: Any = None) -> Any:
        return _filled(a, fill, np.dtype(dtype) if dtype is not None else a.dtype)

    return handler


def _filled(a: Any, fill: Any, dtype: np.dtype) -> Any:
    """An array shaped like ``a`` filled with ``fill``; ``a``'s values are never used."""
    value = np.asarray(fill).astype(dtype)
    if a.shape is not None and None not in a.shape:
        return bind(OpKind.BROADCAST_TO, (value,), {"shape": tuple(a.shape)})
    # Unknown dims come from ``a`` at run time: where(True, value, a) has a's shape and only
    # ever selects ``value`` (so inf/nan in ``a`` cannot leak in, unlike a*0 + value).
    return bind(OpKind.CAST, (bind(OpKind.WHERE, (True, value, a)),), {"dtype": dtype})


implements(np.zeros_like)(_like(0))


@implements(np.empty_like)
def _empty_like(prototype: Any, dtype: Any = None) -> Any:
    return _filled(prototype, 0, np.dtype(dtype) if dtype is not None else prototype.dtype)


implements(np.ones_like)(_like(1))


@implements(np.full_like)
def _full_like(a: Any, fill_value: Any, dtype: Any = None) -> Any:
    return _filled(a, fill_value, np.dtype(dtype) if dtype is not None else a.dtype)


@implements(np.isclose)
def isclose(
    a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Any:
    close = np.less_equal(np.abs(np.subtract(a, b)), np.add(atol, np.multiply(rtol, np.abs(b))))
    close = np.logical_or(close, np.equal(a, b))  # equal infinities
    if equal_nan:
        close = np.logical_or(close, np.logical_and(np.isnan(a), np.isnan(b)))
    return close


@implements(np.real)
def _real(val: Any) -> Any:
    val = array_arg(val)
    return bind(OpKind.REAL, (val,)) if val.dtype.kind == "c" else val


@implements(np.imag)
def _imag(val: Any) -> Any:
    val = array_arg(val)
    if val.dtype.kind == "c" or val.shape == ():
        # (a real 0-d value's .imag: a scalar's is a scalar, a 0-d array's an array)
        return bind(OpKind.IMAG, (val,))
    return _filled(val, 0, val.dtype)


@implements(np.iscomplexobj)
def _iscomplexobj(x: Any) -> bool:
    return array_arg(x).dtype.kind == "c"


@implements(np.isrealobj)
def _isrealobj(x: Any) -> bool:
    return array_arg(x).dtype.kind != "c"


@implements(np.iscomplex)
def _iscomplex(x: Any) -> Any:
    x = array_arg(x)
    # (NumPy: ``zeros(shape, bool)[()]`` for a real input: a NumPy scalar when 0-d)
    return (
        np.not_equal(_imag(x), 0)
        if x.dtype.kind == "c"
        else mark_scalar(_filled(x, False, np.dtype(bool)))
    )


@implements(np.isreal)
def _isreal(x: Any) -> Any:
    return np.equal(_imag(array_arg(x)), 0)


@implements(np.angle)
def _angle(z: Any, deg: bool = False) -> Any:
    z = array_arg(z)
    a = np.arctan2(_imag(z), _real(z)) if z.dtype.kind == "c" else np.arctan2(0, z)
    return np.multiply(a, 180 / np.pi) if deg else a


@implements(np.sinc)
def _sinc(x: Any) -> Any:
    x = np.multiply(np.pi, array_arg(x))
    eps = np.finfo(x.dtype).eps if x.dtype.kind == "f" else 1e-20
    y = np.where(np.not_equal(x, 0), x, eps)
    return np.divide(np.sin(y), y)


@implements(np.isneginf)
def _isneginf(x: Any) -> Any:
    return np.logical_and(np.isinf(x), _signbit_checked(x))


@implements(np.isposinf)
def _isposinf(x: Any) -> Any:
    return np.logical_and(np.isinf(x), np.logical_not(_signbit_checked(x)))


def _signbit_checked(x: Any) -> Any:
    try:
        return np.signbit(x)
    except TypeError as e:
        raise TypeError(
            f"This operation is not supported for {array_arg(x).dtype} values because "
            "it would be ambiguous."
        ) from e


@implements(np.fix)
def _fix(x: Any) -> Any:
    return np.trunc(x)


@composition(np.nan_to_num)
def _nan_to_num(
    x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None, neginf: Any = None
) -> Any:
    x = array_arg(x)
    if x.dtype.kind not in "fc":
        # (NumPy returns ``x[()]`` of a 0-d input: a NumPy scalar)
        return x[()] if x.shape == () else np.copy(x) if copy else x
    if x.dtype.kind == "c" or is_traced((nan, posinf, neginf)):
        if not copy:  # NumPy writes the real and imaginary parts into x itself
            return overwriting_call(
                np.nan_to_num,
                "x",
                (x,),
                {"copy": copy, "nan": nan, "posinf": posinf, "neginf": neginf},
            )
        raise Opaque  # NumPy writes the real and imaginary parts in place
    info = np.finfo(x.dtype)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    out = np.where(np.isnan(x), np.asarray(nan).astype(x.dtype), x)
    out = np.where(_isposinf(x), np.asarray(hi).astype(x.dtype), out)
    out = np.where(_isneginf(x), np.asarray(lo).astype(x.dtype), out)
    if not copy and isinstance(x, Tensor):
        # copy=False: NumPy replaces the values in x itself and returns it (x[()] if 0-d)
        x[...] = out
        return x[()] if x.shape == () else x
    return mark_scalar(out)


@composition(np.ediff1d)
def _ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    to_end, to_begin = static_value((to_end, to_begin))
    ary = np.ravel(array_arg(ary))
    dtype = ary.dtype
    diff = np.subtract(ary[1:], ary[:-1])
    if to_begin is None and to_end is None:
        return diff
    parts: list[Any] = []
    for edge, name in ((to_begin, "to_begin"), (to_end, "to_end")):
        if edge is None:
            parts.append(None)
            continue
        edge = np.asanyarray(edge)
        if not np.can_cast(edge, dtype, casting="same_kind"):
            raise TypeError(
                f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule."
            )
        parts.append(edge.ravel().astype(dtype))
    return np.concatenate([p for p in (parts[0], diff.astype(dtype), parts[1]) if p is not None])


@composition(np.unwrap)
def _unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: Any = 2 * np.pi) -> Any:
    """NumPy's unwrap: differences folded into ``[-period/2, period/2)``, the corrections
    accumulated and added back (``copyto(..., where=)`` written as ``where``)."""
    discont, period = static_value((discont, period))
    p = array_arg(p)
    nd = ndim_of(p)
    dd = np.diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    upper = [slice(None)] * nd
    upper[axis] = slice(1, None)
    dtype = np.result_type(dd.dtype, period)
    if np.issubdtype(dtype, np.integer):
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    low = -high
    ddmod = np.add(np.mod(np.subtract(dd, low), period), low)
    if ambiguous:
        ddmod = np.where(
            np.logical_and(np.equal(ddmod, low), np.greater(dd, 0)),
            np.asarray(high).astype(ddmod.dtype),
            ddmod,
        )
    correct = np.subtract(ddmod, dd)
    correct = np.where(np.less(np.abs(dd), discont), np.zeros((), correct.dtype), correct)
    up = p.astype(dtype)
    up[tuple(upper)] = np.add(p[tuple(upper)], np.cumsum(correct, axis))
    return up
