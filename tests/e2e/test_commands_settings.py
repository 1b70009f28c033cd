"""The sidebar's command palette entries and its settings, as JupyterLab extensions offer
them (issue 17, "Beyond").

- The palette lists "Show Traced Functions" and "Refresh Traced Functions" (category
  "Traced Functions"); the first opens the closed sidebar, the second asks the kernel for a
  fresh snapshot.
- The build installs ``schema/sidebar.json`` (``jupyterlab.schemaDir``): the server serves
  it, and a change of ``defaultCollapse`` through JupyterLab's settings applies to the open
  sidebar at once.

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
DEFINE = ("%%tffunction\ndef dense(x):\n    return np.tanh(x).sum()\n\n"
          "dense(np.ones(2))\ndense(np.ones(3))")


def _settings_url(lab: Any) -> str:
    return f"{lab.url}/lab/api/settings/{PLUGIN}?token={lab.token}"


def test_the_build_installs_the_settings_schema(lab: Any) -> None:
    schema = Path(__file__).parents[2] / "kernel_ext" / "labextension" / "schemas" / \
        "jupyterlab-tffunction" / "sidebar.json"
    assert schema.is_file(), "`jlpm build` copies schema/ into the lab extension"
    with urllib.request.urlopen(_settings_url(lab), timeout=30) as response:
        served = json.load(response)
    properties = served["schema"]["properties"]
    assert {"updateIntervalMs", "defaultCollapse", "expandedUpTo"} <= set(properties)


def test_palette_opens_and_refreshes_the_sidebar_and_settings_apply(
        page: Any, lab: Any, ui: Any, artifacts: Path) -> None:
    from playwright.sync_api import expect
    ui.write_notebook(lab.root, "commands.ipynb", [ui.LOAD + "\n" + ui.IMPORTS, DEFINE])
    ui.open_notebook(page, lab, "commands.ipynb")
    panel = page.locator(".jp-kx-panel")
    expect(panel).to_be_hidden()
    # A kernel that becomes ready moves the focus, which closes the modal palette: wait.
    expect(page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first).to_be_visible()

    def palette(label: str) -> None:
        page.keyboard.press("Control+Shift+C")
        search = page.locator(".jp-ModalCommandPalette .lm-CommandPalette-input")
        expect(search).to_be_visible()
        search.click()
        page.keyboard.type(label)
        item = page.locator(".jp-ModalCommandPalette .lm-CommandPalette-item",
                            has_text=label)
        expect(item.first).to_be_visible()
        expect(page.locator(".jp-ModalCommandPalette .lm-CommandPalette-item")
               .first).to_contain_text(label)
        if label.startswith("Refresh"):
            page.screenshot(path=str(artifacts / "palette.png"))
        item.first.click()

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

    # A setting changed through JupyterLab's settings service applies at once.
    page.evaluate("""async ([url]) => {
      const r = await fetch(url, {method: 'PUT', headers: {'Content-Type': 'application/json'},
        body: JSON.stringify({raw: JSON.stringify({defaultCollapse: 'collapsed'})})});
      if (!r.ok) throw new Error('PUT settings: ' + r.status);
    }""", [_settings_url(lab)])
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
