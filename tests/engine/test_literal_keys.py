"""Python float and complex arguments are keyed so that values NumPy tells apart get a trace
each: ``0.0`` and ``-0.0`` (equal in Python), NaNs of different payloads, complex numbers with
signed-zero parts; and a NaN reuses the trace of the same NaN (``nan != nan`` must not make
every call a miss)."""

from __future__ import annotations

import struct
import warnings

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.trace.types import Literal

BACKENDS = ["numpy", "auto", "numba"]


def nan_with_payload(payload: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000 | payload))[0]


def bits(value: object) -> bytes:
    return np.asarray(value).tobytes()


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


@pytest.mark.parametrize("backend", BACKENDS)
def test_signed_zero_literals_get_their_own_traces(backend):
    f = kx.function(lambda x, s: x / s, backend=backend)
    x = np.ones(3)
    assert np.all(f(x, 0.0) == np.inf)
    assert np.all(f(x, -0.0) == -np.inf)  # was +inf: -0.0 hit the trace of 0.0
    assert np.all(f(x, 0.0) == np.inf)  # and the fast key tells them apart too
    assert f.experimental_get_tracing_count() == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_literals_are_matched_by_their_bits(backend):
    f = kx.function(lambda x, s: x + s, backend=backend)
    x = np.ones(2)
    quiet, payload = float("nan"), nan_with_payload(0x123)
    for s in (quiet, float("nan"), -quiet, payload, float("nan"), payload):
        got = f(x, s)
        if backend == "numpy":
            assert bits(got) == bits(x + s)
        else:  # the NaN bits of fused kernels are their own matter, not this key's
            assert np.isnan(got).all()
    assert f.experimental_get_tracing_count() == 3  # nan, -nan, nan with a payload


def test_a_new_nan_object_is_a_fast_cache_hit():
    f = kx.function(lambda x, s: x * s)
    x = np.ones(2)
    f(x, float("nan"))
    for _ in range(5):
        f(x, float("nan"))  # a new object each time: nan != nan, yet one key
    assert f.experimental_get_tracing_count() == 1
    assert f.stats["cache_hits"] == 5
    assert len(f._fast) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_complex_literals_with_signed_zero_parts_get_their_own_traces(backend):
    f = kx.function(lambda x, c: x / c, backend=backend)
    x = np.ones(2, np.complex128)
    values = [
        complex(0.0, 0.0),
        complex(-0.0, 0.0),
        complex(0.0, -0.0),
        complex(1.0, 0.0),
        complex(1.0, -0.0),
    ]
    for c in values + values:
        assert bits(f(x, c)) == bits(x / c)
    assert f.experimental_get_tracing_count() == len(values)


def test_signed_zero_keyword_arguments_get_their_own_traces():
    f = kx.function(lambda x, s=1.0: x / s)
    x = np.ones(2)
    assert np.all(f(x, s=0.0) == np.inf)
    assert np.all(f(x, s=-0.0) == -np.inf)
    assert np.all(f(x, s=0.0) == np.inf)


def test_literal_trace_types_tell_apart_what_numpy_does():
    assert Literal(0.0) != Literal(-0.0)
    assert Literal(float("nan")) == Literal(float("nan"))
    assert hash(Literal(float("nan"))) == hash(Literal(float("nan")))
    assert Literal(float("nan")) != Literal(nan_with_payload(1))
    assert Literal(complex(0.0, -0.0)) != Literal(0j)
    assert Literal(1.5) == Literal(1.5) and Literal(1.0) != Literal(1) != Literal(True)
    # A bits key never collides with a value key (-0.0's bits are 2**63 as an integer).
    assert Literal(-0.0) != Literal(float(2**63))
