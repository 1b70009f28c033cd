"""The kernel side of the sidebar (``kernel_ext.jupyter.inspector``).

Most tests run a real IPython shell and the real ``comm`` comm manager, with one thing
faked: the comm class records what it would publish on IOPub instead of needing a kernel.
A frontend is simulated by feeding the manager the ``comm_open`` / ``comm_msg`` /
``comm_close`` messages a browser would send.  One test at the end starts a real kernel.
"""

from __future__ import annotations

import gc
import importlib.util
import logging
import re
import sys
import time
import uuid
from types import SimpleNamespace
from typing import Any

import comm
import numpy as np
import pytest
from comm.base_comm import BaseComm, CommManager
from IPython.core.interactiveshell import InteractiveShell

import kernel_ext as kx
from kernel_ext.backends.compiler import wait_for_kernels
from kernel_ext.jupyter import inspector
from kernel_ext.jupyter import protocol as p
from kernel_ext.jupyter.activity import activity

XSS = "<img src=x onerror=alert(1)>"


class RecordingComm(BaseComm):
    """A comm that keeps what it publishes: ``(msg_type, data)`` pairs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.published: list[tuple[str, dict]] = []
        super().__init__(*args, **kwargs)

    def publish_msg(
        self,
        msg_type: str,
        data: Any = None,
        metadata: Any = None,
        buffers: Any = None,
        **keys: Any,
    ) -> None:
        self.published.append((msg_type, data))

    def sent(self) -> list[dict]:
        """The data of every ``comm_msg`` sent so far."""
        return [data for kind, data in self.published if kind == "comm_msg"]


class FakeFrontend:
    """Plays the browser's part against the comm manager."""

    def __init__(self, manager: CommManager) -> None:
        self.manager = manager

    def open(self, data: Any = None) -> RecordingComm:
        """The comm opened (None when the kernel closed it at once: the manager forgot it)."""
        comm_id = uuid.uuid4().hex
        if data is None:
            data = {"type": "request_snapshot", "protocol_version": p.PROTOCOL_VERSION}
        self.manager.comm_open(
            None,
            None,
            {"content": {"comm_id": comm_id, "target_name": p.COMM_TARGET, "data": data}},
        )
        return self.manager.comms.get(comm_id)

    def send(self, channel: RecordingComm, data: Any) -> None:
        self.manager.comm_msg(None, None, {"content": {"comm_id": channel.comm_id, "data": data}})

    def close(self, channel: RecordingComm) -> None:
        self.manager.comm_close(None, None, {"content": {"comm_id": channel.comm_id, "data": {}}})


@pytest.fixture
def manager(monkeypatch: pytest.MonkeyPatch) -> CommManager:
    fresh = CommManager()
    monkeypatch.setattr(comm, "get_comm_manager", lambda: fresh)
    monkeypatch.setattr(comm, "create_comm", lambda *a, **k: RecordingComm(*a, **k))
    return fresh


@pytest.fixture
def shell() -> InteractiveShell:
    return InteractiveShell.instance()


@pytest.fixture
def running(manager: CommManager, shell: InteractiveShell):
    """The inspector started on the shell, without the poll thread (tests flush)."""
    inspector.stop()  # one left running on this shared shell would be reused otherwise
    inspector.start(shell, poll=False)
    yield inspector.current()
    inspector.stop()


@pytest.fixture
def frontend(manager: CommManager) -> FakeFrontend:
    return FakeFrontend(manager)


def ours(message: dict, *functions: Any) -> dict[str, p.FunctionInfo]:
    """The entries of a snapshot/update that describe ``functions`` (other tests' functions
    live in the same process), keyed by name."""
    wanted = {inspector.function_id(f) for f in functions}
    return {f["name"]: f for f in message["functions"] if f["id"] in wanted}


def make_dense() -> Any:
    def dense(x):
        return np.tanh(x * 2.0).sum()

    return kx.function(dense, autograph=False)


def request_graph(function: Any, signature: str) -> dict:
    return {
        "type": "request_graph",
        "protocol_version": p.PROTOCOL_VERSION,
        "function": inspector.function_id(function),
        "signature": signature,
    }


# --------------------------------------------------------------------------------------------
# Connecting
# --------------------------------------------------------------------------------------------


def test_start_opens_an_announcement_comm_with_a_snapshot(running, manager):
    dense = make_dense()
    dense(np.ones(2, np.float32))
    inspector.start(running.shell, poll=False)  # idempotent: the same inspector, no new comm
    assert inspector.current() is running
    announcement = running.announcement
    assert announcement.comm_id in manager.comms, "kept open, so comm_info_request lists it"
    assert p.COMM_TARGET in manager.targets
    ((kind, data),) = announcement.published
    assert kind == "comm_open" and data["type"] == "snapshot"
    assert p.check_kernel_message(data) == []


def test_start_reopens_the_announcement_after_a_frontend_closed_it(running, frontend):
    first = running.announcement
    frontend.close(first)
    assert running.announcement is None
    inspector.start(running.shell, poll=False)
    assert running.announcement is not None and running.announcement is not first


def test_a_frontend_comm_gets_a_snapshot_of_live_functions(running, frontend):
    dense = make_dense()
    dense(np.ones(2, np.float32))
    dense(np.ones(3, np.float32))
    dense(np.ones(3, np.float32))
    channel = frontend.open()
    (snapshot,) = channel.sent()
    assert snapshot["type"] == "snapshot" and p.check_kernel_message(snapshot) == []
    info = ours(snapshot, dense)["dense"]
    assert info["counters"]["calls"] == 3
    assert info["counters"]["traces"] == 2
    assert info["counters"]["cache_hits"] == 1
    assert [s["inputs"] for s in info["signatures"]] == ["x: float32[2]", "x: float32[3]"]
    assert [s["outputs"] for s in info["signatures"]] == ["float32[]", "float32[]"]
    assert [r["cause"] for r in info["retraces"]] == ["first trace", "shape"]
    assert info["retraces"][1]["diffs"] == [
        {"argument": "x", "old": "float32[2]", "new": "float32[3]"}
    ]
    # Copyable code that stops shape retraces (the engine chooses which).
    assert re.search(r"input_signature|reduce_retracing", info["retraces"][1]["fix"])
    assert info["cost_ms"] == pytest.approx(
        info["counters"]["trace_ms"] + info["counters"]["compile_ms"]
    )


def test_request_snapshot_on_an_open_comm_is_answered_on_that_comm(running, frontend):
    channel = frontend.open({"type": "not-a-request"})
    other = frontend.open()
    assert channel.sent() == []
    frontend.send(channel, {"type": "request_snapshot", "protocol_version": 1})
    assert [m["type"] for m in channel.sent()] == ["snapshot"]
    assert [m["type"] for m in other.sent()] == ["snapshot"]


def test_the_last_call_marks_its_signature_as_last_used(running, frontend):
    dense = make_dense()
    dense(np.ones(2, np.float32))
    dense(np.ones(3, np.float32))
    (snapshot,) = frontend.open().sent()
    marks = [s["last_used"] for s in ours(snapshot, dense)["dense"]["signatures"]]
    assert marks == [False, True]


# --------------------------------------------------------------------------------------------
# Graphs
# --------------------------------------------------------------------------------------------


def test_request_graph_answers_with_the_nodes_and_edges_of_that_signature(running, frontend):
    dense = make_dense()
    dense(np.ones(2, np.float32))
    dense(np.ones((2, 3), np.float64))
    channel = frontend.open()
    signature = ours(channel.sent()[0], dense)["dense"]["signatures"][1]["id"]
    frontend.send(channel, request_graph(dense, signature))
    reply = channel.sent()[-1]
    assert reply["type"] == "graph" and p.check_kernel_message(reply) == []
    assert (reply["function"], reply["signature"]) == (inspector.function_id(dense), signature)
    nodes = {n["id"]: n for n in reply["graph"]["nodes"]}
    x = next(n for n in nodes.values() if n["op"] == "placeholder")
    assert (x["label"], x["shape"], x["dtype"]) == ("x", "[2, 3]", "float64")
    total = next(n for n in nodes.values() if n["op"] == "sum")
    assert (total["shape"], total["dtype"]) == ("[]", "float64")
    # Data flows from x through multiply and tanh into sum.
    follow = {e["source"]: e["target"] for e in reply["graph"]["edges"]}
    chain = [x["id"]]
    while chain[-1] in follow:
        chain.append(follow[chain[-1]])
    assert [nodes[n]["op"] for n in chain] == ["placeholder", "multiply", "tanh", "sum"]


def test_a_control_flow_node_is_one_node_with_its_sub_graphs_summarised(running, frontend):
    def clipped(x):
        return kx.cond(x.sum() > 0, lambda: x * 2.0, lambda: -x)

    # The NumPy executor: what is tested here is the payload, not a backend's fusion.
    fn = kx.function(clipped, autograph=False, backend="numpy")
    fn(np.ones(3))
    graph = inspector.graph_payload(fn.concrete_functions[0])
    (cond,) = [n for n in graph["nodes"] if n["op"] == "cond"]
    assert "2 sub-graphs" in cond["label"]
    assert p.check_kernel_message(p.graph_message("f", "1", graph)) == []


def test_fused_segments_reported_by_the_executable_mark_their_nodes():
    dense = make_dense()
    dense(np.ones(3))
    cf = dense.concrete_functions[0]
    names = [n.name for n in cf.graph.get_operations() if n.op.value in ("tanh", "sum")]
    executable = SimpleNamespace(
        backend="numba-cpu",
        segments=[
            {"id": 0, "kind": "reduce", "backend": "numba-cpu", "nodes": names, "state": "ready"}
        ],
    )
    graph = inspector.graph_payload(SimpleNamespace(graph=cf.graph, executable=executable))
    assert graph["segments"] == [
        {"id": "s0", "backend": "numba-cpu", "label": "reduce segment, 2 ops, ready"}
    ]
    marked = {n["op"]: n.get("segment") for n in graph["nodes"]}
    assert marked["tanh"] == marked["sum"] == "s0" and marked["placeholder"] is None
    assert p.check_kernel_message(p.graph_message("f", "1", graph)) == []


def test_request_graph_for_unknown_ids_answers_with_an_error(running, frontend):
    dense = make_dense()
    dense(np.ones(2, np.float32))
    channel = frontend.open()
    frontend.send(channel, request_graph(dense, "99"))
    frontend.send(
        channel,
        {
            "type": "request_graph",
            "protocol_version": 1,
            "function": "__import__('os').system('false')",
            "signature": "1",
        },
    )
    errors = channel.sent()[1:]
    assert [m["type"] for m in errors] == ["error", "error"]
    assert "no signature '99'" in errors[0]["message"]
    assert all(p.check_kernel_message(m) == [] for m in errors)


# --------------------------------------------------------------------------------------------
# Untrusted input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        None,
        "request_snapshot",
        [],
        {},
        {"type": "request_snapshot"},
        {"type": "request_snapshot", "protocol_version": 2},
        {"type": "request_graph", "protocol_version": 1, "function": "f-1"},
        {"type": "request_graph", "protocol_version": 1, "function": "", "signature": "1"},
        {"type": "request_graph", "protocol_version": 1, "function": "f" * 300, "signature": "1"},
        {"type": "request_graph", "protocol_version": 1, "function": 1, "signature": "1"},
        {"type": "execute", "protocol_version": 1, "code": "raise SystemExit"},
    ],
)
def test_a_malformed_message_is_ignored_with_a_logged_warning(running, frontend, caplog, payload):
    channel = frontend.open()
    with caplog.at_level(logging.WARNING):
        frontend.send(channel, payload)
    assert [m["type"] for m in channel.sent()] == ["snapshot"], "nothing answered"
    assert "ignoring frontend message" in caplog.text
    assert channel.comm_id in frontend.manager.comms, "the comm stays usable"
    frontend.send(channel, {"type": "request_snapshot", "protocol_version": 1})
    assert [m["type"] for m in channel.sent()] == ["snapshot", "snapshot"]


def test_a_malformed_message_in_comm_open_is_ignored_but_the_comm_is_kept(
    running, frontend, caplog
):
    with caplog.at_level(logging.WARNING):
        channel = frontend.open({"type": "request_snapshot", "protocol_version": "1"})
    assert channel.sent() == [] and "ignoring frontend message" in caplog.text
    assert channel in running.frontend_comms


def test_strings_are_sent_as_raw_text_never_escaped(running, frontend):
    def show(x, tag):
        return x + 1.0

    fn = kx.function(show, name=XSS, autograph=False)
    fn(np.ones(2), "<b>")
    channel = frontend.open()
    info = ours(channel.sent()[0], fn)[XSS]
    assert info["name"] == XSS
    assert info["signatures"][0]["inputs"] == "x: float64[2], tag: '<b>'"
    assert "&lt;" not in str(channel.sent())


# --------------------------------------------------------------------------------------------
# Updates
# --------------------------------------------------------------------------------------------


def test_each_cell_ends_with_an_update_of_the_changed_functions(running, frontend, shell):
    shell.user_ns.update(np=np, kx=kx)
    shell.run_cell(
        "@kx.function(autograph=False)\ndef scaled(x):\n    return x * 3.0\n", store_history=True
    )
    cell = f"[{shell.execution_count - 1}]"
    scaled = shell.user_ns["scaled"]
    idle = make_dense()
    idle(np.ones(2, np.float32))
    channel = frontend.open()
    shell.run_cell("scaled(np.ones(2))\nscaled(np.ones(2))\nscaled(np.ones(4))", store_history=True)
    call_cell = f"[{shell.execution_count - 1}]"
    update = channel.sent()[-1]
    assert update["type"] == "update" and p.check_kernel_message(update) == []
    info = ours(update, scaled)["scaled"]
    assert info["cell"] == cell
    assert info["counters"]["calls"] == 3 and info["counters"]["cache_hits"] == 1
    assert [r["call_site"] for r in info["retraces"]] == [
        f"cell {call_cell}, line 1",
        f"cell {call_cell}, line 3",
    ]
    # A cell that changes nothing of ours sends nothing about it; the idle function is not
    # resent.  (Functions of other tests may be collected meanwhile: settle them first.)
    gc.collect()
    running.flush()
    before = len(channel.sent())
    shell.run_cell("1 + 1", store_history=True)
    assert not [m for m in channel.sent()[before:] if ours(m, scaled, idle)]
    shell.run_cell("scaled(np.ones(2))", store_history=True)
    (last,) = [m for m in channel.sent()[before:] if ours(m, scaled, idle)]
    assert inspector.function_id(idle) not in {f["id"] for f in last["functions"]}
    assert ours(last, scaled)["scaled"]["counters"]["calls"] == 4


def test_cache_hits_send_nothing_until_the_next_flush(running, frontend):
    dense = make_dense()
    dense(np.ones(2, np.float32))
    channel = frontend.open()
    running.flush()
    before = len(channel.sent())
    for _ in range(1000):
        dense(np.ones(2, np.float32))
    assert len(channel.sent()) == before, "calls are counters, not messages"
    assert running.flush()
    assert ours(channel.sent()[-1], dense)["dense"]["counters"]["calls"] == 1001


def test_a_deleted_function_is_reported_as_removed(running, frontend):
    dense = make_dense()
    dense(np.ones(2, np.float32))
    fid = inspector.function_id(dense)
    channel = frontend.open()
    running.flush()
    # a kernel still compiling in the background (queued behind an earlier test's) holds
    # its trace until it is done; the function is reported removed once it can be freed
    wait_for_kernels(300)
    del dense
    gc.collect()
    assert running.flush()
    assert fid in channel.sent()[-1]["removed"]


def test_updates_are_throttled_while_a_cell_runs(manager, frontend, shell):
    interval = 0.05
    inspector.stop()
    inspector.start(shell, interval=interval)
    try:
        dense = make_dense()
        channel = frontend.open()

        def updated() -> bool:
            return any(m["type"] == "update" for m in channel.sent())

        shell.user_ns.update(np=np, dense=dense, updated=updated)
        started = time.monotonic()
        # Busy for at least 0.5 s, and (on a loaded machine) until the poller got its turn.
        shell.run_cell(
            "import time\n"
            "start = time.monotonic()\n"
            "while time.monotonic() < start + 0.5 or (not updated() and\n"
            "                                        time.monotonic() < start + 10):\n"
            "    dense(np.ones(2, np.float32))\n"
            "dense(np.ones(2, np.float32))\n"
        )  # a change left for the end-of-cell flush
        elapsed = time.monotonic() - started
        updates = [m for m in channel.sent() if m["type"] == "update"]
        during = updates[:-1]  # the last one is the end-of-cell flush
        assert during, "counters update while the cell runs"
        assert len(updates) <= elapsed / interval + 2
        calls = [ours(m, dense)["dense"]["counters"]["calls"] for m in updates if ours(m, dense)]
        assert calls == sorted(calls) and calls[-1] == dense.stats["calls"]
    finally:
        inspector.stop()


def test_comms_left_open_by_page_reloads_are_tolerated(running, frontend, caplog):
    dense = make_dense()
    old = frontend.open()  # the page that was reloaded: nobody listens any more
    new = frontend.open()
    dense(np.ones(2, np.float32))
    assert running.flush()
    assert old.sent()[-1] == new.sent()[-1]

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("socket gone")

    old.publish_msg = broken  # type: ignore[method-assign]
    dense(np.ones(3, np.float32))
    with caplog.at_level(logging.WARNING):
        assert running.flush()
    assert running.frontend_comms == [new] and "dropping a comm" in caplog.text
    frontend.close(new)
    assert running.frontend_comms == []
    dense(np.ones(4, np.float32))
    assert not running.flush()


class FakeClock:
    """The inspector's clock, moved by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clocked(manager: CommManager, shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch):
    """The inspector on a fake clock, with room for two frontend comms."""
    monkeypatch.setattr(inspector, "MAX_FRONTEND_COMMS", 2)
    clock = FakeClock()
    inspector.stop()
    inspector.start(shell, poll=False, clock=clock)
    yield inspector.current(), clock
    inspector.stop()


def closed(channel: RecordingComm) -> bool:
    return bool(channel.published) and channel.published[-1][0] == "comm_close"


def test_the_comm_idle_longest_is_closed_beyond_the_cap(clocked, frontend):
    running, clock = clocked
    first, second = frontend.open(), frontend.open()
    clock.now += inspector.COMM_IN_USE_S + 1
    frontend.send(second, {"type": "request_snapshot", "protocol_version": p.PROTOCOL_VERSION})
    third = frontend.open()  # first is the one idle longest: a reloaded page's
    assert running.frontend_comms == [second, third]
    assert closed(first) and not closed(second)


def test_a_frontend_opening_many_comms_never_evicts_the_sidebar_in_use(
    running, frontend, monkeypatch
):
    monkeypatch.setattr(inspector, "MAX_FRONTEND_COMMS", 2)
    sidebar = frontend.open()
    # comms that never make a valid request go first, oldest first...
    junk = [frontend.open({"type": "bogus"}) for _ in range(40)]
    assert running.frontend_comms == [sidebar, junk[-1]]
    assert all(closed(c) for c in junk[:-1])
    # ...and comms in use (a request within COMM_IN_USE_S) are never closed: a new comm is
    # refused rather than evict the sidebar
    busy = frontend.open()
    assert running.frontend_comms == [sidebar, busy]
    assert [frontend.open() for _ in range(5)] == [None] * 5  # closed at once
    assert running.frontend_comms == [sidebar, busy] and not closed(sidebar)
    dense = make_dense()
    dense(np.ones(2, np.float32))
    assert running.flush() and sidebar.sent()[-1]["type"] == "update"


def test_a_request_keeps_a_comm_in_use(clocked, frontend):
    running, clock = clocked
    old, recent = frontend.open(), frontend.open()
    clock.now += inspector.COMM_IN_USE_S + 1
    dense = make_dense()
    dense(np.ones(2, np.float32))
    frontend.send(old, request_graph(dense, "1"))  # the user clicked a signature
    newcomer = frontend.open()
    assert running.frontend_comms == [old, newcomer] and closed(recent)


def test_stop_closes_comms_and_removes_hooks(manager, frontend, shell):
    inspector.stop()
    inspector.start(shell, poll=False)
    running = inspector.current()
    channel = frontend.open()
    announcement = running.announcement
    inspector.stop()
    assert inspector.current() is None
    assert p.COMM_TARGET not in manager.targets
    assert channel.published[-1][0] == "comm_close"
    assert announcement.published[-1][0] == "comm_close"
    # No longer kept up to date, and (the only follower of the shell) its cell hooks are gone.
    assert running not in activity.views()
    assert activity.post_run_cell not in shell.events.callbacks["post_run_cell"]
    assert activity.pre_run_cell not in shell.events.callbacks["pre_run_cell"]


# --------------------------------------------------------------------------------------------
# A real kernel
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_real_kernel_announces_answers_and_updates():
    """The wire, end to end without a browser: ipykernel's comms, comm_info, IOPub."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    try:

        def execute(code: str) -> list[dict]:
            """Run ``code``; the comm messages that arrived meanwhile."""
            seen: list[dict] = []
            reply = kc.execute_interactive(code, timeout=60, output_hook=seen.append)
            assert reply["content"]["status"] == "ok", reply["content"]
            return [m for m in seen if m["msg_type"].startswith("comm_")]

        def comm_messages(until: Any) -> list[dict]:
            seen: list[dict] = []
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    msg = kc.get_iopub_msg(timeout=1)
                except Exception:  # noqa: BLE001 - queue.Empty: keep waiting
                    continue
                if msg["msg_type"].startswith("comm_"):
                    seen.append(msg)
                    if until(msg):
                        return seen
            raise AssertionError(f"timed out; saw {[m['msg_type'] for m in seen]}")

        def comm_info() -> dict:
            msg_id = kc.comm_info(target_name=p.COMM_TARGET)
            while True:
                reply = kc.get_shell_msg(timeout=30)
                if reply["parent_header"].get("msg_id") == msg_id:
                    return reply["content"]["comms"]

        assert comm_info() == {}, "nothing before loading"
        kc.execute(
            "from kernel_ext.jupyter.inspector import start\nstart(get_ipython())\n"
            "import numpy as np, kernel_ext as kx\n"
            f"f = kx.function(lambda x: x + 1, name={XSS!r}, autograph=False)\n"
        )
        (announce,) = comm_messages(lambda m: m["msg_type"] == "comm_open")
        assert announce["content"]["target_name"] == p.COMM_TARGET
        assert announce["content"]["data"]["type"] == "snapshot"
        assert announce["content"]["comm_id"] in comm_info()

        # Open a comm as the sidebar does; the answer arrives on IOPub for that comm.
        comm_id = uuid.uuid4().hex
        kc.session.send(
            kc.shell_channel.socket,
            "comm_open",
            {
                "comm_id": comm_id,
                "target_name": p.COMM_TARGET,
                "data": {"type": "request_snapshot", "protocol_version": 1},
            },
        )
        snapshot = comm_messages(lambda m: m["content"].get("comm_id") == comm_id)[-1]
        assert snapshot["content"]["data"]["type"] == "snapshot"
        assert p.check_kernel_message(snapshot["content"]["data"]) == []

        (update,) = [
            m
            for m in execute("f(np.ones(2)); f(np.ones(3))")
            if m["content"].get("comm_id") == comm_id
        ]
        data = update["content"]["data"]
        assert data["type"] == "update" and p.check_kernel_message(data) == []
        (entry,) = [f for f in data["functions"] if f["name"] == XSS]
        assert len(entry["signatures"]) == 2 and entry["counters"]["calls"] == 2

        kc.session.send(
            kc.shell_channel.socket,
            "comm_msg",
            {
                "comm_id": comm_id,
                "data": {
                    "type": "request_graph",
                    "protocol_version": 1,
                    "function": entry["id"],
                    "signature": "2",
                },
            },
        )
        graph = comm_messages(lambda m: m["content"].get("comm_id") == comm_id)[-1]
        assert graph["content"]["data"]["type"] == "graph"
        assert p.check_kernel_message(graph["content"]["data"]) == []
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_the_sidebar_counts_failed_calls_apart_from_cache_hits():
    dense = make_dense()
    dense(np.ones(2, np.float32))
    dense(np.ones(2, np.float32))
    with pytest.raises(TypeError):
        dense()
    counters = inspector.function_info(dense)["counters"]
    assert (counters["calls"], counters["cache_hits"], counters["failed_calls"]) == (3, 1, 1)
    assert p.check_kernel_message(p.snapshot_message([inspector.function_info(dense)])) == []


# --------------------------------------------------------------------------------------------
# Export (the sidebar's Export action): each format writes what the Python API writes; every
# refusal is an ``export`` reply with ok false and the exporter's message, the comm kept.
# --------------------------------------------------------------------------------------------


def request_export(function, fmt: str, path: str) -> dict:
    return {
        "type": "request_export",
        "protocol_version": p.PROTOCOL_VERSION,
        "function": inspector.function_id(function),
        "format": fmt,
        "path": path,
    }


def make_scaled():
    def scaled_norm(x):
        return np.sqrt(np.sum(x * x)) * 0.5 + x

    return kx.function(scaled_norm, autograph=False)


def export(frontend, function, fmt: str, path: str) -> dict:
    channel = frontend.open()
    frontend.send(channel, request_export(function, fmt, path))
    reply = channel.sent()[-1]
    assert p.check_kernel_message(reply) == []
    assert reply["type"] == "export" and reply["format"] == fmt
    assert reply["function"] == inspector.function_id(function)
    return reply


def test_export_as_a_saved_model_writes_a_directory_that_loads_bitwise(running, frontend, tmp_path):
    fn = make_scaled()
    x = np.linspace(-1.0, 2.0, 7)
    expected = fn(x)
    reply = export(frontend, fn, "saved_model", str(tmp_path / "model"))
    assert reply["ok"] and reply["path"] == str(tmp_path / "model")
    assert "a saved model" in reply["message"] and reply["path"] in reply["message"]
    loaded = kx.saved_model.load(tmp_path / "model")
    got = loaded.scaled_norm(x) if hasattr(loaded, "scaled_norm") else loaded(x)
    assert got.tobytes() == expected.tobytes()


def test_export_as_source_writes_a_module_that_gives_the_same_bits(
    running, frontend, tmp_path, monkeypatch
):
    fn = make_scaled()
    x = np.arange(5.0)
    expected = fn(x)
    reply = export(frontend, fn, "source", str(tmp_path / "scaled.py"))
    assert reply["ok"], reply["message"]
    spec = importlib.util.spec_from_file_location("scaled_export", tmp_path / "scaled.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "scaled_export", module)
    spec.loader.exec_module(module)
    runners = [getattr(module, n) for n in ("scaled_norm", "run") if hasattr(module, n)]
    assert runners, "the module defines the function"
    assert runners[0](x).tobytes() == expected.tobytes()


def test_export_as_onnx_writes_a_model(running, frontend, tmp_path):
    pytest.importorskip("onnx")
    fn = make_scaled()
    fn(np.ones(3))
    reply = export(frontend, fn, "onnx", str(tmp_path / "scaled.onnx"))
    assert reply["ok"], reply["message"]
    import onnx

    model = onnx.load(str(tmp_path / "scaled.onnx"))
    assert [i.name for i in model.graph.input] == ["x"]


def test_a_relative_path_is_taken_from_the_kernels_working_directory(
    running, frontend, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    fn = make_scaled()
    fn(np.ones(2))
    reply = export(frontend, fn, "source", "relative.py")
    assert reply["ok"] and reply["path"] == str(tmp_path / "relative.py")
    assert (tmp_path / "relative.py").is_file()


def test_a_refused_export_answers_with_the_exporters_message(running, frontend, tmp_path):
    untraced = make_scaled()  # no trace yet: nothing to export
    reply = export(frontend, untraced, "saved_model", str(tmp_path / "m"))
    assert not reply["ok"] and "no traces" in reply["message"] and "Fix" in reply["message"]
    assert not (tmp_path / "m").exists()
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    fn = make_scaled()
    fn(np.ones(2))
    reply = export(frontend, fn, "saved_model", str(occupied))
    assert not reply["ok"] and "exists" in reply["message"]
    assert (occupied / "notes.txt").read_text() == "mine"


def test_an_unknown_function_answers_not_ok(running, frontend, tmp_path):
    channel = frontend.open()
    request = dict(request_export(make_scaled(), "source", str(tmp_path / "x.py")))
    request["function"] = "no-such-function"
    frontend.send(channel, request)
    reply = channel.sent()[-1]
    assert reply["type"] == "export" and not reply["ok"]
    assert "no function 'no-such-function'" in reply["message"]


@pytest.mark.parametrize(
    "change",
    [
        {"format": "pickle"},
        {"format": 3},
        {"path": ""},
        {"path": "   "},
        {"path": "a\0b"},
        {"path": "p" * (p.MAX_PATH_LENGTH + 1)},
        {"path": None},
    ],
    ids=str,
)
def test_a_malformed_export_request_is_ignored_and_the_comm_kept(
    running, frontend, caplog, change, tmp_path
):
    fn = make_scaled()
    fn(np.ones(2))
    channel = frontend.open()
    request = {**request_export(fn, "source", str(tmp_path / "x.py")), **change}
    with caplog.at_level(logging.WARNING):
        frontend.send(channel, request)
    assert [m["type"] for m in channel.sent()] == ["snapshot"], "nothing answered"
    assert "ignoring frontend message" in caplog.text
    assert list(tmp_path.iterdir()) == []
    frontend.send(channel, {"type": "request_snapshot", "protocol_version": 1})
    assert [m["type"] for m in channel.sent()] == ["snapshot", "snapshot"]
