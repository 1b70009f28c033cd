"""The "Traced functions" sidebar in a real JupyterLab, driven through headless Chromium.

What a user does, step by step: open a notebook, load the extension, define a traced
function, call it with two shapes; the sidebar lists both signatures and the counters,
draws a signature's graph, follows a kernel restart and a page reload; and text from the
user (a function named like an HTML tag) shows as text.  Each step waits on page state
(playwright's auto-waiting ``expect``), never on a fixed delay; screenshots go to
``tests/artifacts/``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

import kernel_ext.jupyter

pytestmark = pytest.mark.slow

XSS = "<img src=x onerror=alert(1)>"
XSS_ARGUMENT = "<img src=x onerror=alert(2)>"

#: ``%load_ext kernel_ext`` once the notebook layer provides it; until then the
#: inspector is started by hand, which is all the sidebar needs.
HAS_LOAD_EXT = hasattr(kernel_ext.jupyter, "load_ipython_extension")
LOAD = (
    "%load_ext kernel_ext"
    if HAS_LOAD_EXT
    else "from kernel_ext.jupyter.inspector import start\nstart(get_ipython())"
)
IMPORTS = "import numpy as np\nimport kernel_ext as kx"
DEFINE = (
    "%%tffunction\n" if HAS_LOAD_EXT else "@kx.function\n"
) + "def dense(x):\n    return np.tanh(x * 2.0).sum()"
NOT_LOADED = "Run %load_ext kernel_ext in this notebook"


def write_notebook(root: Path, name: str, cells: list[str]) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(notebook, root / name)


def wait_for_lab(page: Any) -> None:
    """Until JupyterLab has restored its layout and shows the notebook's cells."""
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=120_000)
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()


def open_sidebar(page: Any) -> Any:
    """Show the "Traced functions" panel (its tab toggles it, so only click if hidden)."""
    panel = page.locator(".jp-kx-panel")
    if not panel.is_visible():
        page.locator('.lm-TabBar-tab[data-id="jp-kx-inspector"]').click()
    from playwright.sync_api import expect

    expect(panel).to_be_visible()
    return panel


def run_cell(page: Any, index: int, count: int) -> None:
    """Run one cell and wait until the kernel has finished it without an error.

    ``count`` is the execution count the cell will get: its prompt turns from ``[*]:``
    to ``[count]:``, which is the page's sign that the kernel is done with it.
    """
    from playwright.sync_api import expect

    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(index)
    prompt = cell.locator(".jp-InputArea-prompt")
    done = f"[{count}]:"
    assert prompt.inner_text().strip() != done, "the prompt must change to tell us"
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    expect(prompt).to_have_text(done, timeout=120_000)
    output = " ".join(cell.locator(".jp-OutputArea-output").all_inner_texts())
    assert "Traceback" not in output and "Error" not in output, output


def function_card(page: Any, name: str) -> Any:
    return page.locator(".jp-kx-function").filter(
        has=page.locator(".jp-kx-name", has_text=re.compile("^" + re.escape(name) + "$"))
    )


def restart_kernel(page: Any) -> None:
    """Restart from the Kernel menu, clearing outputs (so prompts count from [1] again)."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Kernel$")).click()
    page.locator(
        ".lm-Menu-itemLabel", has_text=re.compile(r"^Restart Kernel and Clear Outputs of All Cells")
    ).click()
    page.locator(".jp-Dialog button.jp-mod-accept").click()


def test_the_sidebar_shows_signatures_counters_and_graphs_and_survives_restart_and_reload(
    page: Any, lab: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    write_notebook(
        lab.root,
        "sidebar.ipynb",
        [
            LOAD + "\n" + IMPORTS,
            DEFINE,
            "dense(np.ones(2, np.float32))\ndense(np.ones(3, np.float32))",
            "dense(np.ones(3, np.float32))",
        ],
    )
    page.goto(lab.notebook_url("sidebar.ipynb", "sidebar"))
    wait_for_lab(page)
    panel = open_sidebar(page)
    status = panel.locator(".jp-kx-status")
    # A kernel without the extension: the panel says how to load it.  (It also means the
    # kernel is up and answering, so cells can run.)
    expect(status).to_have_text(NOT_LOADED)
    page.screenshot(path=str(artifacts / "1-not-loaded.png"))

    for index in range(3):
        run_cell(page, index, count=index + 1)
    dense = function_card(page, "dense")
    expect(dense).to_have_count(1)
    expect(dense.locator(".jp-kx-cell")).to_have_text(re.compile(r"^\[\d+\]$"))
    signatures = dense.locator(".jp-kx-signature")
    expect(signatures.locator(".jp-kx-inputs")).to_have_text(["(x: float32[2])", "(x: float32[3])"])
    expect(signatures.locator(".jp-kx-outputs")).to_have_text(["float32[]", "float32[]"])
    expect(dense.locator('[data-counter="calls"]')).to_have_text("2")
    expect(dense.locator('[data-counter="traces"]')).to_have_text("2")
    expect(dense.locator(".jp-kx-signature.jp-mod-lastUsed")).to_contain_text("float32[3]")

    # A cache hit: counters move, no new signature.
    run_cell(page, 3, count=4)
    expect(dense.locator('[data-counter="calls"]')).to_have_text("3")
    expect(dense.locator('[data-counter="cache hits"]')).to_have_text("1 of 3 (33.3%)")
    expect(signatures).to_have_count(2)

    # The graph of the second signature, drawn as SVG nodes with op, dtype and shape.
    signatures.nth(1).click()
    nodes = dense.locator("svg.jp-kx-graph-svg g.jp-kx-node")
    expect(nodes.filter(has_text="input · float32[3]")).to_have_count(1)
    expect(nodes.filter(has_text="tanh")).to_have_count(1)
    expect(nodes.filter(has_text=re.compile(r"^sum"))).to_contain_text("float32[]")
    expect(dense.locator("svg.jp-kx-graph-svg polyline.jp-kx-edge")).not_to_have_count(0)
    # The retrace explanation: trace 2 was caused by x's shape, with a fix.
    dense.locator("details.jp-kx-retraces summary").click()
    retrace = dense.locator(".jp-kx-retrace").nth(1)
    expect(retrace.locator(".jp-kx-retrace-head")).to_contain_text("#2 · shape")
    expect(retrace.locator(".jp-kx-diffs tbody tr")).to_have_text(
        re.compile(r"x\s*float32\[2\]\s*float32\[3\]")
    )
    expect(retrace.locator(".jp-kx-fix")).to_contain_text(
        re.compile(r"input.signature|reduce.retracing")
    )
    page.screenshot(path=str(artifacts / "2-signatures-counters-graph.png"))

    # Restart: the extension is gone with the old kernel; the panel follows on its own.
    restart_kernel(page)
    expect(status).to_have_text(NOT_LOADED, timeout=120_000)
    expect(panel.locator(".jp-kx-function")).to_have_count(0)
    page.screenshot(path=str(artifacts / "3-after-restart.png"))
    for index in range(3):
        run_cell(page, index, count=index + 1)
    expect(dense.locator('[data-counter="calls"]')).to_have_text("2")
    expect(signatures).to_have_count(2)

    # Reload the page: the kernel keeps its state and the sidebar finds it again.
    page.reload()
    wait_for_lab(page)
    panel = open_sidebar(page)
    dense = function_card(page, "dense")
    expect(dense.locator(".jp-kx-signature .jp-kx-inputs")).to_have_text(
        ["(x: float32[2])", "(x: float32[3])"]
    )
    expect(dense.locator('[data-counter="calls"]')).to_have_text("2")
    # And it is live again: a call after the reload updates the counters.
    run_cell(page, 3, count=4)
    expect(dense.locator('[data-counter="calls"]')).to_have_text("3")
    page.screenshot(path=str(artifacts / "4-after-reload.png"))
    assert page.problems == []  # type: ignore[attr-defined]


def test_user_text_that_looks_like_html_shows_as_text(page: Any, lab: Any, artifacts: Path) -> None:
    from playwright.sync_api import expect

    write_notebook(
        lab.root,
        "escaping.ipynb",
        [
            LOAD + "\n" + IMPORTS,
            f"tricky = kx.function(lambda x, tag: x + 1.0, name={XSS!r}, autograph=False)\n"
            f"tricky(np.ones(2), {XSS_ARGUMENT!r})",
        ],
    )
    page.goto(lab.notebook_url("escaping.ipynb", "escaping"))
    wait_for_lab(page)
    panel = open_sidebar(page)
    # The kernel has answered the sidebar: it is up, so cells can run.
    expect(panel.locator(".jp-kx-status")).to_have_text(NOT_LOADED)
    run_cell(page, 0, count=1)
    run_cell(page, 1, count=2)
    tricky = function_card(page, XSS)
    expect(tricky).to_have_count(1)
    expect(tricky.locator(".jp-kx-inputs")).to_have_text(f"(x: float64[2], tag: {XSS_ARGUMENT!r})")
    tricky.locator(".jp-kx-signature").first.click()
    expect(tricky.locator("svg.jp-kx-graph-svg g.jp-kx-node").first).to_be_visible()
    # Nothing was parsed as markup: no <img> anywhere in the panel, no alert() ran.
    assert panel.locator("img").count() == 0
    page.screenshot(path=str(artifacts / "5-escaping.png"))
    assert page.problems == []  # type: ignore[attr-defined]
