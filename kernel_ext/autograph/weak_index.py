"""The index of a graph loop that stands for a Python ``range``: :class:`WeakInt`.

A ``for i in range(n)`` whose body AutoGraph traces once as a graph loop gives the body a
traced int64 index that must still behave as the Python int it stands for: it promotes as a
weak scalar (NEP 50), stays a ``WeakInt`` under integer arithmetic, and raises
:class:`NeedsPythonValue` where Python would need the number itself (then the loop unrolls).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import errors
from ..trace.tensor import Tensor, describe_tensor, user_frame_description

_PY_NUMBERS = (bool, int, float, complex)


class NeedsPythonValue(errors.TracedBoolError):
    """A graph loop's index (or another traced value) was used where Python needs a number.

    Raised while a loop body is traced as a graph loop body; the loop then unrolls instead
    when it can, so users see it only when no unrolling is possible. ``use`` says what
    needed the number and ``where`` the user's line: the loop note names them.
    """

    def __init__(self, message: str, use: str = "", where: str = "") -> None:
        super().__init__(message)
        self.use, self.where = use, where


def is_py_number(value: Any) -> bool:
    return type(value) in _PY_NUMBERS


# -- the index of a graph loop that stands for a Python range ---------------------------------

_INT_CLOSED = frozenset(
    {
        np.add,
        np.subtract,
        np.multiply,
        np.floor_divide,
        np.remainder,
        np.negative,
        np.positive,
        np.absolute,
        np.invert,
        np.bitwise_and,
        np.bitwise_or,
        np.bitwise_xor,
        np.left_shift,
        np.right_shift,
        np.maximum,
        np.minimum,
    }
)
_COMPARE = frozenset({np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal})


def _is_weak_int(value: Any) -> bool:
    return isinstance(value, WeakInt) or type(value) in (bool, int)


def _weak_binary(uf: np.ufunc, name: str, reflected: bool) -> Callable[[Any, Any], Any]:
    def op(self: WeakInt, other: Any) -> Any:
        a, b = (other, self) if reflected else (self, other)
        if _is_weak_int(other):
            return self._int_op(uf, a, b, f"`{name}`")
        if type(other) in (float, complex):
            raise self._needs_python(f"`{name}` with a Python {type(other).__name__}")
        return uf(a, b)

    op.__name__ = name
    return op


def _weak_unary(uf: np.ufunc, name: str) -> Callable[[Any], Any]:
    def op(self: WeakInt) -> Any:
        return self._int_op(uf, self, None, f"`{name}`")

    op.__name__ = name
    return op


class WeakInt(Tensor):
    """The index of a Python ``range`` loop that runs as a graph loop.

    Its value is an int64 graph value, but it promotes as the Python int it stands for
    (NEP 50's weak scalars): ``x32 * i`` stays float32, ``i + 1`` is again a ``WeakInt``.
    Where a Python int would become something a graph value cannot stand for (``i / 2`` is a
    Python float, ``lst[i]`` needs a real int) it raises :class:`NeedsPythonValue`, and the
    loop unrolls instead.
    """

    __slots__ = ()

    def _needs_python(self, what: str) -> NeedsPythonValue:
        where = user_frame_description()
        return NeedsPythonValue(
            f"{what} of the loop index {describe_tensor(self)} at {where}: "
            "the loop runs as a graph loop, where its index is a graph value, but this use "
            "needs the Python int itself. Fix: index arrays with it (x[i] is recorded), keep "
            "its arithmetic to ints, or give the loop a Python trip count so it can unroll.",
            use=what,
            where=where,
        )

    def _int_op(self, uf: np.ufunc, a: Any, b: Any, what: str) -> Any:
        """``a <op> b`` between Python ints: Python's result type, computed in the graph."""
        operands = (a,) if b is None else (a, b)
        if uf in _INT_CLOSED:
            out = Tensor.__array_ufunc__(self, uf, "__call__", *operands)
            return WeakInt(out.node, out.context)
        if uf in _COMPARE:
            return Tensor.__array_ufunc__(self, uf, "__call__", *operands)
        raise self._needs_python(what)  # / and ** give Python floats

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        strong = [x for x in inputs if not _is_weak_int(x) and not is_py_number(x)]
        if method == "__call__" and strong:
            # NumPy converts a Python int to the other operands' dtype (NEP 50); comparisons
            # compare its exact value, which int64 holds.
            target = np.result_type(
                *[np.dtype(getattr(x, "dtype", np.float64)) for x in strong],
                *[1 for x in inputs if isinstance(x, WeakInt)],
            )
            if not (ufunc in _COMPARE and target.kind in "iu"):
                inputs = tuple(
                    x.astype(target) if isinstance(x, WeakInt) and x.dtype != target else x
                    for x in inputs
                )
        return Tensor.__array_ufunc__(self, ufunc, method, *inputs, **kwargs)

    def __array_function__(self, func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
        raise self._needs_python(f"np.{getattr(func, '__name__', 'function')}(...)")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise self._needs_python("Converting to an array (a plain array indexed with it?)")

    def __index__(self) -> int:
        raise self._needs_python("Using as a Python int (a list index, a count)")

    def __int__(self) -> int:
        raise self._needs_python("int()")

    def __float__(self) -> float:
        raise self._needs_python("float()")

    def __bool__(self) -> bool:
        raise self._needs_python("bool()")


_stem: str
_uf: np.ufunc  # (one name for the ufuncs of all three loops below)
for _stem, _uf in (
    ("add", np.add),
    ("sub", np.subtract),
    ("mul", np.multiply),
    ("floordiv", np.floor_divide),
    ("mod", np.remainder),
    ("truediv", np.true_divide),
    ("pow", np.power),
    ("and", np.bitwise_and),
    ("or", np.bitwise_or),
    ("xor", np.bitwise_xor),
    ("lshift", np.left_shift),
    ("rshift", np.right_shift),
):
    setattr(WeakInt, f"__{_stem}__", _weak_binary(_uf, f"__{_stem}__", False))
    setattr(WeakInt, f"__r{_stem}__", _weak_binary(_uf, f"__r{_stem}__", True))
for _stem, _uf in (
    ("lt", np.less),
    ("le", np.less_equal),
    ("gt", np.greater),
    ("ge", np.greater_equal),
    ("eq", np.equal),
    ("ne", np.not_equal),
):
    setattr(WeakInt, f"__{_stem}__", _weak_binary(_uf, f"__{_stem}__", False))
for _stem, _uf in (
    ("neg", np.negative),
    ("pos", np.positive),
    ("abs", np.absolute),
    ("invert", np.invert),
):
    setattr(WeakInt, f"__{_stem}__", _weak_unary(_uf, f"__{_stem}__"))
del _stem, _uf


def as_weak_int(value: Any) -> Any:
    """``value`` as a :class:`WeakInt` when it is a traced int (else as it is)."""
    if isinstance(value, Tensor) and not isinstance(value, WeakInt) and value.dtype.kind in "iu":
        return WeakInt(value.node, value.context)
    return value
