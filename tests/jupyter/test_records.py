"""Engine objects as plain records (``kernel_ext.jupyter.records``): the facts every view shows.

Plain functions of real ``kx.function`` objects (or small stand-ins for an executable's
segments): no shell, no widget, no comm.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.engine import explain
from kernel_ext.ir.abstract import AbstractValue
from kernel_ext.jupyter import records


@pytest.fixture
def scaled():
    """``scaled(x, n)`` traced for float64[3] and then float64[4] (the latest call)."""

    def scaled(x, n):
        return np.tanh(x) * n

    fn = kx.function(scaled, autograph=False, backend="numpy")
    fn(np.ones(3), 2)
    fn(np.ones(4), 2)
    return fn


# -- parameters ---------------------------------------------------------------------------------


def test_parameter_names_are_the_python_functions_in_order(scaled):
    assert records.parameter_names(scaled) == ["x", "n"]


def test_parameter_names_of_a_method_leave_self_out():
    class Model:
        @kx.function
        def step(self, x, lr=0.1):
            return x * lr

    assert records.parameter_names(Model().step) == ["x", "lr"]


def test_parameter_names_of_a_callable_without_a_signature_are_empty():
    assert records.parameter_names_of(max) == []
    assert records.parameter_names_of(lambda a, *rest, k=1: a) == ["a", "rest", "k"]


# -- values -------------------------------------------------------------------------------------


def test_value_text_is_the_irs_text_of_an_abstract_value():
    assert records.value_text(AbstractValue((2, None), np.dtype(np.float32))) == "float32[2, None]"
    assert records.value_text(AbstractValue(None, np.dtype(np.float32))) == "float32[*]"
    pair = (AbstractValue((2,), np.dtype(np.float32)), AbstractValue((), np.dtype(np.int64)))
    assert records.value_text(pair) == "(float32[2], int64[])"
    assert records.value_text(None) == ""


def test_shape_and_dtype_are_the_protocols_fields():
    assert records.shape_and_dtype(AbstractValue((2, 3), np.dtype(np.float64))) == (
        "[2, 3]",
        "float64",
    )
    assert records.shape_and_dtype(AbstractValue((), np.dtype(np.bool_))) == ("[]", "bool")
    assert records.shape_and_dtype(AbstractValue(None, np.dtype(np.float32))) == ("?", "float32")
    pair = (AbstractValue((2,), np.dtype(np.float32)), AbstractValue(None, np.dtype(np.int64)))
    assert records.shape_and_dtype(pair) == ("(float32[2], int64?)", "")
    assert records.shape_and_dtype(None) == ("", "")


def test_op_name_is_the_op_kinds_text(scaled):
    ops = [records.op_name(n) for n in scaled.concrete_functions[0].graph.get_operations()]
    assert ops[0] == "placeholder" and "tanh" in ops


# -- signatures ---------------------------------------------------------------------------------


def test_signature_rows_list_each_trace_and_mark_the_latest_call(scaled):
    rows = records.signature_rows(scaled)
    assert [r.id for r in rows] == ["1", "2"]
    assert [r.inputs for r in rows] == ["x: float64[3], n: 2", "x: float64[4], n: 2"]
    assert [r.signature for r in rows] == ["x: float64[3], n: 2", "x: float64[4], n: 2"]
    assert [r.outputs for r in rows] == ["float64[3]", "float64[4]"]
    assert [r.last_used for r in rows] == [False, True]
    assert {r.backend for r in rows} == {"numpy"}
    counts = scaled.concrete_functions[0].node_counts
    assert (rows[0].nodes_traced, rows[0].nodes_optimised) == (
        counts["traced"],
        counts["optimised"],
    )
    scaled(np.ones(3), 2)  # a cache hit on the first trace moves the mark
    assert [r.last_used for r in records.signature_rows(scaled)] == [True, False]
    assert records.last_used_id(scaled) == "1"


def test_signature_ids_are_trace_numbers_and_none_is_used_before_a_call():
    fn = kx.function(lambda x: x + 1.0, backend="numpy")
    assert records.signature_rows(fn) == [] and records.last_used_id(fn) is None
    fn(np.ones(2))
    assert records.signature_id(fn.concrete_functions[0]) == "1"


def test_inputs_text_shows_python_values_as_literals_and_falls_back_for_varargs():
    def tagged(x, tag):
        return x + 1.0

    fn = kx.function(tagged, backend="numpy")
    fn(np.ones(2, np.float32), "<b>")
    cf = fn.concrete_functions[0]
    assert records.inputs_text(["x", "tag"], cf) == "x: float32[2], tag: '<b>'"
    # Names that do not pair up with the input types: the engine's own signature text.
    assert records.inputs_text(["x"], cf) == cf.signature_text()


# -- segments -----------------------------------------------------------------------------------


def test_segments_read_what_the_executable_reports_with_defaults():
    executable = SimpleNamespace(
        backend="numba",
        segments=[
            {
                "id": 4,
                "kind": "reduce",
                "ops": ["tanh", "sum"],
                "state": "ready",
                "compile_ms": 12.5,
                "nodes": [SimpleNamespace(name="tanh"), "sum"],
            },
            "not a segment",
            {"nodes": ["mul"], "backend": "numba_cuda", "label": "hand-made"},
        ],
    )
    first, second = records.segments(executable)
    assert first == records.Segment(
        id="s4",
        backend="numba",
        nodes=("tanh", "sum"),
        kind="reduce",
        ops=("tanh", "sum"),
        state="ready",
        compile_ms=12.5,
    )
    # No id: its position in the executable's list (the entry that is no dict counts).
    assert (second.id, second.backend, second.label, second.kind, second.state) == (
        "s2",
        "numba_cuda",
        "hand-made",
        None,
        None,
    )
    assert records.segments(None) == [] and records.segments(SimpleNamespace()) == []


def test_segment_index_maps_each_node_to_the_first_segment_that_fuses_it():
    found = [records.Segment("s0", "numba", ("a", "b")), records.Segment("s1", "numba", ("b", "c"))]
    assert records.segment_index(found) == {"a": 0, "b": 0, "c": 1}


# -- traces -------------------------------------------------------------------------------------


def test_retrace_entry_explains_a_trace_in_plain_data(scaled):
    first, second = scaled.retraces
    seen: list[str] = []

    def call_site(raw: str) -> str:
        seen.append(raw)
        return "cell [7], line 2"

    entry = records.retrace_entry(second, call_site, magic=False)
    assert seen == [second.call_site]
    assert (entry["trace"], entry["cause"], entry["category"]) == (2, "shape", "shape")
    assert entry["call_site"] == "cell [7], line 2"
    assert (entry["signature"], entry["closest"]) == ("x: float64[4], n: 2", 1)
    assert entry["closest_signature"] == "x: float64[3], n: 2"
    (diff,) = entry["diffs"]
    assert (diff["argument"], diff["kind"], diff["old"], diff["new"]) == (
        "x",
        "shape",
        "float64[3]",
        "float64[4]",
    )
    assert diff["sentence"] == explain.describe_diff(second.diffs[0])
    assert entry["fixes"] == records.fix_texts(second.fixes, magic=False) and entry["fixes"]
    assert entry["cost_ms"] == round(second.trace_ms + second.compile_ms, 3)
    assert entry["via"] == "call"
    assert records.retrace_entry(first, call_site, magic=False)["cause"] == "first trace"


def test_fix_texts_prefer_the_magic_form_and_drop_repeats():
    fixes = [
        explain.Fix(
            "reduce_retracing",
            "kx.function(f, reduce_retracing=True)",
            "%%tffunction --reduce-retracing",
        ),
        explain.Fix("array_argument", "f(np.asarray(n))"),
        explain.Fix(
            "reduce_retracing",
            "kx.function(f, reduce_retracing=True)",
            "%%tffunction --reduce-retracing",
        ),
    ]
    assert records.fix_texts(fixes, magic=False) == [
        "kx.function(f, reduce_retracing=True)",
        "f(np.asarray(n))",
    ]
    assert records.fix_texts(fixes, magic=True) == [
        "%%tffunction --reduce-retracing",
        "f(np.asarray(n))",
    ]


# -- purity -------------------------------------------------------------------------------------


def test_records_import_only_the_standard_library_and_the_layers_below():
    # (Importing it runs the package's __init__, which loads IPython: hence the source.)
    tree = ast.parse(Path(records.__file__).read_text())
    imported = {
        "." * node.level + (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    ours = {name for name in imported if name.startswith(".")}
    # ..ir.printer: the IR printer's names for opaque calls (DESIGN: views may use the printer)
    # .units: the views' one rule for numbers (itself pure, importing nothing)
    assert ours <= {"..engine", "..trace.types", "..ir.printer", ".units", "."}
    assert {name.split(".")[0] for name in imported - ours} <= {
        "__future__",
        "collections",
        "inspect",
        "logging",
        "dataclasses",
        "typing",
    }


# -- counters ----------------------------------------------------------------------------------


def test_failed_calls_are_counted_apart_from_cache_hits():
    f = kx.function(lambda x: x + 1)
    f(np.ones(2))
    f(np.ones(2))
    for _ in range(2):
        with pytest.raises(TypeError):
            f(np.ones(2), np.ones(2))  # one argument too many
    counts = records.call_counts(f.stats)
    assert (counts.calls, counts.traces, counts.cache_hits, counts.failed_calls) == (4, 1, 1, 2)
    assert counts.hit_rate == 0.25 and counts.hit_rate_text() == " (25%)"
    assert records.call_counts({}).hit_rate is None


# -- which path serves a trace, and compile progress ------------------------------------------


def _segs(*states: str, kind: str = "elementwise") -> list[records.Segment]:
    return [
        records.Segment(f"s{i}", "numba-cpu", ("a",), kind=kind, state=state)
        for i, state in enumerate(states)
    ]


def test_served_by_names_the_path_in_one_plain_sentence():
    assert records.served_by("numpy", []) == "runs through NumPy, one call per operation"
    assert records.served_by("numba-cpu", _segs("ready")) == "runs as 1 compiled kernel (numba-cpu)"
    assert (
        records.served_by("numba-cpu", _segs("ready", "queued"))
        == "runs as 2 compiled kernels (numba-cpu)"
    )
    assert (
        records.served_by("numba-cpu", _segs("ready", kind="whole-graph"))
        == "runs as one compiled function (numba-cpu)"
    )
    assert records.served_by("numba-cuda", _segs("ready")) == "runs as 1 CUDA kernel (numba-cuda)"
    note = "fused; tiers up after 64 calls"
    kernels = _segs(*["ready"] * 13)
    assert (
        records.served_by("numba-cpu", kernels, note, "counting")
        == "runs as 13 compiled kernels (numba-cpu); will try one compiled function after "
        "more calls"
    )
    assert (
        records.served_by("numba-cpu", kernels, note, "whole")
        == "runs as one compiled function (numba-cpu)"
    )
    # no jargon: the tier's note is the detail shown on hover, not the sentence
    for state in ("counting", "compiling", "trial", "whole", "fused"):
        assert "tier" not in records.served_by("numba-cpu", kernels, note, state)


def test_compile_progress_counts_kernels_and_says_failures():
    assert records.compile_progress([]) == ("", "")
    assert records.compile_progress(_segs("ready", "ready")) == ("", "ready")
    text, state = records.compile_progress(_segs("ready", "compiling", "queued"))
    assert state == "compiling" and "1 of 3 kernels ready" in text and "NumPy" in text
    # which kernels wait, and an estimate from those already compiled
    timed = [
        records.Segment("s0", "numba-cpu", ("a",), state="ready", compile_ms=300.0),
        *(
            records.Segment(f"s{i}", "numba-cpu", ("a",), ops=("multiply", "tanh"), state="queued")
            for i in range(1, 6)
        ),
    ]
    text, _ = records.compile_progress(timed)
    assert "1 of 6 kernels ready, about 1.50 s left" in text
    assert (
        "waiting: s1 (multiply → tanh), s2 (multiply → tanh), s3 (multiply → tanh) "
        "and 2 more" in text
    )
    assert records.compile_progress(_segs("queued"))[1] == "queued"
    assert records.compile_progress(_segs("pending"))[1] == "pending"
    text, state = records.compile_progress(_segs("ready", "failed"))
    assert state == "failed" and text.startswith("1 of 2 kernels failed to compile")
    assert records.compile_progress(_segs("unsupported")) == ("", "")


def test_signature_rows_say_what_serves_each_trace(scaled):
    rows = records.signature_rows(scaled)
    assert {r.served_by for r in rows} == {"runs through NumPy, one call per operation"}
    assert {(r.compile, r.compile_state) for r in rows} == {("", "")}


def test_a_fused_trace_reports_its_kernels_and_views_see_their_state_change():
    pytest.importorskip("numba")
    from kernel_ext.backends import compiler
    from kernel_ext.jupyter import inspector

    fn = kx.function(lambda x: np.tanh(x * 2.0).sum(), autograph=False, backend="numba")
    fn(np.ones(8))
    assert compiler.wait_for_kernels(120)
    fn(np.ones(8))
    (row,) = records.signature_rows(fn)
    assert row.served_by == "runs as 1 compiled kernel (numba-cpu)", row
    assert (row.compile, row.compile_state) == ("", "ready")
    info = inspector.function_info(fn)["signatures"][0]
    assert info["served_by"] == row.served_by and info["compile_state"] == "ready"
    assert "compile" not in info and "tier" not in info
    # A kernel's state changing (the background compiler's doing, with no call) is a change
    # the sidebar and the monitor see.
    before = inspector._fingerprint(fn)
    report = fn.concrete_functions[0].executable.segments[0]
    saved = report["state"]
    report["state"] = "compiling"
    try:
        assert inspector._fingerprint(fn) != before
        (row,) = records.signature_rows(fn)
        assert row.compile_state == "compiling" and "0 of 1 kernel ready" in row.compile
    finally:
        report["state"] = saved


def test_a_kernel_state_change_is_an_engine_event_so_idle_views_wake():
    from kernel_ext.backends import compiler
    from kernel_ext.engine import events

    got: list = []
    stop = events.subscribe(got.append)
    try:
        compiler._state_changed()
    finally:
        stop()
    assert [(e.kind, e.function) for e in got] == [("compile", None)]
