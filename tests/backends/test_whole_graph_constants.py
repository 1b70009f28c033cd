"""Constant arrays of a compiled function: small uniform ones are filled in the function
(``np.zeros``/``np.full``, no argument for the dispatcher to unbox), others are passed in.

Checked on both sides of ``writer.FILLED_MAX`` and for fills whose bits ``==`` would not
tell apart (-0.0, a NaN with a payload), bitwise against eager NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends.whole_graph import writer

# (a compile per case: the full suite and CI run this module, the quick subset leaves it out)
pytestmark = pytest.mark.slow

NAN_PAYLOAD = np.array(0x7FF8000000000123, np.uint64).view(np.float64)[()]


def _source(f, *args) -> str:
    return f.get_concrete_function(*args).executable.run.__globals__["_H"].ksrc.source


def _kernel(n: int, fill: float):
    def accumulate(x):
        acc = np.full(n, fill)
        for i in range(x.shape[0]):
            acc[i % n] = acc[i % n] + x[i]
        return acc

    return accumulate


def _reading_kernel(n: int, fill: float):
    def weigh(x):
        w = np.full(n, fill)
        out = x * 0.0  # (np.empty(k) would trace as a constant of whatever bytes it held)
        for i in range(x.shape[0]):
            out[i] = w[i % n] * x[i]
        return out

    return weigh


def _numpys_bits_and_source(kernel, n: int) -> str:
    """``kernel`` compiled whole gives NumPy's bits on ``2 n`` elements; its source."""
    x = np.linspace(-1.0, 1.0, 2 * n)
    f = kx.function(kernel, jit_compile=True)
    got, want = f(x), kernel(x)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    return _source(f, x)


def _filled(source: str) -> bool:
    return "np.zeros((" in source or "np.full((" in source


@pytest.mark.parametrize("fill", [0.0, -0.0, 2.5, NAN_PAYLOAD])
@pytest.mark.parametrize("extra", [0, 1])
def test_uniform_constants_read_are_filled_in_the_function_up_to_the_size_limit(fill, extra):
    n = writer.FILLED_MAX + extra
    source = _numpys_bits_and_source(_reading_kernel(n, fill), n)
    assert _filled(source) == (extra == 0), (n, fill)
    assert ("def graph(p0, c0)" in source) == (extra == 1)  # passed in above the limit


@pytest.mark.parametrize("fill", [0.0, -0.0, 2.5, NAN_PAYLOAD])
@pytest.mark.parametrize("extra", [0, 1])
def test_uniform_constants_written_are_filled_at_any_size(fill, extra):
    # the function writes the array: its private copy is a new array filled with the value,
    # made in the function at any size (a copy of a constant passed in reads it too)
    n = writer.FILLED_MAX + extra
    source = _numpys_bits_and_source(_kernel(n, fill), n)
    assert _filled(source), (n, fill)
    assert "def graph(p0):" in source  # no constant passed in
    assert "ascontiguousarray(c" not in source and "ascontiguousarray(cf" not in source


def test_a_constant_that_is_not_uniform_is_passed_in():
    def ramp_plus(x):
        base = np.arange(8.0)
        for i in range(x.shape[0]):
            base[i % 8] += x[i]
        return base

    x = np.ones(16)
    f = kx.function(ramp_plus, jit_compile=True)
    assert f(x).tobytes() == ramp_plus(x).tobytes()
    assert "np.full((8,)" not in _source(f, x) and "np.zeros((8,)" not in _source(f, x)
