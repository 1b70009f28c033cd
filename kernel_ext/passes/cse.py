"""Common-subexpression elimination: one node per distinct pure computation.

Two pure nodes are twins when they have the same op, the same arguments (the very same input
nodes, and literals equal *including their type*: ``1``, ``1.0`` and ``True`` differ, so do
``0.0`` and ``-0.0``) and equal attrs. The later twin is dropped and its users read the earlier
one. Walking in program order with the arguments already re-pointed merges whole chains in one
pass (``tanh(x) + 1`` twice becomes one ``tanh`` and one ``add``).

Never merged: stateful ops (two reads of a variable may see different values; two prints both
print), nodes carrying sub-graphs (control flow), captured constants (each stays visible as a
capture), and placeholders. Constants the passes made themselves are merged when dtype, shape
and bytes agree.

Attrs hold tuples, slices, dtypes, NumPy arrays, index templates: :func:`freeze` turns them
into hashable keys that are equal exactly when the values are interchangeable, falling back to
object identity for anything it does not know (conservative: identical objects only).
"""

from __future__ import annotations

import struct
from collections.abc import Hashable
from typing import Any

import numpy as np

from ..ir import AbstractValue, CallTemplate, DynamicIndex, Graph, Node, Operand, OpKind
from .rewrite import Rewriter, is_pure, recursive

MAX_MERGED_CONSTANT = 1_000_000  # elements; bigger constants are not hashed


class Unmergeable(Exception):
    """Raised by :func:`freeze` for values that make a node unmergeable (sub-graphs)."""


def freeze(value: Any) -> Hashable:
    """A hashable key for an attr value or literal argument.

    Keys carry the type, and floats compare by bit pattern: ``freeze(1) != freeze(1.0) !=
    freeze(True)``, ``freeze(0.0) != freeze(-0.0)``, ``freeze(nan) == freeze(nan)``.
    """
    t = type(value)
    if value is None or value is Ellipsis:
        return (t.__name__,)
    if t in (bool, int, str):
        return (t.__name__, value)
    if t is float:
        return ("float", struct.pack("<d", value))
    if t is complex:
        return ("complex", struct.pack("<dd", value.real, value.imag))
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            return ("id", id(value))
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.generic):
        if value.dtype.hasobject:
            return ("id", id(value))
        return ("generic", value.dtype.str, value.tobytes())
    if isinstance(value, np.dtype):
        return ("dtype", value.str, value.name)
    if isinstance(value, slice):
        return ("slice", freeze(value.start), freeze(value.stop), freeze(value.step))
    if t in (tuple, list):
        return (t.__name__,) + tuple(freeze(v) for v in value)
    if isinstance(value, Graph):
        raise Unmergeable(value.name)
    if isinstance(value, AbstractValue):
        return ("aval", freeze(value.shape), value.dtype.str)
    if isinstance(value, DynamicIndex):
        return ("dynamic", value.position)
    if isinstance(value, Operand):
        return ("operand", value.index)
    if isinstance(value, CallTemplate):  # an opaque call's arguments: equal when written alike
        return ("template", freeze(value.args), freeze(value.kwargs))
    if t is dict:
        return ("dict",) + tuple((freeze(k), freeze(v)) for k, v in value.items())
    if isinstance(value, type):
        return ("type", value)
    return ("id", id(value))  # unknown objects: only the same object is equal to itself


def node_key(node: Node, args: tuple[Any, ...]) -> Hashable | None:
    """The merge key of ``node`` with (new-graph) ``args``, or ``None`` if it never merges."""
    if node.op is OpKind.CONSTANT:
        value = node.params.value
        if (
            node.params.captured
            or value.size > MAX_MERGED_CONSTANT
            or set(node.params) != {"value"}
        ):
            return None
        return ("constant", freeze(value))
    if not is_pure(node):
        return None
    try:
        # (a node's meta annotates, never changes the value: not part of the key)
        attrs = (
            tuple(sorted([(k, freeze(v)) for k, v in node.params.items()])) if node.params else ()
        )
    except Unmergeable:
        return None
    frozen_args = tuple([("node", id(a)) if isinstance(a, Node) else freeze(a) for a in args])
    return (node.op.value, frozen_args, attrs)  # the op's name: Enum hashing is slow


def _cse_level(graph: Graph) -> tuple[Graph, bool]:
    rw = Rewriter(graph)
    first: dict[Hashable, Node] = {}  # key -> the new node of its first occurrence
    for node in graph.nodes:
        args = rw.args(node)
        key = node_key(node, args)
        if key is not None:
            twin = first.get(key)
            if twin is not None:
                rw.use(node, twin)
                continue
            first[key] = rw.keep(node, args=args)
            continue
        rw.keep(node, args=args)
    return rw.finish()


eliminate_common_subexpressions = recursive(
    _cse_level,
    "eliminate_common_subexpressions",
    """``Graph -> (Graph, changed)``: merge twin
pure nodes (same op, same inputs, equal literals and attrs), inside control-flow bodies too.""",
)
