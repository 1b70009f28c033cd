"""Every traced NumPy operation agrees with eager NumPy: value, dtype and static shape."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

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
    "pow": (lambda x: x ** 2, F64),
    "neg_abs_invert": (lambda x: (-x, abs(x), ~x), I32),
    "comparisons": (lambda x: (x < 0, x >= 0.5, x == 1, x != 1), F32),
    "bitwise": (lambda x: (x & 3, x | 8, x ^ 1, x << 1, x >> 1), U8),
    "mixed_dtypes": (lambda x, y: x * y, F32, I32),
    "broadcast_row": (lambda x, y: x - y, F64, V4),
    "matmul_op": (lambda x, y: x @ y, F64, V4),
    "divmod": (lambda x: divmod(x, 4), I32),
    # ufuncs
    "unary_ufuncs": (lambda x: (np.tanh(x), np.exp(x), np.sin(x), np.sqrt(np.abs(x)),
                                np.log1p(np.abs(x)), np.floor(x), np.sign(x)), F32),
    "int_sqrt_promotes": (lambda x: np.sqrt(x), U8),
    "binary_ufuncs": (lambda x, y: (np.maximum(x, y), np.arctan2(x, y), np.hypot(x, y),
                                    np.fmod(x, 2.0), np.logaddexp(x, y)), F64, F64 + 1),
    "logical": (lambda b, c: (np.logical_and(b, c), np.logical_or(b, c), np.logical_not(b),
                              np.logical_xor(b, c)), B, ~B),
    "predicates": (lambda x: (np.isnan(x), np.isfinite(x / 0.0), np.signbit(x)), F64),
    "ufunc_dtype_kwarg": (lambda x: np.add(x, 1, dtype=np.float64), I32),
    "where": (lambda x: np.where(x > 0, x, 0.0), F32),
    "where_mixed": (lambda x, y: np.where(x > 0, x, y), F32, I32),
    "clip": (lambda x: (np.clip(x, -0.5, 0.5), x.clip(min=0)), F64),
    "astype": (lambda x: (x.astype(np.int16), x.astype(bool)), F32),
    "round": (lambda x: (np.round(x, 2), np.round(x)), F64),
    # reductions
    "sum_all_axis_keepdims": (lambda x: (x.sum(), np.sum(x, axis=0), np.sum(x, axis=-1,
                                                                             keepdims=True)), F32),
    "sum_int_promotes": (lambda x: (np.sum(x), np.prod(x[0]), np.cumsum(x)), I32),
    "mean_std_var": (lambda x: (x.mean(), np.mean(x, axis=1), np.std(x), np.var(x, ddof=1)),
                     F64),
    "max_min_arg": (lambda x: (x.max(), np.min(x, axis=0), np.argmax(x), np.argmin(x, axis=1)),
                    F32),
    "any_all": (lambda b: (b.any(), np.all(b, axis=0), np.count_nonzero(b)), B),
    "ufunc_reduce": (lambda x: (np.add.reduce(x), np.maximum.reduce(x, axis=1)), F64),
    "multi_axis": (lambda x: np.sum(x.reshape(3, 2, 2), axis=(0, 2)), F64),
    "cumprod_axis": (lambda x: np.cumprod(x, axis=1), F64),
    # shapes
    "reshape_transpose": (lambda x: (x.reshape(2, 6), x.reshape(-1), x.T, np.transpose(x),
                                     x.reshape((4, -1))), F32),
    "expand_squeeze": (lambda x: (np.expand_dims(x, 0), np.expand_dims(x, (0, 3)),
                                  np.squeeze(x[:1]), x[None].squeeze(0)), F64),
    "broadcast_to": (lambda v: np.broadcast_to(v, (2, 4)), V4),
    "concat_stack": (lambda x, y: (np.concatenate([x, y]), np.concatenate([x, y], axis=1),
                                   np.stack([x, y], axis=-1), np.vstack([x, y]),
                                   np.hstack([x, y])), F64, F64 * 2),
    "concat_promotes": (lambda x, y: np.concatenate([x, y]), F32, I32),
    "flip_swap_move": (lambda x: (np.flip(x), np.flip(x, 0), np.swapaxes(x, 0, 1),
                                  np.moveaxis(x.reshape(3, 2, 2), 0, -1)), F64),
    "ravel_flatten_copy": (lambda x: (np.ravel(x), x.flatten(), np.copy(x)), I32),
    "likes": (lambda x: (np.zeros_like(x), np.ones_like(x, dtype=np.int8),
                         np.full_like(x, 7.0)), F32),
    "atleast": (lambda v: (np.atleast_2d(v), np.atleast_1d(v.sum())), V4),
    # indexing
    "basic_indexing": (lambda x: (x[0], x[-1, 1:], x[:, None, ::2], x[..., 1], x[1:2, 1:3]),
                       F32),
    "fancy_constant_index": (lambda x: (x[[0, 2]], x[:, [1, 1, 3]], x[x.shape[0] - 1]), F64),
    "boolean_constant_mask": (lambda x: x[np.array([True, False, True])], F64),
    "take": (lambda x: (np.take(x, [0, 5]), np.take(x, [1], axis=1)), F64),
    "setitem": (lambda x: _setitem(x), F64),
    # linear algebra and sorting
    "matmul_dot_outer": (lambda a, v: (np.matmul(a, a), np.dot(a, v[:3]), np.outer(v, v),
                                       a.dot(a)), SQ, V4),
    "linalg": (lambda a: (np.linalg.inv(a), np.linalg.det(a), np.linalg.solve(a, a[0]),
                          np.linalg.norm(a), np.linalg.norm(a, axis=0)), SQ),
    "sort": (lambda x: (np.sort(x), np.sort(x, axis=0), np.argsort(x), np.sort(x, axis=None)),
             F64),
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
    f = kx.function(lambda x, i: x[i:i + 2])
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
    f = kx.function(lambda x: (x + 1, x.sum(axis=1), x.T @ x, x.reshape(-1, 2), x[1:],
                               np.zeros_like(x)), input_signature=[spec])
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
