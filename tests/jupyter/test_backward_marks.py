"""The graph views tell a gradient's forward and backward nodes apart: the backward pass
marks what it makes (``_backward``), which the SVG picture colours and lists in its legend
and the sidebar's payload labels, while printers and CSE ignore it."""

from __future__ import annotations

from typing import Any

import numpy as np

import kernel_ext as kx
from kernel_ext.jupyter import inspector
from kernel_ext.jupyter.render import graph_svg


def make_step() -> Any:
    w = kx.Variable(np.full((3, 2), 0.5))

    def step(x: Any, y: Any) -> Any:
        with kx.GradientTape() as tape:
            loss = np.mean((np.tanh(x @ w) - y) ** 2)
        w.assign_sub(0.1 * tape.gradient(loss, w))
        return loss

    fn = kx.function(step, backend="numpy")
    fn(np.ones((4, 3)), np.zeros((4, 2)))
    return fn


def test_the_backward_pass_marks_its_nodes_and_leaves_the_forward_ones_unmarked() -> None:
    graph = make_step().concrete_functions[0].graph
    marked = {n.op.value for n in graph.nodes if n.meta.get("backward")}
    unmarked = {n.op.value for n in graph.nodes if not n.meta.get("backward")}
    assert {"tanh", "mean", "read_variable"} <= unmarked
    assert "transpose" in marked and "matmul" in marked  # x.T @ g
    assert "backward=" not in str(graph)  # the printer shows what nodes compute, not notes


def test_graph_svg_colours_backward_nodes_and_adds_a_legend_entry() -> None:
    fn = make_step()
    svg = graph_svg(fn.concrete_functions[0])
    assert "backward (gradient) op" in svg
    assert svg.count("(backward pass)") == sum(
        bool(n.meta.get("backward")) for n in fn.concrete_functions[0].graph.nodes
    )
    plain = kx.function(lambda x: np.tanh(x) * 2.0, backend="numpy")
    plain(np.ones(2))
    assert "backward" not in graph_svg(plain.concrete_functions[0])


def test_sidebar_payload_labels_backward_nodes() -> None:
    payload = inspector.graph_payload(make_step().concrete_functions[0])
    labels = {n["op"]: [] for n in payload["nodes"]}
    for n in payload["nodes"]:
        labels[n["op"]].append(n["label"])
    assert all(not label.endswith("· backward") for label in labels["tanh"])
    assert any(label.endswith("· backward") for label in labels["transpose"])


def test_cse_merges_a_backward_node_with_its_forward_twin() -> None:
    def f(x: Any) -> Any:
        y = np.sin(x)
        return y + kx.grad(lambda v: np.sum(np.sin(v) * np.cos(v)))(x)

    fn = kx.function(f, backend="numpy")
    x = np.array([0.2, 0.7])
    np.testing.assert_allclose(fn(x), np.sin(x) + np.cos(2 * x))
    ops = [n.op.value for n in fn.concrete_functions[0].graph.nodes]
    assert ops.count("sin") == 1  # cos's rule makes a backward sin(x): merged with y
