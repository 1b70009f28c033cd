"""Variables, frozen Python state, non-strict execution and the error messages of the engine."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import errors

SCALE = 2.0


# -- variables ---------------------------------------------------------------------------------


def test_variables_take_part_in_numpy_expressions_eagerly():
    v = kx.Variable(np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(1 + v, [2, 3])
    np.testing.assert_array_equal(v * np.array([2, 2], np.float32), [2, 4])
    assert np.sum(v) == 3.0 and v.dtype == np.float32 and v.shape == (2,)
    np.testing.assert_array_equal(np.asarray(v), [1, 2])


def test_variables_take_part_in_numpy_expressions_inside_traces():
    v = kx.Variable(np.array([1.0, 2.0]))

    @kx.function
    def f(x):
        return 1 + v, np.sum(v), v * x, v[1], np.maximum(v, x)

    x = np.array([3.0, 0.0])
    a, s, m, i, mx = f(x)
    np.testing.assert_array_equal(a, [2, 3])
    assert s == 3.0 and i == 2.0
    np.testing.assert_array_equal(m, [3, 0])
    np.testing.assert_array_equal(mx, [3, 2])
    v.assign([10.0, 20.0])
    np.testing.assert_array_equal(f(x)[0], [11, 21])  # captured by reference
    assert f.experimental_get_tracing_count() == 1


def test_reads_inside_a_trace_see_the_writes_before_them():
    v = kx.Variable(0)

    @kx.function
    def f():
        before = v + 0
        v.assign_add(5)
        after = v * 1
        v.assign_sub(2)
        return before, after, v.read_value()

    assert f() == (0, 5, 3)
    assert f() == (3, 8, 6)
    assert v.numpy() == 6


def test_variable_assign_eagerly_casts_and_checks_shape():
    v = kx.Variable(np.zeros(2, np.float32))
    v.assign([1, 2])
    assert v.dtype == np.float32
    np.testing.assert_array_equal(v.numpy(), [1, 2])
    with pytest.raises(ValueError, match="shape"):
        v.assign(np.zeros(3))
    w = kx.Variable(np.zeros(2, np.int32))
    with pytest.raises(TypeError, match="astype"):
        w.assign(np.array([1.5, 2.5]))


def test_variables_may_be_created_only_on_the_first_trace():
    @kx.function
    def f(x):
        v = kx.Variable(1.0)
        return x + v

    assert f(np.float64(1.0)) == 2.0
    with pytest.raises(
        ValueError, match=r"only\s+during its first trace.*Fix: create the variable"
    ):
        f(np.ones(2))
    assert f.experimental_get_tracing_count() == 1  # the failed trace left nothing cached


def test_variable_created_once_with_a_guard_works_across_calls():
    class Counter:
        def __init__(self):
            self.count = None

        @kx.function
        def __call__(self):
            if self.count is None:
                self.count = kx.Variable(0)
            self.count.assign_add(1)
            return self.count.read_value()

    c = Counter()
    assert [c(), c(), c()] == [1, 2, 3]


def test_variable_numpy_inside_a_trace_explains_the_fix():
    v = kx.Variable(1.0)
    f = kx.function(lambda: v.numpy())
    with pytest.raises(AttributeError, match="read at every call"):
        f()


# -- frozen Python state -----------------------------------------------------------------------


def test_globals_closures_and_attributes_are_frozen_at_trace_time():
    global SCALE
    offset = [1.0]

    class Holder:
        k = 3.0

    @kx.function
    def f(x):
        return x * SCALE + offset[0] + Holder.k

    x = np.ones(1)
    assert f(x)[0] == 6.0
    SCALE, offset[0], Holder.k = 100.0, 100.0, 100.0
    try:
        assert f(x)[0] == 6.0
    finally:
        SCALE = 2.0


def test_numpy_random_draws_fresh_numbers_at_every_call():
    # DESIGN.md: NumPy's semantics win over TensorFlow's: draws are made when the graph runs.
    def noisy(x):
        return x + np.random.uniform(size=x.shape)

    f = kx.function(noisy)
    x = np.zeros(3)
    np.random.seed(3)
    traced = [f(x) for _ in range(3)]
    np.random.seed(3)
    eager = [noisy(x) for _ in range(3)]
    for t, e in zip(traced, eager):
        np.testing.assert_array_equal(t, e)
    assert not np.array_equal(traced[0], traced[1])


def test_iterators_are_consumed_at_trace_time():
    it = iter([1.0, 2.0, 3.0])
    f = kx.function(lambda x: x + next(it))
    assert f(np.float64(0)) == 1.0
    assert f(np.float64(0)) == 1.0
    assert next(it) == 2.0


def test_captured_arrays_are_copied_when_traced():
    table = np.array([1.0, 2.0])
    f = kx.function(lambda x: x * table)
    np.testing.assert_array_equal(f(np.ones(2)), [1, 2])
    table[:] = 9
    np.testing.assert_array_equal(f(np.ones(2)), [1, 2])
    assert len(f.concrete_functions[0].graph.captures) == 1


# -- non-strict execution ----------------------------------------------------------------------


def test_unused_pure_ops_are_pruned_and_their_errors_do_not_fire():
    def unused(x):
        np.linalg.inv(x)  # singular: raises eagerly
        return x

    singular = np.zeros((2, 2))
    with pytest.raises(np.linalg.LinAlgError):
        unused(singular)
    f = kx.function(unused)
    np.testing.assert_array_equal(f(singular), singular)
    ops = [op.type for op in f.concrete_functions[0].graph.get_operations()]
    assert kx.ir.OpKind.INV not in ops


def test_stateful_ops_are_never_pruned(capsys):
    v = kx.Variable(0)

    @kx.function
    def f(x):
        v.assign_add(1)
        kx.print("side effect")
        np.sqrt(x)  # pruned
        return x

    f(np.ones(1))
    f(np.ones(1))
    assert v.numpy() == 2 and capsys.readouterr().out == "side effect\n" * 2


# -- errors ------------------------------------------------------------------------------------


def test_traced_value_as_python_bool_without_autograph_raises_type_error():
    @kx.function(autograph=False)
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(TypeError, match=r"Python bool.*np\.where"):
        f(np.float64(1.0))
    assert f.concrete_functions == []


def test_leaked_tensor_used_later_raises_type_error():
    leaks = []

    @kx.function
    def f(x):
        leaks.append(x * 2)
        return x

    f(np.ones(2))
    g = kx.function(lambda y: y + leaks[0])
    with pytest.raises(TypeError, match=r"leaked out of that trace.*Fix: return it"):
        g(np.ones(2))
    with pytest.raises(errors.LeakedTensorError):
        np.add(leaks[0], 1)
    with pytest.raises(AttributeError, match="leaked"):
        leaks[0].numpy()


def test_numpy_converting_a_traced_value_names_the_line():
    @kx.function
    def f(x):
        return np.ascontiguousarray(x) + 1  # (np.asarray(x) alone is x itself)

    with pytest.raises(TypeError, match=r"into a concrete array at .*np\.ascontiguousarray\(x"):
        f(np.ones(2))


def test_unsupported_numpy_function_names_it():
    # A function that writes into its argument cannot run as an opaque NumPy call (what a
    # parameter its handler lacks would make of np.putmask).
    from kernel_ext.trace.opaque import numpy_call

    f = kx.function(lambda x: numpy_call(np.putmask, (x, x > 0, 1.0), {}))
    with pytest.raises(TypeError, match=r"np\.putmask at .* writes into"):
        f(np.ones((2, 2)))


def test_infinite_recursion_on_traced_values_raises_recursion_error_naming_function():
    def fact(n):
        return n * fact(n - 1)  # no Python base case on a traced n

    f = kx.function(fact)
    with pytest.raises(RecursionError, match="while tracing 'fact'") as info:
        f(np.int64(5))
    assert isinstance(info.value, errors.TracingRecursionError)
    assert f.concrete_functions == []


def test_python_exception_while_tracing_leaves_nothing_cached():
    state = {"fail": True}

    @kx.function
    def f(x):
        if state["fail"]:
            raise KeyError("boom")
        return x + 1

    with pytest.raises(KeyError):
        f(np.ones(1))
    assert f.concrete_functions == [] and f.experimental_get_tracing_count() == 0
    state["fail"] = False
    assert f(np.ones(1))[0] == 2.0


def test_runtime_error_does_not_poison_the_cache():
    f = kx.function(lambda a: np.linalg.inv(a))
    with pytest.raises(np.linalg.LinAlgError):
        f(np.zeros((2, 2)))
    np.testing.assert_allclose(f(np.eye(2) * 2), np.eye(2) / 2)
    assert f.experimental_get_tracing_count() == 1


def test_shape_errors_surface_at_trace_time_like_numpy():
    f = kx.function(lambda a, b: a + b)
    with pytest.raises(ValueError, match="could not be broadcast"):
        f(np.ones(2), np.ones(3))
    assert f.concrete_functions == []


def test_int_of_traced_value_suggests_astype():
    f = kx.function(lambda x: range(x), autograph=False)
    with pytest.raises(TypeError, match=r"kx\.range"):
        f(np.int64(3))
