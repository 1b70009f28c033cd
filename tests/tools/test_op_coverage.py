"""The op coverage table (docs/op_coverage.md): current, complete, and true to the executors.

Complete: every op has, on every executor, a form or the reason the executor states for having
none. True: the op-level answers (``codegen.kernel_form``, ``whole_graph.compiles``, ...) agree
with what the executors do with real nodes, traced here from NumPy calls.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.backends import codegen, whole_graph
from kernel_ext.backends.dask_backend import graph as dask_graph
from kernel_ext.errors import NonDifferentiableError
from kernel_ext.ir import OpGroup, OpKind
from kernel_ext.onnx import rules as onnx_rules

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def coverage():
    spec = importlib.util.spec_from_file_location("op_coverage", ROOT / "tools" / "op_coverage.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def test_the_doc_is_current(coverage):
    doc = (ROOT / "docs" / "op_coverage.md").read_text()
    assert doc == coverage.render(), "regenerate with: python tools/op_coverage.py"


def test_every_op_has_a_form_or_a_stated_reason_on_every_executor(coverage):
    assert coverage.gaps() == []


def test_an_op_without_a_form_or_a_reason_is_reported(coverage):
    # the completeness check itself: an executor that forgets a reason is caught
    forgetful = coverage.Executor("made up", lambda op: None, lambda op: None)
    missing = coverage.gaps([forgetful])
    assert len(missing) == len(OpKind) and "made up: add" in missing


@pytest.mark.parametrize(
    ("form", "reasons"),
    [
        (lambda op: codegen.kernel_form(op, "cpu"), codegen.KERNEL_FALLBACK_REASONS),
        (lambda op: codegen.kernel_form(op, "cuda"), codegen.cuda_fallback_reasons()),
        (whole_graph.compiles, whole_graph.FALLBACK_REASONS),
        (dask_graph.runs_on_dask, dask_graph.FALLBACK_REASONS),
    ],
    ids=["fused-cpu", "cuda", "whole-graph", "dask"],
)
def test_no_reason_is_kept_for_an_op_that_has_a_form(form, reasons):
    stale = [key for key in reasons if isinstance(key, OpKind) and form(key)]
    assert stale == []
    # a group's reason is for some op of the group that has no form
    idle = [
        key
        for key in reasons
        if isinstance(key, OpGroup)
        and all(form(op) or op in reasons for op in OpKind if op.group is key)
    ]
    assert idle == []


def test_gradient_reasons_are_for_the_ops_that_raise():
    import importlib

    backward = importlib.import_module("kernel_ext.autodiff.backward")
    raising = set(backward.rule_kinds()["error"])
    assert [op for op in backward.NO_GRADIENT_REASONS if isinstance(op, OpKind)] == [
        op for op in backward.NO_GRADIENT_REASONS if op in raising
    ]


def test_onnx_refuses_every_op_it_has_no_rule_for_with_a_reason():
    for op in OpKind:
        if op is not OpKind.PLACEHOLDER:
            assert op in onnx_rules.RULES, op
    assert onnx_rules.refusal_reason(OpKind.ADD) is None
    assert "factorisation" in onnx_rules.refusal_reason(OpKind.CHOLESKY)


def _samples(ufunc: np.ufunc) -> list[tuple[np.ndarray, ...]]:
    """Operands of a few dtypes for ``ufunc`` (NumPy must have a loop for them)."""
    values = {
        "f8": np.linspace(0.1, 0.9, 4),
        "f4": np.linspace(0.1, 0.9, 4, dtype=np.float32),
        "i8": np.arange(1, 5, dtype=np.int64),
        "u1": np.arange(1, 5, dtype=np.uint8),
        "b": np.array([True, False, True, True]),
    }
    out = []
    for x in values.values():
        args = (x,) * ufunc.nin
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                ufunc(*args)
        except TypeError:
            continue  # no loop for this dtype
        out.append(args)
    return out


ELEMENTWISE_UFUNC_OPS = [
    op for op in OpKind if op.group is OpGroup.ELEMENTWISE and op.ufunc is not None
]


@pytest.mark.parametrize("op", ELEMENTWISE_UFUNC_OPS, ids=lambda op: op.value)
def test_kernel_form_agrees_with_the_kernels_lowering_of_traced_nodes(op):
    compiled = {"cpu": False, "cuda": False}
    for args in _samples(op.ufunc):
        fn = kx.function(lambda *a, u=op.ufunc: u(*a), backend="numpy")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = fn.get_concrete_function(*args).graph
        nodes = [n for n in graph.nodes if n.op is op]
        for node in nodes:
            for target in compiled:
                if codegen.can_compile(node, target):
                    compiled[target] = True
                    # a node that compiles: its op has a form, and the whole graph has one
                    assert codegen.kernel_form(op, target), (op, target, node.dtype)
                    assert whole_graph.compiles(op)
    if codegen.kernel_form(op, "cpu") and op is not OpKind.POSITIVE:  # (traced as a copy)
        # a form no sample dtype reaches would be a form in name only (on CUDA, integer
        # templates of float functions such as floor's are reached by graphs the optimiser
        # has not simplified, so only the CPU is held to this)
        assert compiled["cpu"], f"{op.value}: a CPU kernel form, but no sample node compiles"


def test_cuda_forms_of_float_functions_are_the_device_math_ones():
    assert codegen.kernel_form(OpKind.TANH, "cuda") and codegen.kernel_form(OpKind.TANH, "cpu")
    assert not codegen.kernel_form(OpKind.ARCTAN2, "cuda")
    assert not codegen.kernel_form(OpKind.SIGNBIT, "cuda")  # an integer template, never used
    assert codegen.kernel_form(OpKind.FLOOR_DIVIDE, "cuda")  # integers inline, floats on host


def test_the_dask_refusal_and_the_gradient_error_give_the_tables_reasons():
    pytest.importorskip("dask")
    import dask.array as da

    x = da.from_array(np.eye(3) + 1.0, chunks=2)
    with pytest.raises(Exception, match="no blockwise form here") as raised:
        kx.function(lambda a: np.linalg.inv(a), backend="dask")(x)
    assert "Fix:" in str(raised.value)

    def loss(v):
        return np.sum(np.real(np.fft.fft(v)))

    with pytest.raises(NonDifferentiableError, match="gradients are real only"):
        kx.grad(loss)(np.linspace(0.0, 1.0, 4))
