"""VJP rules of gufuncs, array helpers (copies of elements) and order statistics.

Most are short: ``degrees``/``radians`` scale, ``modf``/``frexp``/``divmod``/``ldexp`` split or
scale a float. Ops that copy elements (``diagflat``, ``insert``, ``compress``, ``unique``'s
values, ``partition``) route each output's cotangent back to the element it copies, found by
applying NumPy's own function to an iota array (the positions) where the copy pattern is
static, and otherwise recomputed from the forward result. Ops with a natural decomposition into
ops with rules (``interp`` as a gather and a lerp, ``percentile``/``quantile``/``nanmedian`` as
a sort and a lerp, ``nancumprod``) are differentiated by composition
(:func:`~kernel_ext.autodiff.decompositions.composed`).
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from ..ir import OpKind
from ..ir.abstract import normalize_axes
from ..trace import Tensor, bind
from .decompositions import composed, outputs, route_along_axis
from .rules import NOTES, VJP, Cotangent, Primal, rule, unbroadcast

K = OpKind


def static_shape(x: Any, what: str) -> tuple:
    shape = x.shape if isinstance(x, Tensor) else np.shape(x)
    if shape is None or None in shape:
        raise NotImplementedError(
            f"the gradient of {what} needs static shapes; give the "
            "arguments static shapes in input_signature"
        )
    return tuple(shape)


def _sum_into(positions: np.ndarray, g: Any, size: int, shape: tuple) -> Any:
    """``zeros(shape)`` (flat ``size``) plus each element of ``g`` at its flat position in
    ``positions`` (same shape as ``g``; ``-1``: nowhere)."""
    keep = positions >= 0
    picked = g if keep.all() else g[keep]
    where = positions if keep.all() else positions[keep]
    sums = np.bincount(np.reshape(where, (-1,)), weights=np.reshape(picked, (-1,)), minlength=size)
    return np.reshape(sums, shape).astype(g.dtype)


# -- elementwise ---------------------------------------------------------------------------------

VJP.add(K.DEGREES, VJP[K.RAD2DEG])
VJP.add(K.RADIANS, VJP[K.DEG2RAD])


@rule(K.NEXTAFTER)
def _nextafter(p: Primal, g: Any) -> list[Cotangent]:
    """``nextafter(x, y)`` moves ``x`` by one ulp: derivative 1 in ``x``, 0 in ``y``."""
    return [g if isinstance(p.args[0], Tensor) else None, None]


@rule(K.LDEXP)
def _ldexp(p: Primal, g: Any) -> list[Cotangent]:
    """``x * 2**n`` (``n`` an integer)."""
    _x, n = p.args
    return [lambda: unbroadcast(g * np.ldexp(1.0, n), p.shape(0)), None]


@rule(K.MODF)
def _modf(p: Primal, gs: Any) -> list[Cotangent]:
    """``x = fractional + integral``: the fractional part moves with ``x``, the integral part
    is piecewise constant."""
    return [gs[0]]


@rule(K.FREXP)
def _frexp(p: Primal, gs: Any) -> list[Cotangent]:
    """``x = mantissa * 2**exponent`` with a piecewise-constant exponent."""
    if gs[0] is None:
        return [None]
    exponent = outputs(p)[1]
    return [lambda: gs[0] * np.ldexp(1.0, -exponent)]


@rule(K.DIVMOD)
def _divmod(p: Primal, gs: Any) -> list[Cotangent]:
    """The quotient is ``floor_divide``'s (piecewise constant), the remainder ``remainder``'s."""
    g = gs[1]
    if g is None:
        return [None, None]
    a, b = p.args
    return [
        (lambda: unbroadcast(g, p.shape(0))) if isinstance(a, Tensor) else None,
        (lambda: unbroadcast(-g * np.floor(a / b), p.shape(1))) if isinstance(b, Tensor) else None,
    ]


# -- copies ------------------------------------------------------------------------------------


@rule(K.DIAGFLAT)
def _diagflat(p: Primal, g: Any) -> list[Cotangent]:
    v = p.args[0]
    shape = static_shape(v, "np.diagflat")
    offset = p.attrs.get("k", 0)
    size = math.prod(shape)
    rows = np.arange(size) + max(-offset, 0)
    cols = np.arange(size) + max(offset, 0)
    return [lambda: np.reshape(g[rows, cols], shape)]


def _insert_positions(obj: Any, axis: Any, arr_iota: np.ndarray, values: Any) -> np.ndarray:
    obj = list(obj) if isinstance(obj, tuple) else obj
    return np.insert(arr_iota, obj, values, axis=axis)


@rule(K.INSERT)
def _insert(p: Primal, g: Any) -> list[Cotangent]:
    """Each output element comes from ``arr`` or from ``values`` (broadcast): NumPy's insert
    of iota arrays names its source."""
    arr, values = p.args
    obj, axis = p.attrs["obj"], p.attrs.get("axis")
    ashape = static_shape(arr, "np.insert")
    vshape = static_shape(values, "np.insert")
    asize, vsize = math.prod(ashape), math.prod(vshape)

    def darr() -> Any:
        where = _insert_positions(obj, axis, np.arange(asize).reshape(ashape), np.full(vshape, -1))
        return _sum_into(where, g, asize, ashape)

    def dvalues() -> Any:
        where = _insert_positions(obj, axis, np.full(ashape, -1), np.arange(vsize).reshape(vshape))
        return _sum_into(where, g, vsize, vshape)

    return [
        darr if isinstance(arr, Tensor) else None,
        dvalues if isinstance(values, Tensor) else None,
    ]


@rule(K.BINCOUNT)
def _bincount(p: Primal, g: Any) -> list[Cotangent]:
    """``out[i] = sum of weights[x == i]``: each weight gets ``g[x]``."""
    x, weights = p.args
    return [None, (lambda: g[x]) if isinstance(weights, Tensor) else None]


@rule(K.COMPRESS)
def _compress(p: Primal, g: Any) -> list[Cotangent]:
    """``a`` at the true positions of ``condition`` (shorter conditions padded with false)."""
    axis = p.attrs.get("axis")

    def fn(condition: Any, a: Any) -> Any:
        flat = a if axis is not None else np.ravel(a)
        ax = 0 if axis is None else axis % len(flat.shape)
        n = static_shape(flat, "np.compress")[ax]
        (c,) = static_shape(condition, "np.compress")
        mask = condition if c == n else np.concatenate([condition, np.zeros(n - c, bool)])
        return flat[(slice(None),) * ax + (mask != 0,)]

    return composed(p, g, fn)


@rule(K.TRIM_ZEROS)
def _trim_zeros(p: Primal, g: Any) -> list[Cotangent]:
    """A 1-D ``filt`` without its leading and/or trailing zeros: a boolean mask of the
    positions kept (after the first non-zero, before the last)."""
    trim = p.attrs.get("trim", "fb").lower()
    if len(static_shape(p.args[0], "np.trim_zeros")) != 1:
        raise NotImplementedError("the gradient of np.trim_zeros is implemented for 1-D arrays")

    def fn(a: Any) -> Any:
        nonzero = (a != 0).astype(np.int64)
        keep = np.ones(a.shape, bool)
        if "f" in trim:
            keep = keep & (np.cumsum(nonzero) > 0)
        if "b" in trim:
            keep = keep & (np.flip(np.cumsum(np.flip(nonzero))) > 0)
        return a[keep]

    return composed(p, g, fn)


@rule(K.UNIQUE)
def _unique(p: Primal, g: Any) -> list[Cotangent]:
    """The sorted distinct values: each is its first occurrence (``return_index``), so a
    repeated value's gradient goes there (the values are not differentiable at repeats)."""
    multi = isinstance(p.node.aval, tuple)
    gv = g[0] if multi else g
    if gv is None:
        return [None]
    options = {k: v for k, v in p.attrs.items() if k in ("equal_nan", "sorted")}

    def fn(a: Any) -> Any:
        both = bind(
            K.UNIQUE,
            (a,),
            {"return_index": True, "return_inverse": False, "return_counts": False, **options},
        )
        first = bind(K.GET_OUTPUT, (both,), {"index": 1})
        values = np.ravel(a)[first]
        return [values, *[None] * (len(cast("tuple", p.node.aval)) - 1)] if multi else values

    return composed(p, g, fn)


@rule(K.PARTITION)
def _partition(p: Primal, g: Any) -> list[Cotangent]:
    """A permutation of ``a`` along the axis: output ``i`` is the input element of the same
    rank (found from the forward result, so NumPy's own arrangement is followed; equal values
    share one rank order)."""
    a = p.args[0]
    axis = p.attrs.get("axis", -1)

    def dx() -> Any:
        flat = axis is None
        x = np.reshape(a, (-1,)) if flat else a
        shape = static_shape(x, "np.partition")
        ax = 0 if flat else axis % len(shape)
        forward = cast("Tensor", p.out)  # (the forward result: a partition has one)
        out = forward if not flat else np.reshape(forward, (-1,))
        rank_of_out = np.argsort(np.argsort(out, axis=ax, kind="stable"), axis=ax, kind="stable")
        order = np.argsort(x, axis=ax, kind="stable")
        grid = tuple(
            rank_of_out if d == ax else np.arange(n).reshape((n,) + (1,) * (len(shape) - d - 1))
            for d, n in enumerate(shape)
        )
        back = route_along_axis(order[grid], g, shape, ax)
        return np.reshape(back, a.shape) if flat else back

    return [dx]


# -- order statistics and scans ----------------------------------------------------------------


def _quantiles(a: Any, q: Any, axis: Any, keepdims: bool, nan: bool, scalar: bool) -> Any:
    """NumPy's ``method='linear'`` quantiles ``q`` (fractions in [0, 1]) of ``a`` over
    ``axis``: sort (NaNs last), then interpolate between the order statistics at
    ``q * (count - 1)``; ``count`` is the number of non-NaN values for the nan functions."""
    ndim = len(a.shape)
    axes = normalize_axes(axis, ndim)
    kept = [d for d in range(ndim) if d not in axes]
    lead = tuple(a.shape[d] for d in kept)
    rows = math.prod(lead)
    flat = np.reshape(np.transpose(a, kept + list(axes)), (rows, -1))
    ordered = np.sort(flat, axis=-1)
    qs = np.reshape(np.asarray(q, np.float64), (-1,))
    if nan:
        count = np.sum(~np.isnan(flat), axis=-1, keepdims=True)
        pos = qs * (count - 1).astype(np.float64)  # (rows, Q), traced
        low = np.floor(pos).astype(np.intp)
        high = np.minimum(low + 1, count - 1)
        frac = pos - low
        row = np.arange(rows)[:, None]
        value = ordered[row, low] * (1.0 - frac) + ordered[row, high] * frac
    else:
        n = math.prod(a.shape[d] for d in axes)
        pos = qs * (n - 1)
        low = np.floor(pos).astype(np.intp)
        high = np.minimum(low + 1, n - 1)
        frac = pos - low
        value = ordered[:, low] * (1.0 - frac) + ordered[:, high] * frac
    # NumPy's layout: q's axes first, then the kept axes (reduced ones as 1 with keepdims)
    value = np.transpose(value)  # (Q, rows)
    tail = tuple(1 if d in axes else a.shape[d] for d in range(ndim)) if keepdims else lead
    return np.reshape(value, tail if scalar else tuple(np.shape(q)) + tail)


_QUANTILE_OPS = {
    K.PERCENTILE: (100.0, False),
    K.NANPERCENTILE: (100.0, True),
    K.QUANTILE: (1.0, False),
    K.NANQUANTILE: (1.0, True),
    K.NANMEDIAN: (None, True),
}


@rule(*_QUANTILE_OPS)
def _quantile(p: Primal, g: Any) -> list[Cotangent]:
    scale, nan = _QUANTILE_OPS[p.node.op]
    method = p.attrs.get("method", "linear")
    if method != "linear":
        raise NotImplementedError(
            f"the gradient of np.{p.node.op.value} with method="
            f"{method!r} is not implemented (only 'linear', the default)"
        )
    static_shape(p.args[0], f"np.{p.node.op.value}")
    q = 0.5 if scale is None else np.asarray(p.attrs["q"], np.float64) / scale
    axis, keepdims = p.attrs.get("axis"), bool(p.attrs.get("keepdims", False))
    return composed(p, g, lambda a: _quantiles(a, q, axis, keepdims, nan, np.ndim(q) == 0))


@rule(K.NANCUMPROD)
def _nancumprod(p: Primal, g: Any) -> list[Cotangent]:
    """``cumprod`` with NaNs taken as 1 (their gradient is 0)."""
    axis = p.attrs.get("axis")
    return composed(p, g, lambda a: np.cumprod(np.where(np.isnan(a), 1.0, a), axis=axis))


@rule(K.UFUNC_REDUCEAT)
def _ufunc_reduceat(p: Primal, g: Any) -> list[Cotangent]:
    """``np.add.reduceat``: sums of segments, a fixed linear map along the axis for constant
    indices (``np.add.reduceat`` of an identity matrix is its matrix)."""
    x, indices = p.args
    if p.attrs["ufunc"] is not np.add:
        raise NotImplementedError(
            f"the gradient of np.{p.attrs['ufunc'].__name__}.reduceat "
            "is not implemented (np.add.reduceat has a rule)"
        )
    index = (
        indices.node.attrs.get("value")
        if isinstance(indices, Tensor) and indices.node.op is K.CONSTANT
        else (None if isinstance(indices, Tensor) else indices)
    )
    if index is None:
        raise NotImplementedError("the gradient of np.add.reduceat needs constant indices")
    shape = static_shape(x, "np.add.reduceat")
    axis = p.attrs.get("axis", 0) % len(shape)
    w = np.add.reduceat(np.eye(shape[axis]), np.asarray(index), axis=0)  # (segments, n)

    def dx() -> Any:
        moved = np.moveaxis(g, axis, -1)
        return np.moveaxis(np.matmul(moved, w.astype(g.dtype)), -1, axis)

    return [dx, None]


NOTES.update(
    {
        K.DEGREES: "as rad2deg",
        K.RADIANS: "as deg2rad",
        K.NEXTAFTER: "1 in x, none in y",
        K.LDEXP: "x * 2**n; the integer n has none",
        K.MODF: "the fractional part; the integral part is piecewise constant",
        K.FREXP: "mantissa: 2**-exponent",
        K.DIVMOD: "remainder as remainder; the quotient is piecewise constant",
        K.DIAGFLAT: "a gather of the diagonal",
        K.INSERT: "sources named by np.insert of iota arrays",
        K.BINCOUNT: "weights: a gather; x has none",
        K.COMPRESS: "composition: a boolean mask",
        K.TRIM_ZEROS: "1-D; composition: a boolean mask",
        K.UNIQUE: "values: the first occurrence of each (not differentiable at repeats)",
        K.PARTITION: "the element of the same rank (ties in stable sort order)",
        K.PERCENTILE: "method='linear': a sort and a lerp",
        K.NANPERCENTILE: "as percentile; NaNs get none",
        K.QUANTILE: "method='linear': a sort and a lerp",
        K.NANQUANTILE: "as quantile; NaNs get none",
        K.NANMEDIAN: "as nanquantile(0.5)",
        K.NANCUMPROD: "cumprod with NaNs as 1: divides by x",
        K.UFUNC_REDUCEAT: "np.add with constant indices",
        K.HISTOGRAM: "counts are piecewise constant in a; weights and bin edges not yet",
        K.REAL: "complex input: raises (real gradients only)",
        K.IMAG: "complex input: raises (real gradients only)",
    }
)

__all__: list[str] = []
