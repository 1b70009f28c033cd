"""The fused executor: the NumPy executor's generated code with fused segments swapped in.

A graph compiled for ``backend="numba"`` (or ``"auto"``) is partitioned into segments
(:mod:`kernel_ext.passes.fusion`); the cost model keeps the profitable ones (:mod:`.cost`). The
executor is still one generated Python function, as in :mod:`.numpy_backend`, except that each
kept segment becomes one line calling its *runner* (:mod:`.runners`)::

    v_out, v_total, = _seg0(v_x, v_a, v_b)

Heavy unary ufuncs on large arrays run as NumPy's own call split over the cores, and with
``exact_sums`` plain float sums as NumPy's pairwise sum split the same way (:mod:`.parallel`).
Kernels are compiled in the background (:mod:`.compiler`); this module never imports Numba.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ..ir import AbstractValue, Graph, Node, OpGroup, OpKind
from ..ir.params import ReduceParams, WhileParams
from ..ir.structure import TreeNode
from ..passes import short_sums
from ..passes.fusion import Segment, partition, schedule
from . import cost
from .codegen import KernelSource, can_compile, generate
from .compiler import (
    COMPILER,
    HOT_ELEMENTS,
    KernelHandle,
    handle_for,
    set_synchronous,
    wait_for_kernels,
)
from .emit import Emitter, Namer, Scope, Source, output_expr
from .emit.literals import Unsupported
from .parallel import parallel_sum, parallel_ufunc, parallel_ufunc_sum
from .runners import RUNTIME, CpuRunnerWriter, CudaRunnerWriter
from .segment_call import SegmentCall
from .static_shapes import aval_of_node


class SegmentPlan:
    """A segment chosen for fusion, its kernel and the cost model's decision."""

    def __init__(
        self, seg: Segment, ksrc: KernelSource, decision: cost.Decision, handle: KernelHandle
    ) -> None:
        self.segment = seg
        self.ksrc = ksrc
        self.decision = decision
        self.handle = handle


def plain_float_sum(node: Node) -> bool:
    """Is ``node`` a float32/float64 ``sum`` over all axes in its input's dtype, nothing else
    (no keepdims)? :func:`parallel_sum` computes exactly those, bitwise."""
    if node.op is not OpKind.SUM or not node.args or not isinstance(node.args[0], Node):
        return False
    x = node.args[0]
    # (a sum's operand is one value: only get_output reads a multi-output node)
    if not isinstance(x.aval, AbstractValue) or x.aval.shape in (None, ()) or node.aval is None:
        return False
    dt = np.dtype(x.aval.dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)) or np.dtype(node.dtype) != dt:
        return False
    rank = len(x.aval.shape)
    params = cast("ReduceParams", node.params)
    axis = params.axis
    if axis is not None:
        axes = {int(a) % rank for a in (axis if isinstance(axis, tuple) else (axis,))}
        if axes != set(range(rank)):
            return False
    extra = set(node.params) - {"axis", "keepdims", "dtype"}
    return not extra and not params.keepdims and params.dtype in (None, dt)


def plan_segments(
    graph: Graph, mode: str, target: str = "cpu", exact_sums: bool = False, fast_math: bool = False
) -> list[SegmentPlan]:
    """Segments of ``graph`` worth fusing under ``mode`` ("auto" or "numba"); ``fast_math``:
    kernels with :mod:`.fast_math`'s approximations.

    ``exact_sums``: a segment that is only a plain float sum (:func:`plain_float_sum`) is not
    fused; the executor sums with :func:`parallel_sum` (NumPy's bits) instead of the float64
    lanes (``jit_compile=True`` graphs, whose compiled sums are NumPy's own)."""
    # "auto" keeps every result bitwise NumPy's except float sums and means (another
    # summation order, within the documented bound); float max/min stay in NumPy unless the
    # user asked for backend="numba".
    auto = mode == "auto"

    def eligible(node: Node) -> bool:
        return can_compile(node, target, auto, fast_math)

    plans = []
    for seg in partition(graph, eligible):
        if (
            exact_sums
            and not seg.elementwise
            and seg.reduction is not None
            and plain_float_sum(seg.reduction)
        ):
            continue
        if (
            (mode == "auto" or exact_sums)
            and target == "cpu"
            and len(seg.nodes) == 1
            and seg.reduction is None
            and cost.parallel_unary_size(seg.nodes[0]) is not None
        ):
            continue  # NumPy's own call, split over the cores (_FusedEmitter.emit_node)
        decision = cost.decide(seg, mode)
        if not decision.fuse:
            continue
        try:
            ksrc = generate(seg, target, fast_math)
        except Unsupported:
            continue
        plans.append(SegmentPlan(seg, ksrc, decision, handle_for(ksrc)))
    return plans


# ---------------------------------------------------------------------------------------------
# The executor
# ---------------------------------------------------------------------------------------------


class _FusedEmitter(Emitter):
    """The NumPy executor's emitter, with each planned segment emitted as one runner call
    (in every graph: the top level and control-flow bodies alike)."""

    def __init__(
        self,
        namer: Namer,
        mode: str,
        target: str,
        exact_sums: bool = False,
        fast_math: bool = False,
    ) -> None:
        super().__init__(namer)
        self.mode = mode
        self.fast_math = fast_math
        self.target = target
        self.exact_sums = exact_sums
        self.parallel_sums = 0  # plain float sums emitted as parallel_sum calls
        self.parallel_ufuncs = 0  # heavy unary ufuncs emitted as parallel_ufunc calls
        self.parallel_ufunc_size: int | None = None  # the smallest size they split from
        # Loops whose test sums a loop variable that the body makes with one split ufunc:
        # the test's placeholder / the body's node -> the variable carrying that sum.
        self._sum_of_input: dict[Node, str] = {}
        self._sum_into: dict[Node, str] = {}
        self.functions: list[str] = []
        self.plans: list[SegmentPlan] = []
        # graph -> its segment plans and schedule (planned once: reinplacing reads the
        # schedule before emission follows it)
        self._schedules: dict[int, tuple[Graph, list[SegmentPlan], list]] = {}

    def schedule(self, graph: Graph) -> tuple[list[SegmentPlan], list]:
        """``graph``'s planned segments and its steps in run order (nodes and segments)."""
        known = self._schedules.get(id(graph))
        if known is None or known[0] is not graph:
            plans = plan_segments(graph, self.mode, self.target, self.exact_sums, self.fast_math)
            order = schedule(graph, [p.segment for p in plans]) if plans else list(graph.nodes)
            known = self._schedules[id(graph)] = (graph, plans, order)
        return known[1], known[2]

    def steps(self, graph: Graph) -> list:
        return [
            ((item,), item.inputs) if isinstance(item, Node) else (item.nodes, item.inputs)
            for item in self.schedule(graph)[1]
        ]

    def emit_node(self, node: Node, scope: Scope, out: Source) -> None:
        if self.exact_sums and plain_float_sum(node):
            self.parallel_sums += 1
            x = scope.var(node.args[0])
            known = self._sum_of_input.get(node.args[0])
            expr = f"_parallel_sum({x})"
            if known:
                expr = f"{known} if {known} is not None else {expr}"
            out.line(f"{scope.var(node)} = {expr}")
            return
        size = self._parallel_size(node)
        aval = aval_of_node(node)
        if size is not None and (aval.size is None or aval.size >= size):
            uf = self.namer.bind(node.op.ufunc, "_uf")
            dt = self.namer.bind(np.dtype(node.dtype), "_dt")
            self.parallel_ufuncs += 1
            self.parallel_ufunc_size = min(self.parallel_ufunc_size or size, size)
            x, v, total = scope.var(node.args[0]), scope.var(node), self._sum_into.get(node)
            if total:
                out.line(f"{v}, {total} = _parallel_ufunc_sum({uf}, {x}, {dt}, {size})")
            else:
                out.line(f"{v} = _parallel_ufunc({uf}, {x}, {dt}, {size})")
            return
        if node in self._sum_into:  # (not split here: the test sums it itself)
            out.line(f"{self._sum_into[node]} = None")
        super().emit_node(node, scope, out)

    def _parallel_size(self, node: Node) -> int | None:
        """The size from which ``node`` runs as :func:`parallel_ufunc`, or None."""
        if (
            self.target != "cpu"
            or not (self.mode == "auto" or self.exact_sums)
            or not node.args
            or not isinstance(node.args[0], Node)
        ):
            return None
        return cost.parallel_unary_size(node)

    def _emit_while(self, node: Node, v: str, args: list[str], out: Source) -> None:
        if self.exact_sums:
            loop = cast("WhileParams", node.params)
            cond, body = loop.cond, loop.body
            for i in range(loop.n_vars):
                ph, made = cond.inputs[i], body.outputs[i]
                if (
                    made.op.group is OpGroup.ELEMENTWISE
                    and self._parallel_size(made) is not None
                    and any(plain_float_sum(c) and c.args[0] is ph for c in cond.nodes)
                ):
                    total = f"known_sum{len(self._sum_into)}"
                    out.line(f"{total} = None")
                    self._sum_of_input[ph] = self._sum_into[made] = total
        super()._emit_while(node, v, args, out)

    def emit_graph(
        self, graph: Graph, scope: Scope, out: Source, free_temporaries: bool = False
    ) -> list[str]:
        plans, order = self.schedule(graph)
        if not plans:
            return super().emit_graph(graph, scope, out, free_temporaries)
        by_segment = {id(p.segment): p for p in plans}
        resident = _device_resident(graph, plans)
        for item in order:
            if isinstance(item, Segment):
                plan = by_segment[id(item)]
                idx = len(self.plans)
                self.plans.append(plan)
                hot = HOT_ELEMENTS if self.mode == "auto" else 0
                keep = frozenset(i for i, o in enumerate(item.outputs) if o in resident)
                writer: CpuRunnerWriter | CudaRunnerWriter
                if plan.ksrc.target == "cuda":
                    writer = CudaRunnerWriter(plan, idx, self.namer, hot, keep)
                else:
                    writer = CpuRunnerWriter(plan, idx, self.namer, hot)
                runner = writer.runner()
                self.functions.append("\n".join(writer.out.lines))
                ins = ", ".join(scope.var(n) for n in item.inputs)
                outs = "".join(scope.var(o) + ", " for o in item.outputs)
                out.line(f"{outs} = {runner}({ins})")
            else:
                self.emit_node(item, scope, out)
        return [scope.var(o) for o in graph.outputs]


def _reads_in_place(shape: tuple | None, domain: tuple) -> bool:
    """Can a CUDA kernel over ``domain`` read a device array of ``shape`` as it is: the same
    rank, every size equal to the domain's or 1 (a broadcast dim, read at index 0)?"""
    if shape is None or len(shape) != len(domain) or not shape:
        return False
    return all(s == 1 or (s is not None and s == d) for s, d in zip(shape, domain))


def _device_resident(graph: Graph, plans: list[SegmentPlan]) -> set[Node]:
    """CUDA segment outputs that may stay on the device: every reader is another CUDA segment
    taking it as an array it can read in place (:func:`_reads_in_place`), and the graph does
    not return it. (Readers in a ``cond``/``while`` body read through the control-flow node,
    host code.)"""
    cuda_plans = [p for p in plans if p.ksrc.target == "cuda"]
    if not cuda_plans:
        return set()
    seg_of = {n: p for p in plans for n in p.segment.nodes}
    outputs = set(graph.outputs)
    users = graph.users()
    resident: set[Node] = set()
    for p in cuda_plans:
        for o in p.segment.outputs:
            if o is p.segment.reduction or o in outputs:
                continue
            readers = [u for u in users.get(o, ()) if seg_of.get(u) is not p]
            ok = bool(readers)
            for u in readers:
                q = seg_of.get(u)
                if (
                    q is None
                    or q.ksrc.target != "cuda"
                    or q.segment.inputs.index(o) in cast("SegmentCall", q.ksrc.call).scalar_inputs
                    or not _reads_in_place(o.shape, q.segment.domain)
                ):
                    ok = False
                    break
            if ok:
                resident.add(o)
    return resident


_CODE: dict[str, Any] = {}  # executor source -> compiled code (retraces repeat the text)


def _short_sums_fused(graph: Graph, mode: str, exact_sums: bool, fast_math: bool) -> Graph:
    """``graph`` with its top-level short float sums written out as additions in NumPy's
    order (:mod:`~kernel_ext.passes.short_sums`) when every addition then runs in a fused
    kernel; else ``graph`` itself (op by op, the written-out sum would cost ~4 NumPy calls
    per element of the axis instead of one)."""
    rewritten, changed = short_sums.unroll_top_level(graph)
    if not changed:
        return graph
    fused_nodes = {
        n
        for p in plan_segments(rewritten, mode, "cpu", exact_sums, fast_math)
        for n in p.segment.nodes
    }
    if any(short_sums.is_term(n) and n not in fused_nodes for n in rewritten.nodes):
        return graph
    return rewritten


def compile_fused(
    graph: Graph,
    tree: TreeNode,
    n_params: int,
    mode: str = "auto",
    target: str = "cpu",
    filename: str = "<kx-fused>",
    exact_sums: bool = False,
    stats: dict[str, int] | None = None,
    fast_math: bool = False,
) -> tuple[Callable[..., Any], str, list[SegmentPlan]]:
    """Generate and exec the fused executor; returns ``(run, source, plans)``; ``fast_math``:
    its kernels use :mod:`.fast_math`'s approximations.

    ``exact_sums``: plain float sums run as :func:`parallel_sum` (NumPy's bits) instead of
    fused lanes; ``stats`` (if given) receives ``parallel_sums``, how many were emitted."""
    if target == "cpu":
        graph = _short_sums_fused(graph, mode, exact_sums, fast_math)
    namer = Namer()
    namer.globals.update(RUNTIME)
    namer.globals.update(
        _deferred=COMPILER.deferred,
        _flush=COMPILER.flush,
        _parallel_sum=parallel_sum,
        _parallel_ufunc=parallel_ufunc,
        _parallel_ufunc_sum=parallel_ufunc_sum,
    )
    emitter = _FusedEmitter(namer, mode, target, exact_sums, fast_math)
    scope = Scope("v_")
    params = ", ".join(f"p{i}" for i in range(n_params))
    out = Source()
    with out.block(f"def run({params}):") as body:
        emitter.plan_writes(graph, tree)
        emitter.emit_graph(graph, scope, body)
        result = output_expr(tree, graph, namer, scope)
        if emitter.plans:
            body.line(f"_r = {result}")
            # Kernels requested during this call start compiling now that its work is done.
            with body.block("if _deferred:") as deferred:
                deferred.line("_flush()")
            body.line("return _r")
        else:
            body.line(f"return {result}")
    source = "\n\n".join([*emitter.functions, "\n".join(out.lines)]) + "\n"
    code = _CODE.get(source)
    if code is None:
        code = compile(source, filename, "exec")
        if len(_CODE) > 1000:
            _CODE.clear()
        _CODE[source] = code
    exec(code, namer.globals)
    if stats is not None:
        stats["parallel_sums"] = emitter.parallel_sums
        stats["parallel_ufuncs"] = emitter.parallel_ufuncs
        if emitter.parallel_ufunc_size is not None:
            stats["parallel_ufunc_size"] = emitter.parallel_ufunc_size
    run = namer.globals["run"]
    if any(p.ksrc.target == "cuda" for p in emitter.plans):
        run = _with_call_scope(run)
    return run, source, emitter.plans


def _with_call_scope(run: Callable[..., Any]) -> Callable[..., Any]:
    """``run`` inside a CUDA :class:`~.numba_cuda.call_scope` (each graph input goes to the
    device once per call); the CUDA backend, and Numba with it, imported at the first call."""
    scope: Any = None

    def run_cuda(*params: Any) -> Any:
        nonlocal scope
        if scope is None:
            from .numba_cuda import call_scope as scope
        with scope(params):
            return run(*params)

    return run_cuda


# set_synchronous / wait_for_kernels: re-exported, the documented switches of tests and
# benchmarks (``kernel_ext.backends.fused.set_synchronous(True)``).
__all__ = [
    "SegmentPlan",
    "compile_fused",
    "plain_float_sum",
    "plan_segments",
    "set_synchronous",
    "wait_for_kernels",
]
