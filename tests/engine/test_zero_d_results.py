"""0-d results come back in the form eager NumPy gives them: a NumPy scalar or a 0-d array.

NumPy returns a 0-d result two ways that users can tell apart (``isinstance(r, np.ndarray)``;
``r[()] = 5`` works on an array only): ufuncs, reductions, ``dot`` and element reads give a
scalar; constructors, copies, views, reshapes, ``where`` and ``astype`` give a 0-d array (and
the methods of a NumPy scalar give a scalar again). Every executor must agree with eager NumPy
on the type, the dtype and the value, and returning an argument returns the caller's object.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markers import cheap_paths

import kernel_ext as kx

PATHS = {
    "auto": {},
    "numpy": {"backend": "numpy"},
    "numba": {"backend": "numba"},
    "jit": {"jit_compile": True},
}


@pytest.fixture(autouse=True)
def _synchronous_kernels():
    """Kernels compile in the calling thread, so each call runs the executor it asks for."""
    from kernel_ext.backends import fused

    old = fused.set_synchronous(True)
    yield
    fused.set_synchronous(old)


def _assert_same(got, want, where: str = "") -> None:
    """Same container, and each leaf of the same Python type, dtype and value."""
    assert type(got) is type(want), (where, type(got), type(want))
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_same(g, w, f"{where}[{i}]")
        return
    if isinstance(want, dict):
        assert list(got) == list(want), where
        for k in want:
            _assert_same(got[k], want[k], f"{where}[{k!r}]")
        return
    assert np.asarray(got).dtype == np.asarray(want).dtype, (where, got, want)
    assert np.shape(got) == np.shape(want), where
    np.testing.assert_array_equal(got, want, err_msg=where)


def _traced(fn, path: str, *args):
    """``fn`` traced on ``path`` and called twice (the second call runs the compiled code)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (AutoGraph notes about lambdas' source)
        f = kx.function(fn, **PATHS[path])
        f(*args)
        return f(*args)


C, A, B = np.array(True), np.array(1.5), np.array(2.5)

#: constructs whose 0-d result NumPy gives as an array
ARRAY_RESULTS = {
    "where": lambda c, a, b: np.where(c, a, b),
    "copy_method": lambda c, a, b: a.copy(),
    "np_copy": lambda c, a, b: np.copy(a),
    "reshape": lambda c, a, b: a.reshape(()),
    "asarray": lambda c, a, b: np.asarray(a),
    "zeros": lambda c, a, b: np.zeros(()),
    "full_like": lambda c, a, b: np.full_like(a, 3.0),
    "zeros_like_int": lambda c, a, b: np.zeros_like(a, dtype=np.int32),
    "array": lambda c, a, b: np.array(a),
    "transpose": lambda c, a, b: a.T,
    "astype": lambda c, a, b: a.astype(np.float32),
    "ellipsis_view": lambda c, a, b: a[...],
    "squeeze_of_2d": lambda c, a, b: (a * np.ones((1, 1))).squeeze(),
    "reshape_of_1d": lambda c, a, b: np.reshape(np.stack([a]), ()),
    "element_view": lambda c, a, b: np.stack([a, b])[1, ...],
    "broadcast_to": lambda c, a, b: np.broadcast_to(a + b, ()),
    "asarray_of_sum": lambda c, a, b: np.asarray(np.sum(a)),
    "array_of_sum_dtype": lambda c, a, b: np.array(a + b, dtype=np.float32),
    "copy_of_sum": lambda c, a, b: np.copy(np.sum(a)),
    "isin": lambda c, a, b: np.isin(a, np.stack([a, b])),
}

#: constructs whose 0-d result NumPy gives as a NumPy scalar
SCALAR_RESULTS = {
    "add": lambda c, a, b: a + b,
    "maximum": lambda c, a, b: np.maximum(a, b),
    "negative": lambda c, a, b: -a,
    "clip": lambda c, a, b: np.clip(a, 0, 1),
    "sum": lambda c, a, b: np.sum(a),
    "mean": lambda c, a, b: np.mean(np.atleast_1d(a)),
    "dot": lambda c, a, b: np.dot(a, b),
    "element_read": lambda c, a, b: np.stack([a, b])[0],
    "empty_index": lambda c, a, b: a[()],
    "copy_of_scalar": lambda c, a, b: np.sum(a).copy(),
    "astype_of_scalar": lambda c, a, b: (a * b).astype(np.float32),
    "reshape_of_scalar": lambda c, a, b: np.reshape(a + 1, ()),
    "flip": lambda c, a, b: np.flip(a),
    "nan_to_num": lambda c, a, b: np.nan_to_num(a),
    "cond_number": lambda c, a, b: np.linalg.cond(np.eye(2) * a),
    "opaque_i0": lambda c, a, b: np.i0(a),
}


@pytest.mark.parametrize("path", cheap_paths(PATHS))
@pytest.mark.parametrize("name", ARRAY_RESULTS)
def test_array_constructors_return_a_0d_array(name, path):
    fn = ARRAY_RESULTS[name]
    want = fn(C, A, B)
    assert isinstance(want, np.ndarray) and want.ndim == 0  # (the case is what it says)
    _assert_same(_traced(fn, path, C, A, B), want, name)


@pytest.mark.parametrize("path", cheap_paths(PATHS))
@pytest.mark.parametrize("name", SCALAR_RESULTS)
def test_ufuncs_and_reductions_return_a_numpy_scalar(name, path):
    fn = SCALAR_RESULTS[name]
    want = fn(C, A, B)
    if name != "opaque_i0":  # (np.i0 gives an array: the opaque call keeps NumPy's form)
        assert isinstance(want, np.generic)
    _assert_same(_traced(fn, path, C, A, B), want, name)


@pytest.mark.parametrize("path", cheap_paths(PATHS))
def test_returned_argument_is_the_callers_object(path):
    def identity(c, a, b):
        return a, [b], {"c": c}

    a, b, c = np.array(1.5), np.float64(2.5), np.array(True)
    got = _traced(identity, path, c, a, b)
    assert got[0] is a and got[1][0] is b and got[2]["c"] is c


@pytest.mark.parametrize("path", cheap_paths(PATHS))
def test_methods_of_a_numpy_scalar_argument_keep_it_a_scalar(path):
    def methods(a):
        return a.copy(), a.reshape(()), a.T, a.astype(np.float32), np.copy(a), a[...]

    for arg in (np.float64(1.5), np.array(1.5)):
        _assert_same(_traced(methods, path, arg), methods(arg), type(arg).__name__)


@pytest.mark.parametrize("path", cheap_paths(PATHS))
def test_0d_results_inside_containers_follow_numpy(path):
    def nested(c, a, b):
        s = a + b
        return {
            "where": np.where(c, a, b),
            "sum": s,
            "pair": (a.copy(), np.sum(a)),
            "items": [s.astype(np.float32), a[...] * 2],
        }

    _assert_same(_traced(nested, path, C, A, B), nested(C, A, B))


@pytest.mark.parametrize("path", cheap_paths(PATHS))
def test_returned_0d_array_is_the_callers_own(path):
    f = kx.function(lambda c, a, b: np.where(c, a * 2, b), **PATHS[path])
    first = f(C, A, B)
    first[()] = 5.0  # a 0-d array is mutable, as NumPy's is
    second = f(C, A, B)
    third = f(np.array(False), A, B)
    assert first == 5.0 and second == 3.0 and third == 2.5 and second is not first


@pytest.mark.parametrize("path", cheap_paths(PATHS))
def test_branches_returning_arrays_give_a_0d_array(path):
    def pick(c, a, b):
        if np.sum(a) > 0:
            r = a.copy()
        else:
            r = np.zeros(())
        return r

    for a in (np.array(1.5), np.array(-1.5)):
        _assert_same(_traced(pick, path, C, a, B), pick(C, a, B))


_STEPS = {
    "add": lambda x, y: x + y,
    "where": lambda x, y: np.where(x > y, x, y),
    "copy": lambda x, y: x.copy(),
    "np_copy": lambda x, y: np.copy(x),
    "sum": lambda x, y: np.sum(x),
    "astype": lambda x, y: x.astype(np.float32),
    "reshape": lambda x, y: x.reshape(()),
    "T": lambda x, y: x.T,
    "asarray": lambda x, y: np.asarray(x),
    "max": lambda x, y: np.maximum(x, y),
    "view": lambda x, y: x[...],
    "item": lambda x, y: x[()],
}


# One run of examples per executor (the compiled ones, a kernel compile per new chain, in the
# full suite only).
@pytest.mark.parametrize("path", cheap_paths(PATHS))
@settings(max_examples=30, deadline=None)
@given(
    chain=st.lists(st.sampled_from(sorted(_STEPS)), min_size=1, max_size=4),
    scalar_arg=st.booleans(),
)
def test_op_chains_ending_in_0d_match_numpy(path, chain, scalar_arg):
    def fn(x, y):
        for step in chain:
            x = _STEPS[step](x, y)
        return x

    x = np.float64(1.25) if scalar_arg else np.array(1.25)
    y = np.array(0.5)
    _assert_same(_traced(fn, path, x, y), fn(x, y), " -> ".join(chain))


def _asarray_of_argument(a):
    return np.asarray(a)


def _write_through_asarray(a):
    view = np.asarray(a)
    view[...] = 7.0
    return a


def _asarray_of_sum(a):
    s = np.sum(a)
    r = np.asarray(s)
    r[...] = 5.0  # a new array: the scalar s keeps its value, as eagerly
    return s, r


@pytest.mark.parametrize("path", cheap_paths(PATHS))
def test_asarray_keeps_an_argument_and_makes_a_scalar_an_array(path):
    a = np.array(1.5)
    assert _traced(_asarray_of_argument, path, a) is a
    eager, traced = np.array(1.5), np.array(1.5)
    _assert_same(_traced(_write_through_asarray, path, traced), _write_through_asarray(eager))
    assert traced == eager == 7.0
    _assert_same(_traced(_asarray_of_sum, path, np.array(1.5)), _asarray_of_sum(np.array(1.5)))


def _loop_of_arrays(a, b):
    x = np.zeros(())
    while np.sum(x) < 3:
        x = np.where(x < 10, x + a, b)
    return x


def _loop_of_scalars(a, b):
    x = np.sum(a)
    while x < 3:
        x = x + b
    return x


@pytest.mark.parametrize("path", cheap_paths(PATHS))
@pytest.mark.parametrize("fn", [_loop_of_arrays, _loop_of_scalars], ids=["arrays", "scalars"])
def test_while_loop_results_keep_numpys_form(fn, path):
    _assert_same(_traced(fn, path, A, B), fn(A, B))


def _store_in_list(a, b, out):
    out.append(np.where(a > 0, a, b))
    out.append(a + b)
    return len(out)


@pytest.mark.parametrize("path", cheap_paths(PATHS))
def test_0d_values_stored_in_a_list_argument_keep_numpys_form(path):
    eager, traced = [], []
    _store_in_list(A, B, eager)
    f = kx.function(_store_in_list, **PATHS[path])
    f(A, B, traced)
    _assert_same(traced, eager)


def test_dask_keeps_0d_results_lazy_including_a_returned_argument():
    da = pytest.importorskip("dask.array")
    f = kx.function(lambda a, b: (a, np.where(a > b, a, b), a + b))
    got = f(da.from_array(A), da.from_array(B))
    assert all(isinstance(g, da.Array) and g.shape == () for g in got)
    assert [g.compute() for g in got] == [1.5, 2.5, 4.0]


def _relu_loss(w):
    return np.where(w > 0, w, 0.0) * 2  # the backward pass ends with a where


@pytest.mark.parametrize("path", cheap_paths(PATHS))
def test_0d_gradients_are_numpy_scalars_whatever_the_backward_ends_with(path):
    for fn in (_relu_loss, lambda w: np.tanh(w) * 3):
        traced = _traced(kx.grad(fn), path, A)
        eager_tape = kx.grad(fn)(A)
        assert type(traced) is np.float64 and type(eager_tape) is np.float64
        assert traced == eager_tape


def _mixed(c, a, b):
    return np.where(c, a, b), a.copy(), a + b, np.sum(a * b)


def test_compiled_whole_graph_returns_numpys_0d_forms():
    f = kx.function(_mixed, jit_compile=True)
    f(C, A, B)
    got = f(C, A, B)
    kinds = [
        s["kind"]
        for s in f.get_concrete_function(C, A, B).executable.segments
        if s.get("role") != "fallback"
    ]
    assert kinds == ["whole-graph"]  # (the compiled function ran, not its fallback)
    _assert_same(got, _mixed(C, A, B))
    got[0][()] = 9.0  # the caller's own array: the next call's result is not it
    assert f(C, A, B)[0] == 1.5


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("make", [np.float64, np.array], ids=["scalar", "array"])
def test_asarray_of_a_0d_argument_is_the_callers_array_or_a_new_one(path, make):
    def f(x):
        return np.asarray(x)

    def g(x):
        a = np.asarray(x)
        a[()] = 7.0  # reaches the caller's array; a NumPy scalar stays as it was
        return a

    for fn in (f, g):
        x_eager, x_traced = make(1.25), make(1.25)
        want, got = fn(x_eager), _traced(fn, path, x_traced)
        _assert_same(got, want)
        assert (got is x_traced) == (want is x_eager)
        _assert_same(x_traced, x_eager)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("make", [np.float64, np.array], ids=["scalar", "array"])
def test_methods_of_asarray_of_a_0d_argument_give_new_arrays(path, make):
    def f(x):
        return np.asarray(x).astype(np.float32), np.asarray(x).copy()

    x = make(1.25)
    _assert_same(_traced(f, path, x), f(x))
