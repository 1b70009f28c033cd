"""Output structures as data: the tree a traced function's result flattens into.

A :class:`TreeNode` tree records the nesting of what a function returns (tuples, lists,
namedtuples, dicts, dataclasses), with graph output indices at its leaves, and what the engine
adds for in-place updates (written-back and replayed arguments). The trace layer builds trees
(:mod:`kernel_ext.trace.pytree`); the engine and the backends read them, and
:func:`unflatten` rebuilds the structure around a list of leaves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TreeNode:
    """``kind`` is one of: ``output`` (graph output #index), ``const`` (a Python value),
    ``tuple``, ``list``, ``namedtuple``, ``dict``, ``dataclass``; and two the engine adds for
    in-place updates: ``input`` (the caller's own argument at path ``value``, returned as the
    same object, as NumPy returns an array updated in place; graph output #index is its new
    value), ``argument`` (the caller's object at path ``value``, as it is: a list or dict
    argument returned or stored in another), ``writeback`` (children[0] is the result; after it
    is built, each further child's value is copied into the argument at the matching path of
    ``value``) and ``replay`` (children[0] is the result; then each container argument at the
    paths of ``value`` — ``(path, kind)`` pairs, kind ``list``/``dict``/``attrs`` — takes the
    contents the matching further child builds, see :class:`ArgumentContainers`)."""

    # (an ``output`` leaf's ``value``: the Python number type it is returned as, or for a 0-d
    # value ``np.ndarray`` (a fresh 0-d array, as NumPy's constructors, views and ``where``
    # give), ``("like", path)`` (the form of that argument, per call), ``("argument", path)``
    # (that argument itself, the caller's object) or ``"computed"`` (an opaque call's own
    # result); None: a 0-d value as a NumPy scalar, as ufuncs and reductions give)
    kind: str
    children: tuple[TreeNode, ...] = ()
    index: int = -1
    value: Any = None
    container: Any = None
    keys: tuple[Any, ...] = ()


def unflatten(tree: TreeNode, leaves: list[Any]) -> Any:
    """Rebuild the structure with ``leaves`` in place of the graph outputs (used for specs)."""
    kind = tree.kind
    if kind == "output" or kind == "input":
        return leaves[tree.index]
    if kind == "const":
        return tree.value
    if kind == "argument":
        return None  # (the caller's own object: nothing the graph computes)
    if kind in ("writeback", "replay"):
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
