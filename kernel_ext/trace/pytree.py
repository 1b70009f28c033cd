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
    ``tuple``, ``list``, ``namedtuple``, ``dict``, ``dataclass``."""

    kind: str
    children: tuple["TreeNode", ...] = ()
    index: int = -1
    value: Any = None
    container: Any = None
    keys: tuple = ()


def flatten_outputs(result: Any, ctx: TraceContext) -> tuple[TreeNode, list[Node]]:
    outputs: list[Node] = []

    def walk(value: Any) -> TreeNode:
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


def unflatten(tree: TreeNode, leaves: list[Any]) -> Any:
    """Rebuild the structure with ``leaves`` in place of the graph outputs (used for specs)."""
    kind = tree.kind
    if kind == "output":
        return leaves[tree.index]
    if kind == "const":
        return tree.value
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
