"""A node's meta in a saved model: saved among its attrs as ``_name``, read back into its meta,
and only the notes a node keeps, of their types, accepted from a file."""

from __future__ import annotations

import numpy as np
import pytest

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
    assert all(not n.attrs for n in loaded.nodes if n.op is not OpKind.PLACEHOLDER)


@pytest.mark.parametrize(
    ("key", "value"),
    [("_stacked", True), ("_where", 3), ("_backward", "yes"), ("_anything", True)],
)
def test_a_file_may_hold_only_the_notes_a_node_keeps(key, value):
    raw = Encoder(lambda a: "", lambda v: 0).graph(_graph())
    raw["nodes"][-1]["attrs"][key] = value
    with pytest.raises(SavedModelFormatError, match="not a note a node keeps"):
        _decoded(raw)
