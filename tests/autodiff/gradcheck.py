"""Finite-difference checks shared by the rule tests (``tests/`` is on ``sys.path``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st

import kernel_ext as kx

EPS = 1e-6
SETTINGS = settings(max_examples=15, deadline=None)


def numeric_grad(f: Callable[..., Any], args: list[np.ndarray], i: int) -> np.ndarray:
    x = args[i]
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus = [a.copy() for a in args]
        minus = [a.copy() for a in args]
        plus[i][idx] += EPS
        minus[i][idx] -= EPS
        out[idx] = (f(*plus) - f(*minus)) / (2 * EPS)
    return out


def check(
    f: Callable[..., Any], *args: Any, seed: int = 0, rtol: float = 1e-5, atol: float = 1e-6
) -> None:
    args = [np.asarray(a, np.float64) for a in args]
    w = np.random.default_rng(seed).uniform(0.5, 1.5, np.shape(f(*args)))

    def loss(*a: Any) -> Any:
        return np.sum(f(*a) * w)

    grads = kx.grad(loss, argnums=tuple(range(len(args))))(*args)
    for i, g in enumerate(grads):
        expected = numeric_grad(lambda *a: float(np.sum(f(*a) * w)), args, i)
        np.testing.assert_allclose(g, expected, rtol=rtol, atol=atol, err_msg=f"argument {i}")


def arrays(shape: tuple, lo: float = -2.0, hi: float = 2.0) -> st.SearchStrategy:
    return st.lists(
        st.floats(lo, hi), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))
    ).map(lambda v: np.array(v, np.float64).reshape(shape))


def distinct(x: np.ndarray) -> bool:
    """No two elements within 1e-3 (finite differences stay on one side of every tie)."""
    v = np.sort(np.ravel(x))
    return bool(np.all(np.diff(v) > 1e-3))
