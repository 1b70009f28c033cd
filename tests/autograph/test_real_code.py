"""AutoGraph on real code: iteration, loops that change kind, builtins.

Every behaviour is checked against eager NumPy on the NumPy executor and under
``jit_compile=True``: same values (bitwise), same dtypes.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.autograph import loops
from kernel_ext.ir import OpKind

PATHS = ({"backend": "numpy"}, {"jit_compile": True})


def _same(got, exp, where="result", rtol=0.0):
    if isinstance(exp, (tuple, list)):
        assert type(got) is type(exp) and len(got) == len(exp), where
        for i, (g, e) in enumerate(zip(got, exp)):
            _same(g, e, f"{where}[{i}]", rtol)
        return
    g, e = np.asarray(got), np.asarray(exp)
    assert g.dtype == e.dtype, f"{where}: dtype {g.dtype} != {e.dtype}"
    assert g.shape == e.shape, f"{where}: shape {g.shape} != {e.shape}"
    if rtol:
        np.testing.assert_allclose(g, e, rtol=rtol, err_msg=where)
    else:
        assert np.array_equal(g, e, equal_nan=True), f"{where}: {g!r} != {e!r}"


def like_numpy(fn, *args, fused_sums=False, **fn_kwargs):
    """Run ``fn`` eagerly and traced on every path; return the last traced Function.

    ``fused_sums``: ``fn`` has a float sum of an elementwise product that the jit path's
    fused fallback may reorder (within the bound docs/backends.md states) once its kernel is
    compiled — which depends on whether an earlier test compiled the same kernel — so that
    path is compared within that bound, the NumPy executor still bitwise."""
    expected = fn(*args)
    f = None
    for options in PATHS:
        f = kx.function(fn, **options, **fn_kwargs)
        rtol = 1e-12 if fused_sums and options.get("jit_compile") else 0.0
        _same(f(*args), expected, rtol=rtol)
    return f


def op_kinds(f, *args) -> list:
    return [n.op for n in f.get_concrete_function(*args).graph.nodes]


rng = np.random.default_rng(12)


# -- iterating over traced arrays ---------------------------------------------------------------


def test_enumerate_over_traced_array_yields_rows_with_python_indices():
    def f(X):
        out = np.zeros(X.shape[1], X.dtype)
        for i, row in enumerate(X):
            out = out + i * row
        return out

    like_numpy(f, rng.standard_normal((5, 4)).astype(np.float32))


def test_zip_over_traced_arrays_pairs_their_rows():
    def f(mats, vecs):
        acc = 0.0
        for M, v in zip(mats, vecs):
            acc = acc + v @ M @ v
        return acc

    like_numpy(f, rng.standard_normal((4, 3, 3)), rng.standard_normal((4, 3)))


def test_list_comprehension_over_traced_array_and_np_array_of_it():
    def f(X):
        norms = [np.sqrt(np.sum(r * r)) for r in X]
        return np.array(norms), np.asarray([r[0] for r in X], dtype=np.float32)

    like_numpy(f, rng.standard_normal((6, 5)), fused_sums=True)


def test_tuple_unpacking_of_first_axis():
    def f(p):
        x0, y0 = p.T
        return np.hypot(x0, y0), np.arctan2(y0, x0)

    like_numpy(f, rng.standard_normal((10, 2)))


def test_builtins_iterating_a_traced_array_see_its_rows():
    def f(X):
        rows = list(X)
        return sum(X), len(rows), rows[-1] * 2

    like_numpy(f, rng.standard_normal((4, 3)))


def test_python_iteration_over_unknown_first_dimension_raises_clear_error():
    def f(x):
        return [r * 2 for r in enumerate(x)]

    g = kx.function(f, input_signature=[kx.TensorSpec([None, 2], np.float64)])
    with pytest.raises(
        kx.errors.TracedBoolError,
        match=r"(?s)test_real_code.py:\d+.*first dimension is only known at "
        r"run time.*for row in x",
    ):
        g(np.ones((3, 2)))


def test_iterating_a_0d_traced_value_raises_numpys_type_error():
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        kx.function(lambda x: list(x))(np.float64(1.0))


# -- for statements over traced arrays ------------------------------------------------------------


def test_for_over_rows_with_python_number_accumulator_keeps_numpy_dtype_and_shape():
    # acc = 0.0 + float32 row is float32 of the row's shape, as eagerly: the first iteration
    # runs before the graph loop, so the loop carries what NumPy would have.
    def f(X):
        acc = 0.0
        total = 0.0
        for row in X:
            acc = acc + row
            total = total + row.sum()
        return acc, total

    x = rng.standard_normal((5, 3)).astype(np.float32)
    g = like_numpy(f, x)
    assert OpKind.WHILE in op_kinds(g, x)


def test_for_over_rows_of_unknown_length_with_python_accumulator():
    def f(X):
        total = 0.0
        for row in X:
            total = total + row.sum()
        return total

    for options in PATHS:
        g = kx.function(f, input_signature=[kx.TensorSpec([None, 3], np.float32)], **options)
        for n in (4, 1):
            x = rng.standard_normal((n, 3)).astype(np.float32)
            _same(g(x), f(x))
        # no rows: the value NumPy leaves (0.0) in the dtype the loop gives it
        assert g(np.zeros((0, 3), np.float32)) == 0.0


def test_for_over_static_rows_growing_a_python_list_unrolls():
    def f(X):
        out = []
        for row in X:
            out.append(row * 2)
        return np.stack(out)

    x = rng.standard_normal((4, 3))
    g = like_numpy(f, x)
    assert OpKind.WHILE not in op_kinds(g, x)


def test_for_over_static_rows_unrolls_when_body_needs_a_python_value():
    table = [1.0, 2.0, 3.0]

    def f(X):
        acc = np.zeros(X.shape[1])
        for k, row in enumerate(X):
            acc = acc + row * table[k]
        for row in X:  # a variable that changes shape cannot be a graph loop variable
            acc = np.concatenate([acc, row[:1]])
        return acc

    like_numpy(f, rng.standard_normal((3, 2)))


# -- while loops whose condition becomes traced ------------------------------------------------


def test_while_condition_becoming_traced_continues_as_a_graph_loop():
    def babylonian(a, tol=1e-10):
        x = a.copy()
        err = np.inf
        while err > tol:
            x = 0.5 * (x + a / x)
            err = np.max(np.abs(x * x - a))
        return x

    def newton(c):
        x = c
        dx = 1.0
        while abs(dx) > 1e-12:
            dx = (x - np.cos(x) - c) / (1 + np.sin(x))
            x = x - dx
        return x

    a = rng.random(8) * 10 + 0.5
    g = like_numpy(babylonian, a)
    assert OpKind.WHILE in op_kinds(g, a)
    like_numpy(newton, np.float64(0.3))


def test_while_with_python_counter_and_traced_condition():
    def f(x):
        n = 0
        m = np.max(np.abs(x))
        while m > 0.01:
            m = m / 2
            n += 1
        return n * 1, m

    g = kx.function(f, backend="numpy")
    x = rng.standard_normal(10)
    n, m = g(x)
    assert (n, m) == f(x) and np.asarray(n).dtype == np.int64


# -- break / continue on data --------------------------------------------------------------------


def test_data_dependent_break_in_python_range_loop_then_code_after_it():
    def f(x, thresh=1.0):
        acc = 0.0
        for i in range(len(x)):
            if x[i] > thresh:
                break
            acc += x[i]
        return acc * 2 + 1

    x = rng.standard_normal(12)
    like_numpy(f, x)
    like_numpy(f, np.full(12, -0.5))  # never breaks


def test_continue_inside_nested_loops_on_data():
    def f(A):
        s = 0.0
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                if i == j:
                    continue
                if A[i, j] < 0:
                    continue
                s = s + A[i, j]
        return s

    like_numpy(f, rng.standard_normal((5, 5)))


def test_break_inside_nested_python_loop_only_leaves_that_loop():
    def f(A):
        s = 0.0
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                if A[i, j] < 0:
                    break
                s = s + A[i, j]
        return s

    like_numpy(f, rng.standard_normal((4, 6)))


# -- builtins --------------------------------------------------------------------------------


def test_builtin_max_and_min_keep_pythons_first_wins_rule_with_nan():
    def f(a, b):
        return max(a, b), min(a, b), max(b, a), min(b, a), max(a, b, 0.5)

    for a, b in [(1.0, 2.0), (np.nan, 2.0), (2.0, np.nan), (-0.0, 0.0), (0.0, -0.0)]:
        like_numpy(f, np.float64(a), np.float64(b))


def test_builtin_max_with_a_python_number_and_key():
    def f(x):
        hi = max(x.max(), 0.0)
        lo = min(x.min(), 0.0)
        best = max([x[0], x[1], x[2]], key=lambda v: -v)
        return hi - lo, best

    like_numpy(f, rng.standard_normal(9))
    like_numpy(f, np.abs(rng.standard_normal(9)))


def test_builtin_max_of_values_with_different_dtypes_raises_clear_error():
    def f(x):
        return max(x.max(), 0)  # float64 or a Python int eagerly, depending on the data

    with pytest.raises(TypeError, match=r"(?s)max\(\) at .*test_real_code.py:\d+.*write 0.0"):
        kx.function(f)(np.ones(3))


def test_builtin_max_over_rows_refuses_ambiguous_truth_like_numpy():
    def f(X):
        return max(X)

    with pytest.raises(ValueError, match="truth value of an array with more than one element"):
        f(np.ones((3, 2)))
    with pytest.raises(ValueError, match="truth value of an array with more than one element"):
        kx.function(f)(np.ones((3, 2)))


def test_builtin_sum_adds_items_in_order_like_python():
    def f(X):
        return sum(X), sum(X[0]), sum((r * 2 for r in X), 1.0)

    like_numpy(f, rng.standard_normal((4, 3)).astype(np.float32))
    # a long first dimension is summed by a graph loop, still one row after the other
    x = rng.standard_normal((200, 3)).astype(np.float32)
    g = like_numpy(lambda X: sum(X), x)
    assert OpKind.WHILE in op_kinds(g, x)


def test_builtin_any_and_all_on_traced_values():
    def f(X):
        total = sum(X)
        return any(total > 1.0), all(X[0] < 0), any(X[:, 0]), all([X[0, 0] > 0, X[1, 1] > 0])

    for x in (rng.standard_normal((4, 3)), np.array([[np.nan, 0.0], [0.0, 0.0]]), -np.ones((2, 2))):
        expected = f(x)
        for options in PATHS:
            got = kx.function(f, **options)(x)
            assert [bool(v) for v in got] == [bool(v) for v in expected]


def test_builtin_any_over_rows_of_a_matrix_refuses_ambiguous_truth_like_numpy():
    with pytest.raises(ValueError, match="truth value of an array with more than one element"):
        kx.function(lambda X: any(X))(np.ones((3, 2)))


def test_builtin_round_abs_and_len():
    def f(x):
        return round(x.mean(), 3), abs(x.sum()), len(x), round(x[0] * 100, -1)

    like_numpy(f, rng.standard_normal(9))


def test_builtin_round_without_ndigits_raises_clear_error():
    with pytest.raises(TypeError, match=r"(?s)returns a Python int.*np.round\(x\)"):
        kx.function(lambda x: round(x.mean()))(np.ones(3))


# -- recursion, plain arrays ----------------------------------------------------------------------


def _rec(X, n):
    return X if n == 0 else _rec(X + 1, n - 1)


def test_recursive_function_with_a_python_counter():
    like_numpy(lambda X: _rec(X, 4) * 2, rng.standard_normal((3, 2)))


def test_plain_ndarray_methods_with_a_traced_operand():
    def f(t):
        v = np.array([1.0, 2.0, 3.0])
        return v.dot(t), v.clip(t.min(), t.max()), v.repeat(2).dot(np.concatenate([t, t]))

    like_numpy(f, rng.standard_normal(3))


# -- errors say what AutoGraph did ---------------------------------------------------------------


def test_bool_error_with_autograph_on_names_the_construct_and_line():
    def f(X):
        return np.stack([r for r in X if r.sum() > 0])

    with pytest.raises(kx.errors.TracedBoolError) as info:
        kx.function(f)(np.ones((3, 2)))
    text = str(info.value)
    assert "AutoGraph is on" in text and "AutoGraph is off" not in text
    assert "comprehension" in text and "if r.sum() > 0" in text


def test_bool_error_with_autograph_off_says_so():
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(kx.errors.TracedBoolError, match=r"(?s)`if x > 0:`.*AutoGraph is off"):
        kx.function(f, autograph=False)(np.float64(1.0))


# -- the loop policy -----------------------------------------------------------------------------


def test_long_python_range_loop_becomes_a_graph_loop_with_a_bounded_graph():
    def f(x):
        acc = 0.0
        for i in range(5000):
            acc = acc + x[i % 7] * i  # float32 * Python int stays float32
        return acc

    x = rng.standard_normal(7).astype(np.float32)
    g = like_numpy(f, x)
    nodes = len(g.get_concrete_function(x).graph.nodes)
    assert OpKind.WHILE in op_kinds(g, x) and nodes < 3 * loops.UNROLL_NODE_BUDGET


def test_short_python_range_loop_unrolls_and_a_longer_one_is_a_graph_loop():
    short = loops.SHORT_RANGE

    def f(x, n):
        for _ in range(n):
            x = x * 2 - 1
        return x

    x = rng.standard_normal(3)
    g = like_numpy(f, x, short)
    assert OpKind.WHILE not in op_kinds(g, x, short)
    assert op_kinds(g, x, short).count(OpKind.MULTIPLY) == short
    g = like_numpy(f, x, short + 1)
    assert op_kinds(g, x, short + 1).count(OpKind.WHILE) == 1
    assert OpKind.MULTIPLY not in op_kinds(g, x, short + 1)  # (in the loop body)


def test_long_range_loop_unrolls_when_the_index_must_be_a_python_number():
    def f(x):
        acc = x * 0
        for i in range(1500):
            t = i * 0.001  # a Python float: a graph index cannot stand for it
            acc = acc + x * t
        return acc

    x = rng.standard_normal(4).astype(np.float32)
    assert OpKind.WHILE not in op_kinds(like_numpy(f, x), x)


def test_long_range_loop_growing_a_python_list_unrolls():
    def f(x):
        out = []
        for i in range(1500):
            out.append(x[i % 5] + i)
        return np.stack(out)

    like_numpy(f, rng.standard_normal(5))


def test_long_range_loop_with_data_dependent_break():
    # after GUARDED_UNROLL iterations inside a cond on the break flag the rest is a graph loop
    def f(x):
        acc = 0.0
        for i in range(3000):
            if acc > 50:
                break
            acc = acc + abs(x[i % 7])
        return acc

    x = rng.standard_normal(7)
    g = like_numpy(f, x)
    assert OpKind.WHILE in op_kinds(g, x)


def test_range_with_traced_bound_gives_python_int_promotion():
    def f(x):
        k = np.argmax(x)
        s = np.float32(0)
        for i in range(k):
            s = s + x[i] * i  # float32 * Python int is float32 eagerly
        return s

    x = np.array([0.5, 1.5, -2.0, 7.0, 1.0], np.float32)
    like_numpy(f, x)
    like_numpy(f, x[::-1].copy())


def test_graph_loop_index_used_as_python_int_raises_clear_error():
    table = [1.0, 2.0, 3.0, 4.0]

    def f(x):
        s = 0.0
        for i in range(np.argmax(x)):
            s = s + table[i]
        return s

    with pytest.raises(
        kx.errors.TracedBoolError, match=r"(?s)loop index .* at .*test_real_code.py:\d+.*table\[i\]"
    ):
        kx.function(f)(np.ones(4))


def test_unroll_cap_stops_a_loop_that_cannot_be_a_graph_loop(monkeypatch):
    monkeypatch.setattr(loops, "UNROLL_NODE_CAP", 500)

    def f(x):
        for i in range(2000):
            x = x + i * 0.5
        return x

    with pytest.raises(kx.errors.LoopUnrollError, match=r"(?s)test_real_code.py:\d+.*kx.range"):
        kx.function(f)(np.ones(2))


def test_to_code_shows_loop_targets_and_loops_that_must_unroll():
    def f(X):
        out = []
        for row in X:
            out.append(row)
        return out

    code = kx.autograph.to_code(f)
    assert "'targets': ('row',)" in code and "'python_effects': True" in code
