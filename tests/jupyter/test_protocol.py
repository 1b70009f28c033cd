"""The kernel <-> lab protocol module: builders, kernel-message checks, and the
validation of untrusted frontend messages."""

import ast
import copy
import json
import logging
import re
import sys
from pathlib import Path

import pytest

from kernel_ext.jupyter import protocol as p


def make_function(fid: str = "f1", name: str = "f", cost_ms: float = 12.5) -> p.FunctionInfo:
    return {
        "id": fid,
        "name": name,
        "cell": "[3]",
        "counters": {
            "calls": 5,
            "traces": 2,
            "cache_hits": 3,
            "trace_ms": 10.0,
            "compile_ms": 2.5,
            "last_run_us": 41.0,
        },
        "signatures": [
            {
                "id": "0",
                "inputs": "x: float32[2]",
                "outputs": "float32[2]",
                "last_used": False,
                "nodes_traced": 4,
                "nodes_optimised": 2,
                "backend": "numpy",
            },
            {
                "id": "1",
                "inputs": "x: float32[3]",
                "outputs": "float32[3]",
                "last_used": True,
                "nodes_traced": 4,
                "nodes_optimised": 2,
                "backend": "numba_cpu",
            },
        ],
        "retraces": [
            {
                "trace": 2,
                "cause": "shape",
                "diffs": [{"argument": "x", "old": "float32[2]", "new": "float32[3]"}],
                "cost_ms": 6.0,
                "fix": '%%tffunction --input-signature "x: float32[None]"',
                "call_site": "cell [4], line 1",
            }
        ],
        "cost_ms": cost_ms,
    }


def make_graph() -> p.GraphPayload:
    return {
        "nodes": [
            {"id": "n0", "op": "placeholder", "label": "x", "shape": "[2]", "dtype": "float32"},
            {
                "id": "n1",
                "op": "tanh",
                "label": "tanh",
                "shape": "[2]",
                "dtype": "float32",
                "segment": "s0",
            },
        ],
        "edges": [{"source": "n0", "target": "n1"}],
        "segments": [{"id": "s0", "backend": "numba_cpu", "label": "elementwise chain"}],
    }


# ---------------------------------------------------------------- constants


def test_constants_match_the_contract() -> None:
    assert p.COMM_TARGET == "kernel_ext.inspector"
    assert p.PROTOCOL_VERSION == 1


def test_module_imports_only_the_standard_library() -> None:
    # protocol.py must stay importable without IPython/comm/ipywidgets, so the
    # engine's tests and tools can use it on their own.
    tree = ast.parse(Path(p.__file__).read_text())
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports"
            imported.add((node.module or "").split(".")[0])
    assert imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


def test_typescript_twin_uses_the_same_constants() -> None:
    ts = Path(__file__).resolve().parents[2] / "labextension" / "src" / "protocol.ts"
    if not ts.exists():
        pytest.skip("labextension sources not present")
    text = ts.read_text()
    assert f"PROTOCOL_VERSION = {p.PROTOCOL_VERSION};" in text
    assert f"COMM_TARGET = '{p.COMM_TARGET}';" in text
    assert f"MAX_ID_LENGTH = {p.MAX_ID_LENGTH};" in text
    formats = ", ".join(f"'{f}'" for f in p.EXPORT_FORMATS)
    assert f"EXPORT_FORMATS = [{formats}] as const;" in text


# ---------------------------------------------------------------- builders


def test_builders_produce_valid_json_messages() -> None:
    messages = [
        p.snapshot_message([make_function()]),
        p.update_message([make_function()], removed=["gone"]),
        p.graph_message("f1", "0", make_graph()),
        p.error_message("no such signature"),
        p.export_message("f1", "onnx", "/tmp/f.onnx", True, "wrote an ONNX model"),
    ]
    for msg in messages:
        assert msg["protocol_version"] == p.PROTOCOL_VERSION
        assert p.check_kernel_message(msg) == []
        # The comm sends JSON: the message must round-trip unchanged.
        assert json.loads(json.dumps(msg, allow_nan=False)) == msg


def test_graph_segment_is_optional() -> None:
    graph = make_graph()
    del graph["segments"]
    del graph["nodes"][1]["segment"]
    assert p.check_kernel_message(p.graph_message("f1", "0", graph)) == []


def test_nullable_fields_accept_null() -> None:
    fn = make_function()
    fn["cell"] = None
    fn["counters"]["last_run_us"] = None
    fn["retraces"][0]["fix"] = None
    fn["retraces"][0]["call_site"] = None
    assert p.check_kernel_message(p.snapshot_message([fn])) == []


# ---------------------------------------------------------------- kernel checks


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda m: m.pop("functions"), "message.functions: missing"),
        (lambda m: m.update(type="bogus"), "unknown kernel message type"),
        (lambda m: m.update(protocol_version=2), "protocol_version"),
        (lambda m: m["functions"][0].update(name=3), "functions[0].name: expected a string"),
        (lambda m: m["functions"][0]["counters"].update(calls=True), "expected an integer"),
        (lambda m: m["functions"][0]["counters"].update(calls=1.5), "expected an integer"),
        (lambda m: m["functions"][0].update(cost_ms=float("nan")), "finite"),
        (lambda m: m["functions"][0].update(cost_ms="1"), "expected a number"),
        (lambda m: m["functions"][0].update(signatures={}), "expected a list"),
        (
            lambda m: m["functions"][0]["signatures"][0].update(last_used=True),
            "2 marked last_used",
        ),
        (lambda m: m["functions"].append(make_function()), "duplicate 'f1'"),
        (lambda m: m["functions"][0]["signatures"][1].update(id="0"), "duplicate ids"),
        (lambda m: m["functions"][0]["retraces"][0]["diffs"].append("x"), "expected an object"),
    ],
)
def test_check_kernel_message_reports_departures(mutate, expected) -> None:
    msg = p.snapshot_message([make_function()])
    mutate(msg)
    problems = p.check_kernel_message(msg)
    assert any(expected in problem for problem in problems), problems


def test_check_kernel_message_rejects_non_objects() -> None:
    assert p.check_kernel_message([]) != []
    assert p.check_kernel_message(None) != []


def test_extra_fields_are_allowed_for_forward_compatibility() -> None:
    msg = p.snapshot_message([make_function()])
    msg["functions"][0]["future_field"] = {"anything": 1}  # type: ignore[typeddict-unknown-key]
    assert p.check_kernel_message(msg) == []


# ---------------------------------------------------------------- frontend messages


def test_valid_frontend_messages_are_normalised() -> None:
    assert p.validate_frontend_message({"type": "request_snapshot", "protocol_version": 1}) == {
        "type": "request_snapshot",
        "protocol_version": 1,
    }
    raw = {
        "type": "request_graph",
        "protocol_version": 1,
        "function": "f1",
        "signature": "0",
        "__class__": "x",
        "code": "import os",
    }
    validated = p.validate_frontend_message(raw)
    # Only the known fields survive; the input is not modified.
    assert validated == {
        "type": "request_graph",
        "protocol_version": 1,
        "function": "f1",
        "signature": "0",
    }
    assert validated is not raw
    assert "code" in raw


MALFORMED = [
    None,
    "request_snapshot",
    ["request_snapshot"],
    {},
    {"type": "request_snapshot"},
    {"type": "request_snapshot", "protocol_version": "1"},
    {"type": "request_snapshot", "protocol_version": True},
    {"type": "request_snapshot", "protocol_version": 2},
    {"type": "execute", "protocol_version": 1, "code": "1/0"},
    {"type": "snapshot", "protocol_version": 1, "functions": []},  # kernel->lab type
    {"type": ["request_graph"], "protocol_version": 1},
    {"type": "request_graph", "protocol_version": 1, "function": "f1"},
    {"type": "request_graph", "protocol_version": 1, "function": 1, "signature": "0"},
    {"type": "request_graph", "protocol_version": 1, "function": "f1", "signature": None},
    {"type": "request_graph", "protocol_version": 1, "function": "", "signature": "0"},
    {"type": "request_graph", "protocol_version": 1, "function": "f" * 257, "signature": "0"},
]


@pytest.mark.parametrize("msg", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_frontend_messages_are_ignored_and_logged(msg, caplog) -> None:
    before = copy.deepcopy(msg)
    with caplog.at_level(logging.WARNING, logger=p.__name__):
        assert p.validate_frontend_message(msg) is None
    assert msg == before
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert "ignoring frontend message" in record.getMessage()


def test_rejection_log_does_not_echo_large_payloads(caplog) -> None:
    huge = "<script>" + "x" * 10_000
    with caplog.at_level(logging.WARNING, logger=p.__name__):
        assert p.validate_frontend_message({"type": huge, "protocol_version": 1}) is None
    assert len(caplog.records[0].getMessage()) < 200


def test_id_length_limit_is_inclusive() -> None:
    msg = {
        "type": "request_graph",
        "protocol_version": 1,
        "function": "f" * p.MAX_ID_LENGTH,
        "signature": "0",
    }
    assert p.validate_frontend_message(msg) is not None


# ---------------------------------------------------------------- the contract document


def test_every_example_in_the_contract_is_valid() -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
    if not doc.exists():
        pytest.skip("docs/protocol.md not present")
    blocks = re.findall(r"```json\n(.*?)```", doc.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 6
    for block in blocks:
        msg = json.loads(block)
        if msg["type"].startswith("request_"):
            assert p.validate_frontend_message(msg) == msg
        else:
            assert p.check_kernel_message(msg) == [], block
