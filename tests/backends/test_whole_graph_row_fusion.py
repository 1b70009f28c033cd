"""``jit_compile=True`` on row-wise graphs (softmax, layer norm, log-softmax, a row's argmax):
one loop over the rows, each row's reductions scalar locals (``backends/row_fusion.py``).

The row loop changes no bits: it equals the compiled function without it (row tiles or whole
segments) bit for bit, so ``auto``'s tiering, which compares every bit, serves it. Against
NumPy: max, min, argmax and everything without a float sum are bitwise NumPy's; float sums
are the fused kernels' (float64 lanes), within the documented bound for float sums
(``|fused - NumPy| <= 8 eps sum|x_i|`` per sum), carried through the few ops after each sum
as ``200 eps`` relative (and ``200 eps * w`` absolute), as tests/backends/test_whole_graph_rows.py
states it.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import backends
from kernel_ext.backends import parallel, row_fusion, tiering
from kernel_ext.backends.sharing import SharedExecutables
from kernel_ext.ir import OpKind

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow

F32, F64 = np.float32, np.float64


@pytest.fixture(autouse=True)
def unshared(monkeypatch):
    """No executable shared with a trace of another size (one compiled with unknown sizes,
    which is never row-fused)."""
    monkeypatch.setattr(backends, "SHARED", SharedExecutables())


def _rowwise(x, g, b):
    """Softmax, log-softmax, layer norm, a row normalisation and argmax/min of each row."""
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    soft = e / np.sum(e, axis=-1)[:, None]
    logsoft = x - np.max(x, axis=1)[:, None] - np.log(np.sum(e, axis=1, keepdims=True))
    mu = np.mean(x, axis=1)[:, None]
    c = x - mu
    var = np.mean(np.square(c), axis=1, keepdims=True)
    norm = c / np.sqrt(var + 1e-5) * g + b
    scaled = x / np.maximum(np.max(x, axis=1), np.min(x, axis=1) * 2.0)[:, None]
    return soft, logsoft, norm, scaled, np.argmax(soft, axis=1), np.argmin(x, axis=-1)


def _w10(x, g, b):
    e = np.exp(x - np.max(x, axis=1)[:, None])
    s = e / np.sum(e, axis=1)[:, None]
    mu = np.mean(s, axis=1)[:, None]
    c = s - mu
    var = np.mean(c * c, axis=1)[:, None]
    return c / np.sqrt(var + np.float32(1e-5)) * g + b


def _no_sums(x, g):
    """Row max, min and argmax with elementwise work around them: no float sum."""
    m = np.max(x, axis=1, keepdims=True)
    y = (x - m) * g
    return y, np.min(y, axis=1), np.argmax(y, axis=1), np.exp(x - m), m


def _args(rows: int, cols: int, dtype) -> tuple:
    rng = np.random.default_rng(rows * 7919 + cols)
    x = (rng.standard_normal((rows, cols)) * 3).astype(dtype)
    specials = [np.nan, np.inf, -np.inf, -0.0]
    for k, v in enumerate(specials):  # a NaN, an inf, a -inf row, a row of -0.0
        if k < rows:
            if v == 0:
                x[k] = v
            else:
                x[k, cols // 2] = v
    g, b = (rng.standard_normal(cols).astype(dtype) for _ in range(2))
    return x, g, b


def _compiled(f, *args):
    fn = kx.function(f, jit_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fn(*[np.copy(a) for a in args])
    main = [
        s
        for s in fn.get_concrete_function(*args).executable.segments
        if s.get("role") != "fallback"
    ]
    assert [s["kind"] for s in main] == ["whole-graph"] and main[0]["state"] == "ready", main
    return fn


def _source(fn, *args) -> str:
    return fn.get_concrete_function(*args).executable.run.__globals__["_H"].ksrc.source


def _no_fallback(fn, *args):
    """``fn(*args)`` by the compiled function itself (a signal to rerun fails the test)."""
    scope = fn.get_concrete_function(*args).executable.run.__globals__

    def fail(*_):
        raise AssertionError("the compiled function signalled a rerun by the fused executor")

    saved, scope["_fallback"] = scope["_fallback"], fail
    try:
        return fn(*args)
    finally:
        scope["_fallback"] = saved


def _bits(got, want, what=""):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for k, (a, b) in enumerate(zip(got, want)):
            _bits(a, b, f"{what} output {k}")
        return
    a, b = np.asarray(got), np.asarray(want)
    assert (a.dtype, a.shape) == (b.dtype, b.shape), what
    assert a.tobytes() == b.tobytes(), f"{what}\n{a!r}\n{b!r}"


def _row_loop(source: str) -> str:
    """The module's row function (rows ``[lo, hi)``), which the graph function calls."""
    graph = source.split("\ndef graph(", 1)[1]
    assert "for r0 in range(" not in graph and "for i in range(" not in graph  # no tiles
    assert re.search(r"\n    graph_rows\(0, rf\d+n, ", graph)  # every row, one call
    body = source.split("\ndef graph_rows(", 1)[1].split("\nROW_SPLIT = ", 1)[0]
    assert body.count("    for i in range(lo, hi):") == 1, body  # one loop over the rows
    return body


def _without_row_fusion(monkeypatch):
    monkeypatch.setattr(row_fusion, "plan_row_fusion", lambda graph, fast_math=False: None)


def test_row_wise_graphs_compile_to_one_row_loop_with_scalar_reductions():
    args = _args(70, 300, F32)
    fn = _compiled(_rowwise, *args)
    body = _row_loop(_source(fn, *args))
    # each reduction of the graph is one scalar per row: sums and means in float64 lanes,
    # max/min by NumPy's loops, argmax/argmin as loops over the row
    ops = [n.op for n in fn.get_concrete_function(*args).graph.nodes]
    sums = sum(op in (OpKind.SUM, OpKind.MEAN) for op in ops)
    extremes = sum(op in (OpKind.MAX, OpKind.MIN) for op in ops)
    assert (sums, extremes) >= (4, 2)
    assert len(re.findall(r"s\d+ = _row_lanes\(", body)) == sums
    assert len(re.findall(r"s\d+ = _row_reduce\(", body)) == extremes
    assert "_row_argmax(" in body and "_row_argmin(" in body
    # no array of the full size but the six outputs (the graph function allocates them);
    # row buffers of one row only
    graph = _source(fn, *args).split("\ndef graph(", 1)[1]
    assert len(re.findall(r"np\.empty\(\(rf\d+n, ", graph)) == 6
    assert "np.empty((rf" not in body
    assert all(size == "300" for size in re.findall(r"rb\d+ = np\.empty\((\d+),", body))
    # nothing per row is allocated or checked inside the loop
    loop = body.split("    for i in range(", 1)[1]
    assert "np.empty" not in loop and "np.full" not in loop and "raise" not in loop


@pytest.mark.parametrize(
    "f, make",
    [
        (lambda x: x - np.mean(x, axis=0), lambda: (np.ones((80, 8)),)),  # along the columns
        (lambda x: np.sum(x), lambda: (np.ones((80, 8)),)),  # over everything
        (lambda x: np.tanh(x) * 2.0, lambda: (np.ones((80, 8)),)),  # no reduction
        (lambda x: x @ x.T - np.max(x, axis=1)[:, None], lambda: (np.ones((80, 80)),)),
        (lambda x: -x - np.max(x, axis=1)[:, None], lambda: (np.ones((80, 8)),)),  # negation
        (lambda x: x * -1.0 - np.max(x, axis=1)[:, None], lambda: (np.ones((80, 8)),)),
        (
            lambda x, g: x * g - np.max(x, axis=1)[:, None],  # mixed dtypes
            lambda: (np.ones((80, 8), F32), np.ones(8, F64)),
        ),
        (lambda x: x - np.max(x, axis=1)[:, None], lambda: (np.ones((80, 8), np.int64),)),
        (lambda x: x[:, :4] - np.max(x[:, :4], axis=1)[:, None], lambda: (np.ones((80, 8)),)),
        (lambda x: x - np.max(x, axis=1), lambda: (np.ones((8, 8)),)),  # (n,) against rows
        (lambda x: x - np.max(x, axis=1)[:, None], lambda: (np.ones((80, 0)),)),  # empty rows
    ],
)
def test_graphs_that_are_not_row_wise_are_not_row_fused(f, make):
    graph = kx.function(f, backend="numpy").get_concrete_function(*make()).graph
    assert row_fusion.plan_row_fusion(graph) is None


def test_row_fusion_keeps_out_of_fast_math_and_other_graphs_keep_their_code():
    x = np.random.default_rng(3).standard_normal((80, 16))
    graph = kx.function(_no_sums, backend="numpy").get_concrete_function(x, x[0]).graph
    assert row_fusion.plan_row_fusion(graph) is not None
    assert row_fusion.plan_row_fusion(graph, fast_math=True) is None
    fn = _compiled(lambda x: x - np.mean(x, axis=0), x)
    assert "_row_" not in _source(fn, x)


# Row lengths on both sides of every threshold: 8 (a sum's first block), 128 (NumPy's
# pairwise block), 1024 (a kernel block: one fold or several); 64 rows (the row tiles'
# minimum), a single row, no rows, one column.
CASES = [
    (65, 1, F32),
    (3, 7, F64),
    (64, 8, F32),
    (1, 9, F64),
    (66, 127, F32),
    (40, 128, F64),
    (70, 129, F32),
    (0, 50, F32),
    (33, 1023, F64),
    (65, 1024, F32),
    (5, 1025, F64),
    (3, 2 * 1024 + 3, F32),
]


@pytest.mark.parametrize("rows, cols, dtype", CASES)
def test_the_row_loop_equals_the_compiled_function_without_it_and_numpy(
    rows, cols, dtype, monkeypatch
):
    args = _args(rows, cols, dtype)
    fn = _compiled(_rowwise, *args)
    _row_loop(_source(fn, *args))
    got = _no_fallback(fn, *args)
    with np.errstate(all="ignore"):
        want = _rowwise(*args)
    _without_row_fusion(monkeypatch)
    ref = _compiled(_rowwise, *[a.copy() for a in args])
    assert "_row_lanes" not in _source(ref, *args)
    _bits(got, ref(*args), "row loop vs the compiled function without it")
    eps = np.finfo(dtype).eps
    for k, (a, w) in enumerate(zip(got, want)):
        assert a.dtype == w.dtype and a.shape == w.shape, k
        if a.dtype.kind == "f":
            assert np.array_equal(np.isnan(a), np.isnan(w)), k
            np.testing.assert_allclose(a, w, rtol=200 * eps, atol=200 * eps * cols)
        else:  # argmax/argmin: of values within the bound; argmin of x itself: NumPy's
            if k == 5:
                _bits(a, w, "argmin")


# g as a row of columns, a (1, w) array or a 0-d array (a scalar broadcast everywhere)
@pytest.mark.parametrize(
    "rows, cols, dtype, g_shape",
    [
        (65, 1, F64, (-1,)),
        (7, 8, F32, (1, -1)),
        (66, 129, F64, ()),
        (0, 9, F32, (1, -1)),
        (9, 1025, F32, (-1,)),
    ],
)
def test_row_max_min_argmax_and_elementwise_work_are_numpy_bitwise(rows, cols, dtype, g_shape):
    x, g, _ = _args(rows, cols, dtype)
    g = g[:1].reshape(()) if g_shape == () else g.reshape(g_shape)
    fn = _compiled(_no_sums, x, g)
    _row_loop(_source(fn, x, g))
    with np.errstate(all="ignore"):
        want = _no_sums(x, g)
    _bits(_no_fallback(fn, x, g), want)
    assert not np.shares_memory(x, fn(x, g)[0])  # the caller's arguments untouched
    x0, g0, _ = _args(rows, cols, dtype)
    _bits(
        (x, g),
        (x0, g0[:1].reshape(()) if g_shape == () else g0.reshape(g_shape)),
        "arguments after the call",
    )


def test_a_strided_argument_reruns_on_the_fused_executor():
    x, g, b = _args(80, 64, F32)
    fn = _compiled(_w10, x, g, b)
    wide = np.repeat(x, 2, axis=1)[:, ::2]  # the same values, rows of stride 2
    with np.errstate(all="ignore"):
        want = _w10(x, g, b)
    with pytest.raises(AssertionError, match="signalled a rerun"):
        _no_fallback(fn, wide, g, b)
    got = fn(wide, g, b)
    np.testing.assert_allclose(
        got, want, rtol=200 * np.finfo(F32).eps, atol=200 * np.finfo(F32).eps * 64
    )
    _bits(got, fn(x, g, b), "the rerun gives the row loop's bits")


def test_auto_reaches_the_row_loop_after_tiering(monkeypatch):
    monkeypatch.setattr(backends, "TIERING", True)
    monkeypatch.setattr(tiering, "HOT_CALLS", 3)
    monkeypatch.setattr(tiering, "TRIAL_CALLS", 3)
    monkeypatch.setattr(tiering, "HOT_NS", 10**15)
    monkeypatch.setattr(tiering, "TRIAL_NS", 10**15)
    monkeypatch.setattr(tiering, "MIN_GAIN", 10.0**9)  # equal bits decide, never timings
    monkeypatch.setattr(tiering, "ON_DISK", False)
    tiering._DECIDED.clear()
    args = _args(300, 1000, F32)
    fn = kx.function(_w10)
    outs = [fn(*args) for _ in range(12)]
    cf = fn.get_concrete_function(*args)
    tier = cf.executable.tier
    assert tier.state == "whole", cf.tier  # every trial call gave the fused executor's bits
    _row_loop(tier.whole.run.__globals__["_H"].ksrc.source)
    for out in outs[1:]:
        _bits(out, outs[0], "auto before and after tiering")


def _compiled_function(fn, *args):
    """What the runner calls for C-contiguous arguments: the graph function, or the
    :class:`~kernel_ext.backends.parallel.RowSplit` of its rows."""
    return fn.get_concrete_function(*args).executable.run.__globals__["_H"].graph_c


def _force(split, on: bool):
    """Past ``split``'s timed trial calls, with the split chosen (``on``) or not."""
    split.calls, split.split = 2 * split.SAMPLES, on


def _one_thread(split, *args):
    """``split``'s outputs with every row computed by the calling thread, in one call."""
    outs = tuple(np.empty(shape, dt) for shape, dt in split.outputs)
    split.rows(0, split.nrows, *args, *outs)
    return outs


@pytest.mark.parametrize(
    "rows, cols, dtype, threads",
    [(300, 1000, F32, 2), (257, 300, F64, 3), (1000, 70, F32, 8), (9, 9000, F32, 4)],
)
def test_rows_split_over_threads_give_the_one_thread_bits(rows, cols, dtype, threads, monkeypatch):
    from numba import config

    monkeypatch.setattr(parallel, "THREADS", threads)
    monkeypatch.setattr(config, "NUMBA_NUM_THREADS", threads)
    monkeypatch.setattr(parallel, "ROW_SPLIT_MIN_ELEMENTS", 1 << 12)
    args = _args(rows, cols, dtype)
    fn = _compiled(_rowwise, *args)
    split = _compiled_function(fn, *args)
    assert isinstance(split, parallel.RowSplit)
    assert len(split.bounds) == threads and split.bounds[-1][1] == rows
    # the trial calls (one thread and split, in turn), then split, then one thread: the
    # rows of every share against one thread's, the same function called once on every row
    scope = fn.get_concrete_function(*args).executable.run.__globals__
    loops = [v for k, v in scope.items() if k.startswith("_la")]
    one = _one_thread(split, *args, *loops)
    for call in range(2 * split.SAMPLES):
        _bits(_no_fallback(fn, *args), one, f"trial call {call}")
    assert set(split.best) == {False, True} and min(split.best.values()) > 0
    _force(split, True)
    got = _no_fallback(fn, *args)
    _bits(got, one, "split rows vs one thread")
    _force(split, False)
    _bits(_no_fallback(fn, *args), one, "one thread")
    # against the compiled function that does not split, and NumPy within the sum bound
    monkeypatch.setattr(parallel, "ROW_SPLIT_MIN_ELEMENTS", 1 << 60)
    _without_split = _compiled(_rowwise, *[a.copy() for a in args])
    assert not isinstance(_compiled_function(_without_split, *args), parallel.RowSplit)
    _bits(got, _without_split(*args), "split vs the graph function")
    with np.errstate(all="ignore"):
        want = _rowwise(*args)
    eps = np.finfo(dtype).eps
    for k, (a, w) in enumerate(zip(got, want)):
        if a.dtype.kind == "f":
            assert np.array_equal(np.isnan(a), np.isnan(w)), k
            np.testing.assert_allclose(a, w, rtol=200 * eps, atol=200 * eps * cols)
    _bits(got[5], want[5], "argmin of x")


def test_rows_split_only_from_the_threshold_and_within_the_configured_threads(monkeypatch):
    from numba import config

    monkeypatch.setattr(parallel, "THREADS", 4)
    monkeypatch.setattr(config, "NUMBA_NUM_THREADS", 4)
    least = parallel.ROW_SPLIT_MIN_ELEMENTS
    cols = 512
    below, above = (least - 1) // cols, -(-least // cols)  # rows on each side of it
    for rows, split in ((below, False), (above, True)):
        monkeypatch.setattr(backends, "SHARED", SharedExecutables())  # sizes traced anew
        x, g, b = _args(rows, cols, F32)
        fn = _compiled(_w10, x, g, b)
        got = _compiled_function(fn, x, g, b)
        assert isinstance(got, parallel.RowSplit) is split, (rows, got)
        with np.errstate(all="ignore"):
            want = _w10(x, g, b)
        np.testing.assert_allclose(
            _no_fallback(fn, x, g, b),
            want,
            rtol=200 * np.finfo(F32).eps,
            atol=200 * np.finfo(F32).eps * cols,
        )
    # each share is worth a hand-off; never more shares than Numba's configured threads
    assert parallel.row_split_shares(above, cols, 8) == 2
    assert parallel.row_split_shares(8 * above, cols, 8) == 4
    assert parallel.row_split_shares(8 * above, cols, 3) == 3
    assert parallel.row_split_shares(1, 1 << 20, 8) == 1  # one row: one thread
    monkeypatch.setattr(config, "NUMBA_NUM_THREADS", 1)
    monkeypatch.setattr(backends, "SHARED", SharedExecutables())
    x, g, b = _args(2 * above, cols, F32)
    fn = _compiled(_w10, x, g, b)
    assert not isinstance(_compiled_function(fn, x, g, b), parallel.RowSplit)


def test_split_rows_rerun_a_strided_argument_and_run_inside_the_pool(monkeypatch):
    monkeypatch.setattr(parallel, "THREADS", 2)
    x, g, b = _args(300, 512, F32)
    fn = _compiled(_w10, x, g, b)
    split = _compiled_function(fn, x, g, b)
    assert isinstance(split, parallel.RowSplit)
    _force(split, True)
    mine = fn(x, g, b)
    wide = np.repeat(x, 2, axis=1)[:, ::2]  # the same values, rows of stride 2
    with pytest.raises(AssertionError, match="signalled a rerun"):
        _no_fallback(fn, wide, g, b)
    _bits(fn(wide, g, b), mine, "the rerun on the fused executor")
    assert split.split and split.calls > 2 * split.SAMPLES  # (the split path signalled)
    # a call from one of the pool's own threads computes its rows there (no wait on itself)
    _bits(parallel.worker_pool().submit(fn, x, g, b).result(), mine, "from a pool thread")


def test_python_threads_call_a_split_function_at_once(monkeypatch):
    import threading

    monkeypatch.setattr(parallel, "THREADS", 2)
    x, g, b = _args(300, 512, F32)
    fn = _compiled(_w10, x, g, b)
    split = _compiled_function(fn, x, g, b)
    assert isinstance(split, parallel.RowSplit)
    _force(split, True)
    mine = fn(x, g, b)
    results, errors = [], []

    def calls():
        try:
            results.extend(fn(x, g, b) for _ in range(3))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=calls) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and len(results) == 12
    for r in results:
        _bits(r, mine, "a call from another Python thread")
