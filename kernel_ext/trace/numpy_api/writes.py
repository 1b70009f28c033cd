"""NumPy calls that write into an argument: the functionalized target (the traced value takes the
new value) and NumPy's own call writing into a copy of ``out`` (``OverwritingCall``,
``UfuncIntoCopy``), for the options no op covers.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ..opaque import numpy_call
from ..tensor import FALLBACK, Tensor


def writable_target(dst: Any, what: str, scalar_error: str | None) -> Tensor:
    """The traced value ``dst`` stands for (a plain array is promoted, see TraceContext), as
    the destination of a write: ``scalar_error`` is NumPy's ``TypeError`` text for a NumPy
    scalar there, or None where NumPy writes into a temporary (``Tensor.array_target``)."""
    if isinstance(dst, Tensor):
        return dst.array_target(what, scalar_error)
    if isinstance(dst, np.ndarray):
        from ..state import current_context

        ctx = current_context()
        if ctx is not None:
            return ctx.promote(dst)
    raise TypeError(f"{what} needs an array to write into, got {type(dst).__name__}")


def dtype_name(value: Any) -> str:
    """The NumPy scalar type's name of ``value``'s dtype (``float64``), for NumPy's words."""
    return np.dtype(getattr(value, "dtype", np.float64)).type.__name__


class OverwritingCall:
    """``func`` run on a copy of its argument ``name``, returning ``(result, the copy
    after the call)``: a NumPy function that changes an argument in place
    (``overwrite_input=True``, ``copy=False``) as a pure call whose second result the
    argument then takes, so the caller's array ends as eager NumPy leaves it."""

    writes_a_copy = True  # (numpy_call lets its out= through: the buffer is a copy)

    def __init__(self, func: Callable, name: str) -> None:
        self.func, self.name = func, name
        self.__name__ = getattr(func, "__name__", "call")
        self.__module__ = getattr(func, "__module__", "numpy")

    def __call__(self, *args: Any, **kwargs: Any) -> tuple:
        bound = inspect.signature(self.func).bind(*args, **kwargs)
        given = bound.arguments[self.name]
        one = isinstance(given, tuple) and len(given) == 1  # (out=(buffer,))
        work = np.array(given[0] if one else given, copy=True)
        bound.arguments[self.name] = (work,) if one else work
        result = self.func(*bound.args, **bound.kwargs)
        # (NumPy returns out itself from most calls: then the argument is the result; a
        # function that returns nothing, np.putmask, gives the argument only)
        return (work,) if result is work or result is None else (result, work)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OverwritingCall) and (other.func, other.name) == (
            self.func,
            self.name,
        )

    def __hash__(self) -> int:
        return hash((OverwritingCall, self.func, self.name))


def overwriting_call(func: Callable, name: str, args: tuple, kwargs: dict) -> Any:
    """``func(*args, **kwargs)`` that writes into its argument ``name`` (see
    :class:`OverwritingCall`): the result, and the argument updated in place. For
    ``name="out"`` the result is ``out`` itself, as NumPy returns it."""
    target = inspect.signature(func).bind(*args, **kwargs).arguments[name]
    if name == "out" and isinstance(target, tuple) and len(target) == 1:
        target = target[0]
    outputs = numpy_call(OverwritingCall(func, name), args, kwargs)
    new = outputs[-1]
    if isinstance(target, (Tensor, np.ndarray)):
        written = writable_target(target, f"np.{func.__name__}", "output must be an array")
        written[...] = new
        if len(outputs) == 1:
            return written  # NumPy returned the argument itself
    return outputs[0]


# a parameter its handler lacks, with out=: NumPy's own call writing into a copy of out
FALLBACK["overwriting"] = overwriting_call


class UfuncIntoCopy:
    """``ufunc(*inputs, out=copies of out, **kwargs)`` returning the copies: a ufunc call
    with ``out=`` and keywords no op has (``where=`` keeps ``out``'s old values where it is
    False) as a pure call whose results the ``out`` arrays then take."""

    writes_a_copy = True  # (numpy_call lets its out= through: the buffers are copies)

    def __init__(self, ufunc: np.ufunc) -> None:
        self.ufunc = ufunc
        self.__name__ = ufunc.__name__
        self.__module__ = "numpy"

    def __call__(self, *inputs: Any, out: tuple, **kwargs: Any) -> tuple:
        work = tuple(np.array(o, copy=True) for o in out)
        self.ufunc(*inputs, out=work, **kwargs)
        return work

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UfuncIntoCopy) and other.ufunc is self.ufunc

    def __hash__(self) -> int:
        return hash((UfuncIntoCopy, self.ufunc))


def _ufunc_into(ufunc: np.ufunc, inputs: tuple, out: Any, kwargs: dict) -> Any:
    """NumPy's ``ufunc(*inputs, out=out, **kwargs)``, each ``out`` array updated in place."""
    targets = out if isinstance(out, tuple) else (out,)
    new = numpy_call(UfuncIntoCopy(ufunc), inputs, {"out": targets, **kwargs})
    written = []
    for target, value in zip(targets, new):
        target = writable_target(
            target, f"np.{ufunc.__name__}(..., out=...)", "return arrays must be of ArrayType"
        )
        target[...] = value
        written.append(target)
    return written[0] if len(written) == 1 else tuple(written)


FALLBACK["ufunc_into"] = _ufunc_into
