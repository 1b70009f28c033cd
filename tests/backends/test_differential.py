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

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow

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


NAMED_PATHS = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}


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


#: Coverage programs per path in the default run, traced (and compiled) in batches of BATCH;
#: numba compiles every fused segment (~0.3 s a program), so it runs the first 96 only.
COVERAGE_PROGRAMS = {"numpy": 240, "auto": 240, "numba": 96, "jit": 240}
COVERAGE_CHUNKS = 4
BATCH = 10
#: NumPy's own (opaque) call where a composition documents it: choose's mode="raise" index
#: check, corrcoef of complex (clipped in place), round of complex with decimals (parts apart)
OPAQUE_BY_DESIGN = {np.choose, np.corrcoef, np.round}


def _close(g, e, what, path):
    """Exact on the NumPy executor and auto; on numba/jit a float or complex result may come
    from a fused sum (another summation order: the documented bound), so it is compared
    within it; every other dtype, shape and result stays exact."""
    g, e = np.asarray(g), np.asarray(e)
    if path in ("numpy", "auto") or e.dtype.kind not in "fc":
        return _same(g, e, what)
    assert g.dtype == e.dtype and g.shape == e.shape, f"{what}: {g.dtype}{g.shape}"
    tol = 2e-6 if e.dtype in (np.float32, np.complex64) else 1e-12
    np.testing.assert_allclose(g, e, rtol=tol, atol=tol, equal_nan=True, err_msg=what)


def _run_coverage(seeds, path):
    """Programs ``seeds`` as one batch on ``path`` against eager NumPy: no opaque NumPy call
    left in the graph, results as :func:`_close` says, output specs consistent."""
    from programs import Batch, make_coverage_program

    prog = Batch([make_coverage_program(seed) for seed in seeds])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = prog(*prog.inputs)
        f = kx.function(prog, **NAMED_PATHS[path])
        got = f(*prog.inputs)
        cf = f.get_concrete_function(*prog.inputs)
        lint(cf.graph)
    where = f"seeds {seeds} on {path}: {prog.describe()}"
    opaque = {n.params["fn"] for n in cf.graph.nodes if n.op is kx.ir.OpKind.NUMPY_CALL}
    assert opaque <= OPAQUE_BY_DESIGN, f"{where}: opaque {opaque}"
    assert len(got) == len(expected), where
    for k, (g, e) in enumerate(zip(got, expected)):
        _close(g, e, f"{where} -> output {k}", path)
        spec = cf.structured_outputs[k]
        if not hasattr(spec, "dtype"):  # a static result (array_equal of unequal shapes)
            continue
        assert spec.dtype == np.asarray(e).dtype and len(spec.shape) == np.ndim(e), where
        assert all(s is None or s == d for s, d in zip(spec.shape, np.shape(e))), where


@pytest.mark.parametrize("path", NAMED_PATHS)
@pytest.mark.parametrize("chunk", range(COVERAGE_CHUNKS))
def test_generated_coverage_programs_agree_on_every_path(chunk, path):
    """The linalg, fft, search, set, shape and statistics functions traced natively,
    mixed with ufuncs, in generated programs: NumPy's results on every path. A failing batch
    is rerun program by program so the message names the one that differs."""
    seeds = list(range(chunk, COVERAGE_PROGRAMS[path], COVERAGE_CHUNKS))
    for k in range(0, len(seeds), BATCH):
        try:
            _run_coverage(seeds[k : k + BATCH], path)
        except AssertionError:
            for seed in seeds[k : k + BATCH]:
                _run_coverage([seed], path)
            raise


def test_fft2_with_axes_none_transforms_every_axis():
    """Coverage seed 142: ``ifft2(x, axes=None)`` is NumPy's n-d transform over all axes (the
    trace took it for the default (-2, -1) and failed on a 1-d input)."""
    x = np.arange(4.0)
    for fn in (np.fft.fft2, np.fft.ifft2, np.fft.rfft2):
        got = kx.function(lambda v, fn=fn: fn(v, axes=None, norm="ortho"))(x)
        _same(got, fn(x, axes=None, norm="ortho"), fn.__name__)


def test_partition_accepts_any_kth_along_an_empty_axis():
    """Coverage seed 42: NumPy checks no ``kth`` along an axis of length 0."""
    x = np.zeros((0, 3), bool)
    _same(
        kx.function(lambda v: np.partition(v, -2, axis=0))(x),
        np.partition(x, -2, axis=0),
        "partition",
    )


def test_round_of_complex_with_decimals_rounds_each_part():
    """Coverage seed 145: NumPy rounds a complex array's parts apart; a complex division by
    the scale was off by an ulp."""
    from programs import make_coverage_program

    x = make_coverage_program(145).inputs[0]  # complex64 (2, 3)
    for path in NAMED_PATHS.values():
        _same(kx.function(lambda v: np.round(v, 1), **path)(x), np.round(x, 1), "round")
