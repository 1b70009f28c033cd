"""Seed conformance, core engine: state — Variables, Python globals/closures, objects,
iterators and NumPy calls frozen at trace time.

Seeds: 002 "Better performance with tf.function" ("执行 Python 副作用", "更改 Python 全局变量和
自由变量", "使用 Python 迭代器和生成器", "取决于 Python 全局变量和自由变量", "取决于 Python 对象",
"创建 tf.Variables"), 003 the tracing article ("状态管理"), 004 the hybrid-programming chapter.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import kernel_ext as kx

f32 = np.float32
i32 = np.int32


def _value(x):
    """A Function result as NumPy; a returned Variable is read (tf returns its value)."""
    if isinstance(x, kx.Variable):
        return x.numpy()
    return np.asarray(x)


# --------------------------------------------------------------------------------------------
# Variables
# --------------------------------------------------------------------------------------------


def test_automatic_control_dependencies():
    # seed 004 "Automatic control dependencies": a.assign(y * b); b.assign_add(x * a) -> 10.0
    a = kx.Variable(1.0)
    b = kx.Variable(2.0)

    @kx.function
    def f(x, y):
        a.assign(y * b)
        b.assign_add(x * a)
        return a + b

    np.testing.assert_allclose(f(1.0, 2.0), 10.0)
    np.testing.assert_allclose(a.numpy(), 4.0)
    np.testing.assert_allclose(b.numpy(), 6.0)


def test_variable_created_on_non_first_call_raises():
    # seed 002 "创建 tf.Variables" / 004:
    # f(x) creating tf.Variable(1.0) at every trace -> ValueError
    @kx.function
    def f(x):
        v = kx.Variable(1.0)
        v.assign_add(x)
        return v

    with pytest.raises(ValueError) as excinfo:
        f(1.0)
        f(2.0)  # a new Python value retraces; the retrace creates a second Variable
    assert re.search(r"(?i)once|outside|first call", str(excinfo.value))


def test_variable_created_outside_assign_add():
    # seed 004: v = tf.Variable(1.0); f(x): return v.assign_add(x); f(1.0) -> 2.0, f(2.0) -> 4.0
    v = kx.Variable(1.0)

    @kx.function
    def f(x):
        return v.assign_add(x)

    np.testing.assert_allclose(_value(f(1.0)), 2.0)
    np.testing.assert_allclose(_value(f(2.0)), 4.0)
    np.testing.assert_allclose(v.numpy(), 4.0)


def test_variable_created_only_on_first_call_is_allowed():
    # seed 004: obj.v = None; g(x): if obj.v is None: obj.v = tf.Variable(1.0) -> 2.0, 4.0
    class C:
        pass

    obj = C()
    obj.v = None

    @kx.function
    def g(x):
        if obj.v is None:
            obj.v = kx.Variable(1.0)
        return obj.v.assign_add(x)

    np.testing.assert_allclose(_value(g(1.0)), 2.0)
    np.testing.assert_allclose(_value(g(2.0)), 4.0)


def test_count_module_pattern_one_cache_per_instance():
    # seed 002 "创建 tf.Variables": class Count with a decorated __call__ -> 1, 2
    class Count:
        def __init__(self):
            self.count = None

        @kx.function
        def __call__(self):
            if self.count is None:
                self.count = kx.Variable(0)
            return self.count.assign_add(1)

    c = Count()
    assert _value(c()) == 1
    assert _value(c()) == 2
    # a decorated method has one cache per instance: the other instance's first call may create
    c2 = Count()
    assert _value(c2()) == 1
    assert _value(c()) == 3


def test_python_guard_recorded_unconditionally():
    # seed 002 "更改 Python 全局变量和自由变量": Model with a Python counter -> prints 1, 2, 3
    class Model:
        def __init__(self):
            self.v = kx.Variable(0)
            self.counter = 0

        @kx.function
        def __call__(self):
            if self.counter == 0:
                # A python side-effect
                self.counter += 1
                self.v.assign_add(1)
            return self.v

    m = Model()
    assert [int(_value(m())) for _ in range(3)] == [1, 2, 3]
    assert m.counter == 1


def test_variables_read_at_every_call_python_values_frozen(capsys):
    # seed 003 "状态管理": state_example with external_python_var and external_tf_var
    external_python_var = 10
    external_tf_var = kx.Variable(10, dtype=np.int32)

    @kx.function
    def state_example():
        result_py = external_python_var * 2
        kx.print("Python var based result (trace time value):", result_py)
        external_tf_var.assign_add(1)
        kx.print("TF Variable current value:", external_tf_var)

    state_example()
    external_python_var = 100
    state_example()
    state_example()
    assert capsys.readouterr().out == (
        "Python var based result (trace time value): 20\n"
        "TF Variable current value: 11\n"
        "Python var based result (trace time value): 20\n"
        "TF Variable current value: 12\n"
        "Python var based result (trace time value): 20\n"
        "TF Variable current value: 13\n"
    )
    assert int(external_tf_var.numpy()) == 13
    assert state_example.experimental_get_tracing_count() == 1


_foo = 1
_foo_var = None


def test_global_frozen_at_trace_time():
    # seed 002 "取决于 Python 全局变量和自由变量": buggy_add vs recommended_add
    global _foo

    @kx.function
    def buggy_add():
        return 1 + _foo

    @kx.function
    def recommended_add(foo):
        return 1 + foo

    _foo = 1
    assert buggy_add() == 2
    assert recommended_add(_foo) == 2
    _foo = 100  # "Updating the value of `foo` to 100!"
    try:
        assert buggy_add() == 2  # Did not change!
        assert recommended_add(_foo) == 101
    finally:
        _foo = 1


def test_global_variable_read_at_every_call():
    # seed 002: foo = tf.Variable(1); variable_add() -> 2; foo.assign(100) -> 101
    global _foo_var

    @kx.function
    def variable_add():
        return 1 + _foo_var

    _foo_var = kx.Variable(1)
    try:
        assert variable_add() == 2
        _foo_var.assign(100)
        assert variable_add() == 101
        assert variable_add.experimental_get_tracing_count() == 1
    finally:
        _foo_var = None


def test_closure_frozen_at_trace_time():
    # seed 002/003: free (closure) variables are captured by value at trace time
    scale = 2.0

    @kx.function
    def scaled(x):
        return x * scale

    x = np.array([1.0, 2.0], dtype=f32)
    np.testing.assert_array_equal(scaled(x), [2.0, 4.0])
    scale = 10.0
    np.testing.assert_array_equal(scaled(x), [2.0, 4.0])


def test_object_attributes_frozen_for_same_object():
    # seed 002 "取决于 Python 对象": evaluate(simple_model, x) stays 20 after bias += 5
    class SimpleModel:
        def __init__(self):
            self.bias = 0.0
            self.weight = 2.0

    @kx.function
    def evaluate(model, x):
        return model.weight * x + model.bias

    simple_model = SimpleModel()
    x = np.float32(10.0)
    np.testing.assert_allclose(evaluate(simple_model, x), 20.0)
    simple_model.bias += 5.0  # "Adding bias!"
    np.testing.assert_allclose(evaluate(simple_model, x), 20.0)  # Didn't change :(


def test_new_function_per_object_state():
    # seed 002: evaluate_no_bias / evaluate_with_bias via
    # tf.function(evaluate).get_concrete_function
    class SimpleModel:
        def __init__(self):
            self.bias = 0.0
            self.weight = 2.0

    def evaluate(model, x):
        return model.weight * x + model.bias

    x = np.float32(10.0)
    new_model = SimpleModel()
    evaluate_no_bias = kx.function(evaluate).get_concrete_function(new_model, x)
    np.testing.assert_allclose(evaluate_no_bias(x), 20.0)  # new_model is bound, not passed
    new_model.bias += 5.0
    evaluate_with_bias = kx.function(evaluate).get_concrete_function(new_model, x)
    np.testing.assert_allclose(evaluate_with_bias(x), 25.0)
    np.testing.assert_allclose(evaluate_no_bias(x), 20.0)


def test_variable_attributes_no_retrace():
    # seed 002: BetterModel with tf.Variable attributes; bias.assign_add(5.0) -> 25 without retrace
    class BetterModel:
        def __init__(self):
            self.bias = kx.Variable(0.0)
            self.weight = kx.Variable(2.0)

    @kx.function
    def evaluate(model, x):
        return model.weight * x + model.bias

    better_model = BetterModel()
    x = np.float32(10.0)
    np.testing.assert_allclose(evaluate(better_model, x), 20.0)
    better_model.bias.assign_add(5.0)  # Note: instead of better_model.bias += 5
    np.testing.assert_allclose(evaluate(better_model, x), 25.0)  # This works!
    assert evaluate.experimental_get_tracing_count() == 1


# --------------------------------------------------------------------------------------------
# Python side effects, iterators, NumPy calls on plain arrays
# --------------------------------------------------------------------------------------------


def test_python_list_append_happens_once(capsys):
    # seed 002 "更改 Python 全局变量和自由变量": side_effect(1) x3 -> len(external_list) == 1
    external_list = []

    @kx.function
    def side_effect(x):
        print("Python side effect")
        external_list.append(x)

    side_effect(1)
    side_effect(1)
    side_effect(1)
    assert len(external_list) == 1
    assert capsys.readouterr().out == "Python side effect\n"


def test_iterator_frozen_at_trace_time(capsys):
    # seed 002 "使用 Python 迭代器和生成器": buggy_consume_next prints "Value: 1" three times
    @kx.function
    def buggy_consume_next(iterator):
        kx.print("Value:", next(iterator))

    iterator = iter([1, 2, 3])
    buggy_consume_next(iterator)
    # This reuses the first value from the iterator, rather than consuming the next value.
    buggy_consume_next(iterator)
    buggy_consume_next(iterator)
    assert capsys.readouterr().out == "Value: 1\nValue: 1\nValue: 1\n"
    assert next(iterator) == 2


def test_iterator_frozen_with_variable(capsys):
    # seed 004: external_var.assign_add(next(iterator)) -> "Value of external_var: 0" x3
    external_var = kx.Variable(0)

    @kx.function
    def buggy_consume_next(iterator):
        external_var.assign_add(next(iterator))
        kx.print("Value of external_var:", external_var)

    iterator = iter([0, 1, 2, 3])
    for _ in range(3):
        buggy_consume_next(iterator)
    assert capsys.readouterr().out == "Value of external_var: 0\n" * 3
    assert int(external_var.numpy()) == 0


def test_numpy_random_drawn_at_every_call():
    # seed 002 "要点" freezes np.random at trace time; DESIGN.md departs on purpose (NumPy's
    # semantics win): each call draws fresh numbers, the very ones eager NumPy would draw.
    @kx.function
    def noisy(x):
        return x + np.random.uniform(size=3)

    x = np.zeros(3)
    np.random.seed(7)
    first, second = noisy(x), noisy(x)
    np.random.seed(7)
    np.testing.assert_array_equal(first, np.random.uniform(size=3))
    np.testing.assert_array_equal(second, np.random.uniform(size=3))
    assert not np.array_equal(first, second)


def test_numpy_call_on_plain_array_becomes_constant():
    # seed 002 "要点": NumPy calls on untraced values run at trace time and become constants
    calls = []

    def table():
        calls.append(1)
        return np.arange(3, dtype=f32) * 10

    @kx.function
    def lookup(x):
        return x + np.sqrt(table())

    x = np.ones(3, dtype=f32)
    expected = x + np.sqrt(np.arange(3, dtype=f32) * 10)
    np.testing.assert_allclose(lookup(x), expected)
    np.testing.assert_allclose(lookup(x), expected)
    assert calls == [1]
