"""FunctionType: binding calls to parameters, input_signature conformance, signature text."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext import errors
from kernel_ext.engine import explain
from kernel_ext.engine.binding import FunctionType

_SPEC = kx.TensorSpec([None], np.float32)
_SIGNATURE_TAIL = (
    "but the input_signature expects TensorSpec(shape=(None,), dtype=np.float32, name=None). "
    "Signature: (TensorSpec(shape=(None,), dtype=np.float32, name=None)). Fix: pass a value of "
    "that dtype and shape (e.g. np.asarray(x, dtype=...)), or widen the input_signature (None "
    "for dimensions that vary, shape=None for any rank)."
)


def scaled(x, scale=2.0, *, mode="sum"):
    return x


def affine(x, scale=2.0):
    return x * scale


def test_bind_fills_defaults_in_parameter_order():
    ft = FunctionType(scaled, "scaled")
    assert ft.names == ["x", "scale", "mode"]
    assert ft.bind((1,), {}) == (1, 2.0, "sum")


def test_bind_places_keywords_by_name():
    ft = FunctionType(scaled, "scaled")
    assert ft.bind((), {"mode": "max", "x": 5, "scale": 3}) == (5, 3, "max")


def test_bind_error_names_the_function():
    ft = FunctionType(scaled, "scaled")
    with pytest.raises(TypeError, match=r"^scaled\(\): missing a required argument: 'x'$"):
        ft.bind((), {})
    with pytest.raises(TypeError, match=r"^scaled\(\): too many positional arguments$"):
        ft.bind((1, 2, 3), {})


def test_bound_method_drops_self():
    class Model:
        def step(self, x, lr=0.1):
            return x

    ft = FunctionType(Model.step, "step", bound_method=True)
    assert ft.names == ["x", "lr"] and ft.all_positional
    assert ft.bind((4,), {}) == (4, 0.1)


def test_keyword_only_parameters_are_not_all_positional():
    assert not FunctionType(scaled, "scaled").all_positional
    assert FunctionType(affine, "affine").all_positional


def test_call_arguments_leave_out_keywords_at_their_default():
    def g(a, *rest, flag=None, **extra):
        return a

    ft = FunctionType(g, "g")
    values = ft.bind((1, 2, 3), {"k": 4})
    assert values == (1, (2, 3), None, {"k": 4})
    assert ft.call_arguments(values) == ([1, 2, 3], {"k": 4})
    assert ft.call_arguments(ft.bind((1,), {"flag": True})) == ([1], {"flag": True})


def test_bind_concrete_fills_free_parameters_positionally():
    def evaluate(model, x, bias):
        return x

    ft = FunctionType(evaluate, "evaluate")
    statics = {"model": "m", "bias": 0}
    assert ft.bind_concrete((7,), {}, statics, "evaluate") == ("m", 7, 0)
    with pytest.raises(
        TypeError,
        match=r"^evaluate\(\): this concrete function takes 1 "
        r"positional argument\(s\) \(x\), got 2$",
    ):
        ft.bind_concrete((1, 2), {}, statics, "evaluate")


def test_trace_types_and_signature_text():
    ft = FunctionType(affine, "affine")
    types_ = ft.trace_types((np.zeros(2, np.float32), 3))
    assert types_ == (kx.TensorSpec([2], np.float32), explain.Literal(3))
    assert ft.signature_text(types_) == "x: float32[2], scale: 3"


def test_structured_signature_names_specs_after_parameters():
    ft = FunctionType(scaled, "scaled")
    args, kwargs = ft.structured_signature(ft.trace_types((np.zeros(2, np.float32), 3, "m")))
    assert args == (kx.TensorSpec([2], np.float32, "x"), explain.Literal(3))
    assert args[0].name == "x"
    assert kwargs == {"mode": explain.Literal("m")}
    assert [k for _, k, _ in ft.named_types(ft.trace_types((1, 2, 3)))] == [
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    ]


def test_conform_converts_python_numbers_and_reports_it():
    ft = FunctionType(affine, "affine", input_signature=[_SPEC])
    (x, scale), converted = ft.conform(([1.5, 2.5], 3.0))
    assert converted and x.dtype == np.float32 and x.tolist() == [1.5, 2.5] and scale == 3.0
    same = np.zeros(3, np.float32)
    (y, _), converted = ft.conform((same, 1.0))
    assert y is same and not converted


@pytest.mark.parametrize(
    "value, received",
    [
        (np.zeros(2), "float64[2] (TensorSpec(shape=(2,), dtype=np.float64, name=None))"),
        (
            np.zeros((2, 2), np.float32),
            "float32[2, 2] (TensorSpec(shape=(2, 2), dtype=np.float32, name=None))",
        ),
        ("s", "Literal('s') (Literal('s'))"),
    ],
)
def test_conform_error_shows_the_input_and_the_signature(value, received):
    ft = FunctionType(affine, "affine", input_signature=[_SPEC])
    with pytest.raises(errors.InputSignatureError) as info:
        ft.conform((value, 1.0))
    assert str(info.value) == f"affine(): argument 'x' received {received} {_SIGNATURE_TAIL}"


def test_input_signature_longer_than_the_parameters_is_rejected():
    with pytest.raises(TypeError) as info:
        FunctionType(affine, "affine", input_signature=[_SPEC] * 3)
    assert str(info.value) == (
        "input_signature of 'affine' has 3 entries but the function "
        "takes 2 positional parameters (x, scale)"
    )
    with pytest.raises(TypeError, match=r"must be a list or tuple of kx\.TensorSpec, got dict"):
        FunctionType(affine, "affine", input_signature={"x": _SPEC})


def test_restrict_to_signature_puts_the_signature_first():
    ft = FunctionType(affine, "affine", input_signature=[_SPEC])
    types_ = ft.restrict_to_signature((kx.TensorSpec([4], np.float32), explain.Literal(2)))
    assert types_ == (_SPEC, explain.Literal(2))
    assert ft.signature_values() == (_SPEC, 2.0)
    with pytest.raises(errors.InputSignatureError, match="argument 'x' received float64"):
        ft.restrict_to_signature((kx.TensorSpec([4], np.float64), explain.Literal(2)))


def test_function_and_its_concrete_functions_share_one_function_type():
    fn = kx.function(affine)
    cf = fn.get_concrete_function(np.zeros(2, np.float32))
    assert cf.function_type is fn.function_type
    assert cf.signature_text() == "x: float32[2], scale: 2.0"
    np.testing.assert_array_equal(fn(np.ones(2, np.float32), scale=3), [3.0, 3.0])


def test_configure_sets_strict_and_magic_fixes_fields():
    fn = kx.function(affine)
    assert (fn.strict, fn.magic_fixes) == (False, False)
    explain.configure(fn, strict=True, magic_fixes=True)
    assert (fn.strict, fn.magic_fixes) == (True, True)
    fn.configure(strict=False)
    assert (fn.strict, fn.magic_fixes) == (False, True)
    fn(np.ones(2, np.float32))
    assert fn.retraces[0].magic_fixes
    fn.configure(strict=True)
    with pytest.raises(errors.StrictRetraceError, match="strict function would retrace"):
        fn(np.ones(3, np.float32))
    assert fn.experimental_get_tracing_count() == 1


@pytest.mark.parametrize(
    "entry, where, fix",
    [
        ({1, 2}, "input_signature[0] (parameter 'x')", "frozenset({1, 2})"),
        (set(), "input_signature[0] (parameter 'x')", "frozenset()"),
        ([_SPEC, {3}], "input_signature[0][1] (parameter 'x')", "frozenset({3})"),
        ({"k": {1}}, "input_signature[0]['k'] (parameter 'x')", "frozenset({1})"),
    ],
)
def test_a_set_in_the_input_signature_names_the_entry_its_parameter_and_the_fix(entry, where, fix):
    with pytest.raises(errors.TraceTypeError) as info:
        FunctionType(affine, "affine", input_signature=[entry])
    text = str(info.value)
    assert text.startswith(f"affine(): {where} is a set (")
    assert "kx.TensorSpec(shape, dtype) for an array" in text and f"or {fix} for a" in text


@pytest.mark.parametrize(
    "spec, fix",
    [
        (3, "frozenset(...) or tuple(...) rather than a set"),
        (frozenset({1}), "frozenset(...) or tuple(...) rather than a set"),
        (_SPEC, "an array of that dtype and shape"),
    ],
)
def test_a_set_argument_against_the_signature_is_an_input_signature_error(spec, fix):
    """It raised ``AttributeError: 'WeakRef' object has no attribute '_repr'`` (or ``_hash``):
    the message was built from a WeakRef that was never initialised."""
    ft = FunctionType(affine, "affine", input_signature=[spec])
    with pytest.raises(errors.InputSignatureError) as info:
        ft.conform(({1, 2}, np.ones(2)))
    text = str(info.value)
    assert (
        "argument 'x' received an unhashable set ({1, 2}) but the input_signature "
        f"expects {ft.input_signature[0]!r}"
        in text
        and fix in text
    )
