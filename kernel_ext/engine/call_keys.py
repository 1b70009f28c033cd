"""The cache-hit keys of a call: what ``Function.__call__``'s fast path looks a call up by.

``(dtype, shape)`` per array or NumPy scalar, ``(type, value)`` per Python scalar, ``(type,
id)`` per object traced by identity alone, and the keys of small containers of these: exactly
what the call's trace type depends on, computed without building it. Anything else keeps the
call on the slow path (trace types, dispatch).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..trace.types import Composite, TraceType, WeakRef, literal_key, make_trace_type

NDARRAY = np.ndarray  # (a global: the hot loop reads it without an attribute lookup)
NP_SCALARS = frozenset(t for t in np.sctypeDict.values() if issubclass(t, np.generic))
PY_SCALARS = frozenset((bool, int, float, complex, str, type(None)))
# The hot loop tests float and complex first (their keys need literal_key's care).
PLAIN_PY_SCALARS = frozenset((bool, int, str, type(None)))
#: Classes whose instances are keyed by identity (their trace type is a WeakRef and equality
#: is ``object``'s: a random Generator, a model object): cache hits key them by ``id``. Found
#: by :func:`identity_keyed` on the slow path; an instance's death clears the fast keys
#: (``Function.on_object_died``), so a reused id never finds an old trace.
BY_IDENTITY: set[type] = set()
NOT_BY_IDENTITY: set[type] = set()


def has_dead_reference(t: TraceType) -> bool:
    if isinstance(t, WeakRef):
        return not t.alive()
    if isinstance(t, Composite):
        return any(has_dead_reference(c) for c in t.components)
    return False


def fast_key(args: tuple, kwargs: dict | None = None) -> tuple | None:
    """The cache-hit key of a call: ``(dtype, shape)`` per array or NumPy scalar, ``(type,
    value)`` per Python scalar, then each keyword's name and key; None for anything else."""
    key: list[Any] = []
    for a in args:
        t = a.__class__
        if t is NDARRAY or t in NP_SCALARS:
            key.append((a.dtype, a.shape))
        elif t in PY_SCALARS:
            key.append(literal_key(a))
        elif identity_keyed(a):
            key.append((t, id(a)))
        elif t is dict or t is list or t is tuple:
            ck = container_key(a, 0)
            if ck is None:
                return None
            key.append(ck)
        else:
            return None
    if kwargs:
        for name, a in kwargs.items():
            t = a.__class__
            if t is NDARRAY or t in NP_SCALARS:
                key += (name, (a.dtype, a.shape))
            elif t in PY_SCALARS:
                key += (name, literal_key(a))
            elif identity_keyed(a):
                key += (name, (t, id(a)))
            else:
                return None
    return tuple(key)


def container_key(value: Any, depth: int) -> tuple | None:
    """The cache-hit key of a list, tuple or dict of arrays, numbers and such containers (at
    most 3 deep, string keys): its class, its keys in order, its items' keys — what its trace
    type depends on. None for anything else (such calls stay on the slow path).

    Arrays and plain Python scalars, the usual items, are keyed inline (a function call per
    item cost a parameter dict of three items a microsecond per call)."""
    items: list[Any] = []
    append = items.append
    if value.__class__ is dict:
        for k in value:
            if k.__class__ is not str:
                return None
        append(tuple(value))  # the keys, in order
        value_items = value.values()
    else:
        value_items = value
    for v in value_items:
        t = v.__class__
        if t is NDARRAY:
            append((v.dtype, v.shape))
        elif t is int or t is bool or t is str:
            append((t, v))
        else:
            ik = _item_key(v, depth)
            if ik is None:
                return None
            append(ik)
    return (value.__class__, tuple(items))


def _item_key(v: Any, depth: int) -> Any:
    t = v.__class__
    if t is NDARRAY or t in NP_SCALARS:
        return (v.dtype, v.shape)
    if t in PY_SCALARS:
        return literal_key(v)
    if depth < 2 and (t is dict or t is list or t is tuple):
        return container_key(v, depth + 1)
    return None


def identity_keyed(obj: Any) -> bool:
    """Is ``obj`` traced by identity alone, so that ``id(obj)`` can key its cache hits?

    Only plain objects qualify: ``object``'s own ``==`` and hash (so equal means same), no
    ``__tracing_type__``, no container, dataclass or named tuple (whose trace types follow
    their contents, which can change between calls), and a ``WeakRef`` trace type.
    """
    t = obj.__class__
    if t in BY_IDENTITY:
        return True
    if t in NOT_BY_IDENTITY:
        return False
    ok = (
        t.__eq__ is object.__eq__
        and t.__hash__ is object.__hash__
        and not hasattr(t, "__tracing_type__")
        and not dataclasses.is_dataclass(t)
        and not issubclass(t, (tuple, list, dict, set, frozenset, np.ndarray, np.generic))
    )
    if ok:
        try:
            ok = isinstance(make_trace_type(obj, "x"), WeakRef)
        except Exception:  # noqa: BLE001 - anything unusual stays on the slow path
            ok = False
    (BY_IDENTITY if ok else NOT_BY_IDENTITY).add(t)
    return ok
