"""``jit_compile=True`` on row-wise work (W10: softmax and layer norm of each row): the graph
runs on tiles of rows, each tile's intermediates in cache.

Tiling changes no arithmetic: every row is reduced and combined exactly as without tiles, so
a tiled call equals the untiled compiled function bit for bit, and NumPy within the documented
bound for float sums (``|fused - NumPy| <= 8 eps sum|x_i|`` per sum; the bound below is that
bound carried through the few ops after each sum).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import backends
from kernel_ext.backends import row_fusion, whole_graph
from kernel_ext.backends.sharing import SharedExecutables

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def unshared(monkeypatch):
    """No executor shared with a trace of another size (a shared one is compiled from a graph
    with unknown sizes, which never runs in tiles), and no row fusion (graphs it takes run as
    one loop over rows instead of tiles: tests/backends/test_whole_graph_row_fusion.py)."""
    monkeypatch.setattr(backends, "SHARED", SharedExecutables())
    monkeypatch.setattr(row_fusion, "plan_row_fusion", lambda graph, fast_math=False: None)


def _softmax_norm(x, g, b):
    e = np.exp(x - np.max(x, axis=1)[:, None])
    s = e / np.sum(e, axis=1)[:, None]
    mu = np.mean(s, axis=1)[:, None]
    c = s - mu
    var = np.mean(c * c, axis=1)[:, None]
    return c / np.sqrt(var + np.float32(1e-5)) * g + b


def _mixed(x, w, k):
    """Several outputs, a (1, C) operand, a scalar argument, argmax and max along rows."""
    m = np.max(x, axis=-1, keepdims=True)
    y = np.abs(x - m) * w + k
    return y, np.argmax(y, axis=1), np.expand_dims(np.min(y, axis=1), 1) * 2.0


def _compiled(f, *args):
    g = kx.function(f, jit_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        g(*args)
    main = [
        s for s in g.get_concrete_function(*args).executable.segments if s.get("role") != "fallback"
    ]
    assert [s["kind"] for s in main] == ["whole-graph"] and main[0]["state"] == "ready", main
    return g


def _source(g, *args) -> str:
    return g.get_concrete_function(*args).executable.run.__globals__["_H"].ksrc.source


def _bits(a, b, what=""):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), what


def _args(rows: int, cols: int, dtype) -> tuple:
    rng = np.random.default_rng(rows * 1000 + cols)
    x = (rng.standard_normal((rows, cols)) * 3).astype(dtype)
    x[5, 3] = np.nan  # a NaN row: max, exp and the sums all propagate it
    g, b = (rng.standard_normal(cols).astype(dtype) for _ in range(2))
    return x, g, b


@pytest.mark.parametrize(
    "rows, cols, dtype", [(200, 50, np.float32), (333, 97, np.float64), (64, 1000, np.float32)]
)
def test_tiled_rows_equal_untiled_bitwise_and_numpy_within_the_sum_bound(
    rows, cols, dtype, monkeypatch
):
    args = _args(rows, cols, dtype)
    f = _compiled(_softmax_norm, *args)
    assert "for r0 in range(0, " in _source(f, *args)
    tiled = f(*args)
    monkeypatch.setattr(whole_graph.tiling, "TILE_MIN_ROWS", 10**9)
    g = _compiled(_softmax_norm, *[a.copy() for a in args])
    assert "for r0 in range(0, " not in _source(g, *args)
    _bits(tiled, g(*args), "tiled vs untiled")
    with np.errstate(all="ignore"):
        want = _softmax_norm(*args)
    assert np.array_equal(np.isnan(tiled), np.isnan(want))
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(tiled, want, rtol=200 * eps, atol=200 * eps * cols)


def test_several_outputs_row_free_operands_and_arg_reductions():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((150, 33))
    w = rng.standard_normal((1, 33))
    args = (x, w, np.float64(0.5))
    f = _compiled(_mixed, *args)
    assert "for r0 in range(0, " in _source(f, *args)
    got, want = f(*args), _mixed(*args)
    for k, (a, b) in enumerate(zip(got, want)):  # no sums: bit for bit
        _bits(a, b, f"output {k}")


def test_a_tiled_graph_keeps_the_compiled_function_for_large_inputs():
    args = _args(600, 500, np.float32)
    f = _compiled(_softmax_norm, *args)
    assert f.get_concrete_function(*args).executable.segments[0]["handover_size"] is None


def _tiling(f, *args):
    graph = kx.function(f, backend="numpy").get_concrete_function(*args).graph
    rows = whole_graph.row_tiling(graph)
    return None if rows is None else sorted(n.name for n in rows)


def test_which_graphs_run_in_row_tiles():
    x = np.ones((100, 8))
    col = np.ones(8)
    assert _tiling(_softmax_norm, x, col, col) == ["x"]
    # row-free operands are shared by every tile; x.T's rows are not x's rows
    assert _tiling(lambda x, y: x - np.max(y, axis=1)[:, None], x, x) == ["x", "y"]
    assert _tiling(lambda x: x - np.max(x.T, axis=1)[None, :], x) is None
    # a reduction over the rows, a row-dependent output shape, no reduction at all
    assert _tiling(lambda x: x - np.mean(x, axis=0), x) is None
    assert _tiling(lambda x: np.sum(x), x) is None
    assert _tiling(lambda x: np.tanh(x) * 2.0, x) is None
    # too few rows to split; indexing that moves the rows
    assert _tiling(lambda x: x - np.max(x, axis=1)[:, None], np.ones((8, 100))) is None
    assert _tiling(lambda x: x[::2] - np.max(x[::2], axis=1)[:, None], x) is None
    assert _tiling(lambda x: x @ x.T - np.max(x, axis=1)[:, None], np.ones((100, 100))) is None
