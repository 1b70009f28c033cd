"""Retrace explanations and ``%retrace_report``: the seeds' retracing examples, fixes,
ranking, stale captured globals, text / HTML / JSON renderings."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from IPython.core.error import UsageError

import kernel_ext as kx
from kernel_ext.engine import explain
from kernel_ext.jupyter import cells as cells_module
from kernel_ext.jupyter import records
from kernel_ext.jupyter.report import FunctionReport, RetraceReport, build_report, report_text

# -- the seeds' retracing examples, on the engine ------------------------------------------------


def test_seed_num_steps_10_then_20_is_a_python_value_retrace_with_array_fixes():
    @kx.function
    def train(num_steps):
        total = np.int64(0)
        for i in kx.range(num_steps):
            total = total + i
        return total

    train(num_steps=10)
    train(num_steps=20)
    record = train.retraces[1]
    assert record.cause == "python_value" and record.closest == 1
    assert [d.argument for d in record.diffs] == ["num_steps"]
    assert "Python int 10 → 20" in record.diffs[0].sentence()
    assert record.closest_signature == "num_steps: 10"
    assert [f.kind for f in record.fixes] == ["input_signature", "array_argument"]
    assert record.fix == "@kx.function(input_signature=[kx.TensorSpec([], np.int64)])"
    assert record.fixes[0].magic == '%%tffunction --input-signature "num_steps: int64[]"'
    # the argument's own type, passing the caller's value (never a literal of the last call)
    assert record.fixes[1].code == "num_steps=np.int64(num_steps)"
    assert records.fixes_at_call_site(record)[1].code == "train(num_steps=np.int64(20))"
    # The fix works: with the derived signature, Python numbers share one trace.
    fixed = kx.function(train.python_function, input_signature=list(record.suggested_signature))
    assert fixed(10) == 45 and fixed(20) == 190
    assert fixed.experimental_get_tracing_count() == 1


def test_seed_image_shape_change_derives_none_dimensions():
    @kx.function
    def dynamic_resize(x, new_height):
        return np.sum(x) * new_height

    img1 = np.zeros((1, 100, 100, 3), np.float32)
    dynamic_resize(img1, 50)
    dynamic_resize(np.zeros((1, 100, 100, 3), np.float32), 50)
    dynamic_resize(np.zeros((1, 120, 120, 3), np.float32), 50)
    record = dynamic_resize.retraces[1]
    assert record.cause == "shape"
    assert record.diffs[0].sentence() == (
        "x: shape float32[1, 100, 100, 3] → float32[1, 120, 120, 3] (dimensions 1 and 2 changed)"
    )
    assert record.fixes[0].code == (
        "@kx.function(input_signature=[kx.TensorSpec([1, None, None, 3], np.float32)])"
    )
    assert record.fixes[1].code == "@kx.function(reduce_retracing=True)"
    assert record.trace_ms > 0 and record.compile_ms > 0


def test_seed_int_then_array_is_a_python_to_array_retrace():
    @kx.function
    def dynamic_resize(x, new_height):
        return np.sum(x) * new_height

    img1 = np.zeros((1, 100, 100, 3), np.float32)
    dynamic_resize(img1, 50)
    dynamic_resize(img1, np.int32(60))
    record = dynamic_resize.retraces[1]
    assert record.cause == "python_to_array"
    assert explain.cause_label(record.cause) == "python value → array"
    assert "Python int 50 → array int32[]" in record.diffs[0].sentence()
    assert record.fixes[0].magic == (
        '%%tffunction --input-signature "x: float32[1, 100, 100, 3], new_height: int32[]"'
    )
    assert record.fixes[1].code == "new_height=np.int32(new_height)"


def test_dtype_change_suggests_a_cast():
    f = kx.function(lambda x: x * 2)
    f(np.ones(2, np.float32))
    f(np.ones(2, np.float64))
    record = f.retraces[1]
    assert record.cause == "dtype"
    assert record.fix == "x.astype(np.float32)"
    assert "dtype changed, float32[2] → float64[2]" in record.diffs[0].sentence()


def test_a_new_lambda_each_call_is_a_new_function_object():
    f = kx.function(lambda x, fn: fn(x))
    keep = []
    for _ in range(2):
        keep.append(lambda v: v + 1)  # alive: a dead object's traces are dropped
        f(np.ones(2), keep[-1])
    record = f.retraces[-1]
    assert record.cause == "function_object"
    assert explain.cause_label(record.cause) == "new function object"
    assert "define it once" in record.advice


def test_another_object_is_an_object_identity_retrace():
    class Model:
        pass

    f = kx.function(lambda x, m: x)
    a, b = Model(), Model()
    f(np.ones(2), a)
    f(np.ones(2), b)
    assert f.retraces[1].cause == "object"
    assert "__tracing_type__" in f.retraces[1].advice


def test_closest_signature_is_the_one_with_fewest_differences():
    f = kx.function(lambda x, n: x * n)
    f(np.ones(2), 1)
    f(np.ones(3), 1)
    f(np.ones(3), 2)
    record = f.retraces[2]
    assert record.closest == 2 and [d.argument for d in record.diffs] == ["n"]


def test_derived_signature_keeps_unchanged_python_values_and_refuses_objects():
    spec = explain.derive_input_signature(
        [
            (kx.TensorSpec((2,)), explain.Literal("train")),
            (kx.TensorSpec((3,)), explain.Literal("train")),
        ],
        [0, 1],
    )
    assert spec == (kx.TensorSpec((None,)), "train")
    ranks = explain.derive_input_signature([(kx.TensorSpec((2,)),), (kx.TensorSpec((2, 2)),)], [0])
    assert ranks == (kx.TensorSpec(None),)
    assert (
        explain.derive_input_signature([(explain.WeakRef(object),), (explain.WeakRef(int),)], [0])
        is None
    )


def test_the_retracing_warning_carries_the_explanation_fix():
    f = kx.function(lambda x, n: x * n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(8):
            f(np.ones(2), n)
    messages = [
        str(w.message) for w in caught if issubclass(w.category, kx.errors.RetracingWarning)
    ]
    assert messages and "n: 3 -> 4" in messages[0] and "input_signature" in messages[0]


def test_explain_text_uses_the_installed_call_site_formatter():
    f = kx.function(lambda x: x)
    f(np.ones(1))
    f(np.ones(2))
    explain.set_call_site_formatter(lambda raw: "cell [7], line 2")
    try:
        text = f.retraces[1].explain()
    finally:
        explain.set_call_site_formatter(None)
    assert "at cell [7], line 2" in text and "closest earlier signature, trace #1" in text
    assert "cost:" in text and "fix: @kx.function(input_signature=" in text


# -- stale captured globals -------------------------------------------------------------------


SCALE = 2.0
TABLE = np.arange(3.0)


def _scale_helper(x):
    return x * SCALE


def test_a_global_changed_after_tracing_is_reported_stale():
    global SCALE
    f = kx.function(lambda x: x * SCALE)
    f(np.ones(2))
    assert explain.stale_captures(f) == []
    SCALE = 100.0
    try:
        stale = explain.stale_captures(f)
        assert [s.sentence() for s in stale] == [
            "`SCALE` was 2.0 at trace #1, is now 100.0; the graph still uses 2.0"
        ]
        np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])  # the graph froze it
    finally:
        SCALE = 2.0
    assert explain.stale_captures(f) == []


def test_an_array_changed_in_place_and_a_helpers_global_are_reported():
    global SCALE
    f = kx.function(lambda x: _scale_helper(x) + TABLE)
    f(np.ones(3))
    TABLE[0] = 50.0
    SCALE = 3.0
    try:
        names = sorted(s.name for s in explain.stale_captures(f))
    finally:
        TABLE[0] = 0.0
        SCALE = 2.0
    assert names == ["TABLE", "_scale_helper.SCALE"]


def test_a_closure_value_changed_after_tracing_is_reported():
    factor = 2

    def body(x):
        return x * factor

    f = kx.function(body)
    f(np.ones(1))
    factor = 5
    stale = explain.stale_captures(f)
    assert [(s.name, s.kind, s.old, s.new) for s in stale] == [("factor", "closure", "2", "5")]


def test_variables_and_modules_are_never_stale():
    v = kx.Variable(np.zeros(2))
    f = kx.function(lambda x: x + v.read_value() + np.pi)
    f(np.ones(2))
    v.assign(np.ones(2))
    assert explain.stale_captures(f) == []


# -- %retrace_report ------------------------------------------------------------------------------


def _seed_cells(cells):
    cells.run("SCALE_R = 2.0")
    cells.run(
        "%%tffunction --no-widget\n"
        "def dynamic_resize(x, new_height):\n"
        "    return np.sum(x) * new_height * SCALE_R\n"
    )
    cells.run("img1 = np.zeros((1, 100, 100, 3), np.float32)\ndynamic_resize(img1, 50)")
    cells.run("dynamic_resize(np.zeros((1, 120, 120, 3), np.float32), 50)")
    shape_cell = cells.number
    cells.run("dynamic_resize(img1, np.int32(60))")
    cells.run(
        "%%tffunction --no-widget\n"
        "def train(num_steps):\n"
        "    total = np.int64(0)\n"
        "    for i in kx.range(num_steps):\n"
        "        total = total + i\n"
        "    return total\n"
    )
    cells.run("train(num_steps=10)\ntrain(num_steps=20)")
    cells.run("SCALE_R = 100.0")
    return shape_cell


def test_report_explains_the_seed_examples_with_cells_and_fixes(cells):
    shape_cell = _seed_cells(cells)
    report = cells.run("%retrace_report dynamic_resize train")
    assert isinstance(report, RetraceReport)
    text = report.text
    assert f"trace #2 (shape) at cell [{shape_cell}], line 1" in text
    assert "trace #3 (python value → array)" in text
    assert (
        "closest earlier signature, trace #1: (x: float32[1, 100, 100, 3], new_height: 50)" in text
    )
    assert (
        '%%tffunction --input-signature "x: float32[1, None, None, 3], new_height: int32[]"' in text
    )
    assert "%%tffunction --reduce-retracing" in text
    assert "num_steps: Python int 10 → 20" in text
    assert '%%tffunction --input-signature "num_steps: int64[]"' in text
    assert "`SCALE_R` was 2.0 at traces #1, #2, #3, is now 100.0; the graph still uses 2.0" in text
    assert "/tmp/" not in text and "ipython-input" not in text


def test_report_ranks_by_cost_and_counts_hits(cells):
    _seed_cells(cells)
    reports = build_report([cells.ns["train"], cells.ns["dynamic_resize"]], cells.magics.locator)
    costs = [r.cost_ms for r in reports]
    assert costs == sorted(costs, reverse=True)
    resize = next(r for r in reports if r.name == "dynamic_resize")
    assert (resize.calls, resize.traces, resize.cache_hits) == (3, 3, 0)
    assert resize.hit_rate == 0.0 and resize.kind == "def"


def test_report_json_is_plain_data_for_tools(cells):
    _seed_cells(cells)
    data = cells.run("%retrace_report train --json")
    assert json.loads(json.dumps(data)) == data
    (train,) = data["functions"]
    assert train["name"] == "train" and train["traces"] == 2
    (retrace,) = train["retraces"]
    assert retrace["category"] == "python_value" and retrace["closest"] == 1
    assert retrace["diffs"][0] == {
        "argument": "num_steps",
        "kind": "python_value",
        "old": "10",
        "new": "20",
        "sentence": retrace["diffs"][0]["sentence"],
    }
    assert retrace["fixes"][0] == '%%tffunction --input-signature "num_steps: int64[]"'


def test_report_all_lists_first_traces(cells):
    _seed_cells(cells)
    text = cells.run("%retrace_report train --all").text
    assert "trace #1 (first trace)" in text


def test_report_for_a_decorated_function_gives_python_fixes(cells):
    cells.run("@kx.function\ndef plain(x):\n    return x\nplain(np.ones(1)); plain(np.ones(2))")
    defined = cells.number
    text = cells.run("%retrace_report plain").text
    assert "fix: @kx.function(input_signature=[kx.TensorSpec([None], np.float64)])" in text
    assert f"plain (cell [{defined}])" in text
    assert f"at cell [{defined}], line 4" in text


def test_report_of_an_unknown_name_is_a_usage_error(cells):
    assert isinstance(cells.error("%retrace_report no_such_function"), UsageError)
    assert isinstance(cells.error("%retrace_report --bogus"), UsageError)


def test_report_html_escapes_user_text(cells):
    cells.run(
        "@kx.function\ndef tag(x, label):\n    return x\n"
        "tag(np.ones(1), '<b>x</b>'); tag(np.ones(1), '<img src=x onerror=alert(1)>')"
    )
    report = cells.run("%retrace_report tag")
    html = report._repr_html_()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<b>x</b>" not in html
    assert "&lt;img" not in report.text and "<img src=x" in report.text


def test_report_leaves_out_replaced_versions(cells):
    cells.run("%%tffunction --no-widget\ndef vers(x):\n    return x\n")
    old = cells.ns["vers"]
    old(np.ones(1))
    cells.run("%%tffunction --no-widget\ndef vers(x):\n    return x + 1\n")
    cells.ns["vers"](np.ones(1))
    reports = build_report([old, cells.ns["vers"]], cells.magics.locator)
    assert len(reports) == 1 and "edited" in reports[0].history[-1]


def test_report_by_name_keeps_the_retraces_of_the_version_an_edit_replaced(cells):
    cells.run("%%tffunction --no-widget\ndef step(x, n):\n    return x * n\n")
    old = cells.ns["step"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in (1, 2, 3):
            old(np.ones(2), n)
    defined = cells.number
    cells.run("%%tffunction --no-widget\ndef step(x, n):\n    return x * n + 1\n")
    edited = cells.number
    cells.ns["step"](np.ones(2), 1)
    text = cells.run("%retrace_report step").text
    # both versions: the old one's retraces are still explained, and it says it was replaced
    assert f"step (cell [{defined}], replaced by an edit in cell [{edited}])" in text
    assert "trace #3 (python value)" in text and "trace #2 (python value)" in text
    assert text.count("\nstep (cell") == 2


def test_rerun_history_counts_the_traces_before_the_run(cells):
    src = "%%tffunction --no-widget\ndef again(x, n):\n    return x * n\n"
    cells.run(src)
    cells.ns["again"](np.ones(2), 1)
    cells.run(src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cells.ns["again"](np.ones(2), 2)  # retraces after the re-run
    history = cells_module.cell_info(cells.ns["again"]).history
    assert (
        history[-1] == f"cell [{cells.number}] re-run, unchanged: kept the function "
        "(1 trace before this run)"
    )


def test_magic_help_is_plain_text_with_the_magics_own_prefix(cells):
    cell_help = cells.shell.find_cell_magic("tffunction").__doc__
    line_help = cells.shell.find_line_magic("retrace_report").__doc__
    assert cell_help.startswith("usage: %%tffunction [")
    assert line_help.startswith("usage: %retrace_report [")
    for text in (cell_help, line_help):
        assert "``" not in text and "**" not in text and "::" not in text


def test_empty_report_says_so():
    assert "No traced functions yet" in RetraceReport([]).text


@pytest.mark.parametrize("cause", sorted(explain.CAUSE_LABELS))
def test_every_cause_has_words(cause):
    assert explain.cause_label(cause) and "_" not in explain.cause_label(cause)


BIG = np.zeros(1_000_000)


def test_a_large_captured_array_is_sampled_and_still_checked():
    global BIG
    f = kx.function(lambda x: x + BIG[:2])
    f(np.ones(2))
    original = BIG
    BIG[0] = 1.0  # sampled element (the sample starts at 0)
    assert [s.name for s in explain.stale_captures(f)] == ["BIG"]
    BIG[0] = 0.0
    assert explain.stale_captures(f) == []
    BIG = np.zeros(1_000_000)  # rebinding: same contents, another object
    try:
        assert [s.name for s in explain.stale_captures(f)] == ["BIG"]
    finally:
        BIG = original


def test_report_counts_failed_calls_and_folded_records(monkeypatch):
    from kernel_ext.engine import trace_records as engine_records
    from kernel_ext.jupyter.report import report_html, report_text

    monkeypatch.setattr(engine_records, "MAX_RELEASED_RECORDS", 2)

    class Key:
        pass

    f = kx.function(lambda x, key: x + 1, name="keyed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(6):
            f(np.ones(2), Key())  # each key dies at once: its trace is released
        with pytest.raises(TypeError):
            f(np.ones(2))
        f(np.ones(2), Key())
    (report,) = build_report([f])
    assert (report.calls, report.cache_hits, report.failed_calls) == (8, 0, 1)
    text = report_text([report])
    assert "failed calls 1" in text
    assert "5 earlier traces released (#1–#5" in text  # 7 released, the latest 2 kept
    assert "failed calls 1" in report_html([report])


# -- every offered fix is checked by replaying the traced signatures ----------------------------


def _tanh_scaled(x, n):
    return np.tanh(x) * n


def _report_of_the_calls() -> FunctionReport:
    """The report of ``_tanh_scaled`` after the three calls (retracing warnings silenced)."""
    f = kx.function(_tanh_scaled)
    for x, n in _calls():
        f(x, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (r,) = build_report([f])
    return r


def _calls():
    return [(np.ones(3), 10), (np.ones(4), 10), (np.ones(4), 20)]


def test_advice_never_offers_a_fix_that_would_leave_the_retraces():
    r = _report_of_the_calls()
    # reduce_retracing cannot merge n: 10 -> 20 (a Python value): not offered against it
    text = "\n".join(r.fixes + r.partial_fixes + r.retraces[-1]["fixes"])
    assert "reduce_retracing" not in text and "--reduce-retracing" not in text
    # against the shape retrace alone it is offered: the next size reuses the widened trace
    assert "@kx.function(reduce_retracing=True)" in r.retraces[0]["fixes"]
    assert r.fixes and all("input_signature" in fix for fix in r.fixes)
    # the call site's own call, rewritten; the effect is the replayed trace count
    assert r.partial_fixes == ["f(x, np.int64(n)) — 2 traces instead of 3"]


def test_each_fix_offered_to_avoid_all_retraces_leaves_one_trace_when_applied():
    r = _report_of_the_calls()
    for fix in r.fixes:  # run the fix: the same calls through the fixed function
        options = eval(
            fix.removeprefix("@kx.function(")[:-1].replace("=", ":", 1).join("{}"),
            {"kx": kx, "np": np, "input_signature": "input_signature"},
        )
        fixed = kx.function(_tanh_scaled, **options)
        for x, n in _calls():
            np.testing.assert_array_equal(fixed(x, n), _tanh_scaled(x, n))
        assert len(fixed.concrete_functions) == 1, fix


def _decay(w, lr):
    return w * (1 - lr)


@pytest.mark.parametrize(
    "options",
    [{"backend": "numpy"}, {"backend": "auto"}, {"backend": "numba"}, {"jit_compile": True}],
    ids=["numpy", "auto", "numba", "jit_compile"],
)
@pytest.mark.usefixtures("settled_warnings")
def test_float_argument_advice_uses_its_own_type_and_replays_to_one_trace(options):
    rates = [0.1, 0.01, 0.001, 0.5, 0.25, 0.125, 0.3, 0.7]
    w = np.linspace(0.0, 1.0, 4)
    decay = kx.function(_decay, **options)
    with pytest.warns(kx.errors.RetracingWarning) as caught:
        for lr in rates:
            decay(w, lr)
    # the warning names the argument's own type, from the recorded float values
    warning = str(caught[0].message)
    assert "np.float64(lr)" in warning and "np.int32" not in warning
    (r,) = build_report([decay])
    fix = next(f for f in decay.retraces[-1].fixes if f.kind == "array_argument")
    assert fix.code == "lr=np.float64(lr)" and fix.traces == 1 and fix.before == len(rates)
    assert fix.effect == f"1 trace instead of {len(rates)}"
    # the report shows the call as written at the call site, rewritten
    assert "decay(w, np.float64(lr))" in r.fixes
    assert r.retraces[-1]["fixes"][-1] == "decay(w, np.float64(lr))"
    assert r.retraces[-1]["effects"][-1] == f"1 trace instead of {len(rates)}"
    assert f"decay(w, np.float64(lr))  — 1 trace instead of {len(rates)}" in report_text([r])
    # following the advice: one trace, and the values NumPy computes (0.1 stays 0.1)
    fixed = kx.function(_decay, **options)
    for lr in rates:
        got = fixed(w, np.float64(lr))
        want = _decay(w, np.float64(lr))
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype and got.shape == want.shape
    assert fixed.experimental_get_tracing_count() == 1


def test_call_rewrite_keeps_the_call_as_written_and_wraps_only_the_argument():
    fix = explain.Fix(
        "array_argument", "lr=np.float64(lr)", argument="lr", position=1, wrap="np.float64({})"
    )
    rewrite = explain.fix_at_call_site
    cases = {
        "loss = decay(w, lr * 0.5) + np.sum(w)": "decay(w, np.float64(lr * 0.5))",
        "decay(w, lr=rates[i])": "decay(w, lr=np.float64(rates[i]))",
        "self.decay(w, 0.1)": "self.decay(w, np.float64(0.1))",
        "step(w, lr)": "step(w, np.float64(lr))",  # the only call: a renamed Function
        "decay(*args)": "lr=np.float64(lr)",  # position unknown: left as it was
        "for lr in rates:": "lr=np.float64(lr)",  # no call at all
    }
    import linecache

    for line, want in cases.items():
        linecache.cache["<kx-test-call>"] = (len(line), None, [line + "\n"], "<kx-test-call>")
        assert rewrite(fix, "decay", "<kx-test-call>:1").code == want, line
    del linecache.cache["<kx-test-call>"]


def test_replayed_reduce_retracing_counts_what_the_engine_traces():
    rng = np.random.default_rng(0)
    for _ in range(20):
        f = kx.function(_tanh_scaled, reduce_retracing=True)
        plain = kx.function(_tanh_scaled)
        for _ in range(6):
            x = np.ones(tuple(int(d) for d in rng.integers(1, 3, size=rng.integers(1, 3))))
            n = int(rng.integers(0, 2))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                f(x, n)
                plain(x, n)
        calls = [cf.input_types for cf in plain.concrete_functions]
        assert explain.replay(calls, reduce_retracing=True) == len(f.concrete_functions)


def test_the_retrace_log_is_numbered_by_trace_only():
    f = kx.function(_tanh_scaled)
    for x, n in _calls():
        f(x, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        html = RetraceReport(build_report([f]))._repr_html_()
    assert "<ol" not in html and "trace #2" in html and "trace #3" in html


def test_report_formats_the_counters_the_monitor_and_sidebar_format_without_rounding_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 2.94501 ms reads "2.95 ms" formatted once (the monitor, the sidebar); rounded to the µs
    # first (2.945, just below in binary) it read "2.94 ms" in the report
    from kernel_ext.jupyter import units

    @kx.function
    def scaled(x):
        return x * 2.0

    scaled(np.ones(3))
    stats = dict(scaled.stats, trace_ms=2.94501, compile_ms=0.0)
    monkeypatch.setattr(type(scaled), "stats", property(lambda self: stats))
    (report,) = build_report([scaled], names=["scaled"])
    assert units.duration(2.94501) == "2.95 ms"
    assert "tracing 2.95 ms + compiling" in report_text([report])
    assert RetraceReport([report]).to_json()["functions"][0]["trace_ms"] == 2.945
