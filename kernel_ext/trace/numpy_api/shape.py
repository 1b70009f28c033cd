"""Shape and layout functions that are compositions or record several ops: ``np.ravel``,
``np.atleast_*d``, ``np.vstack``/``np.hstack``, splitting, tiling, deleting, ``np.diagflat``,
``np.triu``/``np.tril`` and the helpers NumPy writes in Python (``np.roll``, ``np.rot90``,
``np.block``, ``np.apply_along_axis``, ...).

The entry points that record one shape op (``np.reshape``, ``np.transpose``,
``np.concatenate``, ``np.pad``, ...) live with that op, in :mod:`kernel_ext.ops.shape`;
``np.ravel`` and ``np.diagflat`` stay here because compositions of other modules call them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ...ir import OpKind
from ..context import bind
from ..signatures import ALL
from ..tensor import HANDLERS, Tensor
from .common import (
    Opaque,
    array_arg,
    composition,
    declare,
    implements,
    ndim_of,
    static_shape,
    static_value,
)


@implements(np.ravel)
def ravel(a: Any) -> Any:
    return bind(OpKind.RESHAPE, (a,), {"shape": (-1,)})


@implements(np.atleast_1d)
def atleast_1d(*arys: Any) -> Any:
    out = [a if ndim_of(a) >= 1 else bind(OpKind.RESHAPE, (a,), {"shape": (1,)}) for a in arys]
    return out[0] if len(out) == 1 else tuple(out)


@implements(np.atleast_2d)
def atleast_2d(*arys: Any) -> Any:
    out = []
    for a in arys:
        n = ndim_of(a)
        if n == 0:
            a = bind(OpKind.RESHAPE, (a,), {"shape": (1, 1)})
        elif n == 1:
            a = bind(OpKind.EXPAND_DIMS, (a,), {"axis": 0})
        out.append(a)
    return out[0] if len(out) == 1 else tuple(out)


def concatenate_attrs(axis: Any, dtype: Any) -> dict[str, Any]:
    """The attrs of ``np.concatenate(..., axis, dtype=dtype)``, which ``np.vstack`` and
    ``np.hstack`` record too."""
    attrs: dict[str, Any] = {"axis": None if axis is None else int(axis)}
    if dtype is not None:
        attrs["dtype"] = np.dtype(dtype)
    return attrs


@implements(np.vstack)
def _vstack(tup: Any, *, dtype: Any = None) -> Any:
    return bind(OpKind.CONCATENATE, tuple(atleast_2d(a) for a in tup), concatenate_attrs(0, dtype))


@implements(np.hstack)
def _hstack(tup: Any, *, dtype: Any = None) -> Any:
    arrs = [atleast_1d(a) for a in tup]
    axis = 0 if ndim_of(arrs[0]) == 1 else 1
    return bind(OpKind.CONCATENATE, tuple(arrs), concatenate_attrs(axis, dtype))


@implements(np.shape)
def _shape(a: Any) -> Any:
    return a.shape


@implements(np.ndim)
def _ndim(a: Any) -> int:
    return a.ndim


@implements(np.size)
def _size(a: Any, axis: Any = None) -> Any:
    return a.size if axis is None else a.shape[axis]


@implements(np.diagflat)
def diagflat(v: Any, k: int = 0) -> Any:
    return bind(OpKind.DIAGFLAT, (v,), {"k": int(k)})


def _tri_mask(m: Any, k: int) -> Any:
    """``np.tri(*m.shape[-2:], k=k, dtype=bool)``: a constant where the sizes are known, else
    the same comparison of index ranges made at run time."""
    dims = tuple(m.shape[-2:])
    if not dims:
        raise TypeError("tri() missing 1 required positional argument: 'N'")
    if None not in dims:
        # (the stubs type N and M, not a tuple of one or two sizes)
        return np.tri(*dims, k=k, dtype=bool)  # type: ignore[call-overload]
    axes = (-2, -1) if len(dims) == 2 else (-1, -1)
    sizes = [
        d if d is not None else cast("Tensor", bind(OpKind.DIM, (m,), {"axis": ax}))
        for d, ax in zip(dims if len(dims) == 2 else dims * 2, axes)
    ]
    rows = cast("Tensor", bind(OpKind.ARANGE, (0, sizes[0], 1), {"dtype": np.dtype(np.int64)}))
    stop = np.subtract(sizes[1], k)
    cols = cast("Tensor", bind(OpKind.ARANGE, (-k, stop, 1), {"dtype": np.dtype(np.int64)}))
    return np.greater_equal(rows[:, None], cols[None, :])


@implements(np.triu)
def _triu(m: Any, k: int = 0) -> Any:
    # NumPy: where(tri(N, M, k - 1), zeros(1, m.dtype), m)
    return np.where(_tri_mask(m, int(k) - 1), np.zeros(1, m.dtype), m)


@implements(np.tril)
def _tril(m: Any, k: int = 0) -> Any:
    # NumPy: where(tri(N, M, k), m, zeros(1, m.dtype))
    return np.where(_tri_mask(m, int(k)), m, np.zeros(1, m.dtype))


def _split_parts(ary: Any, indices_or_sections: Any, axis: int, equal: bool) -> list:
    """NumPy's ``array_split``: the division points, then one basic slice (a view) each."""
    ary = array_arg(ary)
    indices_or_sections = static_value(indices_or_sections)
    axis = normalize_axis_index(axis, ndim_of(ary))
    n = static_shape(ary)[axis]
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
    return [ary[head + (slice(start, stop),)] for start, stop in itertools.pairwise(points)]


@composition(np.array_split)
def _array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    return _split_parts(ary, indices_or_sections, axis, equal=False)


@composition(np.split)
def _split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    return _split_parts(ary, indices_or_sections, axis, equal=True)


@composition(np.hsplit)
def _hsplit(ary: Any, indices_or_sections: Any) -> list:
    nd = ndim_of(ary)
    if nd == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return _split_parts(ary, indices_or_sections, 1 if nd > 1 else 0, equal=True)


@composition(np.vsplit)
def _vsplit(ary: Any, indices_or_sections: Any) -> list:
    if ndim_of(ary) < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return _split_parts(ary, indices_or_sections, 0, equal=True)


@composition(np.dsplit)
def _dsplit(ary: Any, indices_or_sections: Any) -> list:
    if ndim_of(ary) < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return _split_parts(ary, indices_or_sections, 2, equal=True)


@composition(np.unstack)
def _unstack(x: Any, /, *, axis: int = 0) -> tuple:
    if ndim_of(x) == 0:
        raise ValueError("Input array must be at least 1-d.")
    moved = np.moveaxis(x, axis, 0)
    return tuple(moved[i] for i in range(static_shape(moved)[0]))


@composition(np.tile)
def _tile(A: Any, reps: Any) -> Any:
    """Each axis of size ``s`` repeated ``t`` times is a broadcast of a new length-``t`` axis
    before it, then one reshape: ``(t, s) -> t * s`` (the values NumPy's tile copies)."""
    reps = static_value(reps)
    tup = tuple(int(r) for r in reps) if np.ndim(reps) else (int(reps),)
    A = array_arg(A)
    shape = static_shape(A)
    shape = (1,) * max(len(tup) - len(shape), 0) + shape
    tup = (1,) * (len(shape) - len(tup)) + tup
    if all(t == 1 for t in tup):
        return np.copy(np.reshape(A, shape))
    if any(t < 0 for t in tup):
        raise ValueError("negative dimensions are not allowed")
    interleaved = tuple(d for s in shape for d in (1, s))
    big = np.broadcast_to(
        np.reshape(A, interleaved), tuple(d for ts in zip(tup, shape) for d in ts)
    )
    return np.reshape(big, tuple(s * t for s, t in zip(shape, tup)))


@composition(np.repeat)
def _repeat(a: Any, repeats: Any, axis: Any = None) -> Any:
    """A scalar count broadcasts a new axis after ``axis`` and folds it in; counts per
    element gather ``np.repeat(arange(n), repeats)`` (NumPy's own check of the counts)."""
    repeats = static_value(repeats)
    a = array_arg(a)
    if axis is None:
        a, axis = np.ravel(a), 0
    shape = static_shape(a)
    axis = normalize_axis_index(axis, len(shape))
    n = shape[axis]
    index = np.repeat(np.arange(n), repeats)  # raises NumPy's error for bad counts
    if np.ndim(repeats) == 0 or (np.size(repeats) == 1 and n != 1):
        r = int(np.asarray(repeats).reshape(-1)[0])
        wide = np.broadcast_to(
            np.expand_dims(a, axis + 1), shape[: axis + 1] + (r,) + shape[axis + 1 :]
        )
        return np.reshape(wide, shape[:axis] + (n * r,) + shape[axis + 1 :])
    return a[(slice(None),) * axis + (index,)]


@composition(np.roll)
def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """NumPy's roll: per axis, the last ``shift`` items then the others (a concatenation of
    two slices); with no axis, the flattened array rolled and reshaped back."""
    shift = static_value(shift)
    a = array_arg(a)
    if axis is None:
        return np.reshape(roll(np.ravel(a), shift, 0), static_shape(a))
    shape = static_shape(a)
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
            out = np.concatenate(
                [out[head + (slice(n - sh, None),)], out[head + (slice(None, n - sh),)]], axis=ax
            )
    return np.copy(out) if out is a else out


@composition(np.rot90)
def _rot90(m: Any, k: int = 1, axes: Any = (0, 1)) -> Any:
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    m = array_arg(m)
    nd = ndim_of(m)
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


@composition(np.fliplr)
def _fliplr(m: Any) -> Any:
    if ndim_of(m) < 2:
        raise ValueError("Input must be >= 2-d.")
    return m[:, ::-1]


@composition(np.flipud)
def _flipud(m: Any) -> Any:
    if ndim_of(m) < 1:
        raise ValueError("Input must be >= 1-d.")
    return m[::-1, ...]


@composition(np.atleast_3d)
def _atleast_3d(*arys: Any) -> Any:
    out = []
    for a in arys:
        a = array_arg(a)
        n = ndim_of(a)
        out.append(
            np.reshape(a, (1, 1, 1))
            if n == 0
            else a[None, :, None]
            if n == 1
            else a[:, :, None]
            if n == 2
            else a
        )
    return out[0] if len(out) == 1 else tuple(out)


@composition(np.column_stack)
def _column_stack(tup: Any) -> Any:
    arrays = []
    for v in tup:
        v = array_arg(v)
        n = ndim_of(v)
        arrays.append(np.reshape(v, (1, 1)) if n == 0 else v[:, None] if n == 1 else v)
    return np.concatenate(arrays, 1)


@composition(np.dstack)
def _dstack(tup: Any) -> Any:
    arrs = _atleast_3d(*tup)
    return np.concatenate([arrs] if not isinstance(arrs, tuple) else list(arrs), 2)


if hasattr(np, "row_stack"):  # NumPy's deprecated alias of vstack
    HANDLERS.add(np.row_stack, HANDLERS[np.vstack])


@composition(np.block)
def _block(arrays: Any) -> Any:
    """NumPy's block: nested lists of depth ``d`` concatenate along axis ``-d`` ... ``-1``,
    every leaf first given the result's rank by leading new axes."""

    def depth(x: Any, where: str) -> int:
        if isinstance(x, tuple):
            raise TypeError(
                f"{where} is a tuple. Only lists can be used to arrange blocks, "
                "and np.block does not allow implicit conversion from tuple to "
                "ndarray."
            )
        if not isinstance(x, list):
            return 0
        if not x:
            raise ValueError(f"List at {where} cannot be empty")
        depths = {depth(e, f"{where}[{i}]") for i, e in enumerate(x)}
        if len(depths) != 1:
            raise ValueError("List depths are mismatched.")
        return 1 + depths.pop()

    def leaves(x: Any) -> list:
        return [y for e in x for y in leaves(e)] if isinstance(x, list) else [array_arg(x)]

    list_ndim = depth(arrays, "arrays")
    result_ndim = max([list_ndim] + [ndim_of(a) for a in leaves(arrays)])

    def build(x: Any, level: int) -> Any:
        if level == list_ndim:
            x = array_arg(x)
            return np.reshape(x, (1,) * (result_ndim - ndim_of(x)) + static_shape(x))
        return np.concatenate([build(e, level + 1) for e in x], axis=-(list_ndim - level))

    out = build(arrays, 0)
    return np.copy(out) if list_ndim == 0 else out


@composition(np.matrix_transpose, np.linalg.matrix_transpose)
def _matrix_transpose(x: Any, /) -> Any:
    if ndim_of(x) < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {ndim_of(x)}")
    return np.swapaxes(x, -1, -2)


@composition(np.append)
def _append(arr: Any, values: Any, axis: Any = None) -> Any:
    arr = array_arg(arr)
    if axis is None:
        if ndim_of(arr) != 1:
            arr = np.ravel(arr)
        values, axis = np.ravel(values), ndim_of(arr) - 1
    return np.concatenate((arr, array_arg(values)), axis=axis)


@composition(np.delete)
def _delete(arr: Any, obj: Any, axis: Any = None) -> Any:
    """The kept positions are NumPy's own ``delete`` of ``arange(n)`` (its checks included),
    gathered with one constant index."""
    obj = static_value(obj)
    arr = array_arg(arr)
    if axis is None:
        if ndim_of(arr) != 1:
            arr = np.ravel(arr)
        axis = 0
    shape = static_shape(arr)
    axis = normalize_axis_index(axis, len(shape))
    keep = np.delete(np.arange(shape[axis]), obj)
    return arr[(slice(None),) * axis + (keep,)]


@composition(np.resize)
def _resize(a: Any, new_shape: Any) -> Any:
    new_shape = static_value(new_shape)
    new_shape = (int(new_shape),) if np.ndim(new_shape) == 0 else tuple(int(d) for d in new_shape)
    a = np.ravel(array_arg(a))
    if any(d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    size, new_size = static_shape(a)[0], math.prod(new_shape)
    if size == 0 or new_size == 0:
        return np.zeros(new_shape, a.dtype)
    repeats = -(-new_size // size)
    return np.reshape(np.concatenate((a,) * repeats)[:new_size], new_shape)


@composition(np.apply_over_axes)
def _apply_over_axes(func: Callable, a: Any, axes: Any) -> Any:
    val = array_arg(a)
    N = ndim_of(val)
    for axis in (axes,) if np.ndim(axes) == 0 else axes:
        axis = axis + N if axis < 0 else axis
        res = func(val, axis)
        if ndim_of(res) == ndim_of(val):
            val = res
        else:
            res = np.expand_dims(res, axis)
            if ndim_of(res) != ndim_of(val):
                raise ValueError("function is not returning an array of the correct shape")
            val = res
    return val


#: At most this many 1-D slices are traced one by one by ``np.apply_along_axis`` (NumPy
#: loops over them in Python too); more run as NumPy's own call.
APPLY_ALONG_AXIS_SLICES = 1024


@composition(np.apply_along_axis)
@declare.parameters("func1d", "axis", "arr", "args", ALL)
def _apply_along_axis(func1d: Callable, axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    arr = array_arg(arr)
    shape = static_shape(arr)
    axis = normalize_axis_index(axis, len(shape))
    view = np.moveaxis(arr, axis, -1)
    batch = shape[:axis] + shape[axis + 1 :]
    if math.prod(batch) > APPLY_ALONG_AXIS_SLICES:
        raise Opaque
    indices = list(np.ndindex(*batch))
    if not indices:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = [array_arg(func1d(view[ind + (Ellipsis,)], *args, **kwargs)) for ind in indices]
    first = results[0]
    res_shape = static_shape(first)
    stacked = np.reshape(np.stack([r.astype(first.dtype) for r in results]), batch + res_shape)
    nd = len(batch) + len(res_shape)
    dims = list(range(nd))
    return np.transpose(stacked, dims[:axis] + dims[len(batch) :] + dims[axis : len(batch)])
