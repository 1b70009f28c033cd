"""Cell activity: the one poll thread and the one pair of IPython cell hooks of the live views.

The monitor widgets (:mod:`.monitor`) and the sidebar's comm (:mod:`.inspector`) show
counters that change on every call, but a cache hit is never observed: it stays a dict lookup
and a plain integer increment (docs/ARCHITECTURE.md, "The hot path").  So the views *poll*,
and they share how:

* one background thread calls each view's :meth:`Watcher.poll` at most once per the view's
  ``interval`` seconds, and only while it is worth it: while a cell runs (between IPython's
  ``pre_run_cell`` and ``post_run_cell``), after an engine event (a trace) the view has not
  seen yet, or always when no shell is followed (a script, a benchmark: there are no cell
  boundaries to wait for).  Otherwise it sleeps until woken;
* one pair of IPython hooks: ``pre_run_cell`` marks the kernel busy and wakes the thread,
  ``post_run_cell`` calls each view's :meth:`Watcher.cell_finished` at once, so every cell
  ends with every view up to date (and counts as a poll for the throttle);
* one engine-event listener, which only counts events and wakes the thread (it runs inside
  the user's call that traced).

Views are held weakly: a monitor nobody displays any more can die; the thread ends when no
view polls and starts again with the next.  Hooks stay registered while some part of the
extension :meth:`follows <CellActivity.follow>` the shell.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..engine import events

__all__ = ["CellActivity", "Watcher", "activity"]

logger = logging.getLogger(__name__)


class Watcher(Protocol):
    """What a live view offers the poller."""

    #: Seconds between two polls of this view, at most one poll per interval.
    interval: float

    def poll(self) -> None:
        """Look for changes and show them (on the poll thread; must be cheap when none)."""

    def cell_finished(self) -> None:
        """A cell just ended: bring everything up to date (in the kernel's thread)."""


@dataclass
class _Slot:
    """The poller's bookkeeping for one view."""

    polls: bool  # False: cell ends only (the view refreshes itself otherwise)
    last: float = -float("inf")  # time.monotonic() of its latest poll
    seen: int = 0  # engine events counted at its latest poll


class CellActivity:
    """Follows a shell's cells and polls the live views (one instance: :data:`activity`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._views: weakref.WeakKeyDictionary[Watcher, _Slot] = weakref.WeakKeyDictionary()
        self._thread: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._events = 0  # engine events so far (only ever grows)
        self._followers: set[object] = set()
        #: The shell whose cells are followed (None: no cell boundaries, always poll).
        self.shell: Any = None
        #: A cell is running.
        self.busy = False
        #: ``time.perf_counter()`` when the running (or latest) cell began.
        self.cell_started = 0.0

    # -- views -------------------------------------------------------------------------------
    def add(self, view: Watcher, *, poll: bool = True) -> None:
        """Keep ``view`` up to date: polled (unless ``poll`` is False) and told of cell ends."""
        with self._lock:
            self._views[view] = _Slot(polls=poll, seen=self._events)
            if self._unsubscribe is None:
                self._unsubscribe = events.subscribe(self._on_event)
            if poll and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(
                    target=self._run, name="kernel_ext-activity", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def discard(self, view: Watcher) -> None:
        """Stop updating ``view`` (a poll already under way may still finish)."""
        with self._lock:
            self._views.pop(view, None)
            if not self._views and self._unsubscribe is not None:
                self._unsubscribe()
                self._unsubscribe = None
        self._wake.set()  # the thread ends if it was the last view it polled

    def views(self) -> list[Watcher]:
        """The views kept up to date now."""
        with self._lock:
            return list(self._views.keys())

    # -- the shell -----------------------------------------------------------------------------
    def follow(self, shell: Any) -> Callable[[], None]:
        """Register the cell hooks on ``shell`` (once, however many follow it); returns the
        function that undoes this follow.  The hooks go when the last follower is gone.

        Following another shell moves the hooks there; the earlier follows then undo nothing.
        """
        token = object()
        with self._lock:
            if shell is not self.shell:
                self._unhook()
                self.shell = shell
                shell.events.register("pre_run_cell", self.pre_run_cell)
                shell.events.register("post_run_cell", self.post_run_cell)
            self._followers.add(token)

        def unfollow() -> None:
            with self._lock:
                if token not in self._followers:
                    return
                self._followers.discard(token)
                if not self._followers:
                    self._unhook()
            self._wake.set()

        return unfollow

    def _unhook(self) -> None:
        # (Called with the lock held.)
        shell, self.shell = self.shell, None
        self._followers.clear()
        self.busy = False
        if shell is None:
            return
        for name, callback in (
            ("pre_run_cell", self.pre_run_cell),
            ("post_run_cell", self.post_run_cell),
        ):
            try:
                shell.events.unregister(name, callback)
            except ValueError:
                pass

    # -- IPython hooks -------------------------------------------------------------------------
    def pre_run_cell(self, info: Any = None) -> None:
        """IPython's ``pre_run_cell``: polling starts."""
        self.cell_started = time.perf_counter()
        self.busy = True
        self._wake.set()

    def post_run_cell(self, result: Any = None) -> None:
        """IPython's ``post_run_cell``: polling stops; every view catches up now."""
        self.busy = False
        with self._lock:
            views = list(self._views.items())
            now = time.monotonic()
            for _, slot in views:
                # A cell's end counts as a poll: the next one waits a whole interval.
                slot.last, slot.seen = now, self._events
        for view, _ in views:
            try:
                view.cell_finished()
            except Exception:  # noqa: BLE001 - never turn a cell's success into an error
                logger.debug("kernel_ext: a view failed after a cell", exc_info=True)

    # -- the thread ----------------------------------------------------------------------------
    def _on_event(self, event: Any) -> None:
        # Runs inside the user's call (a trace just finished): count and wake, nothing more.
        self._events += 1
        self._wake.set()

    def _due(self) -> tuple[list[Watcher], float | None] | None:
        """The views to poll now and how long to sleep after; None when none polls at all."""
        now = time.monotonic()
        due: list[Watcher] = []
        sleep: float | None = None
        polled = False
        for view, slot in list(self._views.items()):
            if not slot.polls:
                continue
            polled = True
            if not (self.busy or self.shell is None or slot.seen != self._events):
                continue  # idle between cells, nothing new: wait for a wake-up
            remaining = slot.last + view.interval - now
            if remaining <= 0:
                slot.last, slot.seen = now, self._events
                due.append(view)
            elif sleep is None or remaining < sleep:
                sleep = remaining
        return (due, sleep) if polled else None

    def _run(self) -> None:
        while True:
            with self._lock:
                plan = self._due()
                if plan is None:
                    self._thread = None
                    return
            due, sleep = plan
            plan = None
            if not due:
                # Throttled or idle: sleep until a view is due or something wakes us (a cell
                # starts, a trace, a view joins); either way the plan is made again.
                self._wake.wait(sleep)
                self._wake.clear()
                continue
            for view in due:
                try:
                    view.poll()
                except Exception:  # noqa: BLE001 - keep polling the others
                    logger.debug("kernel_ext: a view failed to poll", exc_info=True)
            # No strong reference while waiting: a view dropped meanwhile can die.
            due = view = None  # type: ignore[assignment]


#: The process's one poller (one IPython shell per kernel).
activity = CellActivity()
