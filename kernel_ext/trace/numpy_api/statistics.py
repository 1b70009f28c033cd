"""Statistics and comparisons: ``np.diff``, ``np.histogram_bin_edges``, ``np.average``,
``np.cov``/``np.corrcoef``, ``np.allclose``/``np.array_equal``, ``np.select``,
``np.piecewise``, ``np.trapezoid`` and ``np.gradient`` (``np.bincount``'s entry point is in
its op's definition, :mod:`kernel_ext.ops.indexing.scatter_adds`, ``np.histogram``'s in
:mod:`kernel_ext.ops.sorting.bins`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple

from ... import errors
from ..opaque import PythonNumber
from ..signatures import ALL
from ..tensor import HANDLERS, Tensor
from ..variables import Variable
from .common import (
    Opaque,
    array_arg,
    composition,
    declare,
    implements,
    is_traced,
    ndim_of,
    static_shape,
)
from .elementwise import isclose
from .linalg import diagonal_of
from .shape import atleast_2d


@implements(np.diff)
def _diff(
    a: Any, n: int = 1, axis: int = -1, prepend: Any = np._NoValue, append: Any = np._NoValue
) -> Any:
    """NumPy's own composition: concatenate ``prepend``/``append`` (a scalar broadcast to one
    slice), then ``n`` times ``a[1:] - a[:-1]`` along ``axis`` (``!=`` for booleans)."""
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    nd = ndim_of(a)
    if nd == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = int(axis) % nd if -nd <= axis < nd else _axis_error(axis, nd)
    parts = [] if prepend is np._NoValue else [_diff_edge(a, prepend, axis)]
    parts.append(a)
    if append is not np._NoValue:
        parts.append(_diff_edge(a, append, axis))
    if len(parts) > 1:
        a = np.concatenate(parts, axis)
    lower = (slice(None),) * axis + (slice(1, None),)
    upper = (slice(None),) * axis + (slice(None, -1),)
    op = np.not_equal if a.dtype == np.bool_ else np.subtract
    for _ in range(n):
        a = op(a[lower], a[upper])
    return a


def _axis_error(axis: int, ndim: int) -> int:
    raise np.exceptions.AxisError(axis, ndim)


def _diff_edge(a: Any, value: Any, axis: int) -> Any:
    value = value if isinstance(value, Tensor) else np.asanyarray(value)
    if ndim_of(value) == 0:
        shape = list(a.shape)
        shape[axis] = 1
        if None in shape:
            raise errors.UnsupportedOpError(
                "np.diff(..., prepend=/append=scalar) on a value with unknown dimensions "
                f"{a.shape} needs the other sizes when tracing. Fix: pass an array of the "
                "slice's shape, or give the dimensions sizes in input_signature."
            )
        value = np.broadcast_to(value, tuple(shape))
    return value


@composition(np.ptp)
def _ptp(a: Any, axis: Any = None, keepdims: Any = np._NoValue) -> Any:
    keep = False if keepdims is np._NoValue else bool(keepdims)
    return np.subtract(np.max(a, axis=axis, keepdims=keep), np.min(a, axis=axis, keepdims=keep))


@composition(np.average)
def _average(
    a: Any,
    axis: Any = None,
    weights: Any = None,
    returned: bool = False,
    *,
    keepdims: Any = np._NoValue,
) -> Any:
    a = array_arg(a)
    shape = static_shape(a)
    if axis is not None:
        axis = normalize_axis_tuple(axis, len(shape), argname="axis")
    kw: dict[str, Any] = {} if keepdims is np._NoValue else {"keepdims": bool(keepdims)}
    if weights is None:
        avg = np.mean(a, axis, **kw)
        avg_shape = static_shape(avg)
        scl = avg.dtype.type(math.prod(shape) / math.prod(avg_shape))
    else:
        wgt = array_arg(weights)
        if tuple(shape) != static_shape(wgt):
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if static_shape(wgt) != tuple(shape[ax] for ax in axis):
                raise ValueError(
                    "Shape of weights must be consistent with shape of a along specified axis."
                )
            wgt = np.transpose(wgt, np.argsort(axis).tolist())
            wgt = np.reshape(wgt, tuple(s if ax in axis else 1 for ax, s in enumerate(shape)))
        if a.dtype.kind in "iub":
            result_dtype = np.result_type(a.dtype, wgt.dtype, "f8")
        else:
            result_dtype = np.result_type(a.dtype, wgt.dtype)
        scl = np.sum(wgt, axis=axis, dtype=result_dtype, **kw)
        avg = np.divide(np.sum(np.multiply(a, wgt, dtype=result_dtype), axis, **kw), scl)
        avg_shape = static_shape(avg)
    if not returned:
        return avg
    if np.shape(scl) != avg_shape:
        scl = np.copy(np.broadcast_to(scl, avg_shape))
    return avg, scl


@composition(np.cov)
def _cov(
    m: Any,
    y: Any = None,
    rowvar: bool = True,
    bias: bool = False,
    ddof: Any = None,
    fweights: Any = None,
    aweights: Any = None,
    *,
    dtype: Any = None,
) -> Any:
    """NumPy's cov without weights (those need the data for NumPy's checks): the rows
    centred on their means, ``dot(X, X.T.conj()) * (1 / (n - ddof))``."""
    if fweights is not None or aweights is not None:
        raise Opaque
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = array_arg(m)
    if ndim_of(m) > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = array_arg(y)
        if ndim_of(y) > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = (
            np.result_type(m.dtype, np.float64)
            if y is None
            else np.result_type(m.dtype, y.dtype, np.float64)
        )
    X = atleast_2d(m.astype(dtype))
    if not rowvar and ndim_of(m) != 1:
        X = np.transpose(X)
    if static_shape(X)[0] == 0:
        return np.array([]).reshape(0, 0)
    if y is not None:
        y = atleast_2d(y.astype(dtype))
        if not rowvar and static_shape(y)[0] != 1:
            y = np.transpose(y)
        X = np.concatenate((X, y), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    fact = static_shape(X)[1] - ddof
    if fact <= 0:
        import warnings  # noqa: PLC0415

        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
        fact = 0.0
    if X.dtype.kind not in "fc":
        raise Opaque  # NumPy subtracts the float means in place: its casting error
    X = np.subtract(X, np.mean(X, axis=1)[:, None]).astype(X.dtype)
    c = np.dot(X, np.conj(np.transpose(X)))
    with np.errstate(divide="ignore"):
        c = np.multiply(c, np.true_divide(1, fact)).astype(c.dtype)
    return np.squeeze(c)


@composition(np.corrcoef)
def _corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    c = _cov(x, y, rowvar, dtype=dtype)
    if ndim_of(c) != 2:
        return np.divide(c, c)
    if c.dtype.kind == "c":
        raise Opaque  # NumPy clips the real and imaginary parts in place
    stddev = np.sqrt(diagonal_of(c, 0, 0, 1))
    c = np.divide(np.divide(c, stddev[:, None]), stddev[None, :])
    return np.clip(c, -1, 1)


@composition(np.allclose)
def _allclose(
    a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Any:
    return _python_bool(np.all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def _python_bool(value: Any) -> Any:
    """A traced 0-d bool that NumPy returns as a Python ``bool`` (``bool(res)``)."""
    return PythonNumber(value.node, value.context, bool)


def _cannot_hold_nan(dtype: np.dtype) -> bool:
    return dtype.kind not in "fcmMO"


@composition(np.array_equal)
def _array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    a1, a2 = array_arg(a1), array_arg(a2)
    if static_shape(a1) != static_shape(a2):
        return False
    same = np.equal(a1, a2)
    if equal_nan and not (_cannot_hold_nan(a1.dtype) and _cannot_hold_nan(a2.dtype)):
        same = np.logical_or(same, np.logical_and(np.isnan(a1), np.isnan(a2)))
    return _python_bool(np.all(same))


@composition(np.array_equiv)
def _array_equiv(a1: Any, a2: Any) -> Any:
    a1, a2 = array_arg(a1), array_arg(a2)
    try:
        np.broadcast_shapes(static_shape(a1), static_shape(a2))
    except ValueError:
        return False
    return _python_bool(np.all(np.equal(a1, a2)))


@composition(np.select)
def _select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """NumPy's select: the default, overwritten by each choice where its condition holds,
    last condition first (so the first true one wins) — a chain of ``where``."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    choices = [c if type(c) in (int, float, complex) else array_arg(c) for c in choicelist]
    choices.append(default if type(default) in (int, float, complex) else array_arg(default))
    try:
        dtype = np.result_type(
            *[c.dtype if isinstance(c, (Tensor, Variable)) else c for c in choices]
        )
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") from None
    conds = [array_arg(c) for c in condlist]
    for i, cond in enumerate(conds):
        if cond.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    shapes = [static_shape(array_arg(c)) for c in conds + choices]
    shape = np.broadcast_shapes(*shapes)
    result = np.broadcast_to(
        np.asarray(choices[-1]).astype(dtype)
        if not isinstance(choices[-1], (Tensor, Variable))
        else choices[-1].astype(dtype),
        shape,
    )
    for choice, cond in zip(choices[-2::-1], conds[::-1]):
        choice = (
            choice.astype(dtype)
            if isinstance(choice, (Tensor, Variable))
            else np.asarray(choice).astype(dtype)
        )
        result = np.where(cond, choice, result)
    return np.copy(np.broadcast_to(result, shape))


@composition(np.piecewise)
@declare.parameters("x", "condlist", "funclist", "args", ALL)
def _piecewise(x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Any:
    """Constant pieces only (``y[cond] = value`` as a ``where``); functions of the selected
    elements run as NumPy's own call."""
    x = array_arg(x)
    conds = [array_arg(c) for c in (condlist if isinstance(condlist, list) else [condlist])]
    n = len(conds)
    if len(funclist) not in (n, n + 1):
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    if any(callable(f) or is_traced(f) for f in funclist):
        raise Opaque
    if len(funclist) == n + 1:
        others = np.logical_not(
            np.any(np.stack([np.broadcast_to(c, static_shape(x)) for c in conds]), axis=0)
        )
        conds.append(others)
    y = np.zeros_like(x)
    for cond, value in zip(conds, funclist):
        y = np.where(cond, np.asarray(value).astype(x.dtype), y)
    return y


@composition(np.trapezoid)
def _trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    y = array_arg(y)
    nd = ndim_of(y)
    if x is None:
        d = dx
    else:
        x = array_arg(x)
        if ndim_of(x) == 1:
            d = np.diff(x)
            shape = [1] * nd
            shape[axis] = static_shape(d)[0]
            d = np.reshape(d, tuple(shape))
        else:
            d = np.diff(x, axis=axis)
    upper, lower = [slice(None)] * nd, [slice(None)] * nd
    upper[axis], lower[axis] = slice(1, None), slice(None, -1)
    return np.sum(np.divide(np.multiply(d, np.add(y[tuple(upper)], y[tuple(lower)])), 2.0), axis)


@composition(np.gradient)
def _gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """NumPy's gradient for uniform spacing (scalar ``varargs``): central differences inside,
    one-sided ones of ``edge_order`` at the edges."""
    f = array_arg(f)
    shape = static_shape(f)
    N = len(shape)
    axes = tuple(range(N)) if axis is None else normalize_axis_tuple(axis, N)
    n = len(varargs)
    if n == 0:
        dx = [1.0] * len(axes)
    elif n == 1 and np.ndim(varargs[0]) == 0:
        dx = list(varargs) * len(axes)
    elif n == len(axes) and all(np.ndim(d) == 0 for d in varargs):
        dx = list(varargs)
    else:
        raise Opaque  # coordinate arrays
    if is_traced(dx):
        raise Opaque
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = f.dtype
    if otype.kind in "iub":  # NumPy: integers computed in float64 (booleans refuse `-`)
        f = f.astype(np.float64) if otype.kind != "b" else f
        otype = np.dtype(np.float64)
    elif otype.kind in "mM":
        raise Opaque
    out_vals = []
    for ax, ax_dx in zip(axes, dx):
        if shape[ax] < edge_order + 1:
            raise ValueError(
                "Shape of array too small to calculate a numerical gradient, at "
                "least (edge_order + 1) elements are required."
            )

        def sl(s: slice, ax: int = ax) -> tuple:
            return (slice(None),) * ax + (s,)

        inner = np.divide(
            np.subtract(f[sl(slice(2, None))], f[sl(slice(None, -2))]), np.multiply(2.0, ax_dx)
        )
        if edge_order == 1:
            first = np.divide(np.subtract(f[sl(slice(1, 2))], f[sl(slice(0, 1))]), ax_dx)
            last = np.divide(np.subtract(f[sl(slice(-1, None))], f[sl(slice(-2, -1))]), ax_dx)
        else:
            a, b, c = -1.5 / ax_dx, 2.0 / ax_dx, -0.5 / ax_dx
            first = np.add(
                np.add(np.multiply(a, f[sl(slice(0, 1))]), np.multiply(b, f[sl(slice(1, 2))])),
                np.multiply(c, f[sl(slice(2, 3))]),
            )
            a, b, c = 0.5 / ax_dx, -2.0 / ax_dx, 1.5 / ax_dx
            last = np.add(
                np.add(np.multiply(a, f[sl(slice(-3, -2))]), np.multiply(b, f[sl(slice(-2, -1))])),
                np.multiply(c, f[sl(slice(-1, None))]),
            )
        out = np.concatenate([first, inner, last], axis=ax).astype(otype)
        out_vals.append(out)
    return out_vals[0] if len(axes) == 1 else tuple(out_vals)


def _histogram(a: Any, bins: Any, range: Any, weights: Any) -> Any:
    """np.histogram through its handler (kernel_ext.ops.sorting.bins), read from the table when
    called, once it is filled."""
    return HANDLERS[np.histogram](a, bins, range, weights=weights)


@composition(np.histogram_bin_edges)
def _histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Any:
    return _histogram(a, bins, range, weights=weights)[1]
