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
    if len(xy) != 2:  # data-dependent indices: NumPy's own call, sizes found at run time
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


def supported_numpy_functions() -> list[str]:
    """Names of the NumPy functions (beyond ufuncs and operators) traced into graphs."""
    return sorted({f"{getattr(f, '__module__', 'numpy')}.{f.__name__}" for f in HANDLERS})
