"""The whole-graph compiler's size limits, its fallback signal, and the reasons it gives for
the ops it leaves to the fused executor (which ops it compiles: :func:`.writer.compiles`)."""

from __future__ import annotations

from ...ir import FallbackReasons, OpGroup

#: Graphs with more ops than this (sub-graphs counted) are not compiled as one function.
MAX_OPS = 800
SIGNAL = "kx-fallback"  # the message of the FloatingPointError that asks for a NumPy rerun

#: Most arguments of an inlined 0-d segment kernel: CPython 3.11 compiles a call with more
#: than 30 into a ``*args`` call, which Numba's inliner refuses (a 30-output 0-d segment).
INLINE_MAX_ARGS = 28

#: Shortest run of chained matrix products emitted as a loop (:meth:`GraphWriter._matmul_chains`).
REROLL_MIN = 3

_FUSED = "the graph runs as fused segments"

#: Why the whole-graph compiler has no form for an op: a graph holding one runs on the fused
#: executor instead (with a warning under ``jit_compile=True``, naming the op).
FALLBACK_REASONS: FallbackReasons = {
    OpGroup.STATEFUL: "variables, prints and random draws keep their order at each call "
    f"through Python; {_FUSED}",
    OpGroup.OPAQUE: f"a NumPy function run as it is cannot be called from compiled code; {_FUSED}",
    OpGroup.LINALG: "not written as a loop (matmul, dot, outer, inv, det, solve, convolve "
    f"are; factorisations and einsum are not); {_FUSED}",
    OpGroup.SORTING: f"not written as a loop (sort, argsort, unique and searchsorted are); "
    f"{_FUSED}",
    OpGroup.REDUCTION: f"not written as a loop (sum, mean, max, min, argmax, std, var, median "
    f"and the like are); {_FUSED}",
    OpGroup.SCAN: f"not written as a loop (cumsum and cumprod are); {_FUSED}",
    OpGroup.SHAPE: f"not written as a loop (reshape, transpose, concatenate, stack, flip, pad, "
    f"... are); {_FUSED}",
    OpGroup.INDEXING: f"not written as a loop (getitem, setitem, ufunc.at, bincount, nonzero "
    f"are); {_FUSED}",
    OpGroup.CREATION: "an array of run-time length from scalars, not written as a loop (a "
    f"counted kx.range loop makes none); {_FUSED}",
    OpGroup.ELEMENTWISE: f"no kernel form (see the fused CPU column); {_FUSED}",
}
