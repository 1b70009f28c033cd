"""The engine's event stream: observers (widgets, the sidebar bridge) subscribe here.

Only slow-path moments are events (a trace finished, a trace failed); cache hits are plain
counters on the Function, read by observers on their own throttle, so the hot path stays free.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Event:
    """``kind`` is ``"trace"`` or ``"trace_error"``, ``function`` the kx Function; or
    ``"compile"`` (``function`` None): a fused kernel's background compilation changed state."""

    kind: str
    function: Any
    concrete_function: Any = None
    record: Any = None
    error: BaseException | None = None


_listeners: list[Callable[[Event], None]] = []
_lock = threading.Lock()
_compile_bridge: Callable[[], None] | None = None


def subscribe(listener: Callable[[Event], None]) -> Callable[[], None]:
    """Call ``listener(event)`` for every event; returns a function that unsubscribes."""
    global _compile_bridge
    with _lock:
        _listeners.append(listener)
        if _compile_bridge is None:
            # The background compiler knows nothing of the engine: it calls back on every
            # kernel state change, which becomes a "compile" event (once, for all listeners).
            from ..backends import compiler

            _compile_bridge = compiler.on_state_change(lambda: emit(Event("compile", None)))

    def unsubscribe() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return unsubscribe


def emit(event: Event) -> None:
    """Deliver ``event``; a failing listener is logged, never allowed to break the user's call."""
    for listener in list(_listeners):
        try:
            listener(event)
        except Exception:  # noqa: BLE001 - observers must not break computations
            _log.exception("kernel_ext event listener %r failed", listener)
