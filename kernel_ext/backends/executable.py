"""``Executable``: what compiling a graph gives the engine — the callable and its report.

Every backend returns one (:func:`kernel_ext.backends.compile_for`): the function a
ConcreteFunction runs on every call, its generated source, the backend label the UI shows, one
report dict per fused segment (kept current while kernels compile in the background) and the
compile time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

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


class _Miss:
    """The type of :data:`DIRECT_MISS` (one instance)."""

    def __repr__(self) -> str:
        return "DIRECT_MISS"


#: What a direct entry returns for a call it was not made for (an argument of another class,
#: shape or dtype than the trace's): the caller finds the call's trace the usual way.
DIRECT_MISS = _Miss()

#: One array parameter as a trace took it: its exact shape and dtype.
ArraySpec = tuple[tuple[int, ...], np.dtype]


@dataclass(frozen=True)
class PythonValue:
    """One parameter a trace took as the Python scalar itself (a bool, int, str, None, or a
    float other than a zero or a NaN: those the call key compares with ``==``)."""

    value: Any


@dataclass(frozen=True)
class NumPyScalar:
    """One parameter passed as a NumPy scalar of this exact type (``np.float32(0.5)``): a
    0-d input of the graph, which the call key types as a 0-d array of its dtype."""

    type: type


#: How a direct entry checks one argument.
ArgumentSpec = ArraySpec | PythonValue | NumPyScalar


@dataclass(frozen=True)
class CallGate:
    """What lets a direct entry be its function's whole call, not a step of it.

    A traced function's call counts itself and takes its cache-hit path only while no
    trace or tape is recording and its functions are not run eagerly; its caller names
    those facts here, as source, so that the entry's one generated function tests them
    itself (each Python call between the user and the compiled code costs ~0.1 µs):

    * ``count``: a statement run first at every call (``_n = _F._calls = _F._calls + 1``);
    * ``test``: an expression that must hold for the entry to serve the call (it may read
      the locals ``count`` assigned);
    * ``untimed``: an expression that holds for the served calls not to time; the others
      (one in 64: the UI's "last run") are timed by the entry itself, and ``record``, a
      statement with a ``{}`` for the nanoseconds the compiled call took, keeps the time.
      (Handing the timed calls to ``keyed`` cost every call ~60 ns on average);
    * ``names``: the globals ``count``, ``test``, ``untimed`` and ``record`` read;
    * ``keyed(args, kwargs)``: the call taken the usual way (``test`` was false; the call
      was counted already);
    * ``missed(args, kwargs)``: the same, for a call the entry was not made for (another
      shape, a keyword, an error): the caller may take the entry away.
    """

    count: str
    test: str
    untimed: str
    record: str
    names: dict[str, Any]
    keyed: Callable[[tuple, dict], Any]
    missed: Callable[[tuple, dict], Any]


class DirectEntryFactory(Protocol):
    """Makes a trace's *direct entry* (an executor's answer to the per-call cost of Python).

    ``factory(specs, updated, run, gate)`` is a function of the call's positional arguments that
    checks they are plain ndarrays of exactly ``specs``' shapes and dtypes (or, for a
    :class:`PythonValue`, that very Python value, of its class; for a :class:`NumPyScalar`,
    a scalar of that type) and runs the
    compiled code itself, with no lookup, guard or layout test in between; it returns
    :data:`DIRECT_MISS` for any other call, and for any call the compiled code does not take
    as it is (another layout, a read-only array, an error, the fallback signal): the caller
    then looks the call up as usual. When the trace writes into arguments (their indices:
    ``updated``), a call passing a view, or one of those arrays again as another argument,
    goes to ``run``, the trace's runner and guard.
    With a ``gate`` (:class:`CallGate`), the entry made also has ``__kx_call__``: the
    same entry as the function's whole call, which counts and tests the call as the gate
    says and passes every call it does not serve to the gate's ``keyed`` or ``missed``
    (never returning :data:`DIRECT_MISS`). The factory
    returns None while it cannot make one (its code not compiled yet)."""

    def __call__(
        self,
        specs: Sequence[ArgumentSpec],
        updated: frozenset[int],
        run: Callable[..., Any],
        gate: CallGate | None = None,
    ) -> Callable[..., Any] | None: ...


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
    #: The whole-graph executor's maker of direct entries (:class:`DirectEntryFactory`),
    #: or None: this executable has none (other executors, inputs read out of containers,
    #: a size handover measured per call).
    direct: DirectEntryFactory | None = None

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the kernels requested so far are compiled (True) or ``timeout``
        (those of the whole graph it tiers up to included)."""
        whole = getattr(self.tier, "whole", None)
        if not self.segments and (whole is None or not whole.segments):
            return True
        # (imported here: the compiler module is only needed once something was fused)
        from .compiler import wait_for_kernels

        return wait_for_kernels(timeout)


__all__ = [
    "DIRECT_MISS",
    "ArgumentSpec",
    "ArraySpec",
    "CallGate",
    "DaskReport",
    "DirectEntryFactory",
    "Executable",
    "NumPyScalar",
    "PythonValue",
]
