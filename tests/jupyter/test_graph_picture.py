"""The monitor's graph picture at real size: a 100+ node training step reads under the cell.

Above ``GROUP_ABOVE`` nodes the picture draws one box per source line of each pass (as the
sidebar's graph view starts, grouped by line), its rows and legend wrapped so the picture fits
a cell at 1:1: its 11 px labels are drawn at 11 px, never shrunk to fit.
"""

from __future__ import annotations

import re

import numpy as np

import kernel_ext as kx
from kernel_ext.jupyter import inspector, render

rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, (64, 2))
Y = (np.sin(3 * X[:, :1]) * X[:, 1:] > 0).astype(np.float64)


def make_train_step():
    params = [
        kx.Variable(rng.normal(size=(2, 32)) * 0.5, name="w1"),
        kx.Variable(np.zeros(32), name="b1"),
        kx.Variable(rng.normal(size=(32, 1)) * 0.2, name="w2"),
        kx.Variable(np.zeros(1), name="b2"),
    ]
    optimizer = kx.optimizers.Adam(learning_rate=0.05)

    def train_step(x, y):
        w1, b1, w2, b2 = params
        with kx.GradientTape() as tape:
            logits = np.tanh(x @ w1 + b1) @ w2 + b2
            loss = np.mean(np.logaddexp(0.0, logits) - y * logits)
        grads = tape.gradient(loss, params)
        optimizer.apply_gradients(zip(grads, params))
        return loss

    return kx.function(train_step, backend="numpy")


def _natural_width(svg: str) -> float:
    return float(re.search(r'viewBox="0 0 (\d+) (\d+)"', svg).group(1))


def test_a_training_step_is_drawn_one_box_per_line_and_fits_a_cell_at_full_size():
    step = make_train_step()
    first = step(X, Y)
    assert np.isfinite(first) and np.ndim(first) == 0
    cf = step.concrete_functions[0]
    nodes = cf.graph.get_operations()
    assert len(nodes) >= 100
    svg = render.graph_svg(cf)
    boxes = svg.count("<rect") - svg.count('width="12" height="12"')  # less the legend keys
    assert boxes < len(nodes) / 3, boxes
    # one box per line of each pass: the forward line, its gradient, the optimizer's line
    texts = re.findall(r'font-weight="bold" fill="#212529">([^<]*)<', svg)
    assert any(t.startswith("line ") and "logits = np.tanh(x @ w1" in t for t in texts), texts
    assert any(t.startswith("line ") and "optimizer.apply_gradients" in t for t in texts)
    assert "ops · gradient" in svg
    # fits a notebook cell (≥ 660 px wide) without scaling: labels stay 11 px
    assert _natural_width(svg) <= render.PICTURE_WIDTH + 20
    assert "font-size: 11px" in svg
    # the same groups as the sidebar's default (by line): the payload's lines of each pass
    payload = inspector.graph_payload(cf)
    lines = {
        (bool(n.get("backward")), n["line"])
        for n in payload["nodes"]
        if n.get("line") and not n.get("inside")
    }
    grouped = re.findall(r'<g class="kx-graph-line"><title>([^\n<]*)', svg)
    assert len(grouped) <= len(lines)
    assert {t.split(":")[0] for t in grouped} <= {line.split(", ")[-1] for _, line in lines}


def test_a_small_graph_keeps_one_box_per_node():
    f = kx.function(lambda x: np.tanh(x * 2.0) + 1.0, backend="numpy")
    x = np.linspace(0, 1, 4)
    np.testing.assert_array_equal(f(x), np.tanh(x * 2.0) + 1.0)
    svg = render.graph_svg(f.concrete_functions[0])
    assert "kx-graph-line" not in svg and "tanh(·)" in svg


def test_kernels_split_across_lines_are_counted_not_listed_in_a_grouped_picture():
    step = make_train_step()
    step(X, Y)
    cf = step.concrete_functions[0]
    names = [n.name for n in cf.graph.get_operations() if n.op.value != "placeholder"]

    class Executable:  # kernels of three ops each, spanning lines
        backend = "numba_cpu"
        segments = [
            {"label": f"kernel {k}", "nodes": names[k * 3 : k * 3 + 3]}
            for k in range(len(names) // 3)
        ]

    svg = render.graph_svg(type("CF", (), {"graph": cf.graph, "executable": Executable()})())
    listed = re.findall(r">kernel \d+ \[numba_cpu\]<", svg)
    assert len(listed) < len(Executable.segments) / 4
    assert f"{len(Executable.segments) - len(listed)} compiled kernels inside the lines" in svg
    assert _natural_width(svg) <= render.PICTURE_WIDTH + 20
