"""``jit_compile=True`` with ``x[index] = value``: writes compiled into the one function.

A write runs in place where the reinplacing analysis (``backends/inplace.py``) finds its base
owned and dead; otherwise into a fresh buffer (a dead one a loop left, when there is one) with
the rest of the base copied around the region. A segment whose only use is the written value
computes it straight into the region. Every case is checked bit for bit against NumPy (the
NumPy executor runs NumPy's own ``x[index] = value``), and every case checks that the function
really compiled whole.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends import whole_graph

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow


def _same(got, want, what: str = "") -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (what, g.dtype, w.dtype, g.shape, w.shape)
    np.testing.assert_array_equal(g, w, err_msg=what)


def _close(got, want, what: str = "") -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (what, g.dtype, w.dtype, g.shape, w.shape)
    np.testing.assert_allclose(g, w, rtol=1e-13, atol=0, err_msg=what)


def _compiled(f, *args):
    """``f`` under jit_compile=True, called once; asserts the graph compiled as one function."""
    g = kx.function(f, jit_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no "cannot be compiled", no fallback
        g(*args)
    main = [
        s for s in g.get_concrete_function(*args).executable.segments if s.get("role") != "fallback"
    ]
    assert [s["kind"] for s in main] == ["whole-graph"], main
    assert main[0]["state"] == "ready", main[0]
    return g


def _check(f, *args, sums: bool = False) -> None:
    """``f`` compiled whole gives NumPy's results (and leaves the arguments as NumPy does):
    bit for bit, or with ``sums`` (float sums along an axis, whose order may differ) within
    the documented bound."""
    mine = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    theirs = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    want = kx.function(f, backend="numpy")(*theirs)
    g = _compiled(f, *[np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args])
    got = g(*mine)
    same = _close if sums else _same
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for k, (a, b) in enumerate(zip(got, want)):
            same(a, b, f"output {k}")
    else:
        same(got, want)
    for k, (a, b) in enumerate(zip(mine, theirs)):
        if isinstance(a, np.ndarray):
            _same(a, b, f"argument {k} after the call")


def _source(g, *args) -> str:
    """The whole-graph module's source."""
    return g.get_concrete_function(*args).executable.run.__globals__["_H"].ksrc.source


X = np.arange(42.0).reshape(6, 7) * 0.37 - 3.0


def _jacobi(u, n):
    u = u.copy()
    for _ in range(n):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_jacobi_sweeps_are_numpys_bit_for_bit(n):
    _check(_jacobi, X, np.int64(n))


def test_the_stencil_writes_into_the_other_buffer_not_a_temporary():
    """The stencil reads ``u`` while ``u[1:-1, 1:-1]`` is written, so it cannot write in
    place: it writes the region of the loop's spare buffer, whose border is copied from
    ``u`` (two buffers ping-pong, as in a hand-written double-buffered loop)."""
    n = np.int64(3)
    u = np.arange(144.0).reshape(12, 12)  # its border is smaller than its inside
    g = _compiled(_jacobi, u, n)
    source = _source(g, u, n)
    graph = source[source.index("def graph") :]
    # the spare serves the write, and the segment's output is a view of it
    assert "_sp2.shape[0] ==" in graph
    assert "w" in graph and "_nd(" in graph
    # the border (four slabs, not the whole array) is copied, and nothing else writes a
    # region (no temporary copied in); a copy between arrays is a call of a loop helper
    writes = re.findall(r"^\s+(?:\w+\[[^\]]*\] = |_assign\d+_\d+\()", graph, re.M)
    assert len(writes) == 4, writes
    # the kernel reads and writes rows as contiguous (vectorisable) arrays
    assert "np.ascontiguousarray(out0[" in source and "np.ascontiguousarray(in0[" in source


def test_large_writes_keep_the_compiled_function(monkeypatch):
    """A graph that writes never hands large calls to the fused executor (which computes
    the value into a temporary and copies it)."""
    u = np.random.default_rng(0).standard_normal((600, 600))
    g = _compiled(_jacobi, u, np.int64(2))
    report = g.get_concrete_function(u, np.int64(2)).executable.segments[0]
    assert report["handover_size"] is None
    run_globals = g.get_concrete_function(u, np.int64(2)).executable.run.__globals__
    calls = []
    executor = run_globals["_fallback"]
    monkeypatch.setitem(run_globals, "_fallback", lambda *a: calls.append(1) or executor(*a))
    _same(g(u, np.int64(2)), _jacobi(u, 2))
    assert calls == []


def _fill(x):
    y = x.copy()
    y[1:-1, 2:] = 7.5
    y[0] = -1
    y[-1, -2] = True
    return y


def _strided(x):
    y = x * 2.0
    y[::2, 1] = x[::2, 0]
    y[1, ::-3] = 5.0
    return y


def _traced_index(x, i):
    y = x + 1.0
    y[i] = np.tanh(y[i])
    y[i, i + 1] = y[0, 0]
    return y


def _broadcast(x):
    y = np.zeros_like(x)
    y[...] = x[0]
    y[2:4] = x[:1, :] * 3.0
    y[:, 3] = x[:, 0]
    return y


def _overlap(x):
    y = x.copy()
    y[1:] = y[:-1]
    y[:, :-1] = y[:, 1:]
    return y


def _casts(x):
    y = x.astype(np.float32)
    y[0] = x[1] * 1e-40  # float64 -> float32 (subnormal, rounded as NumPy rounds)
    z = np.zeros((6, 7), np.int32)
    z[2] = (x[0] * 0.0).astype(np.int64) + 3_000_000_000  # wraps as NumPy's int cast does
    z[3, 1] = 2.7  # a Python float stored into an int array: truncated
    b = np.zeros((6, 7), np.bool_)
    b[1:3] = x[1:3] > 0
    return y, z, b


def _elementwise_loop(x):
    out = np.zeros((6, 7))
    for i in range(6):
        for j in range(7):
            out[i, j] = x[i, j] * 2.0 + i
    return out


def _into_argument(x):
    x[1, 1:3] = -1.0
    x[4] = x[0] + x[1]
    return x[:, 2] * 2.0


def _graph_loop(x, n):
    u = x.copy()
    for k in range(n):
        u[2:4] = u[2:4] * 0.5 + 1.0
        u[0, k % 7] = k
    return u


def _ellipsis_and_negative(x):
    y = x.copy()
    y[..., -1] = 0.5
    y[-2, ...] = y[1, ...] - 1.0
    y[1, 2, ...] = 9.0
    return y


def _region_from_another(x):
    y = x * 1.0
    y[0:2, 0:2] = x[3:5, 3:5] + 1.0
    return y, y[0:2, 0:2].sum()


@pytest.mark.parametrize(
    "f, args",
    [
        (_fill, (X,)),
        (_strided, (X,)),
        (_traced_index, (X, np.int64(2))),
        (_traced_index, (X, np.int64(-3))),
        (_broadcast, (X,)),
        (_overlap, (X,)),
        (_casts, (X,)),
        (_elementwise_loop, (X,)),
        (_into_argument, (X,)),
        (_graph_loop, (X, np.int64(5))),
        (_ellipsis_and_negative, (X,)),
        (_region_from_another, (X,)),
    ],
    ids=lambda v: getattr(v, "__name__", "") if callable(v) else "",
)
def test_writes_agree_with_numpy(f, args):
    _check(f, *args)


def test_an_index_out_of_range_raises_numpys_error():
    g = _compiled(_traced_index, X, np.int64(1))
    for i in (6, -7, 40):
        with pytest.raises(IndexError):
            g(X, np.int64(i))
    _same(g(X, np.int64(5)), _traced_index(X, 5))


def test_a_value_that_does_not_broadcast_raises_numpys_error():
    def f(x, v):
        y = x.copy()
        y[1:3] = v
        return y

    spec = [kx.TensorSpec([6, 7], np.float64), kx.TensorSpec([None], np.float64)]
    g = kx.function(f, jit_compile=True, input_signature=spec)
    _same(g(X, np.arange(7.0)), f(X, np.arange(7.0)))
    _same(g(X, np.arange(1.0)), f(X, np.arange(1.0)))
    with pytest.raises(ValueError):
        g(X, np.arange(5.0))


@pytest.mark.parametrize(
    "body, what",
    [
        (lambda x: _set(x.astype(np.int64), 0, x[0]), "float64 into int64"),
        (lambda x: _set(x.astype(np.int64), 0, x[0] * np.nan), "NaN into int64"),
        (lambda x: _set(x.astype(np.uint8), 0, 300), "300 into uint8"),
    ],
)
@pytest.mark.usefixtures("settled_warnings")
def test_writes_numpy_casts_differently_run_fused_with_a_warning(body, what):
    """Unsafe casts (NaN or out-of-range floats into ints are undefined in Numba) and
    literals NumPy refuses stay with NumPy, naming the write."""
    want_error = None
    try:
        want = body(X)
    except Exception as e:  # noqa: BLE001 - NumPy's own refusal is the answer
        want_error = type(e)
    g = kx.function(body, jit_compile=True)
    with pytest.warns(RuntimeWarning, match="setitem"):
        if want_error is not None:
            with pytest.raises(want_error):
                g(X)
            return
        got = g(X)
    _same(got, want, what)


def _set(y, index, value):
    y[index] = value
    return y


# -- generated programs ------------------------------------------------------------------------


def _random_index(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple:
    """A basic index into ``shape``: per axis a slice (random bounds, steps, negatives), an
    integer or the traced index ``"I"`` (first axis only); sometimes with ``...``."""
    comps: list = []
    for axis, n in enumerate(shape):
        kind = rng.integers(4)
        if kind == 0 and axis == 0:
            comps.append("I")
        elif kind == 1:
            comps.append(int(rng.integers(-n, n)))
        else:
            start = None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 2))
            stop = None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 2))
            step = None if rng.random() < 0.6 else int(rng.choice([-2, -1, 1, 2, 3]))
            comps.append(slice(start, stop, step))
    if rng.random() < 0.3:
        cut = int(rng.integers(len(comps) + 1))
        comps = comps[:cut] + [Ellipsis] + [c for c in comps[cut:] if rng.random() < 0.5]
    return tuple(comps)


def _region(shape: tuple[int, ...], index: tuple, i: int) -> tuple[int, ...]:
    probe = np.empty(shape)
    return probe[tuple(i if c == "I" else c for c in index)].shape


def _make_program(seed: int):
    """A function writing 3 random regions of a copy (or of the argument itself), values
    literal, traced scalars or arrays of the region's shape or a broadcastable one, once or
    in a graph loop; and the arguments to call it with."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) for d in rng.integers(2, 6, size=int(rng.integers(1, 4))))
    x = rng.standard_normal(shape)
    i = int(rng.integers(-shape[0], shape[0]))
    writes = []
    for k in range(3):
        index = _random_index(rng, shape)
        region = _region(shape, index, i)
        kind = int(rng.integers(4))
        if kind == 3 and region:  # broadcast: drop leading axes, set others to 1
            keep = region[int(rng.integers(len(region) + 1)) :]
            vshape = tuple(1 if rng.random() < 0.4 else d for d in keep)
        else:
            vshape = region
        c = float(rng.standard_normal())
        table = np.arange(int(np.prod(vshape))).reshape(vshape) * c
        writes.append((index, kind, table, c))
    mode = int(rng.integers(3))  # 0: a copy, 1: the argument (write-back), 2: in a loop

    def write_all(x, y, i):
        for index, kind, table, c in writes:
            idx = tuple(i if comp == "I" else comp for comp in index)
            if kind == 0:
                value = c
            elif kind == 1:
                value = np.max(x) * c
            else:
                value = np.tanh(table + x.reshape(-1)[0])
            y[idx] = value

    def program(x, i, n):
        y = x if mode == 1 else x * 1.0
        if mode == 2:
            for _ in range(n):  # a graph loop (n is traced)
                write_all(x, y, i)
        else:
            write_all(x, y, i)
        return y

    return program, (x, np.int64(i), np.int64(2))


@pytest.mark.parametrize("chunk", range(3))
def test_generated_writes_agree_with_numpy(chunk):
    for seed in range(chunk, 12, 3):
        program, args = _make_program(seed)
        _check(program, *args)


# -- indexing with None -------------------------------------------------------------------------


def test_new_axes_in_an_index_compile_whole():
    def f(x, c):
        d = np.sum((x[:, None, :] - c[None, :, :]) ** 2, axis=2)
        return d, x[..., None, 1], x[1, ..., None], x[:, None] * x[None, 0]

    c = X[:3, :] * 0.5
    _check(f, X, c, sums=True)


def test_unit_rows_are_only_claimed_for_step_one_last_axes():
    """The guarantee that makes a kernel read rows as contiguous arrays (a wrong one would
    make a write land in a copy)."""
    g = kx.function(
        lambda x: (x[1:, 2:5], x[:, ::2], x[:, 1], x[..., None], x[None], x[1], x[..., 1:]),
        backend="numpy",
    )
    graph = g.get_concrete_function(X).graph
    got = [whole_graph.indexing.unit_rows(n) for n in graph.nodes if n.op.value == "getitem"]
    assert got == [True, False, False, False, True, True, True]
