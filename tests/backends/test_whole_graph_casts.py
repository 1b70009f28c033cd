"""Float-to-integer casts in compiled loops: ``int(x)``'s edge values against eager Python,
and which casts :func:`.cast_ranges.exact_casts` proves in range (written without a test)."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_ext.backends.whole_graph.cast_ranges import exact_casts
from kernel_ext.ir import Graph, Node, OpKind

from .whole_graph_support import compiled, function_for, same


def to_int(x):
    out = np.zeros(x.shape[0], np.int64)
    for i in range(x.shape[0]):
        out[i] = int(x[i])
    return out


def binned(x, edges):
    counts = np.zeros(edges.shape[0], np.int64)
    for i in range(x.shape[0]):
        k = int(x[i] * edges.shape[0])
        counts[min(max(k, 0), edges.shape[0] - 1)] += 1
    return counts


_TOP64 = 2.0**63 - 1024  # the largest float64 below 2**63
_TOP32 = float(np.nextafter(np.float32(2.0**63), np.float32(0)))

IN_RANGE = [0.0, -0.0, 0.5, -0.5, 1.9999, -1.9999, 1e18, -1e18, -(2.0**63), _TOP64, -_TOP64]
IN_RANGE32 = [0.0, -0.5, 3.75, -(2.0**63), _TOP32, -_TOP32]
OUT_OF_RANGE = [np.nan, -np.nan, np.inf, -np.inf, 2.0**63, -(2.0**64), 1e30]


def _outcome(fn, *args):
    """``fn``'s result, or the type and text of what it raised."""
    try:
        return fn(*[np.copy(a) for a in args])
    except Exception as e:  # the type and message are what the test compares
        return type(e), str(e)


@pytest.mark.slow  # (a compile per case: the full suite)
@pytest.mark.parametrize("dtype,values", [(np.float64, IN_RANGE), (np.float32, IN_RANGE32)])
def test_int_of_an_in_range_float_in_a_loop_is_computed_without_a_rerun(dtype, values):
    x = np.array(values, dtype)
    same(compiled(to_int, x, static=True), to_int(x))
    for v in values:  # each value alone too (one loop iteration)
        one = np.array([2.5, v], dtype)
        same(compiled(to_int, one, static=True), to_int(one))


@pytest.mark.slow  # (a compile per case: the full suite)
@pytest.mark.parametrize(
    "dtype,value",
    [(np.float64, v) for v in [*OUT_OF_RANGE, -(2.0**63) - 2048]]
    + [(np.float32, v) for v in OUT_OF_RANGE],
)
def test_int_of_nan_inf_or_out_of_range_raises_as_eager_python(dtype, value):
    with np.errstate(over="ignore"):
        x = np.array([1.5, value, 2.0], dtype)
    f = function_for(to_int, x, static=True)
    f(np.array([1.5, 2.5, 2.0], dtype))  # compiled on good data first
    got, want = _outcome(f, x), _outcome(to_int, x)
    assert isinstance(got, tuple) and isinstance(want, tuple), (got, want)
    assert got[0] is want[0]
    if not np.isfinite(value):  # Python's own messages (beyond +-2**63 kx says why)
        assert got[1] == want[1]


def test_a_binned_count_matches_eager_python_at_the_edges():
    edges = np.zeros(8)
    x = np.array([0.0, 0.3, -(2.0**63) / 8, _TOP64 / 8, -0.1, 0.99, 1.0, 5.0])
    same(compiled(binned, x, edges, static=True), binned(x, edges))
    bad = x.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        function_for(binned, x, edges, static=True)(bad, edges)


# -- which casts are proven in range ---------------------------------------------------------


def _casts(graph: Graph) -> list[Node]:
    found = []
    for node in graph.nodes:
        if node.op is OpKind.CAST:
            found.append(node)
        for value in node.params.values():
            for sub in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(sub, Graph):
                    found += _casts(sub)
    return found


def _proven(fn, *args) -> list[bool]:
    """Per float-to-integer cast of ``fn``'s traced graph (a short loop is unrolled: one per
    iteration): is it proven in range?"""
    graph = function_for(fn, *args, static=True).get_concrete_function(*args).graph
    proven = exact_casts(graph)
    casts = [
        n
        for n in _casts(graph)
        if np.dtype(n.args[0].dtype).kind == "f" and np.dtype(n.dtype).kind in "iu"
    ]
    return [n in proven for n in casts]


def astype_unchecked(x):
    return x.astype(np.int64)


def where_rounded_bound(x):
    # 2**63 - 1 rounds to 2**63 in float64: the bound proves nothing exact
    return np.where((x < 2**63 - 1) & (x >= -100.0), np.trunc(x), 0.0).astype(np.int64)


def where_uint8(x):
    return np.where((x >= 0.0) & (x < 256.0), x, 7.0).astype(np.uint8)


def where_uint8_closed(x):
    return np.where((x >= 0.0) & (x <= 256.0), x, 7.0).astype(np.uint8)


def where_one_sided(x):
    return np.where(x < 100.0, np.floor(x), 0.0).astype(np.int32)


def where_mirrored(x):
    return np.where((x < 100.0) & (x >= -100.0), np.ceil(x), 1.0).astype(np.int8)


def where_float32_arm(x):
    y = x.astype(np.float32)
    return np.where((y >= 0.0) & (y < 1.0), y, -1.0).astype(np.int64)


def where_float32_rounded_arm(x):
    # 2**63 - 1024 rounds to 2**63 in float32: out of int64's range
    y = x.astype(np.float32)
    return np.where((y >= 0.0) & (y < 1.0), y, 2.0**63 - 1024).astype(np.int64)


@pytest.mark.parametrize(
    "fn,want",
    [
        (to_int, True),
        (astype_unchecked, False),
        (where_rounded_bound, False),
        (where_uint8, True),
        (where_uint8_closed, False),
        (where_one_sided, False),
        (where_mirrored, True),
        (where_float32_arm, True),
        (where_float32_rounded_arm, False),
    ],
)
def test_exact_casts_proves_only_casts_of_values_in_range(fn, want):
    x = np.array([1.5, -2.5, 300.0])
    proven = _proven(fn, x)
    assert proven and all(p == want for p in proven)


@pytest.mark.slow  # (a compile per case: the full suite)
@pytest.mark.parametrize(
    "fn",
    [
        astype_unchecked,
        where_rounded_bound,
        where_uint8,
        where_uint8_closed,
        where_mirrored,
        where_float32_arm,
        where_float32_rounded_arm,
    ],
)
def test_casts_match_numpy_at_their_edges(fn):
    x = np.array([0.0, -0.0, 255.9, 256.0, -100.0, 99.99, -0.99, 1e6, -(2.0**63), _TOP64])
    with np.errstate(invalid="ignore"):
        want = fn(x)
        got = function_for(fn, x)(x.copy())
    same(got, want)
