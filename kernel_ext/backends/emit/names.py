"""Names in generated Python source: ``Namer`` (globals and fresh identifiers of one
generated module) and ``Scope`` (which variable holds each graph value)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir import Node

# The run-time helpers every generated module has among its globals (``Namer``)


def _own(value: Any) -> Any:
    """A returned array the caller may write to (copies read-only views only)."""
    return value if value.flags.writeable else value.copy()


def _result(value: Any) -> Any:
    """A result of unknown rank: 0-d as a NumPy scalar (a 0-d result whose form the trace
    knows is built by ``output_expr``), everything else as an array the caller owns."""
    if getattr(value, "ndim", 1) == 0:
        return value[()]
    return _own(value)


def _array0(value: Any) -> np.ndarray:
    """A 0-d result NumPy returns as an array: a fresh one (a buffer a later call reuses, or
    a NumPy scalar a backend computed, becomes the caller's own 0-d array)."""
    return np.array(value)


def _like_argument(argument: Any, value: Any) -> Any:
    """A 0-d result of ndarray methods applied to an argument: a NumPy scalar when the
    caller passed one (its methods return scalars), else a fresh 0-d array."""
    return np.array(value) if isinstance(argument, np.ndarray) else value[()]


def _asarray_argument(argument: Any, value: Any) -> Any:
    """``np.asarray`` of a 0-d argument: the caller's array itself, or a new 0-d array of
    the NumPy scalar the caller passed."""
    return argument if isinstance(argument, np.ndarray) else np.array(value)


def _as_computed(value: Any) -> Any:
    """An opaque call's 0-d result as NumPy's function returned it (a scalar or an array)."""
    return _own(value) if isinstance(value, np.ndarray) else value


class Namer:
    """The globals of one generated module: values the code refers to by a fresh name."""

    def __init__(self) -> None:
        self.globals: dict[str, Any] = {
            "_own": _own,
            "_result": _result,
            "np": np,
            "_array0": _array0,
            "_like_argument": _like_argument,
            "_as_computed": _as_computed,
            "_asarray_argument": _asarray_argument,
        }
        self._count = 0

    def bind(self, value: Any, prefix: str = "_g") -> str:
        """Bind ``value`` to a new global named ``<prefix><n>`` and return that name."""
        self._count += 1
        name = f"{prefix}{self._count}"
        self.globals[name] = value
        return name


class Scope:
    """Names of one graph's values in the generated code (sub-graphs get their own prefix)."""

    def __init__(self, prefix: str, names: dict[Node, str] | None = None) -> None:
        self.prefix = prefix
        self.names: dict[Node, str] = dict(names or {})
        #: The 0-d values held as NumPy scalars already, not as 0-d arrays (the whole-graph
        #: runner makes them from the compiled function's numbers).
        self.scalars: set[Node] = set()
        #: The arrays the caller may take as they are: made by the call, so writable (any
        #: other array output is copied when it is read-only, ``_own``).
        self.owned: set[Node] = set()
        self._taken: set[str] = set(self.names.values())

    def var(self, node: Node) -> str:
        name = self.names.get(node)
        if name is None:
            base = f"{self.prefix}" + "".join(ch if ch.isalnum() else "_" for ch in node.name)
            # Node names are unique, their identifier forms need not be: "svd/1" (an output
            # of the first svd) and "svd_1" (the second svd) both read svd_1.
            name, n = base, 0
            while name in self._taken:
                n += 1
                name = f"{base}__{n}"
            self._taken.add(name)
            self.names[node] = name
        return name
