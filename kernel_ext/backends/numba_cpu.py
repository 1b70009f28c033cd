"""The Numba CPU backend: compiles generated kernel modules for exact signatures.

Only the background compiler (or a synchronous compile) imports this module, so Numba is
loaded the first time a kernel is needed, never by ``import kernel_ext`` or on a call's
critical path.

Each kernel is compiled for one explicit signature per variant, and further compilation is
then disabled, so a call can never trigger a compile (a mismatched call raises instead and
the runner would not make one). Inputs are typed as *read-only* arrays: Numba converts a
writable array to a read-only parameter for free, so one compiled signature serves writable,
read-only (``setflags(write=False)``) and NumPy-owned inputs alike.

* ``k_flat``: ``(intp start, intp stop, C-contiguous 1-D inputs, scalars, 1-D outputs, loop
  addresses)`` -> ``bad`` (or ``(bad, accumulator)`` for a reduction);
* ``k_nd``: ``(intp dims..., any-layout N-d inputs, scalars, C N-d outputs, [accumulator],
  loop addresses)`` -> ``bad``.
"""

from __future__ import annotations

import numpy as np
from numba import from_dtype, types

from . import kernel_cache
from .codegen import KernelSource


def _scalar(dtype: np.dtype) -> types.Type:
    return from_dtype(np.dtype(dtype))


def signature(ksrc: KernelSource, variant: str) -> tuple[types.Type, ...]:
    """The one signature a kernel variant is compiled for, parameter by parameter in the
    order of its call description (:meth:`~.segment_call.SegmentCall.args`)."""
    call = ksrc.call
    assert call is not None
    nd = variant == "nd"
    rank = call.rank if nd else 1
    sig: list[types.Type] = []
    for arg in call.args(variant):
        kind = arg.kind
        if kind in ("start", "stop", "dim"):
            sig.append(types.intp)
        elif kind == "array":
            sig.append(types.Array(_scalar(call.input_dtypes[arg.index]), rank,
                                   "A" if nd else "C", readonly=True))
        elif kind == "scalar":
            sig.append(_scalar(call.input_dtypes[arg.index]))
        elif kind == "output":
            sig.append(types.Array(_scalar(call.output_dtypes[arg.index]), rank, "C"))
        elif kind == "acc":
            assert call.reduction is not None  # (only a reducing segment has an accumulator)
            sig.append(types.Array(_scalar(call.reduction.acc_dtype), call.rank, "C"))
        elif kind in ("loop", "loop_data"):
            sig.append(types.uintp)
        else:
            raise ValueError(f"a CPU kernel has no {kind!r} parameter")
    return tuple(sig)


def signatures(ksrc: KernelSource, variant: str) -> list[tuple[types.Type, ...]]:
    """Every signature a kernel variant is compiled for: :func:`signature`, and for an
    ``nd`` float reduction over a non-last axis also the one whose accumulator has the
    result's dtype (``ReductionPlan.seq_dtype``, which the runner passes when the call
    reproduces NumPy's row-by-row order)."""
    sig = signature(ksrc, variant)
    sigs = [sig]
    red = ksrc.call.reduction if ksrc.call is not None else None
    if variant == "nd" and red is not None and red.seq_dtype is not None:
        args = ksrc.call.args(variant)  # type: ignore[union-attr]
        k = next(j for j, a in enumerate(args) if a.kind == "acc")
        acc = types.Array(_scalar(red.seq_dtype), ksrc.call.rank, "C")  # type: ignore
        sigs.append(sig[:k] + (acc,) + sig[k + 1:])
    return sigs


def graph_signature(descr: tuple) -> tuple[types.Type, ...]:
    """A whole-graph function's signature from its arguments' descriptions."""
    sig: list[types.Type] = []
    for d in descr:
        if d[0] == "array":
            sig.append(types.Array(_scalar(np.dtype(d[1])), d[2], d[3],
                                   readonly=d[4:] != ("writable",)))
        else:
            sig.append(_scalar(np.dtype(d[1])))
    return tuple(sig)


def compile_variant(ksrc: KernelSource, variant: str, descr: tuple | None = None
                    ) -> tuple[object, bool]:
    """Compile (or load from Numba's disk cache) one kernel variant.

    Returns ``(dispatcher, cache_hit)``. A failure while loading cached code (a corrupt
    cache entry) deletes the entry and compiles afresh once.
    """
    if variant.startswith("graph"):
        name, sigs = "graph", [graph_signature(descr or ())]
    else:
        name, sigs = {"flat": "k_flat", "nd": "k_nd"}[variant], signatures(ksrc, variant)
    for attempt in (0, 1):
        module, entry, _ = kernel_cache.load(ksrc.source)
        dispatcher = getattr(module, name)
        try:
            for sig in sigs:
                dispatcher.compile(sig)
        except Exception:
            if attempt:
                raise
            # A corrupt or stale cache entry: remove every file of it and rebuild.
            kernel_cache.purge(entry)
            continue
        if name != "graph":  # the C and A variants share the graph dispatcher
            dispatcher.disable_compile()
        hits = sum(dispatcher.stats.cache_hits.values())
        return dispatcher, hits > 0
    raise AssertionError("unreachable")  # pragma: no cover


__all__ = ["compile_variant", "signature", "signatures"]
