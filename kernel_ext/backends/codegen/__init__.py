"""Kernel source generation: one self-contained Numba module per fused segment.

This module is pure text generation (it never imports Numba). For a segment found by
:func:`kernel_ext.passes.fusion.partition` it writes the Python source of a module holding
the segment's kernels; the Numba backends write that source to the kernel cache, import it and
compile it (``numba_cpu``/``numba_cuda``).

Exactness is the design constraint. Every value in a kernel has exactly the dtype the tracer
decided (NumPy 2 / NEP 50 rules): each op's operands are cast to the dtypes of the NumPy loop
that ``ufunc.resolve_dtypes`` picks, constants are typed (``np.float32(0.5)``), and every
result is cast to the node's dtype, so Numba's own typing (which widens small integers and
turns ``float32 + 0.5`` into float64) never changes a result. Ops are lowered three ways:

* **inline** — arithmetic, comparisons, ``where``, casts, ``clip``, min/max, bit ops: written
  out with NumPy's exact semantics (integer division by zero gives 0, shifts past the width
  give 0 or -1, NaN propagates through ``maximum`` ...), bitwise equal to NumPy;
  On the CPU also the float functions IEEE defines exactly (``floor``, ``ceil``, ``trunc``,
  ``rint``, ``sqrt``: any correct implementation gives NumPy's bits) of 0-d values;
* **NumPy loop calls** (CPU) — transcendental and other float functions (``tanh``, ``exp``,
  ``power``, ``arctan2``, float ``floor_divide`` ...) call NumPy's own inner loop
  (:mod:`.ufunc_loops`) on cache-sized blocks: bitwise equal to NumPy at NumPy's SIMD speed;
* **device math** (CUDA) — ``math.exp``/``math.tanh``/... of the CUDA target (libdevice),
  within a few ulp of NumPy (documented in docs/ARCHITECTURE.md);
* **fast math** (CPU, opt-in: ``kx.function(..., fast_math=True)``) — ``exp``, ``log``,
  ``tanh``, ``sin``, ``cos`` and float32 ``power`` as inline approximations
  (:mod:`.fast_math`), within a tested ulp bound of NumPy instead of bitwise, so a chain of
  them vectorises as one loop. The flag is part of every memo key here (:func:`lower`,
  :func:`generate`) and changes the kernel text, hence its cache key: a fast-math kernel
  never serves an exact function.

Values that only NumPy defines oddly (a float -> int cast of NaN or an out-of-range value, an
integer power with a negative exponent, which NumPy answers with an error) set the kernel's
``bad`` flag instead; the caller then reruns the segment with NumPy, so the result (or the
error) is NumPy's own.

Kernels are specialised on dtypes, rank and the block structure, never on sizes: one compiled
kernel serves every shape of a signature family (a retrace with new sizes reuses it).

Each kernel module comes with its :class:`~.segment_call.SegmentCall` (``KernelSource.call``):
the parameters of every variant, in the order the renderers of the host side pass them.

Kernel layout (CPU). ``k_flat(start, stop, *arrays, *scalars, *outputs, *loops)`` runs over
contiguous 1-D views of same-shape inputs (a range, so the caller can split it over threads);
``k_nd(*dims, *arrays, *scalars, *outputs, [acc], *loops)`` runs over broadcast, strided N-d
views. Both walk the (last) dimension in blocks of :data:`BLOCK` elements; a block runs in
*stages*: one vectorisable loop per stage, NumPy loop calls between stages on the block's
buffers. A flat reduction accumulates element ``blk + j`` into lane ``j`` (one lane per block
position, so LLVM vectorises it without reassociating anything), in float64 for float sums,
and folds the lanes pairwise every :data:`CHUNK_BLOCKS` blocks.

The package's modules (dtypes and typed constants come from :mod:`..emit.literals`, which
every generator shares): :mod:`.inline_templates` and :mod:`.lowering` (how each op is
computed), :mod:`.reductions` (:class:`ReductionPlan`), :mod:`.helper_templates` (helper
functions emitted into kernel modules), :mod:`.writer` (the writer's common core),
:mod:`.cpu_kernels` and :mod:`.cuda_kernel` (the kernels per target) and :mod:`.generation`
(:func:`generate`, :class:`KernelEmbedding`). The settings below are read through this
package at each use, so a value set here (``codegen.BITWISE_ONLY = True``) takes effect.
"""

from __future__ import annotations

from ..emit.literals import (
    SUPPORTED_DTYPES,
    Unsupported,
    const_source,
    ctor,
    default_nan,
    dtname,
    literal_into,
    literal_value,
)
from .generation import KernelEmbedding, generate, segment_key
from .lowering import (
    KERNEL_FALLBACK_REASONS,
    NON_UFUNC_LOWERINGS,
    Lowering,
    can_compile,
    cuda_fallback_reasons,
    kernel_form,
    loop_dtypes,
    lower,
    node_key,
)
from .reductions import ReductionPlan, reduction_plan
from .writer import EmbeddedKernel, KernelSource

#: Format version of generated kernels; part of every cache key.
CODEGEN_VERSION = "3"
#: The import line of the wrapping integer arithmetic every kernel module uses (``module``:
#: ``numba_decorators`` on the CPU, ``numba_cuda`` for CUDA kernels).
WRAPPING_IMPORT = (
    "from kernel_ext.backends.{module} import wrapping_add as _wadd, "
    "wrapping_sub as _wsub, wrapping_mul as _wmul"
)
#: Elements per block of a staged kernel (buffers stay in L1/L2).
BLOCK = 1024
#: Blocks a flat reduction's lanes accumulate before they are folded (so each lane sums at
#: most this many values; see ``CpuKernelWriter._lane_fold``).
CHUNK_BLOCKS = 64

#: When True, float reductions stay in NumPy for every backend: every fused result is then
#: bitwise equal to NumPy's, NaN payloads included. Fused float sums accumulate in float64
#: lanes folded pairwise, another summation order than NumPy's pairwise sums, so they agree
#: with NumPy within rounding (the bound in docs/backends.md); ``backend="auto"`` fuses float
#: sums and means but keeps float max/min in NumPy (see :func:`reduction_plan`).
BITWISE_ONLY = False

__all__ = [
    "BITWISE_ONLY",
    "BLOCK",
    "CHUNK_BLOCKS",
    "CODEGEN_VERSION",
    "KERNEL_FALLBACK_REASONS",
    "NON_UFUNC_LOWERINGS",
    "SUPPORTED_DTYPES",
    "WRAPPING_IMPORT",
    "EmbeddedKernel",
    "KernelEmbedding",
    "KernelSource",
    "Lowering",
    "ReductionPlan",
    "Unsupported",
    "can_compile",
    "const_source",
    "ctor",
    "cuda_fallback_reasons",
    "default_nan",
    "dtname",
    "generate",
    "kernel_form",
    "literal_into",
    "literal_value",
    "loop_dtypes",
    "lower",
    "node_key",
    "reduction_plan",
    "segment_key",
]
