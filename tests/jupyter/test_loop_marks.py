"""Every notebook view says what AutoGraph made of each loop statement: unrolled or a loop.

The words come from the trace (``TraceContext.note_loop`` -> ``ConcreteFunction.loops``) and,
for graph loops, from the ``while`` node itself (``records.loop_note``); the monitor's
signature table, ``%retrace_report``, the graph picture and the sidebar's graph payload each
show them.
"""

from __future__ import annotations

import numpy as np
import pytest
from realcode.corpus_buffers import pairwise_dist_loop as pairwise

import kernel_ext as kx
from kernel_ext.jupyter import inspector, records, render, report


def short_loop(x):
    for _ in range(3):
        x = x * 2.0
    return x


@pytest.fixture(scope="module")
def fn():
    f = kx.function(pairwise, backend="numpy")
    f(np.ones((300, 2)))
    return f


def test_each_loop_statement_says_what_it_became(fn):
    # a long range whose body indexes with its index: one graph loop from the first item,
    # the inner loop nested in the outer one's body
    inner, outer = fn.concrete_functions[0].loops
    assert "`for j in range(n):`" in inner and "corpus_buffers.py:" in inner
    assert inner.endswith("— a graph loop")
    assert "`for i in range(n):`" in outer and outer.endswith("— a graph loop")


def test_a_short_loop_is_all_unrolled():
    f = kx.function(short_loop)
    f(np.ones(2))
    (note,) = f.concrete_functions[0].loops
    assert note.endswith("— 3 iterations unrolled (a range of at most 8 items)")


def test_graph_loop_nodes_name_their_loop_statement(fn):
    graph = fn.concrete_functions[0].graph
    notes = [records.loop_note(n) for n in graph.nodes if records.loop_note(n)]
    assert notes and all(n.startswith("loop at ") and "`for " in n for n in notes)
    payload = inspector.graph_payload(fn.concrete_functions[0])
    assert any("loop at " in n["label"] for n in payload["nodes"])


def test_graph_picture_titles_a_graph_loop_with_its_statement():
    def data_dependent(x):
        for i in range(np.argmax(x)):
            x = x * 0.5
        return x

    f = kx.function(data_dependent, backend="numpy")
    f(np.arange(4.0))
    assert "(loop at " in render.graph_svg(f.concrete_functions[0])


def test_monitor_and_report_list_the_loops(fn):
    (row,) = records.signature_rows(fn)
    assert row.loops == fn.concrete_functions[0].loops
    html = render.signatures_html(
        [
            {
                "id": row.id,
                "inputs": row.signature,
                "outputs": row.outputs,
                "nodes": "",
                "backend": "",
                "last_used": row.last_used,
                "loops": row.loops,
            }
        ]
    )
    assert "`for j in range(n):` — a graph loop" in html
    reports = report.build_report([fn])
    assert reports[0].loops == list(row.loops)
    assert "`for j in range(n):` — a graph loop" in report.report_text(reports)


def test_trace_time_errors_and_loop_notes_name_the_notebook_cell_and_line(cells):
    cells.run(
        "@kx.function\n"
        "def f(x):\n"
        "    n = 0\n"
        "    for i in range(3):\n"
        "        x = x + 1\n"
        "    return [1.0, 2.0][int(x.sum())]"
    )
    defined = cells.number
    error = cells.error("f(np.ones(2))")
    assert f"cell [{defined}], line 6: `return [1.0, 2.0][int(x.sum())]`" in str(error)
    cells.run("@kx.function\ndef g(x):\n    for i in range(3):\n        x = x + 1\n    return x")
    defined = cells.number
    cells.run("g(np.ones(2))")
    (note,) = cells.ns["g"].concrete_functions[0].loops
    assert note.startswith(f"loop at cell [{defined}], line 3: `for i in range(3):`")
