"""Short sums along the last axis, written out as additions in NumPy's own order.

``np.sum((pts[:, None, :] - centres[None, :, :]) ** 2, axis=2)`` (W13's distances) reduces a
``(100k, 16, 8)`` elementwise expression over its last axis, 8 elements long. A fused kernel
folding each 8-element row through its reduction machinery (lanes, a pairwise cascade) pays
that machinery 1.6 million times; here the sum becomes an elementwise expression over the
``(100k, 16)`` result instead, one term per position along the axis (each term the expression
with its operands sliced ``[..., k]``), which fuses into one map kernel.

The terms are added in the order NumPy adds a contiguous row (``pairwise_sum`` in NumPy's
``loops_utils.h``): below 8 elements one running sum from ``0.0``; from 8 on, eight running
sums over the row's blocks of 8, combined as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 +
r7))``, then the remaining elements one by one, all added to ``0.0``. NumPy sums the C-ordered
temporary it makes for the expression that way, so the result is NumPy's to the bit; where
NumPy's temporary would have another layout the order differs, within the documented bound for
float sums.

Only float32/float64 sums in the operand's dtype of at most :data:`MAX_TERMS` elements are
rewritten, of an expression read by nothing else. The pass is for executors that fuse
elementwise work (the whole-graph compiler); the NumPy executor keeps NumPy's ``sum``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import Graph, Node, OpGroup, OpKind
from .prune import prune
from .rewrite import Rewriter, recursive

#: Longest reduced axis written out (each position copies the expression).
MAX_TERMS = 16
#: Most nodes one rewrite may add.
MAX_NODES = 400

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _candidate(node: Node, users: dict[Node, int], outputs: set[Node]) -> int | None:
    """The length of the last axis ``node`` (a sum) reduces, when it qualifies."""
    if node.op is not OpKind.SUM or not node.args or not isinstance(node.args[0], Node):
        return None
    x = node.args[0]
    shape = getattr(x.aval, "shape", None)
    if x.op.group is not OpGroup.ELEMENTWISE or not shape or len(shape) < 2 or None in shape:
        return None  # (a 1-D sum is one number: NumPy's own sum loop serves it)
    if node.params.keepdims:
        return None
    axis = node.params.axis
    if isinstance(axis, tuple) and len(axis) == 1:
        axis = axis[0]
    if not isinstance(axis, (int, np.integer)) or int(axis) % len(shape) != len(shape) - 1:
        return None
    dt = np.dtype(x.dtype)
    if dt not in _FLOATS or np.dtype(node.dtype) != dt or node.params.dtype not in (None, dt):
        return None
    if users.get(x, 0) != 1 or x in outputs:
        return None
    n = shape[-1]
    return n if 1 <= n <= MAX_TERMS else None


class _Terms:
    """The expression under a sum, sliced at one position of its last axis."""

    def __init__(self, rw: Rewriter, root: Node, users: dict[Node, int]) -> None:
        self.rw, self.root, self.users = rw, root, users
        self.shape = root.shape
        self.memo: dict[tuple[Node, int], Any] = {}
        self.added = 0

    def inner(self, v: Node) -> bool:
        """Is ``v`` recomputed per position (an elementwise member read only here)?"""
        return v is self.root or (
            v.op.group is OpGroup.ELEMENTWISE
            and v.shape == self.shape
            and self.users.get(v, 0) == 1
        )

    def term(self, v: Any, k: int) -> Any:
        if not isinstance(v, Node):
            return v
        key = (v, k)
        if key in self.memo:
            return self.memo[key]
        if self.inner(v):
            args = tuple(self.term(a, k) for a in v.args)
            out = self.rw.add(v.name, v.op, args, v.params)
        elif v.shape == ():
            out = self.rw.arg(v)
        else:
            shape = v.shape
            assert shape is not None  # a sum's operands have a known rank here
            last = shape[-1]
            out = self.rw.add(
                f"{v.name}_at",
                OpKind.GETITEM,
                (self.rw.arg(v),),
                {"index": (Ellipsis, k if last != 1 else 0)},
            )
        self.added += 1
        if self.added > MAX_NODES:
            raise _TooBig
        self.memo[key] = out
        return out


class _TooBig(Exception):
    pass


def _add(rw: Rewriter, a: Any, b: Any) -> Node:
    node = rw.add("sum_term", OpKind.ADD, (a, b))
    node.meta["sum_term"] = True
    return node


def is_term(node: Node) -> bool:
    """Is ``node`` one of the additions a written-out sum is made of?"""
    return bool(node.meta.get("sum_term"))


def _numpy_order(rw: Rewriter, terms: list[Any]) -> Node:
    """``terms`` summed as NumPy's pairwise sum adds a contiguous row, from ``0.0``."""
    n = len(terms)
    if n < 8:
        r = _add(rw, 0.0, terms[0])
        for t in terms[1:]:
            r = _add(rw, r, t)
        return r
    acc = list(terms[:8])
    i = 8
    while i < n - n % 8:
        acc = [_add(rw, acc[j], terms[i + j]) for j in range(8)]
        i += 8
    r = _add(
        rw,
        _add(rw, _add(rw, acc[0], acc[1]), _add(rw, acc[2], acc[3])),
        _add(rw, _add(rw, acc[4], acc[5]), _add(rw, acc[6], acc[7])),
    )
    for t in terms[i:]:
        r = _add(rw, r, t)
    return _add(rw, 0.0, r)


def _flat(graph: Graph) -> tuple[Graph, bool]:
    users: dict[Node, int] = {}
    for node in graph.nodes:
        for a in node.inputs:
            users[a] = users.get(a, 0) + 1
    outputs = set(graph.outputs)
    rw = Rewriter(graph)
    for node in graph.nodes:
        n = _candidate(node, users, outputs)
        if n is None:
            rw.keep(node)
            continue
        terms = _Terms(rw, node.args[0], users)
        try:
            total = _numpy_order(rw, [terms.term(node.args[0], k) for k in range(n)])
        except Exception:  # noqa: BLE001 - too big, or an op's abstract eval refused: keep it
            rw.keep(node)
            continue
        if total.shape != node.shape or total.dtype != node.dtype:
            rw.keep(node)
            continue
        rw.use(node, total)
    return rw.finish()


def unroll_top_level(graph: Graph) -> tuple[Graph, bool]:
    """:func:`unroll_short_sums` at the top level only, the old nodes pruned."""
    rewritten, changed = _flat(graph)
    if changed:
        rewritten, _ = prune(rewritten)
    return rewritten, changed


unroll_short_sums = recursive(
    _flat,
    "unroll_short_sums",
    """``Graph -> (Graph, changed)``:
float sums over a short last axis (at most :data:`MAX_TERMS` elements) of an elementwise
expression, as elementwise additions of the sliced expression in NumPy's order (inside
control-flow bodies too). The expression's old nodes are left for :func:`prune` to drop.""",
)


__all__ = ["MAX_TERMS", "is_term", "unroll_short_sums", "unroll_top_level"]
