"""What an exported object stands for: its named concrete functions and its variables.

``concrete_functions(obj, signatures=None)`` is shared by every exporter (the saved-model
format, ONNX, standalone source): a ``kx.function`` stands for all its concrete functions (or
those ``signatures`` lists), a ``ConcreteFunction`` for itself, and any other object (a
``tf.Module``-style holder) for the ``kx.function`` and ``kx.Variable`` attributes it holds.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Sequence
from typing import Any

from ..engine import ConcreteFunction, Function
from ..trace import Variable


def _function_of(value: Any) -> Function | None:
    """The kx.Function behind an attribute (a bound method of a decorated method included)."""
    if isinstance(value, Function):
        return value
    inner = getattr(type(value), "__func__", None) and getattr(value, "__func__", None)
    return inner if isinstance(inner, Function) else None


def concrete_functions(obj: Any, signatures: Any = None) -> dict[str, list[ConcreteFunction]]:
    """The concrete functions ``obj`` stands for, by name (in attribute order).

    ``obj``: a ``kx.function`` (every concrete function it has traced so far, or, with
    ``signatures`` — a list of argument tuples, e.g. ``[(kx.TensorSpec([None, 3]),)]`` — the
    concrete function of each), a ``ConcreteFunction``, or an object whose attributes hold
    ``kx.function``\\ s (``signatures``: a dict name -> such a list). Raises ``TypeError``
    naming what was given, and ``ValueError`` when a function has no trace to export.
    """
    if isinstance(obj, ConcreteFunction):
        if signatures is not None:
            raise TypeError(
                "concrete_functions(): a ConcreteFunction has exactly one "
                "signature; got signatures too. Fix: pass the kx.function itself "
                "with signatures, or leave signatures out."
            )
        return {_cf_name(obj): [obj]}
    fn = _function_of(obj)
    if fn is not None:
        name = identifier(fn.name)
        return {name: _of_function(fn, signatures, name)}
    found: dict[str, list[ConcreteFunction]] = {}
    if signatures is not None and not isinstance(signatures, dict):
        raise TypeError(
            f"concrete_functions(): for a {type(obj).__name__} object, signatures "
            "must be a dict of attribute name -> list of argument tuples; got "
            f"{type(signatures).__name__}"
        )
    for name, value in _attributes(obj):
        fn = _function_of(value)
        if fn is not None:
            sigs = None if signatures is None else signatures.get(name)
            found[name] = _of_function(fn, sigs, name)
        elif isinstance(value, ConcreteFunction):
            found[name] = [value]
    if not found:
        raise TypeError(
            f"concrete_functions(): got {type(obj).__name__}, which is neither a "
            "kx.function, a ConcreteFunction nor an object holding kx.functions. "
            "Fix: pass the kx.function, or an object with kx.function attributes."
        )
    return found


def variables_of(obj: Any) -> dict[str, Variable]:
    """The ``kx.Variable`` attributes of a holder object, by name (empty for functions)."""
    if isinstance(obj, (ConcreteFunction, Function)):
        return {}
    return {name: v for name, v in _attributes(obj) if isinstance(v, Variable)}


def _attributes(obj: Any) -> list[tuple[str, Any]]:
    names = list(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:  # decorated methods live on the class
        for name in vars(cls):
            if name not in names:
                names.append(name)
    out = []
    for name in names:
        if name.startswith("_"):
            continue
        try:
            value = getattr(obj, name)
        except Exception:  # noqa: BLE001 - a property that fails is not exported
            continue
        out.append((name, value))
    return out


def identifier(name: str) -> str:
    """``name`` as a Python identifier (``<lambda>`` -> ``lambda_``): how a saved model and
    the loaded object name a function."""
    text = re.sub(r"\W", "_", name).strip("_") or "function"
    text = text if text[0].isalpha() or text[0] == "_" else f"f_{text}"
    return f"{text}_" if keyword.iskeyword(text) else text


def _cf_name(cf: ConcreteFunction) -> str:
    return identifier(cf.function_type.name)


def _of_function(
    fn: Function, signatures: Sequence[Any] | None, name: str
) -> list[ConcreteFunction]:
    if signatures is None:
        cfs = fn.concrete_functions
        if not cfs and fn.input_signature is not None:
            cfs = [fn.get_concrete_function()]
        if not cfs:
            raise ValueError(
                f"kx.function '{name}' has no traces to export. Fix: call it once, "
                "or pass signatures=[(kx.TensorSpec(shape, dtype), ...)]."
            )
        return cfs
    out = []
    for sig in signatures:
        args = tuple(sig) if isinstance(sig, (tuple, list)) else (sig,)
        cf = fn.get_concrete_function(*args)
        if cf not in out:
            out.append(cf)
    return out


__all__ = ["concrete_functions", "identifier", "variables_of"]
