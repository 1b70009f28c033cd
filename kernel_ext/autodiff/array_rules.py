"""VJP rules of gufuncs and array helpers (copies of elements).

Most are short: ``vdot``/``vecdot``/``matvec``/``vecmat`` are products (the elementwise ones,
``degrees`` to ``divmod``, are registered with each op in :mod:`kernel_ext.ops.elementwise`).
Ops that copy
elements (``diagflat``, ``insert``, ``compress``; ``unique``'s values and ``partition`` in
:mod:`kernel_ext.ops.sorting`) route each output's cotangent back to the element it copies,
found by applying NumPy's own function to an iota array (the positions) where the copy
pattern is static, and otherwise recomputed from the forward result. Ops with a natural
decomposition into ops with rules (``correlate``/``convolve`` as a Toeplitz product,
``interp`` as a gather and a lerp) are differentiated by composition
(:func:`~kernel_ext.autodiff.decompositions.composed`); the order statistics' and scans' are
:mod:`kernel_ext.ops.reductions`'.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ..ir import OpKind
from ..trace import Tensor
from .decompositions import composed
from .rules import NOTES, Cotangent, Primal, rule, unbroadcast

K = OpKind


def static_shape(x: Any, what: str) -> tuple:
    shape = x.shape if isinstance(x, Tensor) else np.shape(x)
    if shape is None or None in shape:
        raise NotImplementedError(
            f"the gradient of {what} needs static shapes; give the "
            "arguments static shapes in input_signature"
        )
    return tuple(shape)


def sum_into(positions: np.ndarray, g: Any, size: int, shape: tuple) -> Any:
    """``zeros(shape)`` (flat ``size``) plus each element of ``g`` at its flat position in
    ``positions`` (same shape as ``g``; ``-1``: nowhere)."""
    keep = positions >= 0
    picked = g if keep.all() else g[keep]
    where = positions if keep.all() else positions[keep]
    sums = np.bincount(np.reshape(where, (-1,)), weights=np.reshape(picked, (-1,)), minlength=size)
    return np.reshape(sums, shape).astype(g.dtype)


# -- products ------------------------------------------------------------------------------------


@rule(K.VDOT)
def _vdot(p: Primal, g: Any) -> list[Cotangent]:
    """``sum(ravel(a) * ravel(b))`` (real arrays)."""
    a, b = p.args

    def part(mine: Any, other: Any) -> Any:
        return np.reshape(
            g * np.ravel(other),
            np.shape(mine)
            if not isinstance(mine, Tensor)
            else tuple(-1 if d is None else d for d in cast("tuple", mine.shape)),
        )

    return [
        (lambda: part(a, b)) if isinstance(a, Tensor) else None,
        (lambda: part(b, a)) if isinstance(b, Tensor) else None,
    ]


@rule(K.VECDOT)
def _vecdot(p: Primal, g: Any) -> list[Cotangent]:
    """``sum(x1 * x2, axis=-1)`` over broadcast batch axes."""
    x1, x2 = p.args
    ge = np.expand_dims(g, -1)
    return [
        (lambda: unbroadcast(ge * x2, p.shape(0))) if isinstance(x1, Tensor) else None,
        (lambda: unbroadcast(ge * x1, p.shape(1))) if isinstance(x2, Tensor) else None,
    ]


@rule(K.MATVEC)
def _matvec(p: Primal, g: Any) -> list[Cotangent]:
    """``out[..., i] = sum_j a[..., i, j] v[..., j]``."""
    a, v = p.args
    return [
        (lambda: unbroadcast(np.expand_dims(g, -1) * np.expand_dims(v, -2), p.shape(0)))
        if isinstance(a, Tensor)
        else None,
        (lambda: unbroadcast(np.sum(np.expand_dims(g, -1) * a, axis=-2), p.shape(1)))
        if isinstance(v, Tensor)
        else None,
    ]


@rule(K.VECMAT)
def _vecmat(p: Primal, g: Any) -> list[Cotangent]:
    """``out[..., j] = sum_i v[..., i] a[..., i, j]``."""
    v, a = p.args
    return [
        (lambda: unbroadcast(np.sum(a * np.expand_dims(g, -2), axis=-1), p.shape(0)))
        if isinstance(v, Tensor)
        else None,
        (lambda: unbroadcast(np.expand_dims(v, -1) * np.expand_dims(g, -2), p.shape(1)))
        if isinstance(a, Tensor)
        else None,
    ]


def _full_correlation(a: Any, v: Any) -> Any:
    """``c[k] = sum_j a[k - (m - 1) + j] v[j]`` for ``k`` in ``0 .. n + m - 2``: a gather of
    the zero-padded ``a`` into an ``(n + m - 1, m)`` Toeplitz matrix, times ``v``."""
    (n,), (m,) = a.shape, v.shape
    padded = np.concatenate([np.zeros(m - 1, a.dtype), a, np.zeros(m - 1, a.dtype)])
    windows = padded[np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]]
    return np.matmul(windows, v)


@rule(K.CORRELATE, K.CONVOLVE)
def _correlate(p: Primal, g: Any) -> list[Cotangent]:
    """By composition: the full correlation as a Toeplitz product (convolution: of the
    reversed ``v``), then NumPy's window of it for ``valid``/``same``."""
    a, v = p.args
    (n,), (m,) = static_shape(a, "np.correlate"), static_shape(v, "np.correlate")
    mode = p.attrs.get("mode", "valid")
    convolve = p.node.op is K.CONVOLVE
    k = min(n, m)
    length = {"valid": max(n, m) - k + 1, "same": max(n, m), "full": n + m - 1}[mode]
    start = {"valid": k - 1, "full": 0, "same": (k - 1) // 2 if convolve or n >= m else k // 2}[
        mode
    ]

    def fn(a: Any, v: Any) -> Any:
        full = _full_correlation(a, np.flip(v) if convolve else v)
        return full[start : start + length]

    return composed(p, g, fn)


# -- copies ------------------------------------------------------------------------------------


NOTES.update(
    {
        K.VDOT: "real arrays",
        K.VECDOT: "over the last axis",
        K.MATVEC: "",
        K.VECMAT: "",
        K.CORRELATE: "composition: a Toeplitz product",
        K.CONVOLVE: "composition: a Toeplitz product",
        K.FFT: "complex results: gradients are real only (a path through complex values raises)",
    }
)

__all__: list[str] = []
