"""The generated-source builder (``backends/emit/source.py``): depth, shared lines, text."""

from __future__ import annotations

from kernel_ext.backends.emit import Source


def test_block_writes_its_header_and_indents_its_body():
    out = Source()
    with out.block("for i in range(n):") as body:
        body.line("s += x[i]")
        with body.block("if s > 1:") as inner:
            inner.line("break")
    out.line("return s")
    assert out.text() == (
        "for i in range(n):\n    s += x[i]\n    if s > 1:\n        break\nreturn s\n"
    )


def test_views_share_lines_in_the_order_they_are_written():
    out = Source(indent="    ")
    deep = out.nested(2)
    out.line("a = 1")
    deep.line("b = 2")
    out.line("c = 3")
    assert out.lines == ["    a = 1", "            b = 2", "    c = 3"]
    assert len(deep) == 3


def test_extend_prefixes_every_line_and_keeps_their_own_indentation():
    out = Source(indent="  ")
    out.extend(["if x:", "    y = 1"])
    assert out.lines == ["  if x:", "      y = 1"]


def test_an_existing_list_is_written_into_not_copied():
    lines = ["def f(x):"]
    Source(lines, "    ").line("return x")
    assert lines == ["def f(x):", "    return x"]
