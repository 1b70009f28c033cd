"""The ``--input-signature`` mini-language: what parses, and where errors point."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.engine.explain import spec_text
from kernel_ext.jupyter.signature_spec import Entry, SignatureSpecError, parse_signature


def test_named_entries_with_none_dims_and_scalars():
    assert parse_signature("x: float32[None, 3], n: int32[]") == [
        Entry("x", kx.TensorSpec((None, 3), np.float32)),
        Entry("n", kx.TensorSpec((), np.int32)),
    ]


def test_any_rank_question_marks_literals_and_trailing_comma():
    entries = parse_signature("a: float64[*], b: int64[?, 2], c: 3, d: 'train', e: True,")
    assert [e.spec for e in entries] == [
        kx.TensorSpec(None, np.float64),
        kx.TensorSpec((None, 2), np.int64),
        3,
        "train",
        True,
    ]
    assert parse_signature("x: bool[...]")[0].spec == kx.TensorSpec(None, np.bool_)


def test_positional_entries():
    assert [e.name for e in parse_signature("float32[2], float32[3]")] == [None, None]


def test_printed_signatures_parse_back():
    specs = (kx.TensorSpec((1, None, None, 3), np.float32), kx.TensorSpec(None, np.int64))
    text = spec_text(["x", "y"], specs)
    assert [e.spec for e in parse_signature(text)] == list(specs)


@pytest.mark.parametrize(
    "text, column, words",
    [
        ("x: float32[None, 3x]", 18, "expected ',' or ']'"),
        ("x: flot32[3]", 3, "unknown dtype 'flot32'"),
        ("x: float32", 10, "expected '[' after float32"),
        ("x: float32[-1]", 11, "cannot be negative"),
        ("x: float32[3", 12, "found the end"),
        ("", 0, "at least one entry"),
        ("x: float32[3], x: int64[]", 15, "appears twice"),
        ("float32[2], x: float32[3]", 0, "either name every entry"),
        ("x: float32[3] y", 14, "expected ','"),
        ("x: str[3]", 3, "cannot be traced"),
        ("x: float32[3], y", 16, "expected ':' and a type after 'y'"),
        ("x: float32[3] $", 14, "unexpected character '$'"),
        ("x: float32[a]", 11, "expected a dimension"),
    ],
)
def test_errors_name_the_column(text, column, words):
    with pytest.raises(SignatureSpecError) as caught:
        parse_signature(text)
    error = caught.value
    assert error.column == column and words in str(error)
    lines = str(error).splitlines()
    assert lines[-2] == "  " + text and lines[-1] == "  " + " " * column + "^"


@pytest.mark.parametrize(
    "text, column, words",
    [
        ("x: 0777", 3, "leading zeros are not allowed"),
        ("x: float32[0777]", 11, "write 777"),
        ("x: '\\x'", 3, "truncated \\xXX escape"),
        ("x: '\\q'", 3, "invalid escape sequence '\\q'"),
        ("x: " + "9" * 5000, 3, "at most 4300 digits"),
        ("x: float32[" + "9" * 30 + "]", 11, "larger than an array can be"),
        ("x: 'abc", 3, "has no closing '"),
        ('x: float32[3], y: "abc', 18, 'has no closing "'),
    ],
)
def test_literals_python_refuses_are_errors_at_their_column(text, column, words):
    """Each of these escaped as a SyntaxError or ValueError from inside the parser (or, for
    an invalid escape, was silently accepted with Python's warning)."""
    with pytest.raises(SignatureSpecError) as caught:
        parse_signature(text)
    assert caught.value.column == column and words in str(caught.value)


def test_literals_python_accepts_parse_as_python_reads_them():
    entries = parse_signature("a: 0x1F, b: -0o17, c: 0b101, d: 1.5e3, e: 'a\\\\q', f: 0")
    assert [e.spec for e in entries] == [31, -15, 5, 1500.0, "a\\q", 0]
