"""Which of NumPy's two 0-d results a traced value stands for: a NumPy scalar or a 0-d array.

Eager NumPy returns 0-d results in two forms that users can tell apart: ufuncs, reductions,
``dot`` and single-element reads (``x[0]``, ``x[()]``) give a NumPy *scalar* (immutable,
``np.float64``); array constructors, ``where``, ``x[...]`` and the methods of a 0-d *array*
(``copy``, ``reshape``, ``T``, ``astype``) give a 0-d ``np.ndarray`` (mutable, ``r[()] = 5``).
The methods of a NumPy scalar give scalars again, so ``a.copy()`` is an array or a scalar as
``a`` is one. A trace records only shapes and dtypes; this module decides, when a function
returns a 0-d traced value, which form NumPy would have given, from the op that made it (and,
through shape-only ops and casts, from the value those were applied to):

* :data:`SCALAR` — return a NumPy scalar (``v[()]``);
* :data:`ARRAY` — return a fresh 0-d ``np.ndarray`` (never one a later call overwrites);
* :data:`COMPUTED` — the result of an opaque call (NumPy's own function, run at each call):
  as that function returned it;
* ``("like", path)`` — shape-only ops applied to the argument at ``path``: its form, decided
  per call (the caller may pass ``np.float64(1.5)`` or ``np.array(1.5)`` to one trace).

Handlers whose NumPy function always builds an array (``np.copy``, ``np.array``,
``np.asarray``) mark their result with :func:`mark_array`; compositions whose NumPy original
returns ``r[()]`` while the last op here would give an array mark it with :func:`mark_scalar`.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..ir import Graph, Node, OpGroup, OpKind

SCALAR = "scalar"
ARRAY = "array"
COMPUTED = "computed"
#: the form of one 0-d value: SCALAR, ARRAY, COMPUTED, ("like", argument path) or
#: ("asarray", argument path)
ZeroDKind = str | tuple

# nodes whose value NumPy returns as a 0-d array whatever made them (weak: traces end)
_ARRAY_NODES: weakref.WeakSet[Node] = weakref.WeakSet()
# nodes NumPy returns as a scalar whatever made them (a composition ending in ``r[()]``)
_SCALAR_NODES: weakref.WeakSet[Node] = weakref.WeakSet()
# ``np.asarray`` of a 0-d argument: the caller's array itself, or a new 0-d array when the
# caller passed a NumPy scalar (decided per call: ``("asarray", path)``)
_ASARRAY_NODES: weakref.WeakSet[Node] = weakref.WeakSet()

# ops whose 0-d result is the same form as their (0-d) first operand: ndarray methods that a
# NumPy scalar has too, returning a scalar there and an array on an array
_LIKE_OPERAND = frozenset(
    {
        OpKind.CAST,
        OpKind.RESHAPE,
        OpKind.TRANSPOSE,
        OpKind.SQUEEZE,
        OpKind.COPY,
        OpKind.REAL,
        OpKind.IMAG,
        OpKind.SETITEM,
        OpKind.UFUNC_AT,
    }
)
# of those, the ones that make a new buffer (the others are views or the array written)
_NEW_BUFFER = frozenset({OpKind.CAST, OpKind.COPY, OpKind.REAL, OpKind.IMAG})
# ops that always build an array (np.where, np.broadcast_to/full_like, np.pad, np.isin)
_ALWAYS_ARRAY = frozenset(
    {OpKind.WHERE, OpKind.BROADCAST_TO, OpKind.PAD, OpKind.ISIN, OpKind.EXPAND_DIMS}
)

# ops that run NumPy's own callable at each call: their result is in NumPy's own form
_OPAQUE = frozenset({OpKind.NUMPY_CALL, OpKind.RANDOM_CALL})


def mark_array(value: Any) -> Any:
    """Record that NumPy returns ``value`` (a traced value) as an array when it is 0-d (an
    array constructor made it); returns ``value``."""
    return _mark(value, _ARRAY_NODES, _SCALAR_NODES)


def mark_scalar(value: Any) -> Any:
    """Record that NumPy returns ``value`` as a NumPy scalar when it is 0-d (a composition
    whose NumPy original ends in ``r[()]``, such as ``np.linalg.cond``); returns ``value``."""
    return _mark(value, _SCALAR_NODES, _ARRAY_NODES)


def _mark(value: Any, into: weakref.WeakSet[Node], out_of: weakref.WeakSet[Node]) -> Any:
    node = getattr(value, "node", None)
    if isinstance(node, Node):
        out_of.discard(node)
        into.add(node)
    return value


def node_form(node: Node) -> str | None:
    """The form recorded for ``node`` by :func:`mark_array`, :func:`mark_scalar` or
    :func:`as_array` (``"array"``, ``"scalar"``, ``"asarray"``), or None: what a saved graph
    must keep beside the node to run as the trace did (``kernel_ext.saved_model``)."""
    if node in _ARRAY_NODES:
        return ARRAY
    if node in _SCALAR_NODES:
        return SCALAR
    return "asarray" if node in _ASARRAY_NODES else None


def restore_node_form(node: Node, form: str | None) -> None:
    """Record ``form`` (a :func:`node_form` result) for ``node`` of a loaded graph."""
    for kind, into in ((ARRAY, _ARRAY_NODES), (SCALAR, _SCALAR_NODES), ("asarray", _ASARRAY_NODES)):
        if form == kind:
            into.add(node)
        else:
            into.discard(node)


def as_array(value: Any) -> Any:
    """``np.asarray(value)`` of a traced value: ``value`` itself (an argument stays the
    caller's object), unless NumPy holds it as a NumPy scalar (a 0-d ufunc or reduction
    result), which ``np.asarray`` turns into a new 0-d array: then a copy (a scalar is
    immutable, so nothing could see the difference from a view), marked as an array."""
    node = value.node
    if value.shape == () and node.op is OpKind.PLACEHOLDER:
        # the caller's array, or a new array of the NumPy scalar the caller passed: a view
        # (a write through it reaches the argument, as through the caller's own array)
        result = value.reshape(())
        if result is not value:
            _ASARRAY_NODES.add(result.node)
        return result
    if value.shape != () or zero_d_kind(node, None) != SCALAR:
        return value
    return mark_array(value.copy())


#: ``node -> (id(root), kind)`` of control-flow results asked about with no branch map (see
#: :func:`zero_d_kind`); a node's branches never change while its trace runs.
_TOP_LEVEL_KINDS: weakref.WeakKeyDictionary[Node, tuple[int, ZeroDKind]] = (
    weakref.WeakKeyDictionary()
)


def zero_d_kind(
    node: Node,
    root: Graph | None,
    outer: dict[Node, tuple[Any, Any]] | None = None,
    memo: dict[tuple[int, int], Any] | None = None,
) -> ZeroDKind:
    """The form NumPy returns the 0-d value of ``node`` in (see the module docstring);
    ``root`` is the traced function's graph, whose placeholders are the caller's arguments;
    ``outer`` maps a branch graph's placeholders to the values the ``cond`` passed in (each
    with the enclosing graph's own map)."""
    applied = False  # (an ndarray method was applied to the value found so far)
    for _ in range(10_000):  # (a chain of shape-only ops; bounded for safety)
        if node in _ARRAY_NODES:
            return ARRAY
        if node in _SCALAR_NODES:
            return SCALAR
        if node in _ASARRAY_NODES:
            if applied:  # an ndarray method of np.asarray(x)'s result: an array
                return ARRAY
            form = zero_d_kind(node.args[0], root, outer, memo)
            return ("asarray", form[1]) if isinstance(form, tuple) else ARRAY
        op = node.op
        if op is OpKind.PLACEHOLDER and outer and node in outer:
            # a branch's or body's input: the operand, in the enclosing graph's own context
            operand, outer = outer[node]
            if not isinstance(operand, Node):
                return SCALAR
            node = operand
            continue
        kind = _own_kind(node, root)
        if kind is not None:
            return kind
        if op in _LIKE_OPERAND:
            kind, source = _operand_kind(node)
            if source is None:
                return kind
            node, applied = source, applied or op in _NEW_BUFFER
            continue
        if op.group is OpGroup.CONTROL_FLOW or op is OpKind.GET_OUTPUT:
            return _memoised_control_flow_kind(node, root, outer, memo)
        return SCALAR  # ufuncs, clip, reductions, linalg, searches: NumPy scalars
    return SCALAR


def _own_kind(node: Node, root: Graph | None) -> ZeroDKind | None:
    """The form the node's op fixes by itself (None: it depends on an operand or branch)."""
    op = node.op
    if op is OpKind.PLACEHOLDER:
        path = node.params.path
        return (
            ("like", path)
            if path is not None and root is not None and node in root.inputs
            else SCALAR
        )
    if op is OpKind.CONSTANT:
        return ARRAY if isinstance(node.params.value, np.ndarray) else SCALAR
    if op in _ALWAYS_ARRAY:
        return ARRAY
    if op is OpKind.GETITEM:  # x[...] is a 0-d view; x[0], x[()] read an element
        return ARRAY if Ellipsis in node.params.index else SCALAR
    if op in _OPAQUE or (
        op is OpKind.GET_OUTPUT
        and node.args
        and isinstance(node.args[0], Node)
        and node.args[0].op in _OPAQUE
    ):
        return COMPUTED
    return None


def _operand_kind(node: Node) -> tuple[ZeroDKind, Node | None]:
    """An op whose result takes its operand's form: the form when the operand decides it
    (None as the node), else the operand to follow."""
    source = node.args[0] if node.args else None
    if not isinstance(source, Node):
        return SCALAR, None  # (a Python number: NumPy makes it a scalar)
    if source.shape != ():  # (no value, or not 0-d)
        return ARRAY, None  # a method of an n-d array (reshape to (), squeeze): an array
    if source.op in _OPAQUE:
        return SCALAR, None  # (its form is known only at run time: NumPy's default)
    # (a cast or a copy makes a new array; a view step or a write keeps the array
    # np.asarray gave: the caller's own when it passed one)
    return SCALAR, source


def _memoised_control_flow_kind(
    node: Node,
    root: Graph | None,
    outer: dict[Node, tuple[Any, Any]] | None,
    memo: dict[tuple[int, int], Any] | None,
) -> ZeroDKind:
    """:func:`_control_flow_kind`, memoised: a chain of branches that each pass a value
    through (``s += x`` under an ``if`` in an unrolled loop) reaches every earlier branch along
    two paths (the entry keeps ``outer`` alive, so its id is not reused within the query). A
    node reached outside any branch map keeps its answer across queries, so the queries a
    trace makes as it grows such a chain stay shallow."""
    if outer is None:
        known = _TOP_LEVEL_KINDS.get(node)
        if known is not None and known[0] == id(root):
            return known[1]
    memo = {} if memo is None else memo
    key = (id(node), id(outer))
    if key not in memo:
        memo[key] = (outer, _control_flow_kind(node, root, outer, memo))
        if outer is None:
            _TOP_LEVEL_KINDS[node] = (id(root), memo[key][1])
    return memo[key][1]


def _control_flow_kind(
    node: Node,
    root: Graph | None,
    outer: dict[Node, tuple[Any, Any]] | None,
    memo: dict[tuple[int, int], Any],
) -> ZeroDKind:
    """A ``cond``'s output takes the form both branches return, a ``while`` loop's the form
    of its initial value and of the body's result; where they differ (the data picks at run
    time), one that follows an argument wins over an array, else a scalar, NumPy's default
    for computed values."""
    index = 0
    if node.op is OpKind.GET_OUTPUT:
        index = int(node.params.index)
        node = node.args[0] if node.args and isinstance(node.args[0], Node) else node
    if node.op is OpKind.COND:
        graphs, operands = node.params.branches, node.args[1:]
    elif node.op is OpKind.WHILE:
        # the value after the loop: its initial value (no iteration) or the body's result,
        # whose loop variables are taken as their initial values (one iteration's view)
        graphs, operands = (node.params.body,), node.args
        if index < len(node.args) and isinstance(node.args[index], Node):
            graphs = (*graphs, None)
    else:
        return SCALAR
    kinds = set()
    for graph in graphs:
        if graph is None:
            kinds.add(zero_d_kind(node.args[index], root, outer, memo))
        elif isinstance(graph, Graph) and index < len(graph.outputs):
            # each level maps only its own inputs, to (operand, the enclosing level's map):
            # a value passed through resolves to the enclosing node under the enclosing map,
            # so the memo of :func:`zero_d_kind` finds it again
            inner = {p: (o, outer) for p, o in zip(graph.inputs, operands)}
            kinds.add(zero_d_kind(graph.outputs[index], root, inner, memo))
    if len(kinds) == 1:
        return kinds.pop()
    likes = [k for k in kinds if isinstance(k, tuple)]
    return likes[0] if len(likes) == 1 and kinds == {ARRAY, likes[0]} else SCALAR


__all__ = [
    "ARRAY",
    "COMPUTED",
    "SCALAR",
    "ZeroDKind",
    "as_array",
    "mark_array",
    "mark_scalar",
    "zero_d_kind",
]
