"""Graph loops compiled as native loops (``jit_compile=True`` and tiered ``auto``): scalar
values in registers, slices with traced bounds, sums in NumPy's own order, the executors'
handover decided by measurement. Every result is compared with eager NumPy to the bit,
arguments after the call included."""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest
from whole_graph_support import compiled, function_for, same

import kernel_ext as kx
import kernel_ext.backends as backends
from kernel_ext.backends import tiering, whole_graph

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow

# -- kernels: index loops as people write them (every dimension traced: graph loops) -----------


def trisolv(L, b):
    x = np.zeros_like(b)
    for i in range(len(b)):
        s = b[i]
        for j in range(i):
            s = s - L[i, j] * x[j]
        x[i] = s / L[i, i]
    return x


def trisolv_dot(L, b):
    x = np.zeros_like(b)
    for i in range(len(b)):
        x[i] = (b[i] - np.dot(L[i, :i], x[:i])) / L[i, i]
    return x


def cholesky(A):
    for i in range(len(A)):
        for j in range(i):
            A[i, j] = (A[i, j] - np.dot(A[i, :j], A[j, :j])) / A[j, j]
        A[i, i] = np.sqrt(A[i, i] - np.dot(A[i, :i], A[i, :i]))
    return A


def lu(A):
    n = len(A)
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - np.sum(A[i, :j] * A[:j, j])) / A[j, j]
        for j in range(i, n):
            A[i, j] = A[i, j] - np.sum(A[i, :i] * A[:i, j])
    return A


def lower_update(A):
    for i in range(1, len(A)):
        for j in range(i):
            A[i, j] -= A[j, j] * 0.1
    return A


def prefix(x):
    out = np.empty_like(x)
    acc = 0.0
    for i in range(len(x)):
        acc = acc + x[i]
        out[i] = acc
    return out


def jacobi_1d(A, B):
    n = len(A)
    for _ in range(3):
        for i in range(1, n - 1):
            B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1])
        for i in range(1, n - 1):
            A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1])
    return A, B


def row_sums(A, x):
    y = np.zeros_like(x)
    for i in range(len(A)):
        y[i] = np.sum(A[i] * x)
    return y


def _spd(n: int) -> np.ndarray:
    a = np.random.default_rng(n).random((n, n))
    return a @ a.T + n * np.eye(n)


def _tri(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n)
    return np.tril(rng.random((n, n))) + n * np.eye(n), rng.random(n)


CASES = {
    "trisolv": (trisolv, lambda n: _tri(n)),
    "trisolv_dot": (trisolv_dot, lambda n: _tri(n)),
    "cholesky": (cholesky, lambda n: (_spd(n),)),
    "lu": (lu, lambda n: (_spd(n),)),
    "lower_update": (lower_update, lambda n: (np.arange(n * n * 1.0).reshape(n, n) / n,)),
    "prefix": (prefix, lambda n: (np.random.default_rng(n).random(n * 3),)),
    "jacobi_1d": (jacobi_1d, lambda n: tuple(np.random.default_rng(n).random((2, n + 2)))),
    "row_sums": (
        row_sums,
        lambda n: (np.random.default_rng(n).random((n, n)), np.random.default_rng(n + 1).random(n)),
    ),
}


def _eager(fn, args):
    mine = [a.copy() for a in args]
    out = fn(*mine)
    return out, mine


def _source(fn, *args) -> str:
    """The whole-graph function's source (``def graph`` on) of ``fn``'s compiled trace."""
    cf = function_for(fn, *args).get_concrete_function(*args)
    text = cf.executable.run.__globals__["_H"].ksrc.source
    return text[text.index("def graph(") :]


def _module(fn, *args) -> str:
    cf = function_for(fn, *args).get_concrete_function(*args)
    return cf.executable.run.__globals__["_H"].ksrc.source


# -- results: bitwise NumPy, compiled and on every executor ---------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("n", [1, 7, 20])
def test_loop_kernels_compile_whole_and_give_numpys_bits(name, n):
    fn, make = CASES[name]
    args = make(n)
    want, want_args = _eager(fn, args)
    same(compiled(fn, *args), want)  # fails if the fused executor ran
    mine = [a.copy() for a in args]  # the arguments the call updates, as NumPy does
    same(function_for(fn, *args)(*mine), want)
    same(tuple(mine), tuple(want_args))


@pytest.mark.parametrize("backend", ["numpy", "auto", "numba"])
@pytest.mark.parametrize("name", ["trisolv", "cholesky", "lower_update", "prefix", "jacobi_1d"])
def test_loop_kernels_give_numpys_bits_on_every_executor(name, backend):
    fn, make = CASES[name]
    args = make(9)
    want, want_args = _eager(fn, args)
    spec = [kx.TensorSpec((None,) * a.ndim, a.dtype) for a in args]
    f = kx.function(fn, backend=backend, input_signature=spec)
    for _ in range(2):
        mine = [a.copy() for a in args]
        same(f(*mine), want)
        same(tuple(mine), tuple(want_args))


# -- the generated code: a native loop over scalars ------------------------------------------


def test_a_scalar_loop_body_compiles_to_scalar_code_without_buffers():
    L, b = _tri(6)
    module = _module(trisolv, L, b)
    body = _source(trisolv, L, b)
    assert body.count("while True:") == 2  # the two loops, nested, in the function
    # no one-element heap buffers standing for 0-d values, no block loop around them
    assert "np.empty(1," not in module and "z0_" not in body
    # the index arithmetic and the loops' tests are statements on scalars in the loops
    # themselves: no kernel call, no function of scalars to inline
    assert re.search(r"\n +s\d+_t\d+ = \(t\d+_0 < \w+\)\n", body)
    loop = body[body.index("while True:") :]
    assert "_flat(" not in loop and "_scalar(" not in loop and "_nd(" not in loop
    # the loops allocate nothing per iteration: every allocation is before the outer loop
    assert "np.empty(" not in loop and "np.zeros(" not in loop


def test_the_source_does_not_grow_with_the_trip_count():
    def f(A, n):
        for i in range(n):
            for j in range(i):
                A[i, j] -= A[j, j] * 0.1
        return A

    sources = []
    for n in (10, 1000):
        A = np.ones((n, n))
        g = kx.function(f, jit_compile=True)
        want, want_args = _eager(f, (A, np.int64(n)))
        mine = A.copy()
        same(g(mine, np.int64(n)), want)
        same(mine, want_args[0])
        cf = g.get_concrete_function(A, np.int64(n))
        report = cf.executable.segments[0]
        assert report["kind"] == "whole-graph" and report["state"] == "ready"
        sources.append(report["lines"])
    assert sources[0] == sources[1] < 100


@pytest.mark.parametrize(
    "terms", [whole_graph.support.INLINE_MAX_ARGS - 2, whole_graph.support.INLINE_MAX_ARGS + 2]
)
def test_scalar_segments_with_many_inputs_are_inlined_on_both_sides_of_the_inline_limit(
    terms, tmp_path
):
    # one 0-d segment adding `terms` elements read in the loop: its statements are written
    # into the loop on both sides of the limit Numba's inliner has (CPython passes more
    # arguments as a tuple), so no call is left to inline
    src = "def f(A):\n    s = np.zeros_like(A[:, 0])\n    for i in range(len(A)):\n"
    src += "        s[i] = " + " + ".join(f"A[i, {k}]" for k in range(terms)) + "\n"
    src += "    return s\n"
    path = tmp_path / f"many_{terms}.py"  # (AutoGraph reads the function's source file)
    path.write_text("import numpy as np\n\n\n" + src)
    spec = importlib.util.spec_from_file_location(f"many_{terms}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    f = module.f
    A = np.random.default_rng(terms).random((5, terms))
    want, _ = _eager(f, (A,))
    same(compiled(f, A), want)
    body = _source(f, A)
    loop = body[body.index("while True:") :]
    assert "_scalar(" not in loop and "_flat(" not in loop
    adds = re.findall(r"\n +s\d+_t\d+ = \(\w+ \+ \w+\)", loop)
    assert len(adds) == terms - 1  # every addition, in NumPy's (left to right) order


# -- slices with traced bounds; sums in NumPy's order -----------------------------------------


def windows(x):
    out = np.zeros_like(x)
    for i in range(len(x)):
        out[i] = np.sum(x[i - 3 : i + 2] * 2.0) + np.sum(x[:-i]) + np.max(x[i : i + 1])
    return out


@pytest.mark.parametrize("n", [1, 4, 9, 40])
def test_slices_with_traced_bounds_clamp_as_python_slices_do(n):
    # x[i - 3:i + 2] starts negative (counted from the end, then empty or clamped) and
    # ends past the array; x[:-0] is empty: NumPy's sum of nothing is 0.0
    x = np.random.default_rng(n).standard_normal(n)
    want, _ = _eager(windows, (x,))
    same(compiled(windows, x), want)


def dot_sums(x, y):
    out = np.zeros_like(x)
    for i in range(len(x)):
        out[i] = np.sum(x[:i] * y[:i])
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_of_products_in_a_loop_are_numpys_pairwise_sums(dtype):
    # lengths 0 .. 299 cross NumPy's pairwise thresholds (8 elements: eight running sums;
    # 128: split in halves): each sum must be NumPy's to the bit, the empty one 0.0
    rng = np.random.default_rng(3)
    x = rng.standard_normal(300).astype(dtype) * 1e3
    y = rng.standard_normal(300).astype(dtype)
    want, _ = _eager(dot_sums, (x, y))
    same(compiled(dot_sums, x, y), want)
    body = _source(dot_sums, x, y)
    assert "_sum_loop(" in body  # NumPy's own add loop, not the kernel's lanes
    # the products go into one buffer kept for all iterations (grown when too short),
    # not into a new array per iteration
    loop = body[body.index("while True:") :]
    made = re.findall(r"(\w+) = np\.empty\(", loop)
    assert made and all(name.startswith("sum_tmp") for name in made), made


# -- tiered auto: loops ask for the whole graph on their first call -------------------------


@pytest.fixture
def tiering_on(monkeypatch):
    monkeypatch.setattr(backends, "TIERING", True)
    monkeypatch.setattr(tiering, "TRIAL_NS", 10**15)
    monkeypatch.setattr(tiering, "ON_DISK", False)
    tiering._DECIDED.clear()
    backends.SHARED.clear()


def test_a_graph_with_loops_asks_for_its_whole_graph_on_the_first_call(tiering_on):
    L, b = _tri(12)
    want, _ = _eager(trisolv, (L, b))
    spec = [kx.TensorSpec((None, None), np.float64), kx.TensorSpec((None,), np.float64)]
    f = kx.function(trisolv, input_signature=spec)
    same(f(L, b), want)
    tier = f.get_concrete_function(L, b).executable.tier
    assert tier.loops and tier.state == "trial"
    assert tier.whole.segments[0]["state"] == "ready"  # (compiled synchronously here)
    for _ in range(tiering.TRIAL_CALLS + 1):
        same(f(L, b), want)
    assert tier.state in ("whole", "fused")  # decided by its calls; bitwise either way
    assert len(tier.samples[0]) <= tiering.TRIAL_CALLS


def test_a_graph_without_loops_waits_for_its_hot_calls(tiering_on):
    def chain(x):
        return np.tanh(x) * 0.5 + x * 0.25

    x = np.random.default_rng(0).random(16)
    f = kx.function(chain)
    same(f(x), chain(x))
    tier = f.get_concrete_function(x).executable.tier
    assert not tier.loops and tier.state == "counting"


def test_the_request_asks_for_the_compiled_function_without_running_the_call():
    L, b = _tri(5)
    f = kx.function(trisolv, jit_compile=True)
    run = f.get_concrete_function(L, b).executable.run
    calls = []
    fallback = run.__globals__["_fallback"]
    run.__globals__["_fallback"] = lambda *a: calls.append(1) or fallback(*a)
    try:
        run.__globals__["request"](L, b)
    finally:
        run.__globals__["_fallback"] = fallback
    assert calls == []
    assert run.__globals__["_H"].graph_c is not None


# -- the handover to the fused executor, by measurement ------------------------------------


def shrink(x, thr):
    while np.sum(x) > thr:
        x = np.tanh(x)
    return x


@pytest.mark.parametrize("above", [False, True])
def test_the_handover_times_both_executors_and_keeps_the_faster(monkeypatch, above):
    monkeypatch.setattr(whole_graph.build, "whole_graph_handover", lambda sizes: 64)
    x = np.linspace(0.5, 3.0, 64 if above else 63)
    thr = np.float64(1.0)
    want = shrink(x, thr)
    f = kx.function(shrink, jit_compile=True)
    same(f(x, thr), want)
    run = f.get_concrete_function(x, thr).executable.run
    scope = run.__globals__
    assert f.get_concrete_function(x, thr).executable.segments[0]["handover_size"] == 64
    scope["request"](x, thr)  # the compiled function, made now (this size's own source)
    fallback = scope["_fallback"]
    calls = []
    monkeypatch.setitem(scope, "_fallback", lambda *a: calls.append(1) or fallback(*a))
    for _ in range(6):
        same(f(x, thr), want)
    ho = scope["_ho"]
    if not above:  # below the handover size: always the compiled function
        assert calls == [] and ho.choice == {}
        return
    key = x.size.bit_length()
    fused_t, graph_t = ho.times[key]
    # the first call above (before the monitor) and the next ran the executor, then the
    # compiled function was timed twice; the faster serves from then on
    assert len(fused_t) == len(graph_t) == ho.SAMPLES
    assert ho.choice[key] == (min(graph_t) <= min(fused_t))
    assert len(calls) == 1 + (2 if not ho.choice[key] else 0)
