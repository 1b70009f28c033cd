"""The sidebar by keyboard, and an automated accessibility check.

- Keyboard: from the first function's header the arrow keys walk the function headers and
  signatures in order, Left/Right collapse and expand a card, Enter on a signature opens its
  graph; nothing needs the mouse.
- axe-core (the npm devDependency, injected from this checkout's ``node_modules``: no network)
  checks the sidebar with a signature's graph and a trace history open, and the monitor
  under the cell, in the light and the dark theme: no serious or critical violation. The
  results are saved in ``axe-<theme>.json``.

Screenshots: ``keyboard-graph-open.png``, ``axe-light.png``, ``axe-dark.png``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

AXE = Path(__file__).parents[2] / "node_modules" / "axe-core" / "axe.min.js"

DEFINE = "%%tffunction\ndef dense(x, n):\n    y = np.tanh(x * 2.0) * n\n    return y.sum()"
CALLS = "dense(np.ones(2, np.float32), 3)\ndense(np.ones(3, np.float32), 3)"
OTHER = "%%tffunction\ndef other(x):\n    return x + 1\n\nother(np.ones(2))"


def _focused(page: Any) -> str:
    return page.evaluate("""() => {
      const el = document.activeElement;
      if (el.classList.contains('jp-kx-function-header'))
        return 'fn ' + el.querySelector('.jp-kx-name').textContent;
      if (el.classList.contains('jp-kx-signature')) return 'sig ' + el.dataset.signatureId;
      return el.tagName + '.' + el.className;
    }""")


def _notebook(page: Any, lab: Any, ui: Any, name: str) -> Any:
    from playwright.sync_api import expect

    ui.write_notebook(lab.root, name, [ui.LOAD + "\n" + ui.IMPORTS, DEFINE, CALLS, OTHER])
    ui.open_notebook(page, lab, name)
    panel = ui.open_sidebar(page)
    expect(panel.locator(".jp-kx-status")).to_have_text(ui.NOT_LOADED)
    return panel


def _run_all(page: Any, ui: Any) -> None:
    for index in range(4):
        ui.run_cell(page, index, count=index + 1)


def test_the_sidebar_works_from_the_keyboard(page: Any, lab: Any, ui: Any, artifacts: Path) -> None:
    from playwright.sync_api import expect

    panel = _notebook(page, lab, ui, "keyboard.ipynb")
    _run_all(page, ui)
    expect(panel.locator(".jp-kx-function")).to_have_count(2)
    first = panel.locator(".jp-kx-function-header").first
    first.focus()
    seen = [_focused(page)]
    for _ in range(4):
        page.keyboard.press("ArrowDown")
        seen.append(_focused(page))
    # Costliest first, each header followed by its signatures (dense: 2, other: 1).
    expected = {"dense": ["fn dense", "sig 1", "sig 2"], "other": ["fn other", "sig 1"]}
    order = ["dense", "other"] if seen[0] == "fn dense" else ["other", "dense"]
    assert seen == expected[order[0]] + expected[order[1]][: 5 - len(expected[order[0]])], seen
    assert {s for s in seen if s.startswith("fn ")} == {"fn dense", "fn other"}, seen
    page.keyboard.press("Home")
    assert _focused(page) == seen[0]
    page.keyboard.press("ArrowLeft")  # collapse the first card
    expect(first).to_have_attribute("aria-expanded", "false")
    page.keyboard.press("ArrowDown")
    assert _focused(page) != "sig 1", "a collapsed card's signatures are skipped"
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowRight")  # expand again
    expect(first).to_have_attribute("aria-expanded", "true")
    # Into the dense card's last signature, and Enter opens its graph.
    card = ui.card(page, "dense")
    card.locator(".jp-kx-function-header").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    assert _focused(page) == "sig 2"
    page.keyboard.press("Enter")
    expect(card.locator(".jp-kx-signature").nth(1)).to_have_attribute("aria-pressed", "true")
    expect(card.locator("svg.jp-kx-graph-svg g.jp-kx-node").first).to_be_visible()
    page.screenshot(path=str(artifacts / "keyboard-graph-open.png"))
    assert page.problems == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_axe_finds_no_serious_or_critical_violation(
    page: Any, lab: Any, ui: Any, artifacts: Path, theme: str
) -> None:
    from playwright.sync_api import expect

    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: `jlpm install` installs axe-core", pytrace=False)
    _notebook(page, lab, ui, f"axe_{theme}.ipynb")
    ui.set_theme(page, dark=theme == "dark")
    _run_all(page, ui)
    card = ui.card(page, "dense")
    card.locator(".jp-kx-signature").nth(1).click()
    expect(card.locator("svg.jp-kx-graph-svg g.jp-kx-node").first).to_be_visible()
    card.locator("details.jp-kx-retraces summary").click()
    expect(card.locator(".jp-kx-fix").first).to_be_visible()
    page.add_script_tag(path=str(AXE))
    results = page.evaluate("""async () => {
      const r = await axe.run({include: [['.jp-kx-panel'], ['.kx-monitor']]},
                              {resultTypes: ['violations']});
      return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map(n => n.target.join(' ') + ': ' + n.failureSummary)}));
    }""")
    (artifacts / f"axe-{theme}.json").write_text(json.dumps(results, indent=1))
    page.screenshot(path=str(artifacts / f"axe-{theme}.png"))
    serious = [v for v in results if v["impact"] in ("serious", "critical")]
    assert not serious, json.dumps(serious, indent=1)
    assert page.problems == []  # type: ignore[attr-defined]
