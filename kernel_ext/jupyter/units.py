"""How every notebook view writes numbers: durations, cache-hit rates, counts of things.

One rule, written twice: here for the views the kernel renders (the monitor, ``%retrace_report``,
the graph legends) and in ``labextension/src/units.ts`` for the sidebar.  Both are tested
against one table, ``labextension/test/units.json``, so "99.2 ms" in the sidebar is "99.2 ms"
under the cell, never "µs 99,167.5".

* :func:`duration` — milliseconds, auto-scaled to µs / ms / s with the unit written:
  three significant figures (``"4.25 ms"``, ``"99.2 ms"``, ``"946 ms"``, ``"1.25 s"``);
* :func:`hit_rate` — ``"299 of 300 (99.7%)"``: a rate is never rounded to 100% (or 0%) unless
  every call (or none) hit;
* :func:`plural` — ``"1 trace"``, ``"2 traces"``, with thousands separators.
"""

from __future__ import annotations

import math

__all__ = ["duration", "hit_rate", "percent", "plural"]

#: (unit, its size in ms), smallest first; a value takes the largest unit it reaches.
_UNITS = (("µs", 1e-3), ("ms", 1.0), ("s", 1e3))


def duration(ms: float | None) -> str:
    """``ms`` milliseconds for people: ``"41.0 µs"``, ``"4.25 ms"``, ``"99.2 ms"``,
    ``"1.25 s"``; ``"—"`` for None (not measured)."""
    if ms is None or not math.isfinite(ms):
        return "—"
    unit, size = _UNITS[0]
    for name, scale in _UNITS:
        # the unit whose value, once rounded to three figures, is at least 1
        if abs(ms) / scale >= 0.9995:
            unit, size = name, scale
    return f"{_figures(ms / size)} {unit}"


def _figures(value: float) -> str:
    """Three significant figures, never a power of ten: 4.25, 99.2, 946, 1,234."""
    magnitude = abs(value)
    decimals = 2 if magnitude < 9.995 else 1 if magnitude < 99.95 else 0
    return f"{value:,.{decimals}f}"


def percent(part: int, whole: int) -> str:
    """``part`` of ``whole`` as a percentage that never claims all or none wrongly:
    ``"75%"``, ``"99.7%"``, ``">99.9%"``, ``"<0.1%"``."""
    if whole <= 0:
        return "—"
    if part * 100 % whole == 0:
        return f"{part * 100 // whole}%"
    text = f"{100 * part / whole:.1f}"
    if text == "100.0":
        return ">99.9%"
    if text == "0.0":
        return "<0.1%"
    return f"{text.removesuffix('.0')}%"


def hit_rate(hits: int, calls: int) -> str:
    """``"299 of 300 (99.7%)"``; ``"0 of 0"`` before any call."""
    if calls <= 0:
        return f"{hits:,} of {calls:,}"
    return f"{hits:,} of {calls:,} ({percent(hits, calls)})"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``"1 trace"``, ``"1,024 traces"``; ``nouns`` for an irregular plural."""
    word = noun if count == 1 else (nouns or noun + "s")
    return f"{count:,} {word}"
