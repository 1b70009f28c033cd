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


NAMED_PATHS = {"numpy": {"backend": "numpy"}, "auto": {}, "numba": {"backend": "numba"},
               "jit": {"jit_compile": True}}


@pytest.mark.parametrize("path", NAMED_PATHS)
@pytest.mark.parametrize("chunk", range(4))
def test_generated_named_function_programs_agree_on_every_path(chunk, path):
    """Named NumPy functions (pad, einsum, diff, unique, nonzero, ...) are graph ops whose
    results are NumPy's on every executor; data-dependent lengths may be None statically."""
    from programs import make_named_program
    for seed in range(chunk, 120, 4):
        prog = make_named_program(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = prog(*prog.inputs)
            f = kx.function(prog, **NAMED_PATHS[path])
            got = f(*prog.inputs)
            cf = f.get_concrete_function(*prog.inputs)
            lint(cf.graph)
        where = f"seed {seed}: {prog.describe()}"
        assert kx.ir.OpKind.NUMPY_CALL not in {n.op for n in cf.graph.nodes}, where
        for k, (g, e) in enumerate(zip(got, expected)):
            _same(g, e, f"{where} -> output {k}")
            spec = cf.structured_outputs[k]
            assert spec.dtype == np.asarray(e).dtype and len(spec.shape) == np.ndim(e), where
            assert all(s is None or s == d for s, d in zip(spec.shape, np.shape(e))), where
