"""Integer ranges of scalar values in a graph: what lets compiled code index without checks.

A value of a graph is *bounded* when every value it takes at run time lies in a known closed
interval ``[lo, hi]``: integer constants; the counter of a counted graph loop inside that
loop's body; and sums, differences, products, maxima and minima of bounded values. The
whole-graph compiler drops the run-time range check of an index (``A[i, j]`` in a loop: two
compares and a branch per axis, which also keeps LLVM from vectorising the loop) when the
index is bounded inside the array's static dimension, as a hand-written ``@njit`` loop over
``range(n)`` has none.

The loop rule is the one a proof needs. For a ``while`` node whose slot ``k``

* starts from a bounded value ``[a, b]``,
* is replaced by the body with ``x + c``, ``c`` a constant ``>= 1``, and
* is tested by the condition as ``x < bound`` (alone, or as one term of a conjunction),
  ``bound`` bounded above by ``h`` and computed outside the loop (a constant or a capture),

every value the body sees for slot ``k`` lies in ``[a, h - 1]``: values only grow from at
least ``a``, and the body runs only after the test passed (``x < bound <= h``). Nothing else
is assumed: a slot the body replaces otherwise, a bound carried by the loop, an unsigned or
float counter, or a test of another form leaves the value unbounded, and the check stays.

One relation is kept besides the intervals, for the item of ``for j in range(start, stop)``:
AutoGraph counts such a loop from 0 against ``bound = max(stop - start, 0)`` and computes
``j = start + counter`` in the body. With ``start`` bounded alone, ``j`` would be bounded by
the sum of the two intervals, past ``stop`` (``range(i, n)``: ``i + counter`` up to ``2n - 2``);
but the body runs only when ``counter < bound``, so ``bound > 0``, ``bound = stop - start``
and ``j = start + counter < stop``: ``j`` lies in ``[lo(start) + a, hi(stop) - 1]``. The rule
applies where ``start`` in the body is the very value ``bound`` was computed from (the same
node, followed through the loops' captures), ``stop`` is bounded and the counter starts at a
value ``>= 0``.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from ..ir import Graph, Node, OpKind
from ..ir.params import CondParams, ConstantParams, WhileParams

Range = tuple[float, float]  # integers, or an infinite end for a one-sided bound

#: Bounds beyond these are treated as unbounded (no int64 overflow in the arithmetic below).
_LIMIT = 2**62


class _Ranges(dict[Node, Range]):
    """The ranges found so far, and what the relational rule (module doc) needs: which node
    of an enclosing graph each loop's capture placeholder stands for, and each counted
    loop's counter (as the body sees it) with the bound its test compares it with."""

    def __init__(self) -> None:
        super().__init__()
        #: a loop's capture placeholder, or a branch's operand placeholder -> the node passed
        self.origin: dict[Node, Node] = {}
        self.below: dict[Node, Node] = {}  # counter placeholder -> its bound, outside

    def source(self, node: Node) -> Node:
        """The node ``node`` stands for, through the captures of the loops around it."""
        while node in self.origin:
            node = self.origin[node]
        return node


def index_ranges(graph: Graph) -> dict[Node, Range]:
    """The bounded scalar integer values of ``graph`` and its sub-graphs, with their ranges."""
    ranges = _Ranges()
    _walk(graph, ranges)
    return dict(ranges)


def _signed_scalar(node: Node) -> bool:
    return node.shape == () and np.dtype(node.dtype).kind == "i"


def _range_of(arg: Any, ranges: dict[Node, Range]) -> Range | None:
    if isinstance(arg, Node):
        return ranges.get(arg)
    if isinstance(arg, (int, np.integer)) and not isinstance(arg, (bool, np.bool_)):
        return (int(arg), int(arg))
    return None


def _constant_int(arg: Any) -> int | None:
    """``arg``'s value when it is an integer literal or an integer constant node."""
    if isinstance(arg, Node):
        if arg.op is not OpKind.CONSTANT or not _signed_scalar(arg):
            return None
        arg = cast("ConstantParams", arg.params).value
    if isinstance(arg, (bool, np.bool_)):
        return None
    if isinstance(arg, (int, np.integer)) or (
        isinstance(arg, np.ndarray) and arg.ndim == 0 and arg.dtype.kind == "i"
    ):
        return int(arg)
    return None


def _within(r: Range) -> Range | None:
    return r if -_LIMIT <= r[0] <= r[1] <= _LIMIT else None


_UNBOUNDED: Range = (-math.inf, math.inf)


def _clamp(op: OpKind, a: Range | None, b: Range | None) -> Range | None:
    """``maximum``/``minimum`` of two ranges, either possibly unknown: a clamp bounds one side
    of an unknown value (``max(k, 0)`` is at least 0), which a later clamp may close."""
    a, b = a or _UNBOUNDED, b or _UNBOUNDED
    if op is OpKind.MAXIMUM:
        r = (max(a[0], b[0]), max(a[1], b[1]))
    else:
        r = (min(a[0], b[0]), min(a[1], b[1]))
    return None if r == _UNBOUNDED else r


def _finite(r: Range | None) -> bool:
    return r is not None and not (math.isinf(r[0]) or math.isinf(r[1]))


def _where(node: Node, ranges: dict[Node, Range]) -> Range | None:
    """``where(x < k, k, x)`` is ``max(x, k)`` and ``where(x > k, k, x)`` is ``min(x, k)`` (how
    Python's ``max``/``min`` of a traced integer trace); other selects take both ranges."""
    test, yes, no = node.args
    if isinstance(test, Node) and len(test.args) == 2 and test.args[0] is no:
        bound = test.args[1]
        if _constant_int(bound) is not None and _constant_int(yes) == _constant_int(bound):
            if test.op in (OpKind.LESS, OpKind.LESS_EQUAL):
                return _clamp(OpKind.MAXIMUM, ranges.get(no), _range_of(yes, ranges))
            if test.op in (OpKind.GREATER, OpKind.GREATER_EQUAL):
                return _clamp(OpKind.MINIMUM, ranges.get(no), _range_of(yes, ranges))
    a, b = _range_of(yes, ranges), _range_of(no, ranges)
    if a is None or b is None:
        return None
    return (min(a[0], b[0]), max(a[1], b[1]))


def _arith(node: Node, ranges: dict[Node, Range]) -> Range | None:
    if len(node.args) != 2:
        return None
    a, b = (_range_of(x, ranges) for x in node.args)
    if node.op in (OpKind.MAXIMUM, OpKind.MINIMUM):
        return _clamp(node.op, a, b)
    if not (_finite(a) and _finite(b)):
        return None
    assert a is not None and b is not None
    if node.op is OpKind.ADD:
        below = _range_item_high(node, ranges)
        high = a[1] + b[1] if below is None else min(a[1] + b[1], below)
        return _within((a[0] + b[0], high))
    if node.op is OpKind.SUBTRACT:
        return _within((a[0] - b[1], a[1] - b[0]))
    products = [x * y for x in a for y in b]
    return _within((min(products), max(products)))


def _range_item_high(node: Node, ranges: dict[Node, Range]) -> float | None:
    """For ``start + counter`` of a counted loop's body (the relational rule of the module
    doc), the highest value it takes: ``hi(stop) - 1``; else None."""
    if not isinstance(ranges, _Ranges):
        return None
    for counter, start in (node.args, node.args[::-1]):
        if not isinstance(counter, Node) or not isinstance(start, Node):
            continue
        bound = ranges.below.get(counter)
        if bound is None or ranges[counter][0] < 0:
            continue
        stop = _stop_of(bound, ranges.source(start), ranges)
        r = _range_of(stop, ranges) if stop is not None else None
        if _finite(r):
            assert r is not None
            return r[1] - 1
    return None


def _stop_of(bound: Node, start: Node, ranges: _Ranges) -> Any:
    """``stop`` when ``bound`` is ``max(stop - start, 0)`` (or ``stop - start``), else None."""
    if bound.op is OpKind.MAXIMUM and len(bound.args) == 2:
        diff, zero = bound.args
        if not isinstance(diff, Node):
            diff, zero = zero, diff
        if not isinstance(diff, Node) or _constant_int(zero) != 0:
            return None
        bound = diff
    if bound.op is OpKind.SUBTRACT and len(bound.args) == 2:
        stop, taken = bound.args
        if isinstance(taken, Node) and ranges.source(taken) is start:
            return stop
    return None


_ARITH = frozenset({OpKind.ADD, OpKind.SUBTRACT, OpKind.MULTIPLY, OpKind.MAXIMUM, OpKind.MINIMUM})


def _walk(graph: Graph, ranges: dict[Node, Range]) -> None:
    for node in graph.nodes:
        if node.op is OpKind.WHILE:
            _while(node, ranges)
        elif node.op is OpKind.COND:
            for branch in cast("CondParams", node.params).branches:
                # a branch's inputs are the cond's operands after the predicate
                for ph, arg in zip(branch.inputs, node.args[1:]):
                    r = _range_of(arg, ranges)
                    if r is not None and isinstance(ph, Node) and _signed_scalar(ph):
                        ranges[ph] = r
                    if isinstance(ranges, _Ranges) and isinstance(arg, Node):
                        ranges.origin[ph] = arg
                _walk(branch, ranges)
        if not _signed_scalar(node):
            continue
        r = _node_range(node, ranges)
        if r is not None and _fits(r, np.dtype(node.dtype)):
            ranges[node] = r


def _fits(r: Range, dtype: np.dtype) -> bool:
    """Does ``r`` hold no value the node's dtype cannot (a sum that would wrap in int8 or int32
    has no range: its run-time value is not the one computed here)?"""
    info = np.iinfo(dtype)
    return all(math.isinf(end) or info.min <= end <= info.max for end in r)


def _node_range(node: Node, ranges: dict[Node, Range]) -> Range | None:
    """The range of one signed scalar integer node from its operands' ranges, or None."""
    if node.op is OpKind.CONSTANT:
        value = cast("ConstantParams", node.params).value
        if isinstance(value, (int, np.integer, np.ndarray)) and np.ndim(value) == 0:
            return (int(value), int(value))
        return None
    if node.op is OpKind.COPY:
        return _range_of(node.args[0], ranges)
    if node.op is OpKind.WHERE:
        return _where(node, ranges)
    if node.op in _ARITH:
        return _arith(node, ranges)
    return None


def _upper_bounds(test: Node, slot: Node) -> list[Any]:
    """The bounds ``b`` of the terms ``slot < b`` (or ``b > slot``) that ``test`` requires."""
    if test.op in (OpKind.LOGICAL_AND, OpKind.BITWISE_AND) and np.dtype(test.dtype) == np.bool_:
        return [b for a in test.args if isinstance(a, Node) for b in _upper_bounds(a, slot)]
    if test.op is OpKind.LESS and test.args[0] is slot:
        return [test.args[1]]
    if test.op is OpKind.GREATER and test.args[1] is slot:
        return [test.args[0]]
    return []


def _while(node: Node, ranges: dict[Node, Range]) -> None:
    loop = cast("WhileParams", node.params)
    n = loop.n_vars
    cond_g: Graph = loop.cond
    body_g: Graph = loop.body
    captures = node.args[n:]
    # the loop's captures are computed outside it: their ranges hold inside
    outer: dict[Node, Range] = {}
    for g in (cond_g, body_g):
        for ph, arg in zip(g.inputs[n:], captures):
            r = _range_of(arg, ranges)
            if r is not None:
                outer[ph] = r
            if isinstance(ranges, _Ranges) and isinstance(arg, Node):
                ranges.origin[ph] = arg
    ranges.update(outer)
    # constants and arithmetic of the condition (a bound such as n - 1)
    _walk(cond_g, ranges)
    (test,) = cond_g.outputs
    for k in range(n):
        start = _range_of(node.args[k], ranges)
        ph_cond, ph_body = cond_g.inputs[k], body_g.inputs[k]
        if start is None or not _signed_scalar(ph_body):
            continue
        step = body_g.outputs[k]
        if not (isinstance(step, Node) and step.op is OpKind.ADD and ph_body in step.args):
            continue
        other = step.args[1] if step.args[0] is ph_body else step.args[0]
        c = _constant_int(other)
        if c is None or c < 1:
            continue
        highs = []
        for bound in _upper_bounds(test, ph_cond):
            if isinstance(bound, Node) and bound in cond_g.inputs[:n]:
                continue  # a bound the loop carries may change: no use
            r = _range_of(bound, ranges)
            if r is not None:
                highs.append(r[1])
            if isinstance(ranges, _Ranges) and isinstance(bound, Node):
                ranges.below[ph_body] = ranges.source(bound)
        if highs:
            ranges[ph_body] = (start[0], max(start[0], min(highs) - 1))
        elif isinstance(ranges, _Ranges):
            ranges.below.pop(ph_body, None)  # (no interval: the relation is no use alone)
    _walk(body_g, ranges)
