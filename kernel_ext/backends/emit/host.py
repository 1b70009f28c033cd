"""``Emitter``: graph nodes as straight-line Python statements, each calling the callable the
reference interpreter defines for its op (``LOWER[op](node)``), with ``cond``/``while`` as
inline blocks. The NumPy executor is this emitter alone; the fused executor and the kernel
runners extend it."""

from __future__ import annotations

import operator
from typing import Any, cast

from ...ir import NDARRAY_METHODS, AbstractValue, DynamicIndex, Graph, Node, OpGroup, OpKind
from ...ir.interpreter import LOWER
from ...ir.params import (
    CondParams,
    ConstantParams,
    IndexParams,
    PlaceholderParams,
    WhileParams,
)
from ...ir.structure import TreeNode
from ...trace.zero_d import ARRAY, zero_d_kind
from ..inplace import InplacePlan, Step, plan_inplace, write_in_place
from .names import Namer, Scope
from .outputs import access_expr, written_back_inputs
from .source import Source


def _binary_operator(node: Node, args: list[str]) -> bool:
    """Is ``node`` an operator's op on two operands, at least one of them a traced value?"""
    return bool(
        node.op.operator
        and not node.params
        and len(args) == 2
        and isinstance(node.args[0], Node) | isinstance(node.args[1], Node)
    )


#: Ops with an emitter method of their own: ``method(node, var, args, out)``.
_OWN_EMITTERS: dict[OpKind, str] = {
    OpKind.COND: "_emit_cond",
    OpKind.WHILE: "_emit_while",
    OpKind.GET_OUTPUT: "_emit_get_output",
}


class Emitter:
    """Writes straight-line Python for a graph; control flow becomes inline ``if``/``while``
    blocks (no call per branch or iteration, so loops cost what a hand-written loop costs).
    Each method writes its statements to the :class:`Source` it is given (``out``)."""

    def __init__(self, namer: Namer) -> None:
        self.namer = namer
        self._scopes = 0
        #: The ``setitem`` ops run in place and the loop slots copied on entry
        #: (:mod:`.inplace`); empty until :meth:`plan_writes` runs.
        self.inplace = InplacePlan()

    def steps(self, graph: Graph) -> list[Step]:
        """The order this emitter runs ``graph`` in: one ``(produced, read)`` pair a step."""
        return [((node,), node.inputs) for node in graph.nodes]

    def plan_writes(self, graph: Graph, tree: TreeNode | None = None) -> None:
        """Decide which writes of ``graph`` (and its sub-graphs) run in place; with the
        output ``tree``, also into the arguments the call writes back to (as NumPy does)."""
        owned = written_back_inputs(graph, tree) if tree is not None else frozenset()
        self.inplace = plan_inplace(graph, self.steps, owned)

    def new_scope(self, inputs: dict[Node, str]) -> Scope:
        self._scopes += 1
        return Scope(f"s{self._scopes}_", inputs)

    def emit_graph(
        self, graph: Graph, scope: Scope, out: Source, free_temporaries: bool = False
    ) -> list[str]:
        """Emit ``graph``'s ops to ``out``; returns the expressions of its outputs.

        With ``free_temporaries`` each value is deleted right after its last use, so large
        intermediates are freed (and their memory reused) as eager NumPy would.
        """
        last_use: dict[Node, int] = {}
        if free_temporaries:
            for i, node in enumerate(graph.nodes):
                for a in node.inputs:
                    last_use[a] = i
            for output in graph.outputs:
                last_use.pop(output, None)
        dead_after: dict[int, list[Node]] = {}
        for node, i in last_use.items():
            dead_after.setdefault(i, []).append(node)
        for i, node in enumerate(graph.nodes):
            self.emit_node(node, scope, out)
            dead = dead_after.get(i)
            if dead:
                out.line(f"del {', '.join(scope.var(n) for n in dead)}")
        return [scope.var(o) for o in graph.outputs]

    def emit_node(self, node: Node, scope: Scope, out: Source) -> None:
        """Write the statements computing ``node`` to ``out``."""
        if node.op is OpKind.PLACEHOLDER:
            if node not in scope.names:
                path = cast("PlaceholderParams", node.params).path
                out.line(f"{scope.var(node)} = {access_expr(path, self.namer)}")
            return
        v = scope.var(node)
        if node.op is OpKind.CONSTANT:
            value = cast("ConstantParams", node.params).value
            out.line(f"{v} = {self.namer.bind(value, '_const')}")
            return
        args = [scope.var(a) if isinstance(a, Node) else self.literal(a) for a in node.args]
        own = _OWN_EMITTERS.get(node.op)
        if own is not None:
            # (looked up by name: a subclass's override of the method applies)
            getattr(self, own)(node, v, args, out)
            return
        lines = self._python_syntax(node, v, args)
        if lines is None:
            lines = [self._lowered_call(node, v, args)]
        out.extend(lines)

    def _python_syntax(self, node: Node, v: str, args: list[str]) -> list[str] | None:
        """The lines computing ``node`` with Python's own syntax (an operator, an ndarray
        method, NumPy's indexing), or None when it takes a call of its lowering."""
        op = node.op
        # The op's exact Python operator (same ufunc, NEP 50 included) skips the ufunc call's
        # argument parsing: a large share of a small op's cost, all of it in scalar loops.
        if _binary_operator(node, args):
            return [f"{v} = {args[0]} {op.operator} {args[1]}"]
        if op.group is OpGroup.REDUCTION and op in NDARRAY_METHODS:
            return [self._reduction_method(node, v, args)]
        if op.operator and not node.params and len(args) == 1:
            return [f"{v} = {op.operator}{args[0]}"]
        if op is OpKind.GETITEM and not node.params.keys() - {"index"}:
            # NumPy's own indexing, spelled out: no lowering call, no index tuple to build
            template = cast("IndexParams", node.params).index
            index = self.index_source(template, args[1:], node.args[1:])
            return [f"{v} = {args[0]}[{index}]"]
        if self._setitem_in_place(node):
            template = cast("IndexParams", node.params).index
            index = self.index_source(template, args[2:], node.args[2:])
            return [f"{args[0]}[{index}] = {args[1]}", f"{v} = {args[0]}"]
        return None

    def _reduction_method(self, node: Node, v: str, args: list[str]) -> str:
        """A reduction as the ndarray/NumPy-scalar method of its name: np.sum & co. without
        their Python-level wrapper."""
        kwargs = ", ".join(
            f"{k}={self.namer.bind(val, '_arg')}"
            for k, val in node.params.items()
            if not ((k == "axis" and val is None) or (k == "keepdims" and not val))
        )
        return f"{v} = {args[0]}.{node.op.value}({kwargs})"

    def _setitem_in_place(self, node: Node) -> bool:
        """Is ``node`` a ``setitem`` of a static index planned to run in place?"""
        return (
            node.op is OpKind.SETITEM
            and node in self.inplace.writes
            and not node.params.keys() - {"index"}
        )

    def _lowered_call(self, node: Node, v: str, args: list[str]) -> str:
        """A call of the op's lowering (its in-place one when planned), bound as a global."""
        planned = node in self.inplace.writes or node in self.inplace.variables
        lower = write_in_place if planned else LOWER[node.op]
        fn = self.namer.bind(lower(node), f"_{node.op.value}")
        call = f"{fn}({', '.join(args)})"
        return f"{v} = {call}" if node.aval is not None else call

    def _emit_get_output(self, node: Node, v: str, args: list[str], out: Source) -> None:
        out.line(f"{v} = {args[0]}[{node.params.index}]")

    def index_source(self, template: tuple, dyn: list[str], nodes: Any = ()) -> str:
        """Source of the index tuple ``build_index(template, dyn)`` builds at run time.

        A traced integer (``nodes``: the index's operands) that stands for a NumPy or Python
        integer may be a 0-d array at run time (a loop index, a copy of one); NumPy would
        take that as an advanced index and copy where the program reads a view (a column
        ``A[:, j]`` that BLAS then sums in another order): it is passed as the integer."""

        def part(c: Any) -> str:
            if isinstance(c, DynamicIndex):
                operand = nodes[c.position - 1] if c.position <= len(nodes) else None
                if (
                    isinstance(operand, Node)
                    and isinstance(operand.aval, AbstractValue)
                    and operand.aval.shape == ()
                    and operand.aval.dtype.kind in "iu"
                    and zero_d_kind(operand, None) is not ARRAY
                ):
                    return f"{self.namer.bind(operator.index, '_index')}({dyn[c.position - 1]})"
                return dyn[c.position - 1]
            if isinstance(c, slice) and any(
                isinstance(p, DynamicIndex) for p in (c.start, c.stop, c.step)
            ):
                return f"slice({part(c.start)}, {part(c.stop)}, {part(c.step)})"
            if c is None or isinstance(c, (bool, int)):
                return repr(c)
            return self.namer.bind(c, "_ix")

        return "(" + "".join(part(c) + ", " for c in template) + ")"

    def literal(self, value: Any) -> str:
        """Source text of a literal operand: small ones spelled out, others bound."""
        if value is None or isinstance(value, (bool, int)):
            return f"({value!r})"  # parenthesised: -1 ** x is not (-1) ** x
        return self.namer.bind(value, "_lit")  # floats/complex: the exact object, no repr

    def _emit_cond(self, node: Node, v: str, args: list[str], out: Source) -> None:
        pred, operands = args[0], args[1:]
        branches = cast("CondParams", node.params).branches
        for head, graph in zip((f"if {pred}:", "else:"), branches):
            with out.block(head) as body:
                scope = self.new_scope(dict(zip(graph.inputs, operands)))
                outs = self.emit_graph(graph, scope, body)
                body.line(f"{v} = ({''.join(o + ', ' for o in outs)})")

    def _emit_while(self, node: Node, v: str, args: list[str], out: Source) -> None:
        loop = cast("WhileParams", node.params)
        n = loop.n_vars
        cond_graph, body_graph = loop.cond, loop.body
        self._scopes += 1
        loop_vars = [f"l{self._scopes}_{i}" for i in range(n)]
        captures = args[n:]
        # a slot whose body writes its buffer in place starts from a private copy
        copies = self.inplace.entry_copies.get(node, frozenset())
        inits = [f"{a}.copy()" if i in copies else a for i, a in enumerate(args[:n])]
        if loop_vars:
            out.line(f"{', '.join(loop_vars)}, = {', '.join(inits)},")
        with out.block("while True:") as body:
            scope = self.new_scope(dict(zip(cond_graph.inputs, loop_vars + captures)))
            (test,) = self.emit_graph(cond_graph, scope, body)
            with body.block(f"if not {test}:") as done:
                done.line("break")
            scope = self.new_scope(dict(zip(body_graph.inputs, loop_vars + captures)))
            outs = self.emit_graph(body_graph, scope, body)
            if loop_vars:
                body.line(f"{', '.join(loop_vars)}, = {', '.join(outs)},")
        out.line(f"{v} = ({''.join(x + ', ' for x in loop_vars)})")
