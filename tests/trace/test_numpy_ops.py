"""Every traced NumPy operation agrees with eager NumPy: value, dtype and static shape."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from markers import cheap_paths

import kernel_ext as kx

rng = np.random.default_rng(0)
F32 = rng.standard_normal((3, 4)).astype(np.float32)
F64 = rng.standard_normal((3, 4))
I32 = rng.integers(-5, 6, (3, 4)).astype(np.int32)
U8 = rng.integers(0, 255, (3, 4)).astype(np.uint8)
B = rng.random((3, 4)) > 0.5
SQ = rng.standard_normal((3, 3)) + 3 * np.eye(3)
V4 = rng.standard_normal(4)

CASES = {
    # operators and weak scalars (NEP 50)
    "add_weak_float": (lambda x: x + 1.5, F32),
    "radd_weak_int": (lambda x: 3 + x, I32),
    "int_plus_float_literal": (lambda x: x * 0.5, I32),
    "true_divide_ints": (lambda x: x / 2, I32),
    "floordiv_mod": (lambda x: (x // 3, x % 3), I32),
    "pow": (lambda x: x**2, F64),
    "neg_abs_invert": (lambda x: (-x, abs(x), ~x), I32),
    "comparisons": (lambda x: (x < 0, x >= 0.5, x == 1, x != 1), F32),
    "bitwise": (lambda x: (x & 3, x | 8, x ^ 1, x << 1, x >> 1), U8),
    "mixed_dtypes": (lambda x, y: x * y, F32, I32),
    "broadcast_row": (lambda x, y: x - y, F64, V4),
    "matmul_op": (lambda x, y: x @ y, F64, V4),
    "divmod": (lambda x: divmod(x, 4), I32),
    # ufuncs
    "unary_ufuncs": (
        lambda x: (
            np.tanh(x),
            np.exp(x),
            np.sin(x),
            np.sqrt(np.abs(x)),
            np.log1p(np.abs(x)),
            np.floor(x),
            np.sign(x),
        ),
        F32,
    ),
    "int_sqrt_promotes": (lambda x: np.sqrt(x), U8),
    "binary_ufuncs": (
        lambda x, y: (
            np.maximum(x, y),
            np.arctan2(x, y),
            np.hypot(x, y),
            np.fmod(x, 2.0),
            np.logaddexp(x, y),
        ),
        F64,
        F64 + 1,
    ),
    "logical": (
        lambda b, c: (
            np.logical_and(b, c),
            np.logical_or(b, c),
            np.logical_not(b),
            np.logical_xor(b, c),
        ),
        B,
        ~B,
    ),
    "predicates": (lambda x: (np.isnan(x), np.isfinite(x / 0.0), np.signbit(x)), F64),
    "ufunc_dtype_kwarg": (lambda x: np.add(x, 1, dtype=np.float64), I32),
    "where": (lambda x: np.where(x > 0, x, 0.0), F32),
    "where_mixed": (lambda x, y: np.where(x > 0, x, y), F32, I32),
    "clip": (lambda x: (np.clip(x, -0.5, 0.5), x.clip(min=0)), F64),
    "astype": (lambda x: (x.astype(np.int16), x.astype(bool)), F32),
    "round": (lambda x: (np.round(x, 2), np.round(x)), F64),
    # reductions
    "sum_all_axis_keepdims": (
        lambda x: (x.sum(), np.sum(x, axis=0), np.sum(x, axis=-1, keepdims=True)),
        F32,
    ),
    "sum_int_promotes": (lambda x: (np.sum(x), np.prod(x[0]), np.cumsum(x)), I32),
    "mean_std_var": (lambda x: (x.mean(), np.mean(x, axis=1), np.std(x), np.var(x, ddof=1)), F64),
    "max_min_arg": (
        lambda x: (x.max(), np.min(x, axis=0), np.argmax(x), np.argmin(x, axis=1)),
        F32,
    ),
    "any_all": (lambda b: (b.any(), np.all(b, axis=0), np.count_nonzero(b)), B),
    "ufunc_reduce": (lambda x: (np.add.reduce(x), np.maximum.reduce(x, axis=1)), F64),
    "multi_axis": (lambda x: np.sum(x.reshape(3, 2, 2), axis=(0, 2)), F64),
    "cumprod_axis": (lambda x: np.cumprod(x, axis=1), F64),
    # shapes
    "reshape_transpose": (
        lambda x: (x.reshape(2, 6), x.reshape(-1), x.T, np.transpose(x), x.reshape((4, -1))),
        F32,
    ),
    "expand_squeeze": (
        lambda x: (
            np.expand_dims(x, 0),
            np.expand_dims(x, (0, 3)),
            np.squeeze(x[:1]),
            x[None].squeeze(0),
        ),
        F64,
    ),
    "broadcast_to": (lambda v: np.broadcast_to(v, (2, 4)), V4),
    "concat_stack": (
        lambda x, y: (
            np.concatenate([x, y]),
            np.concatenate([x, y], axis=1),
            np.stack([x, y], axis=-1),
            np.vstack([x, y]),
            np.hstack([x, y]),
        ),
        F64,
        F64 * 2,
    ),
    "concat_promotes": (lambda x, y: np.concatenate([x, y]), F32, I32),
    "flip_swap_move": (
        lambda x: (
            np.flip(x),
            np.flip(x, 0),
            np.swapaxes(x, 0, 1),
            np.moveaxis(x.reshape(3, 2, 2), 0, -1),
        ),
        F64,
    ),
    "ravel_flatten_copy": (lambda x: (np.ravel(x), x.flatten(), np.copy(x)), I32),
    "likes": (
        lambda x: (np.zeros_like(x), np.ones_like(x, dtype=np.int8), np.full_like(x, 7.0)),
        F32,
    ),
    "atleast": (lambda v: (np.atleast_2d(v), np.atleast_1d(v.sum())), V4),
    # indexing
    "basic_indexing": (lambda x: (x[0], x[-1, 1:], x[:, None, ::2], x[..., 1], x[1:2, 1:3]), F32),
    "fancy_constant_index": (lambda x: (x[[0, 2]], x[:, [1, 1, 3]], x[x.shape[0] - 1]), F64),
    "boolean_constant_mask": (lambda x: x[np.array([True, False, True])], F64),
    "take": (lambda x: (np.take(x, [0, 5]), np.take(x, [1], axis=1)), F64),
    "setitem": (lambda x: _setitem(x), F64),
    # linear algebra and sorting
    "matmul_dot_outer": (
        lambda a, v: (np.matmul(a, a), np.dot(a, v[:3]), np.outer(v, v), a.dot(a)),
        SQ,
        V4,
    ),
    "linalg": (
        lambda a: (
            np.linalg.inv(a),
            np.linalg.det(a),
            np.linalg.solve(a, a[0]),
            np.linalg.norm(a),
            np.linalg.norm(a, axis=0),
        ),
        SQ,
    ),
    "sort": (lambda x: (np.sort(x), np.sort(x, axis=0), np.argsort(x), np.sort(x, axis=None)), F64),
    "isclose": (lambda x, y: np.isclose(x, y, atol=0.5), F64, F64 + 0.3),
}


def _setitem(x):
    y = x.copy()
    y[0] = 1.0
    y[1, 1:3] = np.array([5.0, 6.0])
    y[:, -1] += 10
    return y


def _flat(value):
    return list(value) if isinstance(value, tuple) else [value]


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_op_matches_eager_numpy(name):
    fn, *args = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = _flat(fn(*args))
        f = kx.function(fn)
        got = _flat(f(*args))
        cf = f.get_concrete_function(*args)
    assert len(got) == len(expected)
    for i, (g, e, spec) in enumerate(zip(got, expected, _flat(cf.structured_outputs))):
        e = np.asarray(e)
        assert np.asarray(g).dtype == e.dtype, f"output {i}: dtype"
        assert np.shape(g) == e.shape, f"output {i}: shape"
        assert spec.dtype == e.dtype and spec.shape == e.shape, f"output {i}: static type"
        np.testing.assert_array_equal(g, e, err_msg=f"output {i}")
        assert isinstance(g, np.generic) if e.ndim == 0 else isinstance(g, np.ndarray)


def test_dynamic_index_with_traced_scalar():
    f = kx.function(lambda x, i: (x[i], x[i, 1:], x[:, i]))
    for i in (0, 2, -1):
        for g, e in zip(f(F64, np.int64(i)), (F64[i], F64[i, 1:], F64[:, i])):
            np.testing.assert_array_equal(g, e)
    assert f.experimental_get_tracing_count() == 1


def test_dynamic_slice_bounds_give_unknown_dims():
    f = kx.function(lambda x, i: x[i : i + 2])
    cf = f.get_concrete_function(F64, np.int64(0))
    assert cf.structured_outputs.shape == (None, 4)
    np.testing.assert_array_equal(f(F64, np.int64(1)), F64[1:3])
    np.testing.assert_array_equal(f(F64, np.int64(2)), F64[2:4])


def test_traced_integer_and_boolean_array_indices():
    f = kx.function(lambda x, idx, mask: (x[idx], x[mask]))
    idx = np.array([2, 0])
    mask = F64 > 0
    got_idx, got_mask = f(F64, idx, mask)
    np.testing.assert_array_equal(got_idx, F64[idx])
    np.testing.assert_array_equal(got_mask, F64[mask])
    assert f.get_concrete_function(F64, idx, mask).structured_outputs[1].shape == (None,)


def test_in_place_operators_rebind_like_numpy():
    @kx.function
    def f(x):
        y = x * 1
        alias = y
        y += 1
        y[0] = 0.0
        return alias

    np.testing.assert_array_equal(f(np.ones(3)), [0, 2, 2])


def test_in_place_operator_refuses_unsafe_cast_like_numpy():
    def f(x):
        x = x * 1
        x += 1.5
        return x

    with pytest.raises(TypeError, match="same_kind"):
        f(np.ones(2, np.int32))
    with pytest.raises(TypeError, match="same_kind"):
        kx.function(f)(np.ones(2, np.int32))


def test_unknown_dims_propagate_through_ops():
    spec = kx.TensorSpec([None, 4], np.float32)
    f = kx.function(
        lambda x: (x + 1, x.sum(axis=1), x.T @ x, x.reshape(-1, 2), x[1:], np.zeros_like(x)),
        input_signature=[spec],
    )
    shapes = [s.shape for s in f.get_concrete_function().structured_outputs]
    assert shapes == [(None, 4), (None,), (4, 4), (None, 2), (None, 4), (None, 4)]
    outs = f(F32)
    np.testing.assert_array_equal(outs[4], F32[1:])
    np.testing.assert_array_equal(outs[5], np.zeros_like(F32))


def test_traced_value_properties():
    @kx.function
    def f(x):
        assert x.shape == (3, 4) and x.ndim == 2 and x.dtype == np.float32 and x.size == 12
        assert len(x) == 3
        return x

    f(F32)


# -- ufunc methods and the nan family ---------------------------------------------------------

F16 = F32.astype(np.float16)
NANS = np.where(B, np.nan, F64)
ALL_NAN_ROW = np.vstack([np.full(4, np.nan), F64[1:]])
C128 = F64 + 1j * F64[::-1]
I8 = I32.astype(np.int8)
STRIDED = np.repeat(F64, 2, axis=1)[:, ::2]  # non-contiguous
EMPTY = np.zeros((0, 4))

UFUNC_METHOD_AND_NAN_CASES = {
    "nan_reductions": (
        lambda x: (
            np.nansum(x),
            np.nansum(x, 0),
            np.nanprod(x, axis=1),
            np.nanmean(x, keepdims=True),
            np.nanstd(x, ddof=1),
            np.nanvar(x, 1),
            np.nanmax(x),
            np.nanmin(x, axis=0),
            np.nanargmax(x),
            np.nanargmin(x, axis=1),
        ),
        NANS,
    ),
    "nan_reductions_dtypes": (
        lambda x, i, b: (
            np.nansum(x, dtype=np.float64),
            np.nanmean(i),
            np.nanmax(i, axis=1),
            np.nansum(b),
            np.nanprod(x.astype(np.float16)),
        ),
        F32,
        I8,
        B,
    ),
    "nan_all_nan_slice": (
        lambda x: (np.nanmax(x, axis=1), np.nanmean(x, axis=1), np.nanmedian(x, axis=1)),
        ALL_NAN_ROW,
    ),
    "median_quantiles": (
        lambda x: (
            np.median(x),
            np.median(x, axis=0),
            np.nanmedian(x, 1),
            np.percentile(x, 30),
            np.nanpercentile(x, [10, 90], 1),
            np.quantile(x, 0.5, keepdims=True),
            np.nanquantile(x, (0.25, 0.75), axis=0, method="nearest"),
        ),
        NANS,
    ),
    "quantile_q_dtype_follows_nep50": (
        lambda x: (np.percentile(x, 50.0), np.percentile(x, np.float64(50))),
        F32,
    ),
    "nan_scans": (
        lambda x: (np.nancumsum(x), np.nancumprod(x, axis=1), np.nancumsum(x, 0, dtype=np.float32)),
        NANS,
    ),
    "nan_empty": (
        lambda x: (np.nansum(x, 0), np.nanquantile(x, [0.5, 0.9], axis=0), np.nanmedian(x, axis=0)),
        EMPTY,
    ),
    "elementwise_additions": (
        lambda x, i: (
            np.nextafter(x, 0),
            np.nextafter(x, np.inf),
            np.spacing(x),
            np.ldexp(x, i),
            np.ldexp(x, 3),
            np.degrees(x),
            np.radians(x),
        ),
        F32,
        I32,
    ),
    # (none of these has a complex loop in NumPy: complex inputs raise, as eagerly)
    "elementwise_float16": (
        lambda h: (
            np.spacing(h),
            np.nextafter(h, 1),
            np.frexp(h),
            np.modf(h),
            np.bitwise_count(np.abs(h).astype(np.int16)),
            np.divmod(h, 3),
            np.radians(h),
            np.ldexp(h, 2),
        ),
        F16,
    ),
    "nan_reductions_complex": (
        lambda c: (
            np.nansum(c),
            np.nanmean(c, axis=0),
            np.nanprod(c, 1),
            np.add.outer(c[0], c[1]),
            np.subtract.accumulate(c),
        ),
        C128,
    ),
    "frexp_modf_two_outputs": (lambda x: (np.frexp(x), np.modf(x), np.frexp(x)[0] * 2), F64),
    "divmod_ufunc_and_builtin": (
        lambda x, i: (np.divmod(x, 0.7), divmod(i, 3), divmod(7, i + 10), np.divmod(i, i + 20)),
        F64,
        I32,
    ),
    "bitwise_count": (lambda i, u: (np.bitwise_count(i), np.bitwise_count(u)), I32, U8),
    "ufunc_reduce": (
        lambda x, i, b: (
            np.subtract.reduce(x),
            np.add.reduce(i, 1),
            np.bitwise_xor.reduce(i, axis=None),
            np.maximum.reduce(x, initial=0.5),
            np.multiply.reduce(i, axis=1, keepdims=True),
            np.logical_xor.reduce(b, axis=0),
            np.add.reduce(i.astype(np.int8), dtype=np.int8),
            np.hypot.reduce(x, axis=(0, 1)),
            np.add.reduce(x[0, 0], axis=0),
        ),
        F64,
        I32,
        B,
    ),
    "ufunc_accumulate": (
        lambda x, i: (
            np.add.accumulate(i.astype(np.int8)),
            np.subtract.accumulate(x, axis=1),
            np.maximum.accumulate(x, 1, np.float32),
            np.multiply.accumulate(x[:, 0]),
        ),
        STRIDED,
        I32,
    ),
    "ufunc_reduceat": (
        lambda x, i: (
            np.add.reduceat(i, [0, 2], axis=1),
            np.maximum.reduceat(x.ravel(), np.array([0, 3, 1])),
            np.minimum.reduceat(x, [2, 0], axis=0),
        ),
        F64,
        I32,
    ),
    "ufunc_outer": (
        lambda x, v, i: (
            np.add.outer(x, v),
            np.subtract.outer(v, 2.0),
            np.multiply.outer(v, np.float32(2)),
            np.less.outer(v, v),
            np.divmod.outer(i[0], 3),
            np.add.outer(v[0], v[1]),
        ),
        F32,
        V4,
        I32,
    ),
    "ufunc_at": (lambda x: _ufunc_at(x), I32),
}


def _ufunc_at(x):
    y = x.copy()
    np.add.at(y, [0, 0, 1], 5)
    np.negative.at(y, (1, 2))
    np.maximum.at(y[1], [0, 0], np.array([7, 2], np.int32))
    np.add.at(y, (slice(None), [0, 0]), 1.5)  # unsafe cast into int32, as NumPy does
    return y


CASES.update(UFUNC_METHOD_AND_NAN_CASES)


@pytest.mark.parametrize("name", sorted(UFUNC_METHOD_AND_NAN_CASES))
@pytest.mark.parametrize("mode", ["numpy", "auto", "numba", "jit"])
def test_ufunc_method_and_nan_ops_match_numpy_on_every_path(name, mode):
    fn, *args = UFUNC_METHOD_AND_NAN_CASES[name]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = _flat_all(fn(*args))
        f = kx.function(fn, jit_compile=True) if mode == "jit" else kx.function(fn, backend=mode)
        got = _flat_all(f(*args))
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        e = np.asarray(e)
        assert np.asarray(g).dtype == e.dtype and np.shape(g) == e.shape, f"output {i}"
        np.testing.assert_array_equal(g, e, err_msg=f"output {i}")


def _flat_all(value):
    if isinstance(value, tuple):
        return [y for v in value for y in _flat_all(v)]
    return [value]


@pytest.mark.parametrize("name", sorted(UFUNC_METHOD_AND_NAN_CASES))
def test_ufunc_method_and_nan_ops_trace_natively(name):
    fn, *args = UFUNC_METHOD_AND_NAN_CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = kx.function(fn).get_concrete_function(*args).graph
    assert not [n for n in graph.nodes if n.op.value == "numpy_call"]


def test_ufunc_at_writes_into_an_argument_like_numpy():
    @kx.function
    def scatter(a, idx, v):
        np.add.at(a, idx, v)
        return a.sum()

    a, idx, v = np.zeros(5), np.array([0, 1, 1, 4, 1]), np.arange(5.0)
    want = np.zeros(5)
    np.add.at(want, idx, v)
    assert scatter(a, idx, v) == want.sum()
    np.testing.assert_array_equal(a, want)
    assert scatter.get_concrete_function(a, idx, v).graph.count_ops() >= 1


@pytest.mark.usefixtures("settled_warnings")
def test_nan_reductions_warn_as_numpy_does():
    f = kx.function(lambda x: np.nanmax(x, axis=1))
    with pytest.warns(RuntimeWarning, match="All-NaN slice"):
        got = f(ALL_NAN_ROW)
    assert np.isnan(got[0])


def test_nanargmax_of_an_all_nan_slice_raises_as_numpy_does():
    f = kx.function(lambda x: np.nanargmax(x, axis=1))
    with pytest.raises(ValueError, match="All-NaN slice"):
        np.nanargmax(ALL_NAN_ROW, axis=1)
    with pytest.raises(ValueError, match="All-NaN slice"):
        f(ALL_NAN_ROW)


def test_reduce_of_an_empty_axis_without_identity_raises_when_tracing():
    with pytest.raises(ValueError, match="no identity"):
        np.nanmax(EMPTY, axis=0)
    with pytest.raises(ValueError, match="no identity"):
        kx.function(lambda x: np.nanmax(x, axis=0))(EMPTY)
    with pytest.raises(ValueError, match="no identity"):
        kx.function(lambda x: np.subtract.reduce(x, axis=0))(EMPTY)


def test_ufunc_methods_keep_unknown_dims():
    spec = kx.TensorSpec([None, 4], np.float64)
    f = kx.function(
        lambda x: (
            np.subtract.reduce(x, axis=1),
            np.maximum.accumulate(x),
            np.add.reduceat(x, [0, 2], axis=1),
            np.add.outer(x[:, 0], x[0]),
            np.nanmax(x, axis=0),
            np.nanpercentile(x, [5, 50], axis=1),
        ),
        input_signature=[spec],
    )
    shapes = [s.shape for s in f.get_concrete_function().structured_outputs]
    assert shapes == [(None,), (None, 4), (None, 2), (None, 4), (4,), (2, None)]
    for rows in (2, 5):
        x = rng.standard_normal((rows, 4))
        want = (
            np.subtract.reduce(x, axis=1),
            np.maximum.accumulate(x),
            np.add.reduceat(x, [0, 2], axis=1),
            np.add.outer(x[:, 0], x[0]),
            np.nanmax(x, axis=0),
            np.nanpercentile(x, [5, 50], axis=1),
        )
        for g, w in zip(f(x), want):
            np.testing.assert_array_equal(g, w)
    assert f.experimental_get_tracing_count() == 1


def test_options_no_op_covers_fall_back_to_an_opaque_call():
    f = kx.function(lambda x: (np.nansum(x, where=x > 0), np.add.reduce(x, where=x > 0)))
    got = f(F64)
    np.testing.assert_array_equal(got[0], np.nansum(F64, where=F64 > 0))
    np.testing.assert_array_equal(got[1], np.add.reduce(F64, where=F64 > 0))
    ops = {n.op.value for n in f.get_concrete_function(F64).graph.nodes}
    assert "numpy_call" in ops


def test_asarray_of_a_traced_value_is_the_value_and_array_a_copy():
    @kx.function
    def f(x):
        y = np.asarray(x)
        z = np.array(x)
        w = np.asarray(x, np.float32)
        y[0] = 5.0  # y is x: the write reaches the caller's array, as in NumPy
        return z, w

    x = np.ones(3)
    z, w = f(x)
    np.testing.assert_array_equal(x, [5.0, 1.0, 1.0])
    np.testing.assert_array_equal(z, np.ones(3))
    assert w.dtype == np.float32


# -- named NumPy functions and data-dependent shapes -------------------------------------------
# Graph ops of their own (or NumPy's own compositions of ops), checked against eager NumPy on
# every executor path: value, dtype, shape, the container NumPy returns (tuple, SVDResult, ...)
# and the static type; none of them may leave a numpy_call in the graph.

PATHS = {
    "numpy": {"backend": "numpy"},
    "auto": {},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}
C128 = (F64 + 1j * F64[::-1]).astype(np.complex128)
NC = rng.standard_normal((3, 8))[:, ::2]  # non-contiguous (3, 4)
EMPTY = np.zeros((0, 4))
I64 = rng.integers(0, 6, 15)

NAMED_CASES = {
    "pad_modes": (
        lambda x: (
            np.pad(x, 1),
            np.pad(x, ((0, 0), (2, 1)), mode="edge"),
            np.pad(x, 2, mode="reflect"),
            np.pad(x, (1, 2), mode="symmetric"),
            np.pad(x, 1, mode="wrap"),
            np.pad(x, 1, constant_values=7),
            np.pad(x, ((1, 0), (0, 2)), mode="linear_ramp", end_values=-1),
            np.pad(x, 1, mode="mean"),
        ),
        NC,
    ),
    "pad_ints_and_empty": (
        lambda x, e: (
            np.pad(x, [(0, 1), (3, 0)]),
            np.pad(x, 1, "maximum"),
            np.pad(e, 1),
            np.pad(x[0, 0], 2),
        ),
        I32,
        EMPTY,
    ),
    "pad_reflect_odd": (lambda x: np.pad(x, 2, mode="reflect", reflect_type="odd"), F32),
    "einsum": (
        lambda x, y: (
            np.einsum("ij,kj->ik", x, y),
            np.einsum("ii", x[:, :3]),
            np.einsum("ij->ji", x),
            np.einsum("ij,j", x, y[0], optimize=True),
            np.einsum("...j,j->...", x, y[1]),
            np.einsum("ij->", x),
            np.einsum("i,j", x[0], y[0]),
            np.einsum("bA", x),
        ),
        NC,
        F64,
    ),
    "einsum_ints_dtype": (
        lambda x: (np.einsum("ij,ij->i", x, x), np.einsum("ij->j", x, dtype=np.float64)),
        I32,
    ),
    "einsum_complex": (lambda z: np.einsum("ij,ij->j", z, z.conj()), C128),
    "diff": (
        lambda x: (
            np.diff(x),
            np.diff(x, n=2, axis=0),
            np.diff(x, prepend=0),
            np.diff(x, append=x[:, :1]),
            np.diff(x, n=0),
        ),
        NC,
    ),
    "diff_bool_uint8": (
        lambda b, u: (np.diff(b), np.diff(u, axis=0), np.diff(u, prepend=250)),
        B,
        U8,
    ),
    "histogram": (
        lambda x: (
            np.histogram(x, bins=5, range=(-2, 2)),
            np.histogram(x),
            np.histogram(x, bins=np.array([-1.0, 0.0, 1.0, 3.0])),
            np.histogram(x, bins=4, density=True),
            np.histogram(x, bins=3, weights=np.abs(x)),
        ),
        NC,
    ),
    "histogram_ints": (lambda x: np.histogram(x, bins=4, range=(0, 8)), I32),
    "triu_tril": (
        lambda x: (
            np.triu(x),
            np.tril(x, -1),
            np.triu(x, 2),
            np.tril(x[0]),
            np.triu(np.stack([x, x])),
            np.tril(x > 0),
        ),
        NC,
    ),
    "triu_ints": (lambda x: (np.triu(x, 1), np.tril(x, k=-2)), I32),
    "insert": (
        lambda x: (
            np.insert(x, 1, 5.0),
            np.insert(x, [0, 2], 9.0, axis=1),
            np.insert(x, 2, x[0], axis=0),
            np.insert(x, [1], x[:, :1], axis=1),
            np.insert(x, slice(0, 2), 0.0, axis=1),
            np.insert(x, -1, 3, axis=1),
            np.insert(x, [], 1.0),
        ),
        NC,
    ),
    "insert_int_casts": (lambda x: np.insert(x, 0, 2.7, axis=0), I32),
    "argpartition": (
        lambda x: (
            np.argpartition(x, 2),
            np.argpartition(x, (1, 2), axis=0),
            np.argpartition(x, 3, axis=None),
            x.argpartition(-1),
        ),
        NC,
    ),
    "correlate_convolve": (
        lambda x, y: (
            np.correlate(x, y),
            np.correlate(x, y, "full"),
            np.correlate(y, x, "same"),
            np.convolve(x, y),
            np.convolve(x, y, mode="valid"),
        ),
        V4,
        F64[0, :3],
    ),
    "correlate_complex_ints": (
        lambda z, i: (np.correlate(z, z[:2], "full"), np.convolve(i, i, "same")),
        C128[0],
        I32[1],
    ),
    "vdot": (lambda x, z: (np.vdot(x, x), np.vdot(z, z), np.vdot(x, z)), NC, C128),
    "interp": (
        lambda x: (
            np.interp(x, [-1.0, 0.0, 1.0], [0.0, 5.0, 2.0]),
            np.interp(x, [-1.0, 0.0, 1.0], [0.0, 5.0, 2.0], left=-9, right=9),
            np.interp(x, [0.0, 1.0], [1j, 2.0]),
            np.interp(x[0, 0], [-1.0, 1.0], [0.0, 1.0]),
            np.interp(x, [0.0, 1.0, 2.0], [1.0, 0.0, 3.0], period=2.0),
        ),
        F32,
    ),
    "interp_traced_table": (lambda x, xp: np.interp(x, np.sort(xp), xp * 2), V4, F64[0]),
    "diagflat": (lambda x: (np.diagflat(x[0]), np.diagflat(x[:2], k=-1), np.diagflat(x, 2)), I32),
    "svd": (
        lambda a: (
            np.linalg.svd(a),
            np.linalg.svd(a[:, :2], full_matrices=False),
            np.linalg.svd(a, compute_uv=False),
            np.linalg.svd(a @ a.T, hermitian=True),
            np.linalg.svd(np.stack([a, a.T])),
        ),
        SQ,
    ),
    "svd_float32_complex": (lambda a, z: (np.linalg.svd(a), np.linalg.svd(z[:, :3])), F32, C128),
    "slogdet": (
        lambda a: (
            np.linalg.slogdet(a),
            np.linalg.slogdet(np.stack([a, -a])),
            np.linalg.slogdet(a.astype(np.float32)),
        ),
        SQ,
    ),
}

DATA_DEPENDENT = {
    "nonzero": (
        lambda x: (
            np.nonzero(x > 0.5),
            x.nonzero(),
            (x > 0.5).nonzero()[0] * 2 + 1,
            np.nonzero(x[0] > 0.2),
        )
    ),
    "where_one_arg": (lambda x: np.where(x > 0.7)),
    "argwhere": (lambda x: (np.argwhere(x > 0.5), np.argwhere(x[0] > 0.5))),
    "flatnonzero": (lambda x: np.flatnonzero(x > 0.5) * 2),
    "unique": (
        lambda x: (
            np.unique(np.round(x * 4)),
            np.unique(x > 0.5),
            np.unique(np.round(x * 3), return_index=True, return_inverse=True, return_counts=True),
            np.unique(np.floor(x * 3).astype(np.int32), return_counts=True),
        )
    ),
    "bincount": (
        lambda x: (
            np.bincount((x.ravel() * 5).astype(np.int64)),
            np.bincount((x[0] * 4).astype(np.intp), weights=x[1]),
            np.bincount((x[0] * 4).astype(np.uint8), minlength=3),
        )
    ),
    "compress": (
        lambda x: (
            np.compress(x[0] > 0.5, x, axis=1),
            np.compress(x.ravel() > 0.2, x),
            x.compress(x[:, 0] > 0.3, axis=0),
        )
    ),
    "extract": (lambda x: np.extract(x > 0.5, x)),
    "trim_zeros": (
        lambda x: (
            np.trim_zeros(np.where(x[0] > 0.5, x[0], 0.0)),
            np.trim_zeros(np.where(x[1] > 0.5, x[1], 0.0), "b"),
            np.trim_zeros(np.where(x > 0.5, x, 0.0)),
        )
    ),
    "histogram_string_bins": (lambda x: np.histogram(x, bins="auto", range=(0.0, 2.0))),
}


def _leaves(value):
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _assert_same(got, expected, specs=None):
    assert type(got) is type(expected)
    if isinstance(expected, tuple):
        assert len(got) == len(expected)
    got, expected = _leaves(got), _leaves(expected)
    specs = _leaves(specs) if specs is not None else [None] * len(got)
    for i, (g, e, spec) in enumerate(zip(got, expected, specs)):
        # a 0-d result is a NumPy scalar or a 0-d array exactly as eager NumPy returns it
        assert isinstance(g, np.ndarray) == isinstance(e, np.ndarray), f"output {i}: type"
        e = np.asarray(e)
        assert np.asarray(g).dtype == e.dtype, f"output {i}: dtype"
        assert np.shape(g) == e.shape, f"output {i}: shape"
        np.testing.assert_array_equal(g, e, err_msg=f"output {i}")
        assert isinstance(g, np.generic) if not isinstance(g, np.ndarray) else True
        if spec is not None:
            assert spec.dtype == e.dtype and len(spec.shape) == e.ndim, f"output {i}: type"
            assert all(s is None or s == d for s, d in zip(spec.shape, e.shape)), f"output {i}"


def _graph_ops(cf):
    return {n.op for n in cf.graph.get_operations()}


@pytest.mark.parametrize("path", cheap_paths(PATHS))
@pytest.mark.parametrize("name", sorted(NAMED_CASES))
def test_named_numpy_function_is_a_graph_op_matching_eager_numpy(name, path):
    fn, *args = NAMED_CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # jit: "runs as fused segments"
        expected = fn(*args)
        f = kx.function(fn, **PATHS[path])
        got = f(*args)
        cf = f.get_concrete_function(*args)
    _assert_same(got, expected, cf.structured_outputs)
    # every shape here is static: known when tracing, exactly NumPy's
    for spec, e in zip(_leaves(cf.structured_outputs), _leaves(expected)):
        assert spec.shape == np.shape(e)
    assert kx.ir.OpKind.NUMPY_CALL not in _graph_ops(cf)


@pytest.mark.parametrize("path", cheap_paths(PATHS))
@pytest.mark.parametrize("name", sorted(DATA_DEPENDENT))
def test_data_dependent_length_is_sized_at_run_time_without_retracing(name, path):
    fn = DATA_DEPENDENT[name]
    data = np.random.default_rng(7)
    f = kx.function(fn, **PATHS[path])
    sizes = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for scale in (0.3, 1.0, 2.0, 0.6):  # more or fewer elements pass each threshold
            x = data.random((4, 6)) * scale
            got, expected = f(x), fn(x)
            _assert_same(got, expected, f.get_concrete_function(x).structured_outputs)
            sizes.add(tuple(np.shape(leaf) for leaf in _leaves(expected)))
    assert len(sizes) > 1, "the data should give outputs of several sizes"
    assert f.experimental_get_tracing_count() == 1
    assert kx.ir.OpKind.NUMPY_CALL not in _graph_ops(f.get_concrete_function(x))


def test_data_dependent_dims_are_none_in_the_static_type():
    f = kx.function(
        lambda x: (
            np.nonzero(x),
            np.argwhere(x),
            np.unique(x, return_inverse=True),
            np.bincount(x.ravel(), minlength=4),
            np.compress(x[0] > 1, x, axis=1),
        )
    )
    x = np.array([[0, 3, 1], [2, 0, 0]])
    (r, c), aw, (u, inv), bc, cp = f.get_concrete_function(x).structured_outputs
    assert r.shape == c.shape == (None,) and aw.shape == (None, 2)
    assert u.shape == (None,) and inv.shape == (2, 3) and bc.shape == (None,)
    assert cp.shape == (2, None)


def test_unknown_input_sizes_flow_through_named_ops():
    spec = kx.TensorSpec([None, None], np.float64)
    f = kx.function(
        lambda x: (
            np.triu(x, 1),
            np.pad(x, 1),
            np.einsum("ij->j", x),
            np.nonzero(x > 0.5)[1],
            np.diff(x, axis=0),
        ),
        input_signature=[spec],
    )
    for shape in ((3, 4), (5, 2), (1, 6)):
        x = np.random.default_rng(sum(shape)).random(shape)
        _assert_same(
            f(x),
            (
                np.triu(x, 1),
                np.pad(x, 1),
                np.einsum("ij->j", x),
                np.nonzero(x > 0.5)[1],
                np.diff(x, axis=0),
            ),
        )
    assert f.experimental_get_tracing_count() == 1


def test_multi_result_ops_are_one_node_read_through_get_output():
    f = kx.function(lambda a: np.linalg.svd(a))
    graph = f.get_concrete_function(SQ).graph
    (svd,) = [n for n in graph.get_operations() if n.op is kx.ir.OpKind.SVD]
    assert isinstance(svd.aval, tuple) and len(svd.aval) == 3
    reads = [n for n in graph.get_operations() if n.op is kx.ir.OpKind.GET_OUTPUT]
    assert sorted(n.params["index"] for n in reads) == [0, 1, 2]
    assert type(f(SQ)).__name__ == "SVDResult"


def test_einsum_relabelling_hands_out_a_copy_not_a_view_of_the_input():
    # np.einsum('ij->ji') returns a view of its operand; the graph's result must not be one
    f = kx.function(lambda x: np.einsum("ij->ji", x), backend="numpy")
    x = F64.copy()
    out = f(x)
    np.testing.assert_array_equal(out, x.T)
    assert not np.shares_memory(out, x)


def test_static_arguments_that_are_traced_fall_back_to_numpy_calls():
    f = kx.function(lambda x, k: (np.pad(x, k), np.argpartition(x, k)))
    got = f(V4, np.int64(1))
    _assert_same(got, (np.pad(V4, 1), np.argpartition(V4, 1)))
    ops = _graph_ops(f.get_concrete_function(V4, np.int64(1)))
    assert kx.ir.OpKind.NUMPY_CALL in ops


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda x: np.nonzero(x.sum()), ValueError),  # 0-d
        (lambda x: np.bincount(x[0]), TypeError),  # float input
        (lambda x: np.pad(x, 1, mode="edge", constant_values=0), ValueError),
        (lambda x: np.pad(x, -1), ValueError),
        (lambda x: np.einsum("ij,jk->ik", x, x), ValueError),
        (lambda x: np.correlate(x, x), ValueError),  # 2-D
        (lambda x: np.linalg.slogdet(x), np.linalg.LinAlgError),  # not square
        (lambda x: np.argpartition(x, 9), ValueError),
        (lambda x: np.triu(x.sum()), TypeError),
    ],
)
def test_named_ops_raise_numpys_errors_when_tracing(call, error):
    with pytest.raises(error):
        call(F64)
    with pytest.raises(error):
        kx.function(call)(F64)


def test_traced_index_array_into_an_empty_axis_is_empty_like_numpy():
    # no stand-in index fits a size-0 axis; NumPy takes the (empty) run-time index
    f = kx.function(lambda x: (np.extract(x > 0, x), x[np.nonzero(x)[1]][:, 1:]))
    x = np.zeros((0, 3))
    got = f(x)
    _assert_same(
        got,
        (np.extract(x > 0, x), x[np.nonzero(x)[1]][:, 1:]),
        f.get_concrete_function(x).structured_outputs,
    )


# -- linalg, fft and array helpers -------------------------------------------------------------
# Compositions (NumPy's own Python source, on traced values) and one-op-each functions, against
# eager NumPy on every path: value, dtype, shape, container and static type, no numpy_call.

F32NC = rng.standard_normal((4, 10)).astype(np.float32)[:, ::2]  # non-contiguous (4, 5)
SPD = SQ @ SQ.T
C3 = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
Z0 = np.float64(1.5)  # 0-d
U8B = rng.integers(0, 256, (3, 4)).astype(np.uint8)
X6 = rng.standard_normal(6)
X234 = rng.standard_normal((2, 3, 4))

COVER_CASES = {
    "split_family": (
        lambda x, y: (
            np.split(x, 2, axis=1),
            np.split(x, [1, 3], axis=1),
            np.array_split(x, 3, axis=1),
            np.array_split(x[0], 3),
            np.hsplit(x, 2),
            np.vsplit(x, [1]),
            np.dsplit(y, 2),
            np.array_split(x, [5, 1], axis=1),
            np.unstack(x),
        ),
        NC,
        X234,
    ),
    "split_empty": (lambda e: (np.split(e, 2, axis=1), np.array_split(e, 3)), EMPTY),
    "tile_repeat": (
        lambda x, z: (
            np.tile(x, 2),
            np.tile(x, (2, 1, 3)),
            np.tile(x[0], (2, 2)),
            np.tile(z, 3),
            np.tile(x, (1, 1)),
            np.repeat(x, 2),
            np.repeat(x, 3, axis=1),
            np.repeat(x, [1, 0, 2], axis=0),
            np.repeat(z, 2),
            x.repeat(2, axis=0),
        ),
        NC,
        Z0,
    ),
    "tile_repeat_ints_empty": (
        lambda i, e: (
            np.tile(i, (0, 2)),
            np.repeat(i, 0, axis=1),
            np.tile(e, 2),
            np.repeat(e, 2, axis=0),
        ),
        I32,
        EMPTY,
    ),
    "roll_rot90_flips": (
        lambda x, y: (
            np.roll(x, 1),
            np.roll(x, -2, axis=1),
            np.roll(x, (1, 2), axis=(0, 1)),
            np.roll(x, 7, axis=0),
            np.roll(y, 2, axis=(0, 0)),
            np.rot90(x),
            np.rot90(x, 2),
            np.rot90(x, -1),
            np.rot90(y, 1, axes=(1, 2)),
            np.rot90(x, 4),
            np.fliplr(x),
            np.flipud(x),
        ),
        NC,
        X234,
    ),
    "diag_diagonal_trace": (
        lambda x, y, i: (
            np.diag(x),
            np.diag(x, 1),
            np.diag(x, -2),
            np.diag(x[0]),
            np.diag(x[0], -1),
            np.diagonal(x),
            np.diagonal(y, 1, 2, 0),
            x.diagonal(-1),
            np.trace(x),
            np.trace(y, axis1=1, axis2=2),
            np.trace(i, dtype=np.float32),
            i.trace(2),
            np.diagonal(x, 9),
        ),
        NC,
        X234,
        I32,
    ),
    "kron_cross_inner_tensordot": (
        lambda x, y, v: (
            np.kron(x, y[0]),
            np.kron(v, x),
            np.kron(x[0, 0], v),
            np.cross(y, y[::-1]),
            np.cross(v[:3], y),
            np.cross(y, y[0], axisc=0),
            np.inner(x, x),
            np.inner(v, v),
            np.inner(x[0, 0], v),
            np.tensordot(x, x, axes=([1], [1])),
            np.tensordot(x, x, axes=2),
            np.tensordot(v, v, 0),
        ),
        NC,
        SQ,
        V4,
    ),
    "cross_ints_complex": (
        lambda i, c: (np.cross(i[:, :3], i[:, 1:]), np.cross(c, c[::-1])),
        I32,
        C3,
    ),
    "stacking": (
        lambda x, v, z: (
            np.atleast_3d(x),
            np.atleast_3d(v),
            np.atleast_3d(z),
            np.atleast_3d(x, v),
            np.column_stack([v, v]),
            np.column_stack([x.T, v]),
            np.dstack([x, x]),
            np.dstack([v, v]),
            np.block([[x, x], [x, x]]),
            np.block([v, v]),
            np.block([[x], [x[:1]]]),
            np.block(x),
        ),
        NC,
        V4,
        Z0,
    ),
    "broadcast_meshgrid_ix": (
        lambda x, v: (
            np.broadcast_arrays(x, v[:4]),
            np.broadcast_arrays(x, x),
            np.meshgrid(v, x[0]),
            np.meshgrid(v, x[0], indexing="ij"),
            np.meshgrid(v, v[:2], sparse=True),
            np.meshgrid(v),
            np.ix_(v, x[0]),
            np.ix_(np.array([0, 2]), v),
        ),
        NC,
        V4,
    ),
    "append_delete_resize": (
        lambda x: (
            np.append(x, x[0]),
            np.append(x, x[:1], axis=0),
            np.append(x, 2.5),
            np.delete(x, 1),
            np.delete(x, [0, 2], axis=1),
            np.delete(x, slice(0, 2), axis=0),
            np.delete(x, np.array([True, False, False]), axis=0),
            np.resize(x, (2, 7)),
            np.resize(x, 3),
            np.resize(x, (0,)),
        ),
        NC,
    ),
    "indices_from": (
        lambda s: (np.diag_indices_from(s), np.tril_indices_from(s), np.triu_indices_from(s, 1)),
        SQ,
    ),
    "along_axis": (
        lambda x, i: (
            np.take_along_axis(x, np.argsort(x, axis=0), axis=0),
            np.take_along_axis(x, np.argsort(x, axis=1)[:, :2], axis=1),
            np.take_along_axis(x.ravel(), np.array([3, 0]), axis=None),
            np.take_along_axis(x, np.abs(i[:, :1]) % 5, axis=1),
        ),
        NC,
        I32,
    ),
    "matrix_transpose": (
        lambda y: (np.matrix_transpose(y), np.linalg.matrix_transpose(y[0])),
        X234,
    ),
    "ptp_average_cov": (
        lambda x, w: (
            np.ptp(x),
            np.ptp(x, axis=0),
            np.ptp(x, 1, keepdims=True),
            np.average(x),
            np.average(x, axis=1),
            np.average(x, axis=0, weights=w[0]),
            np.average(x, weights=np.abs(x), returned=True),
            np.average(x, axis=1, returned=True),
            np.cov(x),
            np.cov(x, rowvar=False),
            np.cov(x[0], x[1]),
            np.cov(x, bias=True),
            np.cov(x, ddof=2),
            np.corrcoef(x),
            np.corrcoef(x[0], x[1]),
            np.corrcoef(x[0]),
        ),
        F32NC,
        F64,
    ),
    "average_cov_ints": (
        lambda i: (
            np.average(i),
            np.average(i, axis=0, weights=[1, 2, 3]),
            np.cov(i),
            np.ptp(i, axis=1),
        ),
        I32,
    ),
    "comparisons": (
        lambda x, y: (
            np.allclose(x, y),
            np.allclose(x, x + 1e-9),
            np.array_equal(x, x),
            np.array_equal(x, y),
            np.array_equal(x, x[:1]),
            np.array_equal(x, x, equal_nan=True),
            np.array_equiv(x, x[:1]),
            np.array_equiv(x, x[:2]),
        ),
        NC,
        F64,
    ),
    "select_piecewise": (
        lambda x, i: (
            np.select([x > 0.5, x < -0.5], [x, -x]),
            np.select([x > 0], [i], default=7),
            np.select([x > 0, x > 1], [1, 2], 0.5),
            np.piecewise(x, [x < 0, x >= 0], [-1.0, 1.0]),
            np.piecewise(x, [x < 0], [3.0, 9.0]),
            np.piecewise(i, [i > 0], [2]),
        ),
        NC,
        I32[:, :4],
    ),
    "sort_complex_lexsort_partition": (
        lambda x, i, c: (
            np.sort_complex(x),
            np.sort_complex(i),
            np.sort_complex(c),
            np.lexsort(x),
            np.lexsort((x[0], x[1])),
            np.lexsort((i[0], x[0]), axis=0),
            np.partition(x, 2),
            np.partition(x, (0, 2), axis=0),
            np.partition(x, 3, axis=None),
        ),
        F64,
        I8,
        C3,
    ),
    "search_digitize_isin": (
        lambda x, v, i: (
            np.searchsorted(np.sort(v), x),
            np.searchsorted(np.sort(v), x, side="right"),
            np.searchsorted(v, 0.5, sorter=np.argsort(v)),
            np.digitize(x, np.sort(v)),
            np.digitize(x, np.sort(v)[::-1], right=True),
            np.isin(i, [1, 2, -3]),
            np.isin(i, i[0], invert=True),
            np.isin(x, v),
        ),
        NC,
        V4,
        I32,
    ),
    "cumulative_gradient_trapezoid": (
        lambda x, i: (
            np.cumulative_sum(x, axis=0),
            np.cumulative_prod(x[0]),
            np.cumulative_sum(i, axis=1, dtype=np.int8),
            np.cumulative_sum(x[0], include_initial=True),
            np.gradient(x),
            np.gradient(x, 0.5, axis=1),
            np.gradient(x, 2.0, 3.0, edge_order=2),
            np.gradient(i[0]),
            np.trapezoid(x),
            np.trapezoid(x, dx=0.1, axis=0),
            np.trapezoid(x, x=np.arange(4.0) ** 2),
            np.trapezoid(i),
        ),
        NC,
        I32,
    ),
    "elementwise_helpers": (
        lambda x, c, i: (
            np.real(c),
            np.imag(c),
            c.real,
            c.imag,
            np.real(x),
            np.imag(x),
            np.iscomplex(c),
            np.isreal(c),
            np.iscomplexobj(c),
            np.isrealobj(x),
            np.iscomplex(x),
            np.angle(c),
            np.angle(c, deg=True),
            np.angle(x),
            np.angle(i),
            np.sinc(x),
            np.sinc(i),
            np.isneginf(x / 0),
            np.isposinf(x / 0),
            np.fix(x),
            np.nan_to_num(x / 0),
            np.nan_to_num(x / 0, nan=-1, posinf=9.0),
            np.nan_to_num(i),
            np.ediff1d(x),
            np.ediff1d(x, to_begin=[0.5], to_end=9),
            np.unwrap(x * 4),
            np.unwrap(x * 4, axis=0),
            np.unwrap(i * 3, period=7),
        ),
        F32NC,
        C3,
        I32,
    ),
    "polynomials": (
        lambda p, x, i: (
            np.polyval(p, x),
            np.polyval(i[0], i),
            np.polyder(p),
            np.polyder(p, 2),
            np.polyder(i[0]),
            np.polyint(p),
            np.polyint(p, 2, k=[1.0, 2.0]),
            np.polyadd(p, p[:2]),
            np.polysub(p[:2], p),
            np.vander(p),
            np.vander(p, 2),
            np.vander(i[0], increasing=True),
            np.vander(p, 0),
            np.polyfit(X6, X6**2 + p[0], 2),
        ),
        V4,
        F64,
        I32,
    ),
    "histogram_bin_edges": (
        lambda x: (np.histogram_bin_edges(x, 4), np.histogram_bin_edges(x, 3, range=(0, 1))),
        NC,
    ),
    "apply_over_along_axis": (
        lambda x: (
            np.apply_over_axes(np.sum, x, [0, 1]),
            np.apply_along_axis(np.sort, 1, x),
            np.apply_along_axis(lambda r: r[0] * 2, 0, x),
            np.apply_along_axis(np.outer, 1, x[:, :2], [1, 2]),
        ),
        NC,
    ),
    "ravel_unravel_bits": (
        lambda i, u, b: (
            np.ravel_multi_index((np.abs(i[0]) % 3, np.abs(i[1]) % 4), (3, 4)),
            np.ravel_multi_index((i[0], 2), (3, 4), mode="wrap"),
            np.unravel_index(np.abs(i) % 12, (3, 4)),
            np.unravel_index(np.abs(i) % 12, (4, 3), order="F"),
            np.packbits(b),
            np.packbits(b, axis=1),
            np.packbits(i % 2, bitorder="little"),
            np.unpackbits(u),
            np.unpackbits(u, axis=0),
            np.unpackbits(u, axis=1, count=-3),
        ),
        I32,
        U8B,
        B,
    ),
    "choose_place_put": (
        lambda x, i: (
            np.choose(np.abs(i) % 3, [x, -x, 2 * x], mode="wrap"),
            np.choose(i, [x, x + 1], mode="clip"),
            _place_put(x),
        ),
        F64,
        I32,
    ),
    "linalg_products": (
        lambda a, b, v: (
            np.linalg.matmul(a, b),
            np.linalg.outer(v, v[:3]),
            np.linalg.tensordot(a, b, axes=1),
            np.linalg.trace(np.stack([a, b])),
            np.linalg.trace(a, offset=1),
            np.linalg.diagonal(a, offset=-1),
            np.linalg.cross(a, b),
            np.linalg.vecdot(a, b),
            np.vecdot(a, b),
            np.vecdot(a, v[:3]),
            np.matvec(a, v[:3]),
            np.vecmat(v[:3], a),
            np.linalg.multi_dot([a, b, a]),
            np.linalg.multi_dot([v[:3], a, b, a, v[:3]]),
            np.linalg.multi_dot([a, v[:3]]),
            np.linalg.matrix_power(a, 0),
            np.linalg.matrix_power(a, 1),
            np.linalg.matrix_power(a, 5),
            np.linalg.matrix_power(a, -2),
        ),
        SQ,
        SPD,
        V4,
    ),
    "linalg_factorizations": (
        lambda a, s, x: (
            np.linalg.cholesky(s),
            np.linalg.cholesky(s, upper=True),
            np.linalg.qr(x),
            np.linalg.qr(x, mode="complete"),
            np.linalg.qr(x, mode="r"),
            np.linalg.qr(x.T),
            np.linalg.eigh(s),
            np.linalg.eigh(s, UPLO="U"),
            np.linalg.eigvalsh(s),
            np.linalg.pinv(x),
            np.linalg.pinv(s, hermitian=True),
            np.linalg.lstsq(x.T, a[0, :1].repeat(4)),
            np.linalg.lstsq(x, x[:, :2]),
            np.linalg.svdvals(x),
            np.linalg.matrix_rank(x),
            np.linalg.matrix_rank(s, hermitian=True),
            np.linalg.matrix_rank(np.stack([s, s]), tol=0.5),
            np.linalg.cond(a),
            np.linalg.cond(a, "fro"),
            np.linalg.cond(a, 1),
            np.linalg.cond(a, -2),
            np.linalg.tensorinv(a, 1),
            np.linalg.tensorsolve(a, a[0]),
        ),
        SQ,
        SPD,
        NC,
    ),
    "linalg_float32_complex": (
        lambda a, c: (
            np.linalg.cholesky(a @ a.T + 4 * np.eye(4)),
            np.linalg.qr(c),
            np.linalg.eigh(c.T @ c.conj()),
            np.linalg.pinv(c),
            np.linalg.cond(a[:, :4], 1),
            np.linalg.matrix_rank(c),
        ),
        F32NC[:, :4],
        C3,
    ),
    "norms": (
        lambda x, v, c: (
            np.linalg.norm(x),
            np.linalg.norm(x, "fro"),
            np.linalg.norm(x, axis=1),
            np.linalg.norm(x, 1),
            np.linalg.norm(x, np.inf),
            np.linalg.norm(x, -np.inf),
            np.linalg.norm(x, -1),
            np.linalg.norm(x, 2),
            np.linalg.norm(x, -2),
            np.linalg.norm(x, "nuc"),
            np.linalg.norm(v, np.inf),
            np.linalg.norm(v, 0),
            np.linalg.norm(v, 3),
            np.linalg.norm(v, -np.inf),
            np.linalg.norm(x, 1, axis=0, keepdims=True),
            np.linalg.norm(x, axis=(1, 0)),
            np.linalg.norm(c),
            np.linalg.norm(c, axis=0),
            np.linalg.norm(c, 2),
            np.linalg.norm(x, keepdims=True),
            np.linalg.vector_norm(x),
            np.linalg.vector_norm(x, axis=0, ord=1),
            np.linalg.vector_norm(x, axis=(0, 1), keepdims=True),
            np.linalg.matrix_norm(x),
            np.linalg.matrix_norm(x, ord=np.inf),
        ),
        NC,
        V4,
        C3,
    ),
    "norms_ints_float32": (
        lambda i, f: (
            np.linalg.norm(i),
            np.linalg.norm(i, 1, axis=0),
            np.linalg.norm(f, 3, axis=1),
            np.linalg.norm(f, "nuc"),
        ),
        I32,
        F32NC,
    ),
    "fft": (
        lambda x, c: (
            np.fft.fft(x),
            np.fft.fft(x, 8),
            np.fft.fft(x, 3, axis=0),
            np.fft.ifft(c),
            np.fft.rfft(x),
            np.fft.rfft(x, 7, norm="ortho"),
            np.fft.irfft(c),
            np.fft.irfft(c, 5, axis=0),
            np.fft.hfft(c),
            np.fft.ihfft(x),
            np.fft.fft2(x),
            np.fft.ifft2(c, s=(3, 4)),
            np.fft.fftn(x),
            np.fft.ifftn(c, axes=(0,)),
            np.fft.rfftn(x),
            np.fft.rfftn(x, s=(2, 6)),
            np.fft.irfftn(c),
            np.fft.rfft2(x),
            np.fft.irfft2(c, s=(4, 4)),
            np.fft.fftshift(x),
            np.fft.ifftshift(x, axes=1),
            np.fft.fftshift(x, axes=0),
        ),
        NC,
        C3,
    ),
    "fft_float32": (lambda x: (np.fft.fft(x), np.fft.rfft(x), np.fft.irfft(np.fft.rfft(x))), F32NC),
}


def _place_put(x):
    y = x.copy()
    np.place(y, y > 0, [10.0, 20.0])
    np.put(y, [0, 5], [-1.0, -2.0])
    np.put(y, [100], 7.0, mode="clip")
    np.put_along_axis(y, np.array([[0], [1], [2]]), 3.0, axis=1)
    return y


COVER_DATA_DEPENDENT = {
    "sets": (
        lambda x: (
            np.union1d(np.round(x[0] * 3), np.round(x[1] * 3)),
            np.intersect1d(np.round(x[0] * 3), np.round(x[1] * 3)),
            np.setdiff1d(np.round(x[0] * 3), np.round(x[1] * 3)),
            np.setxor1d(np.round(x[0] * 3), np.round(x[1] * 3)),
            np.unique_values(np.round(x * 2)),
            np.unique_counts(np.round(x * 2)),
            np.unique_inverse(np.round(x * 2)),
            np.unique_all(np.round(x * 2)),
        )
    ),
    "ix_of_a_mask": (lambda x: np.ix_(x[0] > 0.5, x[:, 0] > 0.3)),
}


@pytest.mark.parametrize("path", cheap_paths(PATHS))
@pytest.mark.parametrize("name", sorted(COVER_CASES))
def test_covered_numpy_function_traces_natively_and_matches_eager(name, path):
    fn, *args = COVER_CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", DeprecationWarning)  # np.cross of 2-vectors
        expected = fn(*args)
        f = kx.function(fn, **PATHS[path])
        got = f(*args)
        cf = f.get_concrete_function(*args)
    # the Numba paths fuse float sums, which add in another order (docs/backends.md)
    _assert_same_loose(got, expected, cf.structured_outputs, exact=path in ("numpy", "auto"))
    assert kx.ir.OpKind.NUMPY_CALL not in _graph_ops(cf)


def _assert_same_loose(got, expected, specs, exact=True):
    """``_assert_same``, with lists and NumPy's namedtuples as tuples and a Python bool or int
    result (``allclose``, ``array_equal``) as the NumPy scalar the graph returns; not
    ``exact``: floats within a few ulp."""

    def norm(v):
        if isinstance(v, (list, tuple)):
            return tuple(norm(x) for x in v)
        return np.bool_(v) if isinstance(v, bool) else v

    got, expected = norm(got), norm(expected)
    if exact:
        _assert_same(got, expected, norm(specs))
        return
    for i, (g, e) in enumerate(zip(_leaves(got), _leaves(expected))):
        e = np.asarray(e)
        assert np.asarray(g).dtype == e.dtype and np.shape(g) == e.shape, f"output {i}"
        if e.dtype.kind in "fc":
            eps = np.finfo(e.dtype).eps
            np.testing.assert_allclose(g, e, rtol=64 * eps, atol=64 * eps, err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(g, e, err_msg=f"output {i}")


@pytest.mark.parametrize("path", cheap_paths(PATHS))
@pytest.mark.parametrize("name", sorted(COVER_DATA_DEPENDENT))
def test_covered_set_functions_size_their_results_at_run_time(name, path):
    fn = COVER_DATA_DEPENDENT[name]
    data = np.random.default_rng(3)
    f = kx.function(fn, **PATHS[path])
    for scale in (0.3, 1.0, 2.0):
        x = data.random((4, 6)) * scale
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # jit: "runs as fused segments"
            _assert_same_loose(f(x), fn(x), f.get_concrete_function(x).structured_outputs)
    assert f.experimental_get_tracing_count() == 1
    assert kx.ir.OpKind.NUMPY_CALL not in _graph_ops(f.get_concrete_function(x))


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda x: np.split(x, 3, axis=1), ValueError),  # unequal division
        (lambda x: np.array_split(x, 0), ValueError),
        (lambda x: np.vsplit(x[0], 2), ValueError),
        (lambda x: np.rot90(x, axes=(0, 0)), ValueError),
        (lambda x: np.diag(x[None]), ValueError),
        (lambda x: np.diagonal(x[0]), ValueError),
        (lambda x: np.cross(x, x), ValueError),  # 4-vectors
        (lambda x: np.tensordot(x, x, axes=([0], [1])), ValueError),
        (lambda x: np.linalg.cholesky(x), np.linalg.LinAlgError),  # not square
        (lambda x: np.linalg.matrix_power(x, 2), np.linalg.LinAlgError),
        (lambda x: np.linalg.norm(x, "bad"), ValueError),
        (lambda x: np.linalg.multi_dot([x]), ValueError),
        (lambda x: np.select([x], [x]), TypeError),  # float condition
        (lambda x: np.fft.fft(x, 0), ValueError),
        (lambda x: np.fft.rfft(x, norm="bad"), ValueError),
        (lambda x: np.packbits(x), TypeError),
        (lambda x: np.unpackbits(x.astype(np.int8)), TypeError),
        (lambda x: np.delete(x, 7, axis=0), IndexError),
    ],
)
def test_covered_functions_raise_numpys_errors_when_tracing(call, error):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(error):
            call(F64)
        with pytest.raises(error):
            kx.function(call)(F64)


def test_compositions_with_unknown_sizes_fall_back_to_numpy_calls():
    spec = kx.TensorSpec([None, 4], np.float64)
    f = kx.function(
        lambda x: (np.tile(x, 2), np.roll(x, 1, axis=0), np.fft.fft(x)), input_signature=[spec]
    )
    for rows in (2, 5):
        x = rng.standard_normal((rows, 4))
        _assert_same(f(x), (np.tile(x, 2), np.roll(x, 1, axis=0), np.fft.fft(x)))
    ops = _graph_ops(f.get_concrete_function())
    assert kx.ir.OpKind.NUMPY_CALL in ops and kx.ir.OpKind.FFT in ops
    assert f.experimental_get_tracing_count() == 1


def test_put_and_place_write_into_an_argument_like_numpy():
    @kx.function
    def f(a, mask):
        np.place(a, mask, [1.0, 2.0])
        np.put(a, [0], -5.0)
        return a.sum()

    a, mask = F64.copy(), F64 > 0
    want = F64.copy()
    np.place(want, mask, [1.0, 2.0])
    np.put(want, [0], -5.0)
    assert f(a, mask) == want.sum()
    np.testing.assert_array_equal(a, want)


def test_einsum_path_is_worked_out_from_the_shapes_when_tracing():
    f = kx.function(lambda x: (x, np.einsum_path("ij,jk,kl->il", x, x.T, x)))
    got = f.get_concrete_function(NC)  # noqa: F841 - traces without a numpy_call
    path, text = np.einsum_path("ij,jk,kl->il", NC, NC.T, NC)
    _, (got_path, got_text) = kx.function(lambda x: (x, np.einsum_path("ij,jk,kl->il", x, x.T, x)))(
        NC
    )
    assert list(got_path) == path and got_text == text


def _stable_sorts(x):
    return (
        np.argsort(x, kind="stable"),
        x.argsort(stable=True),
        np.sort(x, kind="mergesort"),
        np.argsort(x, axis=0, kind="stable"),
    )


@pytest.mark.parametrize("path", cheap_paths(["numpy", "auto", "jit"]))
def test_sort_kind_and_stable_decide_the_order_of_ties_as_in_numpy(path):
    options = {"jit": {"jit_compile": True}}.get(path, PATHS.get(path))
    x = np.random.default_rng(3).integers(0, 3, (40, 3)).astype(np.float64)  # many ties
    f = kx.function(_stable_sorts, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(3):
            got = f(x)
    for g, w in zip(got, _stable_sorts(x)):
        np.testing.assert_array_equal(g, w)
