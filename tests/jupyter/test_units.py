"""One unit rule in every view: the kernel's views format numbers as the sidebar does, both
checked against one table (``labextension/test/units.json``, read by the jest suite too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel_ext.jupyter import units

CASES = json.loads(
    (Path(__file__).parents[2] / "labextension" / "test" / "units.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("ms, text", CASES["duration_ms"])
def test_duration_follows_the_shared_table(ms, text):
    assert units.duration(ms) == text


@pytest.mark.parametrize("hits, calls, text", CASES["hit_rate"])
def test_hit_rate_follows_the_shared_table(hits, calls, text):
    assert units.hit_rate(hits, calls) == text


@pytest.mark.parametrize("count, noun, text", CASES["plural"])
def test_plural_follows_the_shared_table(count, noun, text):
    assert units.plural(count, noun) == text


@given(st.integers(1, 10**7), st.data())
def test_hit_rate_says_all_or_none_only_when_true(calls, data):
    hits = data.draw(st.integers(0, calls))
    text = units.hit_rate(hits, calls)
    assert text.endswith("(100%)") == (hits == calls)
    assert text.endswith("(0%)") == (hits == 0)


@given(st.floats(1e-6, 1e9))
def test_duration_has_three_figures_and_a_unit_that_keeps_the_value(ms):
    number, unit = units.duration(ms).split(" ")
    value = float(number.replace(",", "")) * {"µs": 1e-3, "ms": 1.0, "s": 1e3}[unit]
    assert value == pytest.approx(ms, rel=6e-3, abs=6e-6)
    digits = number.replace(",", "").replace(".", "").lstrip("0")
    assert len(digits) >= 3 or ms < 1e-3  # below 1 µs: hundredths of a µs
