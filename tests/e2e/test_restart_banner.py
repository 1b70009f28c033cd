"""After a kernel restart, a monitor under a cell says its counters are old.

The monitor's widget models die with the kernel; its view would keep the last counters next to
broken-link icons as if they were live. The sidebar's extension watches the notebook's kernel
and puts a banner above every monitor shown at the restart; re-running the cell gives a live
monitor without one. Screenshot: ``restart-banner.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

DEFINE = "%%tffunction\ndef dense(x):\n    return np.tanh(x * 2.0).sum()"


def test_monitors_shown_before_a_restart_say_so(
    page: Any, lab: Any, ui: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    ui.write_notebook(
        lab.root, "restart.ipynb", [ui.LOAD + "\n" + ui.IMPORTS, DEFINE, "dense(np.ones(3))"]
    )
    ui.open_notebook(page, lab, "restart.ipynb")
    panel = ui.open_sidebar(page)
    expect(panel.locator(".jp-kx-status")).to_have_text(ui.NOT_LOADED)
    for index in range(3):
        ui.run_cell(page, index, count=index + 1)
    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(1)
    expect(cell.locator(".kx-monitor").first).to_be_visible()
    expect(cell.locator(".jp-kx-restart-banner")).to_have_count(0)

    ui.menu(page, "Kernel", "Restart Kernel…")
    page.locator(".jp-Dialog button.jp-mod-accept").click()
    banner = cell.locator(".jp-kx-restart-banner")
    expect(banner).to_have_count(1)
    expect(banner).to_have_text(
        "Kernel restarted: these counters are from before the restart; re-run the cell."
    )
    expect(cell.locator(".kx-monitor.jp-kx-monitor-stale")).to_have_count(1)
    # The sidebar has followed the restart too.
    expect(panel.locator(".jp-kx-status")).to_have_text(ui.NOT_LOADED, timeout=120_000)
    cell.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "restart-banner.png"))

    # Re-running the cells gives live monitors, without a banner.
    ui.run_cell(page, 0, count=1)
    ui.run_cell(page, 1, count=2)
    expect(cell.locator(".kx-monitor").first).to_be_visible()
    expect(cell.locator(".jp-kx-restart-banner")).to_have_count(0)
    assert page.problems == []  # type: ignore[attr-defined]
