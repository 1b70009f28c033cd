"""``kx.grad`` and ``kx.value_and_grad``: gradients as function transforms (JAX's shape).

``kx.grad(f)`` is a function that returns the gradient of ``f`` (a scalar-valued NumPy
function) with respect to the arguments ``argnums`` names. Called while a ``kx.function`` is
being traced it runs inline, with a :class:`~kernel_ext.autodiff.GradientTape` around ``f``, so
the gradient joins the caller's graph (and ``kx.grad(kx.grad(f))`` differentiates the backward
ops: higher order). Called eagerly it runs as its own ``kx.function`` (one per transform,
traced once per signature). Python numbers at ``argnums`` are differentiated as float64.
Unconnected arguments get zeros, as in JAX.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..autodiff import GradientTape
from ..trace import current_context
from .function import Function


class _GradTransform:
    """The callable ``kx.grad``/``kx.value_and_grad`` return."""

    def __init__(
        self, fn: Callable, argnums: int | Sequence[int], has_aux: bool, with_value: bool
    ) -> None:
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._argnums = argnums
        self._has_aux = has_aux
        self._with_value = with_value
        kind = "value_and_grad" if with_value else "grad"
        self._name = f"{kind}_{getattr(fn, '__name__', 'function')}"
        self._function: Function | None = None

    def _positions(self, n_args: int) -> tuple[int, ...]:
        nums = (self._argnums,) if isinstance(self._argnums, int) else tuple(self._argnums)
        for i in nums:
            if not -n_args <= i < n_args:
                raise ValueError(
                    f"{self._name}: argnums {self._argnums!r} names argument {i} "
                    f"but the call has {n_args} positional arguments"
                )
        return tuple(i % n_args for i in nums)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if current_context() is not None:
            return self._inline(*args, **kwargs)
        positions = self._positions(len(args))
        args = tuple(
            np.asarray(a, np.float64)
            if i in positions and isinstance(a, (int, float)) and not isinstance(a, bool)
            else a
            for i, a in enumerate(args)
        )
        if self._function is None:
            self._function = Function(self._inline, name=self._name, autograph=False)
        return self._function(*args, **kwargs)

    def _inline(self, *args: Any, **kwargs: Any) -> Any:
        positions = self._positions(len(args))
        fn = _converted(self._fn)
        with GradientTape(watch_accessed_variables=False) as tape:
            for i in positions:
                tape.watch(args[i])
            out = fn(*args, **kwargs)
        if self._has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(
                    f"{self._name}: with has_aux=True the function must return a pair (value, aux)"
                )
            value, aux = out
        else:
            value, aux = out, None
        if np.ndim(value) != 0 and getattr(value, "shape", ()) != ():
            raise TypeError(
                f"{self._name}: the function must return a scalar (0-d) value, "
                f"got shape {getattr(value, 'shape', np.shape(value))}. Fix: "
                "reduce it (np.sum, np.mean), or use GradientTape.jacobian."
            )
        grads = tape.gradient(value, [args[i] for i in positions], unconnected_gradients="zero")
        grad = grads[0] if isinstance(self._argnums, int) else tuple(grads)
        if self._with_value:
            return ((value, aux), grad) if self._has_aux else (value, grad)
        return (grad, aux) if self._has_aux else grad


def _converted(fn: Callable) -> Callable:
    """``fn`` as AutoGraph converts it (its `if`/`while` on traced values become graph
    control flow), or as it is where AutoGraph cannot convert it."""
    if isinstance(fn, (Function, _GradTransform)):
        return fn
    try:
        from ..autograph import convert

        return convert(fn)
    except Exception:  # noqa: BLE001 - a builtin or C function runs as it is
        return fn


def grad(fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The gradient of scalar-valued ``fn`` with respect to argument(s) ``argnums``
    (``jax.grad``); with ``has_aux`` ``fn`` returns ``(value, aux)`` and the result is
    ``(gradient, aux)``."""
    return _GradTransform(fn, argnums, has_aux, with_value=False)


def value_and_grad(
    fn: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False
) -> Callable:
    """``fn``'s value and gradient together (``jax.value_and_grad``): ``(value, gradient)``,
    or ``((value, aux), gradient)`` with ``has_aux``."""
    return _GradTransform(fn, argnums, has_aux, with_value=True)


__all__ = ["grad", "value_and_grad"]
