"""What every handler module shares: the one registering decorator (``implements``, and
``composition`` for handlers written as NumPy's own Python code on traced values) and the
helpers that read a call's arguments (static or traced, bound to NumPy's signature).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Protocol, cast

import numpy as np

from ...ir import OpKind
from .. import signatures
from ..context import bind
from ..opaque import numpy_call
from ..tensor import HANDLERS, Tensor
from ..variables import Variable


def implements(*funcs: Callable) -> Callable[[Callable], Callable]:
    """Register ``handler`` as the traced form of ``funcs``. The NumPy parameters it
    implements are the names in its signature (or its :func:`~.signatures.declare`); any
    other parameter given a non-default value runs NumPy's own call (signatures.py)."""

    def register(handler: Callable) -> Callable:
        for f in funcs:
            HANDLERS.add(f, handler)
        return handler

    return register


class Declare(Protocol):
    """:func:`~kernel_ext.trace.signatures.declare` with its decorator forms, which it holds
    as attributes (that mypy does not see on a function)."""

    def __call__(self, handler: Callable, parameters: Any) -> Callable: ...

    def parameters(self, *names: str) -> Callable[[Callable], Callable]: ...

    def numpy_writes_out(self, handler: Callable) -> Callable: ...


declare = cast("Declare", signatures.declare)


def axis_attr(axis: Any) -> Any:
    if axis is None or isinstance(axis, (int, np.integer)):
        return None if axis is None else int(axis)
    return tuple(int(a) for a in axis)


def bool_option(value: Any) -> bool:
    """A boolean option whose NumPy default is ``np._NoValue`` (``keepdims``): unset is
    False."""
    return False if value is np._NoValue else bool(value)


def ndim_of(a: Any) -> int:
    return a.ndim if isinstance(a, Tensor) else len(np.shape(a))


# Arguments bound to the NumPy function's own signature (positional and keyword arguments
# exactly as NumPy takes them); static ones become attrs.


def bound_arguments(func: Callable, args: tuple, kwargs: dict) -> dict[str, Any]:
    """``func``'s parameters for this call, defaults applied (``np._NoValue`` where unset)."""
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def given(value: Any) -> bool:
    return value is not np._NoValue and value is not None


def is_static_value(value: Any) -> bool:
    """A Python or NumPy number, or an array of numbers: something an attr may hold."""
    if isinstance(value, (Tensor, Variable)):
        return False
    if isinstance(value, (list, tuple)):
        return all(is_static_value(v) for v in value)
    return isinstance(value, (int, float, np.generic, np.ndarray)) and not isinstance(
        value, (str, bytes)
    )


def frozen(value: Any) -> Any:
    """A static attr value: numbers as they are (their weak or strong type matters under NEP
    50), containers and arrays as a read-only array copy."""
    if isinstance(value, (list, tuple, np.ndarray)):
        arr = np.array(value, copy=True)
        arr.setflags(write=False)
        return arr
    return value


# What has to be static for an op (pad widths, insert indices, kth, einsum subscripts,
# histogram's int bins and range) is an attribute; when the caller passes a traced value there,
# the call runs as NumPy's own opaque call instead (correct, only not seen inside).


def is_traced(value: Any) -> bool:
    """Is ``value`` (or anything in a list/tuple/dict it holds) a traced value?"""
    if isinstance(value, Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(is_traced(v) for v in value)
    if isinstance(value, dict):
        return any(is_traced(v) for v in value.values())
    return False


def static_attr(value: Any) -> Any:
    """A static argument as an attribute: arrays and lists become (nested) tuples, so the
    graph's attributes stay comparable and hashable (CSE, executor sharing)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list):
        return tuple(static_attr(v) for v in value)
    if isinstance(value, tuple):
        return tuple(static_attr(v) for v in value)
    return value


def bind_outputs(kind: OpKind, args: tuple, attrs: dict, name: str) -> list[Tensor]:
    """The results of a multi-result op, each read through its own ``get_output``."""
    node = cast("Tensor", bind(kind, args, attrs, name=name))  # (a tuple-typed result)
    return [
        cast("Tensor", bind(OpKind.GET_OUTPUT, (node,), {"index": i}, name=f"{name}/{i}"))
        for i in range(len(cast("tuple", node.node.aval)))
    ]


# Compositions: the handler does what NumPy's own Python source does, on traced values, so the
# result is built of ops the optimiser, fusion and gradients already know, and NumPy's argument
# checks run at trace time on static facts (shapes, axes, counts). A composition needs static
# sizes where NumPy's code computes with them (split points, tile counts, an identity matrix);
# where it meets an unknown dimension or a traced static argument it raises ``Opaque`` and the
# call runs as NumPy's own opaque call: slower, never wrong. Departures: ``average`` with
# weights does not raise ZeroDivisionError for weights that sum to zero (the check needs the
# data).


class Opaque(Exception):
    """Raised inside a composition for a call it does not cover (an unknown size, a traced
    argument that must be static): the call runs as NumPy's own opaque call instead."""


def composition(*funcs: Callable) -> Callable[[Callable], Callable]:
    """Register ``handler`` for ``funcs``; a handler raising ``Opaque`` becomes an opaque call
    of the NumPy function that was called (nodes it made before are unused and pruned)."""

    def register(handler: Callable) -> Callable:
        for func in funcs:

            def run(*args: Any, _func: Callable = func, **kwargs: Any) -> Any:
                try:
                    return handler(*args, **kwargs)
                except Opaque:
                    return numpy_call(_func, args, kwargs)

            run.__name__ = run.__qualname__ = handler.__name__
            run.__doc__ = handler.__doc__
            run.__wrapped__ = handler  # type: ignore[attr-defined]  # (its parameters)
            HANDLERS.add(func, run)
        return handler

    return register


def array_arg(x: Any) -> Any:
    """A traced value as it is; anything else as NumPy's ``asanyarray`` makes it (a list
    holding traced values stacked, as NumPy's array coercion builds it)."""
    if isinstance(x, (Tensor, Variable)):
        return x
    if isinstance(x, (list, tuple)) and is_traced(x):
        return _coerced(x)
    return np.asanyarray(x)


def _coerced(obj: Any) -> Any:
    """A (nested) list of traced values and Python or NumPy values as one array: stacked
    level by level, Python numbers as NumPy's arrays of them (strong, as coercion takes
    them)."""
    if isinstance(obj, (list, tuple)):
        return np.stack([_coerced(item) for item in obj])
    return obj if isinstance(obj, (Tensor, Variable)) else np.asarray(obj)


def static_shape(x: Any) -> tuple[int, ...]:
    """``x``'s shape, which the composition computes with: ``Opaque`` if not all known."""
    shape = x.shape
    if shape is None or None in shape:
        raise Opaque
    return tuple(shape)


def static_value(value: Any) -> Any:
    """A static argument's value: constants the function made (``np.array([0, 2])`` is a
    constant node) as their arrays; ``Opaque`` for a value known only at run time."""
    if isinstance(value, Tensor) and value.node.op is OpKind.CONSTANT:
        return value.node.params.value
    if isinstance(value, (list, tuple)) and is_traced(value):
        return type(value)(static_value(v) for v in value)
    if is_traced(value):
        raise Opaque
    return value
