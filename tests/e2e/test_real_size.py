"""The notebook face at real size, in a real JupyterLab: the gradients example's graph (103+
nodes) readable in the sidebar and the main area (labels never under 11 px in the first view,
a search that centres a node, wheel zoom about the cursor), the float advice that keeps
``0.1`` a float, ``05_cell_functions.ipynb``'s Run All keeping its three monitors, and one
unit format in every view.

Screenshots (``tests/artifacts/``): ``gradients-graph-{cell,sidebar,main}-{light,dark}.png``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).parents[2] / "examples"

#: Every label's drawn size in px (its font size times the scale shown), of the nodes and
#: groups inside the viewport.
LABEL_SIZES = """svg => {
  const k = Number(svg.getAttribute('data-scale'));
  const view = svg.getBoundingClientRect();
  return [...svg.querySelectorAll('.jp-kx-node text, .jp-kx-cluster-label')]
    .filter(t => { const r = t.getBoundingClientRect();
                   return r.right > view.left && r.left < view.right &&
                          r.bottom > view.top && r.top < view.bottom; })
    .map(t => parseFloat(getComputedStyle(t).fontSize) * k);
}"""


def _content_point(svg: Any, x: float, y: float) -> tuple[float, float]:
    """The drawing's coordinates under the page point (x, y)."""
    transform = svg.locator("g.jp-kx-graph-content").get_attribute("transform")
    numbers = [float(n) for n in re.findall(r"-?[\d.]+(?:e-?\d+)?", transform)]
    tx, ty, k = numbers[0], numbers[1], numbers[2] if len(numbers) > 2 else 1.0
    box = svg.bounding_box()
    return (x - box["x"] - tx) / k, (y - box["y"] - ty) / k


def _ready(page: Any, ui: Any) -> Any:
    """The sidebar open, once the kernel is connected (it then asks for %load_ext)."""
    from playwright.sync_api import expect

    panel = ui.open_sidebar(page)
    expect(panel.locator(".jp-kx-status")).to_have_text(ui.NOT_LOADED, timeout=120_000)
    return panel


def _gradients(page: Any, lab: Any, ui: Any, name: str = "06_gradients.ipynb") -> Any:
    """The gradients example (as *name*: a fresh kernel), its first three code cells run;
    the sidebar open."""
    shutil.copy(EXAMPLES / "06_gradients.ipynb", lab.root / name)
    ui.open_notebook(page, lab, name)
    panel = _ready(page, ui)
    for index in range(3):
        ui.run_cell(page, index, count=index + 1)
    return panel


def test_gradients_graph_is_readable_searchable_and_zooms_about_the_cursor(
    page: Any, lab: Any, ui: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    _gradients(page, lab, ui)
    ui.set_theme(page, dark=False)  # (an earlier test may have left the dark theme on)
    card = ui.card(page, "train_step")
    card.locator(".jp-kx-signature").first.click()
    svg = card.locator("svg.jp-kx-graph-svg")
    expect(svg.locator("g.jp-kx-node").first).to_be_visible()
    nodes = int(re.search(r"(\d+) nodes", svg.get_attribute("aria-label")).group(1))
    assert nodes >= 100, nodes
    # The first view: every label inside the viewport drawn at 11 px or more.
    page.wait_for_function(
        "el => Number(el.getAttribute('data-scale')) >= 1", arg=svg.element_handle()
    )
    sizes = svg.evaluate(LABEL_SIZES)
    assert sizes and min(sizes) >= 11, sizes
    # Groups: fewer boxes than nodes (kernels and passes collapsed).
    assert svg.locator("g.jp-kx-node").count() < nodes
    page.screenshot(path=str(artifacts / "gradients-graph-sidebar-light.png"))

    # Search finds a node inside a collapsed group, expands it and centres the node.
    search = card.locator(".jp-kx-graph-search")
    search.fill("logaddexp")
    found = svg.locator(".jp-kx-node.jp-mod-found")
    expect(found).to_have_count(1)
    box, view = found.bounding_box(), svg.bounding_box()
    assert abs(box["x"] + box["width"] / 2 - (view["x"] + view["width"] / 2)) < 2
    assert abs(box["y"] + box["height"] / 2 - (view["y"] + view["height"] / 2)) < 2
    assert min(svg.evaluate(LABEL_SIZES)) >= 11

    # The main area: the plain wheel zooms about the cursor (the point under it stays).
    card.locator(".jp-kx-open-main").click()
    main_svg = page.locator(".jp-kx-graph-main svg.jp-kx-graph-svg")
    expect(main_svg.locator("g.jp-kx-node").first).to_be_visible()
    page.wait_for_function(
        "el => Number(el.getAttribute('data-scale')) >= 1", arg=main_svg.element_handle()
    )
    assert min(main_svg.evaluate(LABEL_SIZES)) >= 11
    page.screenshot(path=str(artifacts / "gradients-graph-main-light.png"))
    area = main_svg.bounding_box()
    x, y = area["x"] + area["width"] * 0.3, area["y"] + area["height"] * 0.4
    under = _content_point(main_svg, x, y)
    k = float(main_svg.get_attribute("data-scale"))
    page.mouse.move(x, y)
    page.mouse.wheel(0, -240)
    page.wait_for_function(
        "([el, k]) => Number(el.getAttribute('data-scale')) > k * 1.1",
        arg=[main_svg.element_handle(), k],
    )
    after = _content_point(main_svg, x, y)
    assert abs(after[0] - under[0]) < 1.5 and abs(after[1] - under[1]) < 1.5, (under, after)

    # The monitor's picture under the cell: the same segment colours.
    monitor = page.locator(".jp-Notebook .jp-CodeCell").nth(1).locator(".kx-monitor").first
    page.locator(".lm-TabBar-tab", has_text="06_gradients.ipynb").first.click()
    monitor.get_by_role("tab", name="graph").click()
    picture = monitor.locator("svg.kx-graph")
    expect(picture).to_be_visible()
    picture.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "gradients-graph-cell-light.png"))

    ui.set_theme(page, dark=True)
    picture.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "gradients-graph-cell-dark.png"))
    card.locator(".jp-kx-graph-svg").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "gradients-graph-sidebar-dark.png"))
    page.locator(".lm-TabBar-tab", has_text="Graph: train_step").first.click()
    expect(main_svg).to_be_visible()
    page.screenshot(path=str(artifacts / "gradients-graph-main-dark.png"))
    assert page.problems == []  # type: ignore[attr-defined]


FLOAT_CALLS = """@kx.function
def decay(w, lr):
    return w * (1 - lr)

w = np.linspace(0.0, 1.0, 4)
for lr in [0.1, 0.01, 0.001, 0.5, 0.25, 0.125]:
    decay(w, lr)"""

FOLLOWED = """fixed = kx.function(decay.python_function)
for lr in [0.1, 0.01, 0.001, 0.5, 0.25, 0.125]:
    out = fixed(w, np.float64(lr))
print("traces:", fixed.experimental_get_tracing_count(), "value:", out[1])"""


def test_float_advice_keeps_the_float_and_replays_to_one_trace(
    page: Any, lab: Any, ui: Any
) -> None:
    from playwright.sync_api import expect

    ui.write_notebook(
        lab.root,
        "float_advice.ipynb",
        [
            ui.LOAD + "\n" + ui.IMPORTS + "\nimport warnings\nwarnings.simplefilter('ignore')",
            FLOAT_CALLS,
            "%retrace_report decay",
            FOLLOWED,
        ],
    )
    ui.open_notebook(page, lab, "float_advice.ipynb")
    _ready(page, ui)
    for index in range(4):
        ui.run_cell(page, index, count=index + 1)
    report = page.locator(".jp-Notebook .jp-CodeCell").nth(2).locator(".kx-report")
    expect(report).to_contain_text("decay(w, np.float64(lr))")
    expect(report).to_contain_text("1 trace instead of 6")
    assert "np.int32" not in report.inner_text()
    followed = page.locator(".jp-Notebook .jp-CodeCell").nth(3).locator(".jp-OutputArea-output")
    expect(followed).to_contain_text("traces: 1 value:")
    value = float(followed.inner_text().split("value:")[1])
    assert value == pytest.approx((1 / 3) * (1 - 0.125))  # 0.125 stayed 0.125, not 0
    assert page.problems == []  # type: ignore[attr-defined]


def test_run_all_of_the_cell_functions_example_keeps_its_three_monitors(
    page: Any, lab: Any, ui: Any
) -> None:
    from playwright.sync_api import expect

    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
    shutil.copy(EXAMPLES / "05_cell_functions.ipynb", lab.root / "05_run_all.ipynb")
    ui.open_notebook(page, lab, "05_run_all.ipynb")
    _ready(page, ui)
    ui.menu(page, "Run", "Run All Cells")
    code = page.locator(".jp-Notebook .jp-CodeCell")
    last = code.nth(code.count() - 1).locator(".jp-InputArea-prompt")
    expect(last).to_have_text(re.compile(r"^\[\d+\]:$"), timeout=240_000)
    # the three runs of the `step` cell: code cells 1, 3 and 5
    for index in (1, 3, 5):
        expect(code.nth(index).locator(".kx-monitor").first).to_be_visible()
    # the third shows the second signature (a batch of another size)
    expect(code.nth(5).locator(".kx-monitor").first).to_contain_text("float64[8, 3]")
    assert not [m for m in console if "removeChild" in m or "detachWidget" in m], console
    assert page.problems == []  # type: ignore[attr-defined]


UNITS = """@kx.function(backend="numpy")
def scaled(x, n):
    return np.tanh(x) * n

for n in range(3):
    scaled(np.ones(4), n)
for _ in range(297):
    scaled(np.ones(4), 2)
kx.jupyter.monitor(scaled)"""


def test_one_unit_format_in_the_monitor_the_report_and_the_sidebar(
    page: Any, lab: Any, ui: Any
) -> None:
    from playwright.sync_api import expect

    ui.write_notebook(
        lab.root,
        "units.ipynb",
        [
            ui.LOAD + "\n" + ui.IMPORTS + "\nimport warnings\nwarnings.simplefilter('ignore')",
            UNITS,
            "%retrace_report scaled",
        ],
    )
    ui.open_notebook(page, lab, "units.ipynb")
    _ready(page, ui)
    for index in range(3):
        ui.run_cell(page, index, count=index + 1)
    card = ui.card(page, "scaled")
    tracing = card.locator('[data-counter="tracing"]')
    expect(tracing).to_have_text(re.compile(r"^[\d,]+(\.\d+)? (µs|ms|s)$"))
    hits = card.locator('[data-counter="cache hits"]')
    expect(hits).to_have_text("297 of 300 (99%)")
    monitor = page.locator(".jp-Notebook .jp-CodeCell").nth(1).locator(".kx-counters")
    expect(monitor).to_contain_text("297 of 300 (99%)")
    expect(monitor).to_contain_text(tracing.inner_text())
    report = page.locator(".jp-Notebook .jp-CodeCell").nth(2).locator(".kx-report")
    expect(report).to_contain_text(f"tracing {tracing.inner_text()}")
    expect(report).to_contain_text("cache hits 297 of 300 (99%)")
    assert "µs 9" not in monitor.inner_text() and " 1 traces" not in card.inner_text()
    assert page.problems == []  # type: ignore[attr-defined]


#: Every label's drawn size in px in the cell's picture: its font size times the picture's
#: scale (drawn width over the viewBox's width).
PICTURE_LABEL_SIZES = """svg => {
  const k = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return [...svg.querySelectorAll('text')]
    .map(t => parseFloat(getComputedStyle(t).fontSize) * k);
}"""

#: The fills of the boxes of source-line groups, as rgb() strings.
LINE_FILLS = """(root, selector) => [...new Set([...root.querySelectorAll(selector)]
  .map(r => getComputedStyle(r).fill))].sort()"""


def test_gradients_graph_groups_by_source_line_in_the_cell_the_sidebar_and_the_main_area(
    page: Any, lab: Any, ui: Any
) -> None:
    from playwright.sync_api import expect

    _gradients(page, lab, ui, "06_gradients_lines.ipynb")
    card = ui.card(page, "train_step")
    card.locator(".jp-kx-signature").first.click()
    svg = card.locator("svg.jp-kx-graph-svg")
    expect(svg.locator("g.jp-kx-node").first).to_be_visible()
    expect(card.locator(".jp-kx-graph-grouping")).to_have_value("line")
    page.wait_for_function(
        "el => Number(el.getAttribute('data-scale')) >= 1", arg=svg.element_handle()
    )
    assert min(svg.evaluate(LABEL_SIZES)) >= 11
    # `logits = ...` is one box (of the forward pass), collapsed
    line = svg.locator(
        "g.jp-kx-group-node.jp-kx-group-line:not(.jp-kx-backward)",
        has_text="logits = np.tanh(x @ w1",
    )
    expect(line).to_have_count(1)
    group = line.get_attribute("data-group")
    line.scroll_into_view_if_needed()
    before = line.bounding_box()
    line.click()
    cluster = svg.locator(f'g.jp-kx-cluster[data-group="{group}"]')
    expect(cluster).to_have_count(1)
    after = cluster.bounding_box()
    # expanding laid the graph out again around the point the user looked at
    assert abs((after["x"] + after["width"] / 2) - (before["x"] + before["width"] / 2)) < 2
    assert abs((after["y"] + after["height"] / 2) - (before["y"] + before["height"] / 2)) < 2
    # its ops say their line in the tooltip
    tanh = svg.locator("g.jp-kx-node[data-node]", has_text="tanh(·)").first
    title = tanh.locator("title").text_content()
    assert "made at cell [2], line 5" in title, title
    sidebar_fills = svg.evaluate(LINE_FILLS, ".jp-kx-group-line.jp-kx-group-node rect")

    # the cell's picture: grouped the same way, labels at 11 px or more, same fills
    page.locator(".lm-TabBar-tab", has_text="06_gradients_lines.ipynb").first.click()
    monitor = page.locator(".jp-Notebook .jp-CodeCell").nth(1).locator(".kx-monitor").first
    monitor.get_by_role("tab", name="graph").click()
    picture = monitor.locator("svg.kx-graph")
    expect(picture).to_be_visible()
    expect(picture.locator("g.kx-graph-line", has_text="logits = np.tanh")).to_have_count(2)
    sizes = picture.evaluate(PICTURE_LABEL_SIZES)
    assert sizes and min(sizes) >= 11, sizes
    cell_fills = picture.evaluate(LINE_FILLS, "g.kx-graph-line rect")
    assert sidebar_fills == cell_fills and len(cell_fills) == 2, (sidebar_fills, cell_fills)

    # the main area: the same groups and fills
    card.locator(".jp-kx-open-main").click()
    main_svg = page.locator(".jp-kx-graph-main svg.jp-kx-graph-svg")
    expect(main_svg.locator("g.jp-kx-node").first).to_be_visible()
    assert main_svg.evaluate(LINE_FILLS, ".jp-kx-group-line.jp-kx-group-node rect") == cell_fills
    assert page.problems == []  # type: ignore[attr-defined]


LOOP = """@kx.function(backend="numpy")
def decay(x, n):
    i = 0
    while i < n:
        x = x - 0.1 * np.sin(x)
        i += 1
    return x

decay(np.ones(3), np.int64(4))"""


def test_a_graph_loop_is_one_box_holding_its_body(page: Any, lab: Any, ui: Any) -> None:
    from playwright.sync_api import expect

    ui.write_notebook(lab.root, "loop_box.ipynb", [ui.LOAD + "\n" + ui.IMPORTS, LOOP])
    ui.open_notebook(page, lab, "loop_box.ipynb")
    _ready(page, ui)
    for index in range(2):
        ui.run_cell(page, index, count=index + 1)
    card = ui.card(page, "decay")
    card.locator(".jp-kx-signature").first.click()
    svg = card.locator("svg.jp-kx-graph-svg")
    # a small graph starts open: the loop is a frame around its body's ops
    loop = svg.locator("g.jp-kx-cluster.jp-kx-group-loop")
    expect(loop).to_have_count(1)
    expect(loop.locator("title")).to_contain_text("loop at line 4: while i < n:")
    holder = loop.get_attribute("data-group").removeprefix("g:cf:")  # the while node
    body = svg.locator(f'g.jp-kx-node[data-node^="{holder}."]')  # the ops inside it
    sin = body.filter(has_text="sin(·)")
    expect(sin).to_have_count(1)
    assert "made at cell [2], line 5" in sin.locator("title").text_content()
    # closed, it is one box; the body's ops are inside it
    label = loop.locator(".jp-kx-cluster-label")  # (by keyboard: it may be panned away)
    label.focus()
    label.press("Enter")
    box = svg.locator("g.jp-kx-group-node.jp-kx-group-loop")
    expect(box).to_have_count(1)
    expect(box).to_contain_text("loop at line 4: while i < n:")
    expect(body).to_have_count(0)
    assert page.problems == []  # type: ignore[attr-defined]
