"""docs/gradients.md's op -> rule table is the code's (it cannot drift)."""

from __future__ import annotations

from pathlib import Path

from kernel_ext.autodiff import VJP, ZERO_GRADIENT, rule_kinds, rule_table
from kernel_ext.ir import OpKind

DOC = Path(__file__).resolve().parents[2] / "docs" / "gradients.md"


def test_gradients_doc_table_matches_the_rule_table() -> None:
    text = DOC.read_text()
    block = text.split("<!-- rules:begin -->\n", 1)[1].split("\n<!-- rules:end -->", 1)[0]
    assert block == rule_table(), "regenerate the table: see docs/gradients.md"


def test_every_op_is_classified_once() -> None:
    kinds = rule_kinds()
    seen = [k for ks in kinds.values() for k in ks]
    assert sorted(seen, key=str) == sorted(OpKind, key=str)
    assert len(seen) == len(set(seen))
    assert set(kinds["zero"]) == set(ZERO_GRADIENT)
    assert all(k in VJP for k in kinds["rule"] if k is not OpKind.GET_OUTPUT)
