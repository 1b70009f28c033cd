"""Tracebacks of errors in traced code start in the user's code, never in the magics or the engine.

IPython leaves frames whose locals hold ``__tracebackhide__`` out of the tracebacks it shows
(``[... skipping hidden N frame]``); the ``%%tffunction`` magic and the engine's call and trace
path mark theirs, so the first frame after the cell's own line is the user's.
"""

from __future__ import annotations

import re

import pytest


def _record_tracebacks(cells, monkeypatch) -> list[str]:
    """The tracebacks IPython shows from now on, as the text it prints: recorded where IPython
    lets a shell put them elsewhere (``_showtraceback``), not read back from stdout, which a
    background thread's output can interleave with."""
    shown: list[str] = []

    def record(etype, evalue, stb: list[str]) -> None:
        shown.append(cells.shell.InteractiveTB.stb2text(stb))

    monkeypatch.setattr(cells.shell, "_showtraceback", record)
    return shown


def _shown_frames(shown: list[str]) -> tuple[str, list[str]]:
    """The last traceback IPython showed, and its frame headers in order."""
    assert len(shown) == 1, shown
    text = re.sub(r"\x1b\[[0-9;]*m", "", shown[0])
    headers = [
        line
        for line in text.splitlines()
        if line.startswith(("Cell In[", "File ")) or "skipping hidden" in line
    ]
    return text, headers


CASES = {
    "cell function": ("x = np.ones(3)", "%%tffunction\ny = x * 2\nz = y.tolist()\n", None),
    "def cell": (
        "x = np.ones(3)",
        "%%tffunction\ndef f(a):\n    b = a + 1\n    return b.tolist()\n",
        "f(x)",
    ),
    "decorated": (
        "x = np.ones(3)",
        "@kx.function\ndef f(a):\n    b = a + 1\n    return b.tolist()\n",
        "f(x)",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_the_first_frame_after_the_cell_is_the_users_own(cells, monkeypatch, case):
    setup, define, call = CASES[case]
    cells.run(setup)
    if call is not None:
        cells.run(define)
    shown = _record_tracebacks(cells, monkeypatch)
    cells.error(define if call is None else call)
    text, headers = _shown_frames(shown)
    assert "SymbolicValueError" in text and "tolist()" in text
    assert "magics.py" not in text and "engine/function.py" not in text, text
    # the cell's own line, then (our frames, hidden) the user's code
    shown = [h for h in headers if "skipping hidden" not in h]
    assert shown[0].startswith(f"Cell In[{cells.number}], line 1"), headers
    assert shown[1].startswith("Cell In[") and ".tolist()" in text.split(shown[1])[1]
    assert any("skipping hidden" in h for h in headers)
