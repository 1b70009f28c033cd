"""Tiered ``auto``: a hot pure trace moves to the whole-graph executor only when its own calls
show it is faster and every result it gives is the fused executor's, to the bit."""

from __future__ import annotations

import dataclasses
from html import escape as html_escape

import numpy as np
import pytest

import kernel_ext as kx
import kernel_ext.backends as backends
from kernel_ext.backends import tiering
from kernel_ext.jupyter import records, render

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _tiering_on(monkeypatch):
    monkeypatch.setattr(backends, "TIERING", True)
    monkeypatch.setattr(tiering, "HOT_CALLS", 4)
    monkeypatch.setattr(tiering, "TRIAL_CALLS", 4)
    # (counted calls only: a call that compiles a kernel synchronously may take seconds)
    monkeypatch.setattr(tiering, "HOT_NS", 10**15)
    monkeypatch.setattr(tiering, "TRIAL_NS", 10**15)
    tiering._DECIDED.clear()
    monkeypatch.setattr(tiering, "ON_DISK", False)  # no decision from another run
    backends.SHARED.clear()  # each test makes its own executables (and tiers)


def chain(x):
    y = x
    for _ in [None] * 20:  # (a Python list: unrolled, a straight-line graph without loops)
        y = np.tanh(y) * 0.5 + x * 0.25
    return y


def _call(f, x, n):
    out = None
    for _ in range(n):
        out = f(x)
    return out


def test_a_hot_pure_trace_is_measured_and_served_by_the_faster_executor():
    x = np.random.default_rng(0).random(64)
    f = kx.function(chain)
    out = _call(f, x, 20)
    cf = f.get_concrete_function(x)
    tier = cf.executable.tier
    assert tier.state in ("whole", "fused") and len(tier.samples[0]) == 4
    assert cf.tier.startswith(("whole graph (", "fused (whole graph not faster"))
    np.testing.assert_array_equal(out, chain(x))  # bitwise: the trial compared every call
    # cache hits call the winner directly, no tier wrapper in between: the fused runner,
    # or the whole graph through the direct entry its stored runner arms
    if tier.state == "fused":
        assert next(iter(f._fast.values())) is tier._base_run
    else:
        _call(f, x, 2)
        assert f._direct is not None and f._direct.__globals__["_run"] is tier.whole.run
        np.testing.assert_array_equal(f(x), chain(x))


def test_the_decision_is_shown_in_the_monitor_and_the_report():
    x = np.random.default_rng(1).random(64)
    f = kx.function(chain)
    _call(f, x, 20)
    (row,) = records.signature_rows(f)
    assert row.tier == f.get_concrete_function(x).tier and row.tier
    html = render.signatures_html(
        [
            {
                "id": row.id,
                "inputs": "",
                "outputs": "",
                "nodes": "",
                "backend": row.backend,
                "last_used": False,
                "tier": row.tier,
            }
        ]
    )
    # the decision in words, with the executor on hover
    assert html_escape(row.tier) in html
    assert f'title="{html_escape(row.tier)} (executor: {html_escape(row.backend)})"' in html


def test_a_trace_with_effects_never_runs_twice():
    v = kx.Variable(np.zeros(3))

    def accumulate(x):
        v.assign_add(x)
        return x * 2.0

    f = kx.function(accumulate)
    for _ in range(20):
        f(np.ones(3))
    assert f.get_concrete_function(np.ones(3)).executable.tier is None
    np.testing.assert_array_equal(v.numpy(), np.full(3, 20.0))


def test_a_graph_the_whole_graph_compiler_cannot_take_does_not_tier():
    def with_einsum(x):
        return np.einsum("i,i->", x, x) * 2.0 + x  # einsum: no compiled form in the whole graph

    f = kx.function(with_einsum)
    _call(f, np.ones(3), 10)
    assert f.get_concrete_function(np.ones(3)).executable.tier is None


def test_different_bits_keep_the_fused_executor(monkeypatch):
    x = np.random.default_rng(2).random(64)
    f = kx.function(chain)
    _call(f, x, 3)
    tier = f.get_concrete_function(x).executable.tier
    monkeypatch.setattr(tiering, "same", lambda a, b: False)
    _call(f, x, 10)
    assert tier.state == "fused" and "differ in the last bits" in tier.note
    np.testing.assert_array_equal(f(x), chain(x))


def test_a_measured_program_is_not_measured_again():
    x = np.random.default_rng(3).random(64)
    f = kx.function(chain)
    _call(f, x, 20)
    cf = f.get_concrete_function(x)
    first = cf.executable.tier
    # the same program compiled again (a retrace after its trace was released): its tier
    # takes the remembered decision without a trial
    again = backends.compile_for(cf.graph, cf._tree, 1, backend="auto", name="chain")
    for _ in range(6):
        again.run(x)
    second = again.tier
    assert second is not first and second.state == first.state and second.note == first.note
    assert not second.samples[0]


def test_same_compares_bits_not_values():
    assert tiering.same(np.array([0.0]), np.array([0.0]))
    assert not tiering.same(np.array([0.0]), np.array([-0.0]))
    assert not tiering.same(np.float32(1), np.float64(1))
    nan = np.array([np.nan])
    assert tiering.same((nan, {"a": 1}), (nan.copy(), {"a": 1}))


def test_a_graph_of_a_few_ops_never_tiers():
    f = kx.function(lambda a, b: a + b)
    for _ in range(10):
        f(np.ones(3), np.ones(3))
    assert f.get_concrete_function(np.ones(3), np.ones(3)).executable.tier is None


def test_same_tells_python_signed_zeros_and_nans_by_their_bits():
    assert not tiering.same(0.0, -0.0)
    assert tiering.same(float("nan"), float("nan"))
    assert not tiering.same(1.0, np.float64(1.0))


def update_in_place(x, y):
    x *= 0.5
    x += np.tanh(y) * 0.25
    y -= x * 0.125
    return np.tanh(x)


def test_a_trace_updating_its_arguments_is_tried_on_copies_and_matches_numpy():
    rng = np.random.default_rng(4)
    x0, y0 = rng.random(64), rng.random(64)
    f = kx.function(update_in_place)
    xs, ys = x0.copy(), y0.copy()  # the traced calls' arguments ...
    xe, ye = x0.copy(), y0.copy()  # ... and eager NumPy's, updated call after call
    for _ in range(20):
        got, want = f(xs, ys), update_in_place(xe, ye)
        assert tiering.same(got, want)
    tier = f.get_concrete_function(xs, ys).executable.tier
    assert tier is not None and tier.updates_arguments
    assert tier.state in ("whole", "fused") and len(tier.samples[0]) == 4
    # every call updated the caller's arrays exactly once, trial calls included
    np.testing.assert_array_equal(xs, xe)
    np.testing.assert_array_equal(ys, ye)


def test_a_trace_changing_a_container_argument_tiers_on_copies_and_gives_numpys_items():
    def remember(state, x):
        state["last"] = np.tanh(x) * 0.5 + 1.0 - x
        state["calls"] = state["calls"] + 1.0
        return x * 2.0

    f = kx.function(remember)
    state = {"last": np.zeros(3), "calls": np.zeros(())}
    eager = {"last": np.zeros(3), "calls": np.zeros(())}
    x = np.linspace(-1.0, 1.0, 3)
    tier = f.get_concrete_function(state, x).executable.tier
    state["calls"] = np.zeros(())  # (get_concrete_function does not run it)
    for _ in range(40):
        out = f(state, x)
        np.testing.assert_array_equal(out, remember(eager, x))
        if tier.whole is not None:
            tier.whole.wait(120)
    # the trial ran the whole graph on copies: each change happened once, as eagerly
    assert tier.state in ("whole", "fused") and len(tier.samples[0]) == 4
    assert state["calls"] == eager["calls"] == 40.0
    assert tiering.same(state, eager)


@dataclasses.dataclass
class _Stats:
    total: np.ndarray
    count: float


def test_same_compares_dataclasses_field_by_field():
    a, b = _Stats(np.array([0.0, 1.0]), 2.0), _Stats(np.array([0.0, 1.0]), 2.0)
    assert tiering.same(a, b)
    assert not tiering.same(a, _Stats(np.array([-0.0, 1.0]), 2.0))
    assert not tiering.same(a, _Stats(np.array([0.0, 1.0]), 3.0))


def noisy_step(x, rng):
    noise = rng.standard_normal(x.shape)  # a draw from the caller's generator
    keep = np.random.rand(*x.shape) < 0.8  # and one from NumPy's global state
    return np.where(keep, np.tanh(x + 0.1 * noise), 0.0) * 1.25


def test_a_trace_drawing_random_numbers_tiers_with_numpys_draws_call_after_call():
    x = np.random.default_rng(5).random(32)
    f = kx.function(noisy_step)
    rng_traced, rng_eager = np.random.default_rng(7), np.random.default_rng(7)
    for i in range(20):
        np.random.seed(i)
        got = f(x, rng_traced)
        np.random.seed(i)
        want = noisy_step(x, rng_eager)
        assert tiering.same(got, want), i
        # each call advanced each generator once, trial calls included
        assert tiering.same(rng_traced.bit_generator.state, rng_eager.bit_generator.state)
    tier = f.get_concrete_function(x, rng_traced).executable.tier
    assert tier is not None and len(tier.rngs) == 2
    assert tier.state in ("whole", "fused") and len(tier.samples[0]) == 4, tier.note


def test_hoisted_draws_are_made_before_the_graph_in_program_order():
    x = np.ones(4)
    cf = kx.function(noisy_step).get_concrete_function(x, np.random.default_rng(0))
    assert tiering.effects(cf.graph, cf._tree) == {"random"}
    graph, draws, rngs = tiering.hoist_draws(cf.graph, 2)
    assert len(draws) == 2 and len(graph.inputs) == len(cf.graph.inputs) + 2 and len(rngs) == 2
    assert not any(n.op is kx.ir.OpKind.RANDOM_CALL for n in graph.nodes)
    graph.lint()


def test_a_draw_depending_on_a_computed_value_rules_tiering_out():
    def f(x, rng):
        return rng.normal(np.tanh(x), 1.0) * 2.0 + x

    cf = kx.function(f).get_concrete_function(np.ones(3), np.random.default_rng(0))
    assert tiering.effects(cf.graph, cf._tree) is None


def test_a_decision_is_kept_in_the_disk_cache_for_the_next_session(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNEL_EXT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiering, "ON_DISK", True)
    x = np.random.default_rng(8).random(64)
    f = kx.function(chain)
    _call(f, x, 20)
    cf = f.get_concrete_function(x)
    first = cf.executable.tier
    assert first.state in ("whole", "fused")
    assert list((tmp_path / "tiers").glob("*.txt"))
    tiering._DECIDED.clear()  # a new session: only the disk knows
    again = backends.compile_for(cf.graph, cf._tree, 1, backend="auto", name="chain")
    for _ in range(8):
        again.run(x)
        if again.tier.state == "trial":
            # a recalled "whole" waits for its function (the fused executor serves)
            assert again.tier.whole is not None and first.state == "whole"
            again.tier.whole.wait(120)
    assert again.tier.state == first.state and not again.tier.samples[0]
    assert again.tier.note == first.note + " (measured in an earlier session)"


def test_a_trace_whose_calls_take_long_is_hot_after_a_few_calls(monkeypatch):
    monkeypatch.setattr(tiering, "HOT_CALLS", 10_000)
    monkeypatch.setattr(tiering, "HOT_NS", 1)  # every call is "long"
    monkeypatch.setattr(tiering, "TRIAL_CALLS", 10_000)
    monkeypatch.setattr(tiering, "TRIAL_NS", 1)  # and the trial stops at TRIAL_MIN
    x = np.random.default_rng(7).random(64)
    f = kx.function(chain)
    cf = f.get_concrete_function(x)
    tier = cf.executable.tier
    out = f(x)
    assert tier.state == "counting" and tier.calls == 1 and tier.spent > 0
    out = f(x)  # the second call finds the time spent over HOT_NS
    assert tier.state != "counting"
    for _ in range(40):
        if tier.state in ("whole", "fused"):
            break
        tier.whole.wait(120)
        out = f(x)
    assert tier.state in ("whole", "fused")
    assert len(tier.samples[0]) == tiering.TRIAL_MIN
    np.testing.assert_array_equal(out, chain(x))


def test_a_whole_graph_too_long_to_compile_in_the_background_never_tiers(monkeypatch):
    monkeypatch.setattr(tiering, "MAX_LINES", 1)
    x = np.random.default_rng(8).random(64)
    f = kx.function(chain)
    out = _call(f, x, 10)
    tier = f.get_concrete_function(x).executable.tier
    assert tier.state == "fused" and "too large to compile" in tier.note
    assert tier.whole is None  # never kept, never compiled
    np.testing.assert_array_equal(out, chain(x))


def binned(x, edges):
    counts = np.zeros(edges.shape[0], np.int64)
    for i in range(x.shape[0]):
        k = int(x[i] * edges.shape[0])  # a run-time check: int() of a NaN raises
        counts[min(max(k, 0), edges.shape[0] - 1)] += 1
        x[i] = x[i] * 0.5  # the argument is updated as it goes
    return counts


def test_a_trace_with_run_time_checks_tiers_up_and_matches_numpy():
    rng = np.random.default_rng(11)
    x0, edges = rng.random(40), np.zeros(8)
    f = kx.function(binned)
    xs, xe = x0.copy(), x0.copy()
    for _ in range(8):
        assert tiering.same(f(xs, edges), binned(xe, edges))
    tier = f.get_concrete_function(xs, edges).executable.tier
    assert tier is not None and tier.state in ("whole", "fused")
    assert "whole graph (" in tier.note or "not faster" in tier.note
    np.testing.assert_array_equal(xs, xe)


def binned_copy(x, edges):
    counts = np.zeros(edges.shape[0], np.int64)
    for i in range(x.shape[0]):
        k = int(x[i] * edges.shape[0])  # a run-time check: int() of a NaN raises
        counts[min(max(k, 0), edges.shape[0] - 1)] += 1
    return counts, x * 0.5


@pytest.mark.parametrize("whole_first", [True, False])
def test_a_check_failing_in_a_trial_raises_numpys_error_and_the_trial_goes_on(whole_first):
    rng = np.random.default_rng(12)
    x0, edges = rng.random(40), np.zeros(8)
    f = kx.function(binned_copy)
    f(x0, edges)  # compiles the whole graph, starts the trial
    tier = f.get_concrete_function(x0, edges).executable.tier
    assert tier.state == "trial"
    if whole_first:  # the trial alternates which executor runs first
        tier.samples[0].append(0)
        tier.samples[1].append(0)
    bad = x0.copy()
    bad[17] = np.nan
    with pytest.raises(ValueError) as want:
        binned_copy(bad, edges)
    with pytest.raises(ValueError) as got:
        f(bad, edges)
    assert str(got.value) == str(want.value)
    for _ in range(4):  # the trial goes on with good data
        assert tiering.same(f(x0, edges), binned_copy(x0, edges))
    assert tier.state in ("whole", "fused") and "raised" not in tier.note
