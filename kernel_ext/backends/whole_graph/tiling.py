"""Row tiling: which values of a graph the whole-graph function computes a tile of
rows at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...ir import FUSIBLE_REDUCTIONS, Graph, Node, OpGroup, OpKind
from ...ir.params import AxisParams, IndexParams, ReduceParams
from ..static_shapes import ranked_shape, static_shape

#: in L2 at once)
TILE_ELEMENTS = 1 << 15
#: Fewest rows a graph needs to run in tiles
TILE_MIN_ROWS = 64


def row_tile(width: int) -> int:
    """Rows per tile for rows of ``width`` elements."""
    return max(1, TILE_ELEMENTS // max(width, 1))


def row_tiling(graph: Graph) -> set[Node] | None:
    """The inputs to slice by rows when ``graph`` computes each row of its outputs from the
    same row of those inputs alone (elementwise work, reductions along other axes and their
    results spread back over the row, indexing that keeps the first axis whole), has at
    least one such reduction, and at least :data:`TILE_MIN_ROWS` rows; else None.

    Everything else is *row-free*: it holds no row axis (lower rank, or a leading 1), so it
    broadcasts over the rows and is the same for every tile (``g`` and ``b`` of a layer
    norm). Only static shapes qualify."""
    nrows = _tile_rows(graph)
    if nrows is None:
        return None
    row: dict[Node, bool] = {}
    reduces = False
    for node in graph.nodes:
        kind = _row_kind(node, row, nrows)
        if kind is None:
            return None
        row[node] = kind
        reduces = reduces or (kind and node.op in _ROW_REDUCTIONS)
    if not reduces or not all(
        row.get(o, False) and static_shape(o)[0] == nrows for o in graph.outputs
    ):
        return None
    return {n for n in graph.inputs if row[n]}


def _tile_rows(graph: Graph) -> int | None:
    """The rows of ``graph``'s first output when every shape is static and there are enough
    of them to tile (at least two axes, :data:`TILE_MIN_ROWS` rows); else None."""
    # (a node's shape is None without a value, with several, or of unknown rank)
    if graph.outputs == [] or any(n.shape is None or None in n.shape for n in graph.nodes):
        return None
    out0 = static_shape(graph.outputs[0])
    if len(out0) < 2 or out0[0] < TILE_MIN_ROWS:
        return None
    return int(out0[0])


def _has_rows(v: Any, row: dict[Node, bool]) -> bool:
    return isinstance(v, Node) and row[v]


def _row_kind(node: Node, row: dict[Node, bool], nrows: int) -> bool | None:
    """Does ``node`` hold rows (True) or is it row-free (False)? None: a node that stops the
    graph from being tiled (``row`` holds the answers for the nodes before it)."""
    op, shape = node.op, static_shape(node)
    if op is OpKind.PLACEHOLDER:
        return len(shape) >= 2 and shape[0] == nrows
    if op is OpKind.CONSTANT:
        return None if len(shape) >= 1 and shape[0] == nrows and nrows != 1 else False
    if not any(_has_rows(a, row) for a in node.args):
        # row-free work other than elementwise: not worth a per-tile rerun
        return False if op.group is OpGroup.ELEMENTWISE else None
    keeps = _elementwise_rows if op.group is OpGroup.ELEMENTWISE else _ROW_OPS.get(op)
    if keeps is None or not keeps(node, row, nrows):
        return None
    if not shape or shape[0] != nrows:
        return None
    return True


def _elementwise_rows(node: Node, row: dict[Node, bool], nrows: int) -> bool:
    """Row operands of the node's rank and rows; row-free ones broadcast over the rows (a
    lower rank, or a leading 1)."""
    rank = len(ranked_shape(node))
    for a in node.args:
        if _has_rows(a, row):
            if len(a.aval.shape) != rank or a.aval.shape[0] != nrows:
                return False
        elif isinstance(a, Node) and not (len(ranked_shape(a)) < rank or static_shape(a)[0] == 1):
            return False
    return True


def _reduces_other_axes(node: Node, row: dict[Node, bool], nrows: int) -> bool:
    """A reduction of one operand along given axes, none of them the first."""
    axis = cast("ReduceParams", node.params).axis
    rank = len(node.args[0].aval.shape)
    axes = axis if isinstance(axis, tuple) else (axis,)
    return not (
        axis is None
        or any(not isinstance(a, (int, np.integer)) or int(a) % rank == 0 for a in axes)
        or len(node.args) != 1
    )


def _keeps_first_axis(node: Node, row: dict[Node, bool], nrows: int) -> bool:
    """A static index whose first component is ``:`` (a traced index is an argument)."""
    index = cast("IndexParams", node.params).index
    return (
        len(node.args) == 1
        and bool(index)
        and isinstance(index[0], slice)
        and index[0] == slice(None)
    )


def _expand_after_rows(node: Node, row: dict[Node, bool], nrows: int) -> bool:
    return int(cast("AxisParams", node.params).axis) % (len(node.args[0].aval.shape) + 1) != 0


#: The reductions a tiled graph may hold (along axes other than the rows)
_ROW_REDUCTIONS = frozenset(FUSIBLE_REDUCTIONS) | {OpKind.ARGMIN, OpKind.ARGMAX}

#: The ops other than elementwise ones that keep each row within its row
_ROW_OPS: dict[OpKind, Callable[[Node, dict[Node, bool], int], bool]] = {
    **{op: _reduces_other_axes for op in _ROW_REDUCTIONS},
    OpKind.GETITEM: _keeps_first_axis,
    OpKind.EXPAND_DIMS: _expand_after_rows,
}
