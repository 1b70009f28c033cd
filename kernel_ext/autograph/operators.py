"""AutoGraph's runtime operators: what converted code calls in place of ``if``/``while``/``for``.

Each operator decides when it runs, at trace time: on a plain Python condition or iterable it
runs the Python statement as written (loops unroll into the graph); on a traced value it builds
graph control flow with :func:`kernel_ext.trace.control_flow.cond` / ``while_loop``. Converted
code passes the variables a statement modifies through ``get_state``/``set_state`` closures
(TensorFlow AutoGraph's protocol), so branches and loop bodies can be traced as functions.
"""

from __future__ import annotations

import builtins
import sys
import types
from typing import Any, Callable, Sequence

import numpy as np

from .. import errors
from ..trace import random_calls
from ..trace.control_flow import Undefined, cond, is_traced, kx_range, while_loop
from ..trace.state import current_context
from ..trace.tensor import Tensor, describe_tensor
from ..trace.variables import resolve

__all__ = ["Undefined", "and_", "cc", "converted", "for_stmt", "if_exp", "if_stmt", "ld",
           "not_", "or_", "python_iter", "python_test", "set_loop_options", "while_stmt"]


def ld(getter: Callable[[], Any], name: str) -> Any:
    """The current value of a variable, or :class:`Undefined` if it has none yet."""
    try:
        return getter()
    except NameError:
        return Undefined(name)


# -- if ---------------------------------------------------------------------------------------

def if_stmt(test: Any, body: Callable[[], None], orelse: Callable[[], None],
            get_state: Callable[[], tuple], set_state: Callable[[tuple], None],
            names: Sequence[str]) -> None:
    """``if test: body() else: orelse()``; a graph ``cond`` over the modified variables."""
    test = resolve(test)
    if not is_traced(test):
        if test:
            body()
        else:
            orelse()
        return
    init = get_state()

    def branch(fn: Callable[[], None]) -> Callable[[], tuple]:
        def run() -> tuple:
            set_state(init)  # (arrays updated in place are rolled back by cond itself)
            fn()
            return tuple(get_state())
        return run

    result = cond(test, branch(body), branch(orelse), names=list(names), name="if")
    set_state(tuple(result))


def if_exp(test: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any]) -> Any:
    """``true_fn() if test else false_fn()``, a graph cond on a traced ``test``."""
    return cond(resolve(test), true_fn, false_fn, names=["<conditional expression>"])


def not_(value: Any) -> Any:
    value = resolve(value)
    return np.logical_not(value) if is_traced(value) else not value


def and_(*operands: Callable[[], Any]) -> Any:
    """``a and b and ...``: Python short-circuit on Python values, np.logical_and once traced."""
    value = operands[0]()
    for fn in operands[1:]:
        value = resolve(value)
        if is_traced(value):
            value = np.logical_and(value, fn())
        elif not value:
            return value
        else:
            value = fn()
    return value


def or_(*operands: Callable[[], Any]) -> Any:
    """``a or b or ...``: Python short-circuit on Python values, np.logical_or once traced."""
    value = operands[0]()
    for fn in operands[1:]:
        value = resolve(value)
        if is_traced(value):
            value = np.logical_or(value, fn())
        elif value:
            return value
        else:
            value = fn()
    return value


# -- loops ------------------------------------------------------------------------------------

def set_loop_options(shape_invariants: Sequence[tuple[Any, Any]] = (), **_: Any) -> None:
    """Inside a loop body: declare ``[(variable, shape_with_None_dims), ...]`` so a traced loop
    lets those dimensions change between iterations. AutoGraph reads it when converting; as a
    call it does nothing."""


def _invariants(opts: dict, state: Sequence[Any], indices: Sequence[int]) -> list[Any] | None:
    pairs = opts.get("shape_invariants") or ()
    if not pairs:
        return None
    out: list[Any] = [None] * len(indices)
    for obj, shape in pairs:
        for k, i in enumerate(indices):
            if state[i] is obj:
                out[k] = shape
    return out


def _loop_state(init: Sequence[Any]) -> list[int]:
    """Indices of the state variables that are carried by a graph loop (the defined ones)."""
    return [i for i, v in enumerate(init) if not isinstance(v, Undefined)]


def while_stmt(test: Callable[[], Any], body: Callable[[], None],
               get_state: Callable[[], tuple], set_state: Callable[[tuple], None],
               names: Sequence[str], opts: dict) -> None:
    """``while test(): body()``; a graph ``while`` when the first test is traced."""
    first = resolve(test())
    if not is_traced(first):
        while first:
            body()
            first = resolve(test())
            if is_traced(first):
                raise errors.TracedBoolError(
                    "this while loop started as a Python loop (its condition was a Python "
                    "value) but its condition became a traced value inside the loop. Fix: make "
                    "the condition's variables arrays before the loop (e.g. np.asarray(i)).")
        return
    _graph_loop_stmt(test, None, body, get_state, set_state, names, opts, None)


def for_stmt(iterable: Any, extra_test: Callable[[], Any] | None,
             body: Callable[[Any], None], get_state: Callable[[], tuple],
             set_state: Callable[[tuple], None], names: Sequence[str], opts: dict) -> None:
    """``for item in iterable: body(item)``; over a traced array, a graph loop over its
    first dimension (``kx.range(...)`` included)."""
    iterable = resolve(iterable)
    if not is_traced(iterable):
        for item in iterable:
            if extra_test is not None and not resolve(extra_test()):
                break
            body(item)
        return
    if iterable.shape is None or len(iterable.shape) == 0:
        raise TypeError(f"cannot iterate over {describe_tensor(iterable)}: a 0-d or unknown-rank "
                        "traced value has no first dimension to loop over")
    n = iterable.shape[0]
    if n is None:
        from ..ir import OpKind
        from ..trace.context import bind
        n = bind(OpKind.DIM, (iterable,), {"axis": 0}, name="loop_length")
    _graph_loop_stmt(None, extra_test, body, get_state, set_state, names, opts,
                     (iterable, n))


def _graph_loop_stmt(test: Callable[[], Any] | None, extra_test: Callable[[], Any] | None,
                     body: Callable[..., None], get_state: Callable[[], tuple],
                     set_state: Callable[[tuple], None], names: Sequence[str], opts: dict,
                     over: tuple[Any, Any] | None) -> None:
    init = list(get_state())
    carried = _loop_state(init)
    invariants = _invariants(opts, init, carried)
    carried_names = [names[i] for i in carried]

    def put(values: Sequence[Any]) -> None:
        state = list(init)
        for i, v in zip(carried, values):
            state[i] = v
        set_state(tuple(state))

    def take() -> tuple:
        state = get_state()
        return tuple(state[i] for i in carried)

    if over is None:
        def cond_fn(*values: Any) -> Any:
            put(values)
            return test()  # type: ignore[misc]

        def body_fn(*values: Any) -> tuple:
            put(values)
            body()
            return take()

        loop_vars: tuple = tuple(init[i] for i in carried)
        result = while_loop(cond_fn, body_fn, loop_vars, invariants, carried_names, "while")
    else:
        iterable, n = over

        def cond_fn(i: Any, *values: Any) -> Any:  # type: ignore[misc]
            in_range = np.less(i, n)
            if extra_test is None:
                return in_range
            put(values)
            return np.logical_and(in_range, extra_test())

        def body_fn(i: Any, *values: Any) -> tuple:  # type: ignore[misc]
            put(values)
            body(iterable[i])
            return (np.add(i, 1),) + take()

        loop_vars = (np.int64(0),) + tuple(init[i] for i in carried)
        inv = None if invariants is None else [None] + invariants
        result = while_loop(cond_fn, body_fn, loop_vars, inv,
                            ["loop_index"] + carried_names, "for")[1:]
    final = list(init)
    for i, v in zip(carried, result):
        final[i] = v
    set_state(tuple(final))


def python_test(value: Any, keyword: str = "while") -> Any:
    """The test of a loop AutoGraph left as Python (its body has a ``return``)."""
    if is_traced(resolve(value)):
        raise errors.TracedBoolError(
            f"a `return` inside a `{keyword}` loop whose condition is a traced value is not "
            "supported: the graph loop cannot leave the function early. Fix: assign the result "
            "to a variable, `break`, and return after the loop.")
    return value


def python_iter(value: Any) -> Any:
    """The iterable of a ``for`` AutoGraph left as Python (its body has a ``return``)."""
    return iter(python_test(value, "for"))


# -- calls --------------------------------------------------------------------------------------

_NOT_CONVERTED = frozenset({
    "numpy", "kernel_ext", "numba", "llvmlite", "scipy", "IPython", "ipykernel", "ipywidgets",
    "pytest", "_pytest", "hypothesis", "pluggy", "traitlets", "jupyter_client", "comm",
    "tensorflow", "jax", "torch"})


def _range(*args: Any) -> Any:
    if any(is_traced(resolve(a)) for a in args):
        return kx_range(*args)
    return builtins.range(*args)


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
    return top not in _NOT_CONVERTED and top not in sys.stdlib_module_names and \
        top != "builtins"


def cc(fn: Any) -> Any:
    """The callable a converted call should use: user functions (and methods) are converted
    recursively; NumPy, the standard library, builtins and kx functions are called as-is."""
    if getattr(fn, "__kx_autograph__", False):
        return fn
    if fn is builtins.range:
        return _range
    if random_calls.is_random_callable(fn):
        # Draws from np.random / a Generator: a stateful op, drawn at every call.
        return random_calls.intercept(fn)
    from . import convert
    if isinstance(fn, types.MethodType) and _is_user_function(fn.__func__):
        return types.MethodType(convert(fn.__func__), fn.__self__)
    if _is_user_function(fn):
        return convert(fn)
    return fn


# -- subscript assignments ----------------------------------------------------------------------
# ``a[i] = v`` and ``a[i] += v`` become ``a = setitem(a, i, v)`` / ``a = setitem_aug(...)``
# (``assignments.py``): the one place a traced value written into a plain NumPy array
# (``out = np.zeros(n); out[i] = t``: the buffer pattern) can be seen, since ndarray's own
# ``__setitem__`` never asks a traced value what to do.

def _holds_traced(value: Any) -> bool:
    if isinstance(value, (Tensor,)) or is_traced(value):
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


_AUGMENTED = {"+": "iadd", "-": "isub", "*": "imul", "/": "itruediv", "//": "ifloordiv",
              "%": "imod", "**": "ipow", "@": "imatmul", "&": "iand", "|": "ior", "^": "ixor",
              "<<": "ilshift", ">>": "irshift"}


def setitem_aug(target: Any, key: Any, op: str, value: Any) -> Any:
    """``target[key] <op>= value`` as Python runs it (read the item, update it in place,
    store it back), with :func:`setitem`'s rule for plain arrays."""
    import operator
    target = _target(target, key, value)
    item = getattr(operator, _AUGMENTED[op])(target[key], value)
    target[key] = item
    return target
