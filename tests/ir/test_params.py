"""Typed op parameters: one class per op, immutable values, a mapping over what was given."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.ir import PARAMS_OF, Graph, OpKind
from kernel_ext.ir.params import MISSING, Params, make_params

K = OpKind


def test_every_op_has_a_parameter_class():
    assert set(PARAMS_OF) == set(OpKind)
    assert all(issubclass(cls, Params) for cls in PARAMS_OF.values())


def test_a_field_not_given_reads_as_its_default_but_is_not_in_the_mapping():
    p = make_params(K.SUM, {"axis": 1})
    assert p.axis == 1 and p.keepdims is False and p.dtype is None
    assert dict(p) == {"axis": 1} and "keepdims" not in p and len(p) == 1
    assert p.get("keepdims", "absent") == "absent"
    with pytest.raises(KeyError):
        p["keepdims"]


def test_a_field_numpy_tells_apart_from_its_default_is_missing_until_given():
    p = make_params(K.UFUNC_REDUCE, {"ufunc": np.add, "axis": 0})
    assert p.initial is MISSING and "initial" not in p
    given_none = p.replace(initial=None)
    assert given_none.initial is None and "initial" in given_none
    assert make_params(K.PAD, {"pad_width": ((1, 1),)}).constant_values is MISSING


def test_the_mapping_keeps_the_order_given_and_equals_the_same_dict():
    p = make_params(K.SVD, {"hermitian": False, "full_matrices": True, "compute_uv": False})
    assert list(p) == ["hermitian", "full_matrices", "compute_uv"]
    assert p == {"compute_uv": False, "full_matrices": True, "hermitian": False}
    assert p != {"compute_uv": False}


def test_values_are_immutable_and_replace_makes_a_new_one():
    p = make_params(K.TRANSPOSE, {"axes": (1, 0)})
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.axes = (0, 1)  # type: ignore[misc]
    q = p.replace(axes=(0, 1))
    assert p.axes == (1, 0) and q.axes == (0, 1) and type(q) is type(p)


def test_an_unknown_parameter_names_the_op_the_field_and_the_fields_it_has():
    with pytest.raises(TypeError, match=r"op 'sum'.*no field 'bogus'.*\['axis', 'dtype'"):
        make_params(K.SUM, {"axis": None, "bogus": 1})


def test_ops_without_parameters_share_one_empty_value():
    a, b = make_params(K.ADD, {}), make_params(K.MATMUL, {})
    assert not a and not b and a is type(a).EMPTY


def test_kwargs_are_the_given_fields_less_the_excluded():
    p = make_params(K.UFUNC_REDUCE, {"ufunc": np.add, "axis": 0, "keepdims": True})
    assert p.kwargs("ufunc") == {"axis": 0, "keepdims": True}


def test_values_survive_pickling_and_copying_with_what_was_given():
    p = make_params(K.QUANTILE, {"q": 0.5, "axis": None, "keepdims": False})
    for q in (pickle.loads(pickle.dumps(p)), copy.deepcopy(p), copy.copy(p)):
        assert type(q) is type(p) and list(q) == list(p) and q == p and q.method == "linear"
    assert pickle.loads(pickle.dumps(MISSING)) is MISSING


def test_a_node_reads_a_new_mapping_into_its_class_and_copies_share_the_value():
    g = Graph("f")
    x = g.placeholder("x", (2, 3), np.float32)
    node = g.create_node(K.SUM, (x,), {"axis": 0, "keepdims": False})
    assert type(node.params).__name__ == "ReduceParams"
    node.params = node.params.replace(keepdims=True)
    assert node.params.keepdims is True and list(node.params) == ["axis", "keepdims"]
    h = Graph("h")
    copied = h.append_copy(node, (h.placeholder("x", (2, 3), np.float32),))
    assert copied.params is node.params


def test_traced_nodes_carry_their_ops_classes():
    @kx.function
    def f(x):
        return np.cumsum(np.sort(x, axis=0), axis=1).sum(axis=0, keepdims=True)

    graph = f.get_concrete_function(np.ones((3, 4))).graph
    for node in graph.nodes:
        assert type(node.params) is PARAMS_OF[node.op], node
    assert {n.op for n in graph.nodes} >= {K.SORT, K.CUMSUM, K.SUM}
