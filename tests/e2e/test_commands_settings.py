"""The sidebar's command palette entries and its settings, as JupyterLab extensions offer
them.

- The palette lists "Show Traced Functions" and "Refresh Traced Functions" (category
  "Traced Functions"); the first opens the closed sidebar, the second asks the kernel for a
  fresh snapshot.
- The build installs ``schema/sidebar.json`` (``jupyterlab.schemaDir``): the server serves
  it, and a ``defaultCollapse`` stored through JupyterLab's settings service collapses the
  cards (a change made in the settings editor applies at once: the jest tests cover that).

Screenshots: ``palette.png``, ``settings-collapsed.png``.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

PLUGIN = "jupyterlab-tffunction:sidebar"
DEFINE = (
    "%%tffunction\ndef dense(x):\n    return np.tanh(x).sum()\n\n"
    "dense(np.ones(2))\ndense(np.ones(3))"
)


def _settings_url(lab: Any) -> str:
    return f"{lab.url}/lab/api/settings/{PLUGIN}?token={lab.token}"


def test_the_build_installs_the_settings_schema(lab: Any) -> None:
    schema = (
        Path(__file__).parents[2]
        / "kernel_ext"
        / "labextension"
        / "schemas"
        / "jupyterlab-tffunction"
        / "sidebar.json"
    )
    assert schema.is_file(), "`jlpm build` copies schema/ into the lab extension"
    with urllib.request.urlopen(_settings_url(lab), timeout=30) as response:
        served = json.load(response)
    properties = served["schema"]["properties"]
    assert {"updateIntervalMs", "defaultCollapse", "expandedUpTo"} <= set(properties)


def _put_settings(lab: Any, values: dict) -> None:
    body = json.dumps({"raw": json.dumps(values)}).encode()
    request = urllib.request.Request(
        _settings_url(lab), data=body, method="PUT", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30):
        pass


@pytest.fixture
def default_settings_after(lab: Any) -> Any:
    """The server lives for the session: leave its settings as they were for later tests."""
    yield
    _put_settings(lab, {})


def test_palette_opens_and_refreshes_the_sidebar_and_settings_apply(
    page: Any, lab: Any, ui: Any, artifacts: Path, default_settings_after: Any
) -> None:
    from playwright.sync_api import expect

    ui.write_notebook(lab.root, "commands.ipynb", [ui.LOAD + "\n" + ui.IMPORTS, DEFINE])
    ui.open_notebook(page, lab, "commands.ipynb")
    panel = page.locator(".jp-kx-panel")
    expect(panel).to_be_hidden()
    # A kernel that becomes ready moves the focus, which closes the modal palette: wait.
    expect(page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first).to_be_visible()

    def palette(label: str) -> None:
        # The modal palette closes when the focus moves (a kernel that becomes ready, a
        # restored layout): open it again until the command is there to click.
        palette_item = page.locator(
            ".jp-ModalCommandPalette .lm-CommandPalette-item", has_text=label
        ).first
        for attempt in range(5):
            page.keyboard.press("Escape")
            page.keyboard.press("Control+Shift+C")
            search = page.locator(".jp-ModalCommandPalette .lm-CommandPalette-input")
            try:
                expect(search).to_be_visible(timeout=5_000)
                search.click(timeout=5_000)
                page.keyboard.type(label)
                expect(palette_item).to_be_visible(timeout=5_000)
                if label.startswith("Refresh"):
                    page.screenshot(path=str(artifacts / "palette.png"))
                palette_item.click(timeout=5_000)
                return
            except AssertionError:
                if attempt == 4:
                    raise
            except Exception as error:  # playwright's TimeoutError from click
                if attempt == 4 or "Timeout" not in type(error).__name__:
                    raise

    palette("Show Traced Functions")
    expect(panel).to_be_visible()
    expect(panel.locator(".jp-kx-status")).to_have_text(ui.NOT_LOADED)
    ui.run_cell(page, 0, count=1)
    ui.run_cell(page, 1, count=2)
    card = ui.card(page, "dense")
    expect(card).to_have_count(1)
    # Refresh: a new snapshot replaces the list (the card's counters stay right).
    palette("Refresh Traced Functions")
    expect(card.locator('[data-counter="calls"]')).to_have_text("2")
    expect(card).not_to_have_class("jp-kx-function jp-mod-collapsed")

    # A setting stored through JupyterLab's settings service applies.
    _put_settings(lab, {"defaultCollapse": "collapsed"})
    # The lab reads settings at start and on its own changes: reload to pick up the PUT.
    page.reload()
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=120_000)
    # The restored layout may still be opening the sidebar: the command shows it either way.
    expect(page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first).to_be_visible()
    palette("Show Traced Functions")
    expect(panel).to_be_visible()
    card = ui.card(page, "dense")
    expect(card).to_have_class("jp-kx-function jp-mod-collapsed")
    page.screenshot(path=str(artifacts / "settings-collapsed.png"))
    assert page.problems == []  # type: ignore[attr-defined]
