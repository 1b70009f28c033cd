"""Advanced indexing, selection and order statistics in the whole-graph compiler, bit for bit
NumPy's.

Advanced indexing (integer arrays, constant or traced, 1-D and n-D; bool masks) for reads
and writes, ``nonzero`` and what lowers to it, and the other ops
:mod:`kernel_ext.backends.whole_graph_ops` gained for the real-code corpus. Every test runs
the compiled whole-graph function *without its fallback* (:func:`whole_graph_support.compiled`: a
rerun in the fused executor fails the test) and compares dtype, shape and every bit with eager
NumPy; where NumPy raises (an index out of range, a mask of the wrong shape), the traced function
must raise NumPy's own error, through the fallback. Inputs come from hypothesis.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from whole_graph_support import compiled, function_for, same

import kernel_ext as kx

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py). NumPy warns of the overflow and invalid
# operations hypothesis feeds it (the eager side).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning"),
]


def _check(fn: Callable, *args: Any, static: bool = False) -> None:
    same(compiled(fn, *args, static=static), fn(*[np.copy(a) for a in args]))


def _raises_as_numpy(fn: Callable, *args: Any) -> None:
    """NumPy raises for these arguments: the traced function raises the same error type."""
    with pytest.raises(Exception) as want:
        fn(*[np.copy(a) for a in args])
    f = function_for(fn, *args)
    with pytest.raises(want.type):
        f(*[np.copy(a) for a in args])


def _floats(n: int) -> st.SearchStrategy:
    return hnp.arrays(
        np.float64,
        n,
        elements=st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf, 1.5, -2.25, 7.0, 1e300])
        | st.floats(),
    )


def _indices(size: int, n: int, dtype: Any = np.int64) -> st.SearchStrategy:
    """``n`` valid indices into an axis of ``size`` (negative ones included)."""
    return hnp.arrays(dtype, n, elements=st.integers(-size, size - 1))


# -- getitem with integer arrays ----------------------------------------------------------------


def _gathers(x, i, j):
    return (
        x[i],
        x[i, j],
        x[:, j],
        x[i, :, j],
        x[1:, i, ::2],
        x[..., j],
        x[i[:, None], j],
        x[0, j],
        x[i, 1],
        x[::-1, [2, -1, 0]],
        x[[[1], [0]], 2:, [0, 3]],
    )


@settings(max_examples=40, deadline=None)
@given(_floats(60), _indices(3, 4, np.int8), _indices(4, 4))
def test_integer_array_reads_are_numpys(data, i, j):
    _check(_gathers, data.reshape(3, 4, 5), i, j)


@given(st.data())
@settings(max_examples=20, deadline=None)
def test_integer_array_reads_of_any_length(data):
    n = data.draw(st.integers(0, 6))
    x = np.arange(60.0).reshape(5, 4, 3).transpose(2, 1, 0)[:, ::-1].copy()  # (3, 4, 5)
    i = data.draw(_indices(3, n))
    j = data.draw(_indices(4, n))
    _check(_gathers, x, i, j)


def _pair(x, i, j):
    return x[i, j]


@pytest.mark.parametrize(
    "i, j",
    [
        (np.array([0, 3]), np.array([0, 1])),  # 3 is out of range for 3 rows
        (np.array([-4, 0]), np.array([0, 1])),  # so is -4
        (np.array([0, 1, 2]), np.array([0, 1])),  # lengths that do not broadcast
    ],
)
def test_integer_array_reads_numpy_refuses_raise_its_error(i, j):
    _raises_as_numpy(_pair, np.zeros((3, 4)), i, j)


def test_an_empty_broadcast_checks_no_index_as_numpy():
    x = np.arange(12.0).reshape(3, 4)
    _check(_pair, x, np.array([7]), np.zeros(0, np.int64))


def _labels(x, y):
    return x[np.arange(6), y], x[np.arange(6)[::-1], y[::-1]]


def test_a_constant_row_index_beside_traced_labels():
    _check(
        _labels, np.random.default_rng(0).random((6, 4)), np.array([3, 0, 1, 2, 2, -1]), static=True
    )


# -- bool masks -----------------------------------------------------------------------------------


def _masked(x, m, col):
    return (
        x[m],
        x[:, col],
        x[m[:, 0]],
        x[m[:, 0], 1:],
        x[1:][m[1:, 0]],
        x[x > 1.0],
        x[m[:, 0], 1],
        x[-1, col],
        x[m[:, 0], np.array([[0], [2]])],
    )


@settings(max_examples=40, deadline=None)
@given(_floats(20), hnp.arrays(np.bool_, 20), hnp.arrays(np.bool_, 5))
def test_bool_mask_reads_are_numpys(data, mask, col):
    _check(_masked, data.reshape(4, 5), mask.reshape(4, 5), col)


def test_an_all_false_mask_reads_an_empty_array():
    _check(_masked, np.ones((4, 5)), np.zeros((4, 5), bool), np.zeros(5, bool))


def test_a_mask_of_the_wrong_shape_raises_numpys_index_error():
    _raises_as_numpy(_masked, np.ones((4, 5)), np.zeros((4, 5), bool), np.zeros(4, bool))


# -- setitem with integer arrays and masks --------------------------------------------------


def _writes(x, i, v):
    a = x.copy()
    a[i] = v[0]  # a scalar, duplicates included
    b = x.copy()
    b[i, 1] = v  # one value per index: the last write wins
    c = x.copy()
    c[:, [1, 0]] = 7.5
    c[i, 2] += 1.0  # buffered: a repeated index adds once
    d = x.copy()
    d[i[:, None], [0, 2]] = v[:2]  # an n-D broadcast index and a broadcast value
    return a, b, c, d


@settings(max_examples=40, deadline=None)
@given(_floats(12), _indices(4, 6), _floats(6))
def test_integer_array_writes_are_numpys(data, i, v):
    _check(_writes, data.reshape(4, 3), i, v)


def _write_in_place(x, i, v):
    x[i] = v
    x[i[:2], 0] = -v[:2, 0] * 0.5
    return x


@settings(max_examples=25, deadline=None)
@given(_floats(8), _indices(4, 4), _floats(4))
def test_writes_into_an_argument_in_place_are_numpys(data, i, v):
    x = data.reshape(4, 2)
    f = function_for(_write_in_place, x, i, v[:, None])
    want_x = x.copy()
    want = _write_in_place(want_x, i, v[:, None])
    got_x = x.copy()
    got = f(got_x, i, v[:, None])
    same(got, want)
    same(got_x, want_x)
    _check(_write_in_place, x, i, v[:, None])


def _ints_write(counts, idx, vals):
    c = counts.copy()
    c[idx] += 1
    c[idx[::2]] = vals[:5]
    return c


@settings(max_examples=30, deadline=None)
@given(
    hnp.arrays(np.int32, 6, elements=st.integers(-(2**31), 2**31 - 1)),
    _indices(6, 9),
    hnp.arrays(np.int16, 5),
)
def test_integer_writes_with_a_cast_are_numpys(counts, idx, vals):
    _check(_ints_write, counts, idx, vals)


def _mask_writes(x, m, y):
    a = x.copy()
    a[m] = 0.0
    b = np.full_like(x, -1.0)
    b[m] = x[m]
    c = x.copy()
    c[m[:, 0]] = y[0]  # whole rows, a row value broadcast
    c[c < 0] *= -1.0
    return a, b, c


@settings(max_examples=40, deadline=None)
@given(_floats(15), hnp.arrays(np.bool_, 15), _floats(5))
def test_bool_mask_writes_are_numpys(data, mask, y):
    _check(_mask_writes, data.reshape(3, 5), mask.reshape(3, 5), y[None, :])


def _bad_value(x, i, v):
    x = x.copy()
    x[i] = v
    return x


def test_a_value_that_does_not_broadcast_raises_numpys_error():
    _raises_as_numpy(_bad_value, np.zeros(5), np.array([0, 1, 2]), np.ones(2))
    _raises_as_numpy(_bad_value, np.zeros(5), np.array([0, 7]), np.ones(2))


# -- the corpus -----------------------------------------------------------------------------------
# -- nonzero and what lowers to it ------------------------------------------------------------


def _nonzeros(x, m):
    return (
        np.nonzero(x),
        np.argwhere(x),
        np.flatnonzero(x),
        np.where(m),
        np.nonzero(x[0]),
        x[np.nonzero(m)],
        np.nonzero(m)[1] + 1,
    )


@settings(max_examples=40, deadline=None)
@given(_floats(12), hnp.arrays(np.bool_, 12))
def test_nonzero_where_argwhere_flatnonzero_are_numpys(data, m):
    _check(_nonzeros, data.reshape(3, 4), m.reshape(3, 4))


def test_nonzero_of_nothing_and_of_integers():
    _check(_nonzeros, np.zeros((2, 0)), np.zeros((2, 0), bool))
    _check(_nonzeros, np.array([[0, -3, 0], [7, 0, 0]], np.int16), np.ones((2, 3), bool))


# -- squeeze, ufunc.accumulate ------------------------------------------------------------------


def _squeezes(x):
    return np.squeeze(x[:, None, :1]), np.squeeze(x[:1], axis=0), x[None, :1, :1].squeeze()


def test_squeeze_is_a_view_as_numpy():
    _check(_squeezes, np.arange(12.0).reshape(3, 4))
    g = kx.function(lambda x: np.squeeze(x, axis=1), jit_compile=True)
    same(g(np.ones((3, 1))), np.ones(3))
    f = function_for(lambda x: np.squeeze(x, axis=1), np.ones((3, 1)))
    with pytest.raises(ValueError):  # NumPy: "cannot select an axis to squeeze out..."
        f(np.ones((3, 2)))


def _accumulates(x):
    return (
        np.add.accumulate(x),
        np.multiply.accumulate(x, axis=1),
        np.maximum.accumulate(x, axis=1),
        np.minimum.accumulate(x[:, ::-1], axis=0),
        np.subtract.accumulate(x[0]),
    )


@settings(max_examples=40, deadline=None)
@given(_floats(12))
def test_ufunc_accumulate_is_numpys(data):
    _check(_accumulates, data.reshape(3, 4))
    _check(_accumulates, data.reshape(3, 4).astype(np.float32))


@settings(max_examples=20, deadline=None)
@given(hnp.arrays(np.int64, 12, elements=st.integers(-(2**63), 2**63 - 1)))
def test_integer_accumulate_wraps_as_numpy(data):
    _check(_accumulates, data.reshape(4, 3))


# -- searchsorted / digitize ----------------------------------------------------------------------


def _searches(a, v):
    return (
        np.searchsorted(a, v),
        np.searchsorted(a, v, side="right"),
        np.searchsorted(a, v[0, 0]),
        np.searchsorted(a, v.astype(np.float32)),
    )


@settings(max_examples=60, deadline=None)
@given(_floats(7), _floats(6), st.booleans())
def test_searchsorted_is_numpys_sorted_or_not(a, v, sort):
    """Sorted (NaNs last), and unsorted too: NumPy's own search order, step for step."""
    _check(_searches, np.sort(a) if sort else a, v.reshape(2, 3))


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(np.int64, 6, elements=st.integers(-5, 5)), _floats(4))
def test_searchsorted_of_mixed_dtypes_is_numpys(a, v):
    _check(_searches, np.sort(a), v.reshape(2, 2))


def _digitizes(x, bins):
    return np.digitize(x, bins), np.digitize(x, bins, right=True), np.digitize(x, bins[::-1])


@settings(max_examples=60, deadline=None)
@given(
    _floats(6),
    hnp.arrays(np.float64, 5, elements=st.sampled_from([-1.0, 0.0, -0.0, 2.5, np.inf, np.nan])),
    st.booleans(),
)
def test_digitize_is_numpys(x, bins, sort):
    b = np.sort(bins) if sort else bins
    try:
        want = _digitizes(x, b)
    except ValueError:  # bins neither increasing nor decreasing: NumPy's error, through NumPy
        with pytest.raises(ValueError):
            function_for(_digitizes, x, b)(x, b)
        return
    same(compiled(_digitizes, x, b), want)


# -- median / percentile / quantile ----------------------------------------------------------------


def _medians(x):
    return (
        np.median(x),
        np.median(x, axis=0),
        np.median(x, axis=1, keepdims=True),
        np.median(x[:, :3], axis=-1),
    )


def _quantiles(x):
    return (
        np.percentile(x, [10, 90], axis=0),
        np.percentile(x, 50.0),
        np.quantile(x, [0.0, 0.25, 1.0], axis=1),
        np.quantile(x, 0.3, axis=0, keepdims=True),
    )


_ORDERED = st.sampled_from(
    [0.0, 1.5, -2.25, 7.0, 1e300, -1e300, np.inf, -np.inf, 3.0, 0.1]
) | st.floats(allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, 20, elements=_ORDERED))
def test_median_and_quantiles_are_numpys(data):
    x = data.reshape(4, 5)
    _check(_medians, x)
    _check(_medians, x.astype(np.float32))
    # zeros of one sign (which zero NumPy's partition picks among both is its own: a rerun)
    _check(_quantiles, np.where(x == 0, 0.0, x))


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(np.int64, 12, elements=st.integers(-(2**62), 2**62)))
def test_median_of_integers_is_numpys(data):
    _check(_medians, data.reshape(3, 4))


@pytest.mark.parametrize(
    "x",
    [
        np.array([[np.nan, 1.0, 2.0], [3.0, 4.0, 5.0]]),  # a NaN: NumPy's own NaN, via NumPy
        np.array([[0.0, -0.0, 2.0], [-0.0, 0.0, 5.0]]),  # which zero: NumPy's partition's
    ],
)
def test_nans_and_mixed_zeros_give_numpys_result_through_numpy(x):
    f = function_for(_quantiles, x)
    same(f(x.copy()), _quantiles(x.copy()))
    g = function_for(_medians, x)
    same(g(x.copy()), _medians(x.copy()))


# -- unique / interp / histogram ------------------------------------------------------------------


def _uniques(x):
    return (
        np.unique(x),
        np.unique(x, return_counts=True),
        np.unique(x, return_index=True),
        np.unique(x[::-1], return_index=True, return_counts=True),
    )


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.int64, st.integers(0, 12), elements=st.integers(-3, 3)))
def test_unique_values_indices_and_counts_are_numpys(x):
    _check(_uniques, x)


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, 10, elements=st.sampled_from([1.5, -2.0, np.inf, 0.0, 7.0])))
def test_unique_of_floats_is_numpys(x):
    _check(_uniques, x.reshape(2, 5))


def test_unique_of_nans_or_mixed_zeros_gives_numpys_result_through_numpy():
    for x in (np.array([np.nan, 1.0, np.nan]), np.array([0.0, -0.0, 1.0])):
        same(function_for(_uniques, x)(x), _uniques(x))


def _interps(x, xp, fp):
    return np.interp(x, xp, fp), np.interp(x[0], xp, fp), np.interp(x, xp[:1], fp[:1])


@settings(max_examples=60, deadline=None)
@given(_floats(6), hnp.arrays(np.float64, 5, elements=st.floats(-1e6, 1e6)), _floats(5))
def test_interp_is_numpys(x, xp, fp):
    _check(_interps, x.reshape(2, 3), np.sort(xp), fp)


def test_interp_with_an_unsorted_xp_gives_numpys_result_through_numpy():
    x, xp, fp = np.linspace(-1, 5, 7).reshape(1, 7), np.array([0.0, 3, 1, 2, 4]), np.arange(5.0)
    same(function_for(_interps, x, xp, fp)(x, xp, fp), _interps(x, xp, fp))


def _histograms(x):
    return (
        np.histogram(x, bins=8, range=(-3, 3)),
        np.histogram(x, bins=3, range=(0.1, 0.7)),
        np.histogram(x, bins=1, range=(2, 2)),
    )


@settings(max_examples=60, deadline=None)
@given(_floats(20))
def test_histogram_counts_and_edges_are_numpys(x):
    _check(_histograms, x)


@given(st.floats(-3, 3))
@settings(max_examples=40, deadline=None)
def test_histogram_values_on_and_beside_the_edges(v):
    """Values at, and one ulp either side of, each edge: NumPy's corrections by one."""
    edges = np.histogram_bin_edges(np.empty(0), 8, (-3, 3))
    x = np.concatenate([edges, np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf), [v]])
    _check(_histograms, x)


# -- convolve / correlate -------------------------------------------------------------------------


def _convolutions(x, k):
    return (
        np.convolve(x, k, mode="same"),
        np.convolve(x, k, mode="valid"),
        np.convolve(x, k),
        np.convolve(k, x, mode="same"),
        np.correlate(x, k),
        np.correlate(k, x, "full"),
        np.correlate(x, k, "same"),
    )


@settings(max_examples=40, deadline=None)
@given(st.data(), st.sampled_from([np.float64, np.float32]))
def test_convolve_and_correlate_are_numpys_short_and_long_kernels(data, dt):
    """Kernels of up to 11 values take NumPy's small_correlate; longer ones its BLAS dot,
    as do the partial overlaps at the ends: both bit for bit."""
    n = data.draw(st.integers(1, 40))
    m = data.draw(st.integers(1, 16))
    x = data.draw(hnp.arrays(np.float64, n, elements=st.floats(-1e3, 1e3))).astype(dt)
    k = data.draw(hnp.arrays(np.float64, m, elements=st.floats(-1e3, 1e3))).astype(dt)
    _check(_convolutions, x, k)


def test_convolve_of_an_empty_array_raises_numpys_error():
    _raises_as_numpy(_convolutions, np.zeros(0), np.ones(3))


# -- linalg.solve / inv / det -------------------------------------------------------------------


def _linalg(a, b):
    return (
        np.linalg.solve(a, b),
        np.linalg.solve(a, b[:, None] * 2.0),
        np.linalg.inv(a),
        np.linalg.det(a),
        np.linalg.inv(a) @ b,
    )


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(0, 2**32 - 1), st.sampled_from([np.float64, np.float32]))
def test_solve_inv_det_are_numpys_lapack_calls(n, seed, dt):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((n, n)) + n * np.eye(n)).astype(dt)
    _check(_linalg, a, rng.standard_normal(n).astype(dt))
    _check(_linalg, np.asfortranarray(a), rng.standard_normal(n).astype(dt))


def test_a_singular_matrix_raises_numpys_linalg_error():
    _raises_as_numpy(_linalg, np.ones((3, 3)), np.ones(3))
    _raises_as_numpy(_linalg, np.ones((3, 4)), np.ones(3))


def _self_indexed(a):
    b = a.copy()
    b[b[:3]] = 7  # the index is a view of the array written (in place)
    c = a * 2
    c[a[::-1] % 5] = c[:5]  # the value too
    return b, c


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(np.int64, 5, elements=st.integers(-5, 4)))
def test_an_index_or_value_sharing_the_written_array_is_read_first(a):
    _check(_self_indexed, a)
