"""What a cond or while is built from: the values flowing through it as named leaves, and the
sub-graphs of its branches or body.

The values flowing out of a branch or loop body (results, loop variables) are flattened into
leaves with readable names (``output[0]``, ``loop_vars[1]['w']``) and rebuilt from them; leaves
that are arrays or numbers are lifted into the branch's or body's graph, and each such graph is
rebuilt with the operand order of the control-flow node (its own placeholders, then one per value
of an enclosing trace that any of the node's sub-graphs captures). Used by
:mod:`kernel_ext.trace.control_flow`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir import Graph, Node, OpKind
from .context import TraceContext
from .iteration import TensorArray
from .tensor import Tensor
from .variables import Variable

_NUMBERS = (bool, int, float, complex, np.number, np.bool_)


@dataclasses.dataclass
class LeafTree:
    """The structure of a flattened value (:func:`flatten`), to rebuild it from its leaves."""

    kind: str  # leaf, tuple, list, namedtuple, dict, tensor_array
    children: list[LeafTree] = dataclasses.field(default_factory=list)
    aux: Any = None


def flatten(value: Any, name: str) -> tuple[LeafTree, list[Any], list[str], list[bool]]:
    """Leaves of ``value`` with readable names and a relax flag (shape may change freely)."""
    leaves: list[Any] = []
    names: list[str] = []
    relax: list[bool] = []

    def walk(v: Any, path: str, loose: bool = False) -> LeafTree:
        if isinstance(v, TensorArray):
            return LeafTree(
                "tensor_array",
                [walk(v.buffer, f"{path}.buffer", True), walk(v.length, f"{path}.size")],
                v.static_parts(),
            )
        if isinstance(v, tuple) and hasattr(type(v), "_fields"):
            fields = v._fields  # type: ignore[attr-defined]
            return LeafTree(
                "namedtuple", [walk(x, f"{path}.{f}") for f, x in zip(fields, v)], type(v)
            )
        if type(v) in (tuple, list):
            return LeafTree(type(v).__name__, [walk(x, f"{path}[{i}]") for i, x in enumerate(v)])
        if isinstance(v, dict):
            keys = list(v)
            return LeafTree("dict", [walk(v[k], f"{path}[{k!r}]") for k in keys], keys)
        leaves.append(v)
        names.append(path)
        relax.append(loose)
        return LeafTree("leaf")

    tree = walk(value, name)
    return tree, leaves, names, relax


def unflatten(tree: LeafTree, leaves: Sequence[Any]) -> Any:
    """The value :func:`flatten` took apart into ``tree``, built of ``leaves``."""
    it = iter(leaves)

    def build(t: LeafTree) -> Any:
        if t.kind == "leaf":
            return next(it)
        items = [build(c) for c in t.children]
        if t.kind == "tuple":
            return tuple(items)
        if t.kind == "list":
            return items
        if t.kind == "namedtuple":
            return t.aux(*items)
        if t.kind == "dict":
            return dict(zip(t.aux, items))
        return TensorArray.from_parts(t.aux, items[0], items[1])

    return build(tree)


def same_tree(a: LeafTree, b: LeafTree) -> bool:
    """Do two flattened values have the same structure (kinds, keys, static parts)?"""
    return (
        a.kind == b.kind
        and a.aux == b.aux
        and len(a.children) == len(b.children)
        and all(same_tree(x, y) for x, y in zip(a.children, b.children))
    )


def is_value(leaf: Any) -> bool:
    """Leaves that become graph values (as opposed to static Python values)."""
    return isinstance(leaf, (Tensor, Variable, np.ndarray) + _NUMBERS)


def lift_leaf(ctx: TraceContext, leaf: Any, dtype: np.dtype | None = None) -> Node:
    """A node of ``ctx`` for a leaf; Python numbers take ``dtype`` when given (weak scalars)."""
    if isinstance(leaf, (bool, int, float, complex)) and not isinstance(leaf, np.generic):
        # (np.float64 subclasses float but is a strong, typed value: lifted below)
        return ctx.graph.constant(
            np.asarray(leaf, dtype=dtype) if dtype is not None else np.asarray(leaf)
        )
    lifted = ctx.lift(leaf)
    if not isinstance(lifted, Node):
        return ctx.graph.constant(np.asarray(lifted))
    return lifted


def with_inputs(
    graph: Graph,
    own: Sequence[Node],
    captures: Sequence[tuple[Node, Node]],
    union: Sequence[Node],
    outputs: Sequence[Node],
) -> Graph:
    """``graph`` rebuilt so that its inputs are ``own`` placeholders then one per ``union``
    outer node (unused ones included): the operand order of the control-flow node."""
    g = Graph(graph.name)
    mapping: dict[Node, Node] = {}
    by_outer = {outer: ph for outer, ph in captures}
    for ph in own:
        mapping[ph] = g.create_node(OpKind.PLACEHOLDER, (), ph.params, name=ph.name, aval=ph.aval)
    for outer in union:
        captured = by_outer.get(outer)
        new = g.create_node(
            OpKind.PLACEHOLDER,
            (),
            {"shape": outer.shape, "dtype": outer.dtype},
            name=outer.name,
            aval=outer.aval,
        )
        if captured is not None:
            mapping[captured] = new
    for node in graph.nodes:
        if node.op is OpKind.PLACEHOLDER:
            continue
        args = tuple(mapping[a] if isinstance(a, Node) else a for a in node.args)
        mapping[node] = g.append_copy(node, args)
    g.outputs = [mapping[o] for o in outputs]
    return g


def capture_union(*capture_lists: Sequence[tuple[Node, Node]]) -> list[Node]:
    """The outer nodes any of the sub-graphs captures, each once, in order of first capture."""
    seen: dict[Node, None] = {}
    for captures in capture_lists:
        for outer, _ in captures:
            seen.setdefault(outer, None)
    return list(seen)


def node_outputs(ctx: TraceContext, node: Node, n: int) -> list[Tensor]:
    """The ``n`` outputs of a control-flow ``node`` of ``ctx``, as traced values."""
    return [
        Tensor(
            ctx.graph.create_node(
                OpKind.GET_OUTPUT, (node,), {"index": i}, name=f"{node.name}_out{i}"
            ),
            ctx,
        )
        for i in range(n)
    ]
