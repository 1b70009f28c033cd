"""The operator mixin: dunders built from the op table, exactly the set tensors always had."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.ir import COMPARISONS, OpKind
from kernel_ext.trace.operators import NumpyOperators
from kernel_ext.trace.tensor import Tensor
from kernel_ext.trace.variables import Variable

# The operator protocol as it was written out by hand before the op table carried dunders.
_BINARY = [
    "add",
    "sub",
    "mul",
    "truediv",
    "floordiv",
    "mod",
    "pow",
    "matmul",
    "and",
    "or",
    "xor",
    "lshift",
    "rshift",
]
_COMPARISONS = ["lt", "le", "gt", "ge", "eq", "ne"]
_UNARY = ["neg", "pos", "abs", "invert"]
_FORWARD = {f"__{n}__" for n in _BINARY + _COMPARISONS + _UNARY} | {"__divmod__"}
_REFLECTED = {f"__r{n}__" for n in _BINARY} | {"__rdivmod__"}
_INPLACE = {f"__i{n}__" for n in _BINARY}
# Every operator dunder Python knows, to see that no other one appeared.
_ALL_OPERATOR_DUNDERS = {f"__{p}{n}__" for p in ("", "r", "i") for n in _BINARY + ["divmod"]} | {
    f"__{n}__" for n in _COMPARISONS + _UNARY
}


def _operator_dunders(cls: type) -> set[str]:
    return {n for n in dir(cls) if n in _ALL_OPERATOR_DUNDERS}


def test_tensor_has_exactly_the_forward_reflected_and_inplace_operators():
    assert _operator_dunders(Tensor) == _FORWARD | _REFLECTED | _INPLACE


def test_variable_has_no_inplace_operators():
    assert _operator_dunders(Variable) == _FORWARD | _REFLECTED


def test_op_table_names_each_dunder_and_its_numpy_function():
    assert OpKind.ADD.dunder == "add" and OpKind.NEGATIVE.dunder == "neg"
    assert OpKind.MATMUL.dunder == "matmul" and OpKind.POWER.dunder == "pow"
    assert OpKind.ADD.ufunc is np.add and OpKind.MATMUL.numpy_function is np.matmul
    assert {k.dunder for k in COMPARISONS} == set(_COMPARISONS)
    dunders = [k.dunder for k in OpKind if k.dunder is not None]
    assert sorted(dunders) == sorted(_BINARY + _COMPARISONS + _UNARY)


@pytest.mark.parametrize("stem", _BINARY)
def test_each_binary_dunder_calls_its_ufunc(stem):
    method = getattr(NumpyOperators, f"__{stem}__")
    reflected = getattr(NumpyOperators, f"__r{stem}__")
    a = np.array([[6, 3], [2, 5]], np.int64)
    b = np.array([[1, 2], [3, 1]], np.int64)
    expected = getattr(a, f"__{stem}__")(b)
    np.testing.assert_array_equal(method(a, b), expected)
    np.testing.assert_array_equal(reflected(b, a), expected)


def test_inplace_operator_rebinds_a_traced_value_and_its_aliases():
    @kx.function
    def f(x):
        alias = x
        x += 1
        x *= 3
        return alias, x

    alias, x = f(np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(alias, np.array([6.0, 9.0], np.float32))
    np.testing.assert_array_equal(x, alias)


def test_inplace_operator_on_a_variable_rebinds_only_the_name():
    v = kx.Variable(np.array([1, 2]))
    w = v
    w += 10
    assert isinstance(v, Variable) and not isinstance(w, Variable)
    np.testing.assert_array_equal(v.numpy(), [1, 2])
    np.testing.assert_array_equal(w, [11, 12])


def test_divmod_is_floor_division_and_remainder():
    @kx.function
    def f(x):
        return divmod(x, 3), divmod(7, x)

    (q, r), (rq, rr) = f(np.array([7, -7], np.int64))
    np.testing.assert_array_equal(q, [2, -3])
    np.testing.assert_array_equal(r, [1, 2])
    np.testing.assert_array_equal(rq, [1, -1])
    np.testing.assert_array_equal(rr, [0, 0])
