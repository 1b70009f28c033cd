"""Direct calls: a :class:`~.function.Function` whose cache hit is its trace's direct entry.

A trace compiled into one function (``jit_compile=True``, or ``auto`` once it tiered up)
can give its Function a *direct entry* (:class:`~kernel_ext.backends.DirectEntryFactory`):
one generated function that tests a call's arguments and runs the compiled code. Once a
signature of plain arrays and scalars has been called twice, the entry is armed and becomes
the Function's call itself (the instance's class becomes ``ArmedFunction``, whose
``__call__`` reads ``_entry``), gated as the keyed path is gated (:meth:`DirectCalls._gate`);
a call it was not made for disarms it for :data:`DIRECT_REARM` calls. This module holds that
part of :class:`~.function.Function`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from ..backends import ArgumentSpec, CallGate, NumPyScalar, PythonValue
from ..trace.context import ACTIVITY
from ..trace.types import Literal
from .call_keys import NDARRAY, NP_SCALARS

if TYPE_CHECKING:
    from .binding import FunctionType
    from .concrete import ConcreteFunction

#: One cache hit in so many goes through the keyed path, which times it (the UI's "last run").
TIMING_MASK = 63
#: Calls after a direct entry missed (another signature came) before another may be armed:
#: a caller alternating between signatures pays the miss once in so many calls.
DIRECT_REARM = 64
#: Python scalars a direct entry compares by class and ``==``, as the call key does.
DIRECT_VALUES = frozenset((bool, int, float, str, type(None)))


class DirectCalls:
    """The direct-entry half of :class:`~.function.Function` (module doc)."""

    #: The class of an instance with an entry armed (``ArmedFunction``: its ``__call__`` is
    #: the entry), and of one without (``Function``: its ``__call__`` is ``_call``).
    armed_class: ClassVar[type]
    unarmed_class: ClassVar[type]

    if TYPE_CHECKING:  # the Function's, which this half reads and writes
        _calls: int
        _direct_entry: Callable[..., Any] | None
        _entry: Callable[..., Any]
        _direct_from: int
        function_type: FunctionType

        def _call(self, *args: Any, **kwargs: Any) -> Any: ...

    @property
    def _direct(self) -> Callable[..., Any] | None:
        """The armed direct entry (its form that returns ``DIRECT_MISS``), or None."""
        return self._direct_entry

    @_direct.setter
    def _direct(self, entry: Callable[..., Any] | None) -> None:
        self._direct_entry = entry
        call = getattr(entry, "__kx_call__", None)
        if call is None:
            self._entry = self._call
            self.__class__ = self.unarmed_class
        else:
            self._entry = call
            self.__class__ = self.armed_class

    def _direct_missed(self, args: tuple, kwargs: dict) -> Any:
        """A call the armed direct entry was not made for (counted already): disarm it for
        :data:`DIRECT_REARM` calls and take the usual path."""
        __tracebackhide__ = True
        self._direct = None
        self._direct_from = self._calls + DIRECT_REARM
        return self._keyed_call(args, kwargs)

    def _keyed_call(self, args: tuple, kwargs: dict) -> Any:
        """The usual path for a call a direct entry counted already."""
        __tracebackhide__ = True
        self._calls -= 1
        return self._call(*args, **kwargs)

    def _arming_direct(
        self, cf: ConcreteFunction, run: Callable[..., Any], args: tuple
    ) -> Callable[..., Any] | None:
        """The cache-hit runner of this call's signature when its trace can have a direct
        entry: ``run``, after which the entry is armed, so that the next calls go straight
        into the compiled code (:data:`_direct`); None when it cannot have one.

        It can when the call passes only plain ndarrays and Python scalars the trace took
        as themselves, positionally, all of them (a default or keyword makes ``run`` a
        wrapper), to a trace served by the whole-graph executor (compiled with
        ``jit_compile=True``, or tiered up to it) that is not being verified. Its entry
        checks the call's exact shapes and dtypes, and the scalars' classes and values, as
        the call key would, and the guard's no-view test when the trace writes into its
        arguments."""
        executable = cf.executable
        tier = executable.tier
        if tier is not None:
            if tier.state != "whole" or tier.whole is None:
                return None
            executable = tier.whole
        factory = executable.direct
        verifier = cf.verifier
        if (
            factory is None
            or run is not cf.call_flat
            or (verifier is not None and (verifier.remaining or verifier.failure is not None))
            or len(args) != len(self.function_type.names)
        ):
            return None
        written_as_arrays = {path[0][1] for path in cf.guard.arrays_only} if cf.guard else set()
        specs: list[ArgumentSpec] = []
        for i, (a, t) in enumerate(zip(args, cf.input_types)):
            if a.__class__ is NDARRAY:
                specs.append((a.shape, a.dtype))
            elif (
                a.__class__ in NP_SCALARS
                and a.dtype.kind in "biufc"  # (a datetime's unit, a string's length: not
                and i not in written_as_arrays  # in its class, as a number's dtype is)
            ):
                specs.append(NumPyScalar(a.__class__))
            elif (
                a.__class__ in DIRECT_VALUES
                and isinstance(t, Literal)
                and (a.__class__ is not float or (a and a == a))  # (zeros, NaNs: by bits)
            ):
                specs.append(PythonValue(a))
            else:
                return None
        written = cf.guard.updated if cf.guard is not None else []
        if any(len(path) != 1 for path in written):
            return None
        updated = frozenset(path[0][1] for path in written)
        made: list[Callable[..., Any]] = []

        def arming(*values: Any) -> Any:
            if self._calls >= self._direct_from:
                if not made:
                    entry = factory(specs, updated, run, self._gate())
                    if entry is not None:  # (None until the function is compiled)
                        made.append(entry)
                if made:
                    self._direct = made[0]
            return run(*values)

        return arming

    def _gate(self) -> CallGate:
        """How a direct entry serves this Function's calls: as :meth:`_call` would, when it
        would look its fast key up (no keywords, nothing recording, not eager), timing one
        in 64 as it does."""
        # (eager mode counts in ACTIVITY.depth, as running traces and tapes do)
        return CallGate(
            count="_n = _F._calls = _F._calls + 1",
            test="not _A.depth",
            untimed=f"_n & {TIMING_MASK}",
            record="_F._last_run_ns = {}",
            names={"_F": self, "_A": ACTIVITY},
            keyed=self._keyed_call,
            missed=self._direct_missed,
        )


__all__ = ["DIRECT_REARM", "DIRECT_VALUES", "TIMING_MASK", "DirectCalls"]
