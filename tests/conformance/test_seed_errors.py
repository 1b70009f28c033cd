"""Seed conformance, core engine: non-strict execution and the errors the seeds show.

Seeds: 000/001 "非严格执行" (unused ops are pruned, their runtime errors do not fire), 002
"tf.function 的所有输出都必须是返回值" (leaked tensors), "不支持递归 tf.functions", 000/001
simple_relu (a traced value used as a Python bool without AutoGraph).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import kernel_ext as kx

f32 = np.float32
i32 = np.int32


# --------------------------------------------------------------------------------------------
# Non-strict execution
# --------------------------------------------------------------------------------------------


def test_unused_op_error_fires_eagerly_not_in_graph_gather():
    # seed 000/001 "非严格执行": tf.gather(x, [1]) unused on a 1-element x (dynamic index here)
    def unused_return_eager(x, index):
        x[index]  # unused; fails when len(x) == 1
        return x

    x = np.array([0.0], dtype=f32)
    index = np.array([1])
    with pytest.raises(IndexError):
        unused_return_eager(x, index)

    unused_return_graph = kx.function(unused_return_eager)
    # Only needed operations are run during graph execution. The error is not raised.
    np.testing.assert_array_equal(unused_return_graph(x, index), x)


def test_unused_op_error_fires_eagerly_not_in_graph_inverse():
    # seed 000/001 "非严格执行": an unused pure op whose runtime error (singular matrix) is skipped
    def unused_inverse(x):
        np.linalg.inv(x)  # unused
        return x + 1

    x = np.zeros((2, 2), dtype=f32)
    with pytest.raises(np.linalg.LinAlgError):
        unused_inverse(x)

    out = kx.function(unused_inverse)(x)
    np.testing.assert_array_equal(out, np.ones((2, 2), dtype=f32))


def test_unused_stateful_ops_always_run(capsys):
    # seed 000/001 "非严格执行": tf.print and tf.Variable mutations are observable effects
    v = kx.Variable(0)

    @kx.function
    def f(x):
        kx.print("side effect")
        v.assign_add(1)  # result unused
        return x

    f(np.float32(1.0))
    f(np.float32(2.0))
    assert capsys.readouterr().out == "side effect\nside effect\n"
    assert int(v.numpy()) == 2


def test_run_functions_eagerly_restores_strict_errors():
    # seed 000/001: tf.config.run_functions_eagerly(True) to find where graph and eager diverge
    @kx.function
    def unused_inverse(x):
        np.linalg.inv(x)
        return x

    x = np.zeros((2, 2), dtype=f32)
    np.testing.assert_array_equal(unused_inverse(x), x)
    kx.config.run_functions_eagerly(True)
    with pytest.raises(np.linalg.LinAlgError):
        unused_inverse(x)


# --------------------------------------------------------------------------------------------
# Leaked traced values
# --------------------------------------------------------------------------------------------

_leaked = None


def test_leaked_tensor_has_no_numpy():
    # seed 002 "所有输出都必须是返回值": leaky_function leaks `a + 1` via a global; x.numpy() fails
    global _leaked

    @kx.function
    def leaky_function(a):
        global _leaked
        _leaked = a + 1  # Bad - leaks local tensor
        return a + 2

    try:
        correct_a = leaky_function(np.int32(1))
        assert correct_a == 3  # Good - value obtained from function's returns
        with pytest.raises(AttributeError):
            _leaked.numpy()  # Bad - tensor leaked from inside the function
    finally:
        _leaked = None


def test_leaked_tensor_used_in_another_function_raises_type_error():
    # seed 002: captures_leaked_tensor(b): b += x (x leaked by leaky_function) -> TypeError
    global _leaked

    @kx.function
    def leaky_function(a):
        global _leaked
        _leaked = a + 1  # Bad - leaks local tensor
        return _leaked  # Good - uses local tensor

    @kx.function
    def captures_leaked_tensor(b):
        b += _leaked  # Bad - `x` is leaked from `leaky_function`
        return b

    try:
        assert leaky_function(np.int32(1)) == 2
        with pytest.raises(TypeError) as excinfo:
            captures_leaked_tensor(np.int32(2))
        assert "return" in str(excinfo.value).lower()  # names the fix: use return values
    finally:
        _leaked = None


def test_leaked_tensor_used_eagerly_raises_type_error():
    # seed 002: a leaked tensor "cannot be used here" outside its trace (a TypeError)
    leaked = []

    @kx.function
    def leaky(a):
        leaked.append(a * 2)
        return a

    leaky(np.float32(1.0))
    with pytest.raises(TypeError):
        np.add(leaked[0], 1)


# --------------------------------------------------------------------------------------------
# Python control flow on traced values without AutoGraph; recursion
# --------------------------------------------------------------------------------------------


def test_traced_value_as_python_bool_without_autograph():
    # seed 000/001 simple_relu (`if tf.greater(x, 0)`) with AutoGraph off -> TypeError
    @kx.function(autograph=False)
    def simple_relu(x):
        if np.greater(x, 0):
            return x
        else:
            return 0

    with pytest.raises(TypeError) as excinfo:
        simple_relu(np.int32(1))
    assert re.search(r"(?i)autograph|kx\.cond|cond", str(excinfo.value))
    # a Python exception during tracing leaves nothing cached
    assert list(simple_relu.concrete_functions) == []
    with pytest.raises(TypeError):
        simple_relu(np.int32(1))


def test_python_bool_condition_still_works_without_autograph():
    # seed 004 dropout(x, training=True): a Python bool condition runs at trace time
    @kx.function(autograph=False)
    def dropout(x, training=True):
        if training:
            x = x * 2.0
        return x

    x = np.ones(4, dtype=f32)
    np.testing.assert_array_equal(dropout(x, True), 2 * x)
    np.testing.assert_array_equal(dropout(x, False), x)
    assert dropout.experimental_get_tracing_count() == 2


def test_infinite_recursion_on_traced_values_raises_recursion_error():
    # seed 002 "不支持递归 tf.functions": recursive_fn(tf.constant(5)) -> maximum recursion error
    @kx.function
    def endless_countdown(n):
        return endless_countdown(n - 1)

    with pytest.raises(RecursionError) as excinfo:
        endless_countdown(np.int32(5))
    assert "endless_countdown" in str(excinfo.value)
