"""Graph IR: construction, verifier, printer, GraphDef/DOT export, reference interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.ir import (
    AbstractValue,
    Graph,
    GraphLintError,
    Node,
    OpGroup,
    OpKind,
    interpret,
    lint,
)


def small_graph() -> Graph:
    g = Graph("f")
    x = g.placeholder("x", (2, 3), np.float32)
    y = g.create_node(OpKind.MULTIPLY, (x, 2.0))
    s = g.create_node(OpKind.SUM, (y,), {"axis": 1})
    g.outputs = [s]
    return g


def test_op_kinds_have_groups_and_ufuncs():
    assert OpKind.ADD.group is OpGroup.ELEMENTWISE and OpKind.ADD.ufunc is np.add
    assert OpKind.SUM.group is OpGroup.REDUCTION and OpKind.SUM.ufunc is None
    assert OpKind.PRINT.is_stateful and not OpKind.ADD.is_stateful
    assert OpKind.MATMUL.type_name == "MatMul" and OpKind.COND.type_name == "If"
    assert all(isinstance(k.group, OpGroup) for k in OpKind)


def test_abstract_eval_follows_numpy_promotion():
    g = Graph("p")
    i8 = g.placeholder("i", (3,), np.int8)
    f32 = g.placeholder("f", (3,), np.float32)
    assert g.create_node(OpKind.ADD, (i8, 1)).aval.dtype == np.int8  # weak int
    assert g.create_node(OpKind.ADD, (f32, 1.0)).aval.dtype == np.float32  # weak float
    assert g.create_node(OpKind.ADD, (i8, 1.5)).aval.dtype == np.float64
    assert g.create_node(OpKind.ADD, (i8, f32)).aval.dtype == np.float32
    assert g.create_node(OpKind.SQRT, (i8,)).aval.dtype == np.float16
    assert g.create_node(OpKind.LESS, (i8, f32)).aval.dtype == np.bool_


def test_lint_accepts_traced_graphs_and_rejects_broken_ones():
    g = small_graph()
    lint(g)
    bad = small_graph()
    bad.nodes.reverse()
    with pytest.raises(GraphLintError, match="not defined before use"):
        lint(bad)
    dup = small_graph()
    dup.nodes[1].name = dup.nodes[2].name
    with pytest.raises(GraphLintError, match="duplicate name"):
        lint(dup)
    stray = small_graph()
    stray.outputs = [Node("ghost", OpKind.CONSTANT, (), {"value": np.ones(1)}, None)]
    with pytest.raises(GraphLintError, match="not a node of the graph"):
        lint(stray)


def test_printer_is_stable():
    expected = (
        "graph f(x: float32[2, 3]) {\n"
        "  %multiply = multiply(%x, 2.0) : float32[2, 3]\n"
        "  %sum = sum(%multiply, axis=1) : float32[2]\n"
        "  return (%sum)\n}"
    )
    assert str(small_graph()) == expected
    assert str(small_graph()) == str(small_graph())


def test_interpreter_runs_the_graph():
    (out,) = interpret(small_graph(), [np.ones((2, 3), np.float32)])
    np.testing.assert_array_equal(out, [6, 6])
    assert out.dtype == np.float32


def test_graph_def_names_inputs_after_parameters():
    @kx.function
    def f(x, y):
        return np.tanh(x @ y)

    gd = f.get_concrete_function(np.ones((2, 2)), np.ones((2, 2))).graph.as_graph_def()
    nodes = {n.name: n for n in gd.node}
    assert nodes["x"].op == "Placeholder" and nodes["y"].op == "Placeholder"
    assert nodes["matmul"].input == ["x", "y"]
    assert nodes["tanh"].input == ["matmul"]
    text = str(gd)
    assert 'name: "tanh"' in text and 'input: "matmul"' in text and "DT_FLOAT64" in text


def test_get_operations_exposes_name_type_inputs_outputs():
    f = kx.function(lambda x: np.exp(x) + 1)
    graph = f.get_concrete_function(np.ones(3, np.float32)).graph
    ops = graph.get_operations()
    assert [op.name for op in ops] == ["x", "exp", "add"]
    assert [op.type for op in ops] == [OpKind.PLACEHOLDER, OpKind.EXP, OpKind.ADD]
    assert ops[2].inputs == (ops[1],)
    assert ops[2].outputs[0].shape == (3,) and ops[2].outputs[0].dtype == np.float32
    assert graph.inputs == [ops[0]] and graph.outputs == [ops[2]]


def test_to_dot_lists_nodes_and_edges():
    f = kx.function(lambda x: np.exp(x) + 1)
    dot = f.get_concrete_function(np.ones(3)).graph.to_dot()
    assert dot.startswith('digraph "<lambda>" {')
    assert '"x" -> "exp";' in dot and '"exp" -> "add";' in dot and "float64[3]" in dot


def test_graph_captures_and_variables():
    table = np.arange(3.0)
    v = kx.Variable(1.0, name="bias")
    f = kx.function(lambda x: x * table + v)
    graph = f.get_concrete_function(np.ones(3)).graph
    assert len(graph.captures) == 1
    np.testing.assert_array_equal(graph.captures[0].params["value"], table)
    assert graph.variables == [v]
    text = f.pretty_printed_concrete_signatures()
    assert "constant, frozen at trace time" in text and "bias: float64[] (kx.Variable" in text


def _eigh_graph() -> Graph:
    def eigh(x):
        return np.linalg.eigh(x)

    return kx.function(eigh).get_concrete_function(np.eye(3, dtype=np.float32)).graph


def test_outputs_of_a_multi_output_node_are_each_output_value():
    graph = _eigh_graph()
    node = next(n for n in graph.nodes if n.op is OpKind.EIGH)
    assert node.multi_output
    assert node.outputs == (
        AbstractValue((3,), np.dtype(np.float32)),
        AbstractValue((3, 3), np.dtype(np.float32)),
    )
    readers = [n for n in graph.nodes if n.op is OpKind.GET_OUTPUT]
    assert [r.outputs for r in readers] == [(a,) for a in node.outputs]


def test_outputs_of_single_and_valueless_nodes():
    g = Graph("g")
    x = g.placeholder("x", (2,), np.float64)
    printed = g.create_node(OpKind.PRINT, (x,), aval=None)
    assert x.outputs == (AbstractValue((2,), np.dtype(np.float64)),) and not x.multi_output
    assert printed.outputs == () and not printed.multi_output


def test_value_aval_is_the_one_output():
    x = Graph("g").placeholder("x", (2, None), np.int32)
    assert x.value_aval == AbstractValue((2, None), np.dtype(np.int32))


def test_value_aval_raises_type_error_naming_a_multi_output_node():
    g = Graph("g")
    x = g.placeholder("x", (3,), np.float32)
    pair = (AbstractValue((3,), np.dtype(np.float32)), AbstractValue((), np.dtype(np.intp)))
    node = g.create_node(OpKind.UNIQUE, (x,), name="uniq", aval=pair)
    with pytest.raises(TypeError, match=r"node 'uniq' \(unique\) has 2 outputs"):
        _ = node.value_aval


def test_value_aval_raises_type_error_for_a_node_without_value():
    g = Graph("g")
    printed = g.create_node(OpKind.PRINT, (g.placeholder("x", (), np.float32),), aval=None)
    with pytest.raises(TypeError, match=r"node 'print' \(print\) has no value"):
        _ = printed.value_aval


def test_shape_and_dtype_are_none_for_a_multi_output_node():
    node = next(n for n in _eigh_graph().nodes if n.op is OpKind.EIGH)
    assert node.shape is None and node.dtype is None


def _string_keyed_parameter_uses(tree) -> list[int]:
    """Lines of ``tree`` that read or write a node's parameters by string key: ``X.attrs["k"]``,
    ``X.params["k"]``, ``params["k"]`` (loads, stores, deletions), ``.get("k")``, or a mutating
    method. A presence test (``"initial" in params``) is what the mapping is for, and a dict
    being built for a new node (a local named ``attrs``) is not a node's parameters."""
    import ast

    def is_params(node) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr in ("attrs", "params")) or (
            isinstance(node, ast.Name) and node.id == "params"
        )

    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and is_params(node.value)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr
            in ("get", "update", "pop", "popitem", "setdefault", "clear", "__setitem__")
            and is_params(node.func.value)
        ):
            lines.append(node.lineno)
    return sorted(set(lines))


def test_no_module_reads_or_writes_a_parameter_by_string_key():
    import ast
    from pathlib import Path

    package = Path(kx.__file__).parent
    found = {
        f"{path.relative_to(package)}:{line}"
        for path in package.rglob("*.py")
        for line in _string_keyed_parameter_uses(ast.parse(path.read_text()))
    }
    assert not found, (
        "a parameter read by string key (read the field: node.params.axis; a change is "
        f"params.replace(axis=...)): {sorted(found)}"
    )
    sample = ast.parse(
        "n.attrs['k'] = 1\nn.params.update(a=1)\ndel n.attrs['k']\nx = params['k']\n"
        "y = n.params.get('k')\nd['k'] = 1\nz = 'k' in params\nattrs['k'] = 2\n"
    )
    assert _string_keyed_parameter_uses(sample) == [1, 2, 3, 4, 5]  # not d, in, a new dict
