"""The graph is readable in a 250 px sidebar, in a real JupyterLab.

A 40-node graph first shows at a readable size and "Fit" fits the sidebar's width; zoom (buttons,
Ctrl + wheel) and pan are d3-zoom's; "Open in main area" shows the same view in a tab; every node
says what it computes with its literal operands (``multiply(·, 2)``, ``multiply(·, 20)`` for
``np.tanh(x) * 2 * n`` with ``n=20``); and the monitor's own picture under the cell fits the cell.
Screenshots: ``graph-1-sidebar-fit.png``, ``graph-2-zoomed.png``, ``graph-3-main-area.png``,
``graph-4-monitor-fit.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

SCALED = "%%tffunction\ndef scaled(x, n):\n    return np.tanh(x) * 2 * n"
# (a loop over a Python list unrolls: a graph of 37 ops; range(12) would be one graph loop)
BIG = (
    "%%tffunction\ndef big(x):\n    y = x\n    for i in [None] * 12:\n"
    "        y = np.tanh(y) * 1.5 + x\n    return y.sum()"
)


def scale(svg: Any) -> float:
    return float(svg.get_attribute("data-scale"))


def test_graph_fits_zooms_opens_in_main_area_and_shows_literals(
    page: Any, lab: Any, ui: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    ui.write_notebook(
        lab.root,
        "graphs.ipynb",
        [
            ui.LOAD + "\n" + ui.IMPORTS,
            SCALED,
            "scaled(np.ones(3, np.float32), 20)",
            BIG,
            "big(np.ones(8))",
        ],
    )
    ui.open_notebook(page, lab, "graphs.ipynb")
    panel = ui.open_sidebar(page)
    expect(panel.locator(".jp-kx-status")).to_have_text(ui.NOT_LOADED)
    for index in range(5):
        ui.run_cell(page, index, count=index + 1)

    # Literal operands, no internal names.
    scaled = ui.card(page, "scaled")
    scaled.locator(".jp-kx-signature").first.click()
    ops = scaled.locator("svg.jp-kx-graph-svg .jp-kx-node-op")
    expect(ops.filter(has_text="multiply(·, 2)")).to_have_count(1)
    expect(ops.filter(has_text="multiply(·, 20)")).to_have_count(1)
    # (The IR's name stays in the tooltip only.)
    assert not any("multiply_1" in text for text in ops.all_text_contents())
    scaled.locator(".jp-kx-signature").first.click()  # hide it again

    # The big graph first shows at a readable size (labels never under 11 px: scale 1 at
    # least, the rest panned to); "Fit" fits the column: scaled down, nothing wider.
    big = ui.card(page, "big")
    big.locator(".jp-kx-signature").first.click()
    svg = big.locator("svg.jp-kx-graph-svg")
    expect(svg.locator("g.jp-kx-node")).not_to_have_count(0)
    page.wait_for_function(
        "el => el && Number(el.getAttribute('data-scale')) >= 1", arg=svg.element_handle()
    )
    big.locator('button[aria-label^="Fit"]').click()
    page.wait_for_function(
        "el => el && Number(el.getAttribute('data-scale')) < 1", arg=svg.element_handle()
    )
    fitted = scale(svg)
    content = svg.locator("g.jp-kx-graph-content").bounding_box()
    viewport = svg.bounding_box()
    panel_box = panel.bounding_box()
    assert viewport["width"] <= panel_box["width"]
    assert content["width"] <= viewport["width"] + 1, (content, viewport)
    page.screenshot(path=str(artifacts / "graph-1-sidebar-fit.png"))

    # Zoom with the button, then with Ctrl + wheel over the picture (d3-zoom).
    big.locator('button[aria-label^="Zoom in"]').click()
    page.wait_for_function(
        "([el, k]) => Number(el.getAttribute('data-scale')) > k * 1.4",
        arg=[svg.element_handle(), fitted],
    )
    zoomed = scale(svg)
    box = svg.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 40)
    page.keyboard.down("Control")
    page.mouse.wheel(0, 200)
    page.keyboard.up("Control")
    page.wait_for_function(
        "([el, k]) => Number(el.getAttribute('data-scale')) < k", arg=[svg.element_handle(), zoomed]
    )
    # Drag pans: the content moves with the mouse.
    before = svg.locator("g.jp-kx-graph-content").get_attribute("transform")
    page.mouse.move(box["x"] + 30, box["y"] + 60)
    page.mouse.down()
    page.mouse.move(box["x"] + 80, box["y"] + 120, steps=5)
    page.mouse.up()
    assert svg.locator("g.jp-kx-graph-content").get_attribute("transform") != before
    page.screenshot(path=str(artifacts / "graph-2-zoomed.png"))
    big.locator('button[aria-label^="Fit"]').click()
    page.wait_for_function(
        "([el, k]) => Math.abs(Number(el.getAttribute('data-scale')) - k) < 0.01",
        arg=[svg.element_handle(), fitted],
    )

    # The same view in the main area.
    big.locator(".jp-kx-open-main").click()
    tab = page.locator(".jp-kx-graph-main")
    expect(tab).to_be_visible()
    expect(page.locator(".lm-TabBar-tab.lm-mod-current", has_text="Graph: big")).to_be_visible()
    main_svg = tab.locator("svg.jp-kx-graph-svg")
    expect(main_svg.locator("g.jp-kx-node")).to_have_count(svg.locator("g.jp-kx-node").count())
    # first readable (11 px labels at least), then "Fit" fits the tab both ways
    page.wait_for_function(
        "el => Number(el.getAttribute('data-scale')) >= 1", arg=main_svg.element_handle()
    )
    tab.locator('button[aria-label^="Fit"]').click()
    page.wait_for_function(
        "el => Number(el.getAttribute('data-scale')) < 1", arg=main_svg.element_handle()
    )
    main_box = main_svg.bounding_box()
    inner = main_svg.locator("g.jp-kx-graph-content").bounding_box()
    assert inner["height"] <= main_box["height"] + 1 and inner["width"] <= main_box["width"] + 1
    page.screenshot(path=str(artifacts / "graph-3-main-area.png"))
    assert page.problems == []  # type: ignore[attr-defined]


def test_the_monitor_graph_fits_the_cell(page: Any, lab: Any, ui: Any, artifacts: Path) -> None:
    from playwright.sync_api import expect

    ui.write_notebook(
        lab.root, "monitor_graph.ipynb", [ui.LOAD + "\n" + ui.IMPORTS, BIG, "big(np.ones(8))"]
    )
    ui.open_notebook(page, lab, "monitor_graph.ipynb")
    panel = ui.open_sidebar(page)
    expect(panel.locator(".jp-kx-status")).to_have_text(ui.NOT_LOADED)
    for index in range(3):
        ui.run_cell(page, index, count=index + 1)
    monitor = page.locator(".jp-Notebook .jp-CodeCell").nth(1).locator(".kx-monitor").first
    monitor.get_by_role("tab", name="graph").click()
    picture = monitor.locator("svg.kx-graph")
    expect(picture).to_be_visible()
    expect(picture).to_contain_text("multiply(·, 1.5)")
    expect(monitor.locator(".kx-graph-note")).to_contain_text("to zoom and pan")
    output = page.locator(".jp-Notebook .jp-CodeCell").nth(1).locator(".jp-OutputArea-output")
    assert picture.bounding_box()["width"] <= output.first.bounding_box()["width"]
    picture.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "graph-4-monitor-fit.png"))
    assert page.problems == []  # type: ignore[attr-defined]
