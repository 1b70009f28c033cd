"""The op-table facts of ``numpy_call`` and ``random_call``, and their IR rules.

As ``test_ops.py`` does for every op: what the table says of the two opaque-call ops is true of
what the optimiser, the fusion partitioner, the verifier and the reference interpreter do.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernel_ext.ir import (
    OPAQUE_CALLS,
    VIEW_OPS,
    AbstractValue,
    CallTemplate,
    Graph,
    GraphLintError,
    OpaqueResultError,
    Operand,
    OpGroup,
    OpKind,
    call_name,
    interpret,
    lint,
)
from kernel_ext.ir.calls import check_result, flatten_result
from kernel_ext.passes import fold_constants, prune_dead_code
from kernel_ext.passes.cse import eliminate_common_subexpressions
from kernel_ext.passes.fusion import default_can_fuse
from kernel_ext.passes.rewrite import is_pure


def _call_graph(fn, template, out_aval, op=OpKind.NUMPY_CALL, shape=(4,)):
    g = Graph("g")
    x = g.placeholder("x", shape, np.float64)
    node = g.create_node(
        op, (x,), {"fn": fn, "template": template, "out_aval": out_aval}, name="call"
    )
    return g, x, node


def test_numpy_call_is_the_opaque_group_and_may_alias():
    assert OpKind.NUMPY_CALL.group is OpGroup.OPAQUE
    assert OpKind.NUMPY_CALL.may_alias and OpKind.NUMPY_CALL.passes_through
    assert OpKind.NUMPY_CALL not in VIEW_OPS
    assert {OpKind.NUMPY_CALL, OpKind.RANDOM_CALL} == OPAQUE_CALLS


def test_random_call_is_stateful():
    assert OpKind.RANDOM_CALL.group is OpGroup.STATEFUL and OpKind.RANDOM_CALL.is_stateful


def test_type_names_in_graph_def():
    assert OpKind.NUMPY_CALL.type_name == "NumpyCall"
    assert OpKind.RANDOM_CALL.type_name == "RandomCall"


def test_single_result_numpy_call_is_pure_but_never_fused():
    g, x, node = _call_graph(
        np.roll, CallTemplate((Operand(0), 1), ()), AbstractValue((4,), np.dtype(np.float64))
    )
    assert is_pure(node) and not default_can_fuse(node)


def test_multi_result_numpy_call_is_not_pure_and_lints():
    out = (AbstractValue((None,), np.dtype(np.float64)), AbstractValue((None,), np.dtype(np.int64)))
    g, x, node = _call_graph(
        np.unique, CallTemplate((Operand(0),), (("return_counts", True),)), out
    )
    a = g.create_node(OpKind.GET_OUTPUT, (node,), {"index": 0})
    g.outputs = [a]
    lint(g)
    assert not is_pure(node)


def test_lint_rejects_a_tuple_aval_of_non_values():
    g, x, node = _call_graph(np.unique, CallTemplate((Operand(0),), ()), (1, 2))
    with pytest.raises(GraphLintError, match="multi-output call"):
        lint(g)


def test_random_call_is_never_pruned_folded_or_merged():
    g = Graph("g")
    x = g.placeholder("x", (2,), np.float64)
    state = np.random.RandomState(0)
    attrs = {
        "fn": state.rand,
        "template": CallTemplate((2,), ()),
        "out_aval": AbstractValue((2,), np.dtype(np.float64)),
    }
    a = g.create_node(OpKind.RANDOM_CALL, (), dict(attrs))
    g.create_node(OpKind.RANDOM_CALL, (), dict(attrs))  # unused
    g.outputs = [g.create_node(OpKind.ADD, (x, a))]
    for p in (prune_dead_code, fold_constants, eliminate_common_subexpressions):
        g2, _ = p(g)
        assert sum(n.op is OpKind.RANDOM_CALL for n in g2.nodes) == 2


def test_numpy_call_on_constants_folds_and_equal_calls_merge():
    g = Graph("g")
    c = g.constant(np.arange(3.0))
    attrs = {
        "fn": np.roll,
        "template": CallTemplate((Operand(0), 1), ()),
        "out_aval": AbstractValue((3,), np.dtype(np.float64)),
    }
    a = g.create_node(OpKind.NUMPY_CALL, (c,), dict(attrs))
    b = g.create_node(OpKind.NUMPY_CALL, (c,), dict(attrs), meta={"where": "elsewhere"})
    g.outputs = [a, b]
    merged, changed = eliminate_common_subexpressions(g)
    assert changed and sum(n.op is OpKind.NUMPY_CALL for n in merged.nodes) == 1
    folded, changed = fold_constants(g)
    assert changed and not any(n.op is OpKind.NUMPY_CALL for n in folded.nodes)
    np.testing.assert_array_equal(interpret(folded, [])[0], np.roll(np.arange(3.0), 1))


def test_interpreter_runs_the_call_on_run_time_values():
    g, x, node = _call_graph(
        np.cumsum, CallTemplate((Operand(0),), ()), AbstractValue((4,), np.dtype(np.float64))
    )
    g.outputs = [node]
    (out,) = interpret(g, [np.arange(4.0)])
    np.testing.assert_array_equal(out, np.cumsum(np.arange(4.0)))


def test_interpreter_checks_the_result_against_the_trace():
    g, x, node = _call_graph(
        np.unique, CallTemplate((Operand(0),), ()), AbstractValue((4,), np.dtype(np.float64))
    )
    g.outputs = [node]
    with pytest.raises(
        OpaqueResultError,
        match=r"float64\[2\] at run time, but its trace "
        r"found float64\[4\]",
    ):
        interpret(g, [np.array([1.0, 1.0, 2.0, 2.0])])


def test_check_result_structure_and_python_numbers():
    aval = AbstractValue((), np.dtype(np.float64))
    assert type(check_result(1.5, aval, "f")) is np.float64
    with pytest.raises(OpaqueResultError, match="number or kind of results"):
        check_result((np.ones(1), np.ones(1)), aval, "f")
    with pytest.raises(OpaqueResultError):
        check_result("text", aval, "f")
    assert flatten_result(("a", np.ones(1))) is None


def test_templates_fill_nested_slots():
    t = CallTemplate(([Operand(0), {"k": Operand(1)}], 3), (("axis", Operand(1)),))
    args, kwargs = t.fill(["A", "B"])
    assert args == (["A", {"k": "B"}], 3) and kwargs == {"axis": "B"}


@pytest.mark.parametrize(
    "fn, name",
    [
        (np.einsum, "np.einsum"),
        (np.linalg.norm, "np.linalg.norm"),
        (np.fft.rfft, "np.fft.rfft"),
        (np.maximum.accumulate, "np.maximum.accumulate"),
        (np.random.rand, "np.random.rand"),
        (np.random.default_rng(0).normal, "Generator.normal"),
    ],
)
def test_call_names(fn, name):
    assert call_name(fn) == name


def test_printer_and_graph_def_name_the_function_not_its_address():
    g, x, node = _call_graph(
        np.roll,
        CallTemplate((Operand(0), 1), (("axis", 0),)),
        AbstractValue((4,), np.dtype(np.float64)),
    )
    g.outputs = [node]
    text = str(g)
    assert "%call = numpy_call(%x, fn=np.roll, template=($0, 1, axis=0)) : float64[4]" in text
    gd = str(g.as_graph_def())
    assert 'op: "NumpyCall"' in gd and 's: "np.roll"' in gd and "0x" not in gd + text
    assert "np.roll" in g.to_dot()


def test_a_template_of_only_immutable_arguments_is_constant_and_filled_once():
    from kernel_ext.ir.calls import CallTemplate, Operand

    assert CallTemplate((0.0, 0.05), (("size", (30,)),)).constant()
    assert CallTemplate((np.float32(1.5), None, "x"), ()).constant()
    # a slot, a list (the call could change it), an array: filled at every call
    assert not CallTemplate((Operand(0),), ()).constant()
    assert not CallTemplate(([-1, 1],), (("size", 3),)).constant()
    assert not CallTemplate((np.zeros(2),), ()).constant()
    assert not CallTemplate((), (("p", [0.5, 0.5]),)).constant()
