"""Verify mode (``kernel_ext/engine/verify.py``): a new trace's first calls also run the Python
function eagerly and compare; a difference raises VerificationError and the signature runs
eagerly from then on."""

from __future__ import annotations

import copy
import dataclasses
import functools

import numpy as np
import pytest
from markers import quick_only

import kernel_ext as kx
from kernel_ext.backends import tiering
from kernel_ext.engine.verify import VERIFIED_CALLS, ReductionBound, executor_name, first_difference
from kernel_ext.ir import OpKind
from kernel_ext.ir.interpreter import LOWER

PATHS = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}


def _eager(fn, *args):
    """``fn`` run as plain NumPy on copies: its result and the arguments after it."""
    mine = copy.deepcopy(args)
    return fn(*mine), mine


def _assert_same(a, b):
    assert tiering.same(a, b), (a, b)


# -- correct functions pass silently ----------------------------------------------------------
def _step(x, w, acc):
    """A bit of everything: a float sum and mean, a 0-d result, an in-place update of an
    argument, a list argument given a new item."""
    h = np.tanh(x @ w)
    total = np.sum(h * h)
    x[0] = total
    acc.append(h.mean(axis=0))
    return total, h.mean(), np.maximum(h, 0.0)


@pytest.mark.parametrize("path", list(PATHS))
def test_correct_functions_pass_silently_and_stop_verifying_after_three_calls(path):
    f = kx.function(_step, verify=True, **PATHS[path])
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((64, 8)), rng.standard_normal((8, 8))
    for _ in range(VERIFIED_CALLS + 2):
        want, (wx, _, wacc) = _eager(_step, x, w, [])
        acc: list = []
        got = f(x, w, acc)
        # the trace's own result (within the sum bound on fused paths), the caller's args
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        assert type(got[1]) is type(want[1]) and got[2].dtype == want[2].dtype
        np.testing.assert_allclose(x, wx, rtol=1e-12)
        assert len(acc) == len(wacc) == 1
    cf = f.concrete_functions[0]
    assert cf.verifier.eager_runs == VERIFIED_CALLS
    assert cf.verifier.failure is None and cf.verifier.remaining == 0
    assert cf.call_flat is not cf.verifier.run  # verification done: the executor serves
    assert f.stats["eager_calls"] == 0


def test_each_new_trace_is_verified_and_unverified_functions_pay_nothing():
    seen = []

    def body(x):
        seen.append(x.shape)  # runs once per trace and once per verified call
        return x * 2

    f = kx.function(body, verify=True, backend="numpy")
    for n in (3, 4):
        for _ in range(VERIFIED_CALLS + 3):
            f(np.ones(n))
    assert seen == [(3,)] * (1 + VERIFIED_CALLS) + [(4,)] * (1 + VERIFIED_CALLS)
    plain = kx.function(body, backend="numpy")
    seen.clear()
    for _ in range(5):
        plain(np.ones(3))
    assert seen == [(3,)]
    assert plain.concrete_functions[0].verifier is None


# -- a broken rule is caught ------------------------------------------------------------------
def _broken_flip(node):
    """FLIP's lowering with one wrong bit: the last element's lowest mantissa bit flipped."""

    def run(x):
        out = np.array(np.flip(x, axis=node.params.get("axis")), copy=True)
        flat = out.reshape(-1).view(np.uint64)
        flat[-1] ^= np.uint64(1)
        return out

    return run


def _flip_twice(x):
    return np.sqrt(np.flip(x) * 2.0 + 1.0) * 0.5


@pytest.mark.parametrize("path", ["numpy", "auto"])
def test_broken_lowering_is_named_with_its_executor_and_later_calls_return_eager(path, monkeypatch):
    monkeypatch.setitem(LOWER, OpKind.FLIP, _broken_flip)
    f = kx.function(_flip_twice, verify=True, **PATHS[path])
    x = np.arange(1.0, 200_001.0)  # large enough that auto fuses the elementwise chain
    want = _flip_twice(x)
    with pytest.raises(kx.errors.VerificationError) as info:
        f(x)
    e = info.value
    assert isinstance(e, kx.errors.KxError)
    last = x.size - 1
    assert e.where == f"output[{last}]" and e.eager == want[last] and e.traced != want[last]
    assert e.function == "_flip_twice" and e.signature in str(e) and e.where in str(e)
    expected_executor = "NumPy executor" if path == "numpy" else "fused executor"
    assert e.executor.startswith(expected_executor) and e.executor in str(e)
    _assert_same(e.eager_result, want)
    for _ in range(3):  # the signature runs eagerly from now on: NumPy's answer
        _assert_same(f(x), want)
    assert f.stats["eager_calls"] == 3
    assert "verification failed" in f.last_eager_reason


def _reverse_in_place(x):
    x[:] = np.flip(x)
    return None


def test_argument_difference_is_caught_and_the_caller_keeps_eager_numpys_contents(monkeypatch):
    monkeypatch.setitem(LOWER, OpKind.FLIP, _broken_flip)
    f = kx.function(_reverse_in_place, verify=True, backend="numpy")
    x = np.arange(1.0, 6.0)
    _, (want,) = _eager(_reverse_in_place, x)
    with pytest.raises(kx.errors.VerificationError, match="argument 'x'") as info:
        f(x)
    assert info.value.where == "argument 'x'[4]"
    _assert_same(x, want)  # the trace's wrong write was replaced by NumPy's
    f(x)  # eager from now on: reversed back, exactly
    _assert_same(x, np.arange(1.0, 6.0))


@dataclasses.dataclass
class _State:
    items: list
    step: int


def test_container_and_dataclass_contents_are_restored_to_eager_numpys(monkeypatch):
    monkeypatch.setitem(LOWER, OpKind.FLIP, _broken_flip)

    def update(state, d):
        state.items.append(np.flip(state.items[-1]))
        d["last"] = np.flip(d["last"])
        return None

    f = kx.function(update, verify=True, backend="numpy")
    state, d = _State([np.arange(3.0)], 0), {"last": np.arange(4.0)}
    _, (want_state, want_d) = _eager(update, state, d)
    with pytest.raises(kx.errors.VerificationError, match=r"argument 'state'\.items"):
        f(state, d)
    _assert_same(state.items, want_state.items)
    _assert_same(d, want_d)


def test_zero_d_form_difference_is_caught(monkeypatch):
    f = kx.function(lambda x: np.sum(x), verify=True, backend="numpy")
    x = np.arange(3.0)
    f(x)  # traced and verified once
    cf = f.concrete_functions[0]
    real = cf.verifier.real
    # an executor returning a 0-d array where NumPy gives a scalar (a broken 0-d mark)
    monkeypatch.setattr(cf.verifier, "real", lambda *v: np.asarray(real(*v)))
    with pytest.raises(kx.errors.VerificationError) as info:
        f(x)
    assert info.value.where == "output (type)"
    assert "NumPy scalar" in str(info.value) and "0-d array" in str(info.value)
    _assert_same(info.value.eager_result, np.sum(x))


@pytest.mark.parametrize(
    "eager, traced, where",
    [
        (np.float64(1.0), np.array(1.0), "out (type)"),
        (np.array([0.0]), np.array([-0.0]), "out[0]"),
        (np.array([1, 2], np.int32), np.array([1, 2], np.int64), "out (dtype)"),
        (np.zeros((2, 1)), np.zeros((1, 2)), "out (shape)"),
        ([1.0], (1.0,), "out"),
        ({"a": 1}, {"b": 1}, "out"),
        (1, True, "out"),
    ],
)
def test_first_difference_tells_forms_dtypes_shapes_and_signed_zeros_apart(eager, traced, where):
    assert first_difference(eager, traced, "out", None)[0] == where
    assert first_difference(eager, eager, "out", None) is None


def test_nan_equals_nan_and_sums_compare_within_the_reduction_bound():
    nan = np.array([np.nan, 1.0])
    assert first_difference(nan, nan.copy(), "out", None) is None
    a = np.array([1.0, 2.0])
    b = np.nextafter(a, 3.0)
    assert first_difference(a, b, "out", None) is not None  # bits by default
    assert first_difference(a, b, "out", ReductionBound(2)) is None  # a fused sum's bound
    assert first_difference(a, a + 1e-6, "out", ReductionBound(2)) is not None
    # a sum that cancels (a tiny result of large terms): the terms' magnitude counts
    tiny = np.array([1e-14])
    assert first_difference(tiny, tiny * 3, "out", ReductionBound(1000)) is not None
    assert first_difference(tiny, tiny * 3, "out", ReductionBound(1000, 10.0)) is None


# -- switches ---------------------------------------------------------------------------------
def test_config_verify_arms_existing_and_new_traces(monkeypatch):
    seen = []

    def body(x):
        seen.append(1)
        return x + 1

    f = kx.function(body, backend="numpy")
    f(np.ones(2))
    assert seen == [1]
    try:
        kx.config.verify(True)
        assert kx.config.verifying()
        for _ in range(VERIFIED_CALLS + 2):
            f(np.ones(2))
        assert len(seen) == 1 + VERIFIED_CALLS  # the existing trace was verified
        g = kx.function(body, backend="numpy")
        for _ in range(VERIFIED_CALLS + 2):
            g(np.ones(3))
        assert len(seen) == 2 + 2 * VERIFIED_CALLS  # and a new one
    finally:
        kx.config.verify(False)
    h = kx.function(body, backend="numpy")
    for _ in range(3):
        h(np.ones(4))
    assert len(seen) == 3 + 2 * VERIFIED_CALLS  # off again: traced once, not verified


def test_verify_switched_off_stops_pending_verification():
    seen = []

    def body(x):
        seen.append(1)
        return x + 1

    try:
        kx.config.verify(True)
        f = kx.function(body, backend="numpy")
        f(np.ones(2))
    finally:
        kx.config.verify(False)
    for _ in range(3):
        f(np.ones(2))
    assert len(seen) == 2  # the trace and the one call made while verifying


# -- effects ----------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["numpy", "auto"])
def test_variables_are_updated_once_per_call_and_compared(path):
    v = kx.Variable(np.zeros(3))

    def accumulate(x):
        v.assign_add(x * 2.0)
        return v.read_value().sum()

    f = kx.function(accumulate, verify=True, **PATHS[path])
    x = np.arange(3.0)
    outs = [f(x) for _ in range(VERIFIED_CALLS + 1)]
    np.testing.assert_array_equal(v.numpy(), (VERIFIED_CALLS + 1) * 2.0 * x)
    assert [float(o) for o in outs] == [6.0 * (i + 1) for i in range(VERIFIED_CALLS + 1)]
    assert f.concrete_functions[0].verifier.eager_runs == VERIFIED_CALLS


def test_variable_difference_is_caught_and_the_variable_keeps_eager_numpys_value(monkeypatch):
    monkeypatch.setitem(LOWER, OpKind.FLIP, _broken_flip)
    v = kx.Variable(np.arange(4.0))

    def reverse():
        v.assign(np.flip(v.read_value()))
        return None

    f = kx.function(reverse, verify=True, backend="numpy")
    with pytest.raises(kx.errors.VerificationError, match="variable"):
        f()
    np.testing.assert_array_equal(v.numpy(), np.arange(4.0)[::-1])


@pytest.mark.parametrize("path", ["numpy", "auto"])
def test_random_draws_are_made_once_per_call_as_eager_numpy_makes_them(path):
    rng = np.random.default_rng(7)

    def noisy(x):
        return x + rng.normal(size=3)

    f = kx.function(noisy, verify=True, **PATHS[path])
    got = [f(np.zeros(3)) for _ in range(VERIFIED_CALLS + 2)]
    ref = np.random.default_rng(7)
    want = [ref.normal(size=3) for _ in range(VERIFIED_CALLS + 2)]
    for g, w in zip(got, want):
        _assert_same(g, w)
    assert f.concrete_functions[0].verifier.eager_runs == VERIFIED_CALLS


def test_seeded_generator_made_inside_the_function_is_verified():
    def seeded(x):
        rng = np.random.default_rng(3)
        return x + rng.normal(size=2)

    f = kx.function(seeded, verify=True, backend="numpy")
    for _ in range(VERIFIED_CALLS + 1):
        _assert_same(f(np.zeros(2)), seeded(np.zeros(2)))
    assert f.concrete_functions[0].verifier.eager_runs == VERIFIED_CALLS


def test_unseeded_generator_made_inside_the_function_is_not_verified_and_says_why():
    def fresh(x):
        rng = np.random.default_rng()
        return x + rng.normal(size=2)

    f = kx.function(fresh, verify=True, backend="numpy")
    for _ in range(2):
        assert f(np.zeros(2)).shape == (2,)
    verifier = f.concrete_functions[0].verifier
    assert verifier.eager_runs == 0 and "without a seed" in verifier.skipped


@pytest.mark.slow  # a compile to change tier: seconds from a cold kernel cache
def test_tier_change_verifies_one_more_call(monkeypatch):
    from kernel_ext import backends

    monkeypatch.setattr(backends, "TIERING", True)
    monkeypatch.setattr(tiering, "HOT_CALLS", 1)
    monkeypatch.setattr(tiering, "TRIAL_CALLS", 1)
    monkeypatch.setattr(tiering, "MIN_GAIN", float("inf"))  # the whole graph wins
    monkeypatch.setattr(tiering, "ON_DISK", False)
    monkeypatch.setattr(tiering, "_DECIDED", {})

    def poly(x):
        return np.sum(x * x + 3.0 * x) + 0.25

    f = kx.function(poly, verify=True)
    x = np.linspace(-1.0, 1.0, 257)
    cf = None
    for _ in range(200):
        f(x)
        cf = f.concrete_functions[0]
        cf.executable.wait(60)
        if cf.executable.tier.state == "whole":
            break
    assert cf.executable.tier.state == "whole", cf.tier
    runs = cf.verifier.eager_runs
    f(x)
    f(x)
    assert cf.verifier.eager_runs == runs + 1
    assert cf.call_flat is not cf.verifier.run


def test_verify_is_an_option_of_methods_too():
    class Model:
        @functools.partial(kx.function, verify=True, backend="numpy")
        def __call__(self, x):
            return x * 3

    m = Model()
    _assert_same(m(np.ones(2)), np.full(2, 3.0))
    assert m.__call__.concrete_functions[0].verifier.eager_runs == 1


def test_variable_written_in_a_branch_is_updated_once_per_call():
    v = kx.Variable(0.0)

    def count(x):
        if np.sum(x) > 0:  # a graph cond: the writes live in its branches
            v.assign_add(1.0)
        else:
            v.assign_sub(1.0)
        return x * 2

    f = kx.function(count, verify=True, backend="numpy")
    for _ in range(VERIFIED_CALLS + 1):
        f(np.ones(3))
    assert float(v.numpy()) == VERIFIED_CALLS + 1
    assert f.concrete_functions[0].verifier.eager_runs == VERIFIED_CALLS


@pytest.mark.parametrize("path", ["auto", "numba", "jit"])
def test_sums_that_cancel_on_fused_paths_are_no_false_alarm(path):
    def centered(x):
        return np.sum(x - x.mean()), x.mean(), np.sum(x * x)

    f = kx.function(centered, verify=True, **PATHS[path])
    rng = np.random.default_rng(5)
    for _ in range(VERIFIED_CALLS):
        x = rng.standard_normal(300_000) + 1e3
        got, want = f(x), centered(x)
        np.testing.assert_allclose(got[1:], want[1:], rtol=1e-12)
    assert f.concrete_functions[0].verifier.eager_runs == VERIFIED_CALLS


class _Config:
    def __init__(self, scale):
        self.scale = scale
        self.history = []


def test_plain_object_arguments_compare_by_attributes():
    def scaled(cfg, x):
        return x * cfg.scale

    f = kx.function(scaled, verify=True, backend="numpy")
    cfg = _Config(2.0)
    for _ in range(VERIFIED_CALLS):  # read only: no false alarm on a copied object
        _assert_same(f(cfg, np.arange(3.0)), np.arange(3.0) * 2.0)
    assert f.concrete_functions[0].verifier.eager_runs == VERIFIED_CALLS


def test_a_python_counter_on_an_object_that_only_tracing_bumps_is_caught():
    # A Python side effect runs once, while tracing; eager NumPy runs it at every call.
    def counted(cfg, x):
        cfg.calls = getattr(cfg, "calls", 0) + 1
        return x * cfg.scale

    f = kx.function(counted, verify=True, backend="numpy")
    cfg = _Config(3.0)
    f(cfg, np.arange(3.0))  # traced and eager each bumped their own copy once
    with pytest.raises(kx.errors.VerificationError, match=r"argument 'cfg'"):
        f(cfg, np.arange(3.0))
    assert cfg.calls == 2  # as eager NumPy left it
    f(cfg, np.arange(3.0))  # eager from now on
    assert cfg.calls == 3


_EXECUTOR_NAMES = [
    ("numpy", "NumPy executor"),
    ("numba", "fused executor (numba-cpu segments)"),
    ("jit", "whole graph (jit_compile)"),
]


# (the fused executor's case waits ~5 s for its kernels from a cold cache: full suite only)
@pytest.mark.parametrize(
    "path, name", quick_only(_EXECUTOR_NAMES, [_EXECUTOR_NAMES[0], _EXECUTOR_NAMES[2]])
)
def test_executor_names_say_which_executor_served(path, name):
    f = kx.function(lambda x: np.sum(x * 2.0) + 1.0, **PATHS[path])
    f(np.ones(100_000))
    executable = f.concrete_functions[0].executable
    assert executable.wait(120)
    assert executor_name(executable) == name
