"""Constant folding: pure nodes whose inputs are all known are computed once, at trace time.

A node qualifies when every argument is a ``constant`` node or an inline literal. It is run
with the very callable the executors use (``LOWER[op](node)``), so the folded value is the value
the graph would have computed, and becomes a ``constant`` node of exactly the node's abstract
value (a 0-d result is a 0-d array of the node's dtype).

Folding must never change what a call does, so a node is left alone when

- it is not pure (stateful ops, variable reads, control flow: see :func:`~.rewrite.is_pure`);
- its result would be big (more than :data:`MAX_FOLD_ELEMENTS` elements, or a shape not fully
  known): the graph would carry the array forever;
- computing it raises or warns (overflow, invalid value, casting): the error or warning must
  still happen at run time, and only if the node runs at all (an unused node is pruned and
  its error never fires, TensorFlow's non-strict rule);
- the value does not match the node's abstract value exactly.

Some nodes are known without their inputs' values: :data:`STATIC_FOLDS` maps an op to a rule
reading static information (``dim`` of a statically known dimension is that number).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir import LOWER, AbstractValue, Graph, Node, OpKind
from .rewrite import Rewrite, Rewriter, is_pure, recursive

MAX_FOLD_ELEMENTS = 1_000_000

StaticFold = Callable[[Node, tuple[Any, ...]], "np.ndarray | None"]


def _fold_dim(node: Node, args: tuple[Any, ...]) -> np.ndarray | None:
    """``dim(x, axis)`` where that dimension of ``x`` is static."""
    x = args[0]
    shape = x.aval.shape if isinstance(x, Node) and isinstance(x.aval, AbstractValue) else None
    if shape is None:
        return None
    axis = node.params.axis
    if not -len(shape) <= axis < len(shape) or shape[axis] is None:
        return None
    return np.asarray(shape[axis], dtype=node.dtype)


STATIC_FOLDS: dict[OpKind, StaticFold] = {OpKind.DIM: _fold_dim}


def _all_known(args: tuple[Any, ...]) -> bool:
    """Every argument is a literal or a constant node."""
    return all(not isinstance(a, Node) or a.op is OpKind.CONSTANT for a in args)


def evaluate(node: Node, args: tuple[Any, ...]) -> np.ndarray | None:
    """``node``'s value from known ``args`` (constant nodes or literals), or ``None`` when it
    must not be folded (too big, raises, warns, or disagrees with the node's aval; a node
    without exactly one value: never pure, so never asked)."""
    aval = node.aval
    if (
        not isinstance(aval, AbstractValue)
        or aval.shape is None
        or None in aval.shape
        or (aval.size or 0) > MAX_FOLD_ELEMENTS
    ):
        return None
    values = [a.params.value if isinstance(a, Node) else a for a in args]
    try:
        with warnings.catch_warnings(), np.errstate(all="raise"):
            warnings.simplefilter("error")
            result = np.asarray(LOWER[node.op](node)(*values))
    except Exception:  # the run-time call raises (or warns): leave that to the run time
        return None
    if result.dtype != aval.dtype or result.shape != aval.shape:
        return None
    return result


def _is_fresh_constant(node: Node, rw: Rewriter) -> bool:
    """``copy(constant)`` where the caller may hold the result: what an exposed node folds to
    (see :meth:`~.rewrite.Rewriter.emit`), so folding it again would change nothing."""
    return (
        node.op is OpKind.COPY
        and rw.is_exposed(node)
        and isinstance(node.args[0], Node)
        and node.args[0].op is OpKind.CONSTANT
    )


def _fold_level(graph: Graph) -> tuple[Graph, bool]:
    rw = Rewriter(graph)
    static_folds = {id(op): fn for op, fn in STATIC_FOLDS.items()}  # ids: Enum hashing is slow
    for node in graph.nodes:
        if not is_pure(node) or _is_fresh_constant(node, rw):
            rw.keep(node)
            continue
        args = rw.args(node)
        static = static_folds.get(id(node.op))
        value = static(node, args) if static is not None else None
        if value is None and _all_known(args):
            value = evaluate(node, args)
        if value is not None:
            value = np.array(value, copy=True)
            value.setflags(write=False)
            if rw.emit(node, Rewrite(OpKind.CONSTANT, (), {"value": value})):
                continue
        rw.keep(node, args=args)
    return rw.finish()


fold_constants = recursive(
    _fold_level,
    "fold_constants",
    """``Graph -> (Graph, changed)``:
replace every pure node whose inputs are all known by a ``constant`` holding its value (inside
control-flow bodies too).""",
)
