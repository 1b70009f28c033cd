"""Kernel modules per segment: :func:`generate` (memoised by the segment's structure) and
:class:`KernelEmbedding` (a segment's CPU kernels for a whole-graph module)."""

from __future__ import annotations

from ...ir import Node
from ...passes.fusion import Segment
from ..segment_call import SegmentCall
from ..static_shapes import ranked_shape
from .cpu_kernels import CpuKernelWriter
from .cuda_kernel import CudaKernelWriter
from .lowering import node_key
from .writer import EmbeddedKernel, KernelSource, KernelWriter


def segment_key(seg: Segment) -> tuple:
    """The structure a segment's kernel text depends on: each member's :func:`node_key` and
    where its operands come from (an input, a member, a literal), the inputs' dtypes and
    ranks, and which members are outputs. Two segments with one key get one kernel text."""
    pos = {n: ("m", i) for i, n in enumerate(seg.nodes)}
    pos.update({n: ("i", i) for i, n in enumerate(seg.inputs)})
    members = tuple(
        (node_key(n), tuple(pos.get(a) if isinstance(a, Node) else None for a in n.args))
        for n in seg.nodes
    )
    ins = tuple((n.dtype, len(ranked_shape(n))) for n in seg.inputs)
    outs = tuple(seg.nodes.index(o) for o in seg.outputs)
    red = seg.nodes.index(seg.reduction) if seg.reduction is not None else None
    return (members, ins, outs, red, len(seg.domain))


def kernel_writer(seg: Segment, target: str, fast_math: bool = False) -> KernelWriter:
    """The writer of ``seg``'s kernels for ``target`` (CUDA for any target but "cpu")."""
    writer = CpuKernelWriter if target == "cpu" else CudaKernelWriter
    return writer(seg, target, fast_math=fast_math)


class KernelEmbedding:
    """A segment's CPU kernels written for a whole-graph module: :attr:`call` describes them
    before any text is written (so the renderer can pick a variant), :meth:`kernel` writes
    one variant — its constants prefixed with ``prefix`` (several segments share the
    module), its block buffers trailing parameters (:meth:`SegmentCall.args` with
    ``scratch=True``). ``in_range_casts``: its float-to-integer casts whose operand the
    caller proved inside the integer's range (written without the cast's test)."""

    def __init__(
        self,
        seg: Segment,
        prefix: str,
        fast_math: bool = False,
        in_range_casts: frozenset[Node] = frozenset(),
    ) -> None:
        self._writer = CpuKernelWriter(seg, "cpu", prefix=prefix, fast_math=fast_math)
        self._writer.in_range_casts = in_range_casts

    @property
    def call(self) -> SegmentCall:
        return self._writer.segment_call()

    def kernel(
        self,
        variant: str,
        name: str,
        decorator: str = "@_kernel",
        unit_rows: frozenset[str] = frozenset(),
    ) -> EmbeddedKernel:
        """``unit_rows``: the parameters (``in<i>``, ``out<i>``) the caller passes as views
        whose last axis has unit stride (their row blocks are retyped as contiguous)."""
        self._writer.unit_rows = unit_rows
        return self._writer.embedded(variant, name, decorator)

    def scalar_kernel(self, name: str, decorator: str = "@_inline") -> EmbeddedKernel | None:
        """The 0-d segment as a function of scalars (:meth:`.CpuKernelWriter.scalar_kernel`):
        called as ``bad, out0, ... = name(in0, ...)``; None where it needs buffers."""
        w = self._writer
        text = w.scalar_kernel(name, decorator)
        if text is None:
            return None
        return EmbeddedKernel(text, "\n".join(w.const_lines), dict(w.helpers), w.segment_call())


_GENERATED: dict[tuple, KernelSource] = {}


def generate(seg: Segment, target: str = "cpu", fast_math: bool = False) -> KernelSource:
    """The kernel module of ``seg`` for ``target`` ("cpu" or "cuda"), memoised by
    :func:`segment_key` (a retrace with new sizes writes no kernel text); ``fast_math``:
    with :mod:`.fast_math`'s approximations (another text, so another cache key)."""
    try:
        key = (target, fast_math, segment_key(seg))
    except TypeError:
        return kernel_writer(seg, target, fast_math).write()
    got = _GENERATED.get(key)
    if got is None:
        got = kernel_writer(seg, target, fast_math).write()
        if len(_GENERATED) > 2_000:
            _GENERATED.clear()
        _GENERATED[key] = got
    return got
