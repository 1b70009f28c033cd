"""Seed conformance, AutoGraph: Python control flow on traced values.

Seeds: 000/001 simple_relu + tf.autograph.to_code, 002 "AutoGraph 转换" (while loop, fizzbuzz,
loops, TensorArray, train(num_steps) with tf.range), 004 (to_code, dropout with tf.cond,
test_dynamically_unrolled: for/while in range/tf.range/Python/tensor conditions).

The whole module is expected to fail until AutoGraph lands; the lead removes the xfail
marker then.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx

pytestmark = [pytest.mark.autograph]

f32 = np.float32
i32 = np.int32


def _op_types(graph) -> list[str]:
    """Op types of a graph, lowercased (nested cond/while bodies are not walked)."""
    return [str(op.type).lower() for op in graph.get_operations()]


def _uses(fn, kind: str, *args) -> bool:
    graph = fn.get_concrete_function(*args).graph
    return any(kind in t for t in _op_types(graph))


# --------------------------------------------------------------------------------------------
# if on traced values -> one cond node
# --------------------------------------------------------------------------------------------


def test_simple_relu_if_on_traced_value(capsys):
    # seed 000/001 "将 Python 函数转换为计算图": simple_relu with `if tf.greater(x, 0)`
    def simple_relu(x):
        if np.greater(x, 0):
            return x
        else:
            return 0

    tf_simple_relu = kx.function(simple_relu)
    print("First branch, with graph:", tf_simple_relu(np.int32(1)))
    print("Second branch, with graph:", tf_simple_relu(np.int32(-1)))
    assert capsys.readouterr().out == (
        "First branch, with graph: 1\nSecond branch, with graph: 0\n"
    )
    assert tf_simple_relu.experimental_get_tracing_count() == 1
    nodes = list(tf_simple_relu.get_concrete_function(np.int32(1)).graph.as_graph_def().node)
    assert nodes[0].name == "x"
    assert any(n.op == "If" for n in nodes)  # TensorFlow's name for a cond node


def test_to_code_shows_converted_source():
    # seed 000/001: print(tf.autograph.to_code(simple_relu)) -> if_stmt(...)
    def simple_relu(x):
        if np.greater(x, 0):
            return x
        else:
            return 0

    code = kx.autograph.to_code(simple_relu)
    assert isinstance(code, str)
    assert "def " in code
    assert "if_stmt" in code


def test_to_code_of_while_loop():
    # seed 002/004: print(tf.autograph.to_code(f.python_function)) -> while_stmt(loop_test, ...)
    @kx.function
    def f(x):
        while np.sum(x) > 1:
            kx.print(x)
            x = np.tanh(x)
        return x

    code = kx.autograph.to_code(f.python_function)
    assert "while_stmt" in code


def test_dropout_python_bool_vs_traced_bool():
    # seed 004 test_tf_cond: dropout(x, True) executes normally;
    # dropout(x, tf.constant(True)) uses cond
    @kx.function
    def dropout(x, training=True):
        if training:
            x = x * 2.0  # deterministic stand-in for tf.nn.dropout(x, rate=0.5)
        return x

    x = np.ones([10], dtype=f32)
    assert not _uses(dropout, "cond", x, True)
    assert _uses(dropout, "cond", x, np.bool_(True))
    np.testing.assert_array_equal(dropout(x, True), 2 * x)
    np.testing.assert_array_equal(dropout(x, np.bool_(True)), 2 * x)
    np.testing.assert_array_equal(dropout(x, np.bool_(False)), x)
    assert dropout.experimental_get_tracing_count() == 2


def test_only_taken_branch_stateful_ops_run(capsys):
    # seed 002 "条件语句": tf.cond picks the branch at run time; only its tf.print runs
    v = kx.Variable(0)

    @kx.function
    def f(x):
        if x > 0:
            kx.print("positive")
            v.assign_add(1)
        else:
            kx.print("not positive")
            v.assign_add(10)
        return x

    f(np.float32(1.0))
    f(np.float32(-1.0))
    assert capsys.readouterr().out == "positive\nnot positive\n"
    assert int(v.numpy()) == 11
    assert f.experimental_get_tracing_count() == 1


def test_conditional_expression_and_boolean_operators():
    # seed 002 "AutoGraph 转换": conditional expressions and and/or/not on traced values
    @kx.function
    def clip_band(x):
        y = x if x > 0 else -x
        if y > 1 and not y > 10:
            y = y * 100
        return y

    def eager(x):
        y = x if x > 0 else -x
        if y > 1 and not y > 10:
            y = y * 100
        return y

    for value in (-5.0, 0.5, 3.0, 20.0):
        np.testing.assert_allclose(clip_band(np.float32(value)), eager(np.float32(value)))
    assert clip_band.experimental_get_tracing_count() == 1


def test_called_user_functions_are_converted():
    # seed 002 "AutoGraph 转换" (recursive conversion of called functions)
    def helper(x):
        if x > 0:
            return x * 2
        return x * 0

    @kx.function
    def outer(x):
        return helper(x) + 1

    np.testing.assert_allclose(outer(np.float32(3.0)), 7.0)
    np.testing.assert_allclose(outer(np.float32(-3.0)), 1.0)
    assert outer.experimental_get_tracing_count() == 1


# --------------------------------------------------------------------------------------------
# while / for on traced values -> one while node; Python loops unroll
# --------------------------------------------------------------------------------------------


def test_while_loop_on_traced_condition(capsys):
    # seed 002 "AutoGraph 转换" / 004: while tf.reduce_sum(x) > 1: tf.print(x); x = tf.tanh(x)
    @kx.function
    def f(x):
        while np.sum(x) > 1:
            kx.print(x)
            x = np.tanh(x)
        return x

    x = np.random.default_rng(0).uniform(size=[5]).astype(f32)
    expected, iterations = x, 0
    while np.sum(expected) > 1:
        expected = np.tanh(expected)
        iterations += 1
    assert iterations > 3

    out = f(x)
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == iterations
    assert printed[0].startswith("[")
    assert f.experimental_get_tracing_count() == 1
    assert _uses(f, "while", x)


def test_fizzbuzz_branches_traced_once(capsys):
    # seed 002 "条件语句": fizzbuzz(tf.constant(5)); fizzbuzz(tf.constant(20))
    @kx.function
    def fizzbuzz(n):
        for i in kx.range(1, n + 1):
            print("Tracing for loop")
            if i % 15 == 0:
                print("Tracing fizzbuzz branch")
                kx.print("fizzbuzz")
            elif i % 3 == 0:
                print("Tracing fizz branch")
                kx.print("fizz")
            elif i % 5 == 0:
                print("Tracing buzz branch")
                kx.print("buzz")
            else:
                print("Tracing default branch")
                kx.print(i)

    fizzbuzz(np.int32(5))
    fizzbuzz(np.int32(20))
    expected = [
        "Tracing for loop",
        "Tracing fizzbuzz branch",
        "Tracing fizz branch",
        "Tracing buzz branch",
        "Tracing default branch",
        "1", "2", "fizz", "4", "buzz",
        "1", "2", "fizz", "4", "buzz", "fizz", "7", "8", "fizz", "buzz",
        "11", "fizz", "13", "14", "fizzbuzz", "16", "17", "fizz", "19", "buzz",
    ]  # fmt: skip
    assert capsys.readouterr().out.splitlines() == expected
    assert fizzbuzz.experimental_get_tracing_count() == 1


def test_train_with_kx_range(capsys):
    # seed 002 "传递张量而不是 Python 文字": for _ in tf.range(num_steps): train_one_step()
    def train_one_step():
        pass

    @kx.function
    def train(num_steps):
        print("Tracing with num_steps = ", num_steps)
        kx.print("Executing with num_steps = ", num_steps)
        for _ in kx.range(num_steps):
            train_one_step()

    train(num_steps=10)
    train(num_steps=20)
    assert capsys.readouterr().out == (
        "Tracing with num_steps =  10\n"
        "Executing with num_steps =  10\n"
        "Tracing with num_steps =  20\n"
        "Executing with num_steps =  20\n"
    )
    train(num_steps=np.int32(10))
    train(num_steps=np.int32(20))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert lines[1:] == ["Executing with num_steps =  10", "Executing with num_steps =  20"]
    assert train.experimental_get_tracing_count() == 3


def test_for_in_python_range_unrolls():
    # seed 004 test_dynamically_unrolled: for_in_range() gets unrolled
    @kx.function
    def for_in_range():
        x = 0
        for i in range(5):
            x += i
        return x

    assert for_in_range() == 10
    assert not _uses(for_in_range, "while")


def test_for_in_kx_range_uses_while_loop():
    # seed 004 test_dynamically_unrolled: for_in_tfrange() uses tf.while_loop
    @kx.function
    def for_in_kxrange():
        x = np.int32(0)
        for i in kx.range(5):
            x += i
        return x

    assert for_in_kxrange() == 10
    assert _uses(for_in_kxrange, "while")


def test_while_on_python_condition_unrolls():
    # seed 004 test_dynamically_unrolled: while_py_cond() gets unrolled
    @kx.function
    def while_py_cond():
        x = 5
        while x > 0:
            x -= 1
        return x

    assert while_py_cond() == 0
    assert not _uses(while_py_cond, "while")


def test_while_on_traced_condition_uses_while_loop():
    # seed 004 test_dynamically_unrolled: while_tf_cond() uses tf.while_loop (x passed in, traced)
    @kx.function
    def while_tf_cond(x):
        while x > 0:
            x -= 1
        return x

    assert while_tf_cond(np.int32(5)) == 0
    assert while_tf_cond(np.int32(-3)) == -3
    assert _uses(while_tf_cond, "while", np.int32(5))


def test_python_for_loop_power_is_one_graph_loop():
    # seed 000/001 "见证加速" power(x, 100): DESIGN.md 1, index loops are traced once as graph
    # loops rather than unrolled: the graph does not grow with y (a range longer than
    # loops.SHORT_RANGE items is one graph loop from its first item)
    def power(x, y):
        result = np.eye(10, dtype=i32)
        for _ in range(y):
            result = np.matmul(x, result)
        return result

    power_as_graph = kx.function(power)
    x = np.random.default_rng(1).integers(-1, 2, size=(10, 10)).astype(i32)
    ops_10 = power_as_graph.get_concrete_function(x, 10).graph.count_ops()
    ops_100 = power_as_graph.get_concrete_function(x, 100).graph.count_ops()
    assert ops_100 == ops_10
    np.testing.assert_array_equal(power_as_graph(x, 100), power(x, 100))


def test_for_over_traced_array_rows():
    # seed 002 "循环": `for x in y` with y a tensor becomes a loop
    @kx.function
    def row_sum(x):
        acc = np.zeros(3, dtype=f32)
        for row in x:
            acc = acc + row
        return acc

    x = np.arange(12, dtype=f32).reshape(4, 3)
    np.testing.assert_allclose(row_sum(x), x.sum(axis=0))
    assert _uses(row_sum, "while", x)


def test_break_and_continue_in_traced_loops():
    # seed 000 "if-then 子句、循环、break、return、continue" converted by AutoGraph
    @kx.function
    def sum_until_break(n):
        acc = np.int32(0)
        for i in kx.range(n):
            if i > 3:
                break
            acc += i
        return acc

    @kx.function
    def sum_odd(n):
        acc = np.int32(0)
        for i in kx.range(n):
            if i % 2 == 0:
                continue
            acc += i
        return acc

    @kx.function
    def count_down_to_two(x):
        while x > 0:
            x -= 1
            if x == 2:
                break
        return x

    assert sum_until_break(np.int32(10)) == 0 + 1 + 2 + 3
    assert sum_until_break(np.int32(2)) == 0 + 1
    assert sum_odd(np.int32(6)) == 1 + 3 + 5
    assert count_down_to_two(np.int32(5)) == 2
    assert count_down_to_two(np.int32(1)) == 0


def test_kx_range_like_tf_range():
    # seed 002 fizzbuzz tf.range(1, n + 1): int32 in, int32 out
    r = np.asarray(kx.range(np.int32(1), np.int32(4)))
    np.testing.assert_array_equal(r, [1, 2, 3])
    assert r.dtype == np.int32

    @kx.function
    def collect(n):
        ta = kx.TensorArray(np.int32, size=0, dynamic_size=True)
        for i in kx.range(np.int32(0), n, np.int32(2)):
            ta = ta.write(ta.size(), i)
        return ta.stack()

    out = collect(np.int32(7))
    np.testing.assert_array_equal(out, [0, 2, 4, 6])
    assert out.dtype == np.int32


# --------------------------------------------------------------------------------------------
# Accumulating values in loops: TensorArray
# --------------------------------------------------------------------------------------------


def test_dynamic_rnn_with_tensor_array():
    # seed 002 "累加循环值": dynamic_rnn with tf.TensorArray
    batch_size, seq_len, feature_size = 2, 3, 4

    def rnn_step(inp, state):
        return inp + state

    @kx.function
    def dynamic_rnn(rnn_step, input_data, initial_state):
        # [batch, time, features] -> [time, batch, features]
        input_data = np.transpose(input_data, [1, 0, 2])
        max_seq_len = input_data.shape[0]
        states = kx.TensorArray(np.float32, size=max_seq_len)
        state = initial_state
        for i in kx.range(max_seq_len):
            state = rnn_step(input_data[i], state)
            states = states.write(i, state)
        return np.transpose(states.stack(), [1, 0, 2])

    data = np.random.default_rng(2).uniform(size=[batch_size, seq_len, feature_size])
    data = data.astype(f32)
    init = np.zeros([batch_size, feature_size], dtype=f32)
    out = dynamic_rnn(rnn_step, data, init)
    assert out.shape == (batch_size, seq_len, feature_size)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.cumsum(data, axis=1), rtol=1e-6)
    assert _uses(dynamic_rnn, "while", rnn_step, data, init)


def test_python_list_append_in_traced_loop_raises():
    # seed 002 "累加循环值": appending to a Python list in a dynamic loop does not work -> error
    @kx.function
    def collect(n):
        out = []
        for i in kx.range(n):
            out.append(i * 2)
        return np.stack(out)

    with pytest.raises(TypeError):
        collect(np.int32(3))


def test_explicit_cond_and_while_loop():
    # seed 002/004: tf.cond and tf.while_loop still work inside a Function
    @kx.function
    def f(x, n):
        y = kx.cond(x > 0, lambda: x * 2, lambda: -x)
        i, acc = kx.while_loop(
            lambda i, acc: i < n, lambda i, acc: (i + 1, acc + i), (np.int32(0), np.int32(0))
        )
        return y, acc

    y, acc = f(np.float32(3.0), np.int32(5))
    np.testing.assert_allclose(y, 6.0)
    assert acc == 0 + 1 + 2 + 3 + 4
    y, acc = f(np.float32(-3.0), np.int32(0))
    np.testing.assert_allclose(y, 3.0)
    assert acc == 0
    assert f.experimental_get_tracing_count() == 1


# --------------------------------------------------------------------------------------------
# Consistency errors
# --------------------------------------------------------------------------------------------


def test_variable_defined_in_one_branch_only_raises():
    # seed 002 "有关 AutoGraph 转换的 if 语句的其他限制": defined in only one branch
    @kx.function
    def f(x):
        if x > 0:
            only_in_true = x * 2
        return only_in_true

    with pytest.raises(ValueError, match="only_in_true"):
        f(np.float32(1.0))


def test_branch_dtype_mismatch_raises():
    # seed 002: the two branches of a tf.cond must agree on dtypes
    @kx.function
    def f(x):
        if x > 0:
            branch_value = x * 2
        else:
            branch_value = x.astype(np.int64)
        return branch_value

    with pytest.raises(TypeError, match="branch_value"):
        f(np.float32(1.0))


# The consistency errors (branch structure, loop dtype/shape changes, merged branch shapes) are
# tested with their exact messages in tests/autograph/test_control_flow.py.


def test_return_inside_traced_loop_raises():
    # `return` inside a loop over traced values raises a clear error
    @kx.function
    def f(n):
        for i in kx.range(n):
            if i > 2:
                return i
        return n

    with pytest.raises(Exception, match=r"(?i)return"):
        f(np.int32(5))


def test_recursion_on_traced_value_raises_recursion_error():
    # seed 002 "不支持递归 tf.functions": recursive_fn(tf.constant(5)) -> maximum recursion error
    @kx.function
    def recursive_fn(n):
        if n > 0:
            return recursive_fn(n - 1)
        else:
            return 1

    with pytest.raises(RecursionError, match="recursive_fn"):
        recursive_fn(np.int32(5))


@pytest.mark.usefixtures("settled_warnings")
def test_unconvertible_function_runs_as_is_with_warning():
    # code without source cannot be converted; it runs as-is with a warning
    namespace = {}
    exec("def plus_one(x):\n    return x + 1\n", {"np": np}, namespace)
    plus_one = kx.function(namespace["plus_one"])
    with pytest.warns(kx.errors.AutographWarning):
        out = plus_one(np.float32(1.0))
    np.testing.assert_allclose(out, 2.0)
