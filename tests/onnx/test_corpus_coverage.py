"""The real-code corpus exported to ONNX: no program may export and then compute something
other than NumPy does; the coverage table (docs/onnx.md) is printed with ``-s``."""

from __future__ import annotations

from collections import Counter

import pytest
from corpus_coverage import Outcome, render, run_corpus

#: Measured when the table in docs/onnx.md was written (153 of 190): a drop is a regression.
MIN_PASSING = 150


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    return run_corpus()


def test_no_exported_program_differs_from_numpy(outcomes: list[Outcome]) -> None:
    bad = [f"{o.case}: {o.status} {o.detail}" for o in outcomes
           if o.status in ("WRONG", "RUN ERROR")]
    assert bad == []


def test_most_of_the_corpus_exports_and_each_stop_is_named(outcomes: list[Outcome]) -> None:
    print("\n" + render(outcomes))
    counts = Counter(o.status for o in outcomes)
    assert counts["PASS"] >= MIN_PASSING
    assert all(o.detail for o in outcomes if o.status == "REFUSED")
