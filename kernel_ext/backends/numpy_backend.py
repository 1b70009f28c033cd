"""The NumPy executor: a finished graph compiled to one straight-line Python function.

Like torch.fx's code generation, each node becomes one line calling the callable the reference
interpreter defines for it (``LOWER[op](node)``), bound as a global of the generated module.
Reading the inputs out of the call's arguments and building the returned structure are generated
too, so a cache-hit call runs no interpreter loop at all: the overhead over NumPy is one Python
call plus the op calls themselves.
"""

from __future__ import annotations

import keyword
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir import NDARRAY_METHODS, DynamicIndex, Graph, Node, OpGroup, OpKind
from ..ir.interpreter import LOWER
from ..ir.structure import TreeNode
from ..trace.zero_d import ARRAY, zero_d_kind
from .inplace import InplacePlan, Step, plan_inplace, write_in_place


def _own(value: Any) -> Any:
    """A returned array the caller may write to (copies read-only views only)."""
    return value if value.flags.writeable else value.copy()


def _result(value: Any) -> Any:
    """A result of unknown rank: 0-d as a NumPy scalar (a 0-d result whose form the trace
    knows is built by ``output_expr``), everything else as an array the caller owns."""
    if getattr(value, "ndim", 1) == 0:
        return value[()]
    return _own(value)


def _array0(value: Any) -> np.ndarray:
    """A 0-d result NumPy returns as an array: a fresh one (a buffer a later call reuses, or
    a NumPy scalar a backend computed, becomes the caller's own 0-d array)."""
    return np.array(value)


def _like_argument(argument: Any, value: Any) -> Any:
    """A 0-d result of ndarray methods applied to an argument: a NumPy scalar when the
    caller passed one (its methods return scalars), else a fresh 0-d array."""
    return np.array(value) if isinstance(argument, np.ndarray) else value[()]


def _asarray_argument(argument: Any, value: Any) -> Any:
    """``np.asarray`` of a 0-d argument: the caller's array itself, or a new 0-d array of
    the NumPy scalar the caller passed."""
    return argument if isinstance(argument, np.ndarray) else np.array(value)


def _as_computed(value: Any) -> Any:
    """An opaque call's 0-d result as NumPy's function returned it (a scalar or an array)."""
    return _own(value) if isinstance(value, np.ndarray) else value


class Namer:
    """The globals of one generated module: values the code refers to by a fresh name."""

    def __init__(self) -> None:
        self.globals: dict[str, Any] = {
            "_own": _own,
            "_result": _result,
            "np": np,
            "_array0": _array0,
            "_like_argument": _like_argument,
            "_as_computed": _as_computed,
            "_asarray_argument": _asarray_argument,
        }
        self._count = 0

    def bind(self, value: Any, prefix: str = "_g") -> str:
        """Bind ``value`` to a new global named ``<prefix><n>`` and return that name."""
        self._count += 1
        name = f"{prefix}{self._count}"
        self.globals[name] = value
        return name


class Scope:
    """Names of one graph's values in the generated code (sub-graphs get their own prefix)."""

    def __init__(self, prefix: str, names: dict[Node, str] | None = None) -> None:
        self.prefix = prefix
        self.names: dict[Node, str] = dict(names or {})
        self._taken: set[str] = set(self.names.values())

    def var(self, node: Node) -> str:
        name = self.names.get(node)
        if name is None:
            base = f"{self.prefix}" + "".join(ch if ch.isalnum() else "_" for ch in node.name)
            # Node names are unique, their identifier forms need not be: "svd/1" (an output
            # of the first svd) and "svd_1" (the second svd) both read svd_1.
            name, n = base, 0
            while name in self._taken:
                n += 1
                name = f"{base}__{n}"
            self._taken.add(name)
            self.names[node] = name
        return name


def access_expr(path: tuple, namer: Namer) -> str:
    """Source text reading one placeholder's value out of the call's parameters."""
    (_, index), *steps = path
    expr = f"p{index}"
    for kind, key in steps:
        if kind == "item":
            expr += f"[{int(key)}]"
        elif kind == "key":
            expr += f"[{namer.bind(key, '_key')}]"
        elif kind == "attr" and key.isidentifier() and not keyword.iskeyword(key):
            expr += f".{key}"
        else:
            expr = f"getattr({expr}, {namer.bind(key, '_key')})"
    return expr


def output_expr(
    tree: TreeNode, graph: Graph, namer: Namer, scope: Scope, written: frozenset[int] = frozenset()
) -> str:
    """Source text building the function's returned structure (``tree``) from the values of
    ``graph``'s outputs; arrays the caller may not own are copied (``_own``).

    ``written``: outputs the executor has already copied into the array argument they are
    written back to (the whole-graph function does so before it returns): their write-back
    is done, and returning that argument is returning the array itself."""
    rule = _TREE_EXPRS.get(tree.kind)
    if rule is not None:
        return rule(tree, graph, namer, scope, written)
    items = [output_expr(c, graph, namer, scope, written) for c in tree.children]
    build = _CONTAINER_EXPRS.get(tree.kind, _dataclass_expr)
    return build(tree, items, namer)


def _input_expr(
    tree: TreeNode, graph: Graph, namer: Namer, scope: Scope, written: frozenset[int]
) -> str:
    """An array argument the function updated in place, returned."""
    if tree.index in written:
        return access_expr(tree.value, namer)
    # the caller's array itself (updated in place by the writeback)
    value = output_expr(TreeNode("output", index=tree.index), graph, namer, scope)
    return f"{namer.bind(updated_argument, '_updated')}({access_expr(tree.value, namer)}, {value})"


def _output_expr(
    tree: TreeNode, graph: Graph, namer: Namer, scope: Scope, written: frozenset[int]
) -> str:
    """One output of ``graph``, in the form the trace recorded for it (``tree.value``)."""
    value = tree.value
    if value is np.ndarray:  # a 0-d array, as NumPy returns it
        return f"_array0({scope.var(graph.outputs[tree.index])})"
    if isinstance(value, str):  # an opaque call's own result
        return f"_as_computed({scope.var(graph.outputs[tree.index])})"
    if isinstance(value, tuple):
        return _argument_output_expr(tree, graph, namer, scope)
    if value is not None:  # returned as a Python number
        inner = output_expr(TreeNode("output", index=tree.index), graph, namer, scope)
        return f"{value.__name__}({inner})"
    return _array_output_expr(graph.outputs[tree.index], scope)


def _argument_output_expr(tree: TreeNode, graph: Graph, namer: Namer, scope: Scope) -> str:
    """A 0-d output whose form is an argument's (``tree.value``: ``(form, path)``)."""
    form, path = tree.value[0], tree.value[1]
    if form == "argument":
        return access_expr(path, namer)  # a 0-d argument returned: the caller's own
    if form == "asarray":
        return (
            f"_asarray_argument({access_expr(path, namer)}, {scope.var(graph.outputs[tree.index])})"
        )
    # as the argument is: per call
    return f"_like_argument({access_expr(path, namer)}, {scope.var(graph.outputs[tree.index])})"


def _array_output_expr(node: Node, scope: Scope) -> str:
    """An output returned as it is computed: a 0-d one as a NumPy scalar, a view copied."""
    v = scope.var(node)
    if node.shape is None:
        return f"_result({v})"
    if node.shape == ():
        return f"{v}[()]"
    return f"_own({v})" if node.op.may_alias else v


def _const_expr(
    tree: TreeNode, graph: Graph, namer: Namer, scope: Scope, written: frozenset[int]
) -> str:
    """A constant of the returned structure: small ones spelled out, others bound."""
    value = tree.value
    if value is None or isinstance(value, (bool, int, str)):
        return repr(value)
    return namer.bind(value, "_const")


def _argument_expr(
    tree: TreeNode, graph: Graph, namer: Namer, scope: Scope, written: frozenset[int]
) -> str:
    """An argument returned: the caller's own object, as it is."""
    return access_expr(tree.value, namer)


def _writeback_expr(
    tree: TreeNode, graph: Graph, namer: Namer, scope: Scope, written: frozenset[int]
) -> str:
    """The result (first child) after copying each new value into its argument, those in
    ``written`` left out (already copied)."""
    if written:
        kept = [
            (path, c)
            for path, c in zip(tree.value, tree.children[1:])
            if c.kind != "output" or c.index not in written
        ]
        if not kept:
            return output_expr(tree.children[0], graph, namer, scope, written)
        tree = TreeNode(
            "writeback",
            (tree.children[0], *(c for _, c in kept)),
            value=tuple(path for path, _ in kept),
        )
    items = [output_expr(c, graph, namer, scope, written) for c in tree.children]
    pairs = "".join(
        f", {access_expr(path, namer)}, {item}" for path, item in zip(tree.value, items[1:])
    )
    return f"{namer.bind(write_back, '_write_back')}({items[0]}{pairs})"


def _replay_expr(tree: TreeNode, items: list[str], namer: Namer) -> str:
    """The result (first item) after giving each container argument its new contents."""
    parts = "".join(
        f", {access_expr(path, namer)}, {kind_!r}, {item}"
        for (path, kind_), item in zip(tree.value, items[1:])
    )
    return f"{namer.bind(replay, '_replay')}({items[0]}{parts})"


def _tuple_expr(tree: TreeNode, items: list[str], namer: Namer) -> str:
    return "(" + "".join(i + ", " for i in items) + ")"


def _list_expr(tree: TreeNode, items: list[str], namer: Namer) -> str:
    return "[" + ", ".join(items) + "]"


def _namedtuple_expr(tree: TreeNode, items: list[str], namer: Namer) -> str:
    return f"{namer.bind(tree.container, '_type')}(" + ", ".join(items) + ")"


def _dict_expr(tree: TreeNode, items: list[str], namer: Namer) -> str:
    keys = [namer.bind(k, "_key") for k in tree.keys]
    return "{" + ", ".join(f"{k}: {i}" for k, i in zip(keys, items)) + "}"


def _dataclass_expr(tree: TreeNode, items: list[str], namer: Namer) -> str:
    """A dataclass, rebuilt field by field (frozen ones too), without calling __init__."""
    build = namer.bind(_make_dataclass_builder(tree.container, tree.keys), "_build")
    return f"{build}(" + ", ".join(items) + ")"


#: Tree kinds whose source is not built from their children's alone:
#: ``rule(tree, graph, namer, scope, written)``.
_TREE_EXPRS: dict[str, Callable[[TreeNode, Graph, Namer, Scope, frozenset[int]], str]] = {
    "input": _input_expr,
    "output": _output_expr,
    "const": _const_expr,
    "argument": _argument_expr,
    "writeback": _writeback_expr,
}
#: Containers, built from their children's source (``items``); any other kind is a
#: dataclass (:func:`_dataclass_expr`).
_CONTAINER_EXPRS: dict[str, Callable[[TreeNode, list[str], Namer], str]] = {
    "replay": _replay_expr,
    "tuple": _tuple_expr,
    "list": _list_expr,
    "namedtuple": _namedtuple_expr,
    "dict": _dict_expr,
}


def updated_argument(argument: Any, value: Any) -> Any:
    """What returning an argument the function updated in place gives: the caller's array
    itself (its contents are written back), as NumPy returns it; a NumPy scalar argument was
    only rebound (scalars are immutable), so its new value."""
    return argument if isinstance(argument, np.ndarray) else value


def write_back(result: Any, *pairs: Any) -> Any:
    """Copy each new value into its argument (``dst, src, dst, src, ...``), then return
    ``result``: an argument the function updated in place holds its new contents when the
    call returns, as in NumPy. A NumPy scalar argument is immutable, as in NumPy: ``x += 1``
    only rebound the name inside the function, so nothing is copied."""
    for i in range(0, len(pairs), 2):
        dst, src = pairs[i], pairs[i + 1]
        # (``src is dst``: the function's writes ran in place, in the caller's array itself)
        if isinstance(dst, np.ndarray) and src is not dst:
            np.copyto(dst, src)
    return result


def replay(result: Any, *triples: Any) -> Any:
    """Give each container argument its new contents (``dst, kind, contents, ...``; contents
    as a dict: list index or dict key or attribute name -> value), then return ``result``.
    A dict keeps the positions of the keys it still has, as eager assignments keep them."""
    for i in range(0, len(triples), 3):
        dst, kind, contents = triples[i : i + 3]
        if kind == "list":
            dst[:] = list(contents.values())
        elif kind == "dict":
            for key in [k for k in dst if k not in contents]:
                del dst[key]
            for key, value in contents.items():
                dst[key] = value
        else:
            for name in [n for n in vars(dst) if n not in contents]:
                object.__delattr__(dst, name)
            for name, value in contents.items():
                object.__setattr__(dst, name, value)
    return result


def written_back_inputs(graph: Graph, tree: TreeNode) -> frozenset[Node]:
    """The inputs of ``graph`` whose argument the call writes its new contents back to: the
    executor may write into such an argument in place, as the eager function does."""
    paths: set[tuple] = set()

    def walk(t: TreeNode) -> None:
        if t.kind == "writeback":
            paths.update(t.value)
        for child in t.children or ():
            walk(child)

    walk(tree)
    # (not 0-d inputs: the caller may pass a NumPy scalar, which cannot be written into;
    # eagerly such a write lands in a new array and the scalar stays as it was)
    return frozenset(n for n in graph.inputs if n.attrs.get("path") in paths and n.shape != ())


def _make_dataclass_builder(cls: type, names: tuple) -> Callable[..., Any]:
    def build(*values: Any) -> Any:
        obj: Any = object.__new__(cls)
        for name, value in zip(names, values):
            object.__setattr__(obj, name, value)
        return obj

    return build


def _binary_operator(node: Node, args: list[str]) -> bool:
    """Is ``node`` an operator's op on two operands, at least one of them a traced value?"""
    return bool(
        node.op.operator
        and not node.params
        and len(args) == 2
        and isinstance(node.args[0], Node) | isinstance(node.args[1], Node)
    )


#: Ops with an emitter method of their own: ``method(node, var, args, indent)``.
_OWN_EMITTERS: dict[OpKind, str] = {
    OpKind.COND: "_emit_cond",
    OpKind.WHILE: "_emit_while",
    OpKind.GET_OUTPUT: "_emit_get_output",
}


class Emitter:
    """Writes straight-line Python for a graph; control flow becomes inline ``if``/``while``
    blocks (no call per branch or iteration, so loops cost what a hand-written loop costs)."""

    def __init__(self, namer: Namer) -> None:
        self.namer = namer
        self.lines: list[str] = []
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
        self, graph: Graph, scope: Scope, indent: str, free_temporaries: bool = False
    ) -> list[str]:
        """Emit ``graph``'s ops; returns the expressions of its outputs.

        With ``free_temporaries`` each value is deleted right after its last use, so large
        intermediates are freed (and their memory reused) as eager NumPy would.
        """
        last_use: dict[Node, int] = {}
        if free_temporaries:
            for i, node in enumerate(graph.nodes):
                for a in node.inputs:
                    last_use[a] = i
            for out in graph.outputs:
                last_use.pop(out, None)
        dead_after: dict[int, list[Node]] = {}
        for node, i in last_use.items():
            dead_after.setdefault(i, []).append(node)
        for i, node in enumerate(graph.nodes):
            self.emit_node(node, scope, indent)
            dead = dead_after.get(i)
            if dead:
                self.lines.append(f"{indent}del {', '.join(scope.var(n) for n in dead)}")
        return [scope.var(o) for o in graph.outputs]

    def emit_node(self, node: Node, scope: Scope, indent: str) -> None:
        if node.op is OpKind.PLACEHOLDER:
            if node not in scope.names:
                self.lines.append(
                    f"{indent}{scope.var(node)} = {access_expr(node.attrs['path'], self.namer)}"
                )
            return
        v = scope.var(node)
        if node.op is OpKind.CONSTANT:
            self.lines.append(f"{indent}{v} = {self.namer.bind(node.attrs['value'], '_const')}")
            return
        args = [scope.var(a) if isinstance(a, Node) else self.literal(a) for a in node.args]
        own = _OWN_EMITTERS.get(node.op)
        if own is not None:
            # (looked up by name: a subclass's override of the method applies)
            getattr(self, own)(node, v, args, indent)
            return
        lines = self._python_syntax(node, v, args)
        if lines is None:
            lines = [self._lowered_call(node, v, args)]
        self.lines.extend(indent + line for line in lines)

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
        if op.operator and not node.attrs and len(args) == 1:
            return [f"{v} = {op.operator}{args[0]}"]
        if op is OpKind.GETITEM and not node.params.keys() - {"index"}:
            # NumPy's own indexing, spelled out: no lowering call, no index tuple to build
            index = self.index_source(node.attrs["index"], args[1:], node.args[1:])
            return [f"{v} = {args[0]}[{index}]"]
        if self._setitem_in_place(node):
            index = self.index_source(node.attrs["index"], args[2:], node.args[2:])
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

    def _emit_get_output(self, node: Node, v: str, args: list[str], indent: str) -> None:
        self.lines.append(f"{indent}{v} = {args[0]}[{node.attrs['index']}]")

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
                    and operand.aval is not None
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

    def _emit_cond(self, node: Node, v: str, args: list[str], indent: str) -> None:
        pred, operands = args[0], args[1:]
        for keyword_, graph in zip(("if", "else"), node.attrs["branches"]):
            head = f"{indent}if {pred}:" if keyword_ == "if" else f"{indent}else:"
            self.lines.append(head)
            scope = self.new_scope(dict(zip(graph.inputs, operands)))
            outs = self.emit_graph(graph, scope, indent + "    ")
            self.lines.append(f"{indent}    {v} = ({''.join(o + ', ' for o in outs)})")

    def _emit_while(self, node: Node, v: str, args: list[str], indent: str) -> None:
        n = node.attrs["n_vars"]
        cond_graph, body_graph = node.attrs["cond"], node.attrs["body"]
        self._scopes += 1
        loop_vars = [f"l{self._scopes}_{i}" for i in range(n)]
        captures = args[n:]
        # a slot whose body writes its buffer in place starts from a private copy
        copies = self.inplace.entry_copies.get(node, frozenset())
        inits = [f"{a}.copy()" if i in copies else a for i, a in enumerate(args[:n])]
        if loop_vars:
            self.lines.append(f"{indent}{', '.join(loop_vars)}, = {', '.join(inits)},")
        self.lines.append(f"{indent}while True:")
        inner = indent + "    "
        scope = self.new_scope(dict(zip(cond_graph.inputs, loop_vars + captures)))
        (test,) = self.emit_graph(cond_graph, scope, inner)
        self.lines.append(f"{inner}if not {test}:")
        self.lines.append(f"{inner}    break")
        scope = self.new_scope(dict(zip(body_graph.inputs, loop_vars + captures)))
        outs = self.emit_graph(body_graph, scope, inner)
        if loop_vars:
            self.lines.append(f"{inner}{', '.join(loop_vars)}, = {', '.join(outs)},")
        self.lines.append(f"{indent}{v} = ({''.join(x + ', ' for x in loop_vars)})")


def generate_source(graph: Graph, tree: TreeNode, n_params: int) -> tuple[str, dict[str, Any]]:
    """Python source of ``run(p0, ..., pN)`` for ``graph`` and the globals it needs."""
    namer = Namer()
    emitter = Emitter(namer)
    scope = Scope("v_")
    params = ", ".join(f"p{i}" for i in range(n_params))
    emitter.lines.append(f"def run({params}):")
    emitter.plan_writes(graph, tree)
    emitter.emit_graph(graph, scope, "    ", free_temporaries=True)
    emitter.lines.append(f"    return {output_expr(tree, graph, namer, scope)}")
    return "\n".join(emitter.lines) + "\n", namer.globals


def compile_graph(
    graph: Graph, tree: TreeNode, n_params: int, filename: str = "<kx-graph>"
) -> tuple[Callable[..., Any], str]:
    """Compile ``graph`` into a Python function of the call's parameters; returns it and its
    source (kept for ``ConcreteFunction.source`` and debugging)."""
    source, namespace = generate_source(graph, tree, n_params)
    code = compile(source, filename, "exec")
    exec(code, namespace)
    return namespace["run"], source


__all__ = [
    "Emitter",
    "Namer",
    "Scope",
    "access_expr",
    "compile_graph",
    "generate_source",
    "output_expr",
    "written_back_inputs",
]
