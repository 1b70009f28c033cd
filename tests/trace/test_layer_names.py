"""The trace layer's public names for what other modules use (the rule against private
imports across modules is checked for the whole package in tests/test_architecture.py)."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import errors
from kernel_ext.ir import OpKind
from kernel_ext.trace.context import TraceContext
from kernel_ext.trace.iteration import TensorArray
from kernel_ext.trace.tensor import Tensor, describe_tensor
from kernel_ext.trace.variables import resolve


def test_context_makes_tensors_and_binds_ops():
    with TraceContext("g") as ctx:
        x = ctx.placeholder("x", (2,), np.float32, ())
        y = ctx.bind(OpKind.ADD, (x, 1.0))
        assert isinstance(y, Tensor) and y.context is ctx and y.node.op is OpKind.ADD
        assert ctx.tensor(y.node).node is y.node
        assert describe_tensor(x) == "%x (float32[2])"


def test_variable_storage_store_and_resolve():
    v = kx.Variable(np.array([1, 2], np.int32))
    assert not v.storage.flags.writeable
    v.store(np.int64(5))
    np.testing.assert_array_equal(v.storage, [5, 5])
    assert v.storage.dtype == np.int32 and resolve(v) is v.storage and resolve(3) == 3
    with pytest.raises(TypeError, match="cannot assign a float64 value"):
        v.store(np.float64(1.5))


def test_tensor_array_parts_round_trip():
    ta = TensorArray(np.float32, size=2).write(0, np.float32(1.0))
    again = TensorArray.from_parts(ta.static_parts(), ta.buffer, ta.length)
    assert again.static_parts() == (np.dtype(np.float32), 2, False)
    np.testing.assert_array_equal(again.stack(), ta.stack())


def test_leaked_tensor_error_names_it():
    leaked = []

    @kx.function
    def f(x):
        leaked.append(x * 2)
        return x

    f(np.ones(2, np.float32))
    with pytest.raises(errors.LeakedTensorError, match=r"%multiply \(float32\[2\]\)"):
        leaked[0] + 1
