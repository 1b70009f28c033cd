"""Executables shared between traces that differ only in their sizes.

A function called with 50 lengths traces 50 times (TensorFlow's rule: a new shape is a new
signature, and the Python body runs again). The 50 graphs are the same program with other
numbers in their shapes, and the fused executor's code and kernels never depend on sizes
(kernels are specialised on dtype, rank and broadcast pattern only). So the fused executor (or
the whole-graph function, with ``jit_compile=True``) is generated once per *size pattern* and
shared:

* :func:`size_pattern_key` describes a graph with every dimension larger than 1 replaced by a
  symbol numbered by first appearance. Sizes 0 and 1 stay literal (they decide broadcasting
  and empty-array paths), equal sizes get equal symbols (they decide which values share a
  fusion domain), and everything else — ops, argument order, literals, dtypes, attributes
  (a ``reshape`` to ``(3, 4)`` keeps its numbers), small constants by value — is part of the
  key. Graphs the key cannot describe faithfully (control flow, large constants, attributes
  of other types) get ``None`` and are never shared.
* :func:`erase_sizes` copies a graph with those symbolic dimensions turned into ``None``.
  Compiled from that copy, an executable computes shapes at run time and applies the cost
  model per call (the code path ``reduce_retracing`` graphs take), so it serves every graph
  of the pattern.

:func:`~kernel_ext.backends.compile_traced` keys the *traced* graph, before the optimiser:
the first trace of a pattern is optimised and compiled for its own static shapes; the second
optimises and compiles the erased copy (no pass decision can rest on a size there) and leaves
it in the table; later ones take it without optimising or compiling anything, their own
optimised graph made only when something reads it.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, cast

import numpy as np

from ..ir import Graph, Node, OpKind
from ..ir.abstract import AbstractValue
from ..ir.ops import OpGroup
from ..ir.params import PlaceholderParams

#: Most patterns kept (least recently used dropped first).
LIMIT = 256
#: Constants up to this many elements are keyed by value; larger ones disable sharing.
_CONST_LIMIT = 64
_SIMPLE = (bool, int, float, complex, str, type(None), np.dtype, np.generic)
_EXACT = frozenset([bool, int, str, type(None)])


_CONTROL_FLOW, _STATEFUL = OpGroup.CONTROL_FLOW, OpGroup.STATEFUL


class _Unkeyable(Exception):
    pass


def _attr_key(value: Any) -> Hashable:
    t = type(value)
    if t in _EXACT:  # equal values, equal meaning (bool and int kept apart by the type)
        return (t, value)
    if isinstance(value, np.dtype):
        return ("dtype", value.str)
    if isinstance(value, _SIMPLE):  # floats by repr: -0.0 and NaN payloads stay apart
        return (t.__name__, repr(value))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_attr_key(v) for v in value))
    if isinstance(value, slice):
        return ("slice", _attr_key(value.start), _attr_key(value.stop), _attr_key(value.step))
    raise _Unkeyable(type(value).__name__)


def _const_key(value: np.ndarray) -> Hashable:
    if value.size > _CONST_LIMIT or value.dtype.kind not in "biufc":
        raise _Unkeyable("large constant")
    return (value.dtype.str, value.shape, hashlib.sha1(value.tobytes()).hexdigest())


class _Pattern:
    def __init__(self) -> None:
        self.symbols: dict[int, int] = {}

    def shape(self, shape: tuple | None) -> Hashable:
        if shape is None:
            return None
        out = []
        for d in shape:
            if d is None or d <= 1:
                out.append(d)
            else:
                out.append(f"s{self.symbols.setdefault(d, len(self.symbols))}")
        return tuple(out)


def size_pattern_key(graph: Graph) -> Hashable | None:
    """A hashable description of ``graph`` up to its sizes (``None``: never share it)."""
    pattern = _Pattern()
    shape = pattern.shape
    index: dict[Node, int] = {}
    parts: list[Hashable] = []
    try:
        for i, node in enumerate(graph.nodes):
            op = node.op
            group = op.group
            if group is _CONTROL_FLOW or group is _STATEFUL:  # cond/while bodies, state
                return None
            index[node] = i
            args = tuple(
                ("n", index[a]) if isinstance(a, Node) else _attr_key(a) for a in node.args
            )
            attrs: tuple = ()
            if node.params:
                items = []
                for name, value in sorted(node.params.items()):
                    if op is OpKind.CONSTANT and name == "value":
                        items.append((name, _const_key(value)))
                    elif op is OpKind.PLACEHOLDER and name == "shape":
                        items.append((name, shape(value)))
                    else:
                        items.append((name, _attr_key(value)))
                attrs = tuple(items)
            aval = node.aval
            if aval is None:
                akey = None
            elif type(aval) is AbstractValue:
                akey = (aval.dtype.str, shape(aval.shape))
            else:
                return None
            parts.append((op.value, args, attrs, akey))
    except (_Unkeyable, KeyError):
        return None
    outputs = tuple(index.get(o, -1) for o in graph.outputs)
    if -1 in outputs:
        return None
    return (tuple(parts), outputs)


def tree_key(tree: Any) -> Hashable | None:
    """The output structure (:class:`~kernel_ext.ir.structure.TreeNode`) as a key."""
    try:
        return _tree_key(tree)
    except (_Unkeyable, TypeError):
        return None


def _tree_key(tree: Any) -> Hashable:
    value = (
        _attr_key(tree.value)
        if tree.kind == "const"
        else tree.value
        if tree.kind in ("input", "writeback", "argument", "replay", "output")
        else None
    )  # (argument paths; the Python number type an output is returned as)
    return (
        tree.kind,
        tree.index,
        value,
        tree.container,
        tuple(tree.keys),
        tuple(_tree_key(c) for c in tree.children),
    )


def erase_sizes(graph: Graph) -> Graph:
    """A copy of ``graph`` whose dimensions larger than 1 are unknown (``None``)."""

    def erase(shape: tuple | None) -> tuple | None:
        return (
            None if shape is None else tuple(None if d is not None and d > 1 else d for d in shape)
        )

    out = graph.rebuilt(graph.nodes)  # fresh nodes: safe to edit below
    for node in out.nodes:
        if node.op is OpKind.PLACEHOLDER:
            # (every input of a traced graph was made with its shape)
            shape = cast("PlaceholderParams", node.params).shape
            node.params = node.params.replace(shape=erase(shape))
        if isinstance(node.aval, AbstractValue):
            node.aval = AbstractValue(erase(node.aval.shape), node.aval.dtype)
    return out


class SharedExecutables:
    """The table: size pattern -> ``(times seen, shared executable or None)``."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._table: OrderedDict[Hashable, list[Any]] = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def lookup(self, key: Hashable) -> tuple[int, Any]:
        """``(traces of this pattern seen before, shared executable or None)``; counts this
        one."""
        with self._lock:
            entry = self._table.get(key)
            if entry is None:
                entry = self._table[key] = [0, None]
                if len(self._table) > self._limit:
                    self._table.popitem(last=False)
            else:
                self._table.move_to_end(key)
            seen = entry[0]
            entry[0] += 1
            return seen, entry[1]

    def store(self, key: Hashable, executable: Any) -> None:
        with self._lock:
            entry = self._table.get(key)
            if entry is not None and entry[1] is None:
                entry[1] = executable

    def clear(self) -> None:
        with self._lock:
            self._table.clear()


__all__ = ["LIMIT", "SharedExecutables", "erase_sizes", "size_pattern_key", "tree_key"]
