"""The real-code corpus exported to ONNX: no program may export and then compute something
other than NumPy does; the coverage table (docs/onnx.md) is printed with ``-s``."""

from __future__ import annotations

from collections import Counter

import pytest
from corpus_coverage import Outcome, render, render_generated, run_corpus, run_generated

#: The corpus runs every program through four executors and onnxruntime (half a minute from a
#: cold kernel cache): the full suite's; tests/onnx/test_export.py and the others stay quick.
pytestmark = pytest.mark.slow

#: Measured when the table in docs/onnx.md was written (153 of 190): a drop is a regression.
MIN_PASSING = 150
#: Likewise for the 420 generated programs (173 when measured).
MIN_GENERATED_PASSING = 170


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    return run_corpus()


def test_no_exported_program_differs_from_numpy(outcomes: list[Outcome]) -> None:
    bad = [
        f"{o.case}: {o.status} {o.detail}" for o in outcomes if o.status in ("WRONG", "RUN ERROR")
    ]
    assert bad == []


def test_most_of_the_corpus_exports_and_each_stop_is_named(outcomes: list[Outcome]) -> None:
    print("\n" + render(outcomes))
    counts = Counter(o.status for o in outcomes)
    assert counts["PASS"] >= MIN_PASSING
    assert all(o.detail for o in outcomes if o.status == "REFUSED")


def test_no_generated_program_exports_to_a_wrong_result() -> None:
    outcomes = run_generated()
    print("\n" + render_generated(outcomes))
    bad = [
        f"{o.case}: {o.status} {o.detail}" for o in outcomes if o.status in ("WRONG", "RUN ERROR")
    ]
    assert bad == []
    assert sum(o.status == "PASS" for o in outcomes) >= MIN_GENERATED_PASSING
