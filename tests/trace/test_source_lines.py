"""Every graph node knows the line of the user's code that made it (kernel_ext.trace.source_lines).

The line is recorded at trace time and survives the optimisation passes, so the optimised graph
each executor runs still says which line each op came from; graph loops and branches name the
``while``/``if`` statement, their bodies' ops their own lines, and a gradient's ops the line of
the forward op they differentiate. Results stay NumPy's.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.ir.graph import subgraphs
from kernel_ext.trace.source_lines import SourceLine

PATHS = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}


def _walk(graph):
    for node in graph.nodes:
        yield node
        for sub in subgraphs(node):
            yield from _walk(sub)


def _line_of(fn, text: str) -> int:
    """The file line of the statement of ``fn`` that holds ``text`` (found by reading the
    source, so the test does not hard-code line numbers)."""
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, line in enumerate(lines) if text in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def layer(x, w1, b1, w2):
    h = np.maximum(x @ w1 + b1, 0)
    out = np.tanh(h @ w2)
    return out.sum(axis=1)


@pytest.mark.parametrize("path", PATHS)
def test_every_op_of_the_optimised_graph_names_the_line_that_made_it(path):
    rng = np.random.default_rng(0)
    x, w1, b1, w2 = (rng.standard_normal(s) for s in ((4, 3), (3, 5), (5,), (5, 2)))
    args = (x, w1, b1, w2)
    before = [a.copy() for a in args]
    f = kx.function(layer, **PATHS[path])
    got = f(*args)
    want = layer(*args)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype and got.shape == want.shape
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)
    graph = f.concrete_functions[0].graph
    expected = {
        "maximum": "h = np.maximum",
        "add": "h = np.maximum",
        "matmul": None,
        "tanh": "out = np.tanh",
        "sum": "return out.sum",
    }
    ops = [n for n in _walk(graph) if n.op.value != "placeholder"]
    assert ops
    file = inspect.getsourcefile(layer)
    for node in ops:
        assert isinstance(node.source, SourceLine), node
        assert node.source.file == file
        lines = {_line_of(layer, t) for t in ("h = np.maximum", "out = np.tanh", "return out.sum")}
        assert node.source.line in lines, node
        assert (
            node.source.text
            == inspect.getsource(layer)
            .splitlines()[node.source.line - _line_of(layer, "def layer")]
            .strip()
        )
        text = expected.get(node.op.value)
        if text is not None:
            assert node.source.line == _line_of(layer, text), node
    # the parameters are no line's
    assert all(n.source is None for n in graph.inputs)


def looped(x, n):
    total = np.zeros_like(x)
    i = 0
    while i < n:
        total = total + np.sin(x) * i
        i += 1
    if total.sum() > 0:
        total = total * 2.0
    else:
        total = -total
    return total


@pytest.mark.parametrize("path", ["numpy", "auto"])
def test_graph_loops_and_branches_name_their_statement_and_their_body_ops_their_lines(path):
    f = kx.function(looped, **PATHS[path])
    x = np.linspace(-1.0, 2.0, 5)
    for n in (np.int64(0), np.int64(3)):
        got = f(x, n)
        want = looped(x, n)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    graph = f.concrete_functions[0].graph
    nodes = list(_walk(graph))
    loops = [n for n in nodes if n.op.value == "while"]
    branches = [n for n in nodes if n.op.value == "cond"]
    assert loops and branches
    assert {n.source.line for n in loops} == {_line_of(looped, "while i < n")}
    # (a graph loop whose count is unknown is guarded by a cond of its own statement)
    assert {n.source.line for n in branches} == {
        _line_of(looped, "if total.sum() > 0"),
        _line_of(looped, "while i < n"),
    }
    body = [
        m for loop in loops for sub in subgraphs(loop) for m in sub.nodes if m.op.value == "sin"
    ]
    assert body and {m.source.line for m in body} == {
        _line_of(looped, "total = total + np.sin(x) * i")
    }
    negated = [
        m for b in branches for sub in subgraphs(b) for m in sub.nodes if m.op.value == "negative"
    ]
    assert negated and negated[0].source.line == _line_of(looped, "total = -total")


def loss_and_grad(w, x):
    with kx.GradientTape() as tape:
        tape.watch(w)
        hidden = np.tanh(x @ w)
        loss = np.sum(hidden * hidden)
    return loss, tape.gradient(loss, w)


def test_a_gradients_ops_name_the_line_of_the_forward_op_they_differentiate():
    rng = np.random.default_rng(1)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    f = kx.function(loss_and_grad, backend="numpy")
    loss, grad = f(w, x)
    h = np.tanh(x @ w)
    np.testing.assert_allclose(loss, np.sum(h * h))
    np.testing.assert_allclose(grad, x.T @ (2 * h * (1 - h * h)))
    graph = f.get_concrete_function(w, x).graph
    backward = [
        n
        for n in _walk(graph)
        if n.meta.get("backward") and n.op.value not in ("placeholder", "constant")
    ]
    assert backward
    forward_lines = {
        _line_of(loss_and_grad, "hidden = np.tanh"),
        _line_of(loss_and_grad, "loss = np.sum"),
    }
    assert {n.source.line for n in backward} <= forward_lines
    assert _line_of(loss_and_grad, "tape.gradient") not in {n.source.line for n in backward}


def test_a_trace_after_a_gradient_names_its_own_lines():
    rng = np.random.default_rng(2)
    w, x = rng.standard_normal((3, 2)), rng.standard_normal((4, 3))
    kx.function(loss_and_grad, backend="numpy")(w, x)
    f = kx.function(layer, backend="numpy")
    args = (x, w, np.ones(2), np.ones((2, 5)))
    np.testing.assert_array_equal(f(*args), layer(*args))
    lines = {n.source.line for n in f.concrete_functions[0].graph.nodes if n.source}
    assert lines and lines <= {
        _line_of(layer, t) for t in ("h = np.maximum", "out = np.tanh", "return out.sum")
    }
