"""Run-time checks: ``if bad: raise E(msg)`` and ``assert`` on a traced condition.

A branch that only raises is no ``cond`` (both branches of a ``cond`` are traced, so the
``raise`` would run while tracing, for every input): it is a ``check`` node that raises the
same exception type with the same message exactly when eager NumPy does, on every executor,
leaving the arguments as eager NumPy leaves them.
"""

from __future__ import annotations

import copy
import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import errors
from kernel_ext.backends import compiler
from kernel_ext.backends.whole_graph import unsupported_reason
from kernel_ext.ir import OpKind


def _programs_with_asserts():
    """``checked_programs`` (not a test module: pytest leaves its asserts as written)."""
    path = Path(__file__).with_name("checked_programs.py")
    spec = importlib.util.spec_from_file_location("checked_programs", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


clip_checked = _programs_with_asserts().clip_checked
doubled_finite = _programs_with_asserts().doubled_finite

EXECUTORS = ({"backend": "numpy"}, {"backend": "auto"}, {"backend": "numba"}, {"jit_compile": True})
EXECUTOR_IDS = ("numpy", "auto", "numba", "jit_compile")


def _outcome(fn, args: tuple) -> tuple:
    """What a call does: ("returns", result) or ("raises", type, message), and the
    arguments after it."""
    args = copy.deepcopy(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (see the report on fused order)
        try:
            result = fn(*args)
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            return ("raises", type(e), str(e)), args
    return ("returns", result), args


def _same(got, want, where: str) -> None:
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{where}[{k}]")
        return
    if isinstance(want, (type, str)):
        assert got == want, f"{where}: {got!r} != {want!r}"
        return
    assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, where
    assert np.array_equal(g, w, equal_nan=True), f"{where}: {g!r} != {w!r}"


def like_numpy(fn, cases: list[tuple], options: dict, **kwargs) -> kx.Function:
    """Every case gives eager NumPy's outcome and arguments (each case twice: the second
    call runs the cached graph)."""
    f = kx.function(fn, **options, **kwargs)
    for args in cases:
        for _ in range(2):
            want, want_args = _outcome(fn, args)
            got, got_args = _outcome(f, args)
            _same(got, want, f"outcome of {args!r}")
            _same(got_args, want_args, f"arguments after {args!r}")
    return f


def _check_ops(f, *args) -> list:
    return [n for n in f.get_concrete_function(*args).graph.nodes if n.op is OpKind.CHECK]


# -- programs ---------------------------------------------------------------------------------


def safe_sqrt(x):
    if (x < 0).any():
        raise ValueError("negative")
    return np.sqrt(x)


def first_negative_message(x):
    if (x < 0).any():
        raise ValueError(f"first negative value: {x[x < 0][0]}")
    return x + 1


def checked_prefix_sum(x, n):
    total = np.zeros((), x.dtype)
    for i in range(n):
        if x[i] < 0:
            raise ValueError(f"x[{i}] = {x[i]} is negative")
        total = total + x[i]
    return total


# -- behaviour --------------------------------------------------------------------------------


@pytest.mark.parametrize("options", EXECUTORS, ids=EXECUTOR_IDS)
def test_input_validation_raises_exactly_when_numpy_does(options):
    cases = [
        (np.array([1.0, 4.0, 9.0]),),
        (np.array([1.0, -4.0, 9.0]),),
        (np.array([0.0, 2.0, 3.0]),),
    ]
    f = like_numpy(safe_sqrt, cases, options)
    assert len(_check_ops(f, cases[0][0])) == 1


@pytest.mark.parametrize("options", EXECUTORS, ids=EXECUTOR_IDS)
def test_messages_of_traced_values_are_formatted_at_run_time(options):
    lo, hi = np.float64(0.5), np.float64(10.0)
    cases = [
        (np.array([1.0, 2.0, 3.0]), lo, hi),
        (np.array([0.1, 2.0, 0.25]), lo, hi),
        (np.array([1.0, 20.0]), lo, hi),
        (np.array([0.1, 0.2]), np.float64(0.0), hi),
        (np.array([1.0, 2.0]), np.float64(0.0), np.float64(1.5)),
    ]
    f = like_numpy(clip_checked, cases, options)
    assert len(_check_ops(f, *cases[0])) == 3


@pytest.mark.parametrize("options", EXECUTORS, ids=EXECUTOR_IDS)
def test_a_message_is_computed_only_when_its_check_fails(options):
    # x[x < 0][0] has no element unless the check fails: computing it for every input
    # would raise IndexError where NumPy returns
    cases = [(np.array([1.0, 2.0]),), (np.array([1.0, -2.5, -3.0]),)]
    like_numpy(first_negative_message, cases, options)


@pytest.mark.parametrize("options", EXECUTORS, ids=EXECUTOR_IDS)
def test_a_check_inside_a_graph_loop_names_the_traced_index(options):
    x = np.array([3, 1, -4, 1, 5], np.int64)
    cases = [(x, np.int64(2)), (x, np.int64(5)), (np.abs(x), np.int64(5))]
    like_numpy(checked_prefix_sum, cases, options)


@pytest.mark.slow  # one whole-graph compile of a checked loop: seconds from a cold cache
def test_the_compiled_whole_graph_checks_and_hands_a_failure_to_numpy():
    """The compiled function runs passing calls itself; a failing check signals, and the
    fused executor's rerun raises the exception with its run-time message."""
    old = compiler.set_synchronous(True)
    try:
        f = kx.function(clip_checked, jit_compile=True)
        lo, hi = np.float64(0.5), np.float64(10.0)
        ok, bad = np.array([1.0, 2.0]), np.array([0.25, 2.0])
        f(ok, lo, hi)  # compiles
        cf = f.get_concrete_function(ok, lo, hi)
        assert unsupported_reason(cf.graph) is None
        scope = cf.executable.run.__globals__
        reruns = []
        fallback = scope["_fallback"]

        def counting(*args):
            reruns.append(1)
            return fallback(*args)

        scope["_fallback"] = counting
        try:
            _same(f(ok, lo, hi), clip_checked(ok, lo, hi), "passing call")
            assert not reruns
            with pytest.raises(ValueError) as info:
                f(bad, lo, hi)
            assert reruns
            with pytest.raises(ValueError) as eager:
                clip_checked(bad, lo, hi)
            assert str(info.value) == str(eager.value)
        finally:
            scope["_fallback"] = fallback
    finally:
        compiler.set_synchronous(old)


def test_a_python_condition_still_raises_as_python_while_tracing():
    def f(x, mode):
        if mode not in ("sum", "mean"):
            raise ValueError(f"unknown mode {mode!r}")
        return np.sum(x) if mode == "sum" else np.mean(x)

    g = kx.function(f, backend="numpy")
    assert g(np.ones(3), "sum") == 3.0
    with pytest.raises(ValueError, match="unknown mode 'max'"):
        g(np.ones(3), "max")


def test_an_assert_on_a_traced_condition_is_a_check():
    g = kx.function(doubled_finite, backend="numpy")
    np.testing.assert_array_equal(g(np.ones(2)), [2.0, 2.0])
    with pytest.raises(AssertionError, match=r"^x must be finite$"):
        g(np.array([1.0, np.inf]))


def test_a_message_formatted_while_tracing_is_refused_clearly():
    def f(x):
        if x.min() < 0:
            raise ValueError("smallest: %s" % x.min())  # noqa: UP031 - the form under test
        return x

    with pytest.raises(errors.TracingConversionError, match="f-string"):
        kx.function(f, backend="numpy")(np.ones(2))


def normalise_and_check(x, y):
    x /= np.abs(x).max()
    for i in range(y.shape[0]):
        y[i] = y[i] * 2
        if y[i] > 5:
            raise ValueError(f"y[{i}] = {y[i]} is too large")
    if np.isnan(x).any():
        raise ValueError("x holds a NaN")
    return x


@pytest.mark.parametrize("options", EXECUTORS, ids=EXECUTOR_IDS)
def test_updates_of_arguments_before_a_failing_check_stay_as_eagerly(options):
    cases = [
        (np.array([1.0, -2.0]), np.array([1.0, 2.0])),
        (np.array([np.nan, 2.0]), np.array([1.0, 2.0])),
        (np.array([1.0, 4.0]), np.array([1.0, 3.0, 1.0])),
    ]
    like_numpy(normalise_and_check, cases, options)


def test_a_raising_branch_that_updates_an_argument_is_refused_clearly():
    def f(x):
        if np.isnan(x).any():
            np.multiply(x, 0.0, out=x)
            raise ValueError("nan")
        return x

    with pytest.raises(errors.UnsupportedOpError, match="updates an argument in place"):
        kx.function(f, backend="numpy")(np.ones(3))


def test_a_python_condition_with_a_message_of_traced_values_fails_at_run_time():
    def f(x, strict):
        if strict:
            raise ValueError(f"strict mode: total {x.sum()}")
        return x

    g = kx.function(f, backend="numpy")
    x = np.array([1.5, 2.0])
    with pytest.raises(ValueError) as eager:
        f(x, True)
    with pytest.raises(ValueError) as traced:
        g(x, True)
    assert str(traced.value) == str(eager.value)
    np.testing.assert_array_equal(g(x, False), x)
