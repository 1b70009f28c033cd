"""AutoGraph's runtime operators: what converted code calls in place of ``if``/``while``/``for``.

Each operator decides when it runs, at trace time: on a plain Python condition or iterable it
runs the Python statement as written (loops unroll into the graph); on a traced value it builds
graph control flow with :func:`kernel_ext.trace.control_flow.cond` / ``while_loop``. Converted
code passes the variables a statement modifies through ``get_state``/``set_state`` closures
(TensorFlow AutoGraph's protocol), so branches and loop bodies can be traced as functions.

This module is the namespace converted code sees as ``ag__``; the statements live in
:mod:`~kernel_ext.autograph.conditionals` (``if``) and :mod:`~kernel_ext.autograph.loops`
(``for``/``while`` and the loop policy), the builtins in
:mod:`~kernel_ext.autograph.py_builtins`.
"""

from __future__ import annotations

import builtins
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..trace import random_calls
from ..trace.control_flow import Undefined, cond, is_traced
from ..trace.state import current_context
from ..trace.variables import resolve
from . import py_builtins
from .conditionals import fstring, if_raise, if_stmt
from .loops import for_stmt, python_iter, python_test, set_loop_options, traced_range, while_stmt

__all__ = [
    "Undefined",
    "and_",
    "cc",
    "converted",
    "for_stmt",
    "fstring",
    "if_exp",
    "if_raise",
    "if_stmt",
    "ld",
    "not_",
    "or_",
    "python_iter",
    "python_test",
    "set_loop_options",
    "setitem",
    "setitem_aug",
    "traced_range",
    "while_stmt",
]


def ld(getter: Callable[[], Any], name: str) -> Any:
    """The current value of a variable, or :class:`Undefined` if it has none yet."""
    try:
        return getter()
    except NameError:
        return Undefined(name)


# -- if ---------------------------------------------------------------------------------------


def if_exp(test: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any]) -> Any:
    """``true_fn() if test else false_fn()``, a graph cond on a traced ``test``."""
    return cond(resolve(test), true_fn, false_fn, names=["<conditional expression>"])


def not_(value: Any) -> Any:
    value = resolve(value)
    return np.logical_not(value) if is_traced(value) else not value


def and_(*operands: Callable[[], Any]) -> Any:
    """``a and b and ...``: Python's short circuit — on a traced ``a``, a graph ``cond`` that
    evaluates ``b`` only when ``a`` is true, so its side effects (a random draw, an update)
    happen exactly when NumPy's would."""
    return _short_circuit(operands, stop_when=False)


def or_(*operands: Callable[[], Any]) -> Any:
    """``a or b or ...``: Python's short circuit (see :func:`and_`)."""
    return _short_circuit(operands, stop_when=True)


def _short_circuit(operands: Sequence[Callable[[], Any]], stop_when: bool) -> Any:
    value = operands[0]()
    for k in range(1, len(operands)):
        value = resolve(value)
        if is_traced(value):
            rest = operands[k:]

            def decided(v: Any = value) -> Any:
                return v

            def more() -> Any:
                return _short_circuit(rest, stop_when)  # noqa: B023 - cond calls it now

            # the result is what Python's `and`/`or` returns: the operand that decided
            return cond(
                _truth(value),
                decided if stop_when else more,
                more if stop_when else decided,
                names=["<and/or>"],
            )
        if bool(value) == stop_when:
            return value
        value = operands[k]()
    return value


def _truth(value: Any) -> Any:
    """A traced value's truth for ``and``/``or`` (NumPy's: nonzero; NaN is true)."""
    return value if value.dtype == np.bool_ else np.not_equal(value, 0)


# -- calls --------------------------------------------------------------------------------------

_NOT_CONVERTED = frozenset(
    {
        "numpy",
        "kernel_ext",
        "numba",
        "llvmlite",
        "scipy",
        "IPython",
        "ipykernel",
        "ipywidgets",
        "pytest",
        "_pytest",
        "hypothesis",
        "pluggy",
        "traitlets",
        "jupyter_client",
        "comm",
        "tensorflow",
        "jax",
        "torch",
    }
)


def converted(fn: Callable) -> Callable:
    """Decorator for functions defined inside converted code: they are converted already."""
    try:
        fn.__kx_autograph__ = True  # type: ignore[attr-defined]
    except AttributeError:
        pass
    return fn


def _is_user_function(fn: Any) -> bool:
    if not isinstance(fn, types.FunctionType):
        return False
    top = (getattr(fn, "__module__", None) or "").split(".")[0]
    return top not in _NOT_CONVERTED and top not in sys.stdlib_module_names and top != "builtins"


def _builtin_override(fn: Any) -> Callable | None:
    """What converted code calls for a builtin (``max``, ``sum``, ...) or a plain ndarray's
    method (``v.dot``) so that traced arguments work with Python's/NumPy's semantics."""
    try:
        found = py_builtins.BUILTINS.get(fn)
    except TypeError:  # an unhashable callable
        found = None
    return found if found is not None else py_builtins.array_method(fn)


def cc(fn: Any) -> Any:
    """The callable a converted call should use: user functions (and methods) are converted
    recursively; NumPy, the standard library, builtins and kx functions are called as-is."""
    if getattr(fn, "__kx_autograph__", False):
        return fn
    if fn is builtins.range:
        return traced_range
    if random_calls.is_random_callable(fn):
        # Draws from np.random / a Generator: a stateful op, drawn at every call.
        return random_calls.intercept(fn)
    override = _builtin_override(fn)
    if current_context() is not None and (fn in _CREATION or _copies_an_array(fn)):
        return _traced_creation(override or fn)
    if override is not None:
        return override
    from . import convert

    if isinstance(fn, types.MethodType) and _is_user_function(fn.__func__):
        return types.MethodType(convert(fn.__func__), fn.__self__)
    if _is_user_function(fn):
        return convert(fn)
    return fn


# -- array creation --------------------------------------------------------------------------
# Inside a traced function, a new array made by a creation function is a traced value from
# the start (a constant root of the trace). Its views are then traced views, so a view taken
# before the array is filled (``head = out[:2]; out[0] = t``) follows the writes, as in NumPy,
# instead of being a plain array with the old contents.

_CREATION: frozenset[Any] = frozenset(
    {
        np.zeros,
        np.ones,
        np.empty,
        np.full,
        np.zeros_like,
        np.ones_like,
        np.empty_like,
        np.full_like,
        np.eye,
        np.identity,
        np.arange,
        np.linspace,
        np.array,
        np.copy,
    }
)
# ndarray methods that return a new array (``table.copy()``, ``x.astype(float)``): the copy
# of a plain array (a global table) is a new array of the trace as well.
_COPYING_METHODS = frozenset({"copy", "astype"})


def _copies_an_array(fn: Any) -> bool:
    return (
        getattr(fn, "__name__", None) in _COPYING_METHODS
        and type(getattr(fn, "__self__", None)) is np.ndarray
    )


# While tracing, an uninitialised buffer is made as zeros: NumPy leaves its contents
# unspecified, and whatever bytes ``np.empty`` returned would become a constant of the trace
# (then an argument of the compiled function, copied into a private buffer at every call)
# where zeros are one value, which compiled code fills instead (docs/backends.md).
_ZEROED: dict[Any, Any] = {np.empty: np.zeros, np.empty_like: np.zeros_like}


def _traced_creation(fn: Callable) -> Callable:
    def create(*args: Any, **kwargs: Any) -> Any:
        ctx = current_context()
        result = (fn if ctx is None else _ZEROED.get(fn, fn))(*args, **kwargs)
        if ctx is None or type(result) is not np.ndarray or result.dtype.kind not in "biufc":
            return result
        # only a new array (np.array(x, copy=False) and astype(copy=False) may return x)
        sources = [*args, *kwargs.values(), getattr(fn, "__self__", None)]
        if any(isinstance(a, np.ndarray) and np.may_share_memory(a, result) for a in sources):
            return result
        return ctx.promote(result)

    create.__name__ = getattr(fn, "__name__", "create")
    return create


# -- subscript assignments ----------------------------------------------------------------------
# ``a[i] = v`` and ``a[i] += v`` become ``a = setitem(a, i, v)`` / ``a = setitem_aug(...)``
# (``assignments.py``): the one place a traced value written into a plain NumPy array
# (``out = np.zeros(n); out[i] = t``: the buffer pattern) can be seen, since ndarray's own
# ``__setitem__`` never asks a traced value what to do.


def _holds_traced(value: Any) -> bool:
    if is_traced(value):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_traced(v) for v in value)
    return False


def _target(target: Any, key: Any, value: Any) -> Any:
    """``target``, or the traced value standing for it when a traced value goes into a
    plain array (:meth:`~kernel_ext.trace.context.TraceContext.promote`)."""
    if isinstance(target, np.ndarray) and (_holds_traced(value) or _holds_traced(key)):
        ctx = current_context()
        if ctx is not None:
            return ctx.promote(target)
    return target


def setitem(target: Any, key: Any, value: Any) -> Any:
    """``target[key] = value``; returns what the name now holds (``target``, or the traced
    value standing for a plain array once a traced value is written into it)."""
    target = _target(target, key, value)
    target[key] = value
    return target


_AUGMENTED = {
    "+": "iadd",
    "-": "isub",
    "*": "imul",
    "/": "itruediv",
    "//": "ifloordiv",
    "%": "imod",
    "**": "ipow",
    "@": "imatmul",
    "&": "iand",
    "|": "ior",
    "^": "ixor",
    "<<": "ilshift",
    ">>": "irshift",
}


def setitem_aug(target: Any, key: Any, op: str, value: Any) -> Any:
    """``target[key] <op>= value`` as Python runs it (read the item, update it in place,
    store it back), with :func:`setitem`'s rule for plain arrays."""
    import operator

    target = _target(target, key, value)
    item = getattr(operator, _AUGMENTED[op])(target[key], value)
    target[key] = item
    return target
