"""The binding rule of natively traced NumPy functions: no argument is ever dropped.

A handler in ``HANDLERS`` (:mod:`kernel_ext.trace.numpy_api`) records ``np.func`` as graph
ops, but it implements only some of ``np.func``'s parameters. Every call is first bound
against the real NumPy function's signature (:func:`inspect.signature`, so a call NumPy itself
rejects raises NumPy's ``TypeError``); then each parameter the caller gave is checked against
the parameters the handler implements:

* implemented — passed on to the handler, by name (positionally where NumPy takes it so);
* not implemented, and given its NumPy default (``keepdims=np._NoValue``, ``out=None``) —
  left out: the handler's own default is the same behaviour;
* not implemented, with any other value (``np.std(x, mean=m)``, ``np.clip(x, 0, 1,
  dtype=...)``, ``where=``, ``initial=``) — the whole call runs as an opaque NumPy call
  (:func:`~kernel_ext.trace.opaque.numpy_call`): NumPy's own function at each graph call,
  exact by construction and shown as opaque in the views. Never silently dropped.

What a handler implements comes from its own signature (the names of its parameters, which
are NumPy's names), or from an explicit list where the handler takes ``*args, **kwargs`` and
binds them itself: :func:`declare` sets it. A ``**kwargs`` of NumPy's own (``np.clip``'s ufunc
keywords, ``np.pad``'s mode options) counts each keyword as a parameter of its own. ``out=``
is the dispatcher's: the handler's result is written into ``out`` as an in-place update, or,
for a handler marked with ``declare.numpy_writes_out`` and for a call that goes opaque,
NumPy's own call writes into a copy of ``out``, which ``out`` then takes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

_P = inspect.Parameter
_NO_VALUE = np._NoValue

#: Every keyword a handler with ``**kwargs`` forwards unchanged (NumPy's own body, np.pad's
#: options): ``@declare.parameters(..., ALL)``.
ALL = "*"

_SIGNATURES: dict[Callable, inspect.Signature] = {}
_IMPLEMENTED: dict[tuple, frozenset[str]] = {}


def declare(handler: Callable, parameters: Any) -> Callable:
    """State which NumPy parameters ``handler`` implements (for a handler whose signature is
    ``*args, **kwargs``, which hides them); returns ``handler``."""
    handler.numpy_parameters = frozenset(parameters)  # type: ignore[attr-defined]
    return handler


def _parameters(*names: str) -> Callable[[Callable], Callable]:
    """Decorator form of :func:`declare`: ``@declare.parameters("a", "axis", ALL)``."""
    return lambda handler: declare(handler, names)


def _numpy_writes_out(handler: Callable) -> Callable:
    """Mark ``handler`` as one whose ``out=`` NumPy's own call must write (NumPy computes in
    the buffer, or returns something else than ``out``): see :func:`numpy_writes_out`."""
    handler.numpy_writes_out = True  # type: ignore[attr-defined]
    return handler


def numpy_writes_out(handler: Callable) -> bool:
    """Does ``out=`` of this handler's function run as NumPy's own call (else the handler's
    result is written into ``out`` as an in-place update)?"""
    return bool(
        getattr(inspect.unwrap(handler), "numpy_writes_out", False)
        or getattr(handler, "numpy_writes_out", False)
    )


declare.parameters = _parameters  # type: ignore[attr-defined]
declare.numpy_writes_out = _numpy_writes_out  # type: ignore[attr-defined]


def numpy_signature(func: Callable) -> inspect.Signature:
    """The signature of the NumPy function ``func`` (cached)."""
    sig = _SIGNATURES.get(func)
    if sig is None:
        sig = _SIGNATURES[func] = inspect.signature(func)
    return sig


def implemented_parameters(handler: Callable, func: Callable | None = None) -> frozenset[str]:
    """The NumPy parameters (of ``func``, where given) ``handler`` implements: its
    declaration, else the names in its own signature, and NumPy's positional-only
    parameters that a positional parameter of the handler takes (their names are NumPy's
    business). A ``**kwargs`` it does not declare implements nothing."""
    key = (handler, func)
    found = _IMPLEMENTED.get(key)
    if found is None:
        declared = getattr(inspect.unwrap(handler), "numpy_parameters", None)
        if declared is not None:
            found = frozenset(declared)
        else:
            params = list(inspect.signature(handler).parameters.values())
            names = {p.name for p in params if p.kind is not _P.VAR_KEYWORD}
            if func is not None:
                taken = sum(
                    p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD) for p in params
                )
                if any(p.kind is _P.VAR_POSITIONAL for p in params):
                    taken = len(numpy_signature(func).parameters)
                names |= {
                    p.name
                    for i, p in enumerate(numpy_signature(func).parameters.values())
                    if p.kind is _P.POSITIONAL_ONLY and i < taken
                }
            found = frozenset(names)
        _IMPLEMENTED[key] = found
    return found


def is_default(value: Any, default: Any) -> bool:
    """Is ``value`` the parameter's default (the same object, or an equal plain constant:
    ``keepdims=False`` where the default is ``False``)?"""
    if value is default:
        return True
    if default is _P.empty or default is _NO_VALUE or value is _NO_VALUE:
        return False
    plain = (bool, int, float, str, type(None))
    if type(value) is type(default) and type(value) in plain:
        return bool(value == default) and not (isinstance(value, float) and value != value)
    return False


class Route:
    """How one call of a natively traced function proceeds: ``opaque`` (the parameter that
    sends it to NumPy's own call, or None), else the handler's ``args`` and ``kwargs``;
    ``out`` is the call's ``out=`` argument however it was passed (None if not given)."""

    __slots__ = ("args", "kwargs", "opaque", "out")

    def __init__(
        self, opaque: str | None, args: tuple = (), kwargs: dict | None = None, out: Any = None
    ) -> None:
        self.opaque, self.args, self.kwargs, self.out = opaque, args, kwargs or {}, out


#: Parameters the dispatcher handles itself, never passed to a handler: ``out=`` (written
#: as an in-place update, see the module docstring).
DISPATCHER_PARAMETERS = frozenset({"out"})


def route(func: Callable, handler: Callable, args: tuple, kwargs: dict) -> Route:
    """Bind ``func(*args, **kwargs)`` with NumPy's signature and decide (module docstring).
    Raises NumPy's ``TypeError`` for a call NumPy's signature rejects."""
    sig = numpy_signature(func)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        name = getattr(func, "__name__", "function")
        raise TypeError(f"{name}() {e}") from None
    implemented = implemented_parameters(handler, func)
    given = bound.arguments
    out = given.get("out") if "out" in sig.parameters else None
    dispatcher_parameters = DISPATCHER_PARAMETERS if out is not None else frozenset()
    pos: list[Any] = []
    kw: dict[str, Any] = {}
    gap = False  # (a positional parameter was skipped: later ones go by name, or cannot go)
    for name, param in sig.parameters.items():
        positional = param.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
        if name not in given or name in dispatcher_parameters:
            gap = gap or positional
            continue
        value = given[name]
        if param.kind is _P.VAR_KEYWORD:
            for key, item in value.items():
                if key not in implemented and "*" not in implemented:
                    return Route(key, out=out)
                kw[key] = item
        elif param.kind is _P.VAR_POSITIONAL:
            if gap and value:
                return Route(name, out=out)
            pos.extend(value)
        elif name not in implemented:
            if not is_default(value, param.default):
                return Route(name, out=out)
            gap = gap or positional
        elif positional and not gap:
            pos.append(value)
        elif param.kind is _P.POSITIONAL_ONLY:
            return Route(name, out=out)  # (cannot follow a parameter left out)
        else:
            kw[name] = value
    return Route(None, tuple(pos), kw, out)


#: Parameters of a NumPy function that its ndarray method lacks (``x.std(correction=1)`` is a
#: TypeError in NumPy; ``np.std(x, correction=1)`` is not).
METHOD_LACKS: dict[str, tuple[str, ...]] = {"std": ("correction",), "var": ("correction",)}


def method_signature(func: Callable) -> inspect.Signature:
    """The signature of the ndarray method that forwards to ``func`` (``x.sum`` for
    ``np.sum``): ``func``'s without the array and without what the method lacks."""
    params = list(numpy_signature(func).parameters.values())[1:]
    lacks = METHOD_LACKS.get(func.__name__, ())
    return inspect.Signature([p for p in params if p.name not in lacks])


__all__ = [
    "ALL",
    "METHOD_LACKS",
    "Route",
    "declare",
    "implemented_parameters",
    "is_default",
    "method_signature",
    "numpy_signature",
    "numpy_writes_out",
    "route",
]
