"""Which traces are running: this thread's stack of trace contexts, and a process-wide count.

The lowest module of the trace layer: it knows nothing of tensors or variables, so every other
trace module can ask "am I being traced?" (:func:`current_context`) without an import cycle.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import TraceContext

_state = threading.local()


class Activity:
    """How many traces are running in the whole process (any thread).

    The cache-hit path of a Function reads ``ACTIVITY.depth`` (a plain attribute, no
    thread-local lookup): only when some trace is running does it take the slow path, which
    then checks this thread's own stack. A recording eager ``kx.GradientTape`` counts too
    (it must see every call, :mod:`kernel_ext.autodiff.tape`), so the hot path pays nothing
    for tapes; so does eager mode (``kx.config.run_functions_eagerly``), whose calls all take
    the slow path to run the Python function.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.lock = threading.Lock()


ACTIVITY = Activity()


#: Code objects AutoGraph declined to convert, with the reason (written by the autograph
#: layer above; read here so that an error raised inside such code says why AutoGraph did
#: not handle it rather than suggesting that AutoGraph is off).
UNCONVERTED: dict[Any, str] = {}


def context_stack() -> list[TraceContext]:
    """This thread's active trace contexts, outermost first (created on first use)."""
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


def current_context() -> TraceContext | None:
    """The innermost active trace of this thread, or ``None`` when running eagerly."""
    stack: Any = getattr(_state, "stack", None)
    return stack[-1] if stack else None


@contextlib.contextmanager
def outside_traces() -> Iterator[None]:
    """Run a block as plain NumPy code: :func:`current_context` is ``None`` inside it (the
    stand-in runs of an opaque call, which must not record anything into the trace)."""
    stack = context_stack()
    _state.stack = []
    try:
        yield
    finally:
        _state.stack = stack


# How a ``file:line`` location reads in messages: the notebook extension installs one that
# says ``cell [5], line 3`` instead of the kernel's temporary file name (set through
# :func:`kernel_ext.engine.explain.set_call_site_formatter`, with the call sites').
_location_formatter: Callable[[str], str] | None = None


def set_location_formatter(formatter: Callable[[str], str] | None) -> None:
    """Install how ``file:line`` locations in trace-time messages are shown (None: as is)."""
    global _location_formatter
    _location_formatter = formatter


def format_location(raw: str) -> str:
    """``raw`` (``file:line``) as the installed formatter shows it."""
    formatter = _location_formatter
    if formatter is None:
        return raw
    try:
        return formatter(raw)
    except Exception:  # noqa: BLE001 - naming a location must never hide the real error
        return raw
