"""``OpTable``: one kind of knowledge about ops, keyed by op, and the one way to register it.

Every layer keeps what it knows of an op in a table keyed by :class:`~.ops.OpKind` — its
abstract evaluation (``ir.abstract.ABSTRACT_EVAL``), its reference lowering (``ir.LOWER``), its
gradient (``autodiff.rules.VJP``), its ONNX translation (``onnx.rules.RULES``) — and fills it
the way JAX registers a primitive's rules: a decorator naming the ops a function serves::

    @ABSTRACT_EVAL.register(OpKind.SIN, OpKind.COS)
    def _unary(attrs, x): ...

``register`` and ``add`` refuse a second entry for an op: two modules both claiming an op is a
mistake that would otherwise go unnoticed (the later import silently wins); a deliberate
refinement of an entry says so with ``replace``. Reading is a dict's
(``table[op]``, ``op in table``, ``table.get(op)``), and so is assignment, which tests use to
put a broken rule in place for a while (``monkeypatch.setitem``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from .ops import OpKind

V = TypeVar("V")


class OpTable(dict[OpKind, V]):
    """A dict from op to ``V`` named ``name`` (in its errors), filled by :meth:`register`."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def add(self, kind: OpKind, value: V) -> V:
        """Enter ``value`` for ``kind``; a second entry for ``kind`` is an error."""
        if kind in self:
            raise ValueError(
                f"{self.name}: op '{kind.value}' is registered twice (first "
                f"{_describe(self[kind])}, then {_describe(value)}); keep one definition"
            )
        self[kind] = value
        return value

    def replace(self, kind: OpKind, value: V) -> V:
        """Put ``value`` in place of ``kind``'s entry: a refinement of the entry made before
        (a wrapper of it, or a special case of a rule a whole group shares), which must
        exist."""
        if kind not in self:
            raise KeyError(f"{self.name}: op '{kind.value}' has no entry to replace")
        self[kind] = value
        return value

    def register(self, *kinds: OpKind) -> Callable[[V], V]:
        """A decorator entering the function it decorates for each of ``kinds``."""

        def register(value: V) -> V:
            for kind in kinds:
                self.add(kind, value)
            return value

        return register

    def missing(self, kinds: Iterable[OpKind] = tuple(OpKind)) -> list[OpKind]:
        """The ops of ``kinds`` (all of them by default) with no entry, in order."""
        return [k for k in kinds if k not in self]


def _describe(value: object) -> str:
    module = getattr(value, "__module__", None)
    name = getattr(value, "__qualname__", None) or type(value).__name__
    return f"{module}.{name}" if module else str(name)


__all__ = ["OpTable"]
