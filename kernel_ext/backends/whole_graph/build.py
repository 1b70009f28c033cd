"""``compile_whole_graph``: the generated module, its runner and the handover
between the compiled function and the fused executor."""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...ir import Graph, Node, OpKind
from ...ir.params import CondParams, PlaceholderParams, WhileParams
from ...ir.structure import TreeNode
from ...passes import prune_dead_code
from ...passes.short_sums import unroll_short_sums
from .. import parallel, row_fusion
from ..codegen import KernelSource
from ..compiler import COMPILER, KernelHandle, SegmentReport, handle_for, segment_reports
from ..cost import whole_graph_handover
from ..emit import Namer, Scope, access_expr, output_expr
from ..emit.literals import Unsupported
from ..emit.source import STEP, Source
from ..executable import Executable
from ..fused import compile_fused
from ..static_shapes import aval_of_node
from .direct import DirectEntries
from .support import SIGNAL
from .tiling import row_tiling
from .writer import GraphWriter

#: Ops the compiled function runs better than the fused executor at any size
#: (:func:`compile_whole_graph`'s handover)
_COMPILED_BETTER = frozenset(
    {OpKind.SETITEM, OpKind.ARGMIN, OpKind.ARGMAX, OpKind.UFUNC_AT, OpKind.BINCOUNT}
)


def _holds(graph: Graph, ops: frozenset[OpKind]) -> bool:
    """Does ``graph`` (or a branch or loop body in it) hold one of ``ops``?"""
    for node in graph.nodes:
        if node.op in ops:
            return True
        if node.op is OpKind.COND and any(
            _holds(g, ops) for g in cast("CondParams", node.params).branches
        ):
            return True
        if node.op is OpKind.WHILE:
            loop = cast("WhileParams", node.params)
            if _holds(loop.cond, ops) or _holds(loop.body, ops):
                return True
    return False


# ---------------------------------------------------------------------------------------------
# The executable
# ---------------------------------------------------------------------------------------------


def compile_whole_graph(
    graph: Graph, tree: TreeNode, n_params: int, name: str = "graph", fast_math: bool = False
) -> Executable:
    """The whole-graph executable of ``graph``, or the fused executor (with a warning naming
    the op) when the graph holds ops this compiler does not cover; ``fast_math``: both with
    :mod:`.fast_math`'s approximations in their kernels."""
    t0 = time.perf_counter()
    # The executor for calls the compiled function cannot take (before it is compiled, a
    # NumPy-only value, large inputs: see _runner). Its plain float sums are NumPy's own
    # (split over threads), as the compiled function's are, so every path gives one result.
    stats: dict[str, int] = {}
    fallback, fb_source, plans = compile_fused(
        graph,
        tree,
        n_params,
        mode="numba",
        filename=f"<kx-fused {name}>",
        exact_sums=True,
        stats=stats,
        fast_math=fast_math,
    )
    sizes = [p.decision.parallel_size for p in plans if p.ksrc.target == "cpu"]
    if stats.get("parallel_sums"):
        sizes.append(parallel.SUM_PARALLEL_MIN)
    if stats.get("parallel_ufunc_size"):
        sizes.append(stats["parallel_ufunc_size"])
    # The compiled function's own graph: short float sums written out in NumPy's order
    # (passes/short_sums.py), so they fuse with the work around them.
    compiled = _for_compiling(graph)
    # Work the compiled function does better than the executor keeps it at every size:
    # writes (a write costs its region there; the executor computes the value into a
    # temporary and copies it, on one thread), short sums written out, and the ops the
    # executor leaves to NumPy (argmin, ufunc.at, bincount). W11 (Jacobi, 1000x1000, 100
    # sweeps): the executor took 2.7-5.9x the hand loop's time, the compiled function
    # 1.0-1.4x; W13 (k-means step): the executor 0.7x NumPy's time, the compiled one 0.12x.
    keep = (
        compiled is not graph
        or _holds(graph, _COMPILED_BETTER)
        or row_tiling(compiled) is not None
        or row_fusion.plan_row_fusion(compiled, fast_math) is not None
    )
    handover = None if keep else whole_graph_handover(sizes)
    graph = compiled
    try:
        writer, source = write_function(graph, tree, fast_math)
    except Unsupported as e:
        warnings.warn(
            f"kx.function(jit_compile=True) '{name}': {e} cannot be compiled into "
            "one function; the graph runs as fused segments instead. Fix: remove "
            "jit_compile=True, or move that op out of the function.",
            RuntimeWarning,
            stacklevel=4,
        )
        reports = segment_reports(plans, "numba-cpu")
        reports.append({"kind": "whole-graph", "state": "unsupported", "reason": str(e)})
        return Executable(
            fallback, fb_source, "numba-cpu", reports, (time.perf_counter() - t0) * 1e3
        )
    key = hashlib.sha256(source.encode()).hexdigest()[:24]
    ksrc = KernelSource(source, key, "cpu")
    handle = handle_for(ksrc)
    run, run_source, direct = _runner(graph, tree, n_params, writer, handle, fallback, handover)
    report = {
        "id": 0,
        "kind": "whole-graph",
        "backend": "numba-cpu",
        "ops": [n.op.value for n in graph.nodes if n.op is not OpKind.PLACEHOLDER],
        "nodes": [n.name for n in graph.nodes],
        "kernel": key,
        "state": "pending",
        "variants": {},
        "compile_ms": 0.0,
        "cache": None,
        "error": None,
        "reason": "jit_compile=True",
        "handover_size": handover,
        "parallel_sums": stats.get("parallel_sums", 0),
        "lines": source.split("\ndef graph(", 1)[-1].count("\n"),
    }
    report = SegmentReport(report)
    handle.reports[id(report)] = report
    handle.update_reports()
    # The fused executor's own segments run too (first calls, large inputs): report them,
    # marked as the fallback, so the UI shows every kernel a call may run and its state.
    fallbacks = segment_reports(plans, "numba-cpu")
    for i, fb in enumerate(fallbacks, start=1):
        fb["id"], fb["role"] = i, "fallback"
    return Executable(
        run,
        run_source,
        "numba-cpu",
        [report, *fallbacks],
        (time.perf_counter() - t0) * 1e3,
        direct=direct,
    )


def write_function(
    graph: Graph, tree: TreeNode, fast_math: bool = False
) -> tuple[GraphWriter, str]:
    """The writer of ``graph``'s compiled function (``tree``: its trace's output structure,
    which says the arguments the call writes back) and the function's source: arguments
    written in place where nothing in it can signal, else private copies. Raises
    Unsupported naming what cannot be compiled."""
    written_back = _written_back(graph, tree)
    writer = GraphWriter(graph, fast_math, written_back, args_in_place=bool(written_back))
    source = writer.write()
    if writer.args_in_place and writer.signals:
        # a call it hands to the fallback must leave the caller's arrays untouched
        writer = GraphWriter(graph, fast_math, written_back)
        source = writer.write()
    return writer, source


def _path(node: Node) -> Any:
    """Where a top-level input's argument sits in the call."""
    return cast("PlaceholderParams", node.params).path


def _written_back(graph: Graph, tree: TreeNode) -> dict[int, int]:
    """Graph output index -> index of the array input whose argument the call writes that
    output back to (the ``writeback`` nodes of ``tree``)."""
    by_path = {
        n.params.path: k
        for k, n in enumerate(graph.inputs)
        if aval_of_node(n).shape not in (None, ())
    }
    found: dict[int, int] = {}

    def walk(t: TreeNode) -> None:
        if t.kind == "writeback":
            for path, child in zip(t.value, t.children[1:]):
                if child.kind == "output" and path in by_path:
                    found.setdefault(child.index, by_path[path])
        elif t.kind == "input" and t.value in by_path:  # the updated argument, returned
            found.setdefault(t.index, by_path[t.value])
        for child in t.children or ():
            walk(child)

    walk(tree)
    return found


def _for_compiling(graph: Graph) -> Graph:
    """``graph`` as the compiled function runs it (the fused fallback runs ``graph``)."""
    rewritten, changed = unroll_short_sums(graph)
    if changed:
        rewritten, _ = prune_dead_code(rewritten)
    return rewritten


def _runner(
    graph: Graph,
    tree: TreeNode,
    n_params: int,
    writer: GraphWriter,
    handle: KernelHandle,
    fallback: Callable[..., Any],
    handover: int | None = None,
) -> tuple[Callable, str, DirectEntries | None]:
    """``run(p0, ...)``: extract the graph's inputs, call the compiled function (or the
    fused executor until it is compiled, when it signals, or when an array input has at
    least ``handover`` elements: the executor then splits the large ops over the cores, which
    the single-threaded compiled function cannot), rebuild the outputs."""
    namer = Namer()
    consts = [namer.bind(c, "_c") for c in writer.constants]
    loops = []
    if writer.loop_args:
        table = np.array([a for pair in writer.loop_args for a in pair], np.uintp)
        loops.append(namer.bind(table, "_la"))
    namer.globals.update(
        _H=handle,
        _fallback=fallback,
        _deferred=COMPILER.deferred,
        _flush=COMPILER.flush,
        _SIGNAL=SIGNAL,
    )
    params = ", ".join(f"p{i}" for i in range(n_params))
    head = Source(indent=STEP)  # the inputs read from the arguments
    ins: list[str] = []
    for node in writer.param_nodes:
        expr = access_expr(_path(node), namer)
        v = f"a{len(ins)}"
        if aval_of_node(node).shape == ():
            head.line(f"{v} = {expr}[()]")
        else:
            head.line(f"{v} = {expr}")
        ins.append(v)
    args = ", ".join(ins + consts + loops)
    array_ins = [v for v, n in zip(ins, writer.param_nodes) if aval_of_node(n).shape != ()]
    contiguous = " and ".join(f"{v}.flags.c_contiguous" for v in array_ins) or "True"
    handing_over = Source(indent=STEP)
    if handover is not None and array_ins:
        # from handover_size elements on, the faster of the two executors by measurement
        big = " or ".join(f"{v}.size >= {handover}" for v in array_ins)
        size = f"max({', '.join(v + '.size' for v in array_ins)}, 0)"
        namer.globals["_ho"] = _Handover(namer.globals, handle)
        with handing_over.block(f"if {big}:") as large:
            large.line(f"return _ho({size}, {params})")
    body = Source(indent=STEP)  # the compiled function called, its outputs rebuilt
    body.line(f"g = _H.graph_c if {contiguous} else _H.graph_a")
    writable = frozenset(j for where, j in writer.out_slots if where == "param")
    need = f"_H.need_graph(({args}{',' if args else ''}), {namer.bind(writable, '_w')})"
    with body.block("if g is None:") as missing:
        missing.line(need)
        missing.line(f"_r = _fallback({params})")
        _flush_deferred(missing)
        missing.line("return _r")
    with body.block("try:") as attempt:
        attempt.line(f"outs = g({args})")
    with body.block("except FloatingPointError as e:") as failed:
        with failed.block("if str(e) != _SIGNAL:") as other:
            other.line("raise")
        failed.line(f"return _fallback({params})")
    # Arguments its dispatcher refuses (a read-only array the function writes into): the
    # executor runs the call and meets what NumPy meets (nothing was written yet).
    with body.block("except TypeError:") as refused:
        refused.line(f"return _fallback({params})")
    outputs = Source(indent=STEP)  # the outputs rebuilt from ``outs``
    scope = Scope("v_")
    written = []

    def returned(j: int) -> str:
        return "outs" if writer.returns_one else f"outs[{j}]"

    for i, (o, (where, j)) in enumerate(zip(graph.outputs, writer.out_slots)):
        if where == "param":  # copied into its argument by the compiled function
            outputs.line(f"{scope.var(o)} = {ins[j]}")
            written.append(i)
        elif aval_of_node(o).shape == ():
            outputs.line(f"{scope.var(o)} = {_scalar_of(np.dtype(o.dtype), returned(j), namer)}")
            scope.scalars.add(o)  # (a NumPy scalar: returned as it is)
        else:
            outputs.line(f"{scope.var(o)} = {returned(j)}")
            if j in writer.fresh_returns:
                scope.owned.add(o)
    outputs.line(f"_r = {output_expr(tree, graph, namer, scope, frozenset(written))}")
    _flush_deferred(outputs)
    outputs.line("return _r")
    body.lines += outputs.lines
    out = Source()
    out.line(f"def run({params}):")
    out.lines += head.lines + handing_over.lines + body.lines
    # request(p0, ...): ask for the compiled function for such arguments, run nothing
    # (tiering starts a loop graph's compile on its first call without a second run)
    out.line("")
    with out.block(f"def request({params}):") as request:
        request.lines += head.lines
        request.line(need)
        _flush_deferred(request)
    if "_ho" in namer.globals:  # the compiled path at any size (the handover's trial)
        out.line("")
        out.line(f"def run_graph({params}):")
        out.lines += head.lines + body.lines
    source = out.text()
    exec(compile(source, "<kx-whole-graph>", "exec"), namer.globals)
    if any(len(_path(node)) != 1 for node in writer.param_nodes):
        return namer.globals["run"], source, None  # (inputs read out of containers)
    typed = frozenset(  # the parameters the compiled function takes as arrays
        _path(node)[0][1] for node in writer.param_nodes if aval_of_node(node).shape != ()
    )
    direct = DirectEntries(
        namer.globals,
        n_params,
        typed,
        _dedent(head.lines),
        args,
        _dedent(outputs.lines),
        handover,
        shapes_checked=writer.shapes_checked,
    )
    return namer.globals["run"], source, direct


def _scalar_of(dtype: np.dtype, value: str, namer: Namer) -> str:
    """The NumPy scalar of ``dtype`` made from ``value``, the Python number Numba returns for
    a 0-d output. An integer is added to a zero of its type (NumPy takes the Python int as a
    weak scalar: the sum is exact and of that type, as the value is in its range) at ~40 ns,
    where ``np.int64(value)`` parses its argument for ~240 ns; others call the type."""
    if dtype.kind in "iu":
        return f"{namer.bind(dtype.type(0), '_z')} + {value}"
    return f"{namer.bind(dtype.type, '_t')}({value})"


def _dedent(lines: list[str]) -> list[str]:
    """Lines written one level in, at the left margin (to be written at another depth)."""
    return [line.removeprefix(STEP) for line in lines]


def _flush_deferred(out: Source) -> None:
    """Run the kernel compiles queued meanwhile (``_deferred``), as every exit does."""
    with out.block("if _deferred:") as body:
        body.line("_flush()")


class _Handover:
    """Which executor takes the calls from ``handover_size`` elements on, by measurement.

    The fused executor splits large ops over the cores; the compiled function runs on one
    but pays no Python per op or per loop iteration. Which wins depends on the program and
    the size (a matrix-vector product in a loop of rows won compiled at 600x600; a large
    elementwise loop body won split), so per power-of-two size class the first
    :attr:`SAMPLES` calls run the executor, the next ones the compiled function, each
    timed, and the faster serves that size class from then on. Both give the same bits
    (the executor's sums are NumPy's, as the compiled function's are)."""

    SAMPLES = 2

    def __init__(self, scope: dict[str, Any], handle: KernelHandle) -> None:
        self.scope = scope  # the runner's globals: its _fallback and run_graph
        self.handle = handle
        self.times: dict[int, tuple[list[int], list[int]]] = {}
        #: size class (bit length of the largest input's size) -> True: compiled
        self.choice: dict[int, bool] = {}

    @property
    def fallback(self) -> Callable[..., Any]:
        return self.scope["_fallback"]

    @property
    def graph(self) -> Callable[..., Any]:
        return self.scope["run_graph"]

    def __call__(self, size: int, *params: Any) -> Any:
        key = size.bit_length()
        compiled = self.choice.get(key)
        if compiled is not None:
            return (self.graph if compiled else self.fallback)(*params)
        fused_t, graph_t = self.times.setdefault(key, ([], []))
        if len(fused_t) < self.SAMPLES:
            run, into = self.fallback, fused_t
        elif self.handle.graph_c is None and self.handle.graph_a is None:
            return self.graph(*params)  # asks for the compiled function; not a sample
        else:
            run, into = self.graph, graph_t
        t0 = time.perf_counter_ns()
        result = run(*params)
        into.append(time.perf_counter_ns() - t0)
        if len(graph_t) >= self.SAMPLES:
            self.choice[key] = min(graph_t) <= min(fused_t)
        return result


def unsupported_reason(graph: Graph) -> str | None:
    """Why ``graph`` cannot be compiled into one function (the first op this compiler does
    not cover), or None when it can; checks without writing anything."""
    try:
        GraphWriter(graph).check(graph)
    except Unsupported as e:
        return str(e)
    return None


__all__ = ["SIGNAL", "compile_whole_graph", "unsupported_reason", "write_function"]
