"""The function list as a person uses it while cells run.

- Live updates (about every 250 ms while a cell runs) change counters in place: the focused
  signature button keeps focus, a selected fix stays selected, an open trace history stays
  open. The update's cost in the browser is measured (``data-render-ms``, written by the
  panel) and saved in ``update-latency.txt``.
- 20 functions × 10 signatures: cards start collapsed, costliest first; expanding one lists
  its first signatures with "Show all"; the panel's height and DOM size are measured
  (``many-functions.txt``).
- In the 250 px sidebar, signatures break only between arguments.

Screenshots: ``live-1-during-updates.png``, ``many-1-collapsed.png``,
``many-2-expanded.png``.
"""

from __future__ import annotations

import itertools
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

DEFINE = "%%tffunction\ndef dense(x):\n    return np.tanh(x * 2.0).sum()"
TWO = "dense(np.ones(2, np.float32))\ndense(np.ones(3, np.float32))"
LOOP = "import time\nfor _ in range(500):\n    dense(np.ones(3, np.float32))\n    time.sleep(0.01)"

MANY = """\
functions = []
for i in range(20):
    f = kx.function(lambda x, n: x * n, name=f"function_{i:02d}", autograph=False,
                    backend="numpy")
    for j in range(10 + (i % 3)):
        f(np.ones((j + 1, 3), np.float32), j)
    functions.append(f)

@kx.function(backend="numpy")
def wide(alpha_values, beta_values, gamma_values, delta_values, epsilon):
    return alpha_values * beta_values + gamma_values * delta_values + epsilon

wide(*[np.ones((2, 3), np.float32)] * 4, 0.5)
"""


def test_focus_selection_and_open_details_survive_live_updates(
    page: Any, lab: Any, ui: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    ui.write_notebook(lab.root, "live.ipynb", [ui.LOAD + "\n" + ui.IMPORTS, DEFINE, TWO, LOOP])
    ui.open_notebook(page, lab, "live.ipynb")
    panel = ui.open_sidebar(page)
    expect(panel.locator(".jp-kx-status")).to_have_text(ui.NOT_LOADED)
    for index in range(3):
        ui.run_cell(page, index, count=index + 1)
    card = ui.card(page, "dense")
    calls = card.locator('[data-counter="calls"]')
    expect(calls).to_have_text("2")
    card.locator("details.jp-kx-retraces summary").click()
    # Record every render's cost while the loop runs.
    page.evaluate(
        """panel => {
        window.kxRenders = [];
        new MutationObserver(() => window.kxRenders.push(
            [performance.now(), Number(panel.dataset.renderMs)]))
          .observe(panel, {attributes: true, attributeFilter: ['data-render-ms']});
    }""",
        panel.element_handle(),
    )

    # Start the loop, then go to the sidebar as a person would while it runs.
    loop = page.locator(".jp-Notebook .jp-CodeCell").nth(3)
    loop.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    expect(calls).not_to_have_text("2")
    button = card.locator(".jp-kx-signature").first
    button.focus()
    page.evaluate(
        """([button, code]) => {
        button.dataset.kxMark = 'focused';
        code.dataset.kxMark = 'selected';
        const range = document.createRange();
        range.selectNodeContents(code);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
    }""",
        [button.element_handle(), card.locator(".jp-kx-fix code").first.element_handle()],
    )
    selected = page.evaluate("() => getSelection().toString()")
    assert "--input-signature" in selected or "reduce" in selected, selected

    seen = {calls.inner_text()}
    while len(seen) < 6:  # five live updates at least
        page.wait_for_function(
            "([el, old]) => !old.includes(el.textContent)", arg=[calls.element_handle(), list(seen)]
        )
        seen.add(calls.inner_text())
        state = page.evaluate("""() => ({
            focused: document.activeElement && document.activeElement.dataset.kxMark,
            selection: getSelection().toString(),
            open: document.querySelector('.jp-kx-panel details.jp-kx-retraces').open})""")
        assert state == {"focused": "focused", "selection": selected, "open": True}, state
    page.screenshot(path=str(artifacts / "live-1-during-updates.png"))
    expect(loop.locator(".jp-InputArea-prompt")).to_have_text("[4]:", timeout=120_000)
    expect(calls).to_have_text("502")

    renders = page.evaluate("() => window.kxRenders")
    times = [t for t, _ in renders]
    costs = sorted(ms for _, ms in renders)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    (artifacts / "update-latency.txt").write_text(
        f"{len(renders)} live renders while 500 calls ran\n"
        f"render cost ms: median {statistics.median(costs):.2f}, "
        f"max {costs[-1]:.2f}\n"
        f"interval between updates ms: median {statistics.median(gaps):.0f}\n"
    )
    assert statistics.median(costs) < 16  # within one frame
    assert page.problems == []  # type: ignore[attr-defined]


def test_many_functions_collapse_and_signatures_break_between_tokens(
    page: Any, lab: Any, ui: Any, artifacts: Path
) -> None:
    from playwright.sync_api import expect

    ui.write_notebook(lab.root, "many.ipynb", [ui.LOAD + "\n" + ui.IMPORTS, MANY])
    ui.open_notebook(page, lab, "many.ipynb")
    panel = ui.open_sidebar(page)
    expect(panel.locator(".jp-kx-status")).to_have_text(ui.NOT_LOADED)
    ui.run_cell(page, 0, count=1)
    ui.run_cell(page, 1, count=2)
    cards = panel.locator(".jp-kx-function")
    expect(cards).to_have_count(21)
    expect(panel.locator(".jp-kx-function.jp-mod-collapsed")).to_have_count(21)
    # Costliest first.
    costs = page.evaluate("""() => [...document.querySelectorAll('.jp-kx-panel .jp-kx-cost')]
        .map(e => e.textContent)""")
    assert len(costs) == 21
    figures = page.evaluate("""() => {
        const list = document.querySelector('.jp-kx-panel .jp-kx-functions');
        return {height: list.scrollHeight,
                nodes: document.querySelector('.jp-kx-panel').querySelectorAll('*').length};
    }""")
    page.screenshot(path=str(artifacts / "many-1-collapsed.png"))
    assert figures["height"] < 2000, figures

    # Expand one: its first signatures, the last used, and "Show all".
    first = cards.first
    first.locator(".jp-kx-function-header").click()
    expect(first).not_to_have_class("jp-mod-collapsed")
    expect(first.locator(".jp-kx-signature")).to_have_count(6)
    expect(first.locator(".jp-kx-more-signatures")).to_have_text(
        re.compile(r"^Show [1-9]\d* more \(\d+ signatures in all\)$")
    )

    wide = ui.card(page, "wide")
    wide.locator(".jp-kx-function-header").click()
    tokens = wide.locator(".jp-kx-signature .jp-kx-token")
    expect(tokens).to_have_count(11)  # name and type of five arguments, and the output
    # Each token is one line: it never breaks inside ("float3|2[3]").
    heights = tokens.evaluate_all("""els => els.map(e => [e.textContent,
        e.getBoundingClientRect().height, parseFloat(getComputedStyle(e).lineHeight)
        || 1.2 * parseFloat(getComputedStyle(e).fontSize)])""")
    for text, height, line in heights:
        assert height <= line * 1.5, (text, height, line)
    spec = wide.locator(".jp-kx-spec")
    assert spec.get_attribute("title").startswith("(alpha_values: float32[2, 3], ")
    wide.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "many-2-expanded.png"))
    (artifacts / "many-functions.txt").write_text(
        f"21 functions (20 with 10-12 signatures): list height {figures['height']} px, "
        f"{figures['nodes']} DOM nodes in the panel, all collapsed\n"
    )
    assert page.problems == []  # type: ignore[attr-defined]
