"""The live monitor widget and the HTML/SVG renderings (escaping, snapshot fallback)."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest

import kernel_ext as kx
import kernel_ext.jupyter as kj
from kernel_ext.jupyter import records, render
from kernel_ext.jupyter.monitor import Monitor


def shown_text(markup: str) -> str:
    """What a person reads in ``markup``: the text without tags, entities decoded."""
    import html as html_module
    import re

    return html_module.unescape(re.sub(r"<[^>]+>", "", markup))


@pytest.fixture
def dense():
    @kx.function
    def dense(x, n):
        return np.tanh(x) * n

    return dense


def test_kx_jupyter_monitor_is_the_public_helper(dense):
    m = kj.monitor(dense)
    try:
        assert isinstance(m, Monitor) and m.function is dense
    finally:
        m.close()
    with pytest.raises(TypeError, match=r"needs a kx\.function"):
        kj.monitor(lambda x: x)


def test_counters_signatures_graph_and_log_follow_calls(dense):
    m = Monitor(dense, interval=60)  # no automatic poll within the test: refresh by hand
    try:
        assert "no concrete signature yet" in m.signatures.value
        dense(np.ones(3), 2)
        dense(np.ones(3), 2)
        assert m.refresh()
        assert ">2<" in m.counters.value and "(50%)" in m.counters.value
        assert "x: float64[3], n: 2" in shown_text(m.signatures.value)
        assert m.selector.options == (("#1 (x: float64[3], n: 2)", "1"),)
        assert "<svg" in m.graph.value and "tanh" in m.graph.value
        assert not m.refresh()  # nothing changed: nothing re-rendered
        dense(np.ones(4), 2)
        m.refresh()
        assert m.selector.value == "2"  # the signature the latest call ran
        assert "▶" in m.signatures.value
        assert m.log.value.count("<li style") == 2 and "shape" in m.log.value
        m.selector.value = "1"
        assert "float64[3]" in m.graph.value and "float64[4]" not in m.graph.value
    finally:
        m.close()


def test_the_poll_thread_updates_counters_while_code_runs(dense):
    m = Monitor(dense, interval=0.02)
    try:
        before = m.refreshes
        for _ in range(200):
            dense(np.ones(3), 2)
        deadline = time.monotonic() + 30  # a wait for an update: generous under load
        while ">200<" not in m.counters.value and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ">200<" in m.counters.value and m.refreshes > before
    finally:
        m.close()


def test_full_refresh_shows_stale_captures():
    scale = {"v": 2.0}
    k = 2.0

    def body(x):
        return x * k

    f = kx.function(body)
    f(np.ones(1))
    m = Monitor(f, interval=60)
    try:
        k = 9.0
        m.refresh(full=True)
        assert "captured values changed" in m.stale.value and "was 2.0" in m.stale.value
    finally:
        m.close()
    assert scale


def test_snapshot_is_self_contained_html_with_svg_and_escaped_text():
    @kx.function
    def tagged(x, label):
        return x + 1

    tagged(np.ones(2), "<img src=x onerror=alert(1)>")
    m = Monitor(tagged, interval=60)
    try:
        bundle = m._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle
        html = bundle["text/html"]
        assert "<svg" in html and "static snapshot" in html
        assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
        assert "<script" not in html
        assert bundle["text/plain"].startswith("<kx monitor of tagged: 1 call,")
    finally:
        m.close()


def test_a_dead_function_is_reported_not_crashed():
    f = kx.function(lambda x: x)
    m = Monitor(f, interval=60)
    try:
        del f
        import gc

        gc.collect()
        assert not m.refresh()
        assert "no longer exists" in m.title.value
        assert "no longer exists" in m.snapshot_html()
    finally:
        m.close()


def test_update_snapshot_rewrites_the_displayed_output(monkeypatch, dense):
    import IPython.display as display_module

    shown, updated = [], []
    monkeypatch.setattr(display_module, "display", lambda obj, **kw: shown.append((obj, kw)))
    monkeypatch.setattr(
        display_module, "update_display", lambda obj, **kw: updated.append((obj, kw))
    )
    m = Monitor(dense, interval=60)
    try:
        m._ipython_display_()
        assert shown[0][1]["display_id"] == m.display_id and shown[0][1]["raw"]
        assert not m.update_snapshot()  # unchanged
        dense(np.ones(2), 3)
        m.refresh(full=True)
        assert m.update_snapshot()
        assert updated[0][1]["display_id"] == m.display_id
        assert "x: float64[2], n: 3" in updated[0][0]["text/html"]
    finally:
        m.close()


def test_cell_hooks_refresh_monitors_after_each_cell(cells):
    cells.run("%%tffunction\ndef hooked(x):\n    return x + 1\n")
    m = cells.magics._monitors["def:hooked"]
    cells.run("for _ in range(5):\n    hooked(np.ones(2))")
    assert ">5<" in m.counters.value


# -- the graph picture ----------------------------------------------------------------------------


def test_graph_svg_marks_inputs_captures_variables_outputs_and_segments():
    v = kx.Variable(np.zeros(3), name="state")
    table = np.arange(3.0)

    @kx.function
    def step(x):
        v.assign_add(x)
        return np.tanh(x * 2 + table)

    step(np.ones(3))
    cf = step.concrete_functions[0]

    class Executable:
        backend = "numba_cpu"
        segments = [{"label": "elementwise <chain>", "nodes": ["multiply", "add", "tanh"]}]

    cf_like = type("CF", (), {"graph": cf.graph, "executable": Executable()})()
    svg = render.graph_svg(cf_like)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert 'stroke-dasharray="5 3"' in svg and "elementwise &lt;chain&gt; [numba_cpu]" in svg
    assert "captured constant, frozen at trace time" in svg
    assert "kx.Variable state" in svg and "(output)" in svg
    assert svg.count("<path d=") >= 4


def test_graph_svg_caps_huge_graphs():
    @kx.function
    def chain(x):
        for step in [1.0] * 120:  # a Python list: unrolled, 120 nodes
            x = x + step
        return x

    chain(np.ones(2))
    svg = render.graph_svg(chain.concrete_functions[0], max_nodes=50)
    assert "first 50 nodes shown" in svg and svg.count("<rect") < 70


def test_render_escapes_everything_it_is_given():
    html = render.signatures_html(
        [
            {
                "id": "1",
                "inputs": "n: str '<b>'",
                "outputs": "<i>",
                "nodes": "1 → 1",
                "backend": "numpy",
                "last_used": True,
            }
        ]
    )
    assert "<b>" not in html and "<i>" not in html and "&lt;b&gt;" in html
    log = render.retrace_log_html(
        [
            {
                "trace": 2,
                "cause": "python value",
                "call_site": "cell [1], line 1",
                "signature": "n: '<x>'",
                "closest": 1,
                "closest_signature": "n: '<y>'",
                "diffs": [{"sentence": "n: '<y>' → '<x>'"}],
                "cost_ms": 1.0,
                "advice": "<a>",
                "fixes": ["<script>"],
            }
        ]
    )
    assert "<x>" not in log and "<script>" not in log and "&lt;script&gt;" in log


def test_counters_show_failed_calls_and_an_honest_hit_rate():
    f = kx.function(lambda x: x + 1)
    f(np.ones(2))
    f(np.ones(2))
    with pytest.raises(TypeError):
        f()
    html = render.counters_html(f.stats, None)
    assert "failed calls" in html and "1 of 3 (33.3%)" in html  # one hit of three calls
    assert "failed calls" not in render.counters_html(kx.function(lambda x: x).stats, None)
    m = Monitor(f, interval=60)
    try:
        assert "1 failed call>" in m.text()
    finally:
        m.close()


def _dangling_models() -> tuple[set, set]:
    import json
    import re

    import ipywidgets as widgets

    state = widgets.Widget.get_manager_state(drop_defaults=False)["state"]
    refs = set(re.findall(r"IPY_MODEL_([0-9a-f]+)", json.dumps(state)))
    return set(state), refs - set(state)


def test_closing_a_monitor_closes_every_widget_it_made(dense):
    before, dangling = _dangling_models()
    assert not dangling
    dense(np.ones(3), 2)
    m = Monitor(dense, interval=60)
    m.close()
    # the saved widget state (what a notebook stores and a reload renders) refers only to
    # models that exist, and the monitor left none behind
    after, dangling = _dangling_models()
    assert not dangling and after <= before


def test_a_re_run_cell_leaves_a_saveable_widget_state(cells):
    code = "%%tffunction\ny = x * 2"
    cells.run("x = np.ones(3)")
    cells.run(code)
    cells.run(code)  # the old monitor is replaced
    _, dangling = _dangling_models()
    assert not dangling


def test_the_monitor_carries_the_class_the_lab_marks_after_a_restart(dense):
    # The lab extension (labextension/src/restart.ts) finds monitors by this class, in the
    # widget view and in the saved-notebook snapshot alike, and puts a "kernel restarted"
    # banner above them when the kernel restarts.
    m = Monitor(dense, interval=60)
    try:
        assert "kx-monitor" in m.widget._dom_classes
        assert 'class="kx-monitor"' in m.snapshot_html()
    finally:
        m.close()


def test_the_header_names_the_defining_cell_once(cells):
    cells.run("%%tffunction\ndef once(x):\n    return x + 1\n")
    m = cells.magics._monitors["def:once"]
    cells.run("once(np.ones(2))")
    text = re.sub("<[^>]+>", "", m.title.value)
    assert text.count("cell [") == 1 and "defined" in text, text


def test_monitor_report_and_sidebar_write_values_the_same_way(cells):
    from kernel_ext.jupyter import inspector

    cells.run("%%tffunction\ndef same(x, n, cfg):\n    return x * n * cfg['lr']\n")
    cells.run("same(np.ones(2), 10, {'lr': 1, 'name': 'a'})")
    cells.run("same(np.ones(2), 20, {'lr': 1, 'name': 'a'})")
    m = cells.magics._monitors["def:same"]
    text = "x: float64[2], n: 10, cfg: {'lr': 1, 'name': 'a'}"
    assert text in shown_text(m.signatures.value)
    assert "Literal(" not in m.signatures.value and "int 10" not in m.signatures.value
    report = cells.run("%retrace_report same").text
    # The signatures as the monitor lists them; the sentence says the type in words.
    assert f"({text})" in report and "Literal(" not in report
    assert "n: Python int 10 → 20" in report
    payload = inspector.function_info(m.function)
    assert payload["signatures"][0]["inputs"] == text


def test_the_monitor_says_which_path_serves_each_signature_and_the_compile_progress():
    html_text = render.signatures_html(
        [
            {
                "id": "1",
                "inputs": "x: float64[2]",
                "outputs": "float64[]",
                "nodes": "3 → 2",
                "backend": "numba-cpu",
                "last_used": True,
                "served_by": "runs as 1 compiled kernel (numba-cpu)",
                "tier": "",
                "compile": "compiling in the background: 0 of 1 kernel ready; NumPy runs the rest "
                "meanwhile",
            }
        ]
    )
    assert "runs as 1 compiled kernel (numba-cpu)" in html_text
    assert "0 of 1 kernel ready" in html_text


def test_a_live_monitor_lists_the_path(dense):
    dense(np.ones(2), 3)
    m = Monitor(dense, interval=3600)
    try:
        (row,) = records.signature_rows(dense)
        assert row.served_by.startswith("runs ") and row.served_by in m.signatures.value
    finally:
        m.close()


def test_a_frozen_monitor_keeps_its_last_state_as_its_output(dense, monkeypatch):
    import IPython.display

    sent = []
    monkeypatch.setattr(
        IPython.display,
        "update_display",
        lambda bundle, raw, display_id: sent.append((bundle, display_id)),
    )
    dense(np.ones(2), 3)
    m = Monitor(dense, interval=3600)
    m.display_id = "kx-monitor-test"
    m.freeze()
    ((bundle, display_id),) = sent
    # the output is replaced by the static snapshot (no widget view left to remove), which
    # still shows the function's state
    assert display_id == "kx-monitor-test"
    assert set(bundle) == {"text/plain", "text/html"}
    assert "1 call, 1 trace, 0 cache hits" in bundle[
        "text/plain"
    ] and "x: float64[2], n: 3" in shown_text(bundle["text/html"])
    dense(np.ones(2), 4)  # a frozen monitor no longer follows the function
    assert not m.refresh(full=True)


def test_no_per_call_estimate_for_a_function_whose_only_call_failed():
    f = kx.function(lambda x: x + 1)
    with pytest.raises(TypeError):
        f()
    text = shown_text(render.counters_html(f.stats, 265_360.8, measured=False))
    # an estimate from a failed call says nothing of the graph: no figure at all
    assert "per call (estimate)—" in text and "265" not in text
    f(np.ones(2))
    text = shown_text(render.counters_html(f.stats, 265_360.8, measured=False))
    assert "per call (estimate)265 ms" in text  # one unit rule: 265,360.8 µs is 265 ms
