"""Float-to-integer casts whose operand is provably inside the integer's range.

``int(x)`` traces as ``cast(where(lo <= x < hi, trunc(x), 0))`` after a check of the same
range (the check hands NaN, infinities and out-of-range values to the fallback). The cast
template's own test (``v > lo - 1 and v < hi + 1`` in the float dtype, which also rejects
exactly ``-2**63``: ``-2**63 - 1`` rounds to ``-2**63`` in float64) can then never decide a
value NumPy would cast differently: every value reaching it is a finite float with a defined
truncation. :func:`exact_casts` finds those casts, so the writer emits them without it.

The proof keeps closed float intervals ``[lo, hi]`` (compared exactly with Python's ints):

* a finite 0-d constant or literal is ``[c, c]``;
* ``where(test, a, b)`` is the union of ``a``'s interval while ``test`` holds and ``b``'s;
* while ``test`` holds, ``x`` lies inside the bounds of ``test``'s conjuncts ``x < k``,
  ``x <= k``, ``x > k``, ``x >= k`` (``k`` a finite constant exactly representable in the
  comparison's dtype; ``x < k`` is ``x <= nextafter(k, -inf)``; a NaN fails every one),
  and ``trunc``/``floor``/``ceil`` of ``x`` inside the same functions of the bounds (they
  are monotone).

Anything else has no interval, and its cast keeps the test.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, cast

import numpy as np

from ...ir import Graph, Node, OpKind
from ...ir.params import ConstantParams
from ..codegen.lowering import lower

Interval = tuple[float, float]

#: comparison -> (bounds from above, strict) for ``x <op> k``
_COMPARISONS = {
    OpKind.LESS: (True, True),
    OpKind.LESS_EQUAL: (True, False),
    OpKind.GREATER: (False, True),
    OpKind.GREATER_EQUAL: (False, False),
}

#: the comparison ``k <op> x`` is ``x <mirror> k``
_MIRRORED = {
    OpKind.LESS: OpKind.GREATER,
    OpKind.LESS_EQUAL: OpKind.GREATER_EQUAL,
    OpKind.GREATER: OpKind.LESS,
    OpKind.GREATER_EQUAL: OpKind.LESS_EQUAL,
}

#: monotone float functions the yes arm of a range-tested ``where`` may apply to ``x``
_MONOTONE = {OpKind.TRUNC: np.trunc, OpKind.FLOOR: np.floor, OpKind.CEIL: np.ceil}

_CONJUNCTIONS = (OpKind.LOGICAL_AND, OpKind.BITWISE_AND)


def exact_casts(graph: Graph) -> frozenset[Node]:
    """The float-to-integer ``cast`` nodes of ``graph`` and its sub-graphs whose operand
    provably lies where the cast is defined: ``(min - 1, max + 1)`` of the integer dtype."""
    return frozenset(n for n in _all_nodes(graph) if _in_range_cast(n))


def _all_nodes(graph: Graph) -> Iterator[Node]:
    for node in graph.nodes:
        yield node
        for value in node.params.values():
            for sub in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(sub, Graph):
                    yield from _all_nodes(sub)


def _in_range_cast(node: Node) -> bool:
    if node.op is not OpKind.CAST or not node.args or not isinstance(node.args[0], Node):
        return False
    src, dst = np.dtype(node.args[0].dtype), np.dtype(node.dtype)
    if src.kind != "f" or dst.kind not in "iu":
        return False
    got = _interval(node.args[0])
    if got is None:
        return False
    info = np.iinfo(dst)
    return info.min - 1 < got[0] and got[1] < info.max + 1


def _constant(arg: Any) -> float | None:
    """The value of a finite real 0-d constant or literal (None for anything else)."""
    if isinstance(arg, Node):
        if arg.op is not OpKind.CONSTANT:
            return None
        arg = cast("ConstantParams", arg.params).value
    if isinstance(arg, (bool, np.bool_)):
        return None
    if isinstance(arg, np.ndarray):
        if arg.ndim != 0 or arg.dtype.kind not in "iuf":
            return None
        arg = arg[()]
    if not isinstance(arg, (int, float, np.integer, np.floating)):
        return None
    value = float(arg)
    return value if math.isfinite(value) and value == arg else None


def _exactly(value: float, dtype: Any) -> bool:
    """Does ``dtype`` represent ``value`` exactly (no rounding, no overflow to inf)?"""
    with np.errstate(over="ignore"):
        return float(np.dtype(dtype).type(value)) == value


def _interval(value: Any) -> Interval | None:
    """Closed bounds of every value ``value`` (a float of its node's dtype) takes at run
    time, or None."""
    c = _constant(value)
    if c is not None:
        exact = not isinstance(value, Node) or _exactly(c, value.dtype)
        return (c, c) if exact else None
    if not isinstance(value, Node) or value.op is not OpKind.WHERE or len(value.args) != 3:
        return None
    test, yes, no = value.args
    if not all(_widens_to(arm, value) for arm in (yes, no)):
        return None
    a, b = _tested(yes, test), _interval(no)
    if a is None or b is None:
        return None
    return (min(a[0], b[0]), max(a[1], b[1]))


def _widens_to(arm: Any, where: Node) -> bool:
    """Does ``where`` keep ``arm``'s values exactly: a float arm of no wider dtype, or a
    constant that ``where``'s dtype represents exactly?"""
    dt = np.dtype(where.dtype)
    if dt.kind != "f":
        return False
    c = _constant(arm)
    if c is not None:
        return _exactly(c, dt)
    if not isinstance(arm, Node):
        return False
    have = np.dtype(arm.dtype)
    return have.kind == "f" and np.can_cast(have, dt, "safe")


def _tested(arm: Any, test: Any) -> Interval | None:
    """Bounds of ``arm`` where ``test`` holds: ``x`` or a monotone function of ``x``, ``x``
    bounded on both sides by ``test``'s conjuncts."""
    c = _constant(arm)
    if c is not None:
        return (c, c)
    if not isinstance(arm, Node):
        return None
    fn = _MONOTONE.get(arm.op)
    x = arm.args[0] if fn is not None and len(arm.args) == 1 else arm
    if not isinstance(x, Node) or np.dtype(x.dtype).kind != "f" or x.dtype != arm.dtype:
        return None
    lo, hi = -math.inf, math.inf
    for below, bound in _bounds(test, x):
        if below:
            hi = min(hi, bound)
        else:
            lo = max(lo, bound)
    if math.isinf(lo) or math.isinf(hi):
        return None
    if fn is not None:
        lo, hi = float(fn(lo)), float(fn(hi))
    return (lo, hi)


def _bounds(test: Any, x: Node) -> Iterator[tuple[bool, float]]:
    """``(from_above, k)``: ``x <= k`` (from above) or ``x >= k`` whenever ``test`` holds."""
    if not isinstance(test, Node) or np.dtype(test.dtype) != np.bool_:
        return
    if test.op in _CONJUNCTIONS:
        for term in test.args:
            yield from _bounds(term, x)
        return
    if test.op not in _COMPARISONS or len(test.args) != 2:
        return
    a, k = test.args
    op = test.op
    if k is x and a is not x:
        a, k, op = x, a, _MIRRORED[op]
    if a is not x:
        return
    dtypes = lower(test, "cpu").operand_dtypes
    dt = dtypes[0] if dtypes else None
    value = _constant(k)
    if dt is None or value is None or np.dtype(dt).kind != "f":
        return
    if not np.can_cast(np.dtype(x.dtype), dt, "safe"):
        return
    if not _exactly(value, dt):  # a bound rounded in the comparison: no proof
        return
    bound = np.dtype(dt).type(value)
    from_above, strict = _COMPARISONS[op]
    if strict:
        bound = np.nextafter(bound, bound.dtype.type(-np.inf if from_above else np.inf))
    yield from_above, float(bound)
