"""The real-code corpus under kx.function on every path, held to its recorded outcomes.

Each (case, path) must end exactly as ``expected.KNOWN`` records (PASS when absent): a case
that starts passing fails until it is removed from KNOWN, and a regression fails too. WRONG is
asserted, never xfailed, so silent wrong results stay visible. The harness's own tests show
that it can see a wrong value, a mutation that never reached the caller and a frozen value.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from markers import quick_only

from realcode import harness
from realcode.expected import KNOWN

CASES = harness.all_cases()
BY_NAME = {c.name: c for c in CASES}
_RESULTS: dict[tuple[str, str], harness.Result] = {}


def result_of(name: str, path: str) -> harness.Result:
    # One run per (case, path) per session, shared by the per-case and the aggregate tests.
    key = (name, path)
    if key not in _RESULTS:
        _RESULTS[key] = harness.check(BY_NAME[name], path)
    return _RESULTS[key]


#: The quick subset's cases: the first half of each category, on NumPy; every case on every
#: path (the compiled ones take minutes from a cold kernel cache) runs in the full suite.
_CATEGORIES = Counter(c.category for c in CASES)
QUICK_CASES = [
    c.name
    for c in CASES
    if [d.category for d in CASES[: CASES.index(c)]].count(c.category)
    < (_CATEGORIES[c.category] + 1) // 2
]


@pytest.mark.parametrize(
    "name,path",
    quick_only(
        [(c.name, p) for c in CASES for p in harness.PATHS], [(n, "numpy") for n in QUICK_CASES]
    ),
    ids=[f"{c.name}-{p}" for c in CASES for p in harness.PATHS],
)
def test_case_ends_as_recorded(name: str, path: str) -> None:
    result = result_of(name, path)
    recorded = KNOWN.get((name, path), "PASS")
    if result.status == recorded:
        return
    if result.status == "PASS":
        pytest.fail(f"{name} on {path} now passes: remove it from KNOWN (was {recorded})")
    pytest.fail(f"{name} on {path}: recorded {recorded}, now {result.status}: {result.detail}")


@pytest.mark.slow  # runs every case on every path, the compiled ones included
def test_wrong_count_never_grows() -> None:
    wrong = sum(result_of(c.name, p).status == "WRONG" for c in CASES for p in harness.PATHS)
    assert wrong <= sum(status == "WRONG" for status in KNOWN.values())


def test_known_names_only_real_cases_and_paths() -> None:
    stale = [key for key in KNOWN if key[0] not in BY_NAME or key[1] not in harness.PATHS]
    assert stale == []
    assert set(KNOWN.values()) <= {"WRONG", "ERROR"}


def test_corpus_is_large_and_spread_over_categories() -> None:
    counts = Counter(c.category for c in CASES)
    assert len(CASES) >= 110
    assert set(counts) == set(harness.CATEGORIES)
    assert min(counts.values()) >= 10, counts


def test_every_case_is_module_source_and_deterministic_eagerly() -> None:
    for c in CASES:
        assert inspect.getsourcefile(c.fn).endswith(".py"), c.name  # AutoGraph reads source
        seed = harness.case_seed(c.name)
        first, second = harness.inputs_for(c, seed), harness.inputs_for(c, seed)
        out1 = harness.call_seeded(c.fn, first, seed)
        out2 = harness.call_seeded(c.fn, second, seed)
        diff = harness.compare_call(out1, first, out2, second, tolerant=False)
        assert diff.problem is None, f"{c.name}: {diff.problem}"


def test_second_inputs_differ_from_first() -> None:
    # Values frozen at trace time only show if the second call's inputs differ somewhere.
    def leaves(x: Any) -> list[Any]:
        if isinstance(x, (tuple, list)):
            return [y for item in x for y in leaves(item)]
        if isinstance(x, dict):
            return [y for item in x.values() for y in leaves(item)]
        if isinstance(x, np.random.Generator):
            return [str(x.bit_generator.state)]
        return [x]

    for c in CASES:
        seed = harness.case_seed(c.name)
        a = leaves(harness.inputs_for(c, seed))
        b = leaves(harness.inputs_for(c, seed + 1))
        assert any(harness.compare(x, y).problem for x, y in zip(a, b)), c.name


# The harness itself -----------------------------------------------------------------------------


def _demo_make(rng: np.random.Generator) -> harness.Args:
    return (rng.standard_normal(5), rng.standard_normal(5)), {}


def _demo(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x += y
    return x * 2


DEMO = harness.Case("demo", _demo, _demo_make, "inplace", ())


def _check_with(factory: Callable[[Callable[..., Any]], Callable[..., Any]]) -> harness.Result:
    return harness.check(DEMO, "numpy", traced_factory=factory)


def test_harness_passes_the_function_itself() -> None:
    result = _check_with(lambda fn: fn)
    assert (result.status, result.exact) == ("PASS", True)


def test_harness_detects_a_wrong_result() -> None:
    result = _check_with(lambda fn: lambda x, y: fn(x, y) + 1e-12)
    assert result.status == "WRONG"
    assert result.detail.startswith("result:")


def test_harness_detects_a_mutation_that_did_not_reach_the_caller() -> None:
    def functional_only(fn: Callable[..., Any]) -> Callable[..., Any]:
        return lambda x, y: fn(x.copy(), y.copy())

    result = _check_with(functional_only)
    assert result.status == "WRONG"
    assert result.detail.startswith("arg 0:")


def test_harness_detects_a_value_frozen_at_the_first_call() -> None:
    def frozen(fn: Callable[..., Any]) -> Callable[..., Any]:
        memo: list[Any] = []

        def call(x: np.ndarray, y: np.ndarray) -> Any:
            out = fn(x, y)
            memo.append(out)
            return memo[0]

        return call

    result = _check_with(frozen)
    assert result.status == "WRONG"
    assert "second call" in result.detail


def test_harness_reports_an_exception_with_its_first_line() -> None:
    def raising(fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            raise RuntimeError("boom\nmore detail")

        return call

    result = _check_with(raising)
    assert (result.status, result.detail) == ("ERROR", "RuntimeError: boom")


def test_harness_survives_its_own_failure() -> None:
    def broken_factory(fn: Callable[..., Any]) -> Callable[..., Any]:
        raise RuntimeError("factory broke")

    result = _check_with(broken_factory)
    assert result.status == "ERROR" and result.detail.startswith("harness: RuntimeError")


@pytest.mark.parametrize(
    "expected,actual,problem",
    [
        (np.array([0.0]), np.array([-0.0]), "differ"),  # signed zeros are distinct
        (np.array([np.nan]), np.array([np.nan]), None),  # NaNs are equal
        (np.array([1.0]), np.array([1.0], np.float32), "dtype"),
        (np.array([1.0]), np.array([[1.0]]), "shape"),
        (np.float64(1.0), np.array(1.0), "type"),
        (np.float64(1.0), 1.0, "type"),
        (1, np.int64(1), "type"),
        ([np.zeros(2)], (np.zeros(2),), "type"),
        ({"a": 1}, {"a": 1, "b": 2}, "keys"),
        ({"a": [np.ones(2)]}, {"a": [np.ones(2)]}, None),
    ],
)
def test_compare_distinguishes(expected: Any, actual: Any, problem: str | None) -> None:
    found = harness.compare(expected, actual).problem
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_compare_is_tolerant_only_for_floats_when_asked() -> None:
    a = np.array([1.0, 2.0])
    b = a + np.array([1e-15, 0.0])
    assert harness.compare(a, b).problem is not None
    tolerant = harness.compare(a, b, tolerant=True)
    assert tolerant.problem is None and tolerant.close_only
    assert harness.compare(np.array([1]), np.array([2]), tolerant=True).problem is not None
