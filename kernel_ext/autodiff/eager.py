"""The eager tape over plain NumPy code: recording arrays.

NumPy arrays cannot be intercepted, so an eager :class:`~kernel_ext.autodiff.GradientTape`
hands out arrays that record themselves: ``x = tape.watch(x)`` returns a
:class:`RecordingArray`, an ``np.ndarray`` subclass holding the same values, and a trainable
``kx.Variable`` read under the tape yields one too. Every NumPy operation on a recording
array (a ufunc or operator through ``__array_ufunc__``, a NumPy function through
``__array_function__``, indexing, index assignment, the common methods) computes with NumPy
as usual, on the plain arrays, and also binds the same call on traced stand-ins in a
:class:`~kernel_ext.trace.TraceContext` the tape owns. Its result is a recording array
again (0-d for a scalar). The recorded graph is an ordinary graph, made by the same trace
handlers as a ``kx.function``'s, so ``tape.gradient`` runs the ordinary backward pass over
it and evaluates the gradient graph with NumPy's reference interpreter: the gradient equals
the one a ``kx.function`` computes for the same code.

Plain arrays used with recording arrays enter the graph as constants (copied when first
used: a later in-place change of the plain array does not change the recording). A
``kx.function`` called on recording arrays under the tape runs as usual and is recorded as
its traced body (``Function`` inlines itself into the tape's trace). An operation the trace
layer cannot bind raises :class:`~kernel_ext.errors.NonDifferentiableError` naming the
NumPy function; an array made from a recording array by an ndarray method the tape does
not record is refused where it is next used with one, rather than silently cutting the
gradient.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, SupportsIndex, cast

import numpy as np

from .. import errors
from ..ir import OpKind
from ..trace import Tensor, TraceContext, Variable
from ..trace.state import outside_traces

if TYPE_CHECKING:
    from .tape import GradientTape


def same_trace(a: GradientTape | None, b: GradientTape | None) -> bool:
    """Do two eager tapes record into one trace (the same tape, or tapes recording at the
    same time: a tape inside a tape)?"""
    return a is b or (
        a is not None and b is not None and a._trace is not None and a._trace is b._trace
    )


_local = threading.local()

#: ndarray's memory orders (the ``order=`` of ravel, flatten, copy).
Order = Literal["K", "A", "C", "F"] | None


class RecordingArray(np.ndarray):
    """An array whose NumPy operations an eager ``GradientTape`` records (see the module
    docstring). Computes exactly as ``np.ndarray``; ``np.asarray(r)`` is a plain array."""

    _kx_tensor: Tensor | None = None
    _kx_tape: GradientTape | None = None
    #: made from a recording array by an ndarray operation the tape did not record
    _kx_lost: bool = False

    def __array_finalize__(self, obj: Any) -> None:
        # A view or copy NumPy made without going through the protocols below (a method the
        # class does not override): its relation to the recorded value is unknown.
        self._kx_tensor = None
        self._kx_tape = getattr(obj, "_kx_tape", None)
        self._kx_lost = isinstance(obj, RecordingArray)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        out = kwargs.get("out")
        return _record(
            _tape_of((inputs, out)),
            name,
            lambda ins, kw: getattr(ufunc, method)(*ins, **kw),
            inputs,
            kwargs,
            out=out,
        )

    def __array_function__(
        self, func: Callable, types: Iterable[type], args: Iterable[Any], kwargs: Mapping[str, Any]
    ) -> Any:
        name = getattr(func, "__name__", repr(func))
        out = kwargs.get("out")
        return _record(
            _tape_of((args, kwargs)),
            name,
            lambda a, kw: func(*a, **kw),
            args,
            kwargs,
            out=(out,) if out is not None else None,
        )

    def __getitem__(self, key: Any) -> Any:
        return _record(
            _tape_of((self, key)), "getitem (x[...])", lambda a, kw: a[0][a[1]], (self, key), {}
        )

    def __setitem__(self, key: Any, value: Any) -> None:
        tape = _tape_of((self, key, value))
        plain_self, plain_key, plain_value = _plain((self, key, value))
        plain_self[plain_key] = plain_value
        if _recorded(self):
            recording = cast("GradientTape", tape)  # (a recorded array carries its tape)
            with _binding(recording, "setitem (x[...] = v)"):
                cast("Tensor", self._kx_tensor)[_traced(key, recording)] = _traced(value, recording)
        elif _recorded(value) or _recorded(key):
            raise errors.NonDifferentiableError(
                "a recorded value was written into an array the GradientTape does not record "
                "(x[...] = v with x a plain array or a view NumPy made). Fix: write into a "
                "recording array (tape.watch(x), or the result of an operation on one), or "
                "build the array with np.where / np.concatenate."
            )

    # methods NumPy implements without the protocols above: recorded as the NumPy function
    def reshape(self, *shape: Any, **kwargs: Any) -> Any:
        return np.reshape(self, shape[0] if len(shape) == 1 else shape, **kwargs)

    def transpose(self, *axes: Any) -> Any:
        return np.transpose(self, (axes[0] if len(axes) == 1 else axes) or None)

    @property
    def T(self) -> Any:  # noqa: N802 - ndarray's name
        return np.transpose(self)

    def ravel(self, order: Order = "C") -> Any:
        return np.ravel(self, order)

    def flatten(self, order: Order = "C") -> Any:
        return np.ravel(np.copy(self), order)

    def squeeze(self, axis: Any = None) -> Any:
        return np.squeeze(self, axis)

    def swapaxes(self, a: SupportsIndex, b: SupportsIndex) -> Any:
        return np.swapaxes(self, a, b)

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> Any:
        return _record(
            _tape_of(self), "astype", lambda a, kw: a[0].astype(dtype, *args, **kw), (self,), kwargs
        )

    def copy(self, order: Order = "C") -> Any:
        return np.copy(self, order)

    # (dot and clip record the forms without out=, under NumPy's older argument names)
    def dot(self, b: Any) -> Any:  # type: ignore[override]
        return np.dot(self, b)

    def clip(  # type: ignore[override]
        self, a_min: Any = None, a_max: Any = None, **kwargs: Any
    ) -> Any:
        return np.clip(self, a_min, a_max, **kwargs)

    def __repr__(self) -> str:
        return f"recording({np.array_repr(self.view(np.ndarray))[6:-1]})"


def _reduction_method(name: str) -> Callable[..., Any]:
    fn = getattr(np, name)

    def method(self: RecordingArray, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    method.__name__ = name
    return method


for _name in (
    "sum",
    "mean",
    "prod",
    "max",
    "min",
    "std",
    "var",
    "cumsum",
    "cumprod",
    "argmax",
    "argmin",
    "any",
    "all",
):
    setattr(RecordingArray, _name, _reduction_method(_name))


# -- recording ----------------------------------------------------------------------------------


def _recorded(x: Any) -> bool:
    return isinstance(x, RecordingArray) and x._kx_tensor is not None


def _walk(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """``value`` with ``leaf`` applied to every leaf of its lists, tuples and dicts."""
    if isinstance(value, (list, tuple)):
        items = [_walk(v, leaf) for v in value]
        if isinstance(value, tuple) and hasattr(type(value), "_fields"):
            return type(value)(*items)
        return type(value)(items)
    if isinstance(value, dict):
        return {k: _walk(v, leaf) for k, v in value.items()}
    return leaf(value)


def _tape_of(value: Any) -> GradientTape | None:
    found: list[Any] = []
    _walk(
        value,
        lambda x: (
            found.append(x._kx_tape)
            if isinstance(x, RecordingArray) and x._kx_tape is not None
            else None
        ),
    )
    return found[0] if found else None


def _plain(value: Any) -> Any:
    """``value`` with recording arrays as plain views and variables as their values."""

    def leaf(x: Any) -> Any:
        if isinstance(x, RecordingArray):
            return x.view(np.ndarray)
        if isinstance(x, Variable):
            return x.storage
        return x

    return _walk(value, leaf)


def _traced(value: Any, tape: GradientTape) -> Any:
    """``value`` with recording arrays as their traced stand-ins (in ``tape``'s trace)."""

    def leaf(x: Any) -> Any:
        if isinstance(x, RecordingArray):
            if x._kx_tensor is not None and same_trace(x._kx_tape, tape):
                return x._kx_tensor
            if x._kx_lost:
                raise errors.NonDifferentiableError(
                    "an array made from a recording array by an ndarray method or NumPy "
                    "internals the GradientTape does not record (a view or copy NumPy made "
                    "itself: x.diagonal(), np.vectorize, ...) is used with a recorded value: "
                    "its gradient would be lost. Fix: use the NumPy function instead of the "
                    "method (np.diagonal(x), np.reshape(x, ...)), or compute it inside a "
                    "kx.function."
                )
            return x.view(np.ndarray)  # an unrelated tape's array: a constant here
        if isinstance(x, Variable):
            return tape.eager_read(x, tensor=True) if tape.watches_on_read(x) else x.storage
        return x

    return _walk(value, leaf)


class _binding:
    """Enter the tape's trace to bind one call; errors of the trace layer become a
    :class:`NonDifferentiableError` naming the NumPy function."""

    def __init__(self, tape: GradientTape, name: str) -> None:
        self.ctx: TraceContext = tape.eager_context()
        self.name = name

    def __enter__(self) -> None:
        self.ctx.__enter__()

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> Literal[False]:
        self.ctx.__exit__(kind, exc, tb)
        if exc is not None and not isinstance(exc, errors.NonDifferentiableError):
            raise errors.NonDifferentiableError(
                f"GradientTape cannot record np.{self.name} on a watched array: the tracer "
                f"could not bind it ({type(exc).__name__}: {exc}). Fix: compute it inside a "
                "kx.function (the same error names the construct there), or wrap its inputs "
                "in np.asarray(...) if no gradient should flow through it."
            ) from exc
        return False


def _record(
    tape: GradientTape | None,
    name: str,
    call: Callable[[Any, dict], Any],
    args: Any,
    kwargs: Mapping[str, Any],
    out: Any = None,
) -> Any:
    """Run ``call`` on the plain values (NumPy's result), bind it on the traced stand-ins
    in the tape's trace, and pair them as recording arrays."""
    real = call(_plain(args), _plain(kwargs))
    if tape is None or not tape.recording_eagerly():
        return _unrecorded(real, out)
    with _binding(tape, name):
        traced = call(_traced(args, tape), _traced(kwargs, tape))
    if out is not None:  # in place: the traced out= operands moved to their new values
        outs = tuple(out) if isinstance(out, tuple) else (out,)
        for o in outs:
            if isinstance(o, RecordingArray) and o._kx_tensor is None:
                raise errors.NonDifferentiableError(
                    f"np.{name}(..., out=...) writes into an array the GradientTape does not "
                    "record. Fix: write into a recording array, or assign the result."
                )
        return out[0] if isinstance(out, tuple) and len(out) == 1 else out
    return wrap(real, traced, tape)


def _unrecorded(real: Any, out: Any) -> Any:
    """A result when no tape records (the tape's block ended): plain NumPy's."""
    if out is not None:
        return out[0] if isinstance(out, tuple) and len(out) == 1 else out
    return real


def wrap(real: Any, traced: Any, tape: GradientTape) -> Any:
    """NumPy's result as recording arrays paired with the traced results (same structure)."""
    if isinstance(real, (list, tuple)) and isinstance(traced, (list, tuple)):
        items = [wrap(r, t, tape) for r, t in zip(real, traced)]
        if isinstance(real, tuple) and hasattr(type(real), "_fields"):
            return type(real)(*items)
        return type(real)(items)
    if isinstance(traced, Tensor) and isinstance(real, (np.ndarray, np.generic)):
        arr = np.asarray(real)
        rec = (
            arr.view(RecordingArray)
            if type(arr) is np.ndarray
            else np.asarray(arr).view(RecordingArray)
        )
        rec._kx_tensor, rec._kx_tape, rec._kx_lost = traced, tape, False
        return rec
    return real


def records(value: Any) -> bool:
    """Does ``value`` (a nest of arguments) hold a recording array?"""
    return _tape_of(value) is not None


def record_function_call(function: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """A ``kx.function`` called on recording arrays: NumPy's result is the call on the plain
    values (its compiled graph, as usual); the recording is its Python body traced on the
    stand-ins in the tape's trace (a ``Function`` called while tracing inlines itself)."""
    tape = _tape_of((args, kwargs))
    real = function(*_plain(args), **_plain(kwargs))
    if tape is None or not tape.recording_eagerly():
        return real
    with _binding(tape, getattr(function, "__name__", "function")):
        traced = function(*_traced(args, tape), **_traced(kwargs, tape))
    return wrap(real, traced, tape)


def stop_recorded(x: RecordingArray) -> Any:
    """``kx.stop_gradient`` of a recording array: the same values, recorded as a ``copy``
    node marked ``stop_gradient`` (the node a ``kx.function`` traces), so the tape's gradient
    does not flow through it. Outside a recording block, ``x`` itself."""
    tape = x._kx_tape
    if x._kx_tensor is None or tape is None or not tape.recording_eagerly():
        return x
    with _binding(tape, "stop_gradient"):
        traced = tape.eager_context().bind(
            OpKind.COPY, (x._kx_tensor,), {"stop_gradient": True}, name="StopGradient"
        )
    return wrap(x.view(np.ndarray), traced, tape)


def watch_array(tape: GradientTape, value: Any, name: str) -> RecordingArray:
    """A recording array of ``value``'s values, a new source (placeholder) of the tape."""
    arr = np.asarray(value.view(np.ndarray) if isinstance(value, RecordingArray) else value)
    ctx = tape.eager_context()
    with ctx:
        tensor = ctx.placeholder(name, arr.shape, arr.dtype, ("watched", name))
    with outside_traces():
        rec = arr.view(RecordingArray)
    rec._kx_tensor, rec._kx_tape, rec._kx_lost = tensor, tape, False
    return rec


__all__ = [
    "RecordingArray",
    "record_function_call",
    "records",
    "same_trace",
    "stop_recorded",
    "watch_array",
    "wrap",
]
