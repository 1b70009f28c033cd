"""The machinery every rewriting pass shares: a graph builder, purity, sub-graph recursion.

A pass walks the old graph in program order and, for each node, tells a :class:`Rewriter`
what becomes of it: *keep* it (copied, its inputs re-pointed at the new graph), *use* another
new node in its place, or *emit* a replacement (a folded constant, a cheaper op). The old graph
and its nodes are never touched, so a pass is a pure ``Graph -> (Graph, changed)`` function and
a caller still holding the traced graph sees it unchanged.

The one subtle rule is about memory. NumPy returns a fresh array from ``x * 1``, so a result
the caller receives must not silently become the caller's own input array (or another result,
or a variable's storage) because a rewrite made it so. That concerns the graph's outputs and,
through ops that may return a view (``x.astype(x.dtype)[...]``: after ``cast -> x`` the view
would point into ``x``), the nodes those views read: the *exposed* nodes. An exposed node is only
replaced by a fresh value; otherwise it becomes ``copy(target)``, cheaper than the op it
replaces, or stays as it is when it is a view op itself (see :meth:`Rewriter.use`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ..ir import VIEW_OPS, AbstractValue, Graph, Node, OpGroup, OpKind, abstract_eval, subgraphs
from ..ir.params import make_params

Pass = Callable[[Graph], "tuple[Graph, bool]"]

# Aliasing (``OpKind.may_alias``, ``passes_through``, ``VIEW_OPS``): a result that may share
# memory with an input (views, placeholders, variable storage, values passed through a loop)
# returned where the original graph returned a freshly computed array would let the caller's
# writes reach the input.
# A tuple, not a set: membership by identity is cheaper than hashing an Enum.
_IMPURE_GROUPS = (OpGroup.SOURCE, OpGroup.STATEFUL, OpGroup.CONTROL_FLOW)


class Rewrite(NamedTuple):
    """A replacement node to build: ``op(*args, **attrs)``, its args already in the new graph."""

    op: OpKind
    args: tuple[Any, ...] = ()
    attrs: dict[str, Any] = {}  # noqa: RUF012 - a NamedTuple field's default, never mutated


def is_pure(node: Node) -> bool:
    """May ``node`` be evaluated early, merged with a twin or replaced by an equal value?

    True for value-producing ops without effects: not sources (placeholders and constants are
    what the others are built from), not stateful ops (a variable read depends on *when* it
    runs), and not nodes carrying sub-graphs (control flow is only ever optimised inside).
    """
    return (
        node.op.group not in _IMPURE_GROUPS
        and isinstance(node.aval, AbstractValue)
        and not subgraphs(node)
    )


def exposed_nodes(graph: Graph) -> set[Node]:
    """Nodes whose memory the caller may end up holding: outputs that are arrays, and what
    ops that may return a view of (or pass through) an input read, transitively.

    0-d outputs are not exposed by themselves: they come back as immutable NumPy scalars.
    """
    stack = [o for o in graph.outputs if getattr(o.aval, "shape", None) != ()]
    seen: set[Node] = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node.op.passes_through:
            stack.extend(node.inputs)
    return seen


def same_aval(a: Any, b: Any) -> bool:
    """Both are :class:`AbstractValue` with equal shape (``None`` dims included) and dtype."""
    return (
        isinstance(a, AbstractValue)
        and isinstance(b, AbstractValue)
        and a.shape == b.shape
        and a.dtype == b.dtype
    )


def fully_known(aval: Any) -> bool:
    """The shape is static: known rank and every dimension known."""
    return isinstance(aval, AbstractValue) and aval.shape is not None and None not in aval.shape


class Rewriter:
    """Builds the graph a pass returns, mapping each old node to its *value*: the node that
    computes it in the new graph.

    Every old node must be handled exactly once, in program order, by :meth:`keep`,
    :meth:`use` or a successful :meth:`emit`; then :meth:`finish` returns the result.

    Values are built lazily. While a node and all its arguments are unchanged its value is the
    old node itself, so a pass that changes nothing allocates nothing and returns the very
    graph it was given. Otherwise :meth:`finish` copies the reused old nodes into the new
    graph (the two graphs never share a node; an unchanged sub-graph in a node's attrs is
    shared, as graphs are never modified once built) and names everything.
    """

    def __init__(self, graph: Graph) -> None:
        self.old = graph
        self.env: dict[Node, Node] = {}
        self.changed = False
        self._order: list[Node] = []  # the new graph's nodes, as values, in program order
        self._fresh: set[Node] = set()  # values this rewriter created (the others are old)
        self._exposed = exposed_nodes(graph)
        self._exposed_images: set[Node] = set()  # values some exposed old node maps to

    # -- reading ----------------------------------------------------------------------------
    def arg(self, a: Any) -> Any:
        """An old argument's value (literals unchanged)."""
        return self.env[a] if isinstance(a, Node) else a

    def args(self, node: Node) -> tuple[Any, ...]:
        env = self.env
        return tuple([env[a] if isinstance(a, Node) else a for a in node.args])

    # -- deciding ---------------------------------------------------------------------------
    def keep(
        self,
        node: Node,
        attrs: Mapping[str, Any] | None = None,
        args: tuple[Any, ...] | None = None,
    ) -> Node:
        """Keep ``node`` (with new ``attrs`` if given, e.g. optimised sub-graphs). ``args``
        saves recomputing :meth:`args` when the caller has it already."""
        if args is None:
            args = self.args(node)
        if attrs is None and args == node.args:  # tuple == compares items by identity first
            value = node
        else:
            value = self._new(
                node.name,
                node.op,
                args,
                node.params if attrs is None else attrs,
                node.aval,
                node.source,
                dict(node.meta),
            )
            self.changed = self.changed or attrs is not None
        self._order.append(value)
        self._map(node, value)
        return value

    def use(self, node: Node, target: Node) -> None:
        """Let the value ``target`` stand for ``node`` (their avals are equal).

        For an exposed node (see :func:`exposed_nodes`) the aliasing rule applies: a target
        that may share memory with an input, or that another exposed node already became, is
        not used as is. A view op is then kept (it was an alias already); anything else
        becomes ``copy(target)``.
        """
        if node in self._exposed and not self._may_expose(target):
            if node.op in VIEW_OPS:
                self.keep(node)
                return
            target = self._new(node.name, OpKind.COPY, (target,), {}, node.aval, node.source)
            self._order.append(target)
        self._map(node, target)
        self.changed = True

    def emit(self, node: Node, rewrite: Rewrite) -> bool:
        """Build ``rewrite`` (its args are values) in place of ``node`` if it yields exactly
        ``node``'s aval; return whether it was done.

        An exposed node must stay a fresh array: a rewrite into a view op is refused, and a
        constant (read-only, shared by every call) is handed out as ``copy(constant)``.
        """
        op, args, attrs = rewrite
        exposed = node in self._exposed
        if exposed and op is not OpKind.CONSTANT and op.may_alias:
            return False
        try:
            aval = abstract_eval(op, attrs, [a.aval if isinstance(a, Node) else a for a in args])
        except Exception:
            return False
        if not same_aval(aval, node.aval):
            return False
        # (the graph views tell gradient nodes apart)
        meta = {"backward": True} if node.meta.get("backward") else None
        value = self._new(node.name, op, tuple(args), dict(attrs), aval, node.source, meta)
        self._order.append(value)
        if exposed and op is OpKind.CONSTANT:
            value = self._new(node.name, OpKind.COPY, (value,), {}, aval, node.source)
            self._order.append(value)
        self._map(node, value)
        self.changed = True
        return True

    def add(
        self,
        name: str,
        op: OpKind,
        args: tuple[Any, ...],
        attrs: Mapping[str, Any] | None = None,
    ) -> Node:
        """A new node ``op(*args)`` (args are values), for a rewrite that builds several
        nodes in place of one (then :meth:`use` the last); its aval is abstract-evaluated,
        so an invalid combination raises here, before anything is replaced."""
        params = make_params(op, attrs or {})
        aval = abstract_eval(op, params, [a.aval if isinstance(a, Node) else a for a in args])
        value = self._new(name, op, tuple(args), params, aval)
        self._order.append(value)
        return value

    def is_exposed(self, node: Node) -> bool:
        """May the caller end up holding ``node``'s memory (see :func:`exposed_nodes`)?"""
        return node in self._exposed

    def finish(self) -> tuple[Graph, bool]:
        """The new graph and whether it differs; the old graph itself when nothing changed."""
        if not self.changed:
            return self.old, False
        g = Graph(self.old.name)
        final: dict[Node, Node] = {}
        for value in self._order:
            args = tuple(final[a] if isinstance(a, Node) else a for a in value.args)
            if value in self._fresh:  # ours: finished in place
                value.args, value.name = args, g.unique_name(value.name)
                final[value] = value
                g.nodes.append(value)
                if value.op is OpKind.PLACEHOLDER:
                    g.inputs.append(value)
            else:
                final[value] = g.append_copy(value, args)
        g.outputs = [final[self.env[o]] for o in self.old.outputs]
        return g, True

    # -- internals --------------------------------------------------------------------------
    def _new(
        self,
        name: str,
        op: OpKind,
        args: tuple[Any, ...],
        attrs: Mapping[str, Any],
        aval: Any,
        source: Any = None,
        meta: dict[str, Any] | None = None,
    ) -> Node:
        # ``source``: the line of user code that made the node it replaces (for the views)
        node = Node(name, op, args, attrs, aval, source, meta)
        self._fresh.add(node)
        return node

    def _map(self, node: Node, value: Node) -> None:
        self.env[node] = value
        if node in self._exposed:
            self._exposed_images.add(value)

    def _may_expose(self, target: Node) -> bool:
        # Constants are out too: they are read-only and shared by every call.
        return target not in self._exposed_images and not target.op.may_alias


# ---------------------------------------------------------------------------------------------
# Sub-graphs
# ---------------------------------------------------------------------------------------------


def map_subgraphs(node: Node, fn: Pass) -> tuple[dict[str, Any], bool]:
    """``node``'s attrs with every sub-graph (``Graph`` values and tuples of them, as
    :func:`~kernel_ext.ir.subgraphs` finds them) replaced by ``fn(subgraph)``.

    Returns the new attrs and whether any sub-graph changed. ``node`` itself is not touched.
    """
    attrs = dict(node.params)
    changed = False
    for key, value in node.params.items():
        if isinstance(value, Graph):
            attrs[key], did = fn(value)
            changed = changed or did
        elif isinstance(value, tuple) and value and all(isinstance(v, Graph) for v in value):
            results = [fn(v) for v in value]
            attrs[key] = tuple(g for g, _ in results)
            changed = changed or any(did for _, did in results)
    return attrs, changed


def recursive(flat: Pass, name: str | None = None, doc: str | None = None) -> Pass:
    """The pass ``flat`` (which treats control-flow nodes as opaque) applied everywhere:
    first inside every sub-graph, innermost first, then to the graph itself.

    Sub-graphs keep their placeholders and their number of outputs (every pass does), so the
    control-flow node around them stays valid. ``name`` and ``doc`` label the result (the
    pipeline's verifier names the pass that broke an invariant).
    """

    def run(graph: Graph) -> tuple[Graph, bool]:
        inner = False
        if any(subgraphs(n) for n in graph.nodes):
            rw = Rewriter(graph)
            for node in graph.nodes:
                if subgraphs(node):
                    attrs, did = map_subgraphs(node, run)
                    rw.keep(node, attrs if did else None)
                else:
                    rw.keep(node)
            graph, inner = rw.finish()
        graph, outer = flat(graph)
        return graph, inner or outer

    run.__name__ = run.__qualname__ = name or str(getattr(flat, "__name__", "pass"))
    run.__doc__ = doc if doc is not None else flat.__doc__
    run.__wrapped__ = flat  # type: ignore[attr-defined]
    return run
