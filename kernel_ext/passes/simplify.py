"""Algebraic simplification: a rule table of rewrites that are exact for every input.

``RULES[op]`` lists rules for nodes of that op. A rule looks at the node and its arguments (as
they already are in the new graph) and proposes either an existing node that has the same value
(``x * 1 -> x``) or a :class:`~.rewrite.Rewrite` to build (``transpose(transpose(x, a), b) ->
transpose(x, a∘b)``). The driver accepts a proposal only when it has exactly the node's abstract
value, shape and dtype, so NumPy's promotion decides what is a no-op: ``x + 0`` with ``x``
int8 stays int8 (the literal is weak) and goes; ``x + 0.0`` with ``x`` int32 is float64 and stays
(not a no-op); ``x * 1`` with ``x`` bool is int64 and stays, while ``x * True`` is bool and goes.

Values must be identical bit for bit, for every input, NaN, infinities and signed zeros
included, and no run-time error or warning may appear or vanish. Hence the per-dtype tables:

- ``x + 0`` is not a no-op for floats (``-0.0 + 0 == +0.0``) but ``x + (-0.0)`` and ``x - 0``
  are; complex arithmetic mixes components (``(a+bj) * 1`` computes ``b * 0``, NaN for infinite
  ``b``), so complex ``x * 1`` and ``x / 1`` are not;
- ``x ** 1`` keeps the NaN sign bit only for integers (float16 ``power`` clears it);
- extended precision (``longdouble``) is left alone: its NaN sign handling differs;
- shape rules (``reshape`` to the same shape, ``broadcast_to``) require fully static shapes,
  where the trace already proved the original op cannot fail at run time.

Values also depend on memory layout, where a consumer reads it: BLAS (``matmul``, ``dot``,
``linalg``) and pairwise sums group their floating-point work by the strides they are handed,
and an opaque call may look at them. ``x * 1.0`` on a reversed view gives NumPy a fresh
positive-stride array, and ``matmul`` of that differs by an ulp from ``matmul`` of the view
itself. So a rule's answer ``x`` stands for the node as it is only where the layout cannot
change (the node is a view op, whose layout ``x`` has too; or ``x`` is a fresh array the graph
made and the node read one array, so NumPy would allocate the same layout again) or where no
consumer sees it (every user is elementwise, and the node is not returned). Otherwise the node
becomes ``copy(x)`` when that is NumPy's layout exactly (the node read one array: ``np.copy``
and a ufunc both allocate in "K" order), and stays as it is when it read several arrays
(``where(c, x, x)`` takes its layout from ``c`` too). The rule table itself knows nothing of
this: the driver (:func:`propose`) decides, from :func:`layout_observers`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias, cast

import numpy as np

from ..ir import AbstractValue, Graph, Node, OpGroup, OpKind
from ..ir.registry import OpTable
from .rewrite import Rewrite, Rewriter, is_pure, recursive, same_aval

Proposal: TypeAlias = Node | Rewrite | None
Rule = Callable[[Node, tuple[Any, ...]], Proposal]
Test = Callable[[Any], Any]  # element-wise: array in, bool array out; literal in, bool out

IEEE_FLOATS = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))
_COMPLEX = frozenset(np.dtype(t) for t in (np.complex64, np.complex128))
LITERAL_TYPES = (bool, int, float, complex)
MAX_SCAN = 1_000_000  # constants bigger than this are not inspected element by element


# ---------------------------------------------------------------------------------------------
# What an operand is
# ---------------------------------------------------------------------------------------------


def kind_of(x: Any) -> str | None:
    """``x``'s dtype kind (``b i u f c``), or ``None`` if it is not a node with a dtype we
    reason about (extended-precision floats are excluded on purpose)."""
    if not isinstance(x, Node) or not isinstance(x.aval, AbstractValue):
        return None
    dtype = x.aval.dtype
    if dtype.kind == "f" and dtype not in IEEE_FLOATS:
        return None
    if dtype.kind == "c" and dtype not in _COMPLEX:
        return None
    return dtype.kind if dtype.kind in "biufc" else None


def _fits(small: tuple[Any, ...] | None, big: tuple[Any, ...] | None) -> bool:
    """Broadcasting an array of shape ``small`` against one of shape ``big`` leaves ``big``
    unchanged, whatever the run-time sizes of ``big``'s unknown dims."""
    if small is None or big is None or len(small) > len(big):
        return False
    return all(s == 1 or (b is not None and s == b) for s, b in zip(small[::-1], big[::-1]))


def _every(c: Any, test: Test, like: Node) -> bool:
    """``c`` is a literal or a constant node whose every element passes ``test``, and
    broadcasting it against ``like`` cannot change ``like``'s shape."""
    if (
        isinstance(c, Node)
        and c.op is OpKind.BROADCAST_TO
        and isinstance(c.args[0], Node)
        and c.args[0].op is OpKind.CONSTANT
        and _fits(c.shape, like.shape)
    ):
        # a constant broadcast too large to fold (a gradient's seed of ones over 10M
        # elements): its elements are the small constant's
        c = c.args[0]
    if isinstance(c, Node):
        if c.op is not OpKind.CONSTANT:
            return False
        value = c.params.value
        if value.size > MAX_SCAN or not _fits(value.shape, like.shape):
            return False
    elif isinstance(c, LITERAL_TYPES):
        return bool(test(c))
    else:
        return False
    try:
        with np.errstate(all="ignore"):
            return bool(np.all(test(value)))
    except (TypeError, ValueError, OverflowError):
        return False


# ---------------------------------------------------------------------------------------------
# Rule factories
# ---------------------------------------------------------------------------------------------


def identity_operand(tests: dict[str, Test], sides: str = "right") -> list[Rule]:
    """Rules for ``op(x, c) -> x`` (``sides`` "right"), ``op(c, x) -> x`` ("left") or both
    ("both"), where ``c`` passes ``tests[kind of x's dtype]`` element-wise."""

    def make(x_at: int) -> Rule:
        def rule(node: Node, args: tuple[Any, ...]) -> Proposal:
            if len(args) != 2 or node.params:
                return None
            x, c = args[x_at], args[1 - x_at]
            test = tests.get(kind_of(x) or "")
            return x if test is not None and _every(c, test, x) else None

        rule.__name__ = f"identity_operand_{'right' if x_at == 0 else 'left'}"
        return rule

    rules = []
    if sides in ("right", "both"):
        rules.append(make(0))
    if sides in ("left", "both"):
        rules.append(make(1))
    return rules


def same_operands(kinds: str) -> Rule:
    """``op(x, x) -> x`` (``maximum``, ``logical_and``, ...) for dtype kinds in ``kinds``."""

    def rule(node: Node, args: tuple[Any, ...]) -> Proposal:
        if len(args) != 2 or args[0] is not args[1] or node.params:
            return None
        kind = kind_of(args[0])
        if kind and kind in kinds:  # (so args[0] is a node)
            first: Node = args[0]
            return first
        return None

    return rule


def involution(kinds: str) -> Rule:
    """``f(f(x)) -> x`` for a self-inverse ``f`` (negative, invert, ...), ``x``'s kind in
    ``kinds``."""

    def rule(node: Node, args: tuple[Any, ...]) -> Proposal:
        inner = args[0]
        if (
            isinstance(inner, Node)
            and inner.op is node.op
            and not inner.params
            and not node.params
            and (kind_of(inner.args[0]) or "-") in kinds
        ):
            return cast("Node", inner.args[0])
        return None

    return rule


def idempotent(kinds: str) -> Rule:
    """``f(f(x)) -> f(x)`` for an idempotent ``f`` (floor, absolute, sign, ...), where the
    inner result's kind is in ``kinds``."""

    def rule(node: Node, args: tuple[Any, ...]) -> Proposal:
        inner = args[0]
        if (
            isinstance(inner, Node)
            and inner.op is node.op
            and not inner.params
            and not node.params
            and (kind_of(inner) or "-") in kinds
        ):
            return inner
        return None

    return rule


def identity_on(kinds: str) -> Rule:
    """``f(x) -> x`` where ``f`` leaves values of these kinds unchanged (``floor`` of ints,
    ``positive``, ``conjugate`` of reals) — the aval check ensures NumPy keeps the dtype."""

    def rule(node: Node, args: tuple[Any, ...]) -> Proposal:
        if not node.params and (kind_of(args[0]) or "-") in kinds:
            return cast("Node", args[0])
        return None

    return rule

    # ---------------------------------------------------------------------------------------------
    # Op-specific rules
    # ---------------------------------------------------------------------------------------------

    return None


#: Each op's simplifications, tried in order.
RULES: OpTable[list[Rule]] = OpTable("simplification")
RULES.update({})


def layout_observers(graph: Graph) -> set[Node]:
    """The nodes whose memory layout a consumer may see: those returned, and those read by
    any op that is not elementwise (linalg, reductions, scans, views, opaque calls, control
    flow, ...). An elementwise op's values do not depend on its operands' strides, and it
    allocates its result in "K" order, the same for a view and for NumPy's fresh copy of it."""
    seen = {o for o in graph.outputs if isinstance(o, Node)}
    elementwise = OpGroup.ELEMENTWISE
    for node in graph.nodes:
        if node.op.group is not elementwise:
            seen.update(a for a in node.args if isinstance(a, Node))
    return seen


def _one_array_operand(node: Node) -> bool:
    """``node`` reads at most one array of rank > 0 (literals and 0-d values have no layout):
    NumPy then allocates its result in that array's "K" order, exactly as ``np.copy`` does."""
    arrays = [a for a in node.args if isinstance(a, Node) and getattr(a.aval, "shape", None) != ()]
    return len(arrays) <= 1


def _same_layout(node: Node, target: Node) -> bool:
    """Does ``target`` have the layout NumPy gives ``node``'s result? A view op's result is a
    view with the layout its input, the rules' answer, has. A fresh array the graph made is
    dense with positive strides, which a one-array op would allocate again. The rules answer
    with the operand or an elementwise chain of it, so one array read means layout K(target)."""
    if node.op.may_alias:
        return True
    return not target.op.may_alias and _one_array_operand(node)


def propose(
    node: Node, args: tuple[Any, ...], rw: Rewriter, rules: list[Rule], layout_seen: bool = False
) -> bool:
    """Try ``rules`` on ``node`` in order; apply the first acceptable proposal to ``rw``.

    ``layout_seen``: a consumer sees the node's layout (:func:`layout_observers`), so an
    existing value stands for it only with NumPy's layout (module docstring)."""
    for rule in rules:
        proposal = rule(node, args)
        if isinstance(proposal, Node):
            if not same_aval(proposal.aval, node.aval):
                continue
            if not layout_seen or _same_layout(node, proposal):
                rw.use(node, proposal)
                return True
            if _one_array_operand(node):
                return rw.emit(node, Rewrite(OpKind.COPY, (proposal,)))
        elif isinstance(proposal, Rewrite) and rw.emit(node, proposal):
            return True
    return False


def _simplify_level(graph: Graph) -> tuple[Graph, bool]:
    rw = Rewriter(graph)
    by_op = {id(op): rules for op, rules in RULES.items()}  # ids: Enum hashing is slow
    observed = layout_observers(graph)
    for node in graph.nodes:
        rules = by_op.get(id(node.op))
        if rules and is_pure(node):
            args = rw.args(node)
            if propose(node, args, rw, rules, node in observed):
                continue
            rw.keep(node, args=args)
        else:
            rw.keep(node)
    return rw.finish()


simplify = recursive(
    _simplify_level,
    "simplify",
    """``Graph -> (Graph, changed)``: apply
:data:`RULES` (``x * 1 -> x``, ``--x -> x``, ``cast("x", x.dtype) -> x``, double transposes, ...)
everywhere, keeping only rewrites that are exact in value, dtype and shape.""",
)
