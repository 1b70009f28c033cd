"""``jit_compile=True``: whole graphs, loops and branches included, in one Numba function."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from programs import make_fusible_program, make_program

import kernel_ext as kx
from kernel_ext.backends import codegen, fused

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow


def _same(got, want, what: str = "") -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (what, g.dtype, w.dtype, g.shape, w.shape)
    np.testing.assert_array_equal(g, w, err_msg=what)


def _kinds(f, *args) -> list[str]:
    """The segments' kinds, the fused executor's own (its fallback) left out."""
    return [
        s["kind"]
        for s in f.get_concrete_function(*args).executable.segments
        if s.get("role") != "fallback"
    ]


def _main(segments: list) -> dict:
    """The one segment that is not the fallback's (a whole-graph function's report)."""
    (main,) = [s for s in segments if s.get("role") != "fallback"]
    return main


def test_the_seed_while_loop_runs_as_one_function():
    def loop(x):
        while np.sum(x) > 1:
            x = np.tanh(x)
        return x

    f = kx.function(loop, jit_compile=True)
    for x in (np.ones(5, np.float32), np.r_[np.ones(5), np.zeros(100)].astype(np.float32)):
        _same(f(x), loop(x))
        seg = _main(f.get_concrete_function(x).executable.segments)
        assert seg["kind"] == "whole-graph" and seg["state"] == "ready"


def test_integer_matrix_power_is_exact():
    def power(x, y):
        result = np.eye(10, dtype=np.int32)
        for _ in range(y):
            result = np.matmul(x, result)
        return result

    x = np.random.default_rng(0).integers(-3, 4, (10, 10)).astype(np.int32)
    f = kx.function(power, jit_compile=True)
    _same(f(x, 12), power(x, 12))  # wraps around int32 exactly as NumPy does
    assert _kinds(f, x, 12) == ["whole-graph"]


def test_float_matrix_products_use_numpys_own_loop():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((7, 5)), rng.standard_normal((5, 3))

    def f(a, b):
        return np.tanh(a @ b) @ b.T

    g = kx.function(f, jit_compile=True)
    _same(g(a, b), f(a, b))
    _same(g(a[:, ::-1], b), f(a[:, ::-1], b))  # strided operand: same strides, same loop


def test_branches_and_loops_carry_fresh_and_input_arrays():
    def f(x, n):
        i = 0
        acc = x
        while i < n:
            if np.max(acc) > 4.0:
                acc = acc * 0.5
            else:
                acc = acc + x
            i += 1
        return acc, i

    x = np.linspace(0, 1, 7)
    g = kx.function(f, jit_compile=True)
    for n in (0, 1, 9):
        got, want = g(x, np.int64(n)), kx.function(f, backend="numpy")(x, np.int64(n))
        _same(got[0], want[0], f"n={n}")
        _same(got[1], want[1], f"n={n}")
    assert _kinds(g, x, np.int64(3)) == ["whole-graph"]


def test_for_over_range_and_shape_ops():
    def f(x):
        total = np.zeros(x.shape[1], x.dtype)
        for i in kx.range(x.shape[0]):
            row = x[i]
            total = total + np.maximum(row, 0.0) * 2.0
        return total.reshape(1, -1).T, x.T.copy()

    x = np.random.default_rng(2).standard_normal((4, 3))
    g = kx.function(f, jit_compile=True)
    want = kx.function(f, backend="numpy")(x)
    got = g(x)
    _same(got[0], want[0])
    _same(got[1], want[1])
    assert _kinds(g, x) == ["whole-graph"]


@pytest.mark.parametrize("chunk", range(2))
def test_generated_programs_agree(monkeypatch, chunk):
    """General programs (bitwise: float sums stay out) and fusible ones."""
    monkeypatch.setattr(codegen, "BITWISE_ONLY", True)
    for seed in range(chunk, 40, 10):
        for prog in (make_program(seed), make_fusible_program(seed, reduce=False)):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                want = kx.function(prog, backend="numpy")(*prog.inputs)
                got = kx.function(prog, jit_compile=True)(*prog.inputs)
            for k, (g, w) in enumerate(zip(got, want)):
                assert type(g) is type(w), f"seed {seed}: {prog.describe()}"
                _same(g, w, f"seed {seed}: {prog.describe()} -> {k}")


def test_what_numpy_raises_is_raised():
    def f(x, i):
        return np.tanh(x[i]) * 2.0

    g = kx.function(f, jit_compile=True)
    x = np.linspace(0, 1, 5)
    _same(g(x, np.int64(2)), f(x, 2))
    _same(g(x, np.int64(-1)), f(x, -1))
    with pytest.raises(IndexError):
        g(x, np.int64(7))


@pytest.mark.usefixtures("settled_warnings")
def test_ops_outside_the_compiler_run_fused_with_a_warning():
    def f(x):
        y = x * 2.0 + 1.0
        return np.einsum("i,i->", y, y) - x

    x = np.random.default_rng(3).standard_normal(50)
    g = kx.function(f, jit_compile=True)
    with pytest.warns(RuntimeWarning, match="'einsum'"):
        got = g(x)
    _same(got, f(x))
    kinds = _kinds(g, x)
    assert "whole-graph" in kinds and len(kinds) >= 2


def test_the_first_call_runs_while_the_function_compiles():
    fused.set_synchronous(False)
    salt = float(np.random.default_rng().integers(1, 10**6)) + 0.25

    def f(x):
        while np.sum(x) > 1.0:
            x = x * 0.5 - salt * 0.0
        return x

    g = kx.function(f, jit_compile=True)
    x = np.full(4, 3.0)
    first = g(x)
    report = _main(g.get_concrete_function(x).executable.segments)
    assert g.get_concrete_function(x).executable.wait(timeout=120)
    assert report["state"] == "ready"
    _same(g(x), first)
    _same(first, f(x))


@pytest.mark.usefixtures("settled_warnings")
def test_a_graph_too_large_for_one_function_runs_as_fused_segments():
    from kernel_ext.backends.whole_graph import MAX_OPS, unsupported_reason

    def unrolled(x):
        y = x
        for _ in [0] * (MAX_OPS // 2 + 10):  # a Python list: the trace unrolls it
            y = np.tanh(y) * 0.5 + x
        return y

    x = np.arange(3.0)
    cf = kx.function(unrolled, backend="numpy").get_concrete_function(x)
    assert "more than" in unsupported_reason(cf.graph)
    with pytest.warns(RuntimeWarning, match="more than"):
        f = kx.function(unrolled, jit_compile=True)
        np.testing.assert_array_equal(f(x), unrolled(x))
