"""Direct entries: a cache hit of a compiled loop kernel that goes straight to its code.

A call of a traced function normally crosses three layers of Python before the compiled
function runs: the call key (a ``(dtype, shape)`` per argument, hashed) that finds the trace,
the guard of a trace that writes into its arguments (no argument a view of another), and the
runner (C-contiguous or any-layout variant, then the outputs rebuilt). On a kernel of a few
microseconds those layers cost as much as the kernel (gemver on 48x48: 9.5 us a call, 5.7 us
in the generated function; hand-written ``@numba.njit`` 4.3 us).

A direct entry, made for one trace once its function is compiled, is one generated function
of the call's arguments that tests what the three layers decide for the common call, in one
boolean expression: each argument is a plain ndarray of the trace's exact shape (and dtype,
where the compiled function does not take it as an array; the shape of one it takes as an
array is tested by the compiled function itself, first, when it was compiled for the trace's
own shapes: ``shapes_checked``; else a vector's length by ``len``), and none is a view or
passed twice when the trace writes into one (the guard's own straight-line test).
Then it calls the C-contiguous compiled function, whose Numba dispatcher checks dtype,
rank, layout and writability in C, and rebuilds the outputs as the runner does. Every other
call goes where it went before:

* another shape, dtype or class, or anything the compiled call raises (an array of another
  layout or dtype that its dispatcher refuses, a read-only array, an error, the fallback
  signal): :data:`~..executable.DIRECT_MISS`, and the caller looks the call up (the same
  trace's runner, another trace, or a new one), which decides it as always. The compiled
  function writes into the caller's arrays only after its last check, so a call it gave up
  left them untouched, and an error is raised again by the rerun;
* a view, or an argument passed twice: the trace's own runner, guard included.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..emit.source import Source
from ..executable import DIRECT_MISS, ArgumentSpec, CallGate, NumPyScalar, PythonValue


class DirectEntries:
    """Makes the direct entries of one compiled whole-graph function (a
    :class:`~..executable.DirectEntryFactory`): the runner's pieces, kept to be written
    again behind a test of one trace's argument types."""

    def __init__(
        self,
        scope: dict[str, Any],
        n_params: int,
        typed: frozenset[int],
        head: list[str],
        args: str,
        outputs: list[str],
        handover: int | None = None,
        shapes_checked: bool = False,
    ) -> None:
        self.scope = scope  # the runner's globals (its handle ``_H``, constants, helpers)
        self.n_params = n_params
        # parameters passed to the compiled function as arrays: its dispatcher checks their
        # dtype (and rank and layout) itself; others (0-d ones, passed as their value, and
        # those the graph does not read) are tested here
        self.typed = typed
        self.head = head  # the graph's inputs read from the parameters
        self.args = args  # the compiled function's arguments
        self.outputs = outputs  # ``outs`` rebuilt into the returned structure
        #: The runner's handover size (:class:`.build._Handover`): from an array of this
        #: many elements on, the executor that serves is measured per call, so the entries
        #: are made for smaller arrays only. None: no handover.
        self.handover = handover
        #: the compiled function tests its array inputs' shapes itself (the fallback signal
        #: for another shape): the entry tests those arguments' class only
        self.shapes_checked = shapes_checked

    def __call__(
        self,
        specs: Sequence[ArgumentSpec],
        updated: frozenset[int],
        run: Callable[..., Any],
        gate: CallGate | None = None,
    ) -> Callable[..., Any] | None:
        compiled = self.scope["_H"].graph_c
        if compiled is None or len(specs) != self.n_params or not specs:
            return None
        handover = self.handover
        if handover is not None and any(
            i in self.typed and math.prod(spec[0]) >= handover
            for i, spec in enumerate(specs)
            if isinstance(spec, tuple)
        ):
            return None
        source, names = self.source(specs, updated, gate)
        namespace = {**self.scope, **names, "_G": compiled, "_run": run}
        exec(compile(source, "<kx-direct-entry>", "exec"), namespace)
        entry: Callable[..., Any] = namespace["entry"]
        entry.__kx_source__ = source  # type: ignore[attr-defined]
        if gate is not None:
            entry.__kx_call__ = namespace["call"]  # type: ignore[attr-defined]
        return entry

    def source(
        self,
        specs: Sequence[ArgumentSpec],
        updated: frozenset[int] = frozenset(),
        gate: CallGate | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """The entry's source (with a ``gate``, also its form as the whole call, ``call``)
        and the names they read besides the runner's."""
        params = ", ".join(f"p{i}" for i in range(len(specs)))
        names: dict[str, Any] = {"_nd": np.ndarray, "_MISS": DIRECT_MISS}
        types = []
        arrays = [i for i, spec in enumerate(specs) if not isinstance(spec, PythonValue)]
        for i, spec in enumerate(specs):
            if isinstance(spec, PythonValue):
                # (taken as itself: not a graph input; its class and value are the key's)
                names[f"_v{i}"], names[f"_k{i}"] = spec.value, type(spec.value)
                types.append(f"p{i}.__class__ is _k{i} and p{i} == _v{i}")
                continue
            if isinstance(spec, NumPyScalar):
                # (its type is its dtype: NumPy's scalars are native-endian)
                names[f"_k{i}"] = spec.type
                types.append(f"p{i}.__class__ is _k{i}")
                continue
            shape, dtype = spec
            names[f"_s{i}"] = tuple(shape)
            # (a subclass passes Numba's typing as an ndarray: a masked array would lose
            # its mask)
            test = f"p{i}.__class__ is _nd"
            if i in self.typed and self.shapes_checked:
                pass  # (the compiled function tests the shape, its dispatcher the rank)
            elif i in self.typed and len(shape) == 1:
                # (its rank is the dispatcher's to check: len() makes no shape tuple, ~35 ns)
                test += f" and len(p{i}) == {int(shape[0])}"
            else:
                test += f" and p{i}.shape == _s{i}"
            if i not in self.typed:
                # (``is`` first: NumPy's built-in dtypes are single objects; ``==`` is what
                # the call key compares)
                names[f"_d{i}"] = np.dtype(dtype)
                test += f" and (p{i}.dtype is _d{i} or p{i}.dtype == _d{i})"
            types.append(test)
        out = Source()
        # (any number of arguments: a call with too few or too many is the Function's to
        # refuse, with its own message, after the miss)
        signature = ", ".join(f"p{i}=_MISS" for i in range(len(specs)))
        tests = ["not _more", *(f"({t})" for t in types)]
        with out.block(f"def entry({signature}, *_more):") as body:
            self._served(body, tests, params, arrays, updated, "return _MISS")
            body.line("return _MISS")
        if gate is not None:
            # The same as the function's whole call: counted and tested as the gate says;
            # every call it does not serve goes on the usual way with the arguments it had.
            names.update(gate.names, _keyed=gate.keyed, _missed=gate.missed, _given=_given)
            names["_clock"] = time.perf_counter_ns
            given = f"_given(({params}{',' if specs else ''}), _more), _kw"
            out.line("")
            with out.block(f"def call({signature}, *_more, **_kw):") as body:
                body.line(gate.count)
                with body.block(f"if ({gate.test}) and not _kw:") as open_:
                    missed = f"return _missed({given})"
                    self._served(open_, tests, params, arrays, updated, missed, gate)
                    open_.line(missed)
                body.line(f"return _keyed({given})")
        return out.text(), names

    def _served(
        self,
        out: Source,
        tests: list[str],
        params: str,
        arrays: list[int],
        updated: frozenset[int],
        missed: str,
        gate: CallGate | None = None,
    ) -> None:
        """The entry's test of the arguments and, where it holds, the compiled call and the
        result returned; ``missed``: the statement for a call the compiled code refused;
        with a ``gate``, the calls it says to time are timed."""
        with out.block("if " + " and ".join(tests) + ":") as typed:
            run = f"_run({params})"
            if updated:
                # the guard's straight-line test: every array owns its memory, and no
                # argument written into is passed again as another one
                owners = [f"p{i}.base is None" for i in arrays]
                others = [
                    f"p{u} is not p{k}"
                    for u in sorted(updated)
                    for k in arrays
                    if k != u and (k not in updated or k > u)
                ]
                with typed.block(f"if not ({' and '.join(owners + others)}):") as shared:
                    shared.line(f"return {run}")
            typed.extend(self.head)
            if gate is None:
                self._compiled_call(typed, missed)
            else:
                with typed.block(f"if {gate.untimed}:") as untimed:
                    self._compiled_call(untimed, missed)
                with typed.block("else:") as timed:
                    timed.line("_t0 = _clock()")
                    self._compiled_call(timed, missed)
                    timed.line(gate.record.format("_clock() - _t0"))
            typed.extend(self.outputs)

    def _compiled_call(self, out: Source, missed: str) -> None:
        """The call of the compiled function, ``missed`` where it raised."""
        with out.block("try:") as attempt:
            attempt.line(f"outs = _G({self.args})")
        with out.block("except Exception:") as failed:
            # (an array of another dtype, rank or layout, a read-only one, an error,
            # the fallback signal: the call is looked up and run the usual way)
            failed.line(missed)


def _given(head: tuple, more: tuple) -> tuple:
    """The positional arguments of a call of a direct entry: its parameters the caller
    passed (those left at their ``_MISS`` default are the last ones) and the rest."""
    n = len(head)
    while n and head[n - 1] is DIRECT_MISS:
        n -= 1
    return head[:n] + more


__all__ = ["DirectEntries"]
