"""``FunctionType``: a traced function's parameters, and how a call's arguments bind to them.

Modelled on TensorFlow's ``FunctionType``: one object owns everything about the *signature* of
a :class:`~kernel_ext.engine.function.Function` — its parameters and defaults, binding
``(args, kwargs)`` to one value per parameter, conforming values to an ``input_signature``,
the trace types of bound values, splitting values back into a Python call, and the signature
text every explanation and ``repr`` shows. ``Function`` and each of its
:class:`~kernel_ext.engine.concrete.ConcreteFunction` s share one instance.

Binding runs on the slow path only (a miss, a trace, a concrete function's call): the cache-hit
path of ``Function.__call__`` never binds (its fast key is built from the raw arguments).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import errors
from ..trace.types import (
    PLAIN_ARRAY_CLASSES,
    Sequence_,
    TensorSpec,
    TraceType,
    array_subclass_error,
    make_trace_type,
)

_P = inspect.Parameter
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)
_NO_DEFAULT = object()


class FunctionType:
    """The parameters of one Python function as a traced function sees them.

    ``python_function``'s signature, less its first parameter for a method bound to an
    instance (``bound_method``). ``name`` is how errors name the function.
    ``input_signature`` (a list or tuple of TensorSpecs and values), where given, fixes the
    types of the leading parameters; it is checked here, once.
    """

    def __init__(
        self,
        python_function: Callable,
        name: str,
        *,
        bound_method: bool = False,
        input_signature: Sequence[Any] | None = None,
    ) -> None:
        signature = inspect.signature(python_function)
        params = list(signature.parameters.values())
        if bound_method:
            params = params[1:]
            signature = signature.replace(parameters=params)
        self.name = name
        self.signature = signature
        #: The parameters, in order.
        self.parameters: tuple[inspect.Parameter, ...] = tuple(params)
        #: Their names, in order (what bound values, trace types and diffs are keyed by).
        self.names: list[str] = [p.name for p in params]
        #: ``(name, kind)`` per parameter.
        self.kinds: list[tuple[str, Any]] = [(p.name, p.kind) for p in params]
        self.count = len(params)
        #: Every parameter may be passed by position: calls can be cache hits, and a
        #: concrete function's free parameters can be filled positionally.
        self.all_positional = all(p.kind in _POSITIONAL for p in params)
        self._keyword_defaults = {
            p.name: p.default
            for p in params
            if p.kind is _P.KEYWORD_ONLY and p.default is not _P.empty
        }
        self.input_signature = self._check_input_signature(input_signature)

    # -- parameters -------------------------------------------------------------------------
    def default(self, name: str) -> Any:
        """The default of parameter ``name`` (``inspect.Parameter.empty`` when it has none)."""
        return self.signature.parameters[name].default

    def signature_values(self) -> tuple:
        """The ``input_signature`` followed by the remaining parameters' defaults: what
        ``get_concrete_function()`` with no arguments traces."""
        fixed = self.input_signature or ()
        return tuple(fixed) + tuple(p.default for p in self.parameters[len(fixed) :])

    # -- binding -------------------------------------------------------------------------------
    def bind(self, args: tuple, kwargs: dict, defaults: dict | None = None) -> tuple:
        """Arguments bound to parameters, defaults filled, one value per parameter in order.

        ``defaults`` (a ConcreteFunction's static arguments) fill parameters left out. A call
        that does not fit raises ``TypeError`` naming the function.
        """
        try:
            if defaults:
                bound = self.signature.bind_partial(*args, **kwargs)
                for name, value in defaults.items():
                    bound.arguments.setdefault(name, value)
                bound = self.signature.bind(*bound.args, **bound.kwargs)
            else:
                bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}(): {e}") from None
        bound.apply_defaults()
        return tuple(bound.arguments[n] for n in self.names)

    def bind_concrete(self, args: tuple, kwargs: dict, statics: dict, label: str) -> tuple:
        """:meth:`bind` for a concrete function whose trace fixed the parameters in
        ``statics``: positional arguments fill the parameters it does not fix (TensorFlow's
        concrete-function call convention: ``evaluate_no_bias(x)`` for ``evaluate(model, x)``).
        ``label`` names the function in the error for too many arguments."""
        if statics and self.all_positional and len(args) < self.count:
            free = [n for n in self.names if n not in statics and n not in kwargs]
            if len(args) > len(free):
                raise TypeError(
                    f"{label}(): this concrete function takes "
                    f"{len(free)} positional argument(s) ({', '.join(free)}), "
                    f"got {len(args)}"
                )
            kwargs = {**kwargs, **dict(zip(free, args))}
            args = ()
        return self.bind(args, kwargs, defaults=statics)

    def call_arguments(self, values: Sequence[Any]) -> tuple[list, dict]:
        """Bound values back as ``(args, kwargs)`` for calling the Python function."""
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for (name, kind), v in zip(self.kinds, values):
            if kind in _POSITIONAL:
                args.append(v)
            elif kind is _P.VAR_POSITIONAL:
                args.extend(v)
            elif kind is _P.KEYWORD_ONLY:
                # A keyword left at its default is left out: builtins such as ufuncs treat an
                # explicit default differently (np.tanh(x, dtype=None, signature=None) raises).
                if v is not self._keyword_defaults.get(name, _NO_DEFAULT):
                    kwargs[name] = v
            else:
                kwargs.update(v)
        return args, kwargs

    # -- types ---------------------------------------------------------------------------------
    def trace_types(self, values: Sequence[Any], allow_specs: bool = False) -> tuple:
        """One trace type per bound value (``allow_specs``: a TraceType stands for itself)."""
        return tuple(make_trace_type(v, name, allow_specs) for name, v in zip(self.names, values))

    def conform(self, values: tuple) -> tuple[tuple, bool]:
        """Values checked (and converted where allowed) against the ``input_signature``, and
        whether any was converted. A value that does not fit raises
        :class:`~kernel_ext.errors.InputSignatureError` showing the input and the signature."""
        out = list(values)
        converted = False
        for i, spec in enumerate(self.input_signature or ()):
            new, did = self._conform_value(values[i], spec, self.names[i])
            out[i] = new
            converted = converted or did
        return tuple(out), converted

    def restrict_to_signature(self, types_: tuple) -> tuple:
        """Trace types (of values or TensorSpecs given to ``get_concrete_function``) with the
        ``input_signature`` in place of the leading ones, each of which must be its subtype."""
        signature = self.input_signature
        if signature is None:
            return types_
        for i, spec in enumerate(signature):
            if not types_[i].is_subtype_of(spec):
                raise errors.InputSignatureError(self.mismatch(self.names[i], types_[i], spec))
        return tuple(signature) + types_[len(signature) :]

    # -- text ----------------------------------------------------------------------------------
    def signature_text(self, types_: Sequence[TraceType]) -> str:
        """``"x: float32[2, 3], n: int 3"``: one trace's inputs on one line (records, reprs,
        errors)."""
        return ", ".join(f"{n}: {t.describe()}" for n, t in zip(self.names, types_))

    def named_types(self, types_: Sequence[TraceType]) -> list[tuple[str, Any, TraceType]]:
        """``(name, kind, type)`` per parameter, an unnamed TensorSpec named after its
        parameter (TensorFlow's ``structured_input_signature`` convention)."""
        out = []
        for (name, kind), t in zip(self.kinds, types_):
            if isinstance(t, TensorSpec) and t.name is None:
                t = TensorSpec(t.shape, t.dtype, name)
            out.append((name, kind, t))
        return out

    def structured_signature(self, types_: Sequence[TraceType]) -> tuple[tuple, dict]:
        """``(args, kwargs)`` of trace types, as the parameters would be passed."""
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for name, kind, t in self.named_types(types_):
            if kind in _POSITIONAL:
                args.append(t)
            elif kind is _P.VAR_POSITIONAL:
                args.extend(getattr(t, "components", ()))
            elif kind is _P.KEYWORD_ONLY:
                kwargs[name] = t
            else:
                kwargs.update(dict(zip(getattr(t, "keys", ()), getattr(t, "components", ()))))
        return tuple(args), kwargs

    def mismatch(self, path: str, got: TraceType | None, spec: TraceType, value: Any = None) -> str:
        """The ``input_signature`` error: the argument, what it got, what was expected.

        ``got`` is None when the value has no trace type (an unhashable ``set`` compared with
        a constant entry): the message then describes ``value`` itself."""
        signature = f"Signature: ({', '.join(repr(s) for s in self.input_signature or ())})."
        if got is None:
            kind = type(value).__name__
            fix = (
                "an array of that dtype and shape (e.g. np.asarray(x, dtype=...))"
                if isinstance(spec, TensorSpec)
                else f"a hashable value equal to the one the entry fixes (frozenset(...) or "
                f"tuple(...) rather than a {kind})"
            )
            return (
                f"{self.name}(): argument '{path}' received an unhashable {kind} "
                f"({_short(value)}) but the input_signature expects {spec!r}. "
                f"{signature} Fix: pass {fix}."
            )
        got_text = got.describe() if isinstance(got, TensorSpec) else repr(got)
        return (
            f"{self.name}(): argument '{path}' received {got_text} ({got!r}) but the "
            f"input_signature expects {spec!r}. {signature} Fix: pass a value "
            "of that dtype and shape (e.g. np.asarray(x, dtype=...)), or widen the "
            "input_signature (None for dimensions that vary, shape=None for any rank)."
        )

    # -- internals -----------------------------------------------------------------------------
    def _check_input_signature(self, signature: Sequence[Any] | None) -> tuple | None:
        if signature is None:
            return None
        if not isinstance(signature, (list, tuple)):
            raise TypeError(
                f"input_signature must be a list or tuple of kx.TensorSpec, got "
                f"{type(signature).__name__}"
            )
        types_ = tuple(self._signature_entry(s, i) for i, s in enumerate(signature))
        if len(types_) > self.count or (not self.all_positional and len(types_) != self.count):
            raise TypeError(
                f"input_signature of '{self.name}' has {len(types_)} entries but "
                f"the function takes {self.count} positional parameters "
                f"({', '.join(self.names)})"
            )
        return types_

    def _signature_entry(self, entry: Any, i: int) -> TraceType:
        """The trace type of ``input_signature[i]``; an entry that has none (a ``set``: not
        hashable) is an error naming the entry, its parameter, what it is and the fix."""
        path = f"input_signature[{i}]"
        try:
            return make_trace_type(entry, path, allow_specs=True)
        except errors.TraceTypeError:
            where, bad = _unhashable_part(entry, path)
            if bad is None:
                raise
            param = f" (parameter '{self.names[i]}')" if i < self.count else ""
            kind = type(bad).__name__
            constant = (
                _short(frozenset(bad))
                if isinstance(bad, (set, frozenset))
                else "a tuple or frozenset"
            )
            raise errors.TraceTypeError(
                f"{self.name}(): {where}{param} is a {kind} ({_short(bad)}), but an "
                "input_signature entry is a kx.TensorSpec (an array argument: its dtype and "
                "shape) or a hashable Python value (a constant argument must equal it), and a "
                f"{kind} is not hashable. Fix: write kx.TensorSpec(shape, dtype) for an array, "
                f"or {constant} for a constant."
            ) from None

    def _conform_value(self, value: Any, spec: TraceType, path: str) -> tuple[Any, bool]:
        if isinstance(spec, TensorSpec):
            if (
                isinstance(value, np.ndarray)
                and type(value) not in PLAIN_ARRAY_CLASSES
                and not hasattr(type(value), "__tracing_type__")
            ):
                # np.asarray below would silently drop what the subclass adds (a mask)
                raise array_subclass_error(value, path)
            if isinstance(value, (np.ndarray, np.generic)) and value.dtype == spec.dtype:
                arr, converted = value, False
            else:
                try:
                    raw = np.asarray(value)
                except Exception:
                    raw = None
                # Arrays convert only safely (no precision lost); Python numbers same_kind, as
                # TensorFlow converts a Python float to a float32 spec.
                ok = (
                    raw is not None
                    and raw.dtype.kind not in "OUSV"
                    and (
                        np.can_cast(raw.dtype, spec.dtype, "safe")
                        if isinstance(value, (np.ndarray, np.generic))
                        else np.can_cast(raw.dtype, spec.dtype, "same_kind")
                    )
                )
                if not ok:
                    raise errors.InputSignatureError(
                        self.mismatch(path, _type_for_message(value, path), spec, value)
                    )
                assert raw is not None  # (ok implies it)
                arr, converted = raw.astype(spec.dtype), True
            if not TensorSpec(arr.shape, arr.dtype).is_subtype_of(spec):
                raise errors.InputSignatureError(
                    self.mismatch(path, TensorSpec(arr.shape, arr.dtype), spec)
                )
            return arr, converted
        if (
            isinstance(spec, Sequence_)
            and isinstance(value, (list, tuple))
            and len(value) == len(spec.components)
        ):
            items, any_conv = [], False
            for i, (v, s) in enumerate(zip(value, spec.components)):
                new, did = self._conform_value(v, s, f"{path}[{i}]")
                items.append(new)
                any_conv = any_conv or did
            if spec.container in (list, tuple):
                return spec.container(items), any_conv
            return spec.container(*items), any_conv
        t = _type_for_message(value, path)
        if t is None or not t.is_subtype_of(spec):
            raise errors.InputSignatureError(self.mismatch(path, t, spec, value))
        return value, False


def _type_for_message(value: Any, path: str) -> TraceType | None:
    """``value``'s trace type, or None when it has none (an unhashable ``set``)."""
    try:
        return make_trace_type(value, path)
    except TypeError:
        return None


def _unhashable_part(entry: Any, path: str) -> tuple[str, Any]:
    """``(path, value)`` of the first part of a signature entry that no trace type can be
    made of (walking lists, tuples and dicts as ``make_trace_type`` does), or ``("", None)``.
    """
    if isinstance(entry, (TraceType, np.ndarray, np.generic)):
        return "", None
    if type(entry) in (list, tuple):
        parts: Any = ((f"{path}[{i}]", v) for i, v in enumerate(entry))
    elif isinstance(entry, dict):
        parts = ((f"{path}[{k!r}]", v) for k, v in entry.items())
    else:
        try:
            hash(entry)
        except TypeError:
            return path, entry
        return "", None
    for where, v in parts:
        found = _unhashable_part(v, where)
        if found[1] is not None:
            return found
    return "", None


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
