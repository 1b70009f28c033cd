"""The sidebar's graph payload says which line made each node, and holds loop and branch bodies.

``GraphNode.line`` is where the line is (``cell [5], line 7`` in a notebook, ``file.py, line 7``
elsewhere), ``GraphNode.source`` its text; the ops of a cond's branches and a while's body
follow the control-flow node with ``inside`` naming it, so the views can draw a loop as one box
holding its body and group any graph by source line.
"""

from __future__ import annotations

import inspect
import os

import numpy as np

import kernel_ext as kx
from kernel_ext.jupyter import inspector
from kernel_ext.jupyter import protocol as p


def _line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    (hit,) = [first + i for i, line in enumerate(lines) if text in line]
    return hit


def body(x, n):
    h = np.maximum(x * 2.0 + 1.0, 0)
    i = 0
    while i < n:
        h = h + np.sin(h)
        i += 1
    return h.sum()


def test_graph_nodes_carry_their_source_line_and_loop_bodies_sit_inside_the_loop():
    fn = kx.function(body, backend="numpy")
    x = np.linspace(-2.0, 2.0, 4)
    got = fn(x, np.int64(3))
    want = body(x, np.int64(3))
    assert got == want and type(got) is type(want)
    payload = inspector.graph_payload(fn.concrete_functions[0])
    assert p.check_kernel_message(p.graph_message("f", "1", payload)) == []
    nodes = {n["id"]: n for n in payload["nodes"]}
    file = os.path.basename(inspect.getsourcefile(body))
    first = _line_of(body, "h = np.maximum")
    (maximum,) = [n for n in nodes.values() if n["op"] == "maximum"]
    assert maximum["line"] == f"{file}, line {first}"
    assert maximum["source"] == "h = np.maximum(x * 2.0 + 1.0, 0)"
    assert all(n.get("line") is None for n in nodes.values() if n["op"] == "placeholder")
    (loop,) = [n for n in nodes.values() if n["op"] == "while"]
    assert loop["line"] == f"{file}, line {_line_of(body, 'while i < n')}"
    # the loop's body ops are nodes inside it, each with its own line; no body parameters
    inside = [n for n in nodes.values() if n.get("inside") == loop["id"]]
    assert {n["op"] for n in inside} >= {"sin", "add", "less"}
    assert all(n["op"] != "placeholder" for n in inside)
    (sin,) = [n for n in inside if n["op"] == "sin"]
    assert sin["line"] == f"{file}, line {_line_of(body, 'h = h + np.sin(h)')}"
    # edges join nodes of one graph: never a body op to a node outside its body
    where = {n["id"]: n.get("inside") for n in nodes.values()}
    assert all(where[e["source"]] == where[e["target"]] for e in payload["edges"])
    assert any(where[e["target"]] == loop["id"] for e in payload["edges"])
    # the function's own nodes are listed as before, in program order, first of their ids
    top = [n for n in payload["nodes"] if n.get("inside") is None]
    assert [n["op"] for n in top] == [
        op.op.value for op in fn.concrete_functions[0].graph.get_operations()
    ]
