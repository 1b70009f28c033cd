"""A node's meta in a saved model: saved among its attrs as ``_name``, read back into its meta,
and only the notes a node keeps, of their types, accepted from a file."""

from __future__ import annotations

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.ir import Graph, OpKind
from kernel_ext.saved_model import SavedModelFormatError
from kernel_ext.saved_model.codec import Decoder, Encoder


def _graph() -> Graph:
    g = Graph("noted")
    x = g.placeholder("x", (3,), np.float64, path=(("arg", 0),))
    doubled = g.create_node(OpKind.MULTIPLY, (x, 2.0), meta={"backward": True})
    g.outputs = [g.create_node(OpKind.ADD, (doubled, x), meta={"where": "cell [1], line 2"})]
    return g


def _decoded(raw: dict) -> Graph:
    return Decoder("model", lambda name: np.zeros(0), []).graph(raw)


def test_notes_are_saved_among_the_attrs_and_read_back_into_the_meta():
    raw = Encoder(lambda a: "", lambda v: 0).graph(_graph())
    attrs = [node["attrs"] for node in raw["nodes"]]
    assert {"_backward": True} in attrs and {"_where": "cell [1], line 2"} in attrs
    loaded = _decoded(raw)
    metas = {n.op: n.meta for n in loaded.nodes}
    assert metas[OpKind.MULTIPLY] == {"backward": True}
    assert metas[OpKind.ADD] == {"where": "cell [1], line 2"}
    assert all(not n.params for n in loaded.nodes if n.op is not OpKind.PLACEHOLDER)


@pytest.mark.parametrize(
    ("key", "value"),
    [("_stacked", True), ("_where", 3), ("_backward", "yes"), ("_anything", True)],
)
def test_a_file_may_hold_only_the_notes_a_node_keeps(key, value):
    raw = Encoder(lambda a: "", lambda v: 0).graph(_graph())
    raw["nodes"][-1]["attrs"][key] = value
    with pytest.raises(SavedModelFormatError, match="not a note a node keeps"):
        _decoded(raw)


def test_a_loop_a_gradient_restacked_is_refused_with_a_fix_that_fits(tmp_path):
    def f(x, n):
        y = x
        for _ in range(n):
            y = np.sin(y) * x
        return np.sum(y)

    grad = kx.function(kx.grad(f))
    grad(np.array([0.3, -0.5]), np.int64(2))
    with pytest.raises(kx.saved_model.SaveError, match="a gradient rewrote") as err:
        kx.saved_model.save(grad, tmp_path / "m")
    assert "Fix: save the function the gradient is taken of" in str(err.value)
    assert not (tmp_path / "m").exists() or not any((tmp_path / "m").iterdir())
    forward = kx.function(f)  # what the fix says: the function itself, its loop included
    forward(np.array([0.3, -0.5]), np.int64(2))
    kx.saved_model.save(forward, tmp_path / "forward")
    loaded = kx.saved_model.load(tmp_path / "forward")
    x = np.array([0.1, 0.7])
    assert loaded(x, np.int64(3)) == f(x, 3)


@pytest.mark.parametrize("index", [0, 1])  # a placeholder (no shape rule runs) and an op
def test_a_parameter_the_ops_class_lacks_is_a_format_error_naming_it(index):
    raw = Encoder(lambda a: "", lambda v: 0).graph(_graph())
    raw["nodes"][index]["attrs"]["bogus"] = 1
    with pytest.raises(SavedModelFormatError, match="no field 'bogus'"):
        _decoded(raw)
