"""NumPy functions on traced values: the ``__array_function__`` handler table.

``HANDLERS[np.func]`` records ``np.func`` applied to traced values. Most map onto one graph op;
a few are compositions of ops, exactly as NumPy itself composes them (``np.round`` is
multiply-rint-divide, ``np.isclose`` is a comparison of differences). Anything not listed raises
:class:`~kernel_ext.errors.UnsupportedOpError` naming the function.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from .. import errors
from ..ir import UFUNC_REDUCTIONS, OpKind
from .context import bind
from .opaque import numpy_call, ufunc_method_call
from .tensor import HANDLERS, UFUNC_METHODS, Tensor, build_template
from .variables import Variable


def implements(*funcs: Callable) -> Callable[[Callable], Callable]:
    def register(handler: Callable) -> Callable:
        for f in funcs:
            HANDLERS[f] = handler
        return handler
    return register


def _no(name: str, value: Any, default: Any = None) -> None:
    if value is not default and not (value is np._NoValue):  # type: ignore[attr-defined]
        raise errors.UnsupportedOpError(
            f"the argument {name}= is not supported on traced values (got {value!r}). Fix: "
            "leave it at its default and combine with np.where/astype.")


def _axis(axis: Any) -> Any:
    if axis is None or isinstance(axis, (int, np.integer)):
        return None if axis is None else int(axis)
    return tuple(int(a) for a in axis)


def _reduction(kind: OpKind, with_dtype: bool = True, with_ddof: bool = False) -> Callable:
    def handler(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                keepdims: Any = False, *rest: Any, ddof: Any = 0, where: Any = np._NoValue,
                initial: Any = np._NoValue, **kw: Any) -> Any:
        _no("out", out)
        _no("where", where, np._NoValue)
        _no("initial", initial, np._NoValue)
        attrs: dict[str, Any] = {"axis": _axis(axis), "keepdims": bool(keepdims)}
        if with_dtype and dtype is not None:
            attrs["dtype"] = np.dtype(dtype)
        if with_ddof and ddof:
            attrs["ddof"] = ddof
        return bind(kind, (a,), attrs)
    return handler


implements(np.sum)(_reduction(OpKind.SUM))
implements(np.prod)(_reduction(OpKind.PROD))
implements(np.mean)(_reduction(OpKind.MEAN))
implements(np.std)(_reduction(OpKind.STD, with_ddof=True))
implements(np.var)(_reduction(OpKind.VAR, with_ddof=True))


def _minmax(kind: OpKind) -> Callable:
    def handler(a: Any, axis: Any = None, out: Any = None, keepdims: Any = False,
                initial: Any = np._NoValue, where: Any = np._NoValue) -> Any:
        _no("out", out)
        _no("initial", initial, np._NoValue)
        _no("where", where, np._NoValue)
        return bind(kind, (a,), {"axis": _axis(axis), "keepdims": bool(keepdims)})
    return handler


implements(np.max, np.amax)(_minmax(OpKind.MAX))
implements(np.min, np.amin)(_minmax(OpKind.MIN))


def _logical(kind: OpKind) -> Callable:
    def handler(a: Any, axis: Any = None, out: Any = None, keepdims: Any = False, *,
                where: Any = np._NoValue) -> Any:
        _no("out", out)
        _no("where", where, np._NoValue)
        return bind(kind, (a,), {"axis": _axis(axis), "keepdims": bool(keepdims)})
    return handler


implements(np.any)(_logical(OpKind.ANY))
implements(np.all)(_logical(OpKind.ALL))


def _arg(kind: OpKind) -> Callable:
    def handler(a: Any, axis: Any = None, out: Any = None, *, keepdims: Any = False) -> Any:
        _no("out", out)
        return bind(kind, (a,), {"axis": _axis(axis), "keepdims": bool(keepdims)})
    return handler


implements(np.argmax)(_arg(OpKind.ARGMAX))
implements(np.argmin)(_arg(OpKind.ARGMIN))


def _scan(kind: OpKind) -> Callable:
    def handler(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        _no("out", out)
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
def _reshape(a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None,
             copy: Any = None) -> Any:
    if order != "C":
        raise errors.UnsupportedOpError(f"np.reshape(order={order!r}) is not supported on "
                                        "traced values; only order='C'.")
    return bind(OpKind.RESHAPE, (a,), {"shape": _shape_arg(shape if shape is not None
                                                            else newshape)})


@implements(np.ravel)
def _ravel(a: Any, order: str = "C") -> Any:
    return _reshape(a, (-1,), order)


@implements(np.transpose)
def _transpose(a: Any, axes: Any = None) -> Any:
    return bind(OpKind.TRANSPOSE, (a,), {"axes": None if axes is None else tuple(axes)})


def _ndim_of(a: Any) -> int:
    return a.ndim if isinstance(a, Tensor) else len(np.shape(a))


@implements(np.swapaxes)
def _swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    n = _ndim_of(a)
    axes = list(range(n))
    i, j = axis1 % n, axis2 % n
    axes[i], axes[j] = axes[j], axes[i]
    return _transpose(a, axes)


@implements(np.moveaxis)
def _moveaxis(a: Any, source: Any, destination: Any) -> Any:
    n = _ndim_of(a)
    src = [s % n for s in ([source] if isinstance(source, int) else source)]
    dst = [d % n for d in ([destination] if isinstance(destination, int) else destination)]
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
def _broadcast_to(array: Any, shape: Any, subok: bool = False) -> Any:
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
def _concatenate(arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None,
                 casting: str = "same_kind") -> Any:
    _no("out", out)
    attrs: dict[str, Any] = {"axis": None if axis is None else int(axis)}
    if dtype is not None:
        attrs["dtype"] = np.dtype(dtype)
    return bind(OpKind.CONCATENATE, tuple(arrays), attrs)


@implements(np.stack)
def _stack(arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None,
           casting: str = "same_kind") -> Any:
    _no("out", out)
    _no("dtype", dtype)
    return bind(OpKind.STACK, tuple(arrays), {"axis": int(axis)})


@implements(np.vstack)
def _vstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    return _concatenate([_atleast_2d(a) for a in tup], axis=0, dtype=dtype)


@implements(np.hstack)
def _hstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    arrs = [_atleast_1d(a) for a in tup]
    return _concatenate(arrs, axis=0 if _ndim_of(arrs[0]) == 1 else 1, dtype=dtype)


@implements(np.flip)
def _flip(m: Any, axis: Any = None) -> Any:
    return bind(OpKind.FLIP, (m,), {"axis": _axis(axis)})


@implements(np.copy)
def _copy(a: Any, order: str = "K", subok: bool = False) -> Any:
    return bind(OpKind.COPY, (a,))


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
def _where(condition: Any, *xy: Any) -> Any:
    if not xy:  # np.where(c) is np.nonzero(c): indices of a data-dependent length
        return _nonzero(condition)
    if len(xy) != 2:  # NumPy's own error
        return numpy_call(np.where, (condition, *xy), {})
    return bind(OpKind.WHERE, (condition, *xy))


@implements(np.clip)
def _clip(a: Any, a_min: Any = np._NoValue, a_max: Any = np._NoValue, out: Any = None,
          *, min: Any = np._NoValue, max: Any = np._NoValue, **kwargs: Any) -> Any:
    _no("out", out)
    lo = min if min is not np._NoValue else (None if a_min is np._NoValue else a_min)
    hi = max if max is not np._NoValue else (None if a_max is np._NoValue else a_max)
    return bind(OpKind.CLIP, (a, lo, hi))


@implements(np.astype)
def _astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    return bind(OpKind.CAST, (x,), {"dtype": np.dtype(dtype)})


@implements(np.round, np.around)
def _round(a: Any, decimals: int = 0, out: Any = None) -> Any:
    _no("out", out)
    if decimals == 0:
        return np.rint(a)
    scale = 10.0 ** decimals
    return np.divide(np.rint(np.multiply(a, scale)), scale)


def _like(fill: Any) -> Callable:
    def handler(a: Any, dtype: Any = None, order: str = "K", subok: bool = True,
                shape: Any = None, *, device: Any = None) -> Any:
        _no("shape", shape)
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


implements(np.zeros_like, np.empty_like)(_like(0))
implements(np.ones_like)(_like(1))


@implements(np.full_like)
def _full_like(a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True,
               shape: Any = None, *, device: Any = None) -> Any:
    _no("shape", shape)
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
def _take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    _no("out", out)
    if mode != "raise":
        raise errors.UnsupportedOpError(f"np.take(mode={mode!r}) is not supported on traced "
                                        "values; only mode='raise'.")
    if axis is None:
        return _ravel(a)[indices]
    n = _ndim_of(a)
    return a[(slice(None),) * (axis % n) + (indices,)]


# -- linear algebra ---------------------------------------------------------------------------

@implements(np.dot)
def _dot(a: Any, b: Any, out: Any = None) -> Any:
    _no("out", out)
    return bind(OpKind.DOT, (a, b))


@implements(np.outer)
def _outer(a: Any, b: Any, out: Any = None) -> Any:
    _no("out", out)
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


@implements(np.linalg.norm)
def _norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    if ord not in (None, 2, "fro") or (ord == 2 and (axis is None and x.ndim != 1)):
        # Other norms (inf, 1, nuclear, spectral) are NumPy's own call, run at each call.
        return numpy_call(np.linalg.norm, (x,), {"ord": ord, "axis": axis,
                                                 "keepdims": keepdims})
    if x.dtype.kind not in "fc":
        x = x.astype(np.float64)  # NumPy's norm computes integers in float64
    if x.dtype.kind == "f" and axis is None and x.ndim is not None and (
            ord is None or ord == "fro" and x.ndim == 2 or ord == 2 and x.ndim == 1):
        # NumPy's own formula here: the square root of a dot product of the raveled array
        # (a BLAS dot rounds differently from a pairwise sum of squares)
        flat = np.reshape(x, (-1,))
        norm = np.sqrt(np.dot(flat, flat))
        return np.reshape(norm, (1,) * x.ndim) if keepdims else norm
    mag = np.abs(x)
    return np.sqrt(np.sum(np.multiply(mag, mag), axis=axis, keepdims=keepdims))


# -- sorting ----------------------------------------------------------------------------------

@implements(np.sort)
def _sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
          stable: Any = None) -> Any:
    _no("order", order)
    return bind(OpKind.SORT, (a,), {"axis": None if axis is None else int(axis)})


@implements(np.argsort)
def _argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
             stable: Any = None) -> Any:
    _no("order", order)
    return bind(OpKind.ARGSORT, (a,), {"axis": None if axis is None else int(axis)})


# -- functions that write into an argument: functionalized (the target takes the new value) --

def _writable_target(dst: Any, what: str) -> Tensor:
    """The traced value ``dst`` stands for (a plain array is promoted, see TraceContext)."""
    if isinstance(dst, Tensor):
        return dst
    if isinstance(dst, np.ndarray):
        from .state import current_context
        ctx = current_context()
        if ctx is not None:
            return ctx.promote(dst)
    raise TypeError(f"{what} needs an array to write into, got {type(dst).__name__}")


@implements(np.copyto)
def _copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    target = _writable_target(dst, "np.copyto")
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
    target = _writable_target(a, "np.fill_diagonal")
    shape = target.shape
    if shape is None or len(shape) < 2 or any(d is None for d in shape):
        raise errors.UnsupportedOpError(
            "np.fill_diagonal on a traced value needs its shape known when tracing "
            f"(got {shape}). Fix: give the dimensions sizes in input_signature.")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    n = min(shape) if len(shape) > 2 or not wrap else shape[1]
    if len(shape) == 2 and wrap and shape[0] > shape[1]:
        # NumPy's wrap: the diagonal restarts every n + 1 rows of a tall matrix
        rows = np.arange(0, shape[0])
        rows = rows[(rows % (shape[1] + 1)) < shape[1]]
        cols = rows % (shape[1] + 1)
        index = (rows, cols)
    else:
        idx = np.arange(n)
        index = (idx,) * len(shape)
    count = len(index[0])
    vals = np.resize(np.asarray(val), count) if not isinstance(val, Tensor) else \
        np.broadcast_to(val, (count,)) if val.shape in ((), (1,)) else val
    target[index] = vals


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
        return bind(kind, (p["a"],), attrs)
    handler.__name__ = f"_{kind.value}"
    return handler


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
    target = _writable_target(inputs[0], f"np.{ufunc.__name__}.at")
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
def _einsum(*operands: Any, out: Any = None, optimize: Any = False, **kwargs: Any) -> Any:
    _no("out", out)
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
def _argpartition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect",
                  order: Any = None) -> Any:
    _no("order", order)
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
def _compress(condition: Any, a: Any, axis: Any = None, out: Any = None) -> Any:
    _no("out", out)
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
    return tuple(_outputs(OpKind.UNIQUE, (ar,), attrs, "unique"))


def supported_numpy_functions() -> list[str]:
    """Names of the NumPy functions (beyond ufuncs and operators) traced into graphs."""
    return sorted({f"{getattr(f, '__module__', 'numpy')}.{f.__name__}" for f in HANDLERS})
