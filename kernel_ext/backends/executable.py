"""``Executable``: what compiling a graph gives the engine — the callable and its report.

Every backend returns one (:func:`kernel_ext.backends.compile_for`): the function a
ConcreteFunction runs on every call, its generated source, the backend label the UI shows, one
report dict per fused segment (kept current while kernels compile in the background) and the
compile time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tiering import Tier


@dataclass
class DaskReport:
    """What the Dask backend reports of its latest call (the monitor and the sidebar show
    it): how many tasks the Dask graph had (its results' graphs merged, the input arrays'
    own tasks included), and the dashboard address of the ``distributed.Client`` that
    existed when it was built (None: no client)."""

    tasks: int
    dashboard: str | None = None


@dataclass
class Executable:
    """A compiled graph: ``run(*params)`` and the facts the UI shows about it.

    ``segments`` holds one dict per fused segment (ops, kernel, ``state`` of its compilation,
    ``compile_ms``, ``cache`` hit/miss); the dicts are updated in place as background
    compilation progresses.
    """

    run: Callable[..., Any]
    source: str
    backend: str = "numpy"
    segments: list[dict[str, Any]] = field(default_factory=list)
    compile_ms: float = 0.0
    #: Tiered ``auto`` (:mod:`.tiering`): the state that may move ``run`` to the whole-graph
    #: executor, or None when this executable does not tier.
    tier: Tier | None = None
    #: The Dask backend's report of its latest call; None for other backends (and before
    #: the first call).
    dask: DaskReport | None = None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the kernels requested so far are compiled (True) or ``timeout``
        (those of the whole graph it tiers up to included)."""
        whole = getattr(self.tier, "whole", None)
        if not self.segments and (whole is None or not whole.segments):
            return True
        # (imported here: the compiler module is only needed once something was fused)
        from .compiler import wait_for_kernels

        return wait_for_kernels(timeout)


__all__ = ["DaskReport", "Executable"]
