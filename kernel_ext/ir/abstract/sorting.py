"""Abstract-evaluation rules of sorting, searching, sets, bits and counting: sort/argsort,
unique, partition, searchsorted, digitize, lexsort, isin, packbits, histogram, interp.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ..ops import OpKind
from .core import (
    ABSTRACT_EVAL,
    INTP,
    AbstractValue,
    Shape,
    abstract_rule,
    broadcast_shapes,
    known_rank,
    normalize_axis,
    probe_dtype,
    shape_of,
)


@abstract_rule(OpKind.SORT)
def _sort(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    return _sorted(attrs, x, x.dtype)


@abstract_rule(OpKind.ARGSORT)
def _argsort(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    return _sorted(attrs, x, np.dtype(np.intp))


def _sorted(attrs: dict[str, Any], x: AbstractValue, dtype: np.dtype) -> AbstractValue:
    axis = attrs.get("axis", -1)
    if axis is None:
        return AbstractValue((x.size,), dtype)
    if x.shape is not None:
        normalize_axis(axis, len(x.shape))
    return AbstractValue(x.shape, dtype)


@abstract_rule(OpKind.UNIQUE)
def _unique(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue | tuple[AbstractValue, ...]:
    shape = known_rank(x, "unique")
    values = AbstractValue((None,), x.dtype)
    extra = []
    if attrs.get("return_index"):
        extra.append(AbstractValue((None,), INTP))
    if attrs.get("return_inverse"):
        # NumPy 2 gives the inverse the input's shape (axis=None); ask it which rank
        probe = np.unique(np.zeros((1,) * len(shape), x.dtype), return_inverse=True)[1]
        inverse = shape if probe.ndim == len(shape) else (x.size,)
        extra.append(AbstractValue(tuple(inverse), INTP))
    if attrs.get("return_counts"):
        extra.append(AbstractValue((None,), INTP))
    return (values, *extra) if extra else values


@abstract_rule(OpKind.ARGPARTITION)
def _argpartition(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    out = _sorted(attrs, x, INTP)
    axis = attrs.get("axis")
    n = None if out.shape is None else out.shape[0 if axis is None else axis]
    for k in np.atleast_1d(attrs["kth"]).tolist():
        if n and not -n <= k < n:  # NumPy checks no kth along an empty axis
            raise ValueError(f"kth(={k}) out of bounds ({n})")
    return out


@abstract_rule(OpKind.HISTOGRAM)
def _histogram(
    attrs: dict[str, Any], a: AbstractValue, bins: Any, weights: Any
) -> tuple[AbstractValue, ...]:
    static_bins: Any = attrs.get("bins")  # a bin count, a method name, or None
    if isinstance(bins, AbstractValue):
        if bins.ndim != 1:
            raise ValueError("`bins` must be 1d, when an array")
        edges = cast("Shape", bins.shape)[0]  # 1-D (checked above)
        probe_bins: Any = np.arange(2, dtype=bins.dtype)
    elif isinstance(static_bins, str):
        edges, probe_bins = None, static_bins  # the data choose the number of bins
    else:
        edges, probe_bins = static_bins + 1, static_bins
    with np.errstate(all="ignore"):
        hist, bin_edges = np.histogram(
            np.ones(1, a.dtype),
            bins=probe_bins,
            range=attrs.get("range"),
            density=attrs.get("density"),
            weights=None if weights is None else np.ones(1, weights.dtype),
        )
    n = None if edges is None else edges - 1
    return (AbstractValue((n,), hist.dtype), AbstractValue((edges,), bin_edges.dtype))


@abstract_rule(OpKind.INTERP)
def _interp(
    attrs: dict[str, Any],
    x: Any,
    xp: AbstractValue,
    fp: AbstractValue,
    left: Any,
    right: Any,
    period: Any,
) -> AbstractValue:
    for name, v in (("xp", xp), ("fp", fp)):
        if isinstance(v, AbstractValue) and v.ndim not in (None, 1):
            raise ValueError(f"object too deep for desired array ({name} must be 1-D)")
    xp_shape, fp_shape = shape_of(xp), shape_of(fp)
    n_xp = xp_shape[0] if xp_shape else None
    n_fp = fp_shape[0] if fp_shape else None
    if n_xp is not None and n_fp is not None and n_xp != n_fp:
        raise ValueError("fp and xp are not of the same length.")
    dtype = probe_dtype(np.interp, x, xp, fp, left, right, period)
    return AbstractValue(shape_of(x), dtype)


@abstract_rule(OpKind.SEARCHSORTED)
def _searchsorted(attrs: dict[str, Any], a: AbstractValue, v: Any, sorter: Any) -> AbstractValue:
    side = attrs.get("side", "left")
    dtype = probe_dtype(
        lambda x, y, s: np.searchsorted(x, y, side, None if s is None else np.zeros_like(s)),
        a,
        v,
        sorter,
    )
    return AbstractValue(shape_of(v), dtype)


@abstract_rule(OpKind.DIGITIZE)
def _digitize(attrs: dict[str, Any], x: Any, bins: AbstractValue) -> AbstractValue:
    right = attrs.get("right", False)
    dtype = probe_dtype(lambda a, b: np.digitize(a, b, right), x, bins)
    return AbstractValue(shape_of(x), dtype)


@abstract_rule(OpKind.PARTITION)
def _partition(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    indices = cast("AbstractValue", ABSTRACT_EVAL[OpKind.ARGPARTITION](attrs, x))  # one output
    return AbstractValue(indices.shape, x.dtype)


@abstract_rule(OpKind.LEXSORT)
def _lexsort(attrs: dict[str, Any], *keys: AbstractValue) -> AbstractValue:
    """One 2-D (or more) array of keys, or several keys of one shape: indices of that shape
    (a key's shape, without the leading key axis of a single array)."""
    axis = attrs.get("axis", -1)
    shape: Shape | None
    probe: np.ndarray | list[np.ndarray]
    if attrs.get("array"):
        shape = known_rank(keys[0], "lexsort")
        if not shape:
            raise TypeError("need sequence of keys with len > 0 in lexsort")
        shape = shape[1:] if len(shape) > 1 else shape  # a 1-D array is one key
        probe = np.ones((1,) * len(cast("Shape", keys[0].shape)), keys[0].dtype)
    else:
        shape = broadcast_shapes(*[k.shape for k in keys])
        if any(k.shape is not None and len(k.shape) != len(shape or ()) for k in keys):
            raise ValueError("all keys need to be the same shape")
        probe = [np.ones((1,) * len(shape or ()), k.dtype) for k in keys]
    out = np.lexsort(probe, axis=axis)
    return AbstractValue(None if shape is None else tuple(shape), out.dtype)


@abstract_rule(OpKind.ISIN)
def _isin(attrs: dict[str, Any], element: Any, test: Any) -> AbstractValue:
    probe_dtype(lambda e, t: np.isin(e, t, **attrs), element, test)
    return AbstractValue(shape_of(element), np.dtype(np.bool_))


def _bits_axis(attrs: dict[str, Any], a: AbstractValue, fn: str) -> tuple[Shape, int]:
    axis = attrs.get("axis")
    if axis is None:
        return (a.size,), 0
    shape = known_rank(a, fn)
    return shape, normalize_axis(axis, len(shape))


@abstract_rule(OpKind.PACKBITS)
def _packbits(attrs: dict[str, Any], a: AbstractValue) -> AbstractValue:
    if a.dtype.kind not in "iub":
        raise TypeError("Expected an input array of integer or boolean data type")
    shape, axis = _bits_axis(attrs, a, "packbits")
    n = shape[axis]
    out = list(shape)
    out[axis] = None if n is None else -(-n // 8)
    return AbstractValue(tuple(out), np.dtype(np.uint8))


@abstract_rule(OpKind.UNPACKBITS)
def _unpackbits(attrs: dict[str, Any], a: AbstractValue) -> AbstractValue:
    if a.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    shape, axis = _bits_axis(attrs, a, "unpackbits")
    n, count = shape[axis], attrs.get("count")
    bits = None if n is None else 8 * n
    if count is not None and bits is not None:
        bits = count if count >= 0 else max(bits + count, 0)
    elif count is not None and count >= 0:
        bits = count
    out = list(shape)
    out[axis] = bits
    return AbstractValue(tuple(out), np.dtype(np.uint8))
