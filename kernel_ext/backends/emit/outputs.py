"""The returned structure in generated Python source: reading inputs out of the call's
arguments (``access_expr``), building the result tree (``output_expr``), and the run-time
helpers the generated code calls (write-back of updated arguments, 0-d result forms)."""

from __future__ import annotations

import keyword
from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir import Graph, Node
from ...ir.structure import TreeNode
from .names import Namer, Scope


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
        return v if node in scope.scalars else f"{v}[()]"
    return f"_own({v})" if node.op.may_alias and node not in scope.owned else v


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
    return frozenset(n for n in graph.inputs if n.params.path in paths and n.shape != ())


def _make_dataclass_builder(cls: type, names: tuple) -> Callable[..., Any]:
    def build(*values: Any) -> Any:
        obj: Any = object.__new__(cls)
        for name, value in zip(names, values):
            object.__setattr__(obj, name, value)
        return obj

    return build
