"""Fused executors shared by traces that differ only in sizes (backends/sharing.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from programs import make_fusible_program

import kernel_ext as kx
from kernel_ext.backends import SHARED, fused
from kernel_ext.backends.sharing import erase_sizes, size_pattern_key
from kernel_ext.ir import lint

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def _sync():
    old = fused.set_synchronous(True)
    yield
    fused.set_synchronous(old)


def _w3(x, a, b, c):
    return np.tanh(a * x + b) * (1 / (1 + np.exp(-x))) + 0.5 * x * x - c


def _graph(fn, *args):
    f = kx.function(fn, backend="numba")
    f(*args)
    return f.get_concrete_function(*args).graph


def test_traces_differing_only_in_sizes_share_one_fused_executor():
    f = kx.function(_w3, backend="numba")
    rng = np.random.default_rng(0)
    cfs = []
    for n in (1000, 1500, 2000, 2500):
        args = [rng.standard_normal(n).astype(np.float32) for _ in range(4)]
        np.testing.assert_array_equal(f(*args), _w3(*args))
        cfs.append(f.get_concrete_function(*args))
    assert f.experimental_get_tracing_count() == 4
    # every trace keeps its own static graph; the second compiled for all sizes, 3rd+ reuse
    assert [cf.graph.inputs[0].aval.shape for cf in cfs] == [(1000,), (1500,), (2000,), (2500,)]
    assert cfs[2].executable.run is cfs[1].executable.run is cfs[3].executable.run
    assert cfs[0].executable.run is not cfs[1].executable.run


def test_size_pattern_keeps_broadcasting_and_equal_sizes_apart():
    def outer(x, y):
        return np.tanh(x[:, None] * y[None, :]) + 1.0

    def add(x, y):
        return np.exp(x + y) * 2.0

    f32 = np.float32
    key = size_pattern_key
    assert key(_graph(add, np.ones(5, f32), np.ones(5, f32))) == key(
        _graph(add, np.ones(9, f32), np.ones(9, f32))
    )
    # broadcasting a size-1 operand is another program
    assert key(_graph(add, np.ones(5, f32), np.ones(5, f32))) != key(
        _graph(add, np.ones(5, f32), np.ones(1, f32))
    )
    # two equal sizes vs two different ones: another fusion domain pattern
    assert key(_graph(outer, np.ones(5, f32), np.ones(5, f32))) != key(
        _graph(outer, np.ones(5, f32), np.ones(7, f32))
    )
    assert key(_graph(outer, np.ones(5, f32), np.ones(7, f32))) == key(
        _graph(outer, np.ones(6, f32), np.ones(8, f32))
    )
    # dtypes are part of the key
    assert key(_graph(add, np.ones(5, f32), np.ones(5, f32))) != key(
        _graph(add, np.ones(5), np.ones(5))
    )


def test_sizes_inside_attributes_and_constants_are_never_erased():
    def reshaped(x):
        return np.tanh(x.reshape(2, x.shape[0] // 2)) * 3.0

    def reshaped_any(x):
        return np.tanh(x.reshape(2, -1)) * 3.0

    def with_const(x, c):
        return np.exp(x) * c

    f32 = np.float32
    key = size_pattern_key
    # the reshape target (2, 3) vs (2, 4) is an attribute: different programs
    assert key(_graph(reshaped, np.ones(6, f32))) != key(_graph(reshaped, np.ones(8, f32)))
    # reshape(2, -1) is one program for every even length: shared, and right at each size
    assert key(_graph(reshaped_any, np.ones(6, f32))) == key(_graph(reshaped_any, np.ones(8, f32)))
    f = kx.function(reshaped_any, backend="numba")
    for n in (6, 8, 10, 12):
        x = np.arange(n, dtype=f32)
        np.testing.assert_array_equal(f(x), reshaped_any(x))

    def times(v):  # v is captured: a constant of the graph
        return lambda x: np.exp(x) * v

    small = [
        _graph(times(v), np.ones(5, f32))
        for v in (np.arange(5, dtype=f32), np.arange(5, dtype=f32) + 1)
    ]
    assert key(small[0]) != key(small[1])
    big = _graph(times(np.arange(500, dtype=f32)), np.ones(500, f32))
    assert key(big) is None  # large constants: never shared
    assert key(_graph(with_const, np.ones(5, f32), f32(2))) is not None


def test_erased_graph_keeps_structure_and_passes_lint():
    g = _graph(_w3, *(np.ones(7, np.float32) for _ in range(4)))
    e = erase_sizes(g)
    lint(e)
    assert [n.op for n in e.nodes] == [n.op for n in g.nodes]
    assert all(n.aval is None or n.aval.shape in ((None,), ()) for n in e.nodes)
    assert g.inputs[0].aval.shape == (7,)  # the original is untouched


def _rescale(value, grow):
    """``value`` with every dimension d > 1 grown to ``grow(d)`` (values wrap around)."""
    if not isinstance(value, np.ndarray) or value.ndim == 0:
        return value
    pad = [(0, grow(d) - d if d > 1 else 0) for d in value.shape]
    out = np.pad(value, pad, mode="wrap")
    if not value.flags.writeable:
        out.setflags(write=False)
    return out


@pytest.mark.parametrize("chunk", range(4))
def test_generated_programs_agree_with_numpy_at_every_size_of_a_shared_executor(chunk):
    for seed in range(chunk, 60, 4):
        prog = make_fusible_program(seed, reduce=False)
        f = kx.function(prog, backend="numba")
        for grow in (lambda d: d, lambda d: d + 3, lambda d: 2 * d + 5):
            inputs = [_rescale(v, grow) for v in prog.inputs]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = prog(*inputs)
                got = f(*inputs)
            where = f"seed {seed}: {prog.describe()} at {[np.shape(v) for v in inputs]}"
            for g, e in zip(got, expected):
                g, e = np.asarray(g), np.asarray(e)
                assert g.dtype == e.dtype and g.shape == e.shape, where
                np.testing.assert_array_equal(g, e, err_msg=where)


def test_last_concrete_function_tells_apart_traces_that_share_a_runner():
    f = kx.function(_w3, backend="numba")
    args = {n: [np.ones(n, np.float32)] * 4 for n in (1000, 1500, 2000)}
    for n in (1000, 1500, 2000, 1500):
        f(*args[n])
    cf = f.last_concrete_function
    assert cf is f.get_concrete_function(*args[1500])
    assert cf.executable.run is f.get_concrete_function(*args[2000]).executable.run
    f(*args[2000])
    assert f.last_concrete_function is f.get_concrete_function(*args[2000])


def test_a_retrace_that_shares_an_executor_optimises_its_graph_only_when_asked():
    SHARED.clear()
    f = kx.function(_w3, backend="numba")
    reference = kx.function(_w3, backend="numpy")
    sizes = (1000, 1500, 2000)
    for n in sizes:
        args = [np.ones(n, np.float32)] * 4
        f(*args)
        reference(*args)
    cfs = [f.get_concrete_function(*[np.ones(n, np.float32)] * 4) for n in sizes]
    # the first two compiled (own shapes, then the shared executor); the third took it as is
    assert cfs[0]._graph is not None and cfs[1]._graph is not None
    assert cfs[2]._graph is None and cfs[2]._traced is not None
    counts = cfs[2].node_counts  # asking optimises it, once
    assert cfs[2]._graph is not None and cfs[2]._traced is None
    expected = reference.get_concrete_function(*[np.ones(2000, np.float32)] * 4)
    assert counts == expected.node_counts
    body = [line for line in str(cfs[2].graph).splitlines()[1:]]
    assert body == [line for line in str(expected.graph).splitlines()[1:]]
    lint(cfs[2].graph)


def test_the_shared_executor_is_optimised_too():
    """The executor shared by all sizes is compiled from the traced graph optimised with its
    sizes erased: the optimiser still does its work there (``x * 1.0`` goes)."""

    def scaled(x):
        return np.exp(x * 1.0) * 2.0

    SHARED.clear()
    f = kx.function(scaled, backend="numba")
    for n in (5, 6, 7):
        x = np.linspace(-1, 1, n, dtype=np.float32)
        np.testing.assert_array_equal(f(x), scaled(x))
    cf = f.get_concrete_function(np.ones(7, np.float32))
    assert cf._graph is None  # shared: not optimised for itself
    assert [seg["ops"] for seg in cf.executable.segments] == [["exp", "multiply"]]


def test_jit_compile_functions_share_their_whole_graph_executor_too():
    SHARED.clear()
    f = kx.function(_w3, jit_compile=True)
    rng = np.random.default_rng(1)
    cfs = []
    for n in (300, 400, 500, 600):
        args = [rng.standard_normal(n).astype(np.float32) for _ in range(4)]
        for _ in range(2):  # the second call runs the compiled function
            np.testing.assert_array_equal(f(*args), _w3(*args))
        cfs.append(f.get_concrete_function(*args))
    assert cfs[2].executable.run is cfs[1].executable.run is cfs[3].executable.run
    assert cfs[2]._graph is None
    assert cfs[3].executable.segments[0]["kind"] == "whole-graph"
    assert cfs[3].executable.segments[0]["state"] == "ready"


def test_generated_programs_agree_with_numpy_through_a_shared_whole_graph_executor():
    """The erased whole-graph compile (what every later size of a pattern runs) on generated
    programs: bitwise NumPy at three sizes, the third on the shared executor."""
    shared = 0
    for seed in range(8):
        prog = make_fusible_program(seed, reduce=False)
        f = kx.function(prog, jit_compile=True)
        for grow in (lambda d: d, lambda d: d + 3, lambda d: 2 * d + 5):
            inputs = [_rescale(v, grow) for v in prog.inputs]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = prog(*inputs)
                f(*inputs)
                got = f(*inputs)  # compiled by now (synchronous)
            where = f"seed {seed}: {prog.describe()} at {[np.shape(v) for v in inputs]}"
            for g, e in zip(got, expected):
                g, e = np.asarray(g), np.asarray(e)
                assert g.dtype == e.dtype and g.shape == e.shape, where
                np.testing.assert_array_equal(g, e, err_msg=where)
        shared += f.get_concrete_function(*inputs)._graph is None
    assert shared >= 4  # most of them: large constants keep the others apart


def test_a_lazily_optimised_graph_is_made_once_for_concurrent_readers():
    """The UI's poller and the user's thread may read a shared trace's graph at once: both
    get a finished graph (the optimiser is pure, a race only computes it twice)."""
    import threading

    SHARED.clear()
    f = kx.function(_w3, backend="numba")
    for n in (700, 800, 900):
        f(*[np.ones(n, np.float32)] * 4)
    cf = f.get_concrete_function(*[np.ones(900, np.float32)] * 4)
    assert cf._graph is None
    barrier = threading.Barrier(4)
    texts: list[str] = []

    def read():
        barrier.wait()
        texts.append(str(cf.graph))

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(texts) == 4 and len(set(texts)) == 1 and "tanh" in texts[0]
    assert cf._traced is None and str(cf.graph) == texts[0]
