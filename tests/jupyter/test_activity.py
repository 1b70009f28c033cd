"""The one cell-activity poller of the live views (``kernel_ext.jupyter.activity``).

Each test makes its own :class:`CellActivity` (not the process's one) and a stand-in shell
whose ``events`` keep the registered callbacks, so hooks can be counted and cells played.
Nothing waits for a time to pass: a test waits for an event (a view polled, the poll thread
asleep with nothing due), so a loaded machine makes it slower, never wrong.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import kernel_ext as kx
from kernel_ext.jupyter.activity import CellActivity


class Events:
    """IPython's ``shell.events``, reduced to what the poller uses."""

    def __init__(self) -> None:
        self.callbacks: dict[str, list[Callable[..., Any]]] = {
            "pre_run_cell": [],
            "post_run_cell": [],
        }

    def register(self, name: str, callback: Callable[..., Any]) -> None:
        self.callbacks[name].append(callback)

    def unregister(self, name: str, callback: Callable[..., Any]) -> None:
        self.callbacks[name].remove(callback)


class Shell:
    def __init__(self) -> None:
        self.events = Events()

    def run_cell(self, body: Callable[[], None]) -> None:
        for hook in list(self.events.callbacks["pre_run_cell"]):
            hook(None)
        body()
        for hook in list(self.events.callbacks["post_run_cell"]):
            hook(None)


#: Seconds a test waits for an event before it fails (generous: a loaded machine is slow).
TIMEOUT = 30.0


class View:
    """A live view that counts what the poller asks of it, and tells waiters of each poll."""

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.polls = 0
        self.cell_ends = 0
        self.changed = threading.Condition()

    def poll(self) -> None:
        with self.changed:
            self.polls += 1
            self.changed.notify_all()

    def cell_finished(self) -> None:
        self.cell_ends += 1

    def wait_polls(self, count: int) -> bool:
        """Wait until this view has been polled ``count`` times; False on timeout."""
        with self.changed:
            return self.changed.wait_for(lambda: self.polls >= count, TIMEOUT)


class WakeEvent(threading.Event):
    """The poll thread's wake-up event, telling waiters when the thread sleeps with nothing
    due (a wait without a deadline): from then on it polls nothing until something wakes it."""

    def __init__(self) -> None:
        super().__init__()
        self.state = threading.Condition()
        self.idle = False

    def wait(self, timeout: float | None = None) -> bool:
        if timeout is not None:
            return super().wait(timeout)
        with self.state:
            self.idle = True
            self.state.notify_all()
        try:
            return super().wait()
        finally:
            with self.state:
                self.idle = False

    def wait_idle(self, condition: Callable[[], bool] = lambda: True) -> bool:
        """Wait until the thread sleeps with nothing due and ``condition()`` holds."""
        with self.state:
            return self.state.wait_for(lambda: self.idle and condition(), TIMEOUT)


def eventually(condition: Callable[[], bool]) -> bool:
    """For conditions no event announces (a thread ending): check until true or timeout."""
    deadline = time.monotonic() + TIMEOUT
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    return condition()


def poll_threads() -> int:
    return sum(t.name == "kernel_ext-activity" for t in threading.enumerate())


@pytest.fixture
def poller():
    poller = CellActivity()
    poller._wake = WakeEvent()  # before its thread starts: the tests wait on its sleeps
    threads = set(threading.enumerate())
    yield poller
    for view in poller.views():
        poller.discard(view)
    poller._wake.set()  # views the test dropped died unannounced: the thread sees it and ends
    for thread in set(threading.enumerate()) - threads:  # the next test counts threads
        if thread.name == "kernel_ext-activity":
            thread.join(TIMEOUT)


def test_followers_of_a_shell_share_one_pair_of_hooks_until_the_last_leaves(poller):
    shell = Shell()
    first, second = poller.follow(shell), poller.follow(shell)
    assert shell.events.callbacks == {
        "pre_run_cell": [poller.pre_run_cell],
        "post_run_cell": [poller.post_run_cell],
    }
    first()
    first()  # undoing twice undoes nothing more
    assert poller.shell is shell and len(shell.events.callbacks["post_run_cell"]) == 1
    second()
    assert poller.shell is None
    assert shell.events.callbacks == {"pre_run_cell": [], "post_run_cell": []}


def test_views_are_polled_while_a_cell_runs_and_not_between_cells(poller):
    shell = Shell()
    poller.follow(shell)
    view = View()
    poller.add(view)
    assert poller._wake.wait_idle()  # the thread has seen the view and sleeps
    assert view.polls == 0, "idle between cells: no poll"

    def busy() -> None:
        assert view.wait_polls(3), "polled while the cell runs"

    shell.run_cell(busy)
    assert view.cell_ends == 1, "every cell ends with an update"
    after = view.polls
    assert poller._wake.wait_idle()  # the thread has seen the cell end and sleeps
    assert view.polls <= after + 1  # (at most a poll that was already under way)


def test_polls_are_throttled_to_the_views_interval(poller):
    view = View(interval=0.05)
    start = time.monotonic()
    poller.add(view)  # no shell followed: no cell boundaries, always polled
    assert view.wait_polls(3)
    polls, elapsed = view.polls, time.monotonic() - start
    # Polls at least an interval apart: however slow the machine, no more than this many.
    assert 3 <= polls <= elapsed / view.interval + 1, (polls, elapsed)


def test_a_trace_between_cells_is_polled_once(poller):
    poller.follow(Shell())
    view = View()
    poller.add(view)
    fn = kx.function(lambda x: x * 2.0, backend="numpy")
    fn(np.ones(2))  # a trace: an engine event
    assert view.wait_polls(1)
    assert poller._wake.wait_idle(lambda: view.polls >= 1)  # asleep after that poll
    assert view.polls == 1


def test_a_cell_only_view_hears_cell_ends_but_is_never_polled(poller):
    shell = Shell()
    poller.follow(shell)
    view = View()
    poller.add(view, poll=False)
    witness = View()  # a polled view: the cell runs until the thread has polled it twice
    poller.add(witness)
    shell.run_cell(lambda: witness.wait_polls(2))
    assert witness.polls >= 2
    assert (view.polls, view.cell_ends) == (0, 1)


def test_views_share_one_thread_that_ends_with_the_last_view(poller):
    before = poll_threads()
    first, second = View(interval=60), View(interval=60)
    poller.add(first)
    poller.add(second)
    assert poll_threads() == before + 1
    poller.discard(first)
    poller.discard(second)
    assert eventually(lambda: poll_threads() == before)


def test_a_view_that_fails_does_not_stop_the_others(poller):
    shell = Shell()
    poller.follow(shell)

    class Broken(View):
        def poll(self) -> None:
            raise RuntimeError("boom")

        def cell_finished(self) -> None:
            raise RuntimeError("boom")

    broken, healthy = Broken(), View()
    poller.add(broken)
    poller.add(healthy)
    shell.run_cell(lambda: healthy.wait_polls(2))
    assert healthy.polls >= 2 and healthy.cell_ends == 1
