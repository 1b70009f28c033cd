"""Every widget renders after a page reload once a ``%%tffunction`` cell has been re-run.

Re-running a ``%%tffunction`` cell closes the cell's old monitor. Before ``close_tree`` the
monitor's inner ``VBox([selector, graph])`` stayed open and pointed at closed widgets; with
"save widget state" on, the notebook then stored (and the kernel still listed) a model whose
children no longer exist, and after a reload every widget of the notebook, an unrelated
``IntSlider`` included, stayed on "Loading widget...". Here, in a real JupyterLab with
ipywidgets' own widget manager (``jupyterlab_widgets``): load the extension, show a slider,
run and re-run a cell-as-function, save with the widget state, reload, and every widget
output renders. Screenshot: ``reload-after-rerun.png``.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

pytestmark = pytest.mark.slow

#: ipywidgets' JupyterLab widget manager; its ``saveState`` setting (off by default) makes a
#: save store the widget state in the notebook's metadata.
WIDGETS_PLUGIN = "@jupyter-widgets/jupyterlab-manager:plugin"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
SLIDER = "import ipywidgets as w\nw.IntSlider(5)"
ARRAY = "x = np.ones(3)"
CELL_FUNCTION = "%%tffunction\ny = x * 2"


def _put_widget_settings(lab: Any, values: dict) -> None:
    url = f"{lab.url}/lab/api/settings/{WIDGETS_PLUGIN}?token={lab.token}"
    body = json.dumps({"raw": json.dumps(values)}).encode()
    request = urllib.request.Request(
        url, data=body, method="PUT", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30):
        pass


@pytest.fixture
def save_widget_state(lab: Any) -> Any:
    """Turn on "Save Widget State Automatically"; the server lives for the session, so put
    the setting back to its default afterwards."""
    pytest.importorskip("jupyterlab_widgets")
    _put_widget_settings(lab, {"saveState": True})
    yield
    _put_widget_settings(lab, {})


def _assert_every_widget_renders(page: Any, cells: Any) -> None:
    from playwright.sync_api import expect

    slider = cells.nth(1).locator(".widget-slider")
    expect(slider).to_be_visible()
    expect(slider.locator(".widget-readout")).to_have_text("5")
    monitor = cells.nth(3).locator(".kx-monitor").first
    expect(monitor).to_be_visible()
    # A widget the manager cannot build shows "Loading widget..." (forever) or
    # "Error displaying widget": neither may be left in any output.
    outputs = page.locator(".jp-Notebook .jp-OutputArea-output")
    expect(outputs.filter(has_text="Loading widget")).to_have_count(0)
    expect(outputs.filter(has_text="Error displaying widget")).to_have_count(0)
    expect(
        page.locator(
            ".jp-Notebook .jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']"
        )
    ).to_have_count(0)


def test_every_widget_renders_after_reloading_a_rerun_notebook(
    page: Any, lab: Any, ui: Any, artifacts: Any, save_widget_state: Any
) -> None:
    from playwright.sync_api import expect

    name = "reload-after-rerun.ipynb"
    ui.write_notebook(lab.root, name, [ui.LOAD + "\n" + ui.IMPORTS, SLIDER, ARRAY, CELL_FUNCTION])
    ui.open_notebook(page, lab, name)
    # The sidebar reports the kernel (not yet loaded) once the kernel is up: run then.
    panel = ui.open_sidebar(page)
    expect(panel.locator(".jp-kx-status")).to_have_text(ui.NOT_LOADED)
    cells = page.locator(".jp-Notebook .jp-CodeCell")
    for index in range(4):
        ui.run_cell(page, index, count=index + 1)
    expect(cells.nth(3).locator(".kx-monitor").first).to_be_visible()
    # Re-run the %%tffunction cell: its old monitor is closed, a new one shown.
    ui.run_cell(page, 3, count=5)
    _assert_every_widget_renders(page, cells)

    # Save (the widget manager adds the widget state to the notebook) and wait until the
    # document is clean again.
    cells.nth(3).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+s")
    expect(page.locator(".jp-mod-current.jp-mod-dirty")).to_have_count(0)
    saved = json.loads((lab.root / name).read_text())
    state = saved["metadata"]["widgets"][WIDGET_STATE]["state"]
    # The saved state holds the slider and the live monitor, and no dangling reference.
    assert any(model["model_name"] == "IntSliderModel" for model in state.values())
    referenced = {
        value[len("IPY_MODEL_") :]
        for model in state.values()
        for value in json.dumps(model["state"]).split('"')
        if value.startswith("IPY_MODEL_")
    }
    assert referenced <= set(state), referenced - set(state)

    page.reload()
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=120_000)
    cells.first.wait_for()
    _assert_every_widget_renders(page, cells)
    cells.nth(3).scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "reload-after-rerun.png"))
    assert page.problems == []  # type: ignore[attr-defined]
