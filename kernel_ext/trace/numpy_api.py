"""NumPy functions on traced values: the ``__array_function__`` handler table.

``HANDLERS[np.func]`` records ``np.func`` applied to traced values. Most map onto one graph op;
a few are compositions of ops, exactly as NumPy itself composes them (``np.round`` is
multiply-rint-divide, ``np.isclose`` is a comparison of differences). Anything not listed raises
:class:`~kernel_ext.errors.UnsupportedOpError` naming the function.
"""

from __future__ import annotations

import inspect
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from .. import errors
from ..ir import UFUNC_REDUCTIONS, OpKind
from .context import bind
from .opaque import PythonNumber, numpy_call, ufunc_method_call
from .signatures import ALL, declare, numpy_signature
from .tensor import (
    FALLBACK,
    GUFUNCS,
    HANDLERS,
    UFUNC_METHODS,
    Tensor,
    build_template,
    is_immutable_scalar,
)
from .variables import Variable
from .zero_d import as_array, mark_array, mark_scalar


def implements(*funcs: Callable) -> Callable[[Callable], Callable]:
    """Register ``handler`` as the traced form of ``funcs``. The NumPy parameters it
    implements are the names in its signature (or its :func:`~.signatures.declare`); any
    other parameter given a non-default value runs NumPy's own call (signatures.py)."""
    def register(handler: Callable) -> Callable:
        for f in funcs:
            HANDLERS[f] = handler
        return handler
    return register


def _axis(axis: Any) -> Any:
    if axis is None or isinstance(axis, (int, np.integer)):
        return None if axis is None else int(axis)
    return tuple(int(a) for a in axis)


def _flag(value: Any) -> bool:
    """A boolean option whose NumPy default is ``np._NoValue`` (``keepdims``): unset is
    False."""
    return False if value is np._NoValue else bool(value)  # type: ignore[attr-defined]


# Reductions: the parameters in each handler's signature are the ones it implements
# (signatures.py); ``where=``, ``initial=``, ``mean=`` and the like run NumPy's own call.

def _reduction(kind: OpKind) -> Callable:
    def handler(a: Any, axis: Any = None, dtype: Any = None, keepdims: Any = False) -> Any:
        attrs: dict[str, Any] = {"axis": _axis(axis), "keepdims": _flag(keepdims)}
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

    def handler(a: Any, axis: Any = None, dtype: Any = None, ddof: Any = 0,
                keepdims: Any = False, *, correction: Any = np._NoValue) -> Any:
        if correction is not np._NoValue:  # type: ignore[attr-defined]
            if not _is_zero(ddof):
                raise ValueError("ddof and correction can't be provided simultaneously.")
            ddof = correction
        if not isinstance(ddof, (int, float, np.integer, np.floating)) or isinstance(
                ddof, bool):
            return numpy_call(func, (a,), {"axis": axis, "dtype": dtype, "ddof": ddof,
                                           "keepdims": _flag(keepdims)})
        attrs: dict[str, Any] = {"axis": _axis(axis), "keepdims": _flag(keepdims)}
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
        return bind(kind, (a,), {"axis": _axis(axis), "keepdims": _flag(keepdims)})
    return handler


implements(np.max, np.amax)(_minmax(OpKind.MAX))
implements(np.min, np.amin)(_minmax(OpKind.MIN))


def _logical(kind: OpKind) -> Callable:
    def handler(a: Any, axis: Any = None, keepdims: Any = False) -> Any:
        return bind(kind, (a,), {"axis": _axis(axis), "keepdims": _flag(keepdims)})
    return handler


implements(np.any)(_logical(OpKind.ANY))
implements(np.all)(_logical(OpKind.ALL))


def _arg(kind: OpKind) -> Callable:
    def handler(a: Any, axis: Any = None, *, keepdims: Any = False) -> Any:
        return bind(kind, (a,), {"axis": _axis(axis), "keepdims": _flag(keepdims)})
    return handler


implements(np.argmax)(_arg(OpKind.ARGMAX))
implements(np.argmin)(_arg(OpKind.ARGMIN))


def _scan(kind: OpKind) -> Callable:
    def handler(a: Any, axis: Any = None, dtype: Any = None) -> Any:
        attrs: dict[str, Any] = {"axis": None if axis is None else int(axis)}
        if dtype is not None:
            attrs["dtype"] = np.dtype(dtype)
        return bind(kind, (a,), attrs)
    return handler


implements(np.cumsum)(_scan(OpKind.CUMSUM))
implements(np.cumprod)(_scan(OpKind.CUMPROD))


@implements(np.count_nonzero)
def _count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    return bind(OpKind.SUM, (np.not_equal(a, 0),),
                {"axis": _axis(axis), "keepdims": keepdims, "dtype": np.dtype(np.intp)})


# -- shape ------------------------------------------------------------------------------------

def _shape_arg(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


@implements(np.reshape)
def _reshape(a: Any, shape: Any) -> Any:
    # (order= other than 'C' and copy= run NumPy's own call: signatures.py)
    return bind(OpKind.RESHAPE, (a,), {"shape": _shape_arg(shape)})


@implements(np.ravel)
def _ravel(a: Any) -> Any:
    return _reshape(a, (-1,))


@implements(np.transpose)
def _transpose(a: Any, axes: Any = None) -> Any:
    if axes is not None:
        axes = tuple(int(i) for i in axes) if np.ndim(axes) else (operator.index(axes),)
    return bind(OpKind.TRANSPOSE, (a,), {"axes": axes})


def _ndim_of(a: Any) -> int:
    return a.ndim if isinstance(a, Tensor) else len(np.shape(a))


@implements(np.swapaxes)
def _swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    n = _ndim_of(a)
    axes = list(range(n))
    i = normalize_axis_index(axis1, n, "axis1")
    j = normalize_axis_index(axis2, n, "axis2")
    axes[i], axes[j] = axes[j], axes[i]
    return _transpose(a, axes)


@implements(np.moveaxis)
def _moveaxis(a: Any, source: Any, destination: Any) -> Any:
    n = _ndim_of(a)
    src = list(normalize_axis_tuple(source, n, "source"))
    dst = list(normalize_axis_tuple(destination, n, "destination"))
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _transpose(a, order)


@implements(np.expand_dims)
def _expand_dims(a: Any, axis: Any) -> Any:
    return bind(OpKind.EXPAND_DIMS, (a,), {"axis": _axis(axis)})


@implements(np.squeeze)
def _squeeze(a: Any, axis: Any = None) -> Any:
    return bind(OpKind.SQUEEZE, (a,), {"axis": _axis(axis)})


@implements(np.broadcast_to)
def _broadcast_to(array: Any, shape: Any) -> Any:
    return bind(OpKind.BROADCAST_TO, (array,), {"shape": _shape_arg(shape)})


@implements(np.atleast_1d)
def _atleast_1d(*arys: Any) -> Any:
    out = [a if _ndim_of(a) >= 1 else _reshape(a, (1,)) for a in arys]
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.atleast_2d)
def _atleast_2d(*arys: Any) -> Any:
    out = []
    for a in arys:
        n = _ndim_of(a)
        out.append(a if n >= 2 else _reshape(a, (1, 1)) if n == 0 else _expand_dims(a, 0))
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.concatenate)
def _concatenate(arrays: Any, axis: Any = 0, *, dtype: Any = None) -> Any:
    attrs: dict[str, Any] = {"axis": None if axis is None else int(axis)}
    if dtype is not None:
        attrs["dtype"] = np.dtype(dtype)
    return bind(OpKind.CONCATENATE, tuple(arrays), attrs)


@implements(np.stack)
def _stack(arrays: Any, axis: int = 0) -> Any:
    return bind(OpKind.STACK, tuple(arrays), {"axis": int(axis)})


@implements(np.vstack)
def _vstack(tup: Any, *, dtype: Any = None) -> Any:
    return _concatenate([_atleast_2d(a) for a in tup], axis=0, dtype=dtype)


@implements(np.hstack)
def _hstack(tup: Any, *, dtype: Any = None) -> Any:
    arrs = [_atleast_1d(a) for a in tup]
    return _concatenate(arrs, axis=0 if _ndim_of(arrs[0]) == 1 else 1, dtype=dtype)


@implements(np.flip)
def _flip(m: Any, axis: Any = None) -> Any:
    return bind(OpKind.FLIP, (m,), {"axis": _axis(axis)})


@implements(np.copy)
def _copy(a: Any) -> Any:
    # np.copy builds an array (np.copy(np.float64(1)) is a 0-d array; .copy() keeps a scalar)
    return mark_array(bind(OpKind.COPY, (a,)))


@implements(np.shape)
def _shape(a: Any) -> Any:
    return a.shape


@implements(np.ndim)
def _ndim(a: Any) -> int:
    return a.ndim


@implements(np.size)
def _size(a: Any, axis: Any = None) -> Any:
    return a.size if axis is None else a.shape[axis]


# -- elementwise ------------------------------------------------------------------------------

@implements(np.where)
def _where(condition: Any, x: Any = np._NoValue, y: Any = np._NoValue, /) -> Any:
    no = np._NoValue  # type: ignore[attr-defined]
    if x is no and y is no:  # np.where(c) is np.nonzero(c): indices of a data-dependent length
        return _nonzero(condition)
    if x is no or y is no:
        raise ValueError("either both or neither of x and y should be given")
    return bind(OpKind.WHERE, (condition, x, y))


@implements(np.clip)
def _clip(a: Any, a_min: Any = np._NoValue, a_max: Any = np._NoValue, *,
          min: Any = np._NoValue, max: Any = np._NoValue) -> Any:
    """NumPy's argument rules of ``np.clip`` (its ufunc keywords ``dtype=``, ``where=``,
    ... run NumPy's own call: signatures.py)."""
    no = np._NoValue  # type: ignore[attr-defined]
    if a_min is no and a_max is no:
        a_min = None if min is no else min
        a_max = None if max is no else max
    elif a_min is no:
        raise TypeError("clip() missing 1 required positional argument: 'a_min'")
    elif a_max is no:
        raise TypeError("clip() missing 1 required positional argument: 'a_max'")
    elif min is not no or max is not no:
        raise ValueError("Passing `min` or `max` keyword argument when `a_min` and `a_max` "
                         "are provided is forbidden.")
    return bind(OpKind.CLIP, (a, a_min, a_max))


@implements(np.astype)
def _astype(x: Any, dtype: Any, /, *, copy: bool = True) -> Any:
    dtype = np.dtype(dtype)
    if not copy and isinstance(x, Tensor) and x.dtype == dtype:
        return x  # NumPy's astype(copy=False) returns the array itself
    return bind(OpKind.CAST, (x,), {"dtype": dtype})


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
        return mark_scalar(bind(OpKind.COPY, (a,))) if isinstance(a, (Tensor, Variable)) \
            else a
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
def _isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Any:
    close = np.less_equal(np.abs(np.subtract(a, b)), np.add(atol, np.multiply(rtol, np.abs(b))))
    close = np.logical_or(close, np.equal(a, b))  # equal infinities
    if equal_nan:
        close = np.logical_or(close, np.logical_and(np.isnan(a), np.isnan(b)))
    return close


# -- indexing ---------------------------------------------------------------------------------

@implements(np.take)
def _take(a: Any, indices: Any, axis: Any = None) -> Any:
    if axis is None:
        return _ravel(a)[indices]
    n = _ndim_of(a)
    return a[(slice(None),) * (axis % n) + (indices,)]


# -- linear algebra ---------------------------------------------------------------------------

@implements(np.dot)
def _dot(a: Any, b: Any) -> Any:
    return bind(OpKind.DOT, (a, b))


@implements(np.outer)
def _outer(a: Any, b: Any) -> Any:
    return bind(OpKind.OUTER, (a, b))


@implements(np.linalg.inv)
def _inv(a: Any) -> Any:
    return bind(OpKind.INV, (a,))


@implements(np.linalg.det)
def _det(a: Any) -> Any:
    return bind(OpKind.DET, (a,))


@implements(np.linalg.solve)
def _solve(a: Any, b: Any) -> Any:
    return bind(OpKind.SOLVE, (a, b))


# -- sorting ----------------------------------------------------------------------------------

def _sort_attrs(axis: Any, kind: Any, stable: Any) -> dict:
    """The static attrs of a sort: the axis, and ``kind``/``stable`` when given (they decide
    the order of ties, so the graph runs NumPy's sort with the same ones)."""
    attrs: dict[str, Any] = {"axis": None if axis is None else int(axis)}
    if kind is not None:
        attrs["kind"] = str(kind)
    if stable is not None:
        attrs["stable"] = bool(stable)
    return attrs


@implements(np.sort)
def _sort(a: Any, axis: Any = -1, kind: Any = None, *, stable: Any = None) -> Any:
    if _ndim_of(a) == 0:  # (NumPy's own rules for a 0-d input: its call)
        return numpy_call(np.sort, (a,), {"axis": axis, "kind": kind, "stable": stable})
    return bind(OpKind.SORT, (a,), _sort_attrs(axis, kind, stable))


@implements(np.argsort)
def _argsort(a: Any, axis: Any = -1, kind: Any = None, *, stable: Any = None) -> Any:
    if _ndim_of(a) == 0:  # (NumPy's argsort of a 0-d array is array([0]): its call)
        return numpy_call(np.argsort, (a,), {"axis": axis, "kind": kind, "stable": stable})
    return bind(OpKind.ARGSORT, (a,), _sort_attrs(axis, kind, stable))


# -- functions that write into an argument: functionalized (the target takes the new value) --

def _writable_target(dst: Any, what: str, scalar_error: str | None) -> Tensor:
    """The traced value ``dst`` stands for (a plain array is promoted, see TraceContext), as
    the destination of a write: ``scalar_error`` is NumPy's ``TypeError`` text for a NumPy
    scalar there, or None where NumPy writes into a temporary (``Tensor.array_target``)."""
    if isinstance(dst, Tensor):
        return dst.array_target(what, scalar_error)
    if isinstance(dst, np.ndarray):
        from .state import current_context
        ctx = current_context()
        if ctx is not None:
            return ctx.promote(dst)
    raise TypeError(f"{what} needs an array to write into, got {type(dst).__name__}")


def _dtype_name(value: Any) -> str:
    """The NumPy scalar type's name of ``value``'s dtype (``float64``), for NumPy's words."""
    return np.dtype(getattr(value, "dtype", np.float64)).type.__name__


@implements(np.copyto)
def _copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    target = _writable_target(
        dst, "np.copyto", f"copyto() argument 1 must be a numpy.ndarray, not numpy.{_dtype_name(dst)}")
    src_dtype = np.result_type(src) if not isinstance(src, Tensor) else src.dtype
    if not np.can_cast(src_dtype, target.dtype, casting=casting):
        raise TypeError(f"Cannot cast array data from dtype('{np.dtype(src_dtype)}') to "
                        f"dtype('{target.dtype}') according to the rule '{casting}'")
    value = np.broadcast_to(np.asarray(src) if not isinstance(src, Tensor) else src,
                            target.shape)
    if where is not True:
        value = np.where(where, value, target)
    target[...] = value


@implements(np.fill_diagonal)
def _fill_diagonal(a: Any, val: Any, wrap: bool = False) -> None:
    target = _writable_target(a, "np.fill_diagonal", None)
    shape = target.shape
    if shape is not None and len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    if shape is None or any(d is None for d in shape):
        raise errors.UnsupportedOpError(
            "np.fill_diagonal on a traced value needs its shape known when tracing "
            f"(got {shape}). Fix: give the dimensions sizes in input_signature.")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    # NumPy's own rule: ``a.flat[:end:step] = val`` (a tall matrix with wrap=True restarts
    # the diagonal every n + 1 rows)
    if len(shape) == 2:
        step, end = shape[1] + 1, None if wrap else shape[1] * shape[1]
    else:
        step, end = 1 + int(np.cumprod(shape[:-1]).sum()), None
    index = np.unravel_index(np.arange(math.prod(shape))[:end:step], shape)
    count = len(index[0])
    # (``a.flat[...] = val`` takes val's elements in order, repeated as needed: np.resize)
    target[index] = np.resize(val if isinstance(val, Tensor) else np.asarray(val), count)


# -- ufunc methods and the nan family (issue 14) ----------------------------------------------
# Each handler binds the call with the NumPy function's own signature (positional and keyword
# arguments exactly as NumPy takes them), keeps static arguments as attrs and falls back to an
# opaque call (``numpy_call``) for the options no op covers (``where=``, ``initial=``, traced
# ``q``, ``weights=``, ...): slower, never wrong.

def _bound(func: Callable, args: tuple, kwargs: dict) -> dict[str, Any]:
    """``func``'s parameters for this call, defaults applied (``np._NoValue`` where unset)."""
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _given(value: Any) -> bool:
    return value is not np._NoValue and value is not None  # type: ignore[attr-defined]


def _static_value(value: Any) -> bool:
    """A Python or NumPy number, or an array of numbers: something an attr may hold."""
    if isinstance(value, (Tensor, Variable)):
        return False
    if isinstance(value, (list, tuple)):
        return all(_static_value(v) for v in value)
    return isinstance(value, (int, float, np.generic, np.ndarray)) and not isinstance(
        value, (str, bytes))


def _frozen(value: Any) -> Any:
    """A static attr value: numbers as they are (their weak or strong type matters under NEP
    50), containers and arrays as a read-only array copy."""
    if isinstance(value, (list, tuple, np.ndarray)):
        arr = np.array(value, copy=True)
        arr.setflags(write=False)
        return arr
    return value


def _nan_reduction(kind: OpKind, *, dtype: bool = False, ddof: bool = False,
                   q: bool = False, method: bool = False,
                   initial: bool = False) -> Callable:
    """The handler of ``np.<kind>``: one ``kind`` node with static axis/keepdims (and dtype,
    ddof, q, method where the function has them), or an opaque call for the other options."""
    func = kind.numpy_function

    def handler(*args: Any, **kwargs: Any) -> Any:
        p = _bound(func, args, kwargs)
        opaque = any(_given(p.get(name)) for name in ("where", "weights", "interpolation",
                                                        "mean", "correction"))
        opaque |= initial and _given(p.get("initial"))
        opaque |= q and not _static_value(p["q"])
        opaque |= ddof and not isinstance(p.get("ddof", 0), (int, float, np.number))
        if p.get("overwrite_input"):
            return _overwriting_call(func, "a", args, kwargs)
        if opaque:
            return numpy_call(func, args, kwargs)
        attrs: dict[str, Any] = {}
        if q:
            attrs["q"] = _frozen(p["q"])
        attrs["axis"] = _axis(p.get("axis"))
        keepdims = p.get("keepdims", False)
        attrs["keepdims"] = False if keepdims is np._NoValue else bool(  # type: ignore
            keepdims)
        if dtype and p.get("dtype") is not None:
            attrs["dtype"] = np.dtype(p["dtype"])
        if ddof and p.get("ddof", 0):
            attrs["ddof"] = p["ddof"]
        if method and p.get("method", "linear") != "linear":
            attrs["method"] = p["method"]
        result = bind(kind, (p["a"],), attrs)
        # (the median and quantile family reshape a keepdims result: a 0-d one is an array)
        return mark_array(result) if attrs["keepdims"] and kind in _RESHAPED_KEEPDIMS \
            else result
    handler.__name__ = f"_{kind.value}"
    # (it binds every parameter itself: the options no op covers run NumPy's own call)
    return declare(handler, numpy_signature(func).parameters.keys())


_RESHAPED_KEEPDIMS = frozenset({OpKind.MEDIAN, OpKind.NANMEDIAN, OpKind.PERCENTILE,
                                OpKind.NANPERCENTILE, OpKind.QUANTILE, OpKind.NANQUANTILE})


class OverwritingCall:
    """``func`` run on a copy of its argument ``name``, returning ``(result, the copy
    after the call)``: a NumPy function that changes an argument in place
    (``overwrite_input=True``, ``copy=False``) as a pure call whose second result the
    argument then takes, so the caller's array ends as eager NumPy leaves it."""

    writes_a_copy = True  # (numpy_call lets its out= through: the buffer is a copy)

    def __init__(self, func: Callable, name: str) -> None:
        self.func, self.name = func, name
        self.__name__ = getattr(func, "__name__", "call")
        self.__module__ = getattr(func, "__module__", "numpy")

    def __call__(self, *args: Any, **kwargs: Any) -> tuple:
        bound = inspect.signature(self.func).bind(*args, **kwargs)
        given = bound.arguments[self.name]
        one = isinstance(given, tuple) and len(given) == 1  # (out=(buffer,))
        work = np.array(given[0] if one else given, copy=True)
        bound.arguments[self.name] = (work,) if one else work
        result = self.func(*bound.args, **bound.kwargs)
        # (NumPy returns out itself from most calls: then the argument is the result; a
        # function that returns nothing, np.putmask, gives the argument only)
        return (work,) if result is work or result is None else (result, work)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OverwritingCall) and (other.func, other.name) == (
            self.func, self.name)

    def __hash__(self) -> int:
        return hash((OverwritingCall, self.func, self.name))


def _overwriting_call(func: Callable, name: str, args: tuple, kwargs: dict) -> Any:
    """``func(*args, **kwargs)`` that writes into its argument ``name`` (see
    :class:`OverwritingCall`): the result, and the argument updated in place. For
    ``name="out"`` the result is ``out`` itself, as NumPy returns it."""
    target = inspect.signature(func).bind(*args, **kwargs).arguments[name]
    if name == "out" and isinstance(target, tuple) and len(target) == 1:
        target = target[0]
    outputs = numpy_call(OverwritingCall(func, name), args, kwargs)
    new = outputs[-1]
    if isinstance(target, (Tensor, np.ndarray)):
        written = _writable_target(target, f"np.{func.__name__}",
                                   "output must be an array")
        written[...] = new
        if len(outputs) == 1:
            return written  # NumPy returned the argument itself
    return outputs[0]


# a parameter its handler lacks, with out=: NumPy's own call writing into a copy of out
FALLBACK["overwriting"] = _overwriting_call


class UfuncIntoCopy:
    """``ufunc(*inputs, out=copies of out, **kwargs)`` returning the copies: a ufunc call
    with ``out=`` and keywords no op has (``where=`` keeps ``out``'s old values where it is
    False) as a pure call whose results the ``out`` arrays then take."""

    writes_a_copy = True  # (numpy_call lets its out= through: the buffers are copies)

    def __init__(self, ufunc: np.ufunc) -> None:
        self.ufunc = ufunc
        self.__name__ = ufunc.__name__
        self.__module__ = "numpy"

    def __call__(self, *inputs: Any, out: tuple, **kwargs: Any) -> tuple:
        work = tuple(np.array(o, copy=True) for o in out)
        self.ufunc(*inputs, out=work, **kwargs)
        return work

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UfuncIntoCopy) and other.ufunc is self.ufunc

    def __hash__(self) -> int:
        return hash((UfuncIntoCopy, self.ufunc))


def _ufunc_into(ufunc: np.ufunc, inputs: tuple, out: Any, kwargs: dict) -> Any:
    """NumPy's ``ufunc(*inputs, out=out, **kwargs)``, each ``out`` array updated in place."""
    targets = out if isinstance(out, tuple) else (out,)
    new = numpy_call(UfuncIntoCopy(ufunc), inputs, {"out": targets, **kwargs})
    written = []
    for target, value in zip(targets, new):
        target = _writable_target(target, f"np.{ufunc.__name__}(..., out=...)",
                                  "return arrays must be of ArrayType")
        target[...] = value
        written.append(target)
    return written[0] if len(written) == 1 else tuple(written)


FALLBACK["ufunc_into"] = _ufunc_into


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


def _nan_scan(kind: OpKind) -> Callable:
    func = kind.numpy_function

    @declare.parameters("a", "axis", "dtype")
    def handler(*args: Any, **kwargs: Any) -> Any:
        p = _bound(func, args, kwargs)
        attrs: dict[str, Any] = {"axis": None if p["axis"] is None else int(p["axis"])}
        if p.get("dtype") is not None:
            attrs["dtype"] = np.dtype(p["dtype"])
        return bind(kind, (p["a"],), attrs)
    return handler


implements(np.nancumsum)(_nan_scan(OpKind.NANCUMSUM))
implements(np.nancumprod)(_nan_scan(OpKind.NANCUMPROD))


def _opaque_method(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    return ufunc_method_call(ufunc, method, inputs, kwargs)


def _method_attrs(ufunc: np.ufunc, kwargs: dict, allowed: tuple[str, ...]) -> dict | None:
    """Static attrs of a ufunc method call, or None when an option needs the opaque call."""
    attrs: dict[str, Any] = {"ufunc": ufunc}
    for key, value in kwargs.items():
        if key not in allowed:
            return None
        if key == "axis":
            attrs["axis"] = _axis(value)
        elif key == "dtype":
            if value is not None:
                attrs["dtype"] = np.dtype(value)
        elif key == "keepdims":
            attrs["keepdims"] = bool(value)
        elif key == "initial":
            if value is np._NoValue:  # type: ignore[attr-defined]
                continue
            if not _static_value(value) or np.ndim(value):
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
    nb = _ndim_of(b)
    if nb:
        na = _ndim_of(a)
        a = np.expand_dims(a, tuple(range(na, na + nb)))
    return ufunc(a, b, **kwargs)


def _ufunc_at(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> None:
    """``ufunc.at(a, indices[, b])``: unbuffered in place, repeated indices applied once each
    (the scatter-add). Functionalized: a ``ufunc_at`` node computes the updated copy and
    ``a`` takes it as its new value (a plain array is promoted; an argument is written back).
    """
    if kwargs or len(inputs) not in (2, 3):
        return _opaque_method(ufunc, "at", inputs, kwargs)
    target = _writable_target(inputs[0], f"np.{ufunc.__name__}.at",
                              "first operand must be array")
    template, dyn = build_template(inputs[1])
    b = inputs[2] if len(inputs) == 3 else None
    if isinstance(b, (list, tuple)):
        b = np.asarray(b)
    target.assign(bind(OpKind.UFUNC_AT, (target, b, *dyn),
                       {"ufunc": ufunc, "index": template}))
    return None


UFUNC_METHODS.update(reduce=_ufunc_reduce, accumulate=_ufunc_accumulate,
                     reduceat=_ufunc_reduceat, outer=_ufunc_outer, at=_ufunc_at)


# -- named NumPy functions and data-dependent shapes (issue 14) --------------------------------
# Graph ops of their own (ir/ops.py, same section) or compositions of ops exactly as NumPy
# composes them (np.diff, np.triu, np.flatnonzero, np.extract). What has to be static for an
# op (pad widths, insert indices, kth, einsum subscripts, histogram's int bins and range) is
# an attribute; when the caller passes a traced value there, the call runs as NumPy's own
# opaque call instead (correct, only not seen inside).

def _traced(value: Any) -> bool:
    """Is ``value`` (or anything in a list/tuple/dict it holds) a traced value?"""
    if isinstance(value, Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(_traced(v) for v in value)
    if isinstance(value, dict):
        return any(_traced(v) for v in value.values())
    return False


def _static_attr(value: Any) -> Any:
    """A static argument as an attribute: arrays and lists become (nested) tuples, so the
    graph's attributes stay comparable and hashable (CSE, executor sharing)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list):
        return tuple(_static_attr(v) for v in value)
    if isinstance(value, tuple):
        return tuple(_static_attr(v) for v in value)
    return value


def _outputs(kind: OpKind, args: tuple, attrs: dict, name: str) -> list[Tensor]:
    """The results of a multi-result op, each read through its own ``get_output``."""
    node = bind(kind, args, attrs, name=name)
    return [bind(OpKind.GET_OUTPUT, (node,), {"index": i}, name=f"{name}/{i}")
            for i in range(len(node.node.aval))]


@implements(np.pad)
@declare.parameters("array", "pad_width", "mode", ALL)
def _pad(array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> Any:
    if callable(mode) or _traced(pad_width) or _traced(kwargs) or array.shape is None:
        return numpy_call(np.pad, (array, pad_width), {"mode": mode, **kwargs})
    widths = np.asarray(pad_width)
    if widths.dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    pairs = np.broadcast_to(widths, (array.ndim, 2))
    if (pairs < 0).any():
        raise ValueError("index can't contain negative values")
    # NumPy's own check of the mode and its keywords, on a 1-element array padded by 0
    np.pad(np.zeros((1,) * array.ndim, array.dtype), 0, mode, **kwargs)
    if array.ndim == 0:
        return _copy(array)  # no axis to pad: NumPy returns a copy
    attrs = {"pad_width": _static_attr(pairs), "mode": mode}
    attrs.update((k, _static_attr(v)) for k, v in kwargs.items())
    return bind(OpKind.PAD, (array,), attrs)


@implements(np.diagflat)
def _diagflat(v: Any, k: int = 0) -> Any:
    return bind(OpKind.DIAGFLAT, (v,), {"k": int(k)})


@implements(np.insert)
def _insert(arr: Any, obj: Any, values: Any, axis: Any = None) -> Any:
    if _traced(obj):
        return numpy_call(np.insert, (arr, obj, values), {"axis": axis})
    if not isinstance(obj, slice):
        index = np.asarray(obj)
        if index.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional "
                             "or scalar")
        obj = index.item() if index.ndim == 0 else _static_attr(index)
    return bind(OpKind.INSERT, (arr, values),
                {"obj": obj, "axis": None if axis is None else int(axis)})


@implements(np.bincount)
def _bincount(x: Any, weights: Any = None, minlength: Any = 0) -> Any:
    if _traced(minlength):
        return numpy_call(np.bincount, (x,), {"weights": weights, "minlength": minlength})
    return bind(OpKind.BINCOUNT, (x, weights), {"minlength": int(minlength)})


@implements(np.einsum)
@declare.parameters("operands", "optimize", ALL)
def _einsum(*operands: Any, optimize: Any = False, **kwargs: Any) -> Any:
    if not operands or not isinstance(operands[0], str) or _traced(kwargs):
        # the interleaved form einsum(a, [0, 1], b, [1, 2]): NumPy's own call
        return numpy_call(np.einsum, operands, {"optimize": optimize, **kwargs})
    attrs: dict[str, Any] = {"subscripts": operands[0]}
    if optimize is not False:
        attrs["optimize"] = optimize
    for key, value in kwargs.items():
        attrs[key] = np.dtype(value) if key == "dtype" and value is not None else value
    return bind(OpKind.EINSUM, tuple(operands[1:]), attrs)


@implements(np.diff)
def _diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = np._NoValue,
          append: Any = np._NoValue) -> Any:
    """NumPy's own composition: concatenate ``prepend``/``append`` (a scalar broadcast to one
    slice), then ``n`` times ``a[1:] - a[:-1]`` along ``axis`` (``!=`` for booleans)."""
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    nd = _ndim_of(a)
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
    if _ndim_of(value) == 0:
        shape = list(a.shape)
        shape[axis] = 1
        if None in shape:
            raise errors.UnsupportedOpError(
                "np.diff(..., prepend=/append=scalar) on a value with unknown dimensions "
                f"{a.shape} needs the other sizes when tracing. Fix: pass an array of the "
                "slice's shape, or give the dimensions sizes in input_signature.")
        value = np.broadcast_to(value, tuple(shape))
    return value


def _tri_mask(m: Any, k: int) -> Any:
    """``np.tri(*m.shape[-2:], k=k, dtype=bool)``: a constant where the sizes are known, else
    the same comparison of index ranges made at run time."""
    dims = tuple(m.shape[-2:])
    if not dims:
        raise TypeError("tri() missing 1 required positional argument: 'N'")
    if None not in dims:
        return np.tri(*dims, k=k, dtype=bool)
    axes = (-2, -1) if len(dims) == 2 else (-1, -1)
    sizes = [d if d is not None else bind(OpKind.DIM, (m,), {"axis": ax})
             for d, ax in zip(dims if len(dims) == 2 else dims * 2, axes)]
    rows = bind(OpKind.ARANGE, (0, sizes[0], 1), {"dtype": np.dtype(np.int64)})
    cols = bind(OpKind.ARANGE, (-k, np.subtract(sizes[1], k), 1), {"dtype": np.dtype(np.int64)})
    return np.greater_equal(rows[:, None], cols[None, :])


@implements(np.triu)
def _triu(m: Any, k: int = 0) -> Any:
    # NumPy: where(tri(N, M, k - 1), zeros(1, m.dtype), m)
    return np.where(_tri_mask(m, int(k) - 1), np.zeros(1, m.dtype), m)


@implements(np.tril)
def _tril(m: Any, k: int = 0) -> Any:
    # NumPy: where(tri(N, M, k), m, zeros(1, m.dtype))
    return np.where(_tri_mask(m, int(k)), m, np.zeros(1, m.dtype))


@implements(np.histogram)
def _histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None,
               weights: Any = None) -> Any:
    if _traced(range) or _traced(density):
        return numpy_call(np.histogram, (a,), {"bins": bins, "range": range,
                                               "density": density, "weights": weights})
    attrs: dict[str, Any] = {"range": _static_attr(range), "density": density}
    if isinstance(bins, (str, int, np.integer)) and not isinstance(bins, bool):
        if not isinstance(bins, str) and bins < 1:
            raise ValueError("`bins` must be positive, when an integer")
        attrs["bins"] = bins if isinstance(bins, str) else int(bins)
        bins = None
    return tuple(_outputs(OpKind.HISTOGRAM, (a, bins, weights), attrs, "histogram"))


@implements(np.argpartition)
def _argpartition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect") -> Any:
    if _traced(kth):
        return numpy_call(np.argpartition, (a, kth), {"axis": axis, "kind": kind})
    return bind(OpKind.ARGPARTITION, (a,), {"kth": _static_attr(kth), "kind": kind,
                                            "axis": None if axis is None else int(axis)})


@implements(np.correlate)
def _correlate(a: Any, v: Any, mode: str = "valid") -> Any:
    return bind(OpKind.CORRELATE, (a, v), {"mode": mode})


@implements(np.convolve)
def _convolve(a: Any, v: Any, mode: str = "full") -> Any:
    return bind(OpKind.CONVOLVE, (a, v), {"mode": mode})


@implements(np.vdot)
def _vdot(a: Any, b: Any) -> Any:
    return bind(OpKind.VDOT, (a, b))


@implements(np.interp)
def _interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
            period: Any = None) -> Any:
    return bind(OpKind.INTERP, (x, xp, fp, left, right, period))


@implements(np.linalg.svd)
def _svd(a: Any, full_matrices: bool = True, compute_uv: bool = True,
         hermitian: bool = False) -> Any:
    attrs = {"full_matrices": bool(full_matrices), "compute_uv": bool(compute_uv),
             "hermitian": bool(hermitian)}
    if not compute_uv:
        return bind(OpKind.SVD, (a,), attrs)
    return _result_type(np.linalg.svd)._make(_outputs(OpKind.SVD, (a,), attrs, "svd"))


@implements(np.linalg.slogdet)
def _slogdet(a: Any) -> Any:
    return _result_type(np.linalg.slogdet)._make(_outputs(OpKind.SLOGDET, (a,), {}, "slogdet"))


_RESULT_TYPES: dict[Callable, type] = {}


def _result_type(fn: Callable) -> type:
    """The namedtuple ``fn`` returns (``SVDResult``, ``SlogdetResult``), asked of NumPy."""
    cls = _RESULT_TYPES.get(fn)
    if cls is None:
        cls = _RESULT_TYPES[fn] = type(fn(np.eye(1)))
    return cls


# -- data-dependent lengths: a None dimension, sized at run time without retracing ------------

@implements(np.nonzero)
def _nonzero(a: Any) -> tuple:
    return tuple(_outputs(OpKind.NONZERO, (a,), {}, "nonzero"))


@implements(np.argwhere)
def _argwhere(a: Any) -> Any:
    return bind(OpKind.ARGWHERE, (a,))


@implements(np.flatnonzero)
def _flatnonzero(a: Any) -> Any:
    return _nonzero(np.ravel(a))[0]  # NumPy's own composition


@implements(np.compress)
def _compress(condition: Any, a: Any, axis: Any = None) -> Any:
    return bind(OpKind.COMPRESS, (condition, a), {"axis": None if axis is None else int(axis)})


@implements(np.extract)
def _extract(condition: Any, arr: Any) -> Any:
    # NumPy's own composition: take(ravel(arr), nonzero(ravel(condition))[0])
    return np.take(np.ravel(arr), np.nonzero(np.ravel(condition))[0])


@implements(np.trim_zeros)
def _trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Any:
    if filt.shape is None:
        return numpy_call(np.trim_zeros, (filt,), {"trim": trim, "axis": axis})
    np.trim_zeros(np.zeros((1,) * filt.ndim, filt.dtype), trim, axis)  # NumPy's checks
    if filt.shape == ():
        return filt  # (nothing to trim: NumPy hands the input back, in its own form)
    return bind(OpKind.TRIM_ZEROS, (filt,), {"trim": trim, "axis": _axis(axis)})


@implements(np.unique)
def _unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
            return_counts: bool = False, axis: Any = None, *, equal_nan: bool = True,
            sorted: bool = True) -> Any:
    if axis is not None:
        return numpy_call(np.unique, (ar,), {
            "return_index": return_index, "return_inverse": return_inverse,
            "return_counts": return_counts, "axis": axis, "equal_nan": equal_nan,
            "sorted": sorted})
    attrs = {"return_index": bool(return_index), "return_inverse": bool(return_inverse),
             "return_counts": bool(return_counts), "equal_nan": bool(equal_nan)}
    if not sorted:
        attrs["sorted"] = False
    if not (return_index or return_inverse or return_counts):
        return bind(OpKind.UNIQUE, (ar,), attrs)
    outputs = _outputs(OpKind.UNIQUE, (ar,), attrs, "unique")
    if return_inverse:  # NumPy reshapes it to the input's shape: a 0-d input gives a 0-d array
        mark_array(outputs[1 + bool(return_index)])
    return tuple(outputs)


# -- coverage: linalg, fft and array helpers (issue 14) ----------------------------------------
# Most of these are *compositions*: the handler does what NumPy's own Python source does, on
# traced values, so the result is built of ops the optimiser, fusion and (next) gradients
# already know, and NumPy's argument checks run at trace time on static facts (shapes, axes,
# counts). A composition needs static sizes where NumPy's code computes with them (split
# points, tile counts, an identity matrix); where it meets an unknown dimension or a traced
# static argument it raises ``_Opaque`` and the call runs as NumPy's own opaque call
# (``_composition``): slower, never wrong. The rest are one op each whose LOWER is NumPy's
# function (linalg factorizations, the fft transforms, searchsorted, lexsort, ...).
# Departures: ``average`` with weights
# does not raise ZeroDivisionError for weights that sum to zero (the check needs the data).



class _Opaque(Exception):
    """Raised inside a composition for a call it does not cover (an unknown size, a traced
    argument that must be static): the call runs as NumPy's own opaque call instead."""


def _composition(*funcs: Callable) -> Callable[[Callable], Callable]:
    """Register ``handler`` for ``funcs``; a handler raising ``_Opaque`` becomes an opaque call
    of the NumPy function that was called (nodes it made before are unused and pruned)."""
    def register(handler: Callable) -> Callable:
        for func in funcs:
            def run(*args: Any, _func: Callable = func, **kwargs: Any) -> Any:
                try:
                    return handler(*args, **kwargs)
                except _Opaque:
                    return numpy_call(_func, args, kwargs)
            run.__name__ = run.__qualname__ = handler.__name__
            run.__doc__ = handler.__doc__
            run.__wrapped__ = handler  # type: ignore[attr-defined]  (its parameters)
            HANDLERS[func] = run
        return handler
    return register


def _arr(x: Any) -> Any:
    """A traced value as it is; anything else as NumPy's ``asanyarray`` makes it (a list
    holding traced values stacked, as NumPy's array coercion builds it)."""
    if isinstance(x, (Tensor, Variable)):
        return x
    if isinstance(x, (list, tuple)) and _traced(x):
        return _coerced(x)
    return np.asanyarray(x)


def _coerced(obj: Any) -> Any:
    """A (nested) list of traced values and Python or NumPy values as one array: stacked
    level by level, Python numbers as NumPy's arrays of them (strong, as coercion takes
    them)."""
    if isinstance(obj, (list, tuple)):
        return np.stack([_coerced(item) for item in obj])
    return obj if isinstance(obj, (Tensor, Variable)) else np.asarray(obj)


def _static_shape(x: Any) -> tuple[int, ...]:
    """``x``'s shape, which the composition computes with: ``_Opaque`` if not all known."""
    shape = x.shape
    if shape is None or None in shape:
        raise _Opaque
    return tuple(shape)


def _static(value: Any) -> Any:
    """A static argument's value: constants the function made (``np.array([0, 2])`` is a
    constant node) as their arrays; ``_Opaque`` for a value known only at run time."""
    if isinstance(value, Tensor) and value.node.op is OpKind.CONSTANT:
        return value.node.attrs["value"]
    if isinstance(value, (list, tuple)) and _traced(value):
        return type(value)(_static(v) for v in value)
    if _traced(value):
        raise _Opaque
    return value


# -- split, tile, repeat, roll, rot90 and the other shape helpers

def _split_parts(ary: Any, indices_or_sections: Any, axis: int, equal: bool) -> list:
    """NumPy's ``array_split``: the division points, then one basic slice (a view) each."""
    ary = _arr(ary)
    indices_or_sections = _static(indices_or_sections)
    axis = normalize_axis_index(axis, _ndim_of(ary))
    n = _static_shape(ary)[axis]
    if isinstance(indices_or_sections, (int, np.integer)) or np.ndim(indices_or_sections) == 0:
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        if equal and n % sections:
            raise ValueError("array split does not result in an equal division")
        each, extras = divmod(n, sections)
        sizes = [0] + extras * [each + 1] + (sections - extras) * [each]
        points = np.cumsum(sizes).tolist()
    else:
        points = [0] + [int(i) for i in indices_or_sections] + [n]
    head = (slice(None),) * axis
    return [ary[head + (slice(start, stop),)] for start, stop in zip(points[:-1], points[1:])]


@_composition(np.array_split)
def _array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    return _split_parts(ary, indices_or_sections, axis, equal=False)


@_composition(np.split)
def _split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    return _split_parts(ary, indices_or_sections, axis, equal=True)


@_composition(np.hsplit)
def _hsplit(ary: Any, indices_or_sections: Any) -> list:
    nd = _ndim_of(ary)
    if nd == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return _split_parts(ary, indices_or_sections, 1 if nd > 1 else 0, equal=True)


@_composition(np.vsplit)
def _vsplit(ary: Any, indices_or_sections: Any) -> list:
    if _ndim_of(ary) < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return _split_parts(ary, indices_or_sections, 0, equal=True)


@_composition(np.dsplit)
def _dsplit(ary: Any, indices_or_sections: Any) -> list:
    if _ndim_of(ary) < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return _split_parts(ary, indices_or_sections, 2, equal=True)


@_composition(np.unstack)
def _unstack(x: Any, /, *, axis: int = 0) -> tuple:
    if _ndim_of(x) == 0:
        raise ValueError("Input array must be at least 1-d.")
    moved = np.moveaxis(x, axis, 0)
    return tuple(moved[i] for i in range(_static_shape(moved)[0]))


@_composition(np.tile)
def _tile(A: Any, reps: Any) -> Any:
    """Each axis of size ``s`` repeated ``t`` times is a broadcast of a new length-``t`` axis
    before it, then one reshape: ``(t, s) -> t * s`` (the values NumPy's tile copies)."""
    reps = _static(reps)
    tup = tuple(int(r) for r in reps) if np.ndim(reps) else (int(reps),)
    A = _arr(A)
    shape = _static_shape(A)
    shape = (1,) * max(len(tup) - len(shape), 0) + shape
    tup = (1,) * (len(shape) - len(tup)) + tup
    if all(t == 1 for t in tup):
        return np.copy(np.reshape(A, shape))
    if any(t < 0 for t in tup):
        raise ValueError("negative dimensions are not allowed")
    interleaved = tuple(d for s in shape for d in (1, s))
    big = np.broadcast_to(np.reshape(A, interleaved), tuple(d for ts in zip(tup, shape)
                                                            for d in ts))
    return np.reshape(big, tuple(s * t for s, t in zip(shape, tup)))


@_composition(np.repeat)
def _repeat(a: Any, repeats: Any, axis: Any = None) -> Any:
    """A scalar count broadcasts a new axis after ``axis`` and folds it in; counts per
    element gather ``np.repeat(arange(n), repeats)`` (NumPy's own check of the counts)."""
    repeats = _static(repeats)
    a = _arr(a)
    if axis is None:
        a, axis = np.ravel(a), 0
    shape = _static_shape(a)
    axis = normalize_axis_index(axis, len(shape))
    n = shape[axis]
    index = np.repeat(np.arange(n), repeats)  # raises NumPy's error for bad counts
    if np.ndim(repeats) == 0 or (np.size(repeats) == 1 and n != 1):
        r = int(np.asarray(repeats).reshape(-1)[0])
        wide = np.broadcast_to(np.expand_dims(a, axis + 1),
                               shape[:axis + 1] + (r,) + shape[axis + 1:])
        return np.reshape(wide, shape[:axis] + (n * r,) + shape[axis + 1:])
    return a[(slice(None),) * axis + (index,)]


@_composition(np.roll)
def _roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """NumPy's roll: per axis, the last ``shift`` items then the others (a concatenation of
    two slices); with no axis, the flattened array rolled and reshaped back."""
    shift = _static(shift)
    a = _arr(a)
    if axis is None:
        return np.reshape(_roll(np.ravel(a), shift, 0), _static_shape(a))
    shape = _static_shape(a)
    axes = normalize_axis_tuple(axis, len(shape), allow_duplicate=True)
    pairs = np.broadcast(shift, axes)
    if pairs.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = dict.fromkeys(range(len(shape)), 0)
    for sh, ax in pairs:
        shifts[ax] += int(sh)
    out = a
    for ax, sh in shifts.items():
        n = shape[ax]
        sh = sh % n if n else 0
        if sh:
            head = (slice(None),) * ax
            out = np.concatenate([out[head + (slice(n - sh, None),)],
                                  out[head + (slice(None, n - sh),)]], axis=ax)
    return np.copy(out) if out is a else out


@_composition(np.rot90)
def _rot90(m: Any, k: int = 1, axes: Any = (0, 1)) -> Any:
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    m = _arr(m)
    nd = _ndim_of(m)
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == nd:
        raise ValueError("Axes must be different.")
    if not all(-nd <= ax < nd for ax in axes):
        raise ValueError(f"Axes={axes} out of range for array of ndim={nd}.")
    k %= 4
    if k == 0:
        return m[:]
    if k == 2:
        return np.flip(np.flip(m, axes[0]), axes[1])
    order = list(range(nd))
    order[axes[0]], order[axes[1]] = order[axes[1]], order[axes[0]]
    if k == 1:
        return np.transpose(np.flip(m, axes[1]), order)
    return np.flip(np.transpose(m, order), axes[1])


@_composition(np.fliplr)
def _fliplr(m: Any) -> Any:
    if _ndim_of(m) < 2:
        raise ValueError("Input must be >= 2-d.")
    return m[:, ::-1]


@_composition(np.flipud)
def _flipud(m: Any) -> Any:
    if _ndim_of(m) < 1:
        raise ValueError("Input must be >= 1-d.")
    return m[::-1, ...]


@_composition(np.atleast_3d)
def _atleast_3d(*arys: Any) -> Any:
    out = []
    for a in arys:
        a = _arr(a)
        n = _ndim_of(a)
        out.append(np.reshape(a, (1, 1, 1)) if n == 0 else a[None, :, None] if n == 1 else
                   a[:, :, None] if n == 2 else a)
    return out[0] if len(out) == 1 else tuple(out)


@_composition(np.column_stack)
def _column_stack(tup: Any) -> Any:
    arrays = []
    for v in tup:
        v = _arr(v)
        n = _ndim_of(v)
        arrays.append(np.reshape(v, (1, 1)) if n == 0 else v[:, None] if n == 1 else v)
    return np.concatenate(arrays, 1)


@_composition(np.dstack)
def _dstack(tup: Any) -> Any:
    arrs = _atleast_3d(*tup)
    return np.concatenate([arrs] if not isinstance(arrs, tuple) else list(arrs), 2)


if hasattr(np, "row_stack"):  # NumPy's deprecated alias of vstack
    HANDLERS[np.row_stack] = HANDLERS[np.vstack]


@_composition(np.block)
def _block(arrays: Any) -> Any:
    """NumPy's block: nested lists of depth ``d`` concatenate along axis ``-d`` ... ``-1``,
    every leaf first given the result's rank by leading new axes."""
    def depth(x: Any, where: str) -> int:
        if isinstance(x, tuple):
            raise TypeError(f"{where} is a tuple. Only lists can be used to arrange blocks, "
                            "and np.block does not allow implicit conversion from tuple to "
                            "ndarray.")
        if not isinstance(x, list):
            return 0
        if not x:
            raise ValueError(f"List at {where} cannot be empty")
        depths = {depth(e, f"{where}[{i}]") for i, e in enumerate(x)}
        if len(depths) != 1:
            raise ValueError("List depths are mismatched.")
        return 1 + depths.pop()

    def leaves(x: Any) -> list:
        return [y for e in x for y in leaves(e)] if isinstance(x, list) else [_arr(x)]

    list_ndim = depth(arrays, "arrays")
    result_ndim = max([list_ndim] + [_ndim_of(a) for a in leaves(arrays)])

    def build(x: Any, level: int) -> Any:
        if level == list_ndim:
            x = _arr(x)
            return np.reshape(x, (1,) * (result_ndim - _ndim_of(x)) + _static_shape(x))
        return np.concatenate([build(e, level + 1) for e in x], axis=-(list_ndim - level))
    out = build(arrays, 0)
    return np.copy(out) if list_ndim == 0 else out


@_composition(np.matrix_transpose, np.linalg.matrix_transpose)
def _matrix_transpose(x: Any, /) -> Any:
    if _ndim_of(x) < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is "
                         f"{_ndim_of(x)}")
    return np.swapaxes(x, -1, -2)


@_composition(np.append)
def _append(arr: Any, values: Any, axis: Any = None) -> Any:
    arr = _arr(arr)
    if axis is None:
        if _ndim_of(arr) != 1:
            arr = np.ravel(arr)
        values, axis = np.ravel(values), _ndim_of(arr) - 1
    return np.concatenate((arr, _arr(values)), axis=axis)


@_composition(np.delete)
def _delete(arr: Any, obj: Any, axis: Any = None) -> Any:
    """The kept positions are NumPy's own ``delete`` of ``arange(n)`` (its checks included),
    gathered with one constant index."""
    obj = _static(obj)
    arr = _arr(arr)
    if axis is None:
        if _ndim_of(arr) != 1:
            arr = np.ravel(arr)
        axis = 0
    shape = _static_shape(arr)
    axis = normalize_axis_index(axis, len(shape))
    keep = np.delete(np.arange(shape[axis]), obj)
    return arr[(slice(None),) * axis + (keep,)]


@_composition(np.resize)
def _resize(a: Any, new_shape: Any) -> Any:
    new_shape = _static(new_shape)
    new_shape = (int(new_shape),) if np.ndim(new_shape) == 0 else tuple(
        int(d) for d in new_shape)
    a = np.ravel(_arr(a))
    if any(d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    size, new_size = _static_shape(a)[0], math.prod(new_shape)
    if size == 0 or new_size == 0:
        return np.zeros(new_shape, a.dtype)
    repeats = -(-new_size // size)
    return np.reshape(np.concatenate((a,) * repeats)[:new_size], new_shape)


@_composition(np.broadcast_arrays)
def _broadcast_arrays(*args: Any) -> tuple:
    # (NumPy makes every argument an array first: a 0-d result is a 0-d array, never a
    # scalar, and an argument already of the full shape comes back as it is)
    arrays = [_arr(a) for a in args]
    shape = np.broadcast_shapes(*[_static_shape(a) for a in arrays])
    if all(tuple(a.shape) == shape for a in arrays):
        return tuple(as_array(a) if shape == () else a for a in arrays)
    return tuple(np.broadcast_to(a, shape) for a in arrays)


@_composition(np.meshgrid)
def _meshgrid(*xi: Any, copy: bool = True, sparse: bool = False,
              indexing: str = "xy") -> tuple:
    ndim = len(xi)
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ones = (1,) * ndim
    output = [np.reshape(_arr(x), ones[:i] + (-1,) + ones[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        output[0] = np.reshape(output[0], (1, -1) + ones[2:])
        output[1] = np.reshape(output[1], (-1, 1) + ones[2:])
    if not sparse:
        output = list(_broadcast_arrays(*output))
    if copy:
        output = [np.copy(x) for x in output]
    return tuple(output)


@_composition(np.ix_)
def _ix(*args: Any) -> tuple:
    out = []
    nd = len(args)
    for k, new in enumerate(args):
        new = _arr(new)
        if _ndim_of(new) != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if isinstance(new, np.ndarray) and new.size == 0:
            new = new.astype(np.intp)
        if new.dtype == np.bool_:
            new = np.nonzero(new)[0]
        out.append(np.reshape(new, (1,) * k + (-1,) + (1,) * (nd - k - 1)))
    return tuple(out)


@_composition(np.diag_indices_from)
def _diag_indices_from(arr: Any) -> tuple:
    shape = _static_shape(arr)
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return np.diag_indices(shape[0], len(shape))


@_composition(np.tril_indices_from)
def _tril_indices_from(arr: Any, k: int = 0) -> tuple:
    shape = _static_shape(arr)
    if len(shape) != 2:
        raise ValueError("input array must be 2-d")
    return np.tril_indices(shape[-2], k=k, m=shape[-1])


@_composition(np.triu_indices_from)
def _triu_indices_from(arr: Any, k: int = 0) -> tuple:
    shape = _static_shape(arr)
    if len(shape) != 2:
        raise ValueError("input array must be 2-d")
    return np.triu_indices(shape[-2], k=k, m=shape[-1])


def _along_axis_index(shape: tuple, indices: Any, axis: int) -> tuple:
    """NumPy's ``_make_along_axis_idx``: ``indices`` on ``axis``, an arange on every other."""
    if not np.issubdtype(indices.dtype, np.integer):
        raise IndexError("`indices` must be an integer array")
    nd = _ndim_of(indices)
    index = []
    for dim, n in enumerate(shape):
        if dim == axis:
            index.append(indices)
        else:
            index.append(np.arange(n).reshape((1,) * dim + (-1,) + (1,) * (nd - dim - 1)))
    return tuple(index)


def _along_axis_target(arr: Any, indices: Any, axis: Any) -> tuple[Any, Any, int]:
    indices = _arr(indices)
    if axis is None:
        if _ndim_of(indices) != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        return np.reshape(arr, (-1,)), indices, 0
    axis = normalize_axis_index(axis, _ndim_of(arr))  # (NumPy's order of checks)
    if _ndim_of(indices) != _ndim_of(arr):
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    return arr, indices, axis


@_composition(np.take_along_axis)
def _take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> Any:
    arr, indices, axis = _along_axis_target(_arr(arr), indices, axis)
    return arr[_along_axis_index(_static_shape(arr), indices, axis)]


@implements(np.put_along_axis)
def _put_along_axis(arr: Any, indices: Any, values: Any, axis: Any) -> None:
    """Functionalized: the fancy-index write of NumPy's own code, on the traced target."""
    target = _writable_target(arr, "np.put_along_axis", None)
    view, indices, axis = _along_axis_target(target, indices, axis)
    if view.shape is None or None in view.shape:
        raise errors.UnsupportedOpError(
            "np.put_along_axis on a traced value needs its shape known when tracing "
            f"(got {view.shape}). Fix: give the dimensions sizes in input_signature.")
    view[_along_axis_index(tuple(view.shape), indices, axis)] = values


@implements(np.put)
def _put(a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    """Functionalized ``a.flat[ind] = v`` (values repeated as needed, as NumPy does)."""
    target = _writable_target(a, "np.put", None)
    ind = _arr(ind)
    if mode in ("wrap", "clip"):
        n = target.size
        if n is None:
            raise errors.UnsupportedOpError("np.put(mode=...) needs the size when tracing")
        ind = np.remainder(ind, n) if mode == "wrap" else np.clip(ind, 0, n - 1)
    elif mode != "raise":
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got '{mode}')")
    v = _arr(v)
    if ind.shape is not None and None not in ind.shape and v.size not in (None, 1) and \
            v.size != math.prod(ind.shape):
        v = np.resize(v, ind.shape)
    target.put(ind, v)


@implements(np.place)
def _place(arr: Any, mask: Any, vals: Any) -> None:
    """Functionalized ``np.place``: the k-th selected element takes ``vals[k % len(vals)]``
    (a cumulative count of the mask picks it), the others keep their value."""
    target = _writable_target(
        arr, "np.place", f"place() argument 1 must be numpy.ndarray, not numpy.{_dtype_name(arr)}")
    vals = np.ravel(_arr(vals))
    n = vals.shape[0]
    if n is None or n == 0 or target.shape is None or None in target.shape:
        raise errors.UnsupportedOpError(
            "np.place on a traced value needs a non-empty `vals` and sizes known when "
            "tracing. Fix: use arr[mask] = value, or np.where.")
    flat_mask = np.ravel(_arr(mask)).astype(bool)
    if flat_mask.shape[0] != target.size:
        raise ValueError("place: mask and data must be the same size")
    picks = np.remainder(np.cumsum(flat_mask) - 1, n)
    if not isinstance(vals, (Tensor, Variable)):
        vals = bind(OpKind.COPY, (vals,))  # a graph constant, indexed by the traced picks
    new = np.where(flat_mask, vals[picks].astype(target.dtype), np.ravel(target))
    target[...] = np.reshape(new, tuple(target.shape))


@implements(np.putmask)
def _putmask(a: Any, mask: Any, values: Any) -> None:
    """Functionalized ``np.putmask``: ``a.flat[n] = values.flat[n % len(values)]`` where
    ``mask.flat[n]`` (by position, unlike ``np.place``; cast unsafely, as NumPy does)."""
    target = _writable_target(a, "np.putmask", "putmask: first argument must be an array")
    shape = target.shape
    if shape is None or None in shape or _arr(values).shape is None or \
            None in _arr(values).shape:
        # sizes known only at run time: NumPy's own call, into a copy the array then takes
        _overwriting_call(np.putmask, "a", (target, mask, values), {})
        return None
    flat_mask = np.ravel(_arr(mask)).astype(bool)
    if flat_mask.shape[0] != target.size:
        raise ValueError("putmask: mask and data must be the same size")
    # NumPy's conversion of ``values``: an array (a 0-d one too) must cast safely; other
    # objects (Python numbers and lists, NumPy scalars) are converted to the array's dtype.
    # A 0-d argument may come as either (one trace serves both): NumPy's own call decides.
    if isinstance(values, Tensor) and values.shape == () and values.context.parent is None \
            and values.node.op is OpKind.PLACEHOLDER and values.node.attrs.get("path"):
        _overwriting_call(np.putmask, "a", (target, mask, values), {})
        return None
    if isinstance(values, np.ndarray) or (isinstance(values, Tensor) and not (
            values.shape == () and is_immutable_scalar(values))):
        if not np.can_cast(values.dtype, target.dtype, casting="safe"):
            what = "scalar" if values.shape == () else "array data"
            raise TypeError(f"Cannot cast {what} from dtype('{values.dtype}') to "
                            f"dtype('{target.dtype}') according to the rule 'safe'")
    elif not isinstance(values, Tensor):
        values = np.asarray(values, dtype=target.dtype)
    vals = np.ravel(_arr(values))
    m = vals.shape[0]
    if m == 0:
        return None  # (NumPy leaves the array as it is)
    if m != target.size:
        if not isinstance(vals, (Tensor, Variable)):
            vals = bind(OpKind.COPY, (vals,))  # a graph constant, indexed by the positions
        vals = vals[np.arange(target.size) % m]
    new = np.where(flat_mask, vals.astype(target.dtype, casting="unsafe"), np.ravel(target))
    target[...] = np.reshape(new, tuple(shape))
    return None


# -- diagonals, products and np.linalg

def _diagonal_of(a: Any, offset: int, axis1: int, axis2: int) -> Any:
    """NumPy's diagonal: both axes moved last, then one gather of ``(i, i + offset)`` (a
    copy here; NumPy hands out a read-only view)."""
    a = _arr(a)
    nd = _ndim_of(a)
    if nd < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    axis1, axis2 = normalize_axis_index(axis1, nd), normalize_axis_index(axis2, nd)
    if axis1 == axis2:
        raise ValueError("axis1 and axis2 cannot be the same")
    moved = np.moveaxis(a, (axis1, axis2), (-2, -1))
    n1, n2 = _static_shape(moved)[-2:]
    offset = int(offset)
    rows = np.arange(max(0, -offset), max(0, min(n1, n2 - offset)))
    return moved[..., rows, rows + offset]


@_composition(np.diagonal)
def _diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    return _diagonal_of(a, offset, axis1, axis2)


@_composition(np.linalg.diagonal)
def _linalg_diagonal(x: Any, /, *, offset: int = 0) -> Any:
    return _diagonal_of(x, offset, -2, -1)


@_composition(np.diag)
def _diag(v: Any, k: int = 0) -> Any:
    v = _arr(v)
    nd = _ndim_of(v)
    if nd == 1:
        return _diagflat(v, k)
    if nd == 2:
        return _diagonal_of(v, k, 0, 1)
    raise ValueError("Input must be 1- or 2-d.")


@_composition(np.trace)
def _trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> Any:
    return np.sum(_diagonal_of(a, offset, axis1, axis2), axis=-1, dtype=dtype)


@_composition(np.linalg.trace)
def _linalg_trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    return np.sum(_diagonal_of(x, offset, -2, -1), axis=-1, dtype=dtype)


@_composition(np.kron)
def _kron(a: Any, b: Any) -> Any:
    """NumPy's kron: ``a`` and ``b`` interleaved by new axes, multiplied, then reshaped."""
    b = _arr(b)
    a = _arr(a)
    ndb, nda = _ndim_of(b), _ndim_of(a)
    if nda < ndb:
        a = np.reshape(a, (1,) * (ndb - nda) + _static_shape(a))
        nda = ndb
    nd = max(nda, ndb)
    if nda == 0 or ndb == 0:
        return np.multiply(a, b)
    as_, bs = _static_shape(a), _static_shape(b)
    as_ = (1,) * max(0, ndb - nda) + as_
    bs = (1,) * max(0, nda - ndb) + bs
    a_arr = np.expand_dims(a, tuple(range(ndb - nda))) if ndb > nda else a
    b_arr = np.expand_dims(b, tuple(range(nda - ndb))) if nda > ndb else b
    a_arr = np.expand_dims(a_arr, tuple(range(1, nd * 2, 2)))
    b_arr = np.expand_dims(b_arr, tuple(range(0, nd * 2, 2)))
    return np.reshape(np.multiply(a_arr, b_arr), tuple(x * y for x, y in zip(as_, bs)))


@_composition(np.cross)
def _cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
           axis: Any = None) -> Any:
    """NumPy's cross, component by component in the promoted dtype (``a1*b2 - a2*b1``)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _arr(a), _arr(b)
    if _ndim_of(a) < 1 or _ndim_of(b) < 1:
        raise ValueError("At least one array has zero dimension")
    a = np.moveaxis(a, normalize_axis_index(axisa, _ndim_of(a), msg_prefix="axisa"), -1)
    b = np.moveaxis(b, normalize_axis_index(axisb, _ndim_of(b), msg_prefix="axisb"), -1)
    na, nb = _static_shape(a)[-1], _static_shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n"
                         "(dimension must be 2 or 3)")
    if na == 2 or nb == 2:
        import warnings  # noqa: PLC0415 - only for the deprecated 2-vectors
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=3)
    dtype = np.promote_types(a.dtype, b.dtype)
    a, b = a.astype(dtype), b.astype(dtype)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    if na == 2 and nb == 2:
        return np.subtract(np.multiply(a0, b1), np.multiply(a1, b0))
    shape = np.broadcast_shapes(_static_shape(a0), _static_shape(b0)) + (3,)
    axisc = normalize_axis_index(axisc, len(shape), msg_prefix="axisc")
    z = np.subtract(np.multiply(a0, b1), np.multiply(a1, b0))
    if na == 2:
        b2 = b[..., 2]
        x, y = np.multiply(a1, b2), np.negative(np.multiply(a0, b2))
    elif nb == 2:
        a2 = a[..., 2]
        x, y = np.negative(np.multiply(a2, b1)), np.multiply(a2, b0)
    else:
        a2, b2 = a[..., 2], b[..., 2]
        x = np.subtract(np.multiply(a1, b2), np.multiply(a2, b1))
        y = np.subtract(np.multiply(a2, b0), np.multiply(a0, b2))
    parts = [np.broadcast_to(p, shape[:-1]) for p in (x, y, z)]
    return np.moveaxis(np.stack(parts, axis=-1), -1, axisc)


@_composition(np.linalg.cross)
def _linalg_cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    x1, x2 = _arr(x1), _arr(x2)
    d1, d2 = _static_shape(x1)[axis], _static_shape(x2)[axis]
    if d1 != 3 or d2 != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but "
                         f"they are {d1} and {d2} dimensional instead.")
    return _cross(x1, x2, axis=axis)


@_composition(np.inner)
def _inner(a: Any, b: Any, /) -> Any:
    """NumPy's inner is ``dot(a, b)`` with ``b``'s last axis moved before its last but one."""
    a, b = _arr(a), _arr(b)
    if _ndim_of(a) == 0 or _ndim_of(b) == 0:
        # (NumPy sums the products from zero, as a dot does: a -0.0 product becomes +0.0)
        prod = np.multiply(a, b)
        return np.add(prod, np.zeros((), prod.dtype))
    return np.dot(a, np.moveaxis(b, -1, -2) if _ndim_of(b) >= 2 else b)


@_composition(np.tensordot, np.linalg.tensordot)
def _tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    """NumPy's tensordot: both transposed and reshaped to matrices, one ``dot``, reshaped."""
    axes = _static(axes)
    if isinstance(axes, (int, np.integer)):
        axes_a, axes_b = list(range(-int(axes), 0)), list(range(int(axes)))
    else:
        axes_a, axes_b = axes
    axes_a = list(axes_a) if np.ndim(axes_a) else [axes_a]
    axes_b = list(axes_b) if np.ndim(axes_b) else [axes_b]
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise ValueError("duplicate axes are not allowed in tensordot")
    a, b = _arr(a), _arr(b)
    as_, bs = _static_shape(a), _static_shape(b)
    nda, ndb = len(as_), len(bs)
    if len(axes_a) != len(axes_b) or any(as_[i] != bs[j] for i, j in zip(axes_a, axes_b)):
        raise ValueError("shape-mismatch for sum")
    axes_a = [i + nda if i < 0 else i for i in axes_a]
    axes_b = [j + ndb if j < 0 else j for j in axes_b]
    free_a = [k for k in range(nda) if k not in axes_a]
    free_b = [k for k in range(ndb) if k not in axes_b]
    n2 = math.prod(as_[i] for i in axes_a)
    at = np.reshape(np.transpose(a, free_a + axes_a), (math.prod(as_[i] for i in free_a), n2))
    bt = np.reshape(np.transpose(b, axes_b + free_b), (n2, math.prod(bs[i] for i in free_b)))
    return np.reshape(np.dot(at, bt), tuple(as_[i] for i in free_a) + tuple(bs[i]
                                                                          for i in free_b))


@_composition(np.linalg.matmul)
def _linalg_matmul(x1: Any, x2: Any, /) -> Any:
    return bind(OpKind.MATMUL, (x1, x2))


@_composition(np.linalg.outer)
def _linalg_outer(x1: Any, x2: Any, /) -> Any:
    x1, x2 = _arr(x1), _arr(x2)
    if _ndim_of(x1) != 1 or _ndim_of(x2) != 1:
        raise ValueError("Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={_ndim_of(x1)} and x2.ndim={_ndim_of(x2)}.")
    return _outer(x1, x2)


def _gufunc(kind: OpKind) -> Callable:
    def handler(*inputs: Any, **kwargs: Any) -> Any:
        if kwargs:  # axes=, axis=, out=, dtype=: NumPy's own gufunc call
            return ufunc_method_call(getattr(np, kind.value), "__call__", inputs, kwargs)
        return bind(kind, inputs)
    return handler


GUFUNCS.update({np.vecdot: _gufunc(OpKind.VECDOT), np.matvec: _gufunc(OpKind.MATVEC),
                np.vecmat: _gufunc(OpKind.VECMAT)})


@_composition(np.linalg.vecdot)
def _linalg_vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """NumPy's ``vecdot`` gufunc with ``axis=``: the core dimension is ``axis`` of *each*
    operand, counted from that operand's own rank, moved last before the loop dimensions
    broadcast (so operands of different rank pair their own axes, and NumPy's errors are
    NumPy's: an AxisError per operand, a ValueError for unequal core sizes)."""
    x1, x2 = _arr(x1), _arr(x2)
    if x1.shape is None or x2.shape is None:
        raise _Opaque
    if None not in x1.shape + x2.shape:  # NumPy's own checks, on zero-stride stand-ins
        np.linalg.vecdot(*(np.broadcast_to(np.zeros((), x.dtype), x.shape) for x in (x1, x2)),
                         axis=axis)
    moved = [np.moveaxis(x, normalize_axis_index(axis, _ndim_of(x)), -1) if _ndim_of(x) else x
             for x in (x1, x2)]
    return bind(OpKind.VECDOT, tuple(moved))


@_composition(np.linalg.matrix_power)
def _matrix_power(a: Any, n: Any) -> Any:
    """NumPy's matrix_power: repeated squaring with matmul (an inverse first for n < 0)."""
    a = _arr(a)
    _square_stack(a)
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0:
        shape = _static_shape(a)
        return np.broadcast_to(np.eye(shape[-2], dtype=a.dtype), shape).copy()
    if n < 0:
        a, n = _inv(a), -n
    if n == 1:
        return a
    if n == 2:
        return np.matmul(a, a)
    if n == 3:
        return np.matmul(np.matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else np.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else np.matmul(result, z)
    return result


def _square_stack(a: Any) -> None:
    shape = a.shape
    if shape is None:
        return
    if len(shape) < 2:
        raise np.linalg.LinAlgError(f"{len(shape)}-dimensional array given. Array must be at "
                                    "least two-dimensional")
    if None not in shape[-2:] and shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


@_composition(np.linalg.multi_dot)
@declare.numpy_writes_out  # (its result is not always out: NumPy's own call)
def _multi_dot(arrays: Any) -> Any:
    """NumPy's multi_dot: the cheapest order of the chain from the static shapes (its own
    cost rules), then one ``dot`` per pair in that order."""
    arrays = [_arr(a) for a in arrays]
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    if n == 2:
        return np.dot(arrays[0], arrays[1])
    first, last = _ndim_of(arrays[0]), _ndim_of(arrays[-1])
    if first == 1:
        arrays[0] = _atleast_2d(arrays[0])
    if last == 1:
        arrays[-1] = np.transpose(_atleast_2d(arrays[-1]))
    for a in arrays:
        if _ndim_of(a) != 2:
            raise np.linalg.LinAlgError(f"{_ndim_of(a)}-dimensional array given. Array must "
                                        "be two-dimensional")
    shapes = [_static_shape(a) for a in arrays]
    if n == 3:
        (a0, a1b0), (b1c0, c1) = shapes[0], shapes[2]
        A, B, C = arrays
        if a0 * b1c0 * (a1b0 + c1) < a1b0 * c1 * (a0 + b1c0):
            result = np.dot(np.dot(A, B), C)
        else:
            result = np.dot(A, np.dot(B, C))
    else:
        p = [s[0] for s in shapes] + [shapes[-1][1]]
        cost = np.zeros((n, n))
        split = np.empty((n, n), dtype=np.intp)
        for length in range(1, n):
            for i in range(n - length):
                j = i + length
                cost[i, j] = np.inf
                for k in range(i, j):
                    q = cost[i, k] + cost[k + 1, j] + p[i] * p[k + 1] * p[j + 1]
                    if q < cost[i, j]:
                        cost[i, j], split[i, j] = q, k

        def chain(i: int, j: int) -> Any:
            if i == j:
                return arrays[i]
            return np.dot(chain(i, int(split[i, j])), chain(int(split[i, j]) + 1, j))
        result = chain(0, n - 1)
    if first == 1 and last == 1:
        return result[0, 0]
    if first == 1 or last == 1:
        return np.ravel(result)
    return result


@_composition(np.linalg.tensorinv)
def _tensorinv(a: Any, ind: int = 2) -> Any:
    a = _arr(a)
    shape = _static_shape(a)
    if not shape:
        raise _Opaque  # (NumPy's own error for a 0-d input)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    inv_shape = shape[ind:] + shape[:ind]
    prod = math.prod(shape[ind:])
    return np.reshape(_inv(np.reshape(a, (prod, -1))), inv_shape)


@_composition(np.linalg.tensorsolve)
def _tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    a, b = _arr(a), _arr(b)
    an = _ndim_of(a)
    if axes is not None:
        allaxes = list(range(an))
        for k in axes:
            allaxes.remove(k)
            allaxes.insert(an, k)
        a = np.transpose(a, allaxes)
    shape = _static_shape(a)
    old_shape = shape[-(an - _ndim_of(b)):]
    prod = math.prod(old_shape)
    if math.prod(shape) != prod ** 2:
        raise np.linalg.LinAlgError("Input arrays must satisfy the requirement "
                                    "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    return np.reshape(_solve(np.reshape(a, (prod, prod)), np.ravel(b)), old_shape)


def _linalg_op(kind: OpKind, names: tuple[str, ...], result: Callable | None = None) -> Callable:
    """The handler of ``np.linalg.<kind>``: one op with the named arguments as attrs (their
    defaults bound); several results come back in NumPy's namedtuple."""
    func = getattr(np.linalg, kind.value)

    @declare.parameters(*numpy_signature(func).parameters)
    def handler(*args: Any, **kwargs: Any) -> Any:
        p = _bound(func, args, kwargs)
        statics = {k: p[k] for k in names if k in p and p[k] is not np._NoValue}
        if _traced(statics):
            return numpy_call(func, args, kwargs)
        inputs = tuple(v for k, v in p.items() if k not in names and v is not np._NoValue)
        attrs = {k: _static_attr(v) for k, v in statics.items()}
        node = bind(kind, inputs, attrs)
        if not isinstance(node.node.aval, tuple):
            return node
        outs = [bind(OpKind.GET_OUTPUT, (node,), {"index": i})
                for i in range(len(node.node.aval))]
        return tuple(outs) if result is None else result(*outs)
    handler.__name__ = f"_{kind.value}"
    return handler


def _result_class(fn: Callable, *args: Any, **kwargs: Any) -> Callable:
    cls = type(fn(*args, **kwargs))
    return (lambda *outs: cls(*outs)) if cls is not tuple else (lambda *outs: tuple(outs))


_SPD = np.eye(2) * 2.0
implements(np.linalg.cholesky)(_linalg_op(OpKind.CHOLESKY, ("upper",)))
implements(np.linalg.eigh)(_linalg_op(OpKind.EIGH, ("UPLO",),
                                      _result_class(np.linalg.eigh, _SPD)))
implements(np.linalg.eigvalsh)(_linalg_op(OpKind.EIGVALSH, ("UPLO",)))
implements(np.linalg.pinv)(_linalg_op(OpKind.PINV, ("rcond", "hermitian", "rtol")))
implements(np.linalg.lstsq)(_linalg_op(OpKind.LSTSQ, ("rcond",),
                                       _result_class(np.linalg.lstsq, _SPD, _SPD[0])))


@implements(np.linalg.qr)
def _qr(a: Any, mode: str = "reduced") -> Any:
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    node = bind(OpKind.QR, (a,), {"mode": mode})
    if mode == "r":
        return node
    q, r = (bind(OpKind.GET_OUTPUT, (node,), {"index": i}) for i in range(2))
    return (q, r) if mode == "raw" else _result_class(np.linalg.qr, _SPD)(q, r)


@_composition(np.linalg.svdvals)
def _svdvals(x: Any, /) -> Any:
    return _svd(x, compute_uv=False)


@_composition(np.linalg.matrix_rank)
def _matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:
    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    A = _arr(A)
    if _ndim_of(A) < 2:
        raise _Opaque  # NumPy answers a Python int from the data
    S = _svd(A, compute_uv=False, hermitian=hermitian)
    if tol is None:
        if rtol is None:
            rtol = max(_static_shape(A)[-2:]) * np.finfo(S.dtype).eps
        else:
            rtol = np.expand_dims(_arr(rtol), -1)
        tol = np.multiply(np.maximum.reduce(S, axis=-1, keepdims=True, initial=0), rtol)
    else:
        tol = np.expand_dims(_arr(tol), -1)
    return np.count_nonzero(np.greater(S, tol), axis=-1)


@_composition(np.linalg.cond)
def _cond(x: Any, p: Any = None) -> Any:
    """NumPy's cond: the ratio of extreme singular values, or ``norm(x) * norm(inv(x))``
    (the inverse in double precision, as NumPy computes it); NaN where the inverse failed
    but ``x`` had no NaN becomes infinity."""
    x = _arr(x)
    shape = _static_shape(x)
    if math.prod(shape) == 0 and math.prod(shape[-2:]) == 0:
        raise np.linalg.LinAlgError("cond is not defined on empty arrays")
    if p is None or p in (2, -2):
        s = _svd(x, compute_uv=False)
        r = np.divide(s[..., -1], s[..., 0]) if p == -2 else np.divide(s[..., 0], s[..., -1])
    else:
        _square_stack(x)
        complex_ = x.dtype.kind == "c"
        wide = x.astype(np.complex128 if complex_ else np.float64)
        real_t = np.empty(0, _inv_dtype(x.dtype)).real.dtype
        r = np.multiply(_norm(x, p, axis=(-2, -1)), _norm(_inv(wide), p, axis=(-2, -1)))
        r = r.astype(real_t)
    nan_mask = np.logical_and(np.isnan(r), np.logical_not(np.any(np.isnan(x), axis=(-2, -1))))
    # (NumPy ends with ``r[()]``: a 0-d condition number is a scalar, not where's 0-d array)
    return mark_scalar(np.where(nan_mask, np.array(np.inf, r.dtype), r))


def _inv_dtype(dtype: np.dtype) -> np.dtype:
    return np.linalg.inv(np.eye(1, dtype=dtype)).dtype


@implements(np.linalg.norm)
def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """NumPy's norm, order by order, on traced values (its own formulas, so its bits): the
    raveled dot product for the default 2-norm of the whole array, reductions of ``|x|`` for
    vector orders, singular values for the matrix 2-, -2- and nuclear norms."""
    x = _arr(x)
    if x.dtype.kind not in "fc":
        x = x.astype(np.float64)  # NumPy's norm computes integers in float64
    nd = _ndim_of(x)
    if axis is None and (ord is None or (ord in ("f", "fro") and nd == 2) or
                         (ord == 2 and nd == 1)):
        # NumPy ravels in memory order into a contiguous copy (a strided view such as
        # x[:, ::2].reshape(-1) would take another BLAS path): a copy of the C-order ravel
        flat = np.copy(np.reshape(x, (-1,)))
        if x.dtype.kind == "c":
            re, im = np.real(flat), np.imag(flat)
            sqnorm = np.add(np.dot(re, re), np.dot(im, im))
        else:
            sqnorm = np.dot(flat, flat)
        ret = np.sqrt(sqnorm)
        return np.reshape(ret, (1,) * nd) if keepdims else ret
    if axis is None:
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (int(axis),)
        except Exception as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
    if len(axis) == 1:
        return _vector_norm_along(x, ord, axis, keepdims)
    if len(axis) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    row, col = (normalize_axis_index(a, nd) for a in axis)
    if row == col:
        raise ValueError("Duplicate axes given.")
    ret = _matrix_norm_along(x, ord, row, col, axis)
    if keepdims:
        shape = list(_static_shape(x))
        shape[axis[0]] = shape[axis[1]] = 1
        ret = np.reshape(ret, tuple(shape))
    return ret


def _vector_norm_along(x: Any, ord: Any, axis: tuple, keepdims: bool) -> Any:
    absx = np.abs(x)
    if ord == np.inf:
        return np.maximum.reduce(absx, axis=axis, keepdims=keepdims, initial=0)
    if ord == -np.inf:
        return np.min(absx, axis=axis, keepdims=keepdims)
    if ord == 0:
        real_t = np.empty(0, x.dtype).real.dtype
        return np.sum(np.not_equal(x, 0).astype(real_t), axis=axis, keepdims=keepdims)
    if ord == 1:
        return np.add.reduce(absx, axis=axis, keepdims=keepdims)
    if ord is None or ord == 2:
        s = np.real(np.multiply(np.conj(x), x)) if x.dtype.kind == "c" else np.multiply(x, x)
        return np.sqrt(np.add.reduce(s, axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    ret = np.add.reduce(np.power(absx, ord).astype(absx.dtype), axis=axis, keepdims=keepdims)
    return np.power(ret, np.reciprocal(ord, dtype=ret.dtype)).astype(ret.dtype)


def _matrix_norm_along(x: Any, ord: Any, row: int, col: int, axis: tuple) -> Any:
    def svd_norm(reduce: Callable, **kw: Any) -> Any:
        s = _svd(np.moveaxis(x, (row, col), (-2, -1)), compute_uv=False)
        return reduce(s, axis=-1, **kw)

    absx = np.abs(x)
    if ord == 2:
        return svd_norm(np.maximum.reduce, initial=0)
    if ord == -2:
        return svd_norm(np.min)
    if ord in (1, -1):
        c = col - 1 if col > row else col
        sums = np.add.reduce(absx, axis=row)
        return np.maximum.reduce(sums, axis=c, initial=0) if ord == 1 else np.min(sums, axis=c)
    if ord in (np.inf, -np.inf):
        r = row - 1 if row > col else row
        sums = np.add.reduce(absx, axis=col)
        return np.maximum.reduce(sums, axis=r, initial=0) if ord == np.inf else \
            np.min(sums, axis=r)
    if ord in (None, "fro", "f"):
        s = np.real(np.multiply(np.conj(x), x)) if x.dtype.kind == "c" else np.multiply(x, x)
        return np.sqrt(np.add.reduce(s, axis=axis))
    if ord == "nuc":
        return svd_norm(np.add.reduce, initial=0)
    raise ValueError("Invalid norm order for matrices.")


@_composition(np.linalg.vector_norm)
def _vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    x = _arr(x)
    shape = list(_static_shape(x))
    if axis is None:
        x, along = np.ravel(x), 0
    elif isinstance(axis, tuple):
        axes = normalize_axis_tuple(axis, len(shape))
        rest = tuple(i for i in range(len(shape)) if i not in axes)
        x = np.reshape(np.transpose(x, axis + rest),
                       (math.prod([shape[i] for i in axis]), *[shape[i] for i in rest]))
        along = 0
    else:
        along = axis
    res = _norm(x, axis=along, ord=ord)
    if keepdims:
        for i in normalize_axis_tuple(range(len(shape)) if axis is None else axis, len(shape)):
            shape[i] = 1
        res = np.reshape(res, tuple(shape))
    return res


@_composition(np.linalg.matrix_norm)
def _matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    return _norm(x, axis=(-2, -1), keepdims=keepdims, ord=ord)


# -- statistics, comparisons, selection

@_composition(np.ptp)
def _ptp(a: Any, axis: Any = None, keepdims: Any = np._NoValue) -> Any:
    keep = False if keepdims is np._NoValue else bool(keepdims)
    return np.subtract(np.max(a, axis=axis, keepdims=keep), np.min(a, axis=axis, keepdims=keep))


@_composition(np.average)
def _average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
             keepdims: Any = np._NoValue) -> Any:
    a = _arr(a)
    shape = _static_shape(a)
    if axis is not None:
        axis = normalize_axis_tuple(axis, len(shape), argname="axis")
    kw = {} if keepdims is np._NoValue else {"keepdims": bool(keepdims)}
    if weights is None:
        avg = np.mean(a, axis, **kw)
        avg_shape = _static_shape(avg)
        scl = avg.dtype.type(math.prod(shape) / math.prod(avg_shape))
    else:
        wgt = _arr(weights)
        if tuple(shape) != _static_shape(wgt):
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if _static_shape(wgt) != tuple(shape[ax] for ax in axis):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            wgt = np.transpose(wgt, np.argsort(axis).tolist())
            wgt = np.reshape(wgt, tuple(s if ax in axis else 1 for ax, s in enumerate(shape)))
        if a.dtype.kind in "iub":
            result_dtype = np.result_type(a.dtype, wgt.dtype, "f8")
        else:
            result_dtype = np.result_type(a.dtype, wgt.dtype)
        scl = np.sum(wgt, axis=axis, dtype=result_dtype, **kw)
        avg = np.divide(np.sum(np.multiply(a, wgt, dtype=result_dtype), axis, **kw), scl)
        avg_shape = _static_shape(avg)
    if not returned:
        return avg
    if np.shape(scl) != avg_shape:
        scl = np.copy(np.broadcast_to(scl, avg_shape))
    return avg, scl


@_composition(np.cov)
def _cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None,
         fweights: Any = None, aweights: Any = None, *, dtype: Any = None) -> Any:
    """NumPy's cov without weights (those need the data for NumPy's checks): the rows
    centred on their means, ``dot(X, X.T.conj()) * (1 / (n - ddof))``."""
    if fweights is not None or aweights is not None:
        raise _Opaque
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = _arr(m)
    if _ndim_of(m) > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = _arr(y)
        if _ndim_of(y) > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(m.dtype, np.float64) if y is None else \
            np.result_type(m.dtype, y.dtype, np.float64)
    X = _atleast_2d(m.astype(dtype))
    if not rowvar and _ndim_of(m) != 1:
        X = np.transpose(X)
    if _static_shape(X)[0] == 0:
        return np.array([]).reshape(0, 0)
    if y is not None:
        y = _atleast_2d(y.astype(dtype))
        if not rowvar and _static_shape(y)[0] != 1:
            y = np.transpose(y)
        X = np.concatenate((X, y), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    fact = _static_shape(X)[1] - ddof
    if fact <= 0:
        import warnings  # noqa: PLC0415
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
        fact = 0.0
    if X.dtype.kind not in "fc":
        raise _Opaque  # NumPy subtracts the float means in place: its casting error
    X = np.subtract(X, np.mean(X, axis=1)[:, None]).astype(X.dtype)
    c = np.dot(X, np.conj(np.transpose(X)))
    with np.errstate(divide="ignore"):
        c = np.multiply(c, np.true_divide(1, fact)).astype(c.dtype)
    return np.squeeze(c)


@_composition(np.corrcoef)
def _corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    c = _cov(x, y, rowvar, dtype=dtype)
    if _ndim_of(c) != 2:
        return np.divide(c, c)
    if c.dtype.kind == "c":
        raise _Opaque  # NumPy clips the real and imaginary parts in place
    stddev = np.sqrt(_diagonal_of(c, 0, 0, 1))
    c = np.divide(np.divide(c, stddev[:, None]), stddev[None, :])
    return np.clip(c, -1, 1)


@_composition(np.allclose)
def _allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
              equal_nan: bool = False) -> Any:
    return _python_bool(np.all(_isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def _python_bool(value: Any) -> Any:
    """A traced 0-d bool that NumPy returns as a Python ``bool`` (``bool(res)``)."""
    return PythonNumber(value.node, value.context, bool)


def _cannot_hold_nan(dtype: np.dtype) -> bool:
    return dtype.kind not in "fcmMO"


@_composition(np.array_equal)
def _array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    a1, a2 = _arr(a1), _arr(a2)
    if _static_shape(a1) != _static_shape(a2):
        return False
    same = np.equal(a1, a2)
    if equal_nan and not (_cannot_hold_nan(a1.dtype) and _cannot_hold_nan(a2.dtype)):
        same = np.logical_or(same, np.logical_and(np.isnan(a1), np.isnan(a2)))
    return _python_bool(np.all(same))


@_composition(np.array_equiv)
def _array_equiv(a1: Any, a2: Any) -> Any:
    a1, a2 = _arr(a1), _arr(a2)
    try:
        np.broadcast_shapes(_static_shape(a1), _static_shape(a2))
    except ValueError:
        return False
    return _python_bool(np.all(np.equal(a1, a2)))


@_composition(np.select)
def _select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """NumPy's select: the default, overwritten by each choice where its condition holds,
    last condition first (so the first true one wins) — a chain of ``where``."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    choices = [c if type(c) in (int, float, complex) else _arr(c) for c in choicelist]
    choices.append(default if type(default) in (int, float, complex) else _arr(default))
    try:
        dtype = np.result_type(*[c.dtype if isinstance(c, (Tensor, Variable)) else c
                                 for c in choices])
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") \
            from None
    conds = [_arr(c) for c in condlist]
    for i, cond in enumerate(conds):
        if cond.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    shapes = [_static_shape(_arr(c)) for c in conds + choices]
    shape = np.broadcast_shapes(*shapes)
    result = np.broadcast_to(np.asarray(choices[-1]).astype(dtype) if not isinstance(
        choices[-1], (Tensor, Variable)) else choices[-1].astype(dtype), shape)
    for choice, cond in zip(choices[-2::-1], conds[::-1]):
        choice = choice.astype(dtype) if isinstance(choice, (Tensor, Variable)) else \
            np.asarray(choice).astype(dtype)
        result = np.where(cond, choice, result)
    return np.copy(np.broadcast_to(result, shape))


@_composition(np.piecewise)
@declare.parameters("x", "condlist", "funclist", "args", ALL)
def _piecewise(x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Any:
    """Constant pieces only (``y[cond] = value`` as a ``where``); functions of the selected
    elements run as NumPy's own call."""
    x = _arr(x)
    conds = [_arr(c) for c in (condlist if isinstance(condlist, list) else [condlist])]
    n = len(conds)
    if len(funclist) not in (n, n + 1):
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    if any(callable(f) or _traced(f) for f in funclist):
        raise _Opaque
    if len(funclist) == n + 1:
        others = np.logical_not(np.any(np.stack([np.broadcast_to(c, _static_shape(x))
                                                 for c in conds]), axis=0))
        conds.append(others)
    y = np.zeros_like(x)
    for cond, value in zip(conds, funclist):
        y = np.where(cond, np.asarray(value).astype(x.dtype), y)
    return y


@_composition(np.sort_complex)
def _sort_complex(a: Any) -> Any:
    b = np.sort(_arr(a))
    if b.dtype.kind == "c":
        return b
    return b.astype("F" if b.dtype.char in "bhBH" else "G" if b.dtype.char == "g" else "D")


def _cumulative(ufunc: np.ufunc) -> Callable:
    def handler(x: Any, /, *, axis: Any = None, dtype: Any = None,
                include_initial: bool = False) -> Any:
        x = _atleast_1d(_arr(x))
        if axis is None:
            if _ndim_of(x) >= 2:
                raise ValueError("For arrays which have more than one dimension ``axis`` "
                                 "argument is required.")
            axis = 0
        res = ufunc.accumulate(x, axis=axis, dtype=dtype)
        if include_initial:
            shape = list(_static_shape(res))
            shape[normalize_axis_index(axis, len(shape))] = 1
            res = np.concatenate([np.full(shape, ufunc.identity, res.dtype), res], axis=axis)
        return res
    return handler


_composition(np.cumulative_sum)(_cumulative(np.add))
_composition(np.cumulative_prod)(_cumulative(np.multiply))


@_composition(np.trapezoid)
def _trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    y = _arr(y)
    nd = _ndim_of(y)
    if x is None:
        d = dx
    else:
        x = _arr(x)
        if _ndim_of(x) == 1:
            d = np.diff(x)
            shape = [1] * nd
            shape[axis] = _static_shape(d)[0]
            d = np.reshape(d, tuple(shape))
        else:
            d = np.diff(x, axis=axis)
    upper, lower = [slice(None)] * nd, [slice(None)] * nd
    upper[axis], lower[axis] = slice(1, None), slice(None, -1)
    return np.sum(np.divide(np.multiply(d, np.add(y[tuple(upper)], y[tuple(lower)])), 2.0),
                  axis)


@_composition(np.gradient)
def _gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """NumPy's gradient for uniform spacing (scalar ``varargs``): central differences inside,
    one-sided ones of ``edge_order`` at the edges."""
    f = _arr(f)
    shape = _static_shape(f)
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
        raise _Opaque  # coordinate arrays
    if _traced(dx):
        raise _Opaque
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = f.dtype
    if otype.kind in "iub":  # NumPy: integers computed in float64 (booleans refuse `-`)
        f = f.astype(np.float64) if otype.kind != "b" else f
        otype = np.dtype(np.float64)
    elif otype.kind in "mM":
        raise _Opaque
    out_vals = []
    for ax, ax_dx in zip(axes, dx):
        if shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")

        def sl(s: slice, ax: int = ax) -> tuple:
            return (slice(None),) * ax + (s,)
        inner = np.divide(np.subtract(f[sl(slice(2, None))], f[sl(slice(None, -2))]),
                          np.multiply(2.0, ax_dx))
        if edge_order == 1:
            first = np.divide(np.subtract(f[sl(slice(1, 2))], f[sl(slice(0, 1))]), ax_dx)
            last = np.divide(np.subtract(f[sl(slice(-1, None))], f[sl(slice(-2, -1))]), ax_dx)
        else:
            a, b, c = -1.5 / ax_dx, 2.0 / ax_dx, -0.5 / ax_dx
            first = np.add(np.add(np.multiply(a, f[sl(slice(0, 1))]),
                                  np.multiply(b, f[sl(slice(1, 2))])),
                           np.multiply(c, f[sl(slice(2, 3))]))
            a, b, c = 0.5 / ax_dx, -2.0 / ax_dx, 1.5 / ax_dx
            last = np.add(np.add(np.multiply(a, f[sl(slice(-3, -2))]),
                                 np.multiply(b, f[sl(slice(-2, -1))])),
                          np.multiply(c, f[sl(slice(-1, None))]))
        out = np.concatenate([first, inner, last], axis=ax).astype(otype)
        out_vals.append(out)
    return out_vals[0] if len(axes) == 1 else tuple(out_vals)


# -- elementwise helpers NumPy writes in Python

@implements(np.real)
def _real(val: Any) -> Any:
    val = _arr(val)
    return bind(OpKind.REAL, (val,)) if val.dtype.kind == "c" else val


@implements(np.imag)
def _imag(val: Any) -> Any:
    val = _arr(val)
    if val.dtype.kind == "c" or val.shape == ():
        # (a real 0-d value's .imag: a scalar's is a scalar, a 0-d array's an array)
        return bind(OpKind.IMAG, (val,))
    return _filled(val, 0, val.dtype)


@implements(np.iscomplexobj)
def _iscomplexobj(x: Any) -> bool:
    return _arr(x).dtype.kind == "c"


@implements(np.isrealobj)
def _isrealobj(x: Any) -> bool:
    return _arr(x).dtype.kind != "c"


@implements(np.iscomplex)
def _iscomplex(x: Any) -> Any:
    x = _arr(x)
    # (NumPy: ``zeros(shape, bool)[()]`` for a real input: a NumPy scalar when 0-d)
    return np.not_equal(_imag(x), 0) if x.dtype.kind == "c" else mark_scalar(
        _filled(x, False, np.dtype(bool)))


@implements(np.isreal)
def _isreal(x: Any) -> Any:
    return np.equal(_imag(_arr(x)), 0)


@implements(np.angle)
def _angle(z: Any, deg: bool = False) -> Any:
    z = _arr(z)
    a = np.arctan2(_imag(z), _real(z)) if z.dtype.kind == "c" else np.arctan2(0, z)
    return np.multiply(a, 180 / np.pi) if deg else a


@implements(np.sinc)
def _sinc(x: Any) -> Any:
    x = np.multiply(np.pi, _arr(x))
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
        raise TypeError(f"This operation is not supported for {_arr(x).dtype} values because "
                        "it would be ambiguous.") from e


@implements(np.fix)
def _fix(x: Any) -> Any:
    return np.trunc(x)


@_composition(np.nan_to_num)
def _nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None,
                neginf: Any = None) -> Any:
    x = _arr(x)
    if x.dtype.kind not in "fc":
        # (NumPy returns ``x[()]`` of a 0-d input: a NumPy scalar)
        return x[()] if x.shape == () else np.copy(x) if copy else x
    if x.dtype.kind == "c" or _traced((nan, posinf, neginf)):
        if not copy:  # NumPy writes the real and imaginary parts into x itself
            return _overwriting_call(np.nan_to_num, "x", (x,), {
                "copy": copy, "nan": nan, "posinf": posinf, "neginf": neginf})
        raise _Opaque  # NumPy writes the real and imaginary parts in place
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


@_composition(np.ediff1d)
def _ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    to_end, to_begin = _static((to_end, to_begin))
    ary = np.ravel(_arr(ary))
    dtype = ary.dtype
    diff = np.subtract(ary[1:], ary[:-1])
    if to_begin is None and to_end is None:
        return diff
    parts = []
    for edge, name in ((to_begin, "to_begin"), (to_end, "to_end")):
        if edge is None:
            parts.append(None)
            continue
        edge = np.asanyarray(edge)
        if not np.can_cast(edge, dtype, casting="same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the "
                            "`same_kind` rule.")
        parts.append(edge.ravel().astype(dtype))
    return np.concatenate([p for p in (parts[0], diff.astype(dtype), parts[1])
                           if p is not None])


@_composition(np.unwrap)
def _unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: Any = 2 * np.pi) -> Any:
    """NumPy's unwrap: differences folded into ``[-period/2, period/2)``, the corrections
    accumulated and added back (``copyto(..., where=)`` written as ``where``)."""
    discont, period = _static((discont, period))
    p = _arr(p)
    nd = _ndim_of(p)
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
        ddmod = np.where(np.logical_and(np.equal(ddmod, low), np.greater(dd, 0)),
                         np.asarray(high).astype(ddmod.dtype), ddmod)
    correct = np.subtract(ddmod, dd)
    correct = np.where(np.less(np.abs(dd), discont), np.zeros((), correct.dtype), correct)
    up = p.astype(dtype)
    up[tuple(upper)] = np.add(p[tuple(upper)], np.cumsum(correct, axis))
    return up


# -- polynomials (coefficient arrays of static length)

@_composition(np.polyval)
def _polyval(p: Any, x: Any) -> Any:
    p = _arr(p)
    if isinstance(x, np.poly1d) or _ndim_of(p) == 0:
        raise _Opaque  # (NumPy's own error for 0-d coefficients)
    x = _arr(x)
    y = np.zeros_like(x)
    for i in range(_static_shape(p)[0] if _ndim_of(p) else 0):
        y = np.add(np.multiply(y, x), p[i])
    return y


@_composition(np.polyder)
def _polyder(p: Any, m: int = 1) -> Any:
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    if isinstance(p, np.poly1d) or _ndim_of(_arr(p)) == 0:
        raise _Opaque  # (NumPy's own error for 0-d coefficients)
    p = _arr(p)
    if m == 0:
        return p
    n = _static_shape(p)[0] - 1
    return _polyder(np.multiply(p[:-1], np.arange(n, 0, -1)), m - 1)


@_composition(np.polyint)
def _polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k = _static(k)
    if isinstance(p, np.poly1d) or _ndim_of(_arr(p)) == 0:
        raise _Opaque  # (NumPy's own error for 0-d coefficients)
    k = np.zeros(m, float) if k is None else np.atleast_1d(k)
    if len(k) == 1 and m > 1:
        k = k[0] * np.ones(m, float)
    if len(k) < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    p = _arr(p)
    if m == 0:
        return p
    y = np.concatenate((np.true_divide(p, np.arange(_static_shape(p)[0], 0, -1)),
                        np.asarray([k[0]])))
    return _polyint(y, m - 1, k=k[1:])


@_composition(np.vander)
def _vander(x: Any, N: Any = None, increasing: bool = False) -> Any:
    x = _arr(x)
    if _ndim_of(x) != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = _static_shape(x)[0]
    N = n if N is None else int(N)
    dtype = np.promote_types(x.dtype, int)
    if N == 0:
        return np.zeros((n, 0), dtype)
    cols = [np.ones((n, 1), dtype)]
    if N > 1:
        powers = np.broadcast_to(x.astype(dtype)[:, None], (n, N - 1))
        cols.append(np.multiply.accumulate(powers, axis=1))
    v = np.concatenate(cols, axis=1) if len(cols) > 1 else np.broadcast_to(cols[0], (n, 1))
    return np.copy(v) if increasing else v[:, ::-1]


@_composition(np.polyfit)
def _polyfit(x: Any, y: Any, deg: int, rcond: Any = None, full: bool = False, w: Any = None,
             cov: Any = False) -> Any:
    """NumPy's least-squares fit on scaled Vandermonde columns (no weights, no covariance;
    NumPy's rank warning needs the data and is not given)."""
    if w is not None or cov or full:
        raise _Opaque
    order = int(deg) + 1
    x, y = _arr(x), _arr(y)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if _ndim_of(x) != 1:
        raise TypeError("expected 1D vector for x")
    if _static_shape(x)[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if _ndim_of(y) < 1 or _ndim_of(y) > 2:
        raise TypeError("expected 1D or 2D array for y")
    if _static_shape(x)[0] != _static_shape(y)[0]:
        raise TypeError("expected x and y to have same length")
    x, y = np.add(x, 0.0), np.add(y, 0.0)
    if rcond is None:
        rcond = _static_shape(x)[0] * np.finfo(x.dtype).eps
    lhs = _vander(x, order)
    rhs = y
    scale = np.sqrt(np.sum(np.multiply(lhs, lhs), axis=0))
    lhs = np.divide(lhs, scale)
    c = np.linalg.lstsq(lhs, rhs, rcond)[0]
    return np.transpose(np.divide(np.transpose(c), scale))


_NUMPY_BODIES = (np.polyadd, np.polysub, np.union1d, np.unique_values, np.unique_counts,
                 np.unique_inverse, np.unique_all, np.rollaxis)
# NumPy's own Python bodies, unchanged: every call in them dispatches back here (np.unique,
# np.concatenate, np.atleast_1d, np.moveaxis, ...), so they trace as those ops.
for _func in _NUMPY_BODIES:
    HANDLERS[_func] = _func._implementation  # type: ignore[attr-defined]


# -- sets, search and bits: ops whose LOWER is NumPy's function

@implements(np.isin)
def _isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
          *, kind: Any = None) -> Any:
    attrs: dict[str, Any] = {"invert": bool(invert)}
    if assume_unique:
        attrs["assume_unique"] = True
    if kind is not None:
        attrs["kind"] = kind
    return bind(OpKind.ISIN, (element, test_elements), attrs)


@_composition(np.setdiff1d)
def _setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Any:
    ar1 = np.ravel(_arr(ar1)) if assume_unique else _unique(_arr(ar1))
    if not assume_unique:
        ar2 = _unique(_arr(ar2))
    return ar1[_isin(ar1, ar2, assume_unique=True, invert=True)]


@_composition(np.intersect1d)
def _intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False,
                 return_indices: bool = False) -> Any:
    if return_indices:
        raise _Opaque
    ar1, ar2 = _arr(ar1), _arr(ar2)
    if assume_unique:
        ar1, ar2 = np.ravel(ar1), np.ravel(ar2)
    else:
        ar1, ar2 = _unique(ar1), _unique(ar2)
    aux = np.sort(np.concatenate((ar1, ar2)))
    return aux[:-1][np.equal(aux[1:], aux[:-1])]


@_composition(np.setxor1d)
def _setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Any:
    """NumPy's setxor1d: the sorted values that differ from both neighbours (written so an
    empty result needs no length check: the edge flags are ``aux[:1]``-sized)."""
    if not assume_unique:
        ar1, ar2 = _unique(_arr(ar1)), _unique(_arr(ar2))
    aux = np.sort(np.concatenate((ar1, ar2), axis=None))
    edge = np.ones_like(aux[:1], dtype=bool)
    differs = np.not_equal(aux[1:], aux[:-1])
    keep = np.logical_and(np.concatenate((edge, differs)), np.concatenate((differs, edge)))
    return aux[keep]


@implements(np.searchsorted)
def _searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got '{side}')")
    return bind(OpKind.SEARCHSORTED, (a, v, sorter), {"side": side})


@implements(np.digitize)
def _digitize(x: Any, bins: Any, right: bool = False) -> Any:
    return bind(OpKind.DIGITIZE, (x, bins), {"right": bool(right)})


@implements(np.partition)
def _partition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect") -> Any:
    if _traced(kth):
        return numpy_call(np.partition, (a, kth), {"axis": axis, "kind": kind})
    return bind(OpKind.PARTITION, (a,), {"kth": _static_attr(kth), "kind": kind,
                                         "axis": None if axis is None else int(axis)})


@implements(np.lexsort)
def _lexsort(keys: Any, axis: int = -1) -> Any:
    if isinstance(keys, (Tensor, Variable, np.ndarray)):  # one array: its rows are the keys
        return bind(OpKind.LEXSORT, (keys,), {"axis": int(axis), "array": True})
    return bind(OpKind.LEXSORT, tuple(_arr(k) for k in keys), {"axis": int(axis)})


@_composition(np.choose)
def _choose(a: Any, choices: Any, mode: str = "raise") -> Any:
    """``choices[a]`` element by element: the choices broadcast and stacked, one gather along
    the new axis (``wrap``/``clip`` fold the index first; ``raise`` checks at run time, as
    indexing does)."""
    if mode != "wrap" and mode != "clip":
        raise _Opaque  # NumPy's own check of every index, with its error
    choices = [_arr(c) for c in choices]
    a = _arr(a)
    n = len(choices)
    index = np.remainder(a, n) if mode == "wrap" else np.clip(a, 0, n - 1)
    shape = np.broadcast_shapes(_static_shape(a), *[_static_shape(c) for c in choices])
    dtype = np.result_type(*[c.dtype for c in choices])
    stacked = np.stack([np.broadcast_to(c.astype(dtype), shape) for c in choices])
    return _take_along_axis(stacked, np.broadcast_to(index, shape)[None], 0)[0]


@implements(np.ravel_multi_index)
def _ravel_multi_index(multi_index: Any, dims: Any, mode: Any = "raise", order: str = "C") -> Any:
    if _traced(dims):
        return numpy_call(np.ravel_multi_index, (multi_index, dims),
                          {"mode": mode, "order": order})
    attrs = {"dims": _static_attr(np.atleast_1d(dims)), "mode": _static_attr(mode),
             "order": order}
    return bind(OpKind.RAVEL_MULTI_INDEX, tuple(_arr(i) for i in multi_index), attrs)


@implements(np.unravel_index)
def _unravel_index(indices: Any, shape: Any, order: str = "C") -> tuple:
    if _traced(shape):
        return numpy_call(np.unravel_index, (indices, shape), {"order": order})
    attrs = {"shape": _static_attr(np.atleast_1d(shape)), "order": order}
    return tuple(_outputs(OpKind.UNRAVEL_INDEX, (_arr(indices),), attrs, "unravel_index"))


@implements(np.packbits)
def _packbits(a: Any, /, axis: Any = None, bitorder: str = "big") -> Any:
    return bind(OpKind.PACKBITS, (a,), {"axis": axis, "bitorder": bitorder})


@implements(np.unpackbits)
def _unpackbits(a: Any, /, axis: Any = None, count: Any = None, bitorder: str = "big") -> Any:
    return bind(OpKind.UNPACKBITS, (a,), {"axis": axis, "count": count, "bitorder": bitorder})


@_composition(np.histogram_bin_edges)
def _histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Any:
    return _histogram(a, bins, range, weights=weights)[1]


@_composition(np.apply_over_axes)
def _apply_over_axes(func: Callable, a: Any, axes: Any) -> Any:
    val = _arr(a)
    N = _ndim_of(val)
    for axis in ((axes,) if np.ndim(axes) == 0 else axes):
        axis = axis + N if axis < 0 else axis
        res = func(val, axis)
        if _ndim_of(res) == _ndim_of(val):
            val = res
        else:
            res = np.expand_dims(res, axis)
            if _ndim_of(res) != _ndim_of(val):
                raise ValueError("function is not returning an array of the correct shape")
            val = res
    return val


#: At most this many 1-D slices are traced one by one by ``np.apply_along_axis`` (NumPy
#: loops over them in Python too); more run as NumPy's own call.
APPLY_ALONG_AXIS_SLICES = 1024


@_composition(np.apply_along_axis)
@declare.parameters("func1d", "axis", "arr", "args", ALL)
def _apply_along_axis(func1d: Callable, axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    arr = _arr(arr)
    shape = _static_shape(arr)
    axis = normalize_axis_index(axis, len(shape))
    view = np.moveaxis(arr, axis, -1)
    batch = shape[:axis] + shape[axis + 1:]
    if math.prod(batch) > APPLY_ALONG_AXIS_SLICES:
        raise _Opaque
    indices = list(np.ndindex(*batch))
    if not indices:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = [_arr(func1d(view[ind + (Ellipsis,)], *args, **kwargs)) for ind in indices]
    first = results[0]
    res_shape = _static_shape(first)
    stacked = np.reshape(np.stack([r.astype(first.dtype) for r in results]),
                         batch + res_shape)
    nd = len(batch) + len(res_shape)
    dims = list(range(nd))
    return np.transpose(stacked, dims[:axis] + dims[len(batch):] + dims[axis:len(batch)])


@_composition(np.einsum_path)
def _einsum_path(*operands: Any, optimize: Any = "greedy", einsum_call: bool = False) -> Any:
    """Only shapes decide the path: NumPy's own on zero-strided stand-ins (no data)."""
    stand_ins = [np.broadcast_to(np.zeros((), o.dtype), _static_shape(o))
                 if isinstance(o, (Tensor, Variable)) else o for o in operands]
    return np.einsum_path(*stand_ins, optimize=optimize, einsum_call=einsum_call)


# -- np.fft: one ``fft`` op per call, the transform named in its attrs

def _fft_handler(name: str) -> Callable:
    func = getattr(np.fft, name)

    # (out= is NumPy's: it normalizes inside the buffer it writes, other bits than a new
    # array; the call then runs as NumPy's own, writing into out)
    @declare.numpy_writes_out
    @declare.parameters(*numpy_signature(func).parameters.keys() - {"out"})
    def handler(*args: Any, **kwargs: Any) -> Any:
        p = _bound(func, args, kwargs)
        p.pop("out", None)
        a = p.pop("a")
        if _traced(p):
            return numpy_call(func, args, kwargs)
        # fft2 and friends with an explicit ``axes=None`` transform every axis (NumPy's
        # ``_raw_fftnd``), not their default (-2, -1): they are then the n-d transform
        attrs = {"transform": name[:-1] + "n" if name.endswith("2") and "axes" in p
                 and p["axes"] is None else name}
        attrs.update((k, _static_attr(v)) for k, v in p.items()
                     if v is not None and v is not np._NoValue)
        return mark_array(bind(OpKind.FFT, (a,), attrs))  # (a transform builds an array)
    handler.__name__ = f"_fft_{name}"
    return handler


for _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn",
              "irfftn", "fft2", "ifft2", "rfft2", "irfft2"):
    implements(getattr(np.fft, _name))(_fft_handler(_name))


@_composition(np.fft.fftshift)
def _fftshift(x: Any, axes: Any = None) -> Any:
    x = _arr(x)
    shape = _static_shape(x)
    if not shape:
        raise _Opaque  # (NumPy's own error for a 0-d input)
    if axes is None:
        axes = tuple(range(len(shape)))
        shift: Any = [d // 2 for d in shape]
    elif isinstance(axes, (int, np.integer)):
        shift = shape[axes] // 2
    else:
        shift = [shape[ax] // 2 for ax in axes]
    return _roll(x, shift, axes)


@_composition(np.fft.ifftshift)
def _ifftshift(x: Any, axes: Any = None) -> Any:
    x = _arr(x)
    shape = _static_shape(x)
    if not shape:
        raise _Opaque  # (NumPy's own error for a 0-d input)
    if axes is None:
        axes = tuple(range(len(shape)))
        shift: Any = [-(d // 2) for d in shape]
    elif isinstance(axes, (int, np.integer)):
        shift = -(shape[axes] // 2)
    else:
        shift = [-(shape[ax] // 2) for ax in axes]
    return _roll(x, shift, axes)


def supported_numpy_functions() -> list[str]:
    """Names of the NumPy functions (beyond ufuncs and operators) traced into graphs."""
    return sorted({f"{getattr(f, '__module__', 'numpy')}.{f.__name__}" for f in HANDLERS})
