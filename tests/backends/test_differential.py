"""Differential test: eager NumPy == the NumPy executor == the reference interpreter, on
generated programs (dtypes, 0-d and size-0 shapes, broadcasting, non-contiguous and read-only
inputs)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from programs import make_program

import kernel_ext as kx
from kernel_ext.ir import interpret, lint

SEEDS = range(300)


def _same(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}"
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    np.testing.assert_array_equal(a, b, err_msg=what)


@pytest.mark.parametrize("chunk", range(10))
def test_generated_programs_agree_across_executors(chunk):
    for seed in SEEDS[chunk::10]:
        prog = make_program(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = prog(*prog.inputs)
            f = kx.function(prog)
            got = f(*prog.inputs)
            cf = f.get_concrete_function(*prog.inputs)
            lint(cf.graph)
            flat = [x for x in prog.inputs if isinstance(x, (np.ndarray, np.generic))]
            interpreted = interpret(cf.graph, flat)
        where = f"seed {seed}: {prog.describe()}"
        assert len(got) == len(expected), where
        for k, (g, e) in enumerate(zip(got, expected)):
            _same(g, e, f"{where} -> output {k} (executor)")
            _same(interpreted[k], e, f"{where} -> output {k} (interpreter)")
            spec = cf.structured_outputs[k]
            assert spec.shape == np.shape(e) and spec.dtype == np.asarray(e).dtype, where
