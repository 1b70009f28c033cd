"""VJP rules of the linear-algebra products and solves: matmul, dot, outer, inv, det, solve.

Registered into :data:`kernel_ext.autodiff.rules.VJP` on import (the package imports this
module); the matrix decompositions are in :mod:`kernel_ext.autodiff.decompositions`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import OpKind
from .rules import (
    Cotangent,
    Primal,
    multiply_vjp,
    reshape_like,
    rule,
    swap_last_axes,
    unbroadcast,
)

K = OpKind


def _rank(p: Primal, i: int) -> int:
    """The rank of argument ``i`` (a product's rank decides its rule; it is always known)."""
    shape = p.shape(i)
    if shape is None:
        raise TypeError(f"the gradient of {p.node.op.value} needs its operands' ranks")
    return len(shape)


@rule(K.MATMUL)
def _matmul(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    a_vec, b_vec = _rank(p, 0) == 1, _rank(p, 1) == 1
    a2 = np.expand_dims(a, 0) if a_vec else a
    b2 = np.expand_dims(b, -1) if b_vec else b
    g2 = g
    if a_vec and b_vec:
        return [lambda: g * b, lambda: g * a]
    if a_vec:
        g2 = np.expand_dims(g2, -2)
    if b_vec:
        g2 = np.expand_dims(g2, -1)

    def da() -> Any:
        d = np.matmul(g2, swap_last_axes(b2))
        d = np.squeeze(d, -2) if a_vec else d
        return unbroadcast(d, p.shape(0))

    def db() -> Any:
        d = np.matmul(swap_last_axes(a2), g2)
        d = np.squeeze(d, -1) if b_vec else d
        return unbroadcast(d, p.shape(1))

    return [da, db]


@rule(K.DOT)
def _dot(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    na, nb = _rank(p, 0), _rank(p, 1)
    if na == 0 or nb == 0:
        return list(multiply_vjp(p, g))
    if na <= 2 and nb <= 2:
        return list(_matmul(p, g))
    if nb == 1:  # (..., k) . (k,): sum over a's last axis
        return [
            lambda: np.expand_dims(g, -1) * b,
            lambda: np.tensordot(g, a, axes=(list(range(na - 1)), list(range(na - 1)))),
        ]
    raise NotImplementedError(
        "the gradient of np.dot of an array with more than two "
        "dimensions by a matrix is not implemented; use np.matmul"
    )


@rule(K.OUTER)
def _outer(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    fa, fb = np.reshape(a, (-1,)), np.reshape(b, (-1,))
    return [lambda: reshape_like(np.matmul(g, fb), a), lambda: reshape_like(np.matmul(fa, g), b)]


@rule(K.INV)
def _inv(p: Primal, g: Any) -> list[Cotangent]:
    t = swap_last_axes(p.out)
    return [lambda: -np.matmul(np.matmul(t, g), t)]


@rule(K.DET)
def _det(p: Primal, g: Any) -> list[Cotangent]:
    a = p.args[0]
    return [
        lambda: np.expand_dims(np.expand_dims(g * p.out, -1), -1) * swap_last_axes(np.linalg.inv(a))
    ]


@rule(K.SOLVE)
def _solve(p: Primal, g: Any) -> list[Cotangent]:
    a, _b = p.args
    x = p.out
    assert x is not None  # (a solve has its result)
    vector = _rank(p, 1) == 1
    gb = np.linalg.solve(swap_last_axes(a), g)

    def da() -> Any:
        d = (
            -(np.expand_dims(gb, -1) * np.expand_dims(x, -2))
            if vector
            else -np.matmul(gb, swap_last_axes(x))
        )
        return unbroadcast(d, p.shape(0))

    return [da, lambda: unbroadcast(gb, p.shape(1))]
