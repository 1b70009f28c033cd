"""Linear algebra's compositions: products built of other ops (``np.tensordot``, ``np.kron``,
``np.inner``, ``np.linalg.multi_dot``, ...), the diagonals and traces, and ``np.linalg``'s norms,
ranks, powers and tensor solvers; the traced forms of ``outer``, ``inv``, ``solve`` and ``svd``
they call. Each op's own entry points (``np.dot``, ``np.einsum``, the factorisations, ...) live
with the op, in :mod:`kernel_ext.ops.linalg`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ...ir import OpKind
from ..context import bind
from ..tensor import Tensor
from ..variables import Variable
from ..zero_d import mark_scalar
from .common import (
    Opaque,
    array_arg,
    bind_outputs,
    composition,
    declare,
    implements,
    ndim_of,
    static_shape,
    static_value,
)
from .shape import atleast_2d, diagflat

# The traced forms of np.outer, np.linalg.inv, np.linalg.solve and np.linalg.svd, one op each:
# the compositions below call them, so they live here; each is registered as its NumPy
# function's handler beside its op, in kernel_ext.ops.linalg.


def outer(a: Any, b: Any) -> Any:
    return bind(OpKind.OUTER, (a, b))


def inv(a: Any) -> Any:
    return bind(OpKind.INV, (a,))


def solve(a: Any, b: Any) -> Any:
    return bind(OpKind.SOLVE, (a, b))


def svd(
    a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False
) -> Any:
    attrs = {
        "full_matrices": bool(full_matrices),
        "compute_uv": bool(compute_uv),
        "hermitian": bool(hermitian),
    }
    if not compute_uv:
        return bind(OpKind.SVD, (a,), attrs)
    return result_type(np.linalg.svd)._make(bind_outputs(OpKind.SVD, (a,), attrs, "svd"))


_RESULT_TYPES: dict[Callable, type[NamedTuple]] = {}


def result_type(fn: Callable) -> type[NamedTuple]:
    """The namedtuple ``fn`` returns (``SVDResult``, ``SlogdetResult``), asked of NumPy."""
    cls = _RESULT_TYPES.get(fn)
    if cls is None:
        cls = _RESULT_TYPES[fn] = type(fn(np.eye(1)))
    return cls


def diagonal_of(a: Any, offset: int, axis1: int, axis2: int) -> Any:
    """NumPy's diagonal: both axes moved last, then one gather of ``(i, i + offset)`` (a
    copy here; NumPy hands out a read-only view)."""
    a = array_arg(a)
    nd = ndim_of(a)
    if nd < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    axis1, axis2 = normalize_axis_index(axis1, nd), normalize_axis_index(axis2, nd)
    if axis1 == axis2:
        raise ValueError("axis1 and axis2 cannot be the same")
    moved = np.moveaxis(a, (axis1, axis2), (-2, -1))
    n1, n2 = static_shape(moved)[-2:]
    offset = int(offset)
    rows = np.arange(max(0, -offset), max(0, min(n1, n2 - offset)))
    return moved[..., rows, rows + offset]


@composition(np.diagonal)
def _diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    return diagonal_of(a, offset, axis1, axis2)


@composition(np.linalg.diagonal)
def _linalg_diagonal(x: Any, /, *, offset: int = 0) -> Any:
    return diagonal_of(x, offset, -2, -1)


@composition(np.diag)
def _diag(v: Any, k: int = 0) -> Any:
    v = array_arg(v)
    nd = ndim_of(v)
    if nd == 1:
        return diagflat(v, k)
    if nd == 2:
        return diagonal_of(v, k, 0, 1)
    raise ValueError("Input must be 1- or 2-d.")


@composition(np.trace)
def _trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> Any:
    return np.sum(diagonal_of(a, offset, axis1, axis2), axis=-1, dtype=dtype)


@composition(np.linalg.trace)
def _linalg_trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    return np.sum(diagonal_of(x, offset, -2, -1), axis=-1, dtype=dtype)


@composition(np.kron)
def _kron(a: Any, b: Any) -> Any:
    """NumPy's kron: ``a`` and ``b`` interleaved by new axes, multiplied, then reshaped."""
    b = array_arg(b)
    a = array_arg(a)
    ndb, nda = ndim_of(b), ndim_of(a)
    if nda < ndb:
        a = np.reshape(a, (1,) * (ndb - nda) + static_shape(a))
        nda = ndb
    nd = max(nda, ndb)
    if nda == 0 or ndb == 0:
        return np.multiply(a, b)
    as_, bs = static_shape(a), static_shape(b)
    as_ = (1,) * max(0, ndb - nda) + as_
    bs = (1,) * max(0, nda - ndb) + bs
    a_arr = np.expand_dims(a, tuple(range(ndb - nda))) if ndb > nda else a
    b_arr = np.expand_dims(b, tuple(range(nda - ndb))) if nda > ndb else b
    a_arr = np.expand_dims(a_arr, tuple(range(1, nd * 2, 2)))
    b_arr = np.expand_dims(b_arr, tuple(range(0, nd * 2, 2)))
    return np.reshape(np.multiply(a_arr, b_arr), tuple(x * y for x, y in zip(as_, bs)))


@composition(np.cross)
def _cross(
    a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Any = None
) -> Any:
    """NumPy's cross, component by component in the promoted dtype (``a1*b2 - a2*b1``)."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = array_arg(a), array_arg(b)
    if ndim_of(a) < 1 or ndim_of(b) < 1:
        raise ValueError("At least one array has zero dimension")
    a = np.moveaxis(a, normalize_axis_index(axisa, ndim_of(a), msg_prefix="axisa"), -1)
    b = np.moveaxis(b, normalize_axis_index(axisb, ndim_of(b), msg_prefix="axisb"), -1)
    na, nb = static_shape(a)[-1], static_shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if na == 2 or nb == 2:
        import warnings  # noqa: PLC0415 - only for the deprecated 2-vectors

        warnings.warn(
            "Arrays of 2-dimensional vectors are deprecated. Use arrays of "
            "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
            DeprecationWarning,
            stacklevel=3,
        )
    dtype = np.promote_types(a.dtype, b.dtype)
    a, b = a.astype(dtype), b.astype(dtype)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    if na == 2 and nb == 2:
        return np.subtract(np.multiply(a0, b1), np.multiply(a1, b0))
    shape = np.broadcast_shapes(static_shape(a0), static_shape(b0)) + (3,)
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


@composition(np.linalg.cross)
def _linalg_cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    x1, x2 = array_arg(x1), array_arg(x2)
    d1, d2 = static_shape(x1)[axis], static_shape(x2)[axis]
    if d1 != 3 or d2 != 3:
        raise ValueError(
            "Both input arrays must be (arrays of) 3-dimensional vectors, but "
            f"they are {d1} and {d2} dimensional instead."
        )
    return _cross(x1, x2, axis=axis)


@composition(np.inner)
def _inner(a: Any, b: Any, /) -> Any:
    """NumPy's inner is ``dot(a, b)`` with ``b``'s last axis moved before its last but one."""
    a, b = array_arg(a), array_arg(b)
    if ndim_of(a) == 0 or ndim_of(b) == 0:
        # (NumPy sums the products from zero, as a dot does: a -0.0 product becomes +0.0)
        prod = np.multiply(a, b)
        return np.add(prod, np.zeros((), prod.dtype))
    return np.dot(a, np.moveaxis(b, -1, -2) if ndim_of(b) >= 2 else b)


@composition(np.tensordot, np.linalg.tensordot)
def _tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    """NumPy's tensordot: both transposed and reshaped to matrices, one ``dot``, reshaped."""
    axes = static_value(axes)
    axes_a: Any  # an axis or a sequence of them, until made a list below
    axes_b: Any
    if isinstance(axes, (int, np.integer)):
        axes_a, axes_b = list(range(-int(axes), 0)), list(range(int(axes)))
    else:
        axes_a, axes_b = axes
    axes_a = list(axes_a) if np.ndim(axes_a) else [axes_a]
    axes_b = list(axes_b) if np.ndim(axes_b) else [axes_b]
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise ValueError("duplicate axes are not allowed in tensordot")
    a, b = array_arg(a), array_arg(b)
    as_, bs = static_shape(a), static_shape(b)
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
    return np.reshape(np.dot(at, bt), tuple(as_[i] for i in free_a) + tuple(bs[i] for i in free_b))


@composition(np.linalg.matmul)
def _linalg_matmul(x1: Any, x2: Any, /) -> Any:
    return bind(OpKind.MATMUL, (x1, x2))


@composition(np.linalg.outer)
def _linalg_outer(x1: Any, x2: Any, /) -> Any:
    x1, x2 = array_arg(x1), array_arg(x2)
    if ndim_of(x1) != 1 or ndim_of(x2) != 1:
        raise ValueError(
            "Input arrays must be one-dimensional, but they are "
            f"x1.ndim={ndim_of(x1)} and x2.ndim={ndim_of(x2)}."
        )
    return outer(x1, x2)


@composition(np.linalg.vecdot)
def _linalg_vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """NumPy's ``vecdot`` gufunc with ``axis=``: the core dimension is ``axis`` of *each*
    operand, counted from that operand's own rank, moved last before the loop dimensions
    broadcast (so operands of different rank pair their own axes, and NumPy's errors are
    NumPy's: an AxisError per operand, a ValueError for unequal core sizes)."""
    x1, x2 = array_arg(x1), array_arg(x2)
    if x1.shape is None or x2.shape is None:
        raise Opaque
    if None not in x1.shape + x2.shape:  # NumPy's own checks, on zero-stride stand-ins
        np.linalg.vecdot(  # type: ignore[call-overload]  # (the stubs' gufunc lacks axis=)
            *(np.broadcast_to(np.zeros((), x.dtype), x.shape) for x in (x1, x2)), axis=axis
        )
    moved = [
        np.moveaxis(x, normalize_axis_index(axis, ndim_of(x)), -1) if ndim_of(x) else x
        for x in (x1, x2)
    ]
    return bind(OpKind.VECDOT, tuple(moved))


@composition(np.linalg.matrix_power)
def _matrix_power(a: Any, n: Any) -> Any:
    """NumPy's matrix_power: repeated squaring with matmul (an inverse first for n < 0)."""
    a = array_arg(a)
    _square_stack(a)
    try:
        n = operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0:
        shape = static_shape(a)
        return np.broadcast_to(np.eye(shape[-2], dtype=a.dtype), shape).copy()
    if n < 0:
        a, n = inv(a), -n
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
        raise np.linalg.LinAlgError(
            f"{len(shape)}-dimensional array given. Array must be at least two-dimensional"
        )
    if None not in shape[-2:] and shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


@composition(np.linalg.multi_dot)
@declare.numpy_writes_out  # (its result is not always out: NumPy's own call)
def _multi_dot(arrays: Any) -> Any:
    """NumPy's multi_dot: the cheapest order of the chain from the static shapes (its own
    cost rules), then one ``dot`` per pair in that order."""
    arrays = [array_arg(a) for a in arrays]
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    if n == 2:
        return np.dot(arrays[0], arrays[1])
    first, last = ndim_of(arrays[0]), ndim_of(arrays[-1])
    if first == 1:
        arrays[0] = atleast_2d(arrays[0])
    if last == 1:
        arrays[-1] = np.transpose(atleast_2d(arrays[-1]))
    for a in arrays:
        if ndim_of(a) != 2:
            raise np.linalg.LinAlgError(
                f"{ndim_of(a)}-dimensional array given. Array must be two-dimensional"
            )
    shapes = [static_shape(a) for a in arrays]
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


@composition(np.linalg.tensorinv)
def _tensorinv(a: Any, ind: int = 2) -> Any:
    a = array_arg(a)
    shape = static_shape(a)
    if not shape:
        raise Opaque  # (NumPy's own error for a 0-d input)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    inv_shape = shape[ind:] + shape[:ind]
    prod = math.prod(shape[ind:])
    return np.reshape(inv(np.reshape(a, (prod, -1))), inv_shape)


@composition(np.linalg.tensorsolve)
def _tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    a, b = array_arg(a), array_arg(b)
    an = ndim_of(a)
    if axes is not None:
        allaxes = list(range(an))
        for k in axes:
            allaxes.remove(k)
            allaxes.insert(an, k)
        a = np.transpose(a, allaxes)
    shape = static_shape(a)
    old_shape = shape[-(an - ndim_of(b)) :]
    prod = math.prod(old_shape)
    if math.prod(shape) != prod**2:
        raise np.linalg.LinAlgError(
            "Input arrays must satisfy the requirement "
            "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])"
        )
    return np.reshape(solve(np.reshape(a, (prod, prod)), np.ravel(b)), old_shape)


@composition(np.linalg.svdvals)
def _svdvals(x: Any, /) -> Any:
    return svd(x, compute_uv=False)


@composition(np.linalg.matrix_rank)
def _matrix_rank(A: Any, tol: Any = None, hermitian: bool = False, *, rtol: Any = None) -> Any:
    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    A = array_arg(A)
    if ndim_of(A) < 2:
        raise Opaque  # NumPy answers a Python int from the data
    S = svd(A, compute_uv=False, hermitian=hermitian)
    if tol is None:
        if rtol is None:
            rtol = max(static_shape(A)[-2:]) * np.finfo(S.dtype).eps
        else:
            rtol = np.expand_dims(array_arg(rtol), -1)
        tol = np.multiply(np.maximum.reduce(S, axis=-1, keepdims=True, initial=0), rtol)
    else:
        tol = np.expand_dims(array_arg(tol), -1)
    return np.count_nonzero(np.greater(S, tol), axis=-1)


@composition(np.linalg.cond)
def _cond(x: Any, p: Any = None) -> Any:
    """NumPy's cond: the ratio of extreme singular values, or ``norm(x) * norm(inv(x))``
    (the inverse in double precision, as NumPy computes it); NaN where the inverse failed
    but ``x`` had no NaN becomes infinity."""
    x = array_arg(x)
    shape = static_shape(x)
    if math.prod(shape) == 0 and math.prod(shape[-2:]) == 0:
        raise np.linalg.LinAlgError("cond is not defined on empty arrays")
    if p is None or p in (2, -2):
        s = svd(x, compute_uv=False)
        r = np.divide(s[..., -1], s[..., 0]) if p == -2 else np.divide(s[..., 0], s[..., -1])
    else:
        _square_stack(x)
        complex_ = x.dtype.kind == "c"
        wide = x.astype(np.complex128 if complex_ else np.float64)
        real_t = np.empty(0, _inv_dtype(x.dtype)).real.dtype
        r = np.multiply(_norm(x, p, axis=(-2, -1)), _norm(inv(wide), p, axis=(-2, -1)))
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
    x = array_arg(x)
    if x.dtype.kind not in "fc":
        x = x.astype(np.float64)  # NumPy's norm computes integers in float64
    nd = ndim_of(x)
    if axis is None and (
        ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1)
    ):
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
        shape = list(static_shape(x))
        shape[axis[0]] = shape[axis[1]] = 1
        ret = np.reshape(ret, tuple(shape))
    return ret


# (NumPy's stubs type ufunc.reduce's keepdims as either literal, False or True, not a bool)
def _vector_norm_along(x: Any, ord: Any, axis: tuple, keepdims: bool) -> Any:
    absx = np.abs(x)
    if ord == np.inf:
        return np.maximum.reduce(  # type: ignore[call-overload]
            absx, axis=axis, keepdims=keepdims, initial=0
        )
    if ord == -np.inf:
        return np.min(absx, axis=axis, keepdims=keepdims)
    if ord == 0:
        real_t = np.empty(0, x.dtype).real.dtype
        return np.sum(np.not_equal(x, 0).astype(real_t), axis=axis, keepdims=keepdims)
    if ord == 1:
        return np.add.reduce(  # type: ignore[call-overload]
            absx, axis=axis, keepdims=keepdims
        )
    if ord is None or ord == 2:
        s = np.real(np.multiply(np.conj(x), x)) if x.dtype.kind == "c" else np.multiply(x, x)
        return np.sqrt(
            np.add.reduce(  # type: ignore[call-overload]
                s, axis=axis, keepdims=keepdims
            )
        )
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    ret = np.add.reduce(  # type: ignore[call-overload]
        np.power(absx, ord).astype(absx.dtype), axis=axis, keepdims=keepdims
    )
    return np.power(ret, np.reciprocal(ord, dtype=ret.dtype)).astype(ret.dtype)


def _matrix_norm_along(x: Any, ord: Any, row: int, col: int, axis: tuple) -> Any:
    def svd_norm(reduce: Callable, **kw: Any) -> Any:
        s = svd(np.moveaxis(x, (row, col), (-2, -1)), compute_uv=False)
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
        return np.maximum.reduce(sums, axis=r, initial=0) if ord == np.inf else np.min(sums, axis=r)
    if ord in (None, "fro", "f"):
        s = np.real(np.multiply(np.conj(x), x)) if x.dtype.kind == "c" else np.multiply(x, x)
        return np.sqrt(np.add.reduce(s, axis=axis))
    if ord == "nuc":
        return svd_norm(np.add.reduce, initial=0)
    raise ValueError("Invalid norm order for matrices.")


@composition(np.linalg.vector_norm)
def _vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    x = array_arg(x)
    shape = list(static_shape(x))
    if axis is None:
        x, along = np.ravel(x), 0
    elif isinstance(axis, tuple):
        axes = normalize_axis_tuple(axis, len(shape))
        rest = tuple(i for i in range(len(shape)) if i not in axes)
        x = np.reshape(
            np.transpose(x, axis + rest),
            (math.prod([shape[i] for i in axis]), *[shape[i] for i in rest]),
        )
        along = 0
    else:
        along = axis
    res = _norm(x, axis=along, ord=ord)
    if keepdims:
        for i in normalize_axis_tuple(range(len(shape)) if axis is None else axis, len(shape)):
            shape[i] = 1
        res = np.reshape(res, tuple(shape))
    return res


@composition(np.linalg.matrix_norm)
def _matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    return _norm(x, axis=(-2, -1), keepdims=keepdims, ord=ord)


@composition(np.einsum_path)
def _einsum_path(*operands: Any, optimize: Any = "greedy", einsum_call: bool = False) -> Any:
    """Only shapes decide the path: NumPy's own on zero-strided stand-ins (no data)."""
    stand_ins = [
        np.broadcast_to(np.zeros((), o.dtype), static_shape(o))
        if isinstance(o, (Tensor, Variable))
        else o
        for o in operands
    ]
    # (the stubs type einsum_call=False only; np.einsum passes True)
    return np.einsum_path(
        *stand_ins,
        optimize=optimize,
        einsum_call=einsum_call,  # type: ignore[arg-type]
    )
