"""``jit_compile=True`` ops of :mod:`kernel_ext.backends.whole_graph_ops`, bit for bit NumPy's.

Every test runs a function through the compiled whole-graph function *without its fallback*
(:func:`whole_graph_support.compiled` makes a rerun in the fused executor an error), compares
every bit with eager NumPy (``tobytes``: NaN payloads and the sign of zero included), and checks
that ``unsupported_reason`` accepts the graph. Values come from fixed cases and from hypothesis
(NaN, ±0, ±inf, integer extremes), on one compiled function per shape and dtype.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from whole_graph_support import compiled, function_for, same

import kernel_ext as kx

# Minutes of compiling from a cold kernel cache: the full suite and CI run this module, the
# quick subset leaves it out (tests/markers.py).
pytestmark = pytest.mark.slow

RNG = np.random.default_rng(16)
FLOATS = (np.float64, np.float32)
SPECIALS = [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, -1.0, 1e-300, 3.5, -2.25]


def _check(fn: Callable, *args: Any, static: bool = False) -> None:
    with np.errstate(all="ignore"):
        want = fn(*args)
    same(compiled(fn, *args, static=static, copy_args=False), want)


def _falls_back(fn: Callable, *args: Any) -> None:
    """The compiled function hands this call to NumPy, whose result comes back."""
    f = function_for(fn, *args)
    f(*args)
    scope = f.get_concrete_function(*args).executable.run.__globals__
    calls = []
    saved = scope["_fallback"]

    def counting(*a: Any) -> Any:
        calls.append(1)
        return saved(*a)

    scope["_fallback"] = counting
    try:
        with np.errstate(all="ignore"):
            same(f(*args), fn(*args))
    finally:
        scope["_fallback"] = saved
    assert calls, "expected a rerun in NumPy"


def _values(dtype: Any, n: int) -> st.SearchStrategy:
    """``n`` values of ``dtype``: specials (NaN, ±0, ±inf) and extremes among ordinary ones."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        elem = st.one_of(st.sampled_from(SPECIALS), st.floats(-1e6, 1e6, width=8 * dt.itemsize))
    elif dt.kind == "b":
        elem = st.booleans()
    else:
        info = np.iinfo(dt)
        elem = st.one_of(
            st.sampled_from([info.min, info.max, 0, -1 if info.min else 1]),
            st.integers(int(info.min), int(info.max)),
        )
    return st.lists(elem, min_size=n, max_size=n).map(lambda v: np.array(v, dtype=dt))


def _rand(shape: tuple, dtype: Any = np.float64) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return RNG.random(shape) < 0.5
    if dt.kind in "iu":
        return RNG.integers(-5 if dt.kind == "i" else 0, 6, shape).astype(dt)
    return RNG.standard_normal(shape).astype(dt)


# -- dot / matmul --------------------------------------------------------------------------------


def _dot(a, b):
    return np.dot(a, b)


def _matmul(a, b):
    return a @ b


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int8, np.bool_])
@pytest.mark.parametrize("fn", [_dot, _matmul])
def test_dot_and_matmul_of_vectors_and_matrices_are_numpys_bits(fn, dtype):
    a, v, w = _rand((5, 7), dtype), _rand(7, dtype), _rand(5, dtype)
    for x, y in [(v, v), (a, v), (w, a), (a, a.T), (a.T, w), (v[::2], a[:4].T.T)]:
        _check(fn, x, y)
    for x, y in [(a.T[::2], w), (v[::-1], a.T)]:  # layouts np.dot copies first
        (_check if fn is _matmul or dtype not in FLOATS else _falls_back)(fn, x, y)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_batched_matmul_broadcasts_a_matrix_or_vector_operand(dtype):
    a3, b3 = _rand((4, 5, 7), dtype), _rand((4, 7, 3), dtype)
    for x, y in [
        (a3, b3),
        (a3[:1], b3),
        (_rand((5, 7), dtype), b3),
        (a3, _rand(7, dtype)),
        (_rand(5, dtype), a3),
        (a3.transpose(0, 2, 1), a3),
    ]:
        _check(_matmul, x, y)


def test_mixed_dtype_products_cast_as_numpy_does():
    for x, y in [
        (_rand(7, np.int16), _rand(7, np.float32)),
        (_rand((3, 7), np.float32), _rand(7, np.float64)),
        (_rand((3, 7), np.bool_), _rand((7, 2), np.int32)),
        (_rand((3, 7), np.int64), _rand(7, np.float64)),
    ]:
        _check(_dot, x, y)
        _check(_matmul, x, y)


def test_products_with_an_empty_inner_dimension_are_zeros():
    _check(_dot, np.zeros(0), np.zeros(0))
    _check(_matmul, np.zeros((3, 0), np.float32), np.zeros(0, np.float32))


def test_a_vector_loop_of_products_reuses_its_buffer_and_matches_numpy():
    def power_iteration(a, v):
        for _ in range(5):
            v = a @ v
            v = v / np.sqrt(np.dot(v, v))
        return v

    _check(power_iteration, _rand((6, 6)), _rand(6))


def _grow(a, v):
    while np.max(np.abs(v)) < 1e6:  # a graph while loop: v's buffers ping-pong
        v = a @ v
        v = np.cumsum(v[::-1]) - np.dot(v, v) * 1e-9
    return v


def _power(a, v):
    while np.max(np.abs(v)) < 1e6:  # the product writes into v's dead buffer
        v = a @ v
    return v


def test_products_and_scans_carried_through_a_graph_loop():
    a = np.eye(6) * 1.5 + _rand((6, 6)) * 0.1
    for fn in (_grow, _power):
        _check(fn, a, _rand(6))
        _check(fn, a.astype(np.float32), _rand(6, np.float32))


def test_mismatched_product_shapes_raise_numpys_error():
    spec = [kx.TensorSpec((None, None), np.float64), kx.TensorSpec((None,), np.float64)]
    f = kx.function(_dot, jit_compile=True, input_signature=spec)
    same(f(np.ones((2, 3)), np.ones(3)), np.dot(np.ones((2, 3)), np.ones(3)))
    with pytest.raises(ValueError, match="not aligned"):
        f(np.ones((2, 3)), np.ones(4))


@settings(max_examples=60, deadline=None)
@given(_values(np.float64, 12), _values(np.float64, 4))
def test_float_products_with_specials_match_numpy(x, y):
    _check(_dot, x.reshape(3, 4), y)
    _check(_dot, y, x.reshape(4, 3))
    _check(_matmul, x[:4], y)


@settings(max_examples=60, deadline=None)
@given(_values(np.int32, 12), _values(np.int32, 4))
def test_integer_products_wrap_as_numpy_does(x, y):
    _check(_dot, x.reshape(3, 4), y)
    _check(_matmul, x[:4], y)


# -- stack / concatenate / expand_dims / flip ----------------------------------------------------


def _stack_rows(a, b):
    return np.stack([a, b * 2, a + b])


def _stack_last(a, b):
    return np.stack([a, b], axis=-1)


def _stack_scalars(a, b):
    return np.stack([np.sum(a), np.max(b), a[0]])


def _concat0(a, b):
    return np.concatenate([a, b * 2, a])


def _concat1(a, b):
    return np.concatenate([a, b, a[:, :1]], axis=1)


def _concat_flat(a, b):
    return np.concatenate([a, b.T], axis=None)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16, np.bool_])
def test_stack_and_concatenate_copy_numpys_values(dtype):
    a, b = _rand((3, 4), dtype), _rand((3, 4), dtype)
    for fn in (_stack_rows, _stack_last, _concat0, _concat1, _concat_flat):
        _check(fn, a, b)
    _check(_stack_scalars, _rand(5, dtype), _rand(5, dtype))
    _check(_stack_rows, a.T, b.T)  # transposed inputs


def test_stack_and_concatenate_cast_mixed_dtypes_safely():
    _check(_stack_last, _rand((3, 4), np.int32), _rand((3, 4), np.float64))
    _check(_concat0, _rand((2, 4), np.float32), _rand((3, 4), np.float64))
    _check(_concat1, _rand((3, 4), np.bool_), _rand((3, 2), np.int8))


def test_stack_of_different_shapes_raises_numpys_error():
    spec = [kx.TensorSpec((None,), np.float64), kx.TensorSpec((None,), np.float64)]
    f = kx.function(_stack_last, jit_compile=True, input_signature=spec)
    same(f(np.ones(3), np.zeros(3)), _stack_last(np.ones(3), np.zeros(3)))
    with pytest.raises(ValueError, match="same shape"):
        f(np.ones(3), np.ones(4))


@settings(max_examples=40, deadline=None)
@given(_values(np.float32, 12), _values(np.float32, 12))
def test_stack_and_concatenate_keep_every_bit(x, y):
    a, b = x.reshape(3, 4), y.reshape(3, 4)
    _check(_stack_last, a, b)
    _check(_concat1, a, b)


def _expand_flip(a):
    return (
        np.expand_dims(a, (0, 2)) * 2,
        np.expand_dims(a, (-1, 1)) + 1,
        np.flip(a) - 1,
        np.flip(a, axis=1) * 3,
        np.flip(a, (0,)) * 1.5,
        a[::-1, ::2] @ np.flip(a.T, 0)[::2],
    )


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_expand_dims_with_several_axes_and_flip_are_views_as_in_numpy(dtype):
    a = _rand((4, 4), dtype)
    _check(_expand_flip, a)
    _check(_expand_flip, a.T)


# -- cumsum / cumprod ----------------------------------------------------------------------------


def _scans(a):
    return (
        np.cumsum(a, axis=0),
        np.cumsum(a, axis=-1),
        np.cumprod(a, axis=1),
        np.cumsum(a),
        np.cumprod(a.T, axis=0),
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
def test_cumsum_and_cumprod_are_numpys_accumulations(dtype):
    a = _rand((4, 6), dtype)
    _check(_scans, a)
    _check(_scans, a[::-1, ::2])


def _scan_dtype(a):
    return np.cumsum(a, dtype=np.float64), np.cumprod(a, axis=0, dtype=np.int64)


def test_cumsum_with_a_dtype_casts_first():
    _check(_scan_dtype, _rand((3, 5), np.int16))


@settings(max_examples=60, deadline=None)
@given(_values(np.float64, 24))
def test_scans_with_nan_inf_and_signed_zeros_keep_numpys_bits(x):
    _check(_scans, x.reshape(4, 6))


@settings(max_examples=40, deadline=None)
@given(_values(np.int64, 24))
def test_integer_scans_wrap_as_numpy_does(x):
    _check(_scans, x.reshape(4, 6))


# -- var / std -----------------------------------------------------------------------------------


def _moments(a):
    return (
        np.var(a),
        np.std(a, axis=0),
        np.var(a, axis=1, ddof=1),
        np.std(a, axis=-1, keepdims=True),
        np.var(a, axis=0, keepdims=True, ddof=2),
        np.std(a, ddof=1),
    )


def _moments_1d(v):
    return np.var(v), np.std(v, ddof=1), np.std(v, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_var_and_std_follow_numpys_algorithm_bit_for_bit(dtype):
    for shape in ((20, 3), (5, 40), (3, 300)):  # pairwise sums past 8 and 128 elements
        a = (RNG.standard_normal(shape) * 10.0 ** RNG.integers(-3, 4, shape)).astype(dtype)
        _check(_moments, a)
    v = RNG.standard_normal(200).astype(dtype)
    _check(_moments_1d, v)
    _check(_moments_1d, v[::3])


def _var3(a):
    return np.var(a, axis=1), np.std(a, axis=(0, 1, 2)), np.var(a, axis=2, keepdims=True)


def test_var_of_a_3d_array_along_each_axis():
    _check(_var3, RNG.standard_normal((3, 17, 5)))


def test_var_of_a_transposed_input_or_too_few_values_reruns_in_numpy():
    a = RNG.standard_normal((20, 3))
    _falls_back(_moments, a.T)

    def var_ddof(v):
        return np.var(v, ddof=3)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _falls_back(var_ddof, np.ones(3))


@settings(max_examples=60, deadline=None)
@given(_values(np.float64, 24))
def test_var_with_nan_inf_and_zeros_matches_numpy(x):
    _check(_moments, x.reshape(6, 4))


# -- getitem with integer arrays -----------------------------------------------------------------

ROWS = np.array([2, 0, -1, 2])
COLS = np.array([0, 3, 1, -4])


def _gathers(a, idx):
    return (
        a[ROWS],
        a[ROWS, COLS],
        a[:, COLS] * 1,
        a[idx],
        a[idx, idx],
        a[..., COLS, 1:],
        a[0, :, idx],
        a[1:, [1], 2],
        a[::-1, ROWS[:1], ::2],
    )


def test_integer_array_indexing_gathers_as_numpy_does():
    a = _rand((3, 4, 5))
    idx = np.array([1, -1, 0, 2])
    _check(_gathers, a, idx)
    _check(_gathers, _rand((4, 5, 6)).transpose(1, 0, 2)[:3, :, ::-1], idx[::-1])


def _pick_in_row(a, i, rows):
    return a[i, rows], a[rows, i, 1:]


def test_a_traced_integer_beside_an_index_array():
    a = _rand((4, 5, 3))
    _check(_pick_in_row, a, np.int64(-2), np.array([0, 3, 1]))


def _label_pick(x, y):
    return x[np.arange(6), y]  # np.arange(len(x)) folds to this constant


def test_the_softmax_label_pick_is_a_gather():
    x, y = _rand((6, 4)), np.array([3, 0, 1, 2, 2, 0])
    _check(_label_pick, x, y, static=True)


def test_an_index_out_of_range_raises_numpys_index_error():
    f = function_for(_label_pick, _rand((6, 4)), np.zeros(6, np.int64), static=True)
    with pytest.raises(IndexError):
        f(_rand((6, 4)), np.array([0, 1, 2, 3, 4, 5]))

    def pair(a, i, j):
        return a[i, j]

    a, i = _rand((3, 4)), np.array([0, 2, -3])
    _check(pair, a, i, i[::-1])
    g = function_for(pair, a, i, i)
    with pytest.raises(IndexError):  # lengths that do not broadcast
        g(a, i, i[:2])
    with pytest.raises(IndexError):
        g(a, i, i + 2)


# -- sort / argsort ------------------------------------------------------------------------------


def _sort(a):
    return np.sort(a)


def _argsort(a):
    return np.argsort(a)


def _sorts(a):
    return np.sort(a), np.sort(a, axis=0), np.sort(a, axis=None), np.argsort(a, axis=0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_sort_and_argsort_of_distinct_values_are_numpys(dtype):
    a = RNG.permutation(30).reshape(5, 6).astype(dtype) - 7
    if np.dtype(dtype).kind == "f":
        a[1, 2], a[3, 0], a[0, 5] = np.nan, np.inf, -np.inf
    _check(_sorts, a)
    _check(_sorts, a.T[::-1])


def test_sort_with_equal_values_of_equal_bits_is_numpys():
    a = np.array([[3.0, 1.0, 3.0, np.nan, 0.0, np.nan], [-0.0, 2.0, -0.0, 2.0, 5.0, 1.0]])
    _check(_sort, a)


def test_sort_ties_numpy_may_order_its_own_way_rerun_in_numpy():
    _falls_back(_sort, np.array([0.0, 1.0, -0.0, 2.0]))  # -0.0 and 0.0 tie
    nan2 = np.array([1.0, np.nan, 0.5, -np.nan])  # NaNs of two sign bits
    _falls_back(_sort, nan2)
    _falls_back(_argsort, np.array([2, 1, 2, 0]))  # an unstable kind's tie


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-(10**6), 10**6), min_size=1, max_size=40, unique=True))
def test_argsort_of_distinct_integers_matches_numpy(values):
    x = np.array(values, np.int64)
    _check(_argsort, x)
    _check(_sort, x.astype(np.float32))


# -- pad / outer ---------------------------------------------------------------------------------


def _pads(a):
    return (
        np.pad(a, 1),
        np.pad(a, ((2, 0), (1, 3)), constant_values=-1.5),
        np.pad(a, ((1, 2), (0, 2)), mode="edge"),
        np.pad(a, 2, mode="edge"),
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16])
def test_pad_constant_and_edge_are_numpys(dtype):
    a = _rand((3, 4), dtype)
    _check(_pads, a)
    _check(_pads, a.T)


def _outers(a, b):
    return np.outer(a, b), np.outer(b, a.T)


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_outer_is_numpys_products(dtype):
    _check(_outers, _rand((2, 3), dtype), _rand(4, dtype))


@settings(max_examples=40, deadline=None)
@given(_values(np.float64, 6), _values(np.float64, 4))
def test_outer_with_nan_inf_and_zeros_keeps_numpys_bits(x, y):
    _check(_outers, x.reshape(2, 3), y)


# -- nanmean / max and min over several axes -----------------------------------------------------


def _nanmeans(a):
    return np.nanmean(a), np.nanmean(a, axis=0), np.nanmean(a, axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nanmean_skips_nans_as_numpy_does(dtype):
    a = _rand((6, 40), dtype)
    a[RNG.random(a.shape) < 0.2] = np.nan
    a[:, 0] = 1.0  # no lane of NaNs only
    a[0, :] = 2.0
    _check(_nanmeans, a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        a[1:, 1] = np.nan
        a[0, 1] = np.nan  # a column of NaNs only: NumPy's warning and NaN
        _falls_back(_nanmeans, a)


def _pool(x):
    return np.max(x, axis=(2, 3)), np.min(x, axis=(0, 2), keepdims=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8])
def test_max_and_min_over_several_axes(dtype):
    x = _rand((2, 3, 4, 5), dtype)
    _check(_pool, x)
    _check(_pool, x[:, :, ::2, 1:4])


def test_max_over_several_axes_where_numpys_order_decides_reruns_in_numpy():
    x = np.ones((2, 2, 2, 2))
    x[0, 0, 1, 1] = np.nan
    _falls_back(_pool, x)
    z = np.zeros((2, 2, 2, 2))
    z[1, 1, 0, 1] = -0.0  # the largest value of a window is a zero of either sign
    _falls_back(_pool, z)


def _ufunc_reduces(x):
    return (
        np.maximum.reduce(np.abs(x), axis=0, initial=0.0),
        np.minimum.reduce(x, axis=None),
        np.maximum.reduce(x, axis=(0, 1), keepdims=True),
    )


def test_maximum_and_minimum_reduce_with_an_initial_value():
    x = _rand((4, 5, 3))
    _check(_ufunc_reduces, x)
    _check(_ufunc_reduces, -np.abs(x))  # the initial 0.0 is the largest
    _check(_ufunc_reduces, x[:, :, ::-1])


def _sir(y0, beta, gamma):
    s, i, r = y0[0], y0[1], y0[2]
    history = []
    for _ in range(12):
        new_inf = beta * s * i
        new_rec = gamma * i
        s, i, r = s - new_inf, i + new_inf - new_rec, r + new_rec
        history.append((s, i, r))
    return np.array(history)


def test_a_scalar_segment_with_many_outputs_compiles_as_a_called_kernel():
    # 36 scalar outputs: more than the arguments CPython passes one by one (an inlined
    # kernel would need a *args call, which Numba refuses)
    y0 = np.array([0.99, 0.01, 0.0])
    assert compiled(_sir, y0, 0.3, 0.1, static=True, copy_args=False).shape == (12, 3)
    _check(_sir, y0, 0.3, 0.1, static=True)
