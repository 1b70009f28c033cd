"""Polynomials (coefficient arrays of static length) and the NumPy functions whose own Python
bodies trace unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..tensor import HANDLERS
from .common import Opaque, array_arg, composition, ndim_of, static_shape, static_value


@composition(np.polyval)
def _polyval(p: Any, x: Any) -> Any:
    p = array_arg(p)
    if isinstance(x, np.poly1d) or ndim_of(p) == 0:
        raise Opaque  # (NumPy's own error for 0-d coefficients)
    x = array_arg(x)
    y = np.zeros_like(x)
    for i in range(static_shape(p)[0] if ndim_of(p) else 0):
        y = np.add(np.multiply(y, x), p[i])
    return y


@composition(np.polyder)
def _polyder(p: Any, m: int = 1) -> Any:
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    if isinstance(p, np.poly1d) or ndim_of(array_arg(p)) == 0:
        raise Opaque  # (NumPy's own error for 0-d coefficients)
    p = array_arg(p)
    if m == 0:
        return p
    n = static_shape(p)[0] - 1
    return _polyder(np.multiply(p[:-1], np.arange(n, 0, -1)), m - 1)


@composition(np.polyint)
def _polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    k = static_value(k)
    if isinstance(p, np.poly1d) or ndim_of(array_arg(p)) == 0:
        raise Opaque  # (NumPy's own error for 0-d coefficients)
    k = np.zeros(m, float) if k is None else np.atleast_1d(k)
    if len(k) == 1 and m > 1:
        k = k[0] * np.ones(m, float)
    if len(k) < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    p = array_arg(p)
    if m == 0:
        return p
    y = np.concatenate(
        (np.true_divide(p, np.arange(static_shape(p)[0], 0, -1)), np.asarray([k[0]]))
    )
    return _polyint(y, m - 1, k=k[1:])


@composition(np.vander)
def _vander(x: Any, N: Any = None, increasing: bool = False) -> Any:
    x = array_arg(x)
    if ndim_of(x) != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = static_shape(x)[0]
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


@composition(np.polyfit)
def _polyfit(
    x: Any, y: Any, deg: int, rcond: Any = None, full: bool = False, w: Any = None, cov: Any = False
) -> Any:
    """NumPy's least-squares fit on scaled Vandermonde columns (no weights, no covariance;
    NumPy's rank warning needs the data and is not given)."""
    if w is not None or cov or full:
        raise Opaque
    order = int(deg) + 1
    x, y = array_arg(x), array_arg(y)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if ndim_of(x) != 1:
        raise TypeError("expected 1D vector for x")
    if static_shape(x)[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if ndim_of(y) < 1 or ndim_of(y) > 2:
        raise TypeError("expected 1D or 2D array for y")
    if static_shape(x)[0] != static_shape(y)[0]:
        raise TypeError("expected x and y to have same length")
    x, y = np.add(x, 0.0), np.add(y, 0.0)
    if rcond is None:
        rcond = static_shape(x)[0] * np.finfo(x.dtype).eps
    lhs = _vander(x, order)
    rhs = y
    scale = np.sqrt(np.sum(np.multiply(lhs, lhs), axis=0))
    lhs = np.divide(lhs, scale)
    c = np.linalg.lstsq(lhs, rhs, rcond)[0]
    return np.transpose(np.divide(np.transpose(c), scale))


_NUMPY_BODIES: tuple[Callable[..., Any], ...] = (
    np.polyadd,
    np.polysub,
    np.union1d,
    np.unique_values,
    np.unique_counts,
    np.unique_inverse,
    np.unique_all,
    np.rollaxis,
)


# NumPy's own Python bodies, unchanged: every call in them dispatches back here (np.unique,
# np.concatenate, np.atleast_1d, np.moveaxis, ...), so they trace as those ops.
for _func in _NUMPY_BODIES:
    HANDLERS.add(_func, _func._implementation)  # type: ignore[attr-defined]  # (not in the stubs)
