"""Seed conformance, core engine: concrete functions and the graphs inside them.

Seeds: 000/001 "Introduction to graphs and tf.function", 002 "Better performance with
tf.function" ("获取具体函数", "获取计算图"), 003 the tracing article (graph.get_operations,
captures, variables, inputs/outputs), 004 the hybrid-programming chapter.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import kernel_ext as kx

f32 = np.float32
i32 = np.int32


def _op_types(graph) -> list[str]:
    return [str(op.type).lower() for op in graph.get_operations()]


def _make_double():
    @kx.function
    def double(a):
        return a + a

    return double


def test_get_concrete_function_and_call(capsys):
    # seed 002 "获取具体函数": double.get_concrete_function(...) then call it (positional / keyword)
    @kx.function
    def double(a):
        print("Tracing with", a)
        return a + a

    double_floats = double.get_concrete_function(np.float32(1.0))
    assert len(capsys.readouterr().out.splitlines()) == 1  # get_concrete_function only traces
    r1 = double_floats(np.float32(1.5))
    r2 = double_floats(a=np.float32(2.5))
    np.testing.assert_array_equal(r1, 3.0)
    np.testing.assert_array_equal(r2, 5.0)
    assert np.asarray(r1).dtype == np.float32
    assert capsys.readouterr().out == ""


def test_get_concrete_function_shares_the_cache():
    # seed 002 "获取具体函数": each trace creates one concrete function; the call cache is shared
    double = _make_double()
    double(np.int32(1))
    cf = double.get_concrete_function(np.int32(3))
    assert double.experimental_get_tracing_count() == 1
    double.get_concrete_function(kx.TensorSpec(shape=[], dtype=np.int32))
    assert double.experimental_get_tracing_count() == 1
    assert cf(np.int32(4)) == 8


def test_get_concrete_function_from_tensor_spec():
    # seed 002: double.get_concrete_function(tf.TensorSpec(shape=[], dtype=...)) then call it
    double = _make_double()
    double_from_spec = double.get_concrete_function(kx.TensorSpec(shape=[], dtype=np.float32))
    np.testing.assert_array_equal(double_from_spec(np.float32(3.0)), 6.0)


def test_concrete_function_printing():
    # seed 002: print(double_strings) -> "ConcreteFunction double(a) Args: a: ... Returns: ..."
    double = _make_double()
    cf = double.get_concrete_function(np.float32(1.0))
    text = str(cf)
    assert "double" in text
    assert re.search(r"\ba\b", text)
    assert "float32" in text
    sig = cf.pretty_printed_signature()
    assert isinstance(sig, str) and "double" in sig and "float32" in sig


def test_structured_input_signature_and_outputs():
    # seed 002: structured_input_signature == ((TensorSpec(shape=(), dtype, name='a'),), {})
    double = _make_double()
    cf = double.get_concrete_function(np.float32(1.0))
    args, kwargs = cf.structured_input_signature
    assert kwargs == {}
    assert len(args) == 1
    (spec,) = args
    assert isinstance(spec, kx.TensorSpec)
    assert tuple(spec.shape) == ()
    assert np.dtype(spec.dtype) == np.float32
    assert spec.name == "a"
    out = cf.structured_outputs
    assert tuple(out.shape) == ()
    assert np.dtype(out.dtype) == np.float32


def test_concrete_function_rejects_incompatible_types():
    # seed 002/004 "对不兼容的类型使用具体跟踪会引发错误": wrong dtype or shape -> error (TypeError)
    double = _make_double()
    double_floats = double.get_concrete_function(np.float32(1.0))
    with pytest.raises(TypeError):
        double_floats(np.int32(1))
    with pytest.raises(TypeError):
        double_floats(np.ones(2, dtype=f32))
    assert double.experimental_get_tracing_count() == 1  # a concrete function never retraces


def test_concrete_function_with_bound_python_argument():
    # seed 002: square = pow.get_concrete_function(a=TensorSpec(None, float32), b=2)
    @kx.function
    def pow(a, b):
        return a**b

    square = pow.get_concrete_function(a=kx.TensorSpec(None, np.float32), b=2)
    assert "pow" in str(square)
    assert square(np.float32(10.0)) == 100
    assert square(np.float32(10.0), b=2) == 100
    # unknown rank (shape=None) accepts any rank
    np.testing.assert_array_equal(square(np.full((2, 2), 3.0, f32)), np.full((2, 2), 9.0, f32))
    with pytest.raises(TypeError) as excinfo:
        square(np.float32(10.0), b=3)
    assert re.search(r"\bb\b", str(excinfo.value))
    assert pow.experimental_get_tracing_count() == 1


def test_graph_def_nodes_of_double():
    # seed 002 "获取计算图":
    #   for node in graph.as_graph_def().node: print(f'{node.input} -> {node.name}')
    double = _make_double()
    graph = double.get_concrete_function(np.float32(1.0)).graph
    nodes = list(graph.as_graph_def().node)
    assert nodes[0].name == "a"  # the input node is named after its parameter
    assert list(nodes[0].input) == []
    assert any(list(n.input) == ["a", "a"] for n in nodes)
    names = [n.name for n in nodes]
    assert len(names) == len(set(names))
    for n in nodes:  # every input names an earlier node
        assert all(i.split(":")[0] in names for i in n.input)
        assert isinstance(n.op, str)


def test_graph_def_text():
    # seed 000/001: print(tf_simple_relu.get_concrete_function(...).graph.as_graph_def())
    @kx.function
    def my_relu(x):
        return np.maximum(x, 0)

    text = str(my_relu.get_concrete_function(np.int32(1)).graph.as_graph_def())
    assert "node {" in text
    assert 'name: "x"' in text
    assert "op:" in text
    assert "int32" in text.lower()


def test_graph_operations_inputs_outputs():
    # seed 003 "图表示": simple_computation;
    # get_operations / inputs / outputs / captures / variables
    @kx.function
    def simple_computation(a, b):
        c = np.matmul(a, b)
        d = np.add(c, 1.0)
        return np.maximum(d, 0)  # tf.nn.relu

    input_spec = (
        kx.TensorSpec(shape=[2, 2], dtype=np.float32),
        kx.TensorSpec(shape=[2, 2], dtype=np.float32),
    )
    concrete_func = simple_computation.get_concrete_function(*input_spec)
    graph = concrete_func.graph
    assert list(graph.captures) == []
    assert list(graph.variables) == []

    ops = graph.get_operations()
    by_name = {op.name: op for op in ops}
    assert "a" in by_name and "b" in by_name
    assert "placeholder" in str(by_name["a"].type).lower()
    types = _op_types(graph)
    assert any("matmul" in t for t in types)
    assert any("maximum" in t for t in types)
    for op in ops:
        assert isinstance(op.name, str)
        list(op.inputs)
        list(op.outputs)
    assert len(graph.inputs) == 2
    assert len(graph.outputs) == 1

    a = np.array([[1.0, -2.0], [3.0, 4.0]], dtype=f32)
    b = np.array([[1.0, 0.0], [0.0, -1.0]], dtype=f32)
    expected = np.maximum(np.matmul(a, b) + 1.0, 0)
    np.testing.assert_allclose(concrete_func(a, b), expected)


def test_graph_captures_variables():
    # seed 003 "状态管理": a tf.Variable used inside the function shows up in graph.variables
    var = kx.Variable(np.float32(2.0))

    @kx.function
    def scaled(x):
        return x * var

    graph = scaled.get_concrete_function(np.float32(1.0)).graph
    assert any(v is var for v in graph.variables)


def test_graph_to_dot():
    # seed 003: the simple_computation graph drawn as a DOT digraph
    @kx.function
    def simple_computation(a, b):
        return np.maximum(np.matmul(a, b) + 1.0, 0)

    cf = simple_computation.get_concrete_function(np.ones((2, 2), f32), np.ones((2, 2), f32))
    dot = cf.graph.to_dot()
    assert isinstance(dot, str)
    assert "digraph" in dot and "->" in dot


def test_python_list_loop_unrolls_graph_grows():
    # seed 002 "在 Python 数据上循环" / 004 measure_graph_size: train(small_data) vs train(big_data)
    def measure_graph_size(f, *args):
        g = f.get_concrete_function(*args).graph
        return len(g.as_graph_def().node)

    @kx.function
    def train(dataset):
        loss = np.int32(0)
        for x, y in dataset:
            loss += np.abs(y - x)  # Some dummy computation.
        return loss

    one = np.int32(1)
    small_data = [(one, one)] * 3
    big_data = [(one, one)] * 10
    small = measure_graph_size(train, small_data)
    big = measure_graph_size(train, big_data)
    assert big > small
    assert big - small >= 7 * 2  # at least a subtract and an abs-or-add per extra element
    assert train(small_data) == 0
    two = np.int32(2)
    assert train([(one, two)] * 10) == 10
