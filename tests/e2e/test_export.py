"""The sidebar's Export action in a real JupyterLab, driven through headless Chromium.

A user traces a function, opens its card, clicks **Export…**, picks a format and a path in
the dialog, and the kernel writes the file (the kernel's working directory is the
notebook's); the card then says what was written where. A refused export (a saved model
over a directory that holds something else) shows the exporter's reason, styled as an error,
and leaves that directory alone. Screenshots: ``export-1-dialog.png``, ``export-2-done.png``.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.slow

DEFINE = "%%tffunction\ndef dense(x):\n    return np.tanh(x * 2.0).sum()"
CALL = "dense(np.ones(3, np.float32))"


def _export(page: Any, card: Any, format_label: str, path: str) -> None:
    card.locator(".jp-kx-export").click()
    dialog = page.locator(".jp-Dialog")
    dialog.get_by_label("Format").select_option(label=format_label)
    dialog.get_by_label("Path (relative to the kernel)").fill(path)
    return dialog


def test_export_from_a_card_writes_the_file_and_says_where(page, lab, ui, artifacts):
    from playwright.sync_api import expect

    occupied = lab.root / "occupied"
    occupied.mkdir(exist_ok=True)
    (occupied / "notes.txt").write_text("mine")
    ui.write_notebook(lab.root, "export.ipynb", [ui.LOAD, ui.IMPORTS, DEFINE, CALL])
    ui.open_notebook(page, lab, "export.ipynb")
    panel = ui.open_sidebar(page)
    expect(panel.locator(".jp-kx-status")).to_have_text(ui.NOT_LOADED)  # (the kernel is up)
    for index in range(4):
        ui.run_cell(page, index, index + 1)
    card = ui.card(page, "dense")
    expect(card).to_be_visible()

    dialog = _export(
        page, card, "NumPy source (one .py file needing only NumPy)", "dense_export.py"
    )
    page.screenshot(path=str(artifacts / "export-1-dialog.png"))
    dialog.get_by_role("button", name="Export").click()
    status = card.locator(".jp-kx-export-status")
    expect(status).to_contain_text("wrote standalone NumPy source of dense to")
    expect(status).to_contain_text("dense_export.py")
    page.screenshot(path=str(artifacts / "export-2-done.png"))
    written = lab.root / "dense_export.py"
    assert written.is_file() and "import numpy" in written.read_text()
    assert "jp-mod-error" not in (status.get_attribute("class") or "")

    dialog = _export(page, card, "Saved model (a directory; kx.saved_model.load)", "occupied")
    dialog.get_by_role("button", name="Export").click()
    expect(status).to_contain_text("Not exported:")
    expect(status).to_contain_text("exists")
    expect(status).to_have_class("jp-kx-export-status jp-mod-error")
    assert sorted(p.name for p in occupied.iterdir()) == ["notes.txt"]
