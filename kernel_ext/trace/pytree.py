"""Output structures: flatten what a traced function returns into graph outputs and back.

A function may return any nesting of tuples, lists, namedtuples, dicts and dataclasses whose
leaves are traced values, arrays, variables or plain Python values. :func:`flatten_outputs`
turns that into a *tree* (nested :class:`TreeNode` records) plus the list of graph output nodes;
leaves that are Python values stay in the tree as constants, exactly as returned at trace time.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir import Node
from .context import TraceContext
from .tensor import Tensor
from .variables import Variable


@dataclass(frozen=True)
class TreeNode:
    """``kind`` is one of: ``output`` (graph output #index), ``const`` (a Python value),
    ``tuple``, ``list``, ``namedtuple``, ``dict``, ``dataclass``; and two the engine adds for
    in-place updates: ``input`` (the caller's own argument at path ``value``, returned as the
    same object, as NumPy returns an array updated in place; graph output #index is its new
    value) and ``writeback`` (children[0] is the result; after it is built, each further child's
    value is copied into the argument at the matching path of ``value``)."""

    kind: str
    children: tuple["TreeNode", ...] = ()
    index: int = -1
    value: Any = None
    container: Any = None
    keys: tuple = ()


def flatten_outputs(result: Any, ctx: TraceContext,
                    updated: dict[int, tuple[tuple, Tensor]] | None = None
                    ) -> tuple[TreeNode, list[Node]]:
    """The returned structure as a tree plus its graph outputs. ``updated`` maps the ids of
    the argument tensors updated in place to their paths: returning one returns the caller's
    array itself (an ``input`` leaf), as NumPy does."""
    outputs: list[Node] = []

    def walk(value: Any) -> TreeNode:
        if updated and isinstance(value, Tensor) and id(value) in updated:
            outputs.append(ctx.lift(value))
            return TreeNode("input", index=len(outputs) - 1, value=updated[id(value)][0])
        if isinstance(value, (Tensor, Variable, np.ndarray, np.generic)):
            node = ctx.lift(value)
            outputs.append(node)
            return TreeNode("output", index=len(outputs) - 1)
        if isinstance(value, tuple) and hasattr(type(value), "_fields"):
            return TreeNode("namedtuple", tuple(walk(v) for v in value), container=type(value))
        if type(value) in (tuple, list):
            return TreeNode(type(value).__name__, tuple(walk(v) for v in value))
        if isinstance(value, dict):
            keys = tuple(value)
            return TreeNode("dict", tuple(walk(value[k]) for k in keys), keys=keys)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            names = tuple(f.name for f in dataclasses.fields(value))
            return TreeNode("dataclass", tuple(walk(getattr(value, n)) for n in names),
                            container=type(value), keys=names)
        return TreeNode("const", value=value)

    tree = walk(result)
    return tree, outputs


def with_writeback(tree: TreeNode, outputs: list[Node], ctx: TraceContext,
                   updated: list[tuple[tuple, Tensor]]) -> TreeNode:
    """``tree`` wrapped so that the executor, after building the result, copies the final
    value of each updated argument (appended to ``outputs``) into the caller's array."""
    children = [tree]
    for _, tensor in updated:
        outputs.append(ctx.lift(tensor))
        children.append(TreeNode("output", index=len(outputs) - 1))
    return TreeNode("writeback", tuple(children), value=tuple(path for path, _ in updated))


def unflatten(tree: TreeNode, leaves: list[Any]) -> Any:
    """Rebuild the structure with ``leaves`` in place of the graph outputs (used for specs)."""
    kind = tree.kind
    if kind == "output" or kind == "input":
        return leaves[tree.index]
    if kind == "const":
        return tree.value
    if kind == "writeback":
        return unflatten(tree.children[0], leaves)
    items = [unflatten(c, leaves) for c in tree.children]
    if kind == "tuple":
        return tuple(items)
    if kind == "list":
        return items
    if kind == "namedtuple":
        return tree.container(*items)
    if kind == "dict":
        return dict(zip(tree.keys, items))
    obj = object.__new__(tree.container)
    for name, item in zip(tree.keys, items):
        object.__setattr__(obj, name, item)
    return obj
