"""The NumPy executor: a finished graph compiled to one straight-line Python function.

Like torch.fx's code generation, each node becomes one line calling the callable the reference
interpreter defines for it (``LOWER[op](node)``), bound as a global of the generated module.
Reading the inputs out of the call's arguments and building the returned structure are generated
too, so a cache-hit call runs no interpreter loop at all: the overhead over NumPy is one Python
call plus the op calls themselves.
"""

from __future__ import annotations

import keyword
from typing import Any, Callable

import numpy as np

from ..ir import Graph, Node, OpGroup, OpKind
from ..ir.interpreter import LOWER
from ..trace.pytree import TreeNode

# Ops whose result may be a read-only view of a variable's or a constant's storage.
_MAY_ALIAS = {OpGroup.SHAPE, OpGroup.INDEXING, OpGroup.SOURCE, OpGroup.STATEFUL}


def _own(value: Any) -> Any:
    """A returned array the caller may write to (copies read-only views only)."""
    return value if value.flags.writeable else value.copy()


def _result(value: Any) -> Any:
    """0-d results come back as NumPy scalars, everything else as arrays (unknown rank)."""
    if getattr(value, "ndim", 1) == 0:
        return value[()]
    return _own(value)


class _Namer:
    def __init__(self) -> None:
        self.globals: dict[str, Any] = {"_own": _own, "_result": _result, "np": np}
        self._count = 0

    def bind(self, value: Any, prefix: str = "_g") -> str:
        self._count += 1
        name = f"{prefix}{self._count}"
        self.globals[name] = value
        return name


def _var(node: Node) -> str:
    base = "".join(ch if ch.isalnum() else "_" for ch in node.name)
    return f"v_{base}"


def _access(path: tuple, namer: _Namer) -> str:
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


def _output_expr(tree: TreeNode, graph: Graph, namer: _Namer) -> str:
    kind = tree.kind
    if kind == "output":
        node = graph.outputs[tree.index]
        v = _var(node)
        if node.aval.shape is None:
            return f"_result({v})"
        if node.aval.shape == ():
            return f"{v}[()]"
        return f"_own({v})" if node.op.group in _MAY_ALIAS else v
    if kind == "const":
        value = tree.value
        if value is None or isinstance(value, (bool, int, str)):
            return repr(value)
        return namer.bind(value, "_const")
    items = [_output_expr(c, graph, namer) for c in tree.children]
    if kind == "tuple":
        return "(" + "".join(i + ", " for i in items) + ")"
    if kind == "list":
        return "[" + ", ".join(items) + "]"
    if kind == "namedtuple":
        return f"{namer.bind(tree.container, '_type')}(" + ", ".join(items) + ")"
    if kind == "dict":
        keys = [namer.bind(k, "_key") for k in tree.keys]
        return "{" + ", ".join(f"{k}: {i}" for k, i in zip(keys, items)) + "}"
    # dataclass: rebuilt field by field (frozen ones too), without calling __init__
    build = namer.bind(_make_dataclass_builder(tree.container, tree.keys), "_build")
    return f"{build}(" + ", ".join(items) + ")"


def _make_dataclass_builder(cls: type, names: tuple) -> Callable[..., Any]:
    def build(*values: Any) -> Any:
        obj = object.__new__(cls)
        for name, value in zip(names, values):
            object.__setattr__(obj, name, value)
        return obj
    return build


def generate_source(graph: Graph, tree: TreeNode, n_params: int) -> tuple[str, dict[str, Any]]:
    """Python source of ``run(p0, ..., pN)`` for ``graph`` and the globals it needs."""
    namer = _Namer()
    params = ", ".join(f"p{i}" for i in range(n_params))
    lines = [f"def run({params}):"]
    for node in graph.nodes:
        v = _var(node)
        if node.op is OpKind.PLACEHOLDER:
            lines.append(f"    {v} = {_access(node.attrs['path'], namer)}")
            continue
        if node.op is OpKind.CONSTANT:
            lines.append(f"    {v} = {namer.bind(node.attrs['value'], '_const')}")
            continue
        fn = namer.bind(LOWER[node.op](node), f"_{node.op.value}")
        args = []
        for a in node.args:
            if isinstance(a, Node):
                args.append(_var(a))
            elif a is None or isinstance(a, (bool, int)):
                args.append(repr(a))
            else:
                args.append(namer.bind(a, "_lit"))  # floats/complex: exact object, no repr
        call = f"{fn}({', '.join(args)})"
        lines.append(f"    {v} = {call}" if node.aval is not None else f"    {call}")
    lines.append(f"    return {_output_expr(tree, graph, namer)}")
    return "\n".join(lines) + "\n", namer.globals


def compile_graph(graph: Graph, tree: TreeNode, n_params: int,
                  filename: str = "<kx-graph>") -> tuple[Callable[..., Any], str]:
    """Compile ``graph`` into a Python function of the call's parameters; returns it and its
    source (kept for ``ConcreteFunction.source`` and debugging)."""
    source, namespace = generate_source(graph, tree, n_params)
    code = compile(source, filename, "exec")
    exec(code, namespace)
    return namespace["run"], source
