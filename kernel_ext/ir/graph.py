"""The graph IR: :class:`Node` (one operation) and :class:`Graph` (nodes in program order).

In the manner of torch.fx: a node's ``args`` hold input nodes *and* inline literals (weak Python
scalars, ``None``), its ``params`` the op's static parameters (axis, dtype, index templates, the
variable a stateful op touches): one immutable value of the op's class in
:mod:`kernel_ext.ir.params`, read by field (``node.params.axis``) and also a mapping over the
fields given (what printers and keys read). A change gives the node a new value
(``node.params = node.params.replace(shape=...)``). Nodes are kept in program order, which is a
valid topological order and also the order stateful ops run in.

A node's ``meta`` holds what other layers note about it, never what it computes: ``where``
(a description of the code that made it, for messages and the graph views), ``backward``
(made by a gradient's backward pass: the views tell those apart), ``stacked`` (a loop a
gradient rewrote to keep its iterations' states, :mod:`kernel_ext.autodiff`) and
``sum_term`` (:mod:`kernel_ext.passes.short_sums`). Printers, common-subexpression keys and
the kernel caches read the parameters only; copies of a node keep both.

A node's outputs are described by its ``aval`` (a :data:`~kernel_ext.ir.abstract.NodeAval`): one
:class:`~kernel_ext.ir.abstract.AbstractValue`, a tuple of them for a multi-output op (eigh,
unique with counts, opaque and random calls returning tuples; ``GET_OUTPUT`` nodes pick one), or
``None`` for ops without a value (print, variable writes).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from .abstract import AbstractValue, NodeAval, abstract_eval
from .ops import OpGroup, OpKind
from .params import AnyParams, VariableParams, make_params


class Node:
    """One operation of a :class:`Graph` (TensorFlow calls this an ``Operation``)."""

    __slots__ = (
        "__weakref__",
        "_args",
        "_inputs",
        "aval",
        "meta",
        "name",
        "op",
        "params",
        "source",
    )

    def __init__(
        self,
        name: str,
        op: OpKind,
        args: tuple[Any, ...],
        attrs: Mapping[str, Any],
        aval: NodeAval,
        source: Any = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.op = op
        self.args = args
        #: The op's parameters: a value of its class (``op.params_class``, :mod:`.params`)
        #: (immutable: a change gives the node a new value).
        self.params: AnyParams = make_params(op, attrs)
        self.aval = aval
        #: The line of the user's code that made the node (the tracer records a
        #: ``SourceLine(file, line, text)``; None when unknown): for the graph views and
        #: messages, never for what the node computes. Copies of a node keep it.
        self.source = source
        #: What other layers note about the node (the module's docstring); a fresh dict.
        self.meta: dict[str, Any] = {} if meta is None else meta

    # TensorFlow's Operation vocabulary ------------------------------------------------------
    @property
    def type(self) -> OpKind:
        """The op kind (TensorFlow's ``Operation.type``)."""
        return self.op

    @property
    def args(self) -> tuple[Any, ...]:
        """Input nodes and inline literals, in argument order."""
        return self._args

    @args.setter
    def args(self, value: tuple[Any, ...]) -> None:
        self._args = tuple(value)
        # Cached: passes and the fusion partitioner ask for inputs many times per node.
        self._inputs = tuple(a for a in self._args if isinstance(a, Node))

    @property
    def inputs(self) -> tuple[Node, ...]:
        """The nodes this one reads, in argument order (literals excluded)."""
        return self._inputs

    @property
    def outputs(self) -> tuple[AbstractValue, ...]:
        """The abstract value of every output this node produces, in order: one, one per output
        of a multi-output op, or none."""
        aval = self.aval
        if aval is None:
            return ()
        return aval if isinstance(aval, tuple) else (aval,)

    @property
    def multi_output(self) -> bool:
        """True when the node produces several values (its ``aval`` is a tuple)."""
        return isinstance(self.aval, tuple)

    @property
    def value_aval(self) -> AbstractValue:
        """The abstract value of the node's one output; TypeError when it has several or none
        (ask :attr:`outputs` for those)."""
        aval = self.aval
        if isinstance(aval, AbstractValue):
            return aval
        has = "has no value" if aval is None else f"has {len(aval)} outputs"
        raise TypeError(
            f"node {self.name!r} ({self.op.value}) {has}: value_aval is for a node with "
            "one output (Node.outputs lists them all)"
        )

    @property
    def shape(self) -> tuple[Any, ...] | None:
        """The shape of the node's one output; None when unknown rank, when the node has no
        value, and for a multi-output node (each output has its own: see :attr:`outputs`)."""
        aval = self.aval
        return aval.shape if isinstance(aval, AbstractValue) else None

    @property
    def dtype(self) -> np.dtype | None:
        """The dtype of the node's one output; None when the node has no value and for a
        multi-output node (each output has its own: see :attr:`outputs`)."""
        aval = self.aval
        return aval.dtype if isinstance(aval, AbstractValue) else None

    def __repr__(self) -> str:
        return f"<Node {self.name}: {self.op.value} -> {self.aval}>"


def subgraphs(node: Node) -> list[Graph]:
    """Graphs a node carries in its parameters (cond branches, while cond/body), in order."""
    params = node.params
    if not params.SUBGRAPH_FIELDS:  # most nodes (hot: every pass asks about every node)
        return []
    out: list[Graph] = []
    for value in params.values():
        if isinstance(value, Graph):
            out.append(value)
        elif isinstance(value, tuple) and value and all(isinstance(v, Graph) for v in value):
            out.extend(value)
    return out


def has_effects(node: Node) -> bool:
    """True for stateful ops and for control flow whose sub-graphs hold any: such nodes are
    never pruned, merged or reordered."""
    if node.op.is_stateful:
        return True
    return any(has_effects(n) for g in subgraphs(node) for n in g.nodes)


class Graph:
    """A traced function body: placeholders, ops in program order, and output nodes."""

    def __init__(self, name: str = "graph") -> None:
        self.name = name
        self.nodes: list[Node] = []
        self.inputs: list[Node] = []
        self.outputs: list[Node] = []
        self._names: set[str] = set()
        self._counters: dict[str, Iterator[int]] = {}
        #: Asked for the :attr:`Node.source` of each node made (the tracer installs one that
        #: finds the user's line; None: nodes made here have none).
        self.source_of: Callable[[], Any] | None = None

    # construction -----------------------------------------------------------------------------
    def unique_name(self, base: str) -> str:
        """``base`` if free, else ``base_1``, ``base_2``, ... (TensorFlow's naming)."""
        base = base or "node"
        if base not in self._names:
            self._names.add(base)
            return base
        counter = self._counters.setdefault(base, itertools.count(1))
        while True:
            name = f"{base}_{next(counter)}"
            if name not in self._names:
                self._names.add(name)
                return name

    def create_node(
        self,
        op: OpKind,
        args: Sequence[Any] = (),
        attrs: Mapping[str, Any] | None = None,
        name: str | None = None,
        aval: NodeAval | Literal[False] = False,
        meta: dict[str, Any] | None = None,
    ) -> Node:
        """Append a node; its aval is inferred by the op's abstract-eval rule unless given.
        ``attrs``: its parameters (a mapping of field name to value, or a value of the op's
        parameter class); ``meta``: its annotations (copied)."""
        params = make_params(op, attrs or {})
        args = tuple(args)
        if aval is False:
            aval = abstract_eval(op, params, [a.aval if isinstance(a, Node) else a for a in args])
        # (a placeholder is a parameter: the line calling the function did not make it)
        source = (
            self.source_of()
            if self.source_of is not None and op is not OpKind.PLACEHOLDER
            else None
        )
        node = Node(
            self.unique_name(name or op.value),
            op,
            args,
            params,
            aval,
            source,
            dict(meta) if meta else None,
        )
        self.nodes.append(node)
        if op is OpKind.PLACEHOLDER:
            self.inputs.append(node)
        return node

    def append_copy(self, node: Node, args: tuple[Any, ...]) -> Node:
        """Append a copy of ``node`` (of another graph) reading ``args``: its op, parameters,
        aval, source line and meta, under a name unique here."""
        new = Node(
            self.unique_name(node.name),
            node.op,
            args,
            node.params,
            node.aval,
            node.source,
            dict(node.meta),
        )
        self.nodes.append(new)
        if node.op is OpKind.PLACEHOLDER:
            self.inputs.append(new)
        return new

    def placeholder(
        self, name: str, shape: tuple[Any, ...] | None, dtype: Any, **attrs: Any
    ) -> Node:
        return self.create_node(
            OpKind.PLACEHOLDER, (), {"shape": shape, "dtype": np.dtype(dtype), **attrs}, name=name
        )

    def constant(self, value: Any, name: str = "Const", **attrs: Any) -> Node:
        value = np.array(value, copy=True)
        value.setflags(write=False)
        return self.create_node(OpKind.CONSTANT, (), {"value": value, **attrs}, name=name)

    # queries ---------------------------------------------------------------------------------
    def get_operations(self) -> list[Node]:
        """Every node in program order (TensorFlow's ``Graph.get_operations``)."""
        return list(self.nodes)

    def get_operation_by_name(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no operation named {name!r} in graph {self.name!r}")

    @property
    def captures(self) -> list[Node]:
        """Constant nodes holding arrays captured from outside the function at trace time."""
        return [n for n in self.nodes if n.op is OpKind.CONSTANT and n.params.captured]

    @property
    def variables(self) -> list[Any]:
        """The ``kx.Variable`` objects the graph reads or writes, in first-use order."""
        seen: dict[int, Any] = {}
        for node in self.nodes:
            if isinstance(node.params, VariableParams):
                seen.setdefault(id(node.params.variable), node.params.variable)
        return list(seen.values())

    def users(self) -> dict[Node, list[Node]]:
        """Map each node to the nodes reading it."""
        out: dict[Node, list[Node]] = {n: [] for n in self.nodes}
        for node in self.nodes:
            for inp in node.inputs:
                out[inp].append(node)
        return out

    def count_ops(self, group: OpGroup | None = None) -> int:
        """Number of non-source nodes, sub-graphs included (optionally only of one group)."""
        return sum(
            (n.op.group is not OpGroup.SOURCE and (group is None or n.op.group is group))
            + sum(g.count_ops(group) for g in subgraphs(n))
            for n in self.nodes
        )

    def rebuilt(
        self,
        keep: Iterable[Node] | None = None,
        substitute: Callable[[Graph, Node], Node | None] | None = None,
    ) -> Graph:
        """A new graph holding only ``keep`` (program order preserved, inputs always kept;
        None: every node). ``substitute(new_graph, node)`` may make a node of its own in the
        new graph to stand for ``node`` (returned), or return None to copy ``node``."""
        keep_set = set(self.nodes) if keep is None else set(keep) | set(self.inputs)
        mapping: dict[Node, Node] = {}
        g = Graph(self.name)
        for node in self.nodes:
            if node not in keep_set:
                continue
            made = substitute(g, node) if substitute is not None else None
            if made is not None:
                if made.source is None:
                    made.source = node.source
                mapping[node] = made
                continue
            args = tuple(mapping[a] if isinstance(a, Node) else a for a in node.args)
            mapping[node] = g.append_copy(node, args)
        g.outputs = [mapping[o] for o in self.outputs]
        return g

    # rendering (implemented in sibling modules; kept here as the public surface) -------------
    def __str__(self) -> str:
        from .printer import format_graph

        return format_graph(self)

    def __repr__(self) -> str:
        return f"<Graph {self.name}: {len(self.nodes)} nodes>"

    def as_graph_def(self) -> Any:
        from .graphdef import as_graph_def

        return as_graph_def(self)

    def to_dot(self) -> str:
        from .graphdef import to_dot

        return to_dot(self)

    def lint(self) -> None:
        from .lint import lint

        lint(self)
