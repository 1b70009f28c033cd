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
from numba import config, from_dtype, types

from . import kernel_cache
from .codegen import KernelSource
from .numba_decorators import kernel
from .parallel import RowSplit, row_split_shares
from .row_fusion import ROWS_FUNCTION, SPLIT_NAME


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
            sig.append(
                types.Array(
                    _scalar(call.input_dtypes[arg.index]), rank, "A" if nd else "C", readonly=True
                )
            )
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
        sigs.append(sig[:k] + (acc,) + sig[k + 1 :])
    return sigs


def graph_signature(descr: tuple) -> tuple[types.Type, ...]:
    """A whole-graph function's signature from its arguments' descriptions."""
    sig: list[types.Type] = []
    for d in descr:
        if d[0] == "array":
            sig.append(
                types.Array(_scalar(np.dtype(d[1])), d[2], d[3], readonly=d[4:] != ("writable",))
            )
        else:
            sig.append(_scalar(np.dtype(d[1])))
    return tuple(sig)


def compile_variant(
    ksrc: KernelSource, variant: str, descr: tuple | None = None
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
        if name == "graph":
            # each variant (C, any layout) a dispatcher of its own, so that compilation can
            # be disabled after its one signature as for the other variants
            dispatcher = kernel(dispatcher.py_func)
        try:
            split = _row_split(module, sigs[0]) if name == "graph" else None
            if split is not None:  # (its row function is what runs: no graph compiled)
                # (``rows`` is a Numba dispatcher, which has ``stats``)
                hits = split.rows.stats.cache_hits  # type: ignore[attr-defined]
                return split, sum(hits.values()) > 0
            for sig in sigs:
                dispatcher.compile(sig)
        except Exception:
            if attempt:
                raise
            # A corrupt or stale cache entry: remove every file of it and rebuild.
            kernel_cache.purge(entry)
            continue
        # Disabled, a dispatcher converts a writable array to the read-only parameter (and
        # a C array to an "A" one); still able to compile, Numba requires an exact match and
        # compiles one on the calling thread instead: the first call after a whole-graph
        # function's background compile blocked for seconds on a second compile of it.
        dispatcher.disable_compile()
        hits = sum(dispatcher.stats.cache_hits.values())
        return dispatcher, hits > 0
    raise AssertionError("unreachable")  # pragma: no cover


def _row_split(module: object, sig: tuple[types.Type, ...]) -> RowSplit | None:
    """A row-fused function (:mod:`.row_fusion`) large enough to split its rows over
    threads: its row function compiled for ``sig`` (the graph function's) and the outputs,
    as a :class:`~.parallel.RowSplit`; else None."""
    desc = getattr(module, SPLIT_NAME, None)
    if desc is None:
        return None
    nrows, width, outputs = desc
    # (numba.config sets its options at import time: the stubs do not know them)
    threads = config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
    shares = row_split_shares(nrows, width, threads)
    if shares < 2:
        return None
    rows = kernel(getattr(module, ROWS_FUNCTION).py_func)
    outs = tuple(types.Array(_scalar(np.dtype(dt)), len(shape), "C") for shape, dt in outputs)
    rows.compile((types.intp, types.intp) + tuple(sig) + outs)
    rows.disable_compile()
    return RowSplit(rows, nrows, outputs, shares)


__all__ = ["compile_variant", "signature", "signatures"]
