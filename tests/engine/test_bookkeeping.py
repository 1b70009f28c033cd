"""Honest, bounded bookkeeping: calls that fail before running a graph are failed calls, not
cache hits; records of traces released with their key objects fold into counts, so a session
that calls with a new object each time keeps flat memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.engine import trace_records as records


class Key:
    """An object argument: keyed by identity, its trace is released when it dies."""


def test_calls_that_fail_before_tracing_are_failed_calls_not_cache_hits():
    f = kx.function(lambda x, n=1: x * n)
    x = np.ones(2)
    f(x)
    f(x)
    with pytest.raises(TypeError):
        f()  # missing argument
    with pytest.raises(TypeError):
        f(x, 2, 3)  # too many
    with pytest.raises(TypeError):
        f(x, m=3)  # unknown keyword
    with pytest.raises(TypeError):
        f(x, {1, 2})  # an unhashable argument cannot be keyed
    with pytest.raises(TypeError):
        f(np.ma.masked_array(x))  # nor a masked array
    s = f.stats
    assert (s["calls"], s["traces"], s["cache_hits"]) == (7, 1, 1)  # was 6 hits
    assert s["failed_calls"] == 5


def test_input_signature_mismatches_and_failed_traces_are_failed_calls():
    g = kx.function(lambda x: x + 1, input_signature=[kx.TensorSpec([2], np.float32)])
    g(np.ones(2, np.float32))
    with pytest.raises(kx.errors.InputSignatureError):
        g(np.ones(3, np.float32))
    h = kx.function(lambda x: np.copyto(x.sum(), 1.0))  # (a NumPy scalar: TypeError)
    with pytest.raises(TypeError):
        h(np.ones(2))
    assert g.stats["cache_hits"] == 0 and g.stats.get("failed_calls") == 1
    assert h.stats["cache_hits"] == 0 and h.stats.get("failed_calls") == 1


def test_a_get_concrete_function_trace_is_not_taken_from_the_calls_hits():
    f = kx.function(lambda x: x + 1)
    f.get_concrete_function(np.ones(3))
    f(np.ones(3))
    f(np.ones(3))
    assert (f.stats["traces"], f.stats["cache_hits"]) == (1, 2)


def _call_with_dead_keys(f, n: int) -> None:
    for _ in range(n):
        key = Key()
        f(np.ones(2), key)
        del key  # no cycle holds it: it dies here, and its trace is released


def test_records_of_released_traces_are_bounded(monkeypatch):
    monkeypatch.setattr(records, "MAX_RELEASED_RECORDS", 5)
    f = kx.function(lambda x, key: x + 1)
    live = Key()
    f(np.ones(2), live)
    _call_with_dead_keys(f, 30)
    kept = f.retraces
    # the live trace's record, and the latest five released ones
    assert [r.index for r in kept] == [1, 27, 28, 29, 30, 31]
    released = f.released_traces
    assert (released.count, released.first, released.last) == (25, 2, 26)
    assert "25 earlier traces released (#2–#26" in released.summary()
    f(np.ones(2), Key())  # trace numbers keep counting
    assert f.retraces[-1].index == 32
    assert f.retraces[0].cause == "first_trace" and f.retraces[-1].cause == "object"


def test_engine_memory_stays_flat_while_key_objects_die():
    f = kx.function(lambda x, key: x + 1, backend="numpy")
    engine = [tracemalloc.Filter(True, "*kernel_ext/engine/*")]
    tracemalloc.start()
    try:
        _call_with_dead_keys(f, 130)  # past the bound (64 released records)
        before = tracemalloc.take_snapshot().filter_traces(engine)
        _call_with_dead_keys(f, 200)
        after = tracemalloc.take_snapshot().filter_traces(engine)
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    # ~760 bytes per dead object were kept before records were bounded
    assert grown < 200 * 100, grown
    assert len(f.retraces) <= 100
