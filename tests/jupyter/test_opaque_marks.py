"""Every notebook view marks opaque NumPy calls and random draws: "runs NumPy at each call".

The words come from one place (``records.opaque_note``); the graph picture, the monitor's
signature table, the sidebar's graph payload and ``%retrace_report`` each show them.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.jupyter import inspector, records, render, report

I0 = "opaque: np.i0 — runs NumPy at each call"
RAND = "random: np.random.rand — draws at each call"


@pytest.fixture
def noisy_trace():
    def noisy_trace(x):
        return np.i0(x) + np.random.rand()

    fn = kx.function(noisy_trace, backend="numpy")
    fn(np.eye(3))
    return fn


def test_opaque_note_names_the_function_and_says_it_runs_each_call(noisy_trace):
    graph = noisy_trace.concrete_functions[0].graph
    notes = [records.opaque_note(n) for n in graph.get_operations()]
    assert I0 in notes and RAND in notes
    assert records.opaque_note(graph.inputs[0]) is None


def test_signature_rows_carry_the_notes(noisy_trace):
    (row,) = records.signature_rows(noisy_trace)
    assert row.opaque == (I0, RAND)


def test_notes_include_calls_inside_loop_bodies():
    def loop(x):
        while np.sum(x) < 5.0:
            x = x + np.random.rand(*x.shape)
        return x

    fn = kx.function(loop)
    fn(np.zeros(2))
    assert records.signature_rows(fn)[0].opaque == (RAND,)


def test_retrace_report_lists_them(noisy_trace):
    reports = report.build_report([noisy_trace])
    assert reports[0].opaque == [I0, RAND]
    assert I0 in report.report_text(reports)
    assert "np.i0 — runs NumPy at each call" in report.report_html(reports)


def test_graph_picture_colours_and_titles_them(noisy_trace):
    svg = render.graph_svg(noisy_trace.concrete_functions[0])
    assert "(opaque: np.i0 — runs NumPy at each call)" in svg
    assert "NumPy call / random draw" in svg


def test_monitor_signature_table_shows_them(noisy_trace):
    rows = [
        {
            "id": r.id,
            "inputs": r.signature,
            "outputs": r.outputs,
            "nodes": "",
            "backend": "",
            "last_used": r.last_used,
            "opaque": r.opaque,
        }
        for r in records.signature_rows(noisy_trace)
    ]
    html = render.signatures_html(rows)
    assert I0 in html and RAND in html


def test_sidebar_graph_payload_labels_them(noisy_trace):
    payload = inspector.graph_payload(noisy_trace.concrete_functions[0])
    labels = [n["label"] for n in payload["nodes"]]
    assert f"i0 ({I0})" in labels
