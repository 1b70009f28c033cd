"""Every text of the sidebar and the monitor reads at 4.5:1 or better, in the light and the
dark theme (WCAG 2 AA for normal text).

The contrast is computed in the browser from the *computed* colours: each element that holds
text, its colour (``fill`` for SVG text) against the background it is drawn on (the first
opaque background up its ancestors, translucent layers composited; for a graph node's text,
the node's box). Screenshots: ``contrast-light.png``, ``contrast-dark.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

#: WCAG 2 AA, normal text.
MINIMUM = 4.5

DEFINE = (
    "%%tffunction\ndef dense(x, n):\n    y = np.tanh(x * 2.0) * n\n"
    "    return y.sum() + np.kron(x, x).sum()"
)
CALLS = "dense(np.ones(2, np.float32), 3)\ndense(np.ones(3, np.float32), 3)"

#: Collects ``{text, ratio, where}`` for every visible text under the given roots.
CONTRAST_JS = r"""
(selectors) => {
  const parse = c => {
    const m = /rgba?\(([^)]+)\)/.exec(c || '');
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, bottom) => {
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat([1]);
  };
  const background = el => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    for (const layer of layers.reverse()) bg = over(layer, bg);
    return bg;
  };
  const lum = c => {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const ratio = (a, b) => {
    const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  };
  const out = [];
  for (const root of selectors.flatMap(s => [...document.querySelectorAll(s)])) {
    for (const el of [root, ...root.querySelectorAll('*')]) {
      if (['TITLE', 'STYLE', 'SCRIPT', 'OPTION'].includes(el.tagName.toUpperCase())) continue;
      const own = [...el.childNodes].filter(n => n.nodeType === 3 && n.textContent.trim());
      if (!own.length || !el.getClientRects().length) continue;
      const style = getComputedStyle(el);
      if (style.visibility === 'hidden' || style.display === 'none') continue;
      let fg, bg;
      if (el instanceof SVGElement) {
        fg = parse(style.fill);
        // A graph node's text sits on its box (the rect of its own group).
        const group = el.parentElement;
        const box = group && group.tagName.toLowerCase() === 'g'
          ? group.querySelector(':scope > rect') : null;
        bg = box ? over(parse(getComputedStyle(box).fill) || [0, 0, 0, 0],
                        background(el.ownerSVGElement)) : background(el.ownerSVGElement);
      } else {
        fg = parse(style.color);
        bg = background(el);
      }
      if (!fg) continue;
      if (fg[3] < 1) fg = over(fg, bg);
      out.push({text: own.map(n => n.textContent.trim()).join(' ').slice(0, 40),
                ratio: Math.round(ratio(fg, bg) * 100) / 100,
                where: (el.getAttribute('class') || el.tagName) + ' fg=' + fg.slice(0, 3)
                       + ' bg=' + bg.slice(0, 3).map(Math.round)});
    }
  }
  return out;
}
"""


def measure(page: Any) -> list[dict]:
    return page.evaluate(CONTRAST_JS, [".jp-kx-panel", ".kx-monitor", ".jp-kx-restart-banner"])


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_text_has_enough_contrast(
    page: Any, lab: Any, ui: Any, artifacts: Path, theme: str
) -> None:
    from playwright.sync_api import expect

    name = f"contrast_{theme}.ipynb"
    ui.write_notebook(lab.root, name, [ui.LOAD + "\n" + ui.IMPORTS, DEFINE, CALLS])
    ui.open_notebook(page, lab, name)
    panel = ui.open_sidebar(page)
    expect(panel.locator(".jp-kx-status")).to_have_text(ui.NOT_LOADED)
    ui.set_theme(page, dark=theme == "dark")
    for index in range(3):
        ui.run_cell(page, index, count=index + 1)
    # Everything a person can see: the last-used and the selected signature, the graph
    # with its legend, the trace history with a fix, the monitor's graph tab.
    card = ui.card(page, "dense")
    card.locator(".jp-kx-signature").nth(1).click()
    expect(card.locator("svg.jp-kx-graph-svg g.jp-kx-node").first).to_be_visible()
    card.locator("details.jp-kx-retraces summary").click()
    expect(card.locator(".jp-kx-fix").first).to_be_visible()
    monitor = page.locator(".jp-Notebook .jp-CodeCell").nth(1).locator(".kx-monitor").first
    monitor.get_by_role("tab", name="graph").click()
    expect(monitor.locator("svg.kx-graph")).to_be_visible()

    found = measure(page)
    assert len(found) > 40, found
    worst = min(found, key=lambda item: item["ratio"])
    (artifacts / f"contrast-{theme}.txt").write_text(
        f"minimum {worst['ratio']}:1 ({worst['text']!r}, {worst['where']}) over "
        f"{len(found)} texts\n"
        + "\n".join(
            f"{item['ratio']:5.2f}  {item['text']!r}  {item['where']}"
            for item in sorted(found, key=lambda item: item["ratio"])
        )
    )
    page.screenshot(path=str(artifacts / f"contrast-{theme}.png"))
    low = [item for item in found if item["ratio"] < MINIMUM]
    assert not low, low
    assert page.problems == []  # type: ignore[attr-defined]
