"""The NumPy coverage table (docs/numpy-coverage.md) is current, and its classifier is right.

Regenerating the table takes a few seconds (every public function traced once), so the test
regenerates it and compares the totals with the checked-in doc.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def coverage():
    spec = importlib.util.spec_from_file_location(
        "numpy_coverage", ROOT / "tools" / "numpy_coverage.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def test_the_doc_is_current(coverage):
    rows, source = coverage.build()
    text = coverage.render(rows, coverage.ufunc_method_rows(), source)
    doc = (ROOT / "docs" / "numpy-coverage.md").read_text()
    assert coverage.doc_totals(doc) == coverage.doc_totals(text), (
        "regenerate with: python tools/numpy_coverage.py"
    )


def test_classifier_tells_native_opaque_trace_time_and_error_apart(coverage):
    rows = {
        r.name: r
        for r in coverage.build(
            [
                ("nansum", np.nansum),
                ("nextafter", np.nextafter),
                ("sum", np.sum),
                ("zeros", np.zeros),
                ("array_str", np.array_str),
                ("linalg.qr", np.linalg.qr),
                ("einsum", np.einsum),
            ]
        )[0]
    }
    assert rows["nansum"].status == "native" and rows["nansum"].fuses == "no"
    assert rows["nextafter"].status == "native" and rows["nextafter"].fuses == "yes"
    assert rows["sum"].fuses == "yes"
    assert rows["zeros"].status == "trace time"
    assert rows["array_str"].status == "error"  # a str cannot be a graph value
    assert rows["linalg.qr"].status in ("opaque", "native")
    assert rows["nansum"].jax and rows["einsum"].jax  # on jax.numpy's list


def test_every_ufunc_method_numpy_defines_is_native(coverage):
    rows = coverage.ufunc_method_rows()
    assert {r.name.rsplit(".", 1)[1] for r in rows} == set(coverage.UFUNC_METHODS)
    assert [r.name for r in rows if r.status != "native"] == []


def test_the_readme_links_the_table():
    assert "docs/numpy-coverage.md" in (ROOT / "README.md").read_text()
