"""Process-wide switches (``kx.config``): run traced functions eagerly for debugging, or
verify traces against eager NumPy (:mod:`.verify`)."""

from __future__ import annotations

from ..trace.state import ACTIVITY


class _State:
    __slots__ = ("eager", "verify")

    def __init__(self) -> None:
        self.eager = False
        self.verify = False


STATE = _State()


def run_functions_eagerly(run_eagerly: bool) -> None:
    """Make every ``kx.function`` call run its Python body (no tracing, no graphs).

    Switching back reuses the traces made before: nothing is discarded.
    """
    set_eager(bool(run_eagerly))


def set_eager(on: bool) -> bool:
    """Switch eager mode (``run_functions_eagerly``) and return what it was.

    Eager mode closes every Function's cache-hit path, as a running trace or a recording
    tape does: it counts once in ``ACTIVITY.depth``, the one value the hot path reads
    (:mod:`kernel_ext.trace.state`), so a cache hit pays one attribute read for all three."""
    was = STATE.eager
    if on != was:
        with ACTIVITY.lock:
            STATE.eager = on
            ACTIVITY.depth += 1 if on else -1
    return was


def functions_run_eagerly() -> bool:
    """Whether ``run_functions_eagerly(True)`` is in effect."""
    return STATE.eager


def verify(on: bool) -> None:
    """Verify every trace against eager NumPy (``kx.function(..., verify=True)`` for all).

    Switching on arms the traces that exist too: the next calls of each (see
    :data:`kernel_ext.engine.verify.VERIFIED_CALLS`) also run the Python function eagerly
    and compare. Switching off stops verifying functions made without ``verify=True``.
    """
    STATE.verify = bool(on)
    if STATE.verify:
        from . import registry

        for function in registry.live_functions():
            function.arm_verification()


def verifying() -> bool:
    """Whether ``verify(True)`` is in effect."""
    return STATE.verify
