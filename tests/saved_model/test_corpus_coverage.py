"""The real-code corpus and generated programs save and load bit for bit, and export as
standalone source bit for bit, or say why not."""

from __future__ import annotations

from collections import Counter

import pytest

from saved_model.corpus_coverage import STATUSES, corpus_outcomes, table


@pytest.mark.slow  # 310 programs saved, loaded and compared (20 s); the unit tests stay quick
def test_corpus_programs_save_and_load_bitwise_or_are_refused_with_a_reason():
    outcomes = corpus_outcomes(programs_per_kind=15)
    counts = Counter(o.status for o in outcomes)
    assert set(counts) <= set(STATUSES)
    assert counts["differs"] == 0, [o for o in outcomes if o.status == "differs"]
    assert counts["load error"] == 0, [o for o in outcomes if o.status == "load error"]
    # (docs/saved_model.md: 300 of 310, the rest Generator arguments and one aliased call)
    assert counts["bitwise"] >= 0.9 * len(outcomes), table(outcomes)
    assert all(o.detail for o in outcomes if o.status != "bitwise")
    source = Counter(o.source for o in outcomes)
    assert source["differs"] == 0, [o for o in outcomes if o.source == "differs"]
    assert source["bitwise"] >= 0.9 * len(outcomes), table(outcomes)
    generated = [o for o in outcomes if o.category.startswith("generated")]
    assert len(generated) == 45 and all(o.status == o.source == "bitwise" for o in generated), [
        o for o in generated if o.status != "bitwise" or o.source != "bitwise"
    ]
