"""``Registry`` and ``OpTable``: one kind of knowledge keyed by op (or by NumPy function), and
the one way to register it.

Every layer keeps what it knows of an op in a table keyed by :class:`~.ops.OpKind` — its
abstract evaluation (``ir.abstract.ABSTRACT_EVAL``), its reference lowering (``ir.LOWER``), its
gradient (``autodiff.rules.VJP``), its ONNX translation (``onnx.rules.RULES``) — and fills it
the way JAX registers a primitive's rules: a decorator naming the ops a function serves::

    @ABSTRACT_EVAL.register(OpKind.SIN, OpKind.COS)
    def _unary(attrs, x): ...

``register`` and ``add`` refuse a second entry for an op: two modules both claiming an op is a
mistake that would otherwise go unnoticed (the later import silently wins); a deliberate
refinement of an entry says so with ``replace``. Each entry remembers the module that
registered it (``origin``): ``tests/ops`` checks that every op's rules come from its family's
definition in ``kernel_ext.ops``. Reading is a dict's
(``table[op]``, ``op in table``, ``table.get(op)``), and so is assignment, which tests use to
put a broken rule in place for a while (``monkeypatch.setitem``). The tracer's table of NumPy
functions (``trace.HANDLERS``: ``np.func`` -> the handler recording it) is a ``Registry`` too.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Iterable
from types import FrameType
from typing import TypeVar

from .ops import OpKind

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Registry(dict[K, V]):
    """A dict from key to ``V`` named ``name`` (in its errors), filled by :meth:`register`."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        #: key -> the module that registered its entry (entered by ``add`` and ``replace``)
        self.origin: dict[K, str] = {}

    def add(self, key: K, value: V) -> V:
        """Enter ``value`` for ``key``; a second entry for ``key`` is an error."""
        if key in self:
            raise ValueError(
                f"{self.name}: {_key_text(key)} is registered twice (first "
                f"{_describe(self[key])}, then {_describe(value)}); keep one definition"
            )
        self[key] = value
        self.origin[key] = _registering_module()
        return value

    def replace(self, key: K, value: V) -> V:
        """Put ``value`` in place of ``key``'s entry: a refinement of the entry made before
        (a wrapper of it, or a special case of a rule a whole group shares), which must
        exist."""
        if key not in self:
            raise KeyError(f"{self.name}: {_key_text(key)} has no entry to replace")
        self[key] = value
        self.origin[key] = _registering_module()
        return value

    def register(self, *keys: K) -> Callable[[V], V]:
        """A decorator entering the function it decorates for each of ``keys``."""

        def register(value: V) -> V:
            for key in keys:
                self.add(key, value)
            return value

        return register


class OpTable(Registry[OpKind, V]):
    """A :class:`Registry` keyed by op."""

    def missing(self, kinds: Iterable[OpKind] = tuple(OpKind)) -> list[OpKind]:
        """The ops of ``kinds`` (all of them by default) with no entry, in order."""
        return [k for k in kinds if k not in self]


def _registering_module() -> str:
    """The module whose code called into this one (the registration's author): the first
    frame outside this module. Registration runs at import, so the frame walk costs nothing
    on any hot path."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return str(frame.f_globals.get("__name__", "?")) if frame is not None else "?"


def _key_text(key: object) -> str:
    if isinstance(key, OpKind):
        return f"op '{key.value}'"
    name = getattr(key, "__name__", None)
    return f"'{name}'" if name else repr(key)


def _describe(value: object) -> str:
    module = getattr(value, "__module__", None)
    name = getattr(value, "__qualname__", None) or type(value).__name__
    return f"{module}.{name}" if module else str(name)


__all__ = ["OpTable", "Registry"]
