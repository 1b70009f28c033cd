"""Typed reads of the abstract values of graphs the backends compile.

The code generators run only on graphs their planners accepted: every value they read has an
abstract value, of known rank (:func:`ranked_shape`) or of a fully known shape where the
planner asks for static shapes (:func:`static_shape`). These reads say so to the type
checker; they check nothing at run time.
"""

from __future__ import annotations

from typing import cast

from ..ir import AbstractValue, Node


def aval_of_node(node: Node) -> AbstractValue:
    """``node.aval`` of a node that produces a value."""
    return cast("AbstractValue", node.aval)


def static_shape(node: Node) -> tuple[int, ...]:
    """``node.aval.shape`` of a value whose shape is known."""
    return cast("tuple[int, ...]", cast("AbstractValue", node.aval).shape)


def ranked_shape(node: Node) -> tuple[int | None, ...]:
    """``node.aval.shape`` of a value of known rank (its dims may be ``None``)."""
    return cast("tuple[int | None, ...]", cast("AbstractValue", node.aval).shape)
