"""Opaque calls in the IR: argument templates, result structures and the run-time checks.

Two ops run a Python callable as it is, inside a graph: ``numpy_call`` (a NumPy function the
engine does not trace natively, such as ``np.einsum`` or ``np.unique``: pure) and
``random_call`` (a draw from ``np.random`` or a ``np.random.Generator``: stateful). Both keep
the call's static arguments in an *argument template* (``attrs["template"]``): the positional
and keyword arguments as written, where every array the graph supplies is an :class:`Operand`
slot filled at run time from the node's inputs, in order. Everything here is plain NumPy, so
the reference interpreter, the NumPy executor and the tracer share one definition.

The result of such a call is known only by its abstract value (``attrs["out_aval"]``: one
:class:`~kernel_ext.ir.abstract.AbstractValue`, or a tuple of them read through
``get_output``), found at trace time by running the callable on stand-in inputs. A stand-in is
not the real input, so the run time checks every result against that abstract value
(:func:`check_result`) and raises :class:`OpaqueResultError` rather than hand on a value whose
shape or dtype the rest of the graph was not built for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .abstract import AbstractValue, format_aval


@dataclass(frozen=True)
class Operand:
    """A slot of an argument template, filled at run time by the node's input ``index``."""

    index: int

    def __repr__(self) -> str:
        return f"${self.index}"


@dataclass(frozen=True)
class CallTemplate:
    """The arguments of an opaque call: ``args`` and ``kwargs`` (a tuple of pairs, so the
    template is hashable and compares by value) with :class:`Operand` slots, nested inside
    lists, tuples and dicts as the call wrote them."""

    args: tuple[Any, ...]
    kwargs: tuple[Any, ...]

    def constant(self) -> bool:
        """Are the arguments the same at every call: no slot, and nothing a call could
        change in place (no list, dict or array), so one filled copy serves every call?"""
        return all(_immutable(a) for a in self.args) and all(_immutable(v) for _, v in self.kwargs)

    def fill(self, values: Sequence[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The concrete ``(args, kwargs)`` with every slot replaced by ``values[slot]``."""
        return (
            tuple(fill(a, values) for a in self.args),
            {k: fill(v, values) for k, v in self.kwargs},
        )


def _immutable(item: Any) -> bool:
    if type(item) is tuple:
        return all(_immutable(v) for v in item)
    return (
        item is None
        or type(item) in (bool, int, float, complex, str, slice)
        or isinstance(item, np.generic)
    )


def fill(item: Any, values: Sequence[Any]) -> Any:
    """``item`` with its :class:`Operand` slots (at any depth) replaced from ``values``."""
    if isinstance(item, Operand):
        return values[item.index]
    if type(item) is list:
        return [fill(v, values) for v in item]
    if type(item) is tuple:
        return tuple(fill(v, values) for v in item)
    if type(item) is dict:
        return {k: fill(v, values) for k, v in item.items()}
    return item


class OpaqueResultError(ValueError):
    """An opaque call returned, at run time, a value its trace did not describe (another
    shape, dtype or structure); the graph was built for the traced one, so it stops here."""


#: Python numbers an opaque call may return in place of an array, and their NumPy dtypes.
PYTHON_SCALARS: dict[type, np.dtype] = {
    bool: np.dtype(np.bool_),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}


def is_leaf(structure: Any) -> bool:
    """Is this result structure one value (an array, or a Python number's type)?"""
    return structure == "leaf" or (isinstance(structure, type) and structure in PYTHON_SCALARS)


def flatten_result(value: Any) -> tuple[list[Any], Any] | None:
    """The array leaves of a call's result and its structure (``"leaf"`` for an array or a
    NumPy scalar, the type for a Python number, or a ``(container type, (child structures))``
    pair for tuples, lists and namedtuples), or ``None`` if some leaf is none of these."""
    leaves: list[Any] = []

    def walk(v: Any) -> Any:
        if isinstance(v, (np.ndarray, np.generic)):
            leaves.append(v)
            return "leaf"
        if type(v) in PYTHON_SCALARS:
            leaves.append(v)
            return type(v)
        if isinstance(v, (tuple, list)):
            children = tuple(walk(c) for c in v)
            return None if None in children else (type(v), children)
        return None

    structure = walk(value)
    return None if structure is None else (leaves, structure)


def leaf_aval(value: Any) -> AbstractValue:
    """The abstract value of one result leaf (a Python number is a 0-d value of its dtype)."""
    dtype = PYTHON_SCALARS.get(type(value))
    if dtype is not None:
        return AbstractValue((), dtype)
    return AbstractValue(tuple(np.shape(value)), np.asarray(value).dtype)


def matches(value: Any, aval: AbstractValue) -> bool:
    """Does a concrete leaf fit ``aval`` (its dtype, its rank, every known dimension)?"""
    got = leaf_aval(value)
    if got.dtype != aval.dtype or aval.shape is None:
        return got.dtype == aval.dtype
    assert got.shape is not None  # a concrete leaf's shape is fully known
    return len(got.shape) == len(aval.shape) and all(
        d is None or d == g for d, g in zip(aval.shape, got.shape)
    )


def check_result(value: Any, out_aval: Any, describe: str) -> Any:
    """The run-time value of an opaque call, checked against its traced ``out_aval``: the
    value itself for one result (a Python number becomes the NumPy scalar of its dtype, as
    the trace typed it), or the tuple of leaves for several. Raises
    :class:`OpaqueResultError` naming ``describe`` (``"np.unique at cell [3], line 2"``)."""
    if not isinstance(out_aval, tuple):
        # the common case, checked at every call: one array (or NumPy scalar) of exactly
        # the traced dtype and static shape
        t = value.__class__
        if t is np.ndarray:
            if value.shape == out_aval.shape and value.dtype == out_aval.dtype:
                return value
        elif t is out_aval.dtype.type and out_aval.shape == ():
            return value
    flat = flatten_result(value)
    expected = list(out_aval) if isinstance(out_aval, tuple) else [out_aval]
    if (
        flat is None
        or len(flat[0]) != len(expected)
        or (not isinstance(out_aval, tuple) and not is_leaf(flat[1]))
    ):
        raise OpaqueResultError(
            f"{describe} returned {_short(value)} at run time, but its trace found "
            f"{_texts(expected)}; the number or kind of results depends on the input values. "
            "Fix: compute it outside the kx.function, or make the call's result structure "
            "independent of the data."
        )
    leaves = flat[0]
    for i, (leaf, aval) in enumerate(zip(leaves, expected)):
        if not matches(leaf, aval):
            which = "" if len(expected) == 1 else f" result {i}"
            raise OpaqueResultError(
                f"{describe}{which} is {format_aval(*_pair(leaf))} at run time, but its trace "
                f"found {aval}: its shape or dtype depends on the input values in a way the "
                "trial runs at trace time did not show, and the graph was built for the traced "
                "one. Fix: compute it outside the kx.function (pass the result in), or give "
                "the data-dependent dimension a fixed size (e.g. pad the result to a maximum "
                "length)."
            )
    leaves = [
        aval.dtype.type(v) if type(v) in PYTHON_SCALARS else v for v, aval in zip(leaves, expected)
    ]
    return tuple(leaves) if isinstance(out_aval, tuple) else leaves[0]


def _pair(leaf: Any) -> tuple[tuple[Any, ...], np.dtype]:
    aval = leaf_aval(leaf)
    assert aval.shape is not None  # a concrete leaf's shape is fully known
    return aval.shape, aval.dtype


def _texts(avals: list[AbstractValue]) -> str:
    return avals[0].__str__() if len(avals) == 1 else "(" + ", ".join(str(a) for a in avals) + ")"


def _short(value: Any) -> str:
    flat = flatten_result(value)
    if flat is None:
        text = repr(value)
        return f"a {type(value).__name__} ({text[:40] + '...' if len(text) > 40 else text})"
    return _texts([leaf_aval(v) for v in flat[0]])


def call_name(fn: Callable[..., Any]) -> str:
    """How messages and views name an opaque callable: ``np.einsum``, ``np.linalg.norm``,
    ``np.maximum.accumulate``, ``rng.normal`` (a Generator method), ``np.random.rand``."""
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", None) or type(fn).__name__
    if isinstance(owner, np.ufunc):
        return f"np.{owner.__name__}.{name}"
    if isinstance(owner, np.random.Generator):
        return f"Generator.{name}"
    if isinstance(owner, np.random.RandomState):
        return f"np.random.{name}" if owner is _GLOBAL_STATE else f"RandomState.{name}"
    module = getattr(fn, "__module__", None) or ""
    if module.startswith("numpy"):
        public = _public_module(module)
        return f"{public}.{name}"
    return f"{module}.{name}" if module else name


_GLOBAL_STATE = np.random.mtrand._rand


def _public_module(module: str) -> str:
    """``numpy.linalg._linalg`` -> ``np.linalg``: the module path up to its first private part."""
    parts = []
    for part in module.split("."):
        if part.startswith("_"):
            break
        parts.append(part)
    return "np" + "".join("." + p for p in parts[1:])
