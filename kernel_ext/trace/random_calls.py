"""Random numbers inside traced functions: each draw is a stateful op, made at every call.

A call such as ``np.random.rand(3)``, ``np.random.normal(mu, 1.0)`` or ``rng.integers(0, n)``
(a ``np.random.Generator`` method) usually has no traced argument, so NumPy never dispatches
it to the tracer: run at trace time, its numbers would be frozen into the graph. AutoGraph
routes every call of converted code through ``cc`` (:mod:`kernel_ext.autograph.operators`),
which hands random callables (:func:`is_random_callable`) to :func:`intercept`. While a trace
is running, the draw is recorded as one ``random_call`` node (group STATEFUL: never pruned,
merged or reordered, so every executor makes the draws in program order) holding the bound
method and the static arguments; traced arguments (an array ``loc``) are its inputs. Every
graph call then draws from the very generator eager NumPy would, with the same arguments, so
``np.random.seed(0); f(x)`` gives eager's numbers, call after call.

The result's abstract value comes from drawing on a *copy* of the generator (stand-in inputs
as for opaque calls), so tracing does not advance the user's generator state; the run time
checks every draw against it. ``Generator.shuffle(x)`` (in place) is recorded in its
functional form: the shuffled copy is drawn by the same ``shuffle`` call, then written back
with ``x[...] = shuffled``. Generators made inside the function (``np.random.default_rng(0)``,
``np.random.RandomState(0)``) are reset at that point of every call (to their seed, or to
fresh entropy without one), as re-running the constructor eagerly would.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .. import errors
from ..ir import CallTemplate, Operand, OpKind, call_name
from .opaque import bind_call, build_template, find_out_aval
from .state import current_context
from .tensor import Tensor, user_frame_description

_OWNERS = (np.random.RandomState, np.random.Generator)

#: Module-level ``np.random`` functions that act on the global RandomState without being its
#: bound methods (``np.random.seed`` is a function of its own).
_GLOBAL_FUNCTIONS = frozenset({np.random.seed, np.random.set_state})

#: Constructors of generators: made inside a traced function, reset at every call.
_CONSTRUCTORS = frozenset({np.random.default_rng, np.random.RandomState})

#: Methods that write into their argument: recorded as a draw into a copy, then written back.
_IN_PLACE = frozenset({"shuffle"})

#: Methods that return Python objects, not draws.
_NOT_DRAWS = frozenset({"get_state", "spawn", "__getstate__", "__reduce__"})


def is_random_callable(fn: Any) -> bool:
    """Is ``fn`` a draw from NumPy's random state (a method of a RandomState or Generator,
    including the ``np.random.*`` functions bound to the global one), ``np.random.seed``, or a
    generator constructor?"""
    try:
        if fn in _GLOBAL_FUNCTIONS or fn in _CONSTRUCTORS:
            return True
    except TypeError:  # unhashable callables
        return False
    return isinstance(getattr(fn, "__self__", None), _OWNERS)


def intercept(fn: Callable) -> Callable:
    """What a converted call of the random callable ``fn`` runs: ``fn`` itself outside a
    trace, a recorded ``random_call`` inside one."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if current_context() is None:
            return fn(*args, **kwargs)
        if fn in _CONSTRUCTORS:
            return make_generator(fn, args, kwargs)
        return record_draw(fn, args, kwargs)

    call.__wrapped__ = fn  # type: ignore[attr-defined]
    call.__kx_autograph__ = True  # type: ignore[attr-defined]
    return call


def record_draw(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """Record ``fn(*args, **kwargs)`` as a ``random_call`` and return its traced result."""
    name = call_name(fn)
    method = getattr(fn, "__name__", "")
    if method in _NOT_DRAWS:
        raise errors.UnsupportedOpError(
            f"{name}() at {user_frame_description()} returns a Python object, which cannot "
            "be a graph value. Fix: call it outside the kx.function."
        )
    template, operands = build_template(args, kwargs)
    if fn in _GLOBAL_FUNCTIONS:  # np.random.seed(...) / set_state(...): no value
        if operands:
            raise errors.UnsupportedOpError(
                f"{name} at {user_frame_description()} takes a traced value; the seed must be "
                "known while tracing. Fix: pass it as a Python int."
            )
        return bind_call(OpKind.RANDOM_CALL, fn, template, operands, None, None, name)
    if method in _IN_PLACE:
        return _shuffle(fn, template, operands, name)
    owner = fn.__self__  # type: ignore[attr-defined]
    out_aval, structure = find_out_aval(_on_copy(owner, method), template, operands, name)
    if isinstance(out_aval, tuple):
        raise errors.UnsupportedOpError(
            f"{name} at {user_frame_description()} returns several values; a random draw "
            "must be one array. Fix: call it outside the kx.function."
        )
    return bind_call(OpKind.RANDOM_CALL, fn, template, operands, out_aval, structure, name)


def _on_copy(owner: Any, method: str) -> Callable:
    """``owner.method`` on a fresh copy of the generator for every stand-in run: finding the
    result's type must not advance the user's random state."""

    def draw(*args: Any, **kwargs: Any) -> Any:
        return getattr(copy.deepcopy(owner), method)(*args, **kwargs)

    draw.__name__ = method
    return draw


def shuffled(shuffle: Callable, x: Any, *args: Any, **kwargs: Any) -> np.ndarray:
    """A shuffled copy of ``x``, drawn by ``shuffle`` (a bound ``shuffle`` method) exactly as
    the in-place call would draw it."""
    out = np.array(x, copy=True)
    shuffle(out, *args, **kwargs)
    return out


def _shuffle(fn: Any, template: CallTemplate, operands: list, name: str) -> None:
    if not (template.args and template.args[0] == Operand(0) and isinstance(operands[0], Tensor)):
        raise errors.UnsupportedOpError(
            f"{name} at {user_frame_description()} shuffles a value that is not a traced "
            "array in place. Fix: shuffle an array argument of the function, or use "
            "rng.permutation(x) and keep its result."
        )
    target = operands[0]
    draw = _Shuffled(fn)
    out_aval, structure = find_out_aval(
        _Shuffled(_on_copy(fn.__self__, "shuffle")), template, operands, name
    )
    result = bind_call(OpKind.RANDOM_CALL, draw, template, operands, out_aval, structure, name)
    target[...] = result  # the in-place write, through the tracer's own setitem
    return None


class _Shuffled:
    """``shuffled`` bound to one shuffle method: the callable a shuffle's node runs."""

    def __init__(self, shuffle: Callable) -> None:
        self.shuffle = shuffle
        self.__name__ = "shuffle"
        self.__self__ = getattr(shuffle, "__self__", None)

    def __call__(self, x: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        return shuffled(self.shuffle, x, *args, **kwargs)


def make_generator(ctor: Callable, args: tuple, kwargs: dict) -> Any:
    """A generator made inside a traced function: made now (later draws are bound to it) and
    reset at this point of every call, to its seed or, without one, to fresh entropy."""
    _template, operands = build_template(args, kwargs)
    name = call_name(ctor)
    if operands:
        raise errors.UnsupportedOpError(
            f"{name} at {user_frame_description()} takes a traced or array seed; the seed of "
            "a generator made inside a kx.function must be known while tracing. Fix: pass it "
            "as a Python int, or make the generator outside and pass it in."
        )
    gen = ctor(*args, **kwargs)
    seeded = any(a is not None for a in args) or any(v is not None for v in kwargs.values())
    reset = _Reset(gen, seeded)
    bind_call(OpKind.RANDOM_CALL, reset, CallTemplate((), ()), [], None, None, name)
    return gen


class _Reset:
    """Puts a generator made in the function back to its state right after construction."""

    def __init__(self, gen: Any, seeded: bool) -> None:
        self.gen, self.seeded = gen, seeded
        self.__name__ = "reset"
        self.__self__ = gen
        self.bitgen = _bit_generator(gen)
        self.state = copy.deepcopy(self.bitgen.state)

    def __call__(self) -> None:
        if self.seeded:
            self.bitgen.state = copy.deepcopy(self.state)
        else:  # a generator made without a seed draws fresh entropy each time it is made
            self.bitgen.state = type(self.bitgen)().state


# -- draws that escaped interception ----------------------------------------------------------


def _generators(values: Sequence[Any]) -> list[Any]:
    """The generators a trace may draw from: the global RandomState and those in ``values``
    (a call's arguments, one level into lists, tuples and dicts)."""
    found: list[np.random.RandomState | np.random.Generator] = [np.random.mtrand._rand]
    for v in values:
        items = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else (v,)
        found += [g for g in items if isinstance(g, _OWNERS)]
    return found


def _bit_generator(gen: Any) -> Any:
    return gen.bit_generator if isinstance(gen, np.random.Generator) else gen._bit_generator


def generator_state(gen: Any) -> Any:
    """The whole state of a ``Generator`` or ``RandomState`` (a ``RandomState``'s includes
    its cached Gaussian, which its next ``randn`` returns)."""
    if isinstance(gen, np.random.Generator):
        return gen.bit_generator.state
    return gen.get_state(legacy=False)


def set_generator_state(gen: Any, state: Any) -> None:
    """Put back a state :func:`generator_state` took."""
    if isinstance(gen, np.random.Generator):
        gen.bit_generator.state = state
    else:
        gen.set_state(state)


def same_generator_state(a: Any, b: Any) -> bool:
    """Are two states from :func:`generator_state` the same (arrays compared by value)?"""
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(same_generator_state(a[k], b[k]) for k in a)
        )
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    return bool(a == b)


@contextlib.contextmanager
def frozen_draw_guard(values: Sequence[Any], function_name: str) -> Iterator[None]:
    """Around a trace: raise if a random state advanced while tracing. Intercepted draws
    never touch the user's generators at trace time (they draw from copies), so a change
    means a draw ran as plain Python — AutoGraph off, or in code it does not convert — and
    its numbers would be frozen into the graph, the same at every call."""
    gens = _generators(values)
    before = [generator_state(g) for g in gens]
    yield
    for gen, state in zip(gens, before):
        if not same_generator_state(state, generator_state(gen)):
            # The trace fails: put the state back, as if the failed call had drawn nothing.
            set_generator_state(gen, state)
            which = (
                "np.random's global state"
                if gen is np.random.mtrand._rand
                else "a Generator argument"
            )
            raise errors.UnsupportedOpError(
                f"{which} advanced while tracing '{function_name}': a random draw ran at "
                "trace time (AutoGraph is off, or the draw is in code AutoGraph does not "
                "convert), so its numbers would be frozen into the graph and repeat at every "
                "call. Fix: keep AutoGraph on (kx.function(autograph=True), the default) and "
                "call np.random / the Generator in the function's own code, or draw outside "
                "the kx.function and pass the numbers in."
            )


__all__ = [
    "frozen_draw_guard",
    "generator_state",
    "intercept",
    "is_random_callable",
    "make_generator",
    "record_draw",
    "same_generator_state",
    "set_generator_state",
    "shuffled",
]
