"""The cost model: is a fused kernel faster than running the same ops through NumPy?

A NumPy op costs a fixed call overhead (argument parsing, allocation) plus, per element, its
compute and the memory it moves: every op reads its operands and writes a fresh temporary.
A fused kernel pays one (larger) call overhead and moves only the segment's inputs and
outputs; its ops run in registers. Both sides call the same code for transcendental functions
(:mod:`.ufunc_loops`), so those cost the same compute on both sides and fusion wins on memory
traffic alone. The figures are medians measured on the 2-core AVX-512 dev machine (NumPy 2,
Numba 0.68); they only need to be right within a factor of about two to place the break-even
size correctly. ``auto`` fuses a segment when it has at least two ops (one op alone moves
the same memory either way) and the saving per element pays the extra call overhead at the
segment's size (one compute-bound op alone, ``tanh`` of a large array, is split over the
cores as NumPy calls instead: :func:`parallel_unary_size`); with sizes unknown at trace time
the kernel decides per call (:attr:`Decision.min_size`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from ..ir import Compute, Node
from ..passes.fusion import Segment

#: Fixed cost of one NumPy op call on a small array, allocation included (µs).
NUMPY_CALL_US = 1.2
#: Fixed cost of one fused segment call: wrapper, kernel dispatch, output allocation (µs).
KERNEL_CALL_US = 3.5
#: Memory cost per byte for a streaming pass that writes fresh arrays (ns/byte, ~15 GB/s).
BYTE_NS = 0.065
#: Per-element compute of a cheap op: NumPy's SIMD loop vs inline in a fused loop (ns).
NUMPY_CHEAP_NS, FUSED_CHEAP_NS = 0.12, 0.05
#: Division / square root: latency-bound in both.
NUMPY_DIV_NS, FUSED_DIV_NS = 0.3, 0.3
#: Integer division, remainder, power and shifts are branchy scalar code inline.
NUMPY_INT_HELPER_NS, FUSED_INT_HELPER_NS = 1.0, 1.5
#: NumPy-loop calls: NumPy's own loop in both (``op.loop_ns``, measured per op; this default
#: for the others); the fused kernel adds two block-buffer copies.
CALL_DEFAULT_NS = 4.0
BUFFER_NS = 0.1
#: A single op this costly per element (NumPy's tanh/exp/log loops and up) is compute-bound:
#: alone it gains nothing in a kernel, but NumPy's own call on each core's share of the array
#: runs at once (ufuncs release the GIL). Measured here (float32, one hand-off ~50 µs):
#: tanh / exp at 200k elements 1.0x / 1.2x, 400k 1.4x / 1.6x, 1M 1.8x / 1.9x; and NumPy's own
#: call beats a kernel calling the same loop through block buffers (1M tanh on two cores:
#: 0.33 ms against 0.48 ms).
HEAVY_OP_NS = 1.0
#: Work (ns, at :data:`HEAVY_OP_NS`-style per-element cost) from which such an op is split.
PARALLEL_UFUNC_MIN_NS = 250_000.0
#: Work (ns) above which a flat kernel is split over the CPU's cores. Handing half a kernel to
#: the pool costs ~55 µs here (thread wake-up, GIL hand-offs); W3 measured at 20k–4M elements
#: gained from 1M on and lost or broke even at 50k–200k, so only ~0.5 ms of work is split.
PARALLEL_MIN_NS = 500_000.0

#: ``jit_compile=True`` may hand a call to the fused executor (Python drives the control flow,
#: large ops run on all cores) once an array input holds this many elements *and* the graph
#: has work the executor splits over threads (:func:`whole_graph_handover`); which of the two
#: serves is then decided by timing both on the calls themselves (the whole-graph runner's
#: handover: a loop over a matrix's rows can win compiled well above this size). The compiled
#: function is single-threaded; the executor pays ~10 µs of Python per op and iteration.
#: Measured on W5b (``while sum(x) > thr: x = tanh(x)``, 37 iterations): at 1M float32 the
#: executor (both cores: split tanh kernel, split exact sum) took 0.55-0.65x the compiled
#: function's time; at 5 elements it costs 10x (Python per iteration). 256k elements carry
#: ~0.3 ms of tanh + sum per iteration, 30x the Python overhead.
HANDOVER_MIN_ELEMENTS = 1 << 18


@dataclass(frozen=True)
class Decision:
    """What the cost model says about one segment."""

    fuse: bool
    min_size: int  # run the kernel only from this many domain elements on
    parallel_size: int  # split over threads from this many elements on
    numpy_ns_per_element: float
    fused_ns_per_element: float
    reason: str = ""


def _itemsize(node: Node) -> int:
    return np.dtype(node.dtype).itemsize


def _is_call(node: Node) -> bool:
    from .codegen import Unsupported, lower

    try:
        return lower(node, "cpu").call is not None
    except Unsupported:
        return False


def op_ns(node: Node) -> tuple[float, float]:
    """Per-element compute of one member node: ``(NumPy, fused)`` in ns."""
    if _is_call(node):
        c = node.op.loop_ns or CALL_DEFAULT_NS
        return c, c + BUFFER_NS
    dtype = np.dtype(node.dtype)
    compute = node.op.compute
    if compute is Compute.DIVISION:
        return NUMPY_DIV_NS, FUSED_DIV_NS
    if compute is Compute.INT_HELPER and dtype.kind in "iu":
        return NUMPY_INT_HELPER_NS, FUSED_INT_HELPER_NS
    return NUMPY_CHEAP_NS, FUSED_CHEAP_NS


def _domain_operand(arg: object, domain: tuple) -> bool:
    """Does NumPy stream a full domain-sized operand for ``arg``? (broadcast small ones: no)"""
    return (
        isinstance(arg, Node)
        and arg.shape is not None
        and len(arg.shape) == len(domain)
        and arg.shape == domain
    )


def per_element(seg: Segment) -> tuple[float, float]:
    """``(NumPy, fused)`` cost per domain element of a segment, ns."""
    numpy_ns = 0.0
    fused_ns = 0.0
    for n in seg.nodes:
        if n is seg.reduction:
            x = n.args[0]
            numpy_ns += NUMPY_CHEAP_NS + _itemsize(x) * BYTE_NS
            fused_ns += FUSED_CHEAP_NS
            continue
        np_c, fu_c = op_ns(n)
        moved = sum(_itemsize(a) for a in n.args if _domain_operand(a, seg.domain))
        numpy_ns += np_c + (moved + _itemsize(n)) * BYTE_NS
        fused_ns += fu_c
    io = sum(_itemsize(a) for a in seg.inputs if _domain_operand(a, seg.domain))
    io += sum(_itemsize(o) for o in seg.outputs if o is not seg.reduction)
    fused_ns += io * BYTE_NS
    return numpy_ns, fused_ns


def parallel_unary_size(node: Node) -> int | None:
    """From how many elements a unary compute-bound ufunc (``tanh``, ``exp``, ``log``, ...)
    is split over the cores as plain NumPy calls (:func:`~.parallel.parallel_ufunc`), or None:
    not such an op, or one core. One op alone moves the same memory fused or not, so it is
    not worth a kernel; its compute is worth the cores."""
    ufunc = node.op.ufunc
    if (
        ufunc is None
        or ufunc.nin != 1
        or ufunc.nout != 1
        or node.params
        or (os.cpu_count() or 1) < 2
        or not isinstance(node.args[0], Node)
    ):
        return None
    key = (node.op, node.args[0].dtype, node.dtype)
    size = _UNARY_SIZES.get(key, 0)
    if size == 0:  # (asked for every emitted node: answered once per op and dtypes)
        numpy_ns = op_ns(node)[0] if _is_call(node) else 0.0
        size = _UNARY_SIZES[key] = (
            max(1, int(PARALLEL_UFUNC_MIN_NS / numpy_ns)) if numpy_ns >= HEAVY_OP_NS else None
        )
    return size


_UNARY_SIZES: dict[tuple, int | None] = {}


def decide(seg: Segment, mode: str = "auto") -> Decision:
    """Fuse ``seg``? ``mode`` "auto" asks the model; "numba" fuses every compilable segment."""
    numpy_ns, fused_ns = per_element(seg)
    par = max(1, int(PARALLEL_MIN_NS / max(fused_ns, 1e-3)))
    if os.cpu_count() in (None, 1):
        par = 1 << 62
    n_ops = len(seg.nodes)
    if mode != "auto":
        return Decision(True, 0, par, numpy_ns, fused_ns, "backend='numba' fuses everything")
    if n_ops < 2:
        return Decision(
            False, 0, par, numpy_ns, fused_ns, "a single op moves the same memory fused or not"
        )
    saving = numpy_ns - fused_ns
    if saving <= 0:
        return Decision(False, 0, par, numpy_ns, fused_ns, "no per-element saving")
    overhead_ns = (KERNEL_CALL_US - NUMPY_CALL_US * n_ops) * 1000.0
    min_size = max(1, math.ceil(overhead_ns / saving)) if overhead_ns > 0 else 1
    size = _static_size(seg.domain)
    if size is not None and size < min_size:
        return Decision(
            False, min_size, par, numpy_ns, fused_ns, f"{size} elements < break-even {min_size}"
        )
    return Decision(True, min_size, par, numpy_ns, fused_ns, "saves memory traffic")


def whole_graph_handover(parallel_sizes: list[int]) -> int | None:
    """The input size from which a ``jit_compile=True`` call may run on the fused executor
    (the two are timed from there on, per size class), or None (never). ``parallel_sizes``:
    the sizes from which the executor's ops split over threads (each fused segment's
    :attr:`Decision.parallel_size`, the parallel sum's threshold); without any, or on one
    core, the compiled function always runs."""
    if not parallel_sizes or (os.cpu_count() or 1) < 2:
        return None
    return max(HANDOVER_MIN_ELEMENTS, min(parallel_sizes))


def _static_size(shape: tuple) -> int | None:
    if any(d is None for d in shape):
        return None
    return math.prod(shape)


__all__ = [
    "HANDOVER_MIN_ELEMENTS",
    "Decision",
    "decide",
    "op_ns",
    "per_element",
    "whole_graph_handover",
]
