"""Trace types: the cache key of a traced function, with TensorFlow's names and rules.

Every argument of a call maps to a :class:`TraceType` (:func:`make_trace_type`):

=============================  ==========================================================
argument                       trace type
=============================  ==========================================================
``np.ndarray`` / NumPy scalar  :class:`TensorSpec` (shape + dtype; a scalar and a 0-d
                               array of the same dtype are the same type; of the ndarray
                               subclasses only ``np.memmap``, which computes as a plain
                               array does; others raise, :func:`array_subclass_error`)
``bool/int/float/str/None``    :class:`Literal` (the value itself: a new value retraces;
                               values NumPy tells apart never share one: ``0.0`` and
                               ``-0.0``, NaN payloads, :func:`literal_key`)
``list``/``tuple``/namedtuple  :class:`Sequence_` (structure + element types, ordered)
dataclass instance             :class:`Dataclass` (class + field types)
``dict``                       :class:`Dict` (key -> type; insertion order ignored)
``kx.Variable``                :class:`VariableType` (identity + dtype + shape)
``dask.array.Array``           :class:`DaskArraySpec` (shape + dtype + chunks; the
                               ``"dask"`` backend runs such traces, docs/backends.md)
``obj.__tracing_type__(ctx)``  whatever it returns
any other hashable object      :class:`WeakRef` (equal objects share; a dead one never matches)
=============================  ==========================================================

Dispatch rules (implemented by the engine): a cached trace of type ``T`` accepts a call of type
``C`` when ``C.is_subtype_of(T)``. ``TensorSpec`` dims of ``None`` accept any size and
``shape=None`` any rank, so they are supertypes. Among accepting traces the most specific wins
(the one that is a subtype of every other candidate); ties go to the earliest.
``most_specific_common_supertype`` is what ``reduce_retracing=True`` traces with: dims that
differ become ``None``, a rank change becomes unknown rank, anything else (dtypes, literals,
structure) has no common supertype. ``placeholder_value`` builds the value the Python function
sees while tracing: a symbolic tensor for a TensorSpec, the value itself for a literal.
"""

from __future__ import annotations

import abc
import dataclasses
import struct
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, NamedTuple, cast

import numpy as np

from .. import errors
from ..ir import format_aval
from .tensor import Tensor, describe_tensor
from .variables import Variable


class PlaceholderContext:
    """What ``placeholder_value`` receives: the trace, and where in the arguments we are."""

    def __init__(
        self, trace_context: Any, name: str, path: tuple = (), watched_dicts: list | None = None
    ) -> None:
        self.trace_context = trace_context
        self.name = name
        self.path = path
        #: ``(placeholder, path, key order)`` of every dict placeholder made (KeyOrderWatch)
        self.watched_dicts: list[tuple[Any, tuple, tuple]] = (
            [] if watched_dicts is None else watched_dicts
        )

    def child(self, step: Any, label: Any) -> PlaceholderContext:
        return PlaceholderContext(
            self.trace_context, f"{self.name}_{label}", self.path + (step,), self.watched_dicts
        )


class TraceType(abc.ABC):
    """The type of an argument as far as tracing is concerned (``tf.types.experimental``)."""

    @abc.abstractmethod
    def is_subtype_of(self, other: TraceType) -> bool:
        """True if every value of ``self`` is also a value of ``other``."""

    @abc.abstractmethod
    def most_specific_common_supertype(self, others: Sequence[TraceType]) -> TraceType | None:
        """The narrowest type containing ``self`` and every one of ``others``, or ``None``."""

    @abc.abstractmethod
    def placeholder_value(self, placeholder_context: Any) -> Any:
        """The value the Python function sees while tracing with this type."""

    @abc.abstractmethod
    def __eq__(self, other: Any) -> bool: ...

    @abc.abstractmethod
    def __hash__(self) -> int: ...

    def describe(self) -> str:
        """Short human text (used by signatures and retrace explanations)."""
        return repr(self)


# ---------------------------------------------------------------------------------------------
# Tensors
# ---------------------------------------------------------------------------------------------


def _normalize_shape(shape: Any) -> tuple[int | None, ...] | None:
    if shape is None:
        return None
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    out: list[int | None] = []
    for d in shape:
        if d is None:
            out.append(None)
        elif isinstance(d, (int, np.integer)) and d >= 0:
            out.append(int(d))
        else:
            raise ValueError(
                f"TensorSpec shape dimensions must be non-negative ints or None, "
                f"got {d!r} in {tuple(shape)!r}"
            )
    return tuple(out)


def dtype_code(dtype: np.dtype) -> str:
    """``np.float32``-style text that evaluates back to the dtype (copyable into code)."""
    return f"np.{np.dtype(dtype).name}"


class TensorSpec(TraceType):
    """Describes arrays: ``TensorSpec(shape, dtype=np.float32, name=None)``.

    ``None`` in ``shape`` accepts any size in that dimension; ``shape=None`` accepts any rank.
    """

    __slots__ = ("_hash", "dtype", "name", "shape")

    def __init__(self, shape: Any, dtype: Any = np.float32, name: str | None = None) -> None:
        self.shape = _normalize_shape(shape)
        self.dtype = np.dtype(dtype)
        if self.dtype.kind in "OUSV":
            raise TypeError(f"TensorSpec dtype must be numeric or bool, got {self.dtype}")
        self.name = name
        self._hash = hash((self.shape, self.dtype, self.name))

    @classmethod
    def from_value(cls, value: Any, name: str | None = None) -> TensorSpec:
        arr = value if isinstance(value, (np.ndarray, np.generic)) else np.asarray(value)
        return cls(arr.shape, arr.dtype, name)

    def is_compatible_with(self, value: Any) -> bool:
        """True if the array ``value`` fits this spec (dtype equal, shape matching)."""
        return self.dtype == value.dtype and shape_fits(value.shape, self.shape)

    def is_subtype_of(self, other: TraceType) -> bool:
        if not isinstance(other, TensorSpec) or other.dtype != self.dtype:
            return False
        if other.shape is None:
            return True
        if self.shape is None or len(self.shape) != len(other.shape):
            return False
        return all(o is None or s == o for s, o in zip(self.shape, other.shape))

    def most_specific_common_supertype(self, others: Sequence[TraceType]) -> TraceType | None:
        if not all(isinstance(o, TensorSpec) and o.dtype == self.dtype for o in others):
            return None
        # (every one a TensorSpec, checked above)
        shapes = [self.shape] + [o.shape for o in cast("Sequence[TensorSpec]", others)]
        # (``if s is not None`` filters nothing: it runs only when no shape is None)
        if any(s is None for s in shapes) or len({len(s) for s in shapes if s is not None}) > 1:
            return TensorSpec(None, self.dtype)
        dims = tuple(d[0] if len(set(d)) == 1 else None for d in zip(*shapes))
        return TensorSpec(dims, self.dtype)

    def placeholder_value(self, placeholder_context: Any) -> Any:
        ctx = placeholder_context
        return ctx.trace_context.placeholder(
            self.name or ctx.name, self.shape, self.dtype, ctx.path
        )

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, TensorSpec)
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.name == other.name
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        shape = "None" if self.shape is None else repr(self.shape)
        name = "None" if self.name is None else repr(self.name)
        return f"TensorSpec(shape={shape}, dtype={dtype_code(self.dtype)}, name={name})"

    def describe(self) -> str:
        return format_aval(self.shape, self.dtype)


def shape_fits(shape: tuple, spec_shape: tuple | None) -> bool:
    if spec_shape is None:
        return True
    return len(shape) == len(spec_shape) and all(
        s is None or s == d for d, s in zip(shape, spec_shape)
    )


def matches_only_itself(t: TraceType) -> bool:
    """True when ``t`` accepts nothing but an equal type (no ``None`` dimension, no name, no
    user-defined rules): a call whose types are not *equal* to such a trace's types can never
    dispatch to it, so the dispatcher skips the subtype scan over those traces."""
    cls = type(t)
    if cls is TensorSpec:
        return t.name is None and t.shape is not None and None not in t.shape  # type: ignore
    if cls in (Literal, VariableType, WeakRef):
        return True
    if cls is DaskArraySpec:
        return t.shape is not None and None not in t.shape  # type: ignore[attr-defined]
    if cls in (Sequence_, Dict, Dataclass):
        return all(matches_only_itself(c) for c in t.components)  # type: ignore[attr-defined]
    return False


# ---------------------------------------------------------------------------------------------
# Dask arrays
# ---------------------------------------------------------------------------------------------


def is_dask_array(value: Any) -> bool:
    """Is ``value`` a ``dask.array.Array``? Asked by class name, so that tracing never imports
    Dask (only ``backends/dask_backend`` does, when a trace runs on it)."""
    cls = type(value)
    return cls.__name__ == "Array" and cls.__module__.startswith("dask.array")


class DaskArraySpec(TraceType):
    """Describes Dask arrays: ``DaskArraySpec(shape, dtype, chunks)``.

    ``chunks`` is Dask's block structure, one tuple of block sizes per dimension; it is part
    of the type because the graph Dask runs (one task per block) depends on it. Sizes relax as
    a :class:`TensorSpec`'s do: ``None`` for a dimension accepts any size *and* any blocks
    along it, ``shape=None`` any rank. A Dask array never matches a TensorSpec (nor the
    reverse): its trace returns Dask arrays, a NumPy trace returns NumPy arrays.
    """

    __slots__ = ("_hash", "chunks", "dtype", "shape")

    def __init__(self, shape: Any, dtype: Any, chunks: Any = None) -> None:
        self.shape = _normalize_shape(shape)
        self.dtype = np.dtype(dtype)
        if self.shape is None:
            chunks = None
        elif chunks is None:
            chunks = (None,) * len(self.shape)
        else:
            chunks = tuple(
                None if s is None or c is None else tuple(int(b) for b in c)
                for s, c in zip(self.shape, chunks)
            )
        self.chunks = chunks
        self._hash = hash((self.shape, self.dtype, self.chunks))

    @classmethod
    def from_value(cls, value: Any, path: str = "argument") -> DaskArraySpec:
        if any(d != d for d in value.shape):  # NaN: a size Dask learns only by computing
            raise errors.TraceTypeError(
                f"{path}: a Dask array with unknown chunk sizes (shape {value.shape}) cannot be "
                "traced: the graph needs every block's size. Fix: x.compute_chunk_sizes() "
                "before the call."
            )
        if value.dtype.kind in "OUSV":
            raise errors.TraceTypeError(
                f"{path}: Dask arrays of dtype {value.dtype} cannot be traced (only numeric "
                "and bool)."
            )
        return cls(value.shape, value.dtype, value.chunks)

    def is_subtype_of(self, other: TraceType) -> bool:
        if not isinstance(other, DaskArraySpec) or other.dtype != self.dtype:
            return False
        if other.shape is None:
            return True
        if self.shape is None or len(self.shape) != len(other.shape):
            return False
        return all(
            o is None or (s == o and oc == sc)
            for s, o, sc, oc in zip(self.shape, other.shape, self.chunks, other.chunks)
        )

    def most_specific_common_supertype(self, others: Sequence[TraceType]) -> TraceType | None:
        if not all(isinstance(o, DaskArraySpec) and o.dtype == self.dtype for o in others):
            return None
        specs = [self, *cast("Sequence[DaskArraySpec]", others)]  # (checked above)
        shapes = [s.shape for s in specs]
        # (``if s is not None`` filters nothing: it runs only when no shape is None)
        if any(s is None for s in shapes) or len({len(s) for s in shapes if s is not None}) > 1:
            return DaskArraySpec(None, self.dtype)
        dims, chunks = [], []
        for i, d in enumerate(zip(*shapes)):
            c = {s.chunks[i] for s in specs}
            same = len(set(d)) == 1 and len(c) == 1
            dims.append(d[0] if same else None)
            chunks.append(next(iter(c)) if same else None)
        return DaskArraySpec(tuple(dims), self.dtype, tuple(chunks))

    def placeholder_value(self, placeholder_context: Any) -> Any:
        ctx = placeholder_context
        return ctx.trace_context.placeholder(ctx.name, self.shape, self.dtype, ctx.path)

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, DaskArraySpec)
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.chunks == other.chunks
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return (
            f"DaskArraySpec(shape={self.shape!r}, dtype={dtype_code(self.dtype)}, "
            f"chunks={self.chunks!r})"
        )

    def describe(self) -> str:
        if self.chunks is None:
            return f"dask {format_aval(self.shape, self.dtype)}"
        blocks = ", ".join(
            "?"
            if c is None
            else "+".join(map(str, c))
            if len(set(c)) > 1
            else f"{len(c)}x{c[0]}"
            if c
            else "0"
            for c in self.chunks
        )
        return f"dask {format_aval(self.shape, self.dtype)} chunks ({blocks})"


def contains_dask(types_: Iterable[TraceType]) -> bool:
    """Does any of these trace types (containers searched) describe a Dask array?"""
    for t in types_:
        if isinstance(t, DaskArraySpec):
            return True
        if isinstance(t, Composite) and contains_dask(t.components):
            return True
    return False


# ---------------------------------------------------------------------------------------------
# Python values
# ---------------------------------------------------------------------------------------------


class _ExactType(TraceType):
    """A type with no proper supertypes: it matches only itself (values, identities)."""

    def is_subtype_of(self, other: TraceType) -> bool:
        return self == other

    def most_specific_common_supertype(self, others: Sequence[TraceType]) -> TraceType | None:
        return self if all(self == o for o in others) else None


class Literal(_ExactType):
    """A Python ``bool/int/float/complex/str/bytes/None``: traced as its value."""

    __slots__ = ("_key", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        # type is part of the key: 1, 1.0 and True are equal in Python but trace differently.
        self._key = literal_key(value)

    def placeholder_value(self, placeholder_context: Any) -> Any:
        return self.value

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Literal) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"Literal({self.value!r})"

    def describe(self) -> str:
        # The value as Python writes it (``3``, ``2.0``, ``'train'``, ``True``): the type
        # shows already (``3`` and ``3.0`` and ``True`` differ), and every view reads the same.
        return repr(self.value)


_DOUBLE = struct.Struct("<d")
_DOUBLE_PAIR = struct.Struct("<dd")


def literal_key(value: Any) -> tuple:
    """``(type, value)``, the key under which a Python scalar is traced as itself, except
    where Python's ``==`` would merge values NumPy tells apart: a float that is zero or NaN
    is keyed by its bits, so ``0.0`` and ``-0.0`` get a trace each (``x / s`` is ``+inf`` or
    ``-inf``), and a NaN matches a NaN of the same bits (``nan != nan`` would otherwise make
    every call a miss) while another payload traces anew (NumPy propagates the payload).
    A complex number is always keyed by the bits of both parts. Bytes never equal a number,
    so a bits key cannot collide with a value key. The engine's fast key uses the same rule.
    """
    t = type(value)
    if t is float:
        return (t, value) if value and value == value else (t, _DOUBLE.pack(value))
    if t is complex:
        return (t, _DOUBLE_PAIR.pack(value.real, value.imag))
    return (t, value)


class Composite(TraceType):
    """A structured type (:class:`Sequence_`, :class:`Dict`, :class:`Dataclass`): a header
    (the container, keys or class) plus ``components``, compared elementwise."""

    kind: str
    components: tuple[TraceType, ...]

    def same_structure(self, other: Any) -> bool:
        """Same kind, same header, same number of components (the components may differ)."""
        return (
            type(other) is type(self)
            and self._header() == other._header()
            and len(self.components) == len(other.components)
        )

    def _header(self) -> Any:
        return None

    def _rebuild(self, components: tuple[TraceType, ...]) -> Composite:
        raise NotImplementedError

    def is_subtype_of(self, other: TraceType) -> bool:
        return self.same_structure(other) and all(
            # (``other`` is of this class: same_structure says so)
            a.is_subtype_of(b)
            for a, b in zip(self.components, cast("Composite", other).components)
        )

    def most_specific_common_supertype(self, others: Sequence[TraceType]) -> TraceType | None:
        if not all(self.same_structure(o) for o in others):
            return None
        merged = []
        same = cast("Sequence[Composite]", others)  # (of this class: same_structure says so)
        for i, c in enumerate(self.components):
            m = c.most_specific_common_supertype([o.components[i] for o in same])
            if m is None:
                return None
            merged.append(m)
        return self._rebuild(tuple(merged))

    def __eq__(self, other: Any) -> bool:
        return self.same_structure(other) and self.components == other.components

    def __hash__(self) -> int:
        return hash((type(self), self._header(), self.components))


class Sequence_(Composite):
    """A ``tuple``, ``list`` or namedtuple: structure and element types, order-sensitive."""

    def __init__(self, container: type, components: Iterable[TraceType]) -> None:
        self.container = container
        self.components = tuple(components)

    def _header(self) -> Any:
        return self.container

    def _rebuild(self, components: tuple[TraceType, ...]) -> Sequence_:
        return Sequence_(self.container, components)

    def placeholder_value(self, placeholder_context: Any) -> Any:
        items = [
            c.placeholder_value(placeholder_context.child(("item", i), i))
            for i, c in enumerate(self.components)
        ]
        if self.container in (tuple, list):
            return self.container(items)
        return self.container(*items)  # namedtuple

    def __repr__(self) -> str:
        return self._text(repr)

    def describe(self) -> str:
        return self._text(lambda c: c.describe())

    def _text(self, text: Callable[[TraceType], str]) -> str:
        inner = ", ".join(text(c) for c in self.components)
        if self.container is list:
            return f"[{inner}]"
        if self.container is tuple:
            return f"({inner}{',' if len(self.components) == 1 else ''})"
        return f"{self.container.__name__}({inner})"


class Dict(Composite):
    """A ``dict``: key -> value type; insertion order does not matter to the type.

    ``{1: 2, 3: 4}`` and ``{3: 4, 1: 2}`` have one type (TensorFlow's rule), so a function
    that only looks keys up traces once for both. The placeholder keeps the order of the call
    that traced (``order``) and watches whether the function observed it
    (:class:`KeyOrderWatch`): a trace that iterated the dict is only right for that order,
    and the engine's call guard runs a call with another order as plain Python.
    """

    def __init__(self, items: dict[Any, TraceType]) -> None:
        self.order = tuple(items)
        self.keys = tuple(sorted(items, key=_sort_key))
        self.components = tuple(items[k] for k in self.keys)

    def _header(self) -> Any:
        return self.keys

    def _rebuild(self, components: tuple[TraceType, ...]) -> Dict:
        by_key = dict(zip(self.keys, components))
        return Dict({k: by_key[k] for k in self.order})

    def placeholder_value(self, placeholder_context: Any) -> Any:
        by_key = dict(zip(self.keys, self.components))
        placeholder = KeyOrderWatch(
            (k, by_key[k].placeholder_value(placeholder_context.child(("key", k), k)))
            for k in self.order
        )
        placeholder_context.watched_dicts.append(
            (placeholder, placeholder_context.path, self.order)
        )
        return placeholder

    def __repr__(self) -> str:
        return self._text(repr)

    def describe(self) -> str:
        return self._text(lambda c: c.describe())

    def _text(self, text: Callable[[TraceType], str]) -> str:
        return (
            "{" + ", ".join(f"{k!r}: {text(c)}" for k, c in zip(self.keys, self.components)) + "}"
        )


def _sort_key(k: Any) -> tuple:
    return (type(k).__name__, repr(k))


class KeyOrderWatch(dict):
    """A dict placeholder that notes whether the traced function observed its key order.

    Lookups, stores and ``len`` leave the order unseen; iterating (``for k in d``, ``items``,
    ``values``, ``keys``, comprehensions, ``list(d)``, ``{**d}``, ``dict(d)``), ``popitem``,
    ``reversed`` and ``repr`` see it. (CPython copies a dict subclass that overrides
    ``__iter__`` through ``keys()``, so copies are seen too.)
    """

    order_observed = False

    def _seen(self) -> None:
        self.order_observed = True

    def __iter__(self) -> Any:
        self._seen()
        return super().__iter__()

    def __reversed__(self) -> Any:
        self._seen()
        return super().__reversed__()

    def keys(self) -> Any:
        self._seen()
        return super().keys()

    def values(self) -> Any:
        self._seen()
        return super().values()

    def items(self) -> Any:
        self._seen()
        return super().items()

    def popitem(self) -> Any:
        self._seen()
        return super().popitem()

    def copy(self) -> dict:
        self._seen()
        return dict(super().items())

    def __repr__(self) -> str:
        self._seen()
        return repr(dict(super().items()))

    def __or__(self, other: Any) -> Any:
        self._seen()
        return dict(super().items()) | other

    def __ror__(self, other: Any) -> Any:
        self._seen()
        return other | dict(super().items())

    def __reduce_ex__(self, protocol: Any) -> Any:
        self._seen()
        return (dict, (list(super().items()),))


class Dataclass(Composite):
    """A dataclass instance: its class plus the types of its fields."""

    def __init__(self, cls: type, fields: dict[str, TraceType]) -> None:
        self.cls = cls
        self.names = tuple(fields)
        self.components = tuple(fields.values())

    def _header(self) -> Any:
        return (self.cls, self.names)

    def _rebuild(self, components: tuple[TraceType, ...]) -> Dataclass:
        return Dataclass(self.cls, dict(zip(self.names, components)))

    def placeholder_value(self, placeholder_context: Any) -> Any:
        values = {
            n: c.placeholder_value(placeholder_context.child(("attr", n), n))
            for n, c in zip(self.names, self.components)
        }
        obj: object = object.__new__(self.cls)
        for n, v in values.items():
            object.__setattr__(obj, n, v)  # frozen dataclasses too
        return obj

    def __repr__(self) -> str:
        return self._text(repr)

    def describe(self) -> str:
        return self._text(lambda c: c.describe())

    def _text(self, text: Callable[[TraceType], str]) -> str:
        inner = ", ".join(f"{n}={text(c)}" for n, c in zip(self.names, self.components))
        return f"{self.cls.__name__}({inner})"


class VariableType(_ExactType):
    """A ``kx.Variable`` argument: identity, dtype and shape."""

    def __init__(self, var: Any) -> None:
        self._ref = weakref.ref(var)
        self._id = id(var)
        self.dtype = var.dtype
        self.shape = tuple(var.shape)

    def placeholder_value(self, placeholder_context: Any) -> Any:
        return self._ref()

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, VariableType)
            and self._ref() is not None
            and self._ref() is other._ref()
            and self.dtype == other.dtype
            and self.shape == other.shape
        )

    def __hash__(self) -> int:
        return hash((self._id, self.dtype, self.shape))

    def __repr__(self) -> str:
        var = self._ref()
        name = var.name if var is not None else "<dead>"
        return f"VariableType({name!r}, {format_aval(self.shape, self.dtype)})"


class WeakRef(_ExactType):
    """Any other hashable object: equal objects share a trace; a dead object never matches."""

    def __init__(self, obj: Any) -> None:
        self._hash = hash(obj)  # raises TypeError for unhashable objects (caller reports it)
        self.type_name = type(obj).__qualname__
        self._repr = _short(repr(obj))
        try:
            self._ref: Callable[[], Any] = weakref.ref(obj, _DeadCallbacks.fire)
            self.weak = True
        except TypeError:
            self._ref = lambda: obj  # not weak-referenceable (frozenset, ...): keep it
            self.weak = False

    def alive(self) -> bool:
        return self._ref() is not None

    def placeholder_value(self, placeholder_context: Any) -> Any:
        return self._ref()

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, WeakRef) or self._hash != other._hash:
            return False
        a, b = self._ref(), other._ref()
        if a is None or b is None:
            return False
        try:
            return a is b or bool(type(a) is type(b) and a == b)
        except Exception:
            return False

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"WeakRef({self._repr})"

    def describe(self) -> str:
        state = "" if self.alive() else " (dead)"
        return f"{self.type_name} object {self._repr}{state}"


class _DeadCallbacks:
    """Weakref callbacks fan out to listeners (Functions purge traces keyed by dead objects)."""

    listeners: ClassVar[weakref.WeakSet[Any]] = weakref.WeakSet()

    @classmethod
    def fire(cls, _ref: Any) -> None:
        for listener in list(cls.listeners):
            listener.on_object_died()


def register_dead_object_listener(listener: Any) -> None:
    """``listener.on_object_died()`` is called whenever an object keying a trace dies."""
    _DeadCallbacks.listeners.add(listener)


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------------------------------------
# Building trace types from values
# ---------------------------------------------------------------------------------------------


class TracingTypeContext:
    """Passed to ``__tracing_type__(context)``; ``context.make(value)`` types a sub-value."""

    def __init__(self, path: str) -> None:
        self.path = path

    def make(self, value: Any) -> TraceType:
        return make_trace_type(value, self.path)


_LITERAL_TYPES = (bool, int, float, complex, str, bytes, type(None))

#: The array classes traced as plain arrays (:class:`TensorSpec`): ``np.memmap`` is a plain
#: array backed by a file, and NumPy computes on it exactly as on an ndarray (its computed
#: results are plain ndarrays). Any other ndarray subclass may change what an operation
#: computes or returns (``np.ma.MaskedArray`` skips masked entries, ``np.matrix``'s ``*`` is
#: a matrix product), which a trace of plain-array operations would silently drop, so it is
#: refused unless its class defines ``__tracing_type__``.
PLAIN_ARRAY_CLASSES = frozenset({np.ndarray, np.memmap})


def array_subclass_error(
    value: np.ndarray, path: str, subject: str | None = None
) -> errors.TraceTypeError:
    """The error for an ndarray subclass the engine does not trace (not in
    :data:`PLAIN_ARRAY_CLASSES`): what it is, why, and what to use instead. The same on every
    backend, raised before any trace or executor sees the value. ``subject`` says where it
    was met (default: ``argument 'path'``)."""
    cls = type(value)
    name = f"{cls.__module__}.{cls.__qualname__}"
    aval = format_aval(value.shape, value.dtype)
    subject = subject or f"argument {path!r}"
    if isinstance(value, np.ma.MaskedArray):
        masked = int(np.ma.count_masked(value))
        return errors.TraceTypeError(
            f"{subject} is a masked array ({name}, {aval}, {masked} of {value.size} entries "
            "masked); kx.function traces plain ndarrays, whose operations would ignore the "
            "mask. Fix: use x.filled(fill_value) to choose what masked entries become, or "
            "np.asarray(x) for the data without the mask; for masked semantics, call the "
            "Python function itself."
        )
    if isinstance(value, np.matrix):
        return errors.TraceTypeError(
            f"{subject} is a {name} ({aval}); kx.function traces plain ndarrays, and "
            "np.matrix computes differently (* is a matrix product, results stay 2-d). Fix: "
            "use np.asarray(x) and write @ for matrix products."
        )
    return errors.TraceTypeError(
        f"{subject} is a {name} ({aval}), an ndarray subclass; kx.function traces plain "
        "ndarrays, and a subclass may change what operations compute or return "
        "(__array_ufunc__, __array_finalize__, ...). Fix: use np.asarray(x) (a plain "
        "ndarray of the same data), or give the class a __tracing_type__ method."
    )


def make_trace_type(value: Any, path: str = "argument", allow_specs: bool = False) -> TraceType:
    """The trace type of ``value`` (rules in the module docstring); ``path`` names it in errors.

    With ``allow_specs`` (``get_concrete_function``), a TraceType such as a TensorSpec stands
    for itself.
    """
    if allow_specs and isinstance(value, TraceType):
        return value
    if isinstance(value, np.ndarray) and type(value) not in PLAIN_ARRAY_CLASSES:
        # a subclass: traced only through its own __tracing_type__ (below), never as a plain
        # array, so it can neither share a plain array's trace nor reach an executor
        if getattr(type(value), "__tracing_type__", None) is None:
            raise array_subclass_error(value, path)
    elif isinstance(value, np.ndarray):
        if value.dtype.kind in "OUSV":
            raise errors.TraceTypeError(
                f"{path}: arrays of dtype {value.dtype} cannot be traced (only numeric and bool "
                "arrays). Fix: pass numeric arrays, or pass this value as a plain Python object "
                "(tuple) if it is static."
            )
        return TensorSpec(value.shape, value.dtype)
    if isinstance(value, np.generic):
        return TensorSpec((), value.dtype)
    if is_dask_array(value):
        return DaskArraySpec.from_value(value, path)
    if isinstance(value, _LITERAL_TYPES):
        return Literal(value)
    if isinstance(value, Variable):
        return VariableType(value)
    if isinstance(value, Tensor):
        raise errors.LeakedTensorError(
            f"{path}: a traced value {describe_tensor(value)} was passed as an argument outside "
            "its trace. Fix: pass NumPy arrays; inside another kx.function, call the Python "
            "function."
        )
    hook = getattr(type(value), "__tracing_type__", None)
    if hook is not None:
        result = value.__tracing_type__(TracingTypeContext(path))
        if not isinstance(result, TraceType):
            raise errors.TraceTypeError(
                f"{path}: {type(value).__name__}.__tracing_type__ returned "
                f"{type(result).__name__}, expected a kx.TraceType"
            )
        return result
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return Sequence_(
            type(value),
            (
                make_trace_type(v, f"{path}.{f}", allow_specs)
                for f, v in zip(cast("NamedTuple", value)._fields, value)
            ),
        )
    if type(value) in (tuple, list):
        return Sequence_(
            type(value),
            (make_trace_type(v, f"{path}[{i}]", allow_specs) for i, v in enumerate(value)),
        )
    if isinstance(value, dict):
        return Dict(
            {k: make_trace_type(v, f"{path}[{k!r}]", allow_specs) for k, v in value.items()}
        )
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return Dataclass(
            type(value),
            {
                f.name: make_trace_type(getattr(value, f.name), f"{path}.{f.name}", allow_specs)
                for f in dataclasses.fields(value)
            },
        )
    try:
        return WeakRef(value)
    except TypeError:
        raise errors.TraceTypeError(
            f"{path}: got an unhashable {type(value).__name__} ({_short(repr(value))}); a "
            "kx.function keys its traces by its arguments, so non-array arguments must be "
            "hashable. Fix: pass a tuple or frozenset instead of a "
            f"{type(value).__name__}, or give the class a __tracing_type__ method."
        ) from None
