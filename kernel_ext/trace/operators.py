"""``NumpyOperators``: Python's operator protocol for array-likes, built from the op table.

A traced :class:`~kernel_ext.trace.tensor.Tensor` and a ``kx.Variable`` both take part in
expressions the way an ``np.ndarray`` does: ``a + b`` is ``np.add(a, b)``, ``2 - a`` is
``np.subtract(2, a)``, ``-a`` is ``np.negative(a)``, ``a < b`` is ``np.less(a, b)``.
Each operator calls the NumPy function, and NumPy dispatches back to the operand's
``__array_ufunc__`` (which records the op while tracing, or reads the variable's value).

The dunders are not written out by hand: every :class:`~kernel_ext.ir.OpKind` that has a
``dunder`` gets its methods here, so the op table stays the one list of operators.

* binary ops (``ADD`` → ``"add"``): ``__add__``, ``__radd__`` and, for classes made with
  ``inplace=True``, ``__iadd__``;
* comparisons (:data:`kernel_ext.ir.COMPARISONS`): ``__lt__`` ... only (Python reflects them
  itself and has no in-place forms);
* unary ops (``NEGATIVE`` → ``"neg"``): ``__neg__``;
* ``divmod``: ``__divmod__`` / ``__rdivmod__`` are ``np.divmod``, as on ndarray.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ..ir import COMPARISONS, OpKind


def _numpy_callable(kind: OpKind) -> np.ufunc:
    """The NumPy function applying ``kind`` (its ufunc; ``np.matmul``, a ufunc too, for
    MATMUL)."""
    fn = kind.ufunc or kind.numpy_function
    if fn is None:  # pragma: no cover - guarded by the op table's tests
        raise LookupError(f"{kind!r} has a dunder but no NumPy function")
    return fn


def _named(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    fn.__name__ = fn.__qualname__ = name
    return fn


def _forward(uf: Callable[..., Any], name: str) -> Callable[[Any, Any], Any]:
    return _named(lambda self, other: uf(self, other), name)


def _reflected(uf: Callable[..., Any], name: str) -> Callable[[Any, Any], Any]:
    return _named(lambda self, other: uf(other, self), name)


def _unary(uf: Callable[..., Any], name: str) -> Callable[[Any], Any]:
    return _named(lambda self: uf(self), name)


def _inplace(uf: Callable[..., Any], name: str) -> Callable[[Any, Any], Any]:
    def op(self: Any, other: Any) -> Any:
        # NumPy's in-place semantics on the Python object (aliases see the new value); the
        # graph itself stays functional: the object is rebound to the result's node.
        self._rebind(uf(self, other))
        return self

    return _named(op, name)


#: ``ndarray.__pow__``'s fast paths (NumPy's ``fast_scalar_power``): an array of floats or
#: complex numbers raised to exactly the Python int 2 or -1, or the Python float 0.5, is
#: ``np.square`` / ``np.reciprocal`` / ``np.sqrt`` of it (for complex values other bits than
#: ``np.power``). NumPy scalars and integer arrays take ``np.power``.
POWER_FAST_PATHS: dict[tuple[type, Any], Callable[..., Any]] = {
    (int, 2): np.square,
    (int, -1): np.reciprocal,
    (float, 0.5): np.sqrt,
}


def power_function(base: Any, exponent: Any) -> Callable[..., Any] | None:
    """The ufunc ``base ** exponent`` is computed with when it is a fast path, else None
    (``np.power``); for a 0-d base whose form only the call decides (an argument that may be
    a NumPy scalar or a 0-d array), ``base.power_at_run_time``: NumPy's own ``**``."""
    if type(exponent) not in (int, float):
        return None
    fast = POWER_FAST_PATHS.get((type(exponent), exponent))
    if fast is None or np.dtype(base.dtype).kind not in "fc":
        return None
    holds_array = base.pow_base_is_array()
    if holds_array is None:
        # (float bits are the same either way; complex ones are not: NumPy decides per call)
        return (
            fast if np.dtype(base.dtype).kind == "f" else (lambda b: b.power_at_run_time(exponent))
        )
    return fast if holds_array else None


def _power(self: Any, other: Any) -> Any:
    fast = power_function(self, other)
    return fast(self) if fast is not None else np.power(self, other)


def _inplace_power(self: Any, other: Any) -> Any:
    fast = power_function(self, other)
    self._rebind(fast(self) if fast is not None else np.power(self, other))
    return self


#: ``(dunder stem, NumPy callable)`` of the binary operators that have reflected and in-place
#: forms, in op-table order.
BINARY_OPERATORS: tuple[tuple[str, np.ufunc], ...] = tuple(
    (k.dunder, _numpy_callable(k))
    for k in OpKind
    if k.dunder is not None and k not in COMPARISONS and _numpy_callable(k).nin == 2
)
#: ``(dunder stem, ufunc)`` of the comparisons (no reflected or in-place forms).
COMPARISON_OPERATORS: tuple[tuple[str, np.ufunc], ...] = tuple(
    # (every comparison has a dunder)
    (cast("str", k.dunder), _numpy_callable(k))
    for k in OpKind
    if k in COMPARISONS
)
#: ``(dunder stem, ufunc)`` of the unary operators.
UNARY_OPERATORS: tuple[tuple[str, np.ufunc], ...] = tuple(
    (k.dunder, _numpy_callable(k))
    for k in OpKind
    if k.dunder is not None and _numpy_callable(k).nin == 1
)


class NumpyOperators:
    """Mixin: Python operators that call the matching NumPy function on ``self``.

    Subclass with ``inplace=True`` to get ``__iadd__`` & co., which rebind the object itself
    to the result (such a subclass defines ``_rebind(value)``, its own hook): ``x += 1`` on
    a traced value then changes what every alias of ``x`` names, as on an ndarray. Without it
    (the default), ``x += 1`` falls back to ``x = x + 1``, which rebinds only the name: right
    for a ``kx.Variable``, whose value changes only through ``assign_add``.
    """

    __slots__ = ()

    def __init_subclass__(cls, *, inplace: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if inplace:
            for stem, uf in BINARY_OPERATORS:
                setattr(cls, f"__i{stem}__", _inplace(uf, f"__i{stem}__"))
            cls.__ipow__ = _named(_inplace_power, "__ipow__")  # type: ignore[attr-defined]

    def pow_base_is_array(self) -> bool | None:
        """Does ``self`` stand for an ndarray (NumPy's ``**`` fast paths apply), not a
        NumPy scalar (None: only the call knows)? An array-like's value is an array."""
        return True

    # (NumPy's stubs take only arrays and scalars, not an operand with __array_ufunc__)
    def __divmod__(self, other: Any) -> tuple[Any, Any]:
        return np.divmod(self, other)  # type: ignore[call-overload]

    def __rdivmod__(self, other: Any) -> tuple[Any, Any]:
        return np.divmod(other, self)  # type: ignore[call-overload]


for _stem, _uf in BINARY_OPERATORS:
    setattr(NumpyOperators, f"__{_stem}__", _forward(_uf, f"__{_stem}__"))
    setattr(NumpyOperators, f"__r{_stem}__", _reflected(_uf, f"__r{_stem}__"))
setattr(NumpyOperators, "__pow__", _named(_power, "__pow__"))  # noqa: B010 - as the ones above
for _stem, _uf in COMPARISON_OPERATORS:
    setattr(NumpyOperators, f"__{_stem}__", _forward(_uf, f"__{_stem}__"))
for _stem, _uf in UNARY_OPERATORS:
    setattr(NumpyOperators, f"__{_stem}__", _unary(_uf, f"__{_stem}__"))
del _stem, _uf
