"""Abstract-evaluation rules of shape ops: reshape, transpose, expand/squeeze, broadcast,
concatenate/stack, pad, diagflat and insert.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from ..ops import OpKind
from .core import (
    AbstractValue,
    KnownShape,
    Shape,
    abstract_rule,
    broadcast_shapes,
    format_shape,
    known_rank,
    normalize_axes,
    normalize_axis,
    result_type,
    shape_of,
)


def reshape_shape(shape: Shape | None, newshape: tuple[int, ...]) -> Shape | None:
    """NumPy's reshape rule, with ``-1`` resolved where the input size is known."""
    if list(newshape).count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    # (no ``None`` dim when the product is taken)
    size = None if shape is None or None in shape else math.prod(cast("KnownShape", shape))
    known = math.prod(d for d in newshape if d != -1)
    if -1 not in newshape:
        if size is not None and size != known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(newshape)}")
        return tuple(newshape)
    if size is None:
        return tuple(None if d == -1 else d for d in newshape)
    if known == 0 or size % known:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(newshape)}")
    return tuple(size // known if d == -1 else d for d in newshape)


@abstract_rule(OpKind.RESHAPE)
def _reshape(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    return AbstractValue(reshape_shape(x.shape, attrs["shape"]), x.dtype)


@abstract_rule(OpKind.TRANSPOSE)
def _transpose(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    if x.shape is None:
        return x
    axes = attrs.get("axes")
    if axes is None:
        return AbstractValue(x.shape[::-1], x.dtype)
    axes = tuple(normalize_axis(a, len(x.shape)) for a in axes)
    if sorted(axes) != list(range(len(x.shape))):
        raise ValueError("axes don't match array")
    return AbstractValue(tuple(x.shape[a] for a in axes), x.dtype)


@abstract_rule(OpKind.EXPAND_DIMS)
def _expand_dims(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    if x.shape is None:
        return x
    axis = attrs["axis"]
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = len(x.shape) + len(axes)
    axes = normalize_axes(axes, ndim)
    rest = iter(x.shape)
    return AbstractValue(tuple(1 if i in axes else next(rest) for i in range(ndim)), x.dtype)


@abstract_rule(OpKind.SQUEEZE)
def _squeeze(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    if x.shape is None:
        return x
    axis = attrs.get("axis")
    if axis is None:
        return AbstractValue(tuple(d for d in x.shape if d != 1), x.dtype)
    axes = normalize_axes(axis, len(x.shape))
    for a in axes:
        if x.shape[a] not in (1, None):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return AbstractValue(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)


@abstract_rule(OpKind.BROADCAST_TO)
def _broadcast_to(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    target = tuple(attrs["shape"])
    got = broadcast_shapes(x.shape, target)
    if got is not None and x.shape is not None and len(x.shape) > len(target):
        raise ValueError(f"cannot broadcast a shape {format_shape(x.shape)} to {target}")
    return AbstractValue(target, x.dtype)


@abstract_rule(OpKind.CONCATENATE)
def _concatenate(attrs: dict[str, Any], *xs: AbstractValue) -> AbstractValue:
    dtype = result_type(*[np.empty(0, x.dtype) for x in xs]) if xs else np.dtype(float)
    if "dtype" in attrs:
        dtype = np.dtype(attrs["dtype"])
    axis = attrs.get("axis", 0)
    if any(x.shape is None for x in xs):
        return AbstractValue(None, dtype)
    if axis is None:
        sizes = [x.size for x in xs]
        return AbstractValue((None if None in sizes else sum(cast("list[int]", sizes)),), dtype)
    shapes = cast("list[Shape]", [x.shape for x in xs])  # every one known (checked above)
    ndim = len(shapes[0])
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    if any(len(s) != ndim for s in shapes):
        raise ValueError(
            "all the input array dimensions except for the concatenation axis must "
            "match exactly, but the arrays have different numbers of dimensions"
        )
    ax = normalize_axis(axis, ndim)
    out: list[int | None] = []
    for i in range(ndim):
        dims = [s[i] for s in shapes]
        if i == ax:
            out.append(None if None in dims else sum(cast("list[int]", dims)))
        else:
            known = {d for d in dims if d is not None}
            if len(known) > 1:
                raise ValueError(
                    "all the input array dimensions except for the concatenation "
                    f"axis must match exactly, but along dimension {i} they differ"
                )
            out.append(known.pop() if known else None)
    return AbstractValue(tuple(out), dtype)


@abstract_rule(OpKind.STACK)
def _stack(attrs: dict[str, Any], *xs: AbstractValue) -> AbstractValue:
    dtype = result_type(*[np.empty(0, x.dtype) for x in xs])
    if any(x.shape is None for x in xs):
        return AbstractValue(None, dtype)
    # every shape is known here (checked above)
    shapes = cast("set[Shape]", {x.shape for x in xs})
    merged = cast("Shape", xs[0].shape)
    if len(shapes) > 1:
        if len({len(s) for s in shapes}) > 1:
            raise ValueError("all input arrays must have the same shape")
        merged = tuple(
            (
                lambda ds: (
                    None
                    if None in ds and len(ds - {None}) <= 1
                    else (ds.pop() if len(ds) == 1 else _raise_stack())
                )
            )({s[i] for s in shapes})
            for i in range(len(merged))
        )
    axis = normalize_axis(attrs.get("axis", 0), len(merged) + 1)
    out = list(merged)
    out.insert(axis, len(xs))
    return AbstractValue(tuple(out), dtype)


def _raise_stack() -> None:
    raise ValueError("all input arrays must have the same shape")


def _add_dims(*dims: int | None) -> int | None:
    return None if any(d is None for d in dims) else sum(dims)  # type: ignore[arg-type]


@abstract_rule(OpKind.PAD)
def _pad(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    shape = known_rank(x, "pad")
    widths, mode = attrs["pad_width"], attrs["mode"]
    for axis, (d, (before, after)) in enumerate(zip(shape, widths)):
        if d == 0 and (before or after) and mode not in ("constant", "empty"):
            raise ValueError(
                f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'"
            )
    return AbstractValue(tuple(_add_dims(d, b, a) for d, (b, a) in zip(shape, widths)), x.dtype)


@abstract_rule(OpKind.DIAGFLAT)
def _diagflat(attrs: dict[str, Any], v: AbstractValue) -> AbstractValue:
    n = _add_dims(v.size, abs(attrs.get("k", 0)))
    return AbstractValue((n, n), v.dtype)


@abstract_rule(OpKind.INSERT)
def _insert(attrs: dict[str, Any], arr: AbstractValue, values: Any) -> AbstractValue:
    """NumPy's ``insert``: one index (a scalar, or a one-element sequence or slice) inserts
    ``values`` as a block (its first or ``axis`` dim after padding it to ``arr``'s rank); more
    indices insert one slice each."""
    shape, axis, obj = known_rank(arr, "insert"), attrs.get("axis"), attrs["obj"]
    if axis is None:
        shape, axis = (arr.size,), 0
    else:
        axis = normalize_axis(axis, len(shape))
    n = shape[axis]
    if isinstance(obj, slice):
        count = None if n is None else len(range(*obj.indices(n)))
    else:
        index = np.asarray(obj)
        count = int(np.count_nonzero(index)) if index.dtype == np.bool_ else index.size
    if count == 1 or (count is None and isinstance(obj, slice)):
        vshape = shape_of(values)
        if vshape is None or count is None:
            numnew = None
        else:
            vshape = (1,) * (len(shape) - len(vshape)) + tuple(vshape)
            scalar = not isinstance(obj, (slice, tuple)) and np.ndim(obj) == 0
            numnew = vshape[0] if scalar else vshape[axis]
    else:
        numnew = count
    out = list(shape)
    out[axis] = _add_dims(n, numnew)
    return AbstractValue(tuple(out), arr.dtype)
