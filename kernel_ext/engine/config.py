"""Process-wide switches (``kx.config``): run traced functions eagerly for debugging."""

from __future__ import annotations


class _State:
    __slots__ = ("eager",)

    def __init__(self) -> None:
        self.eager = False


STATE = _State()


def run_functions_eagerly(run_eagerly: bool) -> None:
    """Make every ``kx.function`` call run its Python body (no tracing, no graphs).

    Switching back reuses the traces made before: nothing is discarded.
    """
    STATE.eager = bool(run_eagerly)


def functions_run_eagerly() -> bool:
    """Whether ``run_functions_eagerly(True)`` is in effect."""
    return STATE.eager
