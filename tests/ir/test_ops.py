"""The op table's facts are true of NumPy: each is checked against the NumPy it describes."""

from __future__ import annotations

import operator

import numpy as np
import pytest

from kernel_ext.ir import (
    COMPARISONS,
    FUSIBLE_REDUCTIONS,
    MULTI_OUTPUT_OPS,
    NDARRAY_METHODS,
    OPAQUE_CALLS,
    UFUNC_OPS,
    UFUNC_REDUCTIONS,
    VIEW_OPS,
    OpGroup,
    OpKind,
)

_BINARY = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "@": operator.matmul,
}
_UNARY = {"-": operator.neg, "~": operator.invert}

_SAMPLES = {
    "f": [
        np.array([[-2.5, -0.0], [0.0, np.nan]], np.float32),
        np.array([[1.5, np.inf], [-3.0, 2.0]], np.float32),
        np.float64(-0.0),
        3.0,
    ],
    "i": [
        np.array([[-7, 0], [5, np.iinfo(np.int16).min]], np.int16),
        np.array([[2, -3], [1, 4]], np.int16),
        np.int64(3),
        2,
    ],
    "b": [
        np.array([[True, False], [True, True]]),
        np.array([[False, False], [True, False]]),
        np.bool_(True),
        True,
    ],
}


def _same(a: object, b: object) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        and (a.dtype.kind != "f" or bool(np.array_equal(np.signbit(a), np.signbit(b))))
    )


@pytest.mark.parametrize("op", [k for k in OpKind if k.operator], ids=str)
def test_operator_applies_exactly_the_ops_ufunc(op: OpKind) -> None:
    fn = op.ufunc or op.numpy_function
    table = _UNARY if fn.nin == 1 else _BINARY
    py = table[op.operator]
    checked = 0
    for values in _SAMPLES.values():
        pairs = (
            [(values[0],), (values[1],)]
            if fn.nin == 1
            else [
                (values[0], values[1]),
                (values[0], values[2]),
                (values[2], values[1]),
                (values[0], values[3]),
                (values[3], values[1]),
            ]
        )
        for args in pairs:
            with np.errstate(all="ignore"):
                try:
                    want = fn(*args)
                except (TypeError, ValueError):  # no loop for these dtypes; 0-d matmul
                    continue
                assert _same(py(*args), want), (op, args)
                checked += 1
    assert checked


@pytest.mark.parametrize("op", [k for k in OpKind if k.dunder], ids=str)
def test_dunder_is_ndarrays_protocol_for_the_op(op: OpKind) -> None:
    fn = op.ufunc or op.numpy_function
    # float operands, or ints for the bit operators
    x, y = _SAMPLES["f" if "f->" in "".join(fn.types) or "ff->" in "".join(fn.types) else "i"][:2]
    method = getattr(np.ndarray, f"__{op.dunder}__")
    with np.errstate(all="ignore"):
        got = method(x) if fn.nin == 1 else method(x, y)
        want = fn(x) if fn.nin == 1 else fn(x, y)
    assert _same(got, want)
    if op in COMPARISONS or fn.nin == 1:
        return
    with np.errstate(all="ignore"):  # the reflected form swaps the operands
        assert _same(getattr(np.ndarray, f"__r{op.dunder}__")(x, y), fn(y, x))


def test_ufunc_ops_map_both_ways() -> None:
    for op in OpKind:
        if op.ufunc is not None:
            assert op.group is OpGroup.ELEMENTWISE
            assert UFUNC_OPS[op.ufunc] is op
            assert op.ufunc is getattr(np, op.value)


@pytest.mark.parametrize("op", [k for k in OpKind if k.kernel_loop], ids=str)
def test_kernel_loop_ops_have_a_float_loop(op: OpKind) -> None:
    assert op.ufunc is not None and op.ufunc.nout == 1
    assert any(t.split("->")[0] == "d" * op.ufunc.nin for t in op.ufunc.types), op.ufunc.types


@pytest.mark.parametrize("op", sorted(FUSIBLE_REDUCTIONS, key=str), ids=str)
def test_accumulator_folds_to_the_reduction(op: OpKind) -> None:
    x = np.array([[3.0, -1.5, 2.0], [0.25, 4.0, -2.0]])
    if op in (OpKind.ANY, OpKind.ALL):
        x = x > 0
    fold = op.accumulator.reduce(x, axis=None)
    want = op.numpy_function(x)
    if op is OpKind.MEAN:  # the accumulator holds the sum; the finish divides by the count
        fold = fold / x.size
    assert _same(fold, want)
    if op is not OpKind.MEAN:
        assert UFUNC_REDUCTIONS[op.accumulator] is op


def test_reductions_are_ndarray_methods_named_after_the_op() -> None:
    x = np.arange(6.0).reshape(2, 3)
    for op in NDARRAY_METHODS:
        if op.group is OpGroup.REDUCTION:
            assert _same(getattr(x, op.value)(axis=1), op.numpy_function(x, axis=1))


def test_reductions_that_are_not_methods_are_numpy_functions_or_ufunc_methods() -> None:
    x = np.array([[0.0, np.nan, 2.0], [3.0, 4.0, 5.0]])
    for op in OpKind:
        if op.group not in (OpGroup.REDUCTION, OpGroup.SCAN) or op in NDARRAY_METHODS:
            continue
        assert not hasattr(np.ndarray, op.value), op
        if op.value.startswith("ufunc_"):  # np.<ufunc>.<method>, the ufunc in attrs
            assert hasattr(np.add, op.value.removeprefix("ufunc_")), op
            continue
        fn = op.numpy_function
        assert fn is not None, op
        if "quantile" in op.value or "percentile" in op.value:
            assert np.shape(fn(x, [0.25, 0.5] if "quantile" in op.value else [25, 50], axis=1)) == (
                2,
                2,
            )
        elif op.group is OpGroup.REDUCTION:
            assert np.shape(fn(x, axis=1)) == (2,), op
        # the nan functions ignore NaN: equal to the plain function where there is none
        if (
            op.value.startswith("nan")
            and "quantile" not in op.value
            and "percentile" not in op.value
        ):
            plain = getattr(np, op.value[3:])
            assert _same(fn(x[1:], axis=1), plain(x[1:], axis=1)), op


def test_multi_output_ops_are_the_ufuncs_with_several_outputs() -> None:
    multi = {k for k in MULTI_OUTPUT_OPS if k.ufunc is not None}
    assert multi == {OpKind.FREXP, OpKind.MODF, OpKind.DIVMOD}
    for op in multi:
        assert op.ufunc.nout == 2 and not op.kernel_loop  # a kernel writes one output
    assert OPAQUE_CALLS <= MULTI_OUTPUT_OPS


def test_new_elementwise_ufuncs_map_onto_numpy() -> None:
    for name in (
        "nextafter",
        "spacing",
        "ldexp",
        "frexp",
        "modf",
        "divmod",
        "degrees",
        "radians",
        "bitwise_count",
    ):
        op = OpKind(name)
        assert op.group is OpGroup.ELEMENTWISE and UFUNC_OPS[getattr(np, name)] is op
    # ldexp's loops mix a float and an int operand: not a loop the kernels call
    assert not OpKind.LDEXP.kernel_loop
    assert all(
        t.split("->")[0] in ("fi", "fl", "ei", "el", "di", "dl", "gi", "gl", "fq", "dq", "eq", "gq")
        for t in np.ldexp.types
    )


def test_ufunc_at_is_a_fresh_indexing_op() -> None:
    op = OpKind.UFUNC_AT
    assert op.group is OpGroup.INDEXING and op.fresh and not op.may_alias


def test_fresh_ops_never_return_a_view() -> None:
    x = np.arange(6.0).reshape(2, 3)
    fresh = {
        OpKind.COPY: lambda: np.copy(x),
        OpKind.CONCATENATE: lambda: np.concatenate([x, x]),
        OpKind.STACK: lambda: np.stack([x, x]),
    }
    for op, make in fresh.items():
        assert op.fresh and not op.may_alias and op not in VIEW_OPS
        assert not np.shares_memory(make(), x)
    views = {
        OpKind.RESHAPE: x.reshape(3, 2),
        OpKind.TRANSPOSE: x.T,
        OpKind.GETITEM: x[1:],
        OpKind.EXPAND_DIMS: np.expand_dims(x, 0),
    }
    for op, view in views.items():
        assert op.may_alias and op.passes_through and op in VIEW_OPS
        assert np.shares_memory(view, x)


def test_sources_and_state_alias_but_do_not_pass_through() -> None:
    for op in (OpKind.PLACEHOLDER, OpKind.CONSTANT, OpKind.READ_VARIABLE):
        assert op.may_alias and not op.passes_through
    for op in (OpKind.ADD, OpKind.SUM, OpKind.MATMUL):
        assert not op.may_alias
