"""Indexing functions: ``np.take`` and ``np.take_along_axis``, the functionalized writers
(``np.copyto``, ``np.put``, ``np.place``, ``np.putmask``, ...), index builders (``np.ix_``,
``np.meshgrid``, ...) and data-dependent lengths (``np.nonzero``, ``np.flatnonzero``,
``np.extract``: a None dimension, sized at run time without retracing).

The entry points of ``np.argwhere``, ``np.compress``, ``np.trim_zeros``, ``np.bincount``,
``ufunc.at``, ``np.ravel_multi_index`` and ``np.unravel_index`` (one op each) are in their
ops' definitions, :mod:`kernel_ext.ops.indexing`.
"""

from __future__ import annotations

import math
from typing import Any, Literal, cast

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ... import errors
from ...ir import OpKind
from ..context import bind
from ..tensor import Tensor, is_immutable_scalar
from ..variables import Variable
from ..zero_d import as_array
from .common import (
    Opaque,
    array_arg,
    bind_outputs,
    composition,
    implements,
    ndim_of,
    static_shape,
)
from .shape import ravel
from .writes import dtype_name, overwriting_call, writable_target


@implements(np.take)
def _take(a: Any, indices: Any, axis: Any = None) -> Any:
    if axis is None:
        return ravel(a)[indices]
    n = ndim_of(a)
    return a[(slice(None),) * (axis % n) + (indices,)]


# NumPy's casting rules, as its stubs type them (NumPy checks the value).
Casting = Literal["no", "equiv", "safe", "same_kind", "unsafe"]


@implements(np.copyto)
def _copyto(dst: Any, src: Any, casting: Casting = "same_kind", where: Any = True) -> None:
    target = writable_target(
        dst,
        "np.copyto",
        f"copyto() argument 1 must be a numpy.ndarray, not numpy.{dtype_name(dst)}",
    )
    src_dtype = np.result_type(src) if not isinstance(src, Tensor) else src.dtype
    if not np.can_cast(src_dtype, target.dtype, casting=casting):
        raise TypeError(
            f"Cannot cast array data from dtype('{np.dtype(src_dtype)}') to "
            f"dtype('{target.dtype}') according to the rule '{casting}'"
        )
    # (an unknown rank's shape is None, which NumPy's stubs do not take)
    value = np.broadcast_to(
        np.asarray(src) if not isinstance(src, Tensor) else src,
        target.shape,  # type: ignore[arg-type]
    )
    if where is not True:
        value = np.where(where, value, target)
    target[...] = value


@implements(np.fill_diagonal)
def _fill_diagonal(a: Any, val: Any, wrap: bool = False) -> None:
    target = writable_target(a, "np.fill_diagonal", None)
    shape = target.shape
    if shape is not None and len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    if shape is None or any(d is None for d in shape):
        raise errors.UnsupportedOpError(
            "np.fill_diagonal on a traced value needs its shape known when tracing "
            f"(got {shape}). Fix: give the dimensions sizes in input_signature."
        )
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


@implements(np.nonzero)
def nonzero(a: Any) -> tuple:
    return tuple(bind_outputs(OpKind.NONZERO, (a,), {}, "nonzero"))


@implements(np.flatnonzero)
def _flatnonzero(a: Any) -> Any:
    return nonzero(np.ravel(a))[0]  # NumPy's own composition


@implements(np.extract)
def _extract(condition: Any, arr: Any) -> Any:
    # NumPy's own composition: take(ravel(arr), nonzero(ravel(condition))[0])
    return np.take(np.ravel(arr), np.nonzero(np.ravel(condition))[0])


@composition(np.broadcast_arrays)
def _broadcast_arrays(*args: Any) -> tuple:
    # (NumPy makes every argument an array first: a 0-d result is a 0-d array, never a
    # scalar, and an argument already of the full shape comes back as it is)
    arrays = [array_arg(a) for a in args]
    shape = np.broadcast_shapes(*[static_shape(a) for a in arrays])
    if all(tuple(a.shape) == shape for a in arrays):
        return tuple(as_array(a) if shape == () else a for a in arrays)
    return tuple(np.broadcast_to(a, shape) for a in arrays)


@composition(np.meshgrid)
def _meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> tuple:
    ndim = len(xi)
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ones = (1,) * ndim
    output = [np.reshape(array_arg(x), ones[:i] + (-1,) + ones[i + 1 :]) for i, x in enumerate(xi)]
    if indexing == "xy" and ndim > 1:
        output[0] = np.reshape(output[0], (1, -1) + ones[2:])
        output[1] = np.reshape(output[1], (-1, 1) + ones[2:])
    if not sparse:
        output = list(_broadcast_arrays(*output))
    if copy:
        output = [np.copy(x) for x in output]
    return tuple(output)


@composition(np.ix_)
def _ix(*args: Any) -> tuple:
    out = []
    nd = len(args)
    for k, new in enumerate(args):
        new = array_arg(new)
        if ndim_of(new) != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if isinstance(new, np.ndarray) and new.size == 0:
            new = new.astype(np.intp)
        if new.dtype == np.bool_:
            new = np.nonzero(new)[0]
        out.append(np.reshape(new, (1,) * k + (-1,) + (1,) * (nd - k - 1)))
    return tuple(out)


@composition(np.diag_indices_from)
def _diag_indices_from(arr: Any) -> tuple:
    shape = static_shape(arr)
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return np.diag_indices(shape[0], len(shape))


@composition(np.tril_indices_from)
def _tril_indices_from(arr: Any, k: int = 0) -> tuple:
    shape = static_shape(arr)
    if len(shape) != 2:
        raise ValueError("input array must be 2-d")
    return np.tril_indices(shape[-2], k=k, m=shape[-1])


@composition(np.triu_indices_from)
def _triu_indices_from(arr: Any, k: int = 0) -> tuple:
    shape = static_shape(arr)
    if len(shape) != 2:
        raise ValueError("input array must be 2-d")
    return np.triu_indices(shape[-2], k=k, m=shape[-1])


def _along_axis_index(shape: tuple, indices: Any, axis: int) -> tuple:
    """NumPy's ``_make_along_axis_idx``: ``indices`` on ``axis``, an arange on every other."""
    if not np.issubdtype(indices.dtype, np.integer):
        raise IndexError("`indices` must be an integer array")
    nd = ndim_of(indices)
    index = []
    for dim, n in enumerate(shape):
        if dim == axis:
            index.append(indices)
        else:
            index.append(np.arange(n).reshape((1,) * dim + (-1,) + (1,) * (nd - dim - 1)))
    return tuple(index)


def _along_axis_target(arr: Any, indices: Any, axis: Any) -> tuple[Any, Any, int]:
    indices = array_arg(indices)
    if axis is None:
        if ndim_of(indices) != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        return np.reshape(arr, (-1,)), indices, 0
    axis = normalize_axis_index(axis, ndim_of(arr))  # (NumPy's order of checks)
    if ndim_of(indices) != ndim_of(arr):
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    return arr, indices, axis


@composition(np.take_along_axis)
def _take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> Any:
    arr, indices, axis = _along_axis_target(array_arg(arr), indices, axis)
    return arr[_along_axis_index(static_shape(arr), indices, axis)]


@implements(np.put_along_axis)
def _put_along_axis(arr: Any, indices: Any, values: Any, axis: Any) -> None:
    """Functionalized: the fancy-index write of NumPy's own code, on the traced target."""
    target = writable_target(arr, "np.put_along_axis", None)
    view, indices, axis = _along_axis_target(target, indices, axis)
    if view.shape is None or None in view.shape:
        raise errors.UnsupportedOpError(
            "np.put_along_axis on a traced value needs its shape known when tracing "
            f"(got {view.shape}). Fix: give the dimensions sizes in input_signature."
        )
    view[_along_axis_index(tuple(view.shape), indices, axis)] = values


@implements(np.put)
def _put(a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    """Functionalized ``a.flat[ind] = v`` (values repeated as needed, as NumPy does)."""
    target = writable_target(a, "np.put", None)
    ind = array_arg(ind)
    if mode in ("wrap", "clip"):
        n = target.size
        if n is None:
            raise errors.UnsupportedOpError("np.put(mode=...) needs the size when tracing")
        ind = np.remainder(ind, n) if mode == "wrap" else np.clip(ind, 0, n - 1)
    elif mode != "raise":
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got '{mode}')")
    v = array_arg(v)
    if (
        ind.shape is not None
        and None not in ind.shape
        and v.size not in (None, 1)
        and v.size != math.prod(ind.shape)
    ):
        v = np.resize(v, ind.shape)
    target.put(ind, v)


@implements(np.place)
def _place(arr: Any, mask: Any, vals: Any) -> None:
    """Functionalized ``np.place``: the k-th selected element takes ``vals[k % len(vals)]``
    (a cumulative count of the mask picks it), the others keep their value."""
    target = writable_target(
        arr, "np.place", f"place() argument 1 must be numpy.ndarray, not numpy.{dtype_name(arr)}"
    )
    vals = np.ravel(array_arg(vals))
    n = vals.shape[0]
    if n is None or n == 0 or target.shape is None or None in target.shape:
        raise errors.UnsupportedOpError(
            "np.place on a traced value needs a non-empty `vals` and sizes known when "
            "tracing. Fix: use arr[mask] = value, or np.where."
        )
    flat_mask = np.ravel(array_arg(mask)).astype(bool)
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
    target = writable_target(a, "np.putmask", "putmask: first argument must be an array")
    shape = target.shape
    if (
        shape is None
        or None in shape
        or array_arg(values).shape is None
        or None in array_arg(values).shape
    ):
        # sizes known only at run time: NumPy's own call, into a copy the array then takes
        overwriting_call(np.putmask, "a", (target, mask, values), {})
        return None
    flat_mask = np.ravel(array_arg(mask)).astype(bool)
    if flat_mask.shape[0] != target.size:
        raise ValueError("putmask: mask and data must be the same size")
    # NumPy's conversion of ``values``: an array (a 0-d one too) must cast safely; other
    # objects (Python numbers and lists, NumPy scalars) are converted to the array's dtype.
    # A 0-d argument may come as either (one trace serves both): NumPy's own call decides.
    if (
        isinstance(values, Tensor)
        and values.shape == ()
        and values.context.parent is None
        and values.node.op is OpKind.PLACEHOLDER
        and values.node.params.path
    ):
        overwriting_call(np.putmask, "a", (target, mask, values), {})
        return None
    if isinstance(values, np.ndarray) or (
        isinstance(values, Tensor) and not (values.shape == () and is_immutable_scalar(values))
    ):
        if not np.can_cast(values.dtype, target.dtype, casting="safe"):
            what = "scalar" if values.shape == () else "array data"
            raise TypeError(
                f"Cannot cast {what} from dtype('{values.dtype}') to "
                f"dtype('{target.dtype}') according to the rule 'safe'"
            )
    elif not isinstance(values, Tensor):
        values = np.asarray(values, dtype=target.dtype)
    vals = cast("Tensor | np.ndarray", np.ravel(array_arg(values)))
    m = cast("tuple[int, ...]", vals.shape)[0]  # (sizes known: see above)
    if m == 0:
        return None  # (NumPy leaves the array as it is)
    if m != target.size:
        if not isinstance(vals, (Tensor, Variable)):
            # a graph constant, indexed by the positions
            vals = cast("Tensor", bind(OpKind.COPY, (vals,)))
        vals = vals[np.arange(cast("int", target.size)) % m]
    new = np.where(flat_mask, vals.astype(target.dtype, casting="unsafe"), np.ravel(target))
    target[...] = np.reshape(new, tuple(shape))
    return None


@composition(np.choose)
def _choose(a: Any, choices: Any, mode: str = "raise") -> Any:
    """``choices[a]`` element by element: the choices broadcast and stacked, one gather along
    the new axis (``wrap``/``clip`` fold the index first; ``raise`` checks at run time, as
    indexing does)."""
    if mode != "wrap" and mode != "clip":
        raise Opaque  # NumPy's own check of every index, with its error
    choices = [array_arg(c) for c in choices]
    a = array_arg(a)
    n = len(choices)
    index = np.remainder(a, n) if mode == "wrap" else np.clip(a, 0, n - 1)
    shape = np.broadcast_shapes(static_shape(a), *[static_shape(c) for c in choices])
    dtype = np.result_type(*[c.dtype for c in choices])
    stacked = np.stack([np.broadcast_to(c.astype(dtype), shape) for c in choices])
    return _take_along_axis(stacked, np.broadcast_to(index, shape)[None], 0)[0]
