"""Which path serves each signature, in the sidebar and in the monitor, in the same words:
the NumPy executor for ``backend="numpy"``, fused kernels for
``backend="numba"`` (with the compile progress while its kernels compile in the
background; "ready" says nothing more).

Screenshot: ``served-by.png``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

PLAIN = (
    "%%tffunction --backend numpy\ndef plain(x):\n    return np.tanh(x).sum()\n\nplain(np.ones(3))"
)
FUSED = (
    "@kx.function(backend='numba')\ndef fused(x):\n    return np.tanh(x * 2.0).sum()\n\n"
    "fused(np.ones(8))\nkx.jupyter.monitor(fused)"
)


def test_sidebar_and_monitor_say_which_path_serves_each_signature(
    page: Any, lab: Any, ui: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    ui.write_notebook(
        lab.root, "served.ipynb", [ui.LOAD + "\n" + ui.IMPORTS, PLAIN, FUSED, "fused(np.ones(8))"]
    )
    ui.open_notebook(page, lab, "served.ipynb")
    panel = ui.open_sidebar(page)
    expect(panel.locator(".jp-kx-status")).to_have_text(ui.NOT_LOADED)
    for index in range(4):
        ui.run_cell(page, index, count=index + 1)
    plain = ui.card(page, "plain").locator(".jp-kx-served-by")
    expect(plain).to_have_text("runs through NumPy, one call per operation")
    fused = ui.card(page, "fused")
    expect(fused.locator(".jp-kx-served-by")).to_have_text(
        re.compile(r"^runs as \d+ compiled kernels? \(numba-cpu\)$")
    )
    # The kernels compile in the background; once ready, the sidebar says nothing more.
    expect(fused.locator(".jp-kx-compile")).to_have_attribute(
        "data-state", "ready", timeout=120_000
    )
    expect(fused.locator(".jp-kx-compile")).to_be_hidden()
    monitors = page.locator(".kx-monitor")
    expect(
        monitors.filter(has_text="runs through NumPy, one call per operation").first
    ).to_be_visible()
    expect(
        monitors.filter(
            has_text=re.compile(
                r"runs as \d+ compiled kernels? "
                r"\(numba-cpu\)"
            )
        ).first
    ).to_be_visible()
    page.screenshot(path=str(artifacts / "served-by.png"))
    assert page.problems == []  # type: ignore[attr-defined]
