"""A graph reads as what it computes, the same in the sidebar and monitor.

``np.tanh(x) * 2 * n`` with ``n=20``: the ``2`` and the ``20`` are inline literals of the IR's
``multiply`` nodes (``Node.args``), invisible in a drawing of edges; and the IR's unique names
(``multiply_1``) mean nothing to a reader. Every node says its op with its literal operands
(``multiply(·, 2)``), its value (dtype and shape), and what kind of node it is (input, opaque
NumPy call, random draw, graph loop); the monitor's picture fits the cell's width.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.jupyter import inspector, nodetext, render
from kernel_ext.jupyter import protocol as p


def scaled(x, n):
    return np.tanh(x) * 2 * n


@pytest.fixture
def traced():
    fn = kx.function(scaled, backend="numpy")
    fn(np.ones(3, np.float32), 20)
    return fn.concrete_functions[0]


def test_literal_operands_are_part_of_the_node_text(traced):
    texts = [nodetext.node_text(n) for n in traced.graph.get_operations()]
    assert texts == ["x", "tanh(·)", "multiply(·, 2)", "multiply(·, 20)"]


def test_the_sidebar_payload_says_text_kind_note_and_output(traced):
    graph = inspector.graph_payload(traced)
    assert p.check_kernel_message(p.graph_message("f", "0", graph)) == []
    nodes = graph["nodes"]
    assert [n["text"] for n in nodes] == ["x", "tanh(·)", "multiply(·, 2)", "multiply(·, 20)"]
    assert [n["kind"] for n in nodes] == ["input", "op", "op", "op"]
    assert [n["output"] for n in nodes] == [False, False, False, True]
    # No internal name is needed to read it (the label keeps the IR's name for old sidebars).
    assert not any("multiply_1" in n["text"] for n in nodes)


def test_attributes_read_as_numpy_keywords_without_defaults():
    fn = kx.function(lambda x: x.sum(axis=0), autograph=False, backend="numpy")
    fn(np.ones((2, 3)))
    (total,) = [n for n in fn.concrete_functions[0].graph.get_operations() if n.op.value == "sum"]
    assert nodetext.node_text(total) == "sum(·, axis=0)"


def test_opaque_calls_and_draws_show_their_arguments_and_kind():
    # np.i0 has no op of its own: it runs as NumPy at each call.
    def noisy(x):
        return np.i0(x)[:3] + np.random.rand(3)

    fn = kx.function(noisy, backend="numpy")
    fn(np.ones(3))
    nodes = {n["text"]: n for n in inspector.graph_payload(fn.concrete_functions[0])["nodes"]}
    i0 = nodes["np.i0(·)"]
    assert i0["kind"] == "opaque" and "runs NumPy at each call" in i0["note"]
    draw = nodes["np.random.rand(3)"]
    assert draw["kind"] == "random" and "draws at each call" in draw["note"]


def test_a_graph_loop_is_marked_with_where_it_was_written():
    def loop(x, n):
        for _ in range(n):
            x = x * 0.5
        return x

    fn = kx.function(loop, backend="numpy")
    fn(np.ones(2), np.int64(3))
    payload = inspector.graph_payload(fn.concrete_functions[0])
    (node,) = [n for n in payload["nodes"] if n["op"] == "while"]
    assert node["text"] == "while loop" and node["kind"] == "loop"
    assert node["note"].startswith("loop at ")


def test_long_texts_are_clipped_with_an_ellipsis():
    assert nodetext.clip("a" * 100).endswith("…")
    assert len(nodetext.clip("a" * 100)) == nodetext.MAX_TEXT


def test_the_monitor_picture_fits_the_width_and_shows_literals(traced):
    svg = render.graph_svg(traced)
    # Fit to the cell's width, never enlarged beyond the natural size.
    opening = svg[: svg.index(">")]
    assert 'width="100%"' in opening and "height: auto" in opening
    natural = re.search(r'viewBox="0 0 (\d+) (\d+)"', opening)
    assert natural and f"max-width: {natural.group(1)}px" in opening
    assert "height=" not in opening.replace("height: auto", "")
    assert "multiply(·, 2)" in svg and "multiply(·, 20)" in svg
    assert ">multiply_1<" not in svg
    html = render.graph_html(svg)
    assert "to zoom and pan" in html and "Traced functions sidebar" in html


def test_the_monitor_legend_uses_the_theme_ink(traced):
    # Text drawn on the cell's background follows the theme (dark grey on dark was
    # unreadable); text on the light node boxes keeps a fixed dark ink.
    svg = render.graph_svg(traced)
    legend = re.findall(r'<text x="[\d.]+" y="[\d.]+"( style="[^"]*")?>(input|output)<', svg)
    assert legend and all("--jp-ui-font-color1" in style for style, _ in legend)
    assert 'fill="#212529">multiply(·, 2)<' in svg
