"""Building a Dask array graph from an optimised IR graph, fused per block.

A trace called with ``dask.array.Array`` arguments (or made with ``backend="dask"``) compiles
here (:func:`compile_dask`). Its ``run`` builds, on every call, a Dask graph from the
*optimised* IR graph and returns Dask arrays (nothing is computed until the caller's
``.compute()``):

* each fusion segment's elementwise part (:func:`kernel_ext.passes.fusion.partition`) is
  one ``dask.array.blockwise`` task per block, not one Dask task per NumPy op. The task runs
  the segment's Numba kernel (the fused executor's kernel text) on the block, or the
  segment's ops through NumPy where no kernel covers them (:mod:`.blocks`);
* a segment ending in a reduction (``sum``, ``mean``, ``max``, ``min``, ``prod``, ``any``,
  ``all``) computes the chain *and* the block's partial reduction in that one task (in the
  kernel when it covers the reduction: float sums accumulate in float64, as the fused
  executor's do), and Dask's tree reduction combines the partials (:data:`COMBINE`);
* other ops (``matmul``, ``dot``, ``einsum``, shape ops, static indexing, scans, other
  reductions) are Dask's own functions of the same name, reached by calling the op's NumPy
  lowering on Dask arrays (NumPy's ``__array_function__`` protocol hands the call to Dask).
  Ops that work along one axis and that Dask has no function for (``sort``, ``argsort``) get
  that axis in one chunk (a rechunk) and run per block (:data:`ALONG_AXIS`). While the graph
  is built, a NumPy function Dask does not implement, or anything that would compute a Dask
  array, raises instead of silently computing (:func:`_building`);
* values that do not depend on the arguments' data (constants, loop counters) are computed
  with NumPy while the graph is built. A graph ``while`` whose condition reads only such
  values (a ``for i in range(n)`` made a graph loop, ``kx.range(n)``, a loop over the rows
  of an argument) runs its body once per iteration, each iteration adding lazy Dask arrays;
  a ``cond`` on such a value takes its branch;
* a condition that needs the data, variables, random draws, prints and opaque NumPy calls
  cannot be expressed as one Dask graph built ahead of the data: compiling such a graph
  raises :class:`~kernel_ext.errors.DaskUnsupportedError` naming the op, its line and the fix.
"""

from __future__ import annotations

import contextlib
import hashlib
import operator
import sys
import time
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import dask
import dask.array as da
import numpy as np

from ... import errors
from ...ir import FUSIBLE_REDUCTIONS, FallbackReasons, Graph, Node, OpGroup, OpKind, fallback_reason
from ...ir.interpreter import LOWER
from ...ir.params import (
    CallParams,
    CondParams,
    ConstantParams,
    GetOutputParams,
    PlaceholderParams,
    ReduceParams,
    SortParams,
    WhileParams,
)
from ...ir.structure import TreeNode, unflatten
from ...passes.fusion import Segment, partition, schedule
from ..codegen import KernelSource, can_compile, generate, reduction_plan
from ..compiler import SegmentReport
from ..emit.literals import Unsupported
from ..executable import DaskReport, Executable
from .blocks import BlockProgram, Partial

#: Run fused segments as Numba kernels (False: the segment's ops through NumPy in each
#: task; the benchmark's comparison row, and a switch should a kernel misbehave).
KERNELS = True

#: How a fused reduction's per-block partials combine into the result: the Dask reduction
#: of the same kind over the partials (a ``mean`` sums its partial sums, then divides).
COMBINE: dict[OpKind, str] = {
    OpKind.SUM: "sum",
    OpKind.PROD: "prod",
    OpKind.MAX: "max",
    OpKind.MIN: "min",
    OpKind.ANY: "any",
    OpKind.ALL: "all",
    OpKind.MEAN: "sum",
}

#: Ops outside a segment that run as Dask's function of the same name (through NumPy's
#: ``__array_function__``; Dask implements each).
DASK_NATIVE: frozenset[OpKind] = frozenset(
    k
    for k in OpKind
    if (k.group in (OpGroup.REDUCTION, OpGroup.SCAN) and hasattr(da, k.value))
    or k
    in (
        OpKind.MATMUL,
        OpKind.DOT,
        OpKind.OUTER,
        OpKind.EINSUM,
        OpKind.VDOT,
        OpKind.RESHAPE,
        OpKind.TRANSPOSE,
        OpKind.EXPAND_DIMS,
        OpKind.SQUEEZE,
        OpKind.BROADCAST_TO,
        OpKind.CONCATENATE,
        OpKind.STACK,
        OpKind.FLIP,
        OpKind.COPY,
        OpKind.REAL,
        OpKind.IMAG,
        OpKind.PAD,
        OpKind.GETITEM,
    )
)

#: Ops Dask has no function for that compute each 1-d slice along one axis on its own and
#: keep the shape: run per block after a rechunk that puts that axis in one chunk.
ALONG_AXIS: frozenset[OpKind] = frozenset(
    k for k in (getattr(OpKind, name, None) for name in ("SORT", "ARGSORT")) if k is not None
)

#: Control flow handled while the graph is built (conditions on data-independent values).
_CONTROL = (OpKind.WHILE, OpKind.COND, OpKind.GET_OUTPUT)

#: A graph loop that runs more iterations than this while its graph is built stops with an
#: error: each iteration adds its tasks, and such a graph would take longer to build and
#: schedule than the loop's work.
MAX_ITERATIONS = 10_000

_DATA_CONDITION = (
    "its condition needs a computed value each iteration, and a Dask graph is built before "
    "any block is computed. Fix: compute the value the condition reads outside the function "
    "(`n = int(x.sum().compute())`) and pass it as a Python value, or write the loop in "
    "Python around calls of the traced function"
)

_NO_DASK_FIX = (
    "Fix: compute the Dask array first (`x.compute()`) and call the function on NumPy "
    "arrays, or apply the NumPy function per block with `x.map_blocks(...)`"
)

#: Why the Dask executor has no form for an op: a graph holding one is refused before any
#: task is built, with this reason (:func:`unsupported`).
FALLBACK_REASONS: FallbackReasons = {
    OpGroup.STATEFUL: (
        "variables, random draws and prints have an order in time that a Dask graph does not "
        "keep. Fix: draw or read outside and pass arrays in, or use backend='auto' on NumPy "
        "arrays"
    ),
    OpGroup.OPAQUE: (
        "it is an opaque NumPy call that Dask does not implement. Fix: call it outside on a "
        "computed array, or apply it per block with `x.map_blocks(fn)` outside the function"
    ),
    OpGroup.LINALG: "no blockwise form here (a factorisation or convolution couples every "
    f"block; Dask's own linalg is not wired to it). {_NO_DASK_FIX}",
    OpGroup.SORTING: "no blockwise form here (its result depends on every block; only sort "
    f"and argsort along one axis run per block after a rechunk). {_NO_DASK_FIX}",
    OpGroup.INDEXING: "no blockwise form here (a write, or a result whose size depends on the "
    f"data). {_NO_DASK_FIX}",
    OpGroup.SHAPE: f"no blockwise form here. {_NO_DASK_FIX}",
    OpKind.DIM: "a dimension known only at run time (a trace with a None dimension); a Dask "
    "graph is built from known chunk sizes. Fix: trace with the sizes known (no None in the "
    "input_signature)",
    OpGroup.CREATION: "an array of data-dependent length from traced scalars has no chunks "
    f"to plan. {_NO_DASK_FIX}",
    OpGroup.REDUCTION: f"Dask has no function for this ufunc method. {_NO_DASK_FIX}",
    OpGroup.SCAN: f"Dask has no function for this ufunc method. {_NO_DASK_FIX}",
}


def runs_on_dask(op: OpKind) -> bool:
    """Does the Dask executor have a form for ``op`` (for some operands)? The op-level half of
    :func:`unsupported`; ``tools/op_coverage.py`` prints it."""
    return (
        op in (OpKind.PLACEHOLDER, OpKind.CONSTANT)
        or op in DASK_NATIVE
        or op in ALONG_AXIS
        or op in FUSIBLE_REDUCTIONS
        or op.group is OpGroup.ELEMENTWISE
        or op in _CONTROL
    )


def can_fuse(node: Node) -> bool:
    """A segment member: an elementwise op or a fusible reduction, with known shapes."""
    aval = node.aval
    shape = getattr(aval, "shape", None)  # (a multi-output node's aval is a tuple)
    if aval is None or shape is None or None in shape:
        return False
    if node.op is OpKind.WHERE or node.op.group is OpGroup.ELEMENTWISE:
        if node.op in (OpKind.FREXP, OpKind.MODF, OpKind.DIVMOD):
            return False  # (several results: run through get_output, never fused)
        return all(getattr(a.aval, "shape", None) is not None for a in node.inputs)
    if node.op in FUSIBLE_REDUCTIONS:
        x = node.args[0]
        return isinstance(x, Node) and getattr(x.aval, "shape", None) is not None
    return False


# -- what cannot run: ops, and conditions that need the data -------------------------------


def unsupported(graph: Graph) -> list[str]:
    """One message per op of ``graph`` Dask cannot run (empty: the graph compiles)."""
    found: list[str] = []
    _check_ops(graph, found)
    _data_flags(graph, [True] * len(graph.inputs), found)
    return found


def _check_ops(graph: Graph, found: list[str]) -> None:
    for node in graph.nodes:
        op = node.op
        if (
            op in (OpKind.PLACEHOLDER, OpKind.CONSTANT)
            or op in DASK_NATIVE
            or op in ALONG_AXIS
            or can_fuse(node)
            or op.group is OpGroup.ELEMENTWISE
        ):
            continue  # (an elementwise op outside a segment runs blockwise on its own)
        if op in _CONTROL:
            for sub in _subgraphs(node):
                _check_ops(sub, found)
            continue
        why = (
            fallback_reason(FALLBACK_REASONS, op) or f"Dask has no function for it. {_NO_DASK_FIX}"
        )
        found.append(_message(node, why))


def _subgraphs(node: Node) -> list[Graph]:
    if node.op is OpKind.WHILE:
        loop = cast("WhileParams", node.params)
        return [loop.cond, loop.body]
    if node.op is OpKind.COND:
        return list(cast("CondParams", node.params).branches)
    return []


Flag = Any  # bool, or a tuple of bools for a node with several results


def _data_flags(graph: Graph, inputs: Sequence[Flag], found: list[str]) -> list[Flag]:
    """Which values of ``graph`` depend on the arguments' data (True) rather than only on
    constants, given the same for its inputs; appends a message to ``found`` for each
    condition or index that needs the data. Returns the outputs' flags."""
    flags: dict[Node, Flag] = dict(zip(graph.inputs, inputs))

    def flag(a: Any) -> bool:
        if not isinstance(a, Node):
            return False
        f = flags.get(a, False)
        return any(f) if isinstance(f, tuple) else bool(f)

    for node in graph.nodes:
        if node.op is OpKind.PLACEHOLDER:
            continue
        if node.op is OpKind.GET_OUTPUT:
            src = flags.get(node.args[0], False)
            index = cast("GetOutputParams", node.params).index
            flags[node] = (
                src[index] if isinstance(src, tuple) and index < len(src) else flag(node.args[0])
            )
        elif node.op is OpKind.WHILE:
            flags[node] = _while_flags(node, [flag(a) for a in node.args], found)
        elif node.op is OpKind.COND:
            pred, *operands = node.args
            if flag(pred):
                found.append(_message(node, _DATA_CONDITION))
            ops = [flag(a) for a in operands]
            outs = [_data_flags(b, ops, found) for b in cast("CondParams", node.params).branches]
            flags[node] = tuple(any(fs) for fs in zip(*outs))
        else:
            flags[node] = any(flag(a) for a in node.args)
            if node.op is OpKind.GETITEM and any(flag(a) for a in node.args[1:]):
                found.append(
                    _message(
                        node,
                        "its index is computed from the data, which Dask "
                        "needs to know while building the graph. Fix: pass "
                        "the index as a Python value",
                    )
                )
    return [
        flags.get(o, False) if not isinstance(flags.get(o), tuple) else any(flags[o])
        for o in graph.outputs
    ]


def _while_flags(node: Node, args: list[bool], found: list[str]) -> tuple[bool, ...]:
    """A loop variable depends on the data if its first value or its update does (a fixed
    point over the body); the condition must not."""
    loop = cast("WhileParams", node.params)
    n = loop.n_vars
    cond, body = loop.cond, loop.body
    variables, captured = list(args[:n]), list(args[n:])
    while True:
        made = _data_flags(body, variables + captured, [])
        merged = [bool(v or m) for v, m in zip(variables, made)]
        if merged == variables:
            break
        variables = merged
    if any(_data_flags(cond, variables + captured, [])):
        found.append(_message(node, _DATA_CONDITION))
    _data_flags(body, variables + captured, found)
    return tuple(variables)


def _message(node: Node, why: str) -> str:
    where = node.meta.get("where")
    what = node.op.value
    if node.op is OpKind.NUMPY_CALL:
        fn = cast("CallParams", node.params).fn
        what = f"numpy_call of np.{getattr(fn, '__name__', fn)}"
    return f"'{what}'{f' ({where})' if where else ''} cannot run on Dask arrays: {why}."


# -- compiling ------------------------------------------------------------------------------


def compile_dask(
    graph: Graph, tree: TreeNode, n_params: int, *, name: str = "graph", fast_math: bool = False
) -> Executable:
    """The :class:`Executable` of ``graph`` on the Dask backend (module docstring);
    ``fast_math``: the blocks' kernels use :mod:`kernel_ext.backends.fast_math`'s
    approximations (within their documented ulp bounds), as on NumPy arrays.

    Raises :class:`~kernel_ext.errors.DaskUnsupportedError` at trace time when an op cannot
    run on Dask arrays, a condition needs the data, or the function updates its arguments
    in place.
    """
    t0 = time.perf_counter()
    problems = unsupported(graph)
    if _updates_arguments(tree):
        problems.append(
            "the function updates an argument in place; Dask arrays are "
            "immutable. Fix: return the new value instead"
        )
    if problems:
        raise errors.DaskUnsupportedError(
            f"'{name}' cannot run on the Dask backend: " + " ".join(problems)
        )
    program = _GraphProgram(graph, fast_math)
    paths = [cast("PlaceholderParams", node.params).path for node in graph.inputs]

    def run(*params: Any) -> Any:
        values = [_as_dask(_read(params, path)) for path in paths]
        with _building():
            outs = program(values)
        leaves = [_as_dask(v) for v in outs]
        executable.dask = DaskReport(task_count(leaves), dashboard_link())
        return unflatten(tree, leaves)

    reports = [_report(i, step) for i, step in enumerate(program.segment_steps)]
    source = "\n".join(_describe(s) for s in program.order) + "\n"
    executable = Executable(run, source, "dask", reports, (time.perf_counter() - t0) * 1e3)
    return executable


def task_count(result: Any) -> int:
    """Tasks in the Dask graph of a result (a Dask array or a structure of them), as built:
    ``len`` of the merged graphs, before Dask's own optimisation at ``compute``."""
    merged: dict = {}
    for a in _leaves(result):
        if isinstance(a, da.Array):
            merged.update(dict(a.__dask_graph__()))
    return len(merged)


def dashboard_link() -> str | None:
    """The dashboard address of the current ``distributed.Client``, if one exists (None
    otherwise; ``distributed`` is never imported here just to ask)."""
    if "distributed" not in sys.modules:
        return None
    try:
        from distributed import default_client

        client = default_client()
    except ValueError:  # no client
        return None
    known = _DASHBOARDS.get(id(client))
    if known is not None and known[0]() is client:
        return known[1]
    try:
        link = client.dashboard_link or None
    except (AttributeError, KeyError, OSError):  # no dashboard running
        link = None
    try:
        _DASHBOARDS[id(client)] = (weakref.ref(client), link)
    except TypeError:  # pragma: no cover - a client without weak references: not cached
        pass
    return link


#: id(client) -> (weak reference to it, its dashboard link): asked once per client, since a
#: client of a remote scheduler answers ``dashboard_link`` with a round trip.
_DASHBOARDS: dict[int, tuple[Any, str | None]] = {}


# -- steps ----------------------------------------------------------------------------------

Step = Callable[[dict], None]


class _GraphProgram:
    """A graph's steps in run order (nodes and fused segments): called with the values of
    the graph's inputs, it returns the values of its outputs (Dask arrays where they depend
    on the data, NumPy values where they do not)."""

    def __init__(self, graph: Graph, fast_math: bool = False) -> None:
        self.graph = graph
        segments = partition(graph, can_fuse)
        self.order = schedule(graph, segments)
        self.segment_steps: list[_SegmentStep] = []
        self.steps: list[Step] = []
        for item in self.order:
            if isinstance(item, Segment):
                step = _SegmentStep(item, fast_math)
                self.segment_steps.append(step)
                self.steps.append(step)
            else:
                self.steps.append(_node_step(item, fast_math))

    def __call__(self, values: Sequence[Any]) -> list[Any]:
        env: dict[Node, Any] = dict(zip(self.graph.inputs, values))
        for step in self.steps:
            step(env)
        return [env[o] for o in self.graph.outputs]


def _lazy(values: Sequence[Any]) -> bool:
    return any(isinstance(v, da.Array) for v in values)


def _kernel(
    nodes: Sequence[Node],
    inputs: Sequence[Node],
    outputs: Sequence[Node],
    domain: tuple,
    reduction: Node | None = None,
    fast_math: bool = False,
) -> KernelSource | None:
    """The fused executor's kernel for these nodes (``auto``'s rules: bitwise NumPy except
    float sums and means, and ``fast_math``'s approximations when asked for), or None where
    one cannot be written or Numba is missing."""
    from .. import numba_available  # (the package is loaded: it imported this module)

    if not KERNELS or not numba_available() or not domain:
        return None
    members = list(nodes) + ([reduction] if reduction is not None else [])
    if not all(can_compile(n, "cpu", True, fast_math) for n in members):
        return None
    try:
        ksrc = generate(
            Segment(members, list(inputs), list(outputs), tuple(domain), reduction),
            "cpu",
            fast_math,
        )
    except Unsupported:
        return None
    return ksrc if ksrc.call is not None else None


class _SegmentStep:
    """One fused segment: one blockwise task per block; with a reduction, the block's
    partial reduction in that same task, combined by Dask's tree reduction."""

    def __init__(self, seg: Segment, fast_math: bool = False) -> None:
        self.segment = seg
        self.fast_math = fast_math
        self.kernel: KernelSource | None = None
        self.ndim = ndim = len(seg.domain)
        red = seg.reduction
        elementwise = seg.elementwise
        self.inputs = list(seg.inputs)
        self.reduction: Node | None = None
        self.then: Step | None = None  # (Dask's own reduction after the blockwise part)
        if red is None:
            self.kernel = _kernel(
                elementwise, seg.inputs, seg.outputs, seg.domain, fast_math=fast_math
            )
            self.program: BlockProgram | None = BlockProgram(
                elementwise, seg.inputs, seg.outputs, self.kernel
            )
            self.outputs = list(seg.outputs)
        elif red.args[0] in seg.inputs or len(seg.outputs) > 1:
            # the reduced array is needed whole anyway (read outside, or an input): compute
            # the elementwise outputs blockwise, then reduce with Dask's own reduction
            wanted = [o for o in seg.outputs if o is not red]
            source = red.args[0]
            if source not in wanted and source not in seg.inputs:
                wanted.append(source)
            self.outputs = wanted
            self.program = None
            if wanted:
                self.kernel = _kernel(
                    elementwise, seg.inputs, wanted, seg.domain, fast_math=fast_math
                )
                self.program = BlockProgram(elementwise, seg.inputs, wanted, self.kernel)
            self.then = _node_step(red, fast_math)
        else:
            self.reduction = red
            self._plan_reduction(elementwise, red, ndim)
        self.nodes = list(seg.nodes)

    def _plan_reduction(self, elementwise: list[Node], red: Node, ndim: int) -> None:
        seg = self.segment
        source = red.args[0]
        axes = _axes(red, ndim)
        self.axes = axes
        self.keepdims = bool(cast("ReduceParams", red.params).keepdims)
        kernel = _kernel(elementwise, seg.inputs, [red], seg.domain, red, self.fast_math)
        if kernel is not None:
            plan = reduction_plan(red, auto=True)
            function = "sum" if red.op in (OpKind.SUM, OpKind.MEAN) else red.op.value
            params = {"dtype": plan.acc_dtype} if function in ("sum", "prod") else {}
            partial = Partial(
                function, axes, params, np.dtype(plan.value_dtype), np.dtype(plan.acc_dtype)
            )
            self.kernel = kernel
            self.program = BlockProgram(
                elementwise, seg.inputs, [source], kernel, partial, kernel_reduces=True
            )
            return
        if red.op is OpKind.MEAN:
            # NumPy's mean accumulates integers and bools in float64, float16 in float32
            dt = np.dtype(source.aval.dtype)
            out = np.dtype(red.dtype)
            acc = (
                np.dtype(np.float64)
                if dt.kind in "biu"
                else np.dtype(np.float32)
                if dt == np.float16
                else out
            )
            partial = Partial("sum", axes, {"dtype": acc}, None, acc)
        else:
            params = red.params.kwargs("axis", "keepdims")
            partial = Partial(
                red.op.numpy_function.__name__, axes, params, None, np.dtype(red.dtype)
            )
        self.kernel = _kernel(
            elementwise, seg.inputs, [source], seg.domain, fast_math=self.fast_math
        )
        self.program = BlockProgram(elementwise, seg.inputs, [source], self.kernel, partial)

    def __call__(self, env: dict) -> None:
        values = [env[i] for i in self.inputs]
        if not _lazy(values):
            # nothing here depends on the data (a loop counter, constants): NumPy, now
            for n in self.nodes:
                env[n] = LOWER[n.op](n)(*[env[a] if isinstance(a, Node) else a for a in n.args])
            return
        operands: list[Any] = []
        for v in values:
            # a 0-d value known while building (a loop index) rides in each task as it is,
            # not as a one-block array of its own
            lazy = isinstance(v, da.Array)
            operands += [v, _indices(v, self.ndim) if lazy or np.ndim(v) else None]
        out_ind = tuple(range(self.ndim))
        red = self.reduction
        if red is not None:
            assert self.program is not None and self.program.partial is not None
            acc = self.program.partial.acc_dtype
            partial = da.blockwise(
                self.program,
                out_ind,
                *operands,
                dtype=acc,
                adjust_chunks={a: 1 for a in self.axes},
                meta=np.empty((0,) * self.ndim, acc),
                name=_name(self.program, operands),
            )
            result = getattr(partial, COMBINE[red.op])(axis=self.axes, keepdims=self.keepdims)
            out_dtype = red.dtype
            if red.op is OpKind.MEAN:
                shape = red.args[0].aval.shape
                count = int(np.prod([shape[a] for a in self.axes]))
                result = (result / count).astype(out_dtype)
            env[red] = result.astype(out_dtype) if result.dtype != out_dtype else result
            return
        if self.program is not None:
            _blockwise(self.program, self.outputs, operands, self.ndim, env)
        if self.then is not None:
            self.then(env)


def _name(program: BlockProgram, operands: Sequence[Any]) -> str:
    """A deterministic layer name: the program's key and its operands' own names."""
    parts = [program.key]
    for v in operands[::2]:
        parts.append(v.name if isinstance(v, da.Array) else dask.base.tokenize(v))
    parts += [str(i) for i in operands[1::2]]
    return f"{program.name}-{hashlib.sha256('|'.join(parts).encode()).hexdigest()[:24]}"


def _blockwise(
    program: BlockProgram, outputs: Sequence[Node], operands: list[Any], ndim: int, env: dict
) -> None:
    out_ind = tuple(range(ndim))
    name = _name(program, operands)
    if len(outputs) == 1:
        o = outputs[0]
        env[o] = da.blockwise(
            program,
            out_ind,
            *operands,
            dtype=o.dtype,
            meta=np.empty((0,) * ndim, o.dtype),
            name=name,
        )
        return
    # several outputs: one task per block computes all of them; each output picks its own
    # from the block's tuple (a getitem task, no recomputation)
    packed = da.blockwise(program, out_ind, *operands, meta=np.empty((0,) * ndim), name=name)
    for k, o in enumerate(outputs):
        env[o] = packed.map_blocks(
            operator.getitem, k, dtype=o.dtype, meta=np.empty((0,) * ndim, o.dtype)
        )


def _indices(value: Any, ndim: int) -> tuple:
    """Blockwise index of an operand broadcast against a domain of rank ``ndim``: its
    dimensions are the domain's last ones (NumPy's right alignment)."""
    k = np.ndim(value)
    return tuple(range(ndim - k, ndim))


def _axes(red: Node, ndim: int) -> tuple[int, ...]:
    axis = cast("ReduceParams", red.params).axis
    if axis is None:
        return tuple(range(ndim))
    axis = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(sorted(int(a) % ndim for a in axis))


def _node_step(node: Node, fast_math: bool = False) -> Step:
    """A node outside any segment: a constant, control flow, an elementwise op on its own
    (blockwise), an op along one axis (rechunked), or Dask's function of the op's name,
    reached through the op's NumPy lowering."""
    op = node.op
    if op is OpKind.PLACEHOLDER:
        return lambda env: None
    if op is OpKind.CONSTANT:
        value = cast("ConstantParams", node.params).value
        return lambda env: env.__setitem__(node, value)
    if op is OpKind.WHILE:
        return _while_step(node, fast_math)
    if op is OpKind.COND:
        return _cond_step(node, fast_math)
    if can_fuse(node) and op not in FUSIBLE_REDUCTIONS:
        return _SegmentStep(
            Segment([node], list(node.inputs), [node], tuple(node.shape or ())), fast_math
        )
    fn = LOWER[op](node)
    along = _along_axis(node) if op in ALONG_AXIS else None

    def step(env: dict) -> None:
        values = [env[a] if isinstance(a, Node) else a for a in node.args]
        if not _lazy(values):
            env[node] = fn(*values)  # (no data: NumPy, now)
            return
        if along is not None:
            env[node] = along(values[0])
            return
        if op is OpKind.GETITEM:  # a data-independent index: a Python int for Dask
            values[1:] = [_python_index(v) for v in values[1:]]
        args = [
            _as_dask(v) if isinstance(a, Node) and np.ndim(v) else v
            for a, v in zip(node.args, values)
        ]
        result = fn(*args)
        # Dask may pick another dtype than NumPy (a blocked integer matmul sums its partial
        # products in int64): the trace's dtype is NumPy's
        dtype = getattr(node.aval, "dtype", None)
        if isinstance(result, da.Array) and dtype is not None and result.dtype != dtype:
            result = result.astype(dtype)
        env[node] = result

    return step


def _python_index(value: Any) -> Any:
    if (
        isinstance(value, (np.ndarray, np.generic))
        and np.ndim(value) == 0
        and np.asarray(value).dtype.kind in "iu"
    ):
        return int(value)
    return value


def _along_axis(node: Node) -> Callable[[Any], Any] | None:
    """``sort``/``argsort`` along one axis: that axis in one chunk, then NumPy per block."""
    fn = LOWER[node.op](node)
    axis = cast("SortParams", node.params).axis
    dtype = node.dtype

    def run(x: Any) -> Any:
        if axis is None:  # (NumPy sorts the flattened array: one chunk)
            x = x.reshape(-1)
            ax = 0
        else:
            ax = int(axis) % x.ndim
        x = x.rechunk({ax: -1})
        return x.map_blocks(fn, dtype=dtype, meta=np.empty((0,) * x.ndim, dtype))

    return run


def _while_step(node: Node, fast_math: bool) -> Step:
    """A graph ``while`` whose condition does not read the data (checked at compile time):
    the condition is computed with NumPy and the body adds its lazy arrays per iteration."""
    loop = cast("WhileParams", node.params)
    n = loop.n_vars
    cond = _GraphProgram(loop.cond, fast_math)
    body = _GraphProgram(loop.body, fast_math)

    def step(env: dict) -> None:
        values = [env[a] if isinstance(a, Node) else a for a in node.args]
        variables, captured = values[:n], values[n:]
        for _ in range(MAX_ITERATIONS):
            (test,) = cond(variables + captured)
            if isinstance(test, da.Array):
                raise errors.DaskUnsupportedError(_message(node, _DATA_CONDITION))
            if not test:
                env[node] = tuple(variables)
                return
            variables = body(variables + captured)
        raise errors.DaskUnsupportedError(
            _message(
                node,
                f"it ran more than {MAX_ITERATIONS} iterations while its Dask "
                "graph was built (every iteration adds its tasks). Fix: write the loop "
                "in Python around calls of the traced function, or compute the arrays "
                "and run the function on NumPy arrays",
            )
        )

    return step


def _cond_step(node: Node, fast_math: bool) -> Step:
    """A graph ``cond`` on a data-independent predicate: the branch it picks, built."""
    branches = [_GraphProgram(g, fast_math) for g in cast("CondParams", node.params).branches]

    def step(env: dict) -> None:
        pred, *operands = [env[a] if isinstance(a, Node) else a for a in node.args]
        if isinstance(pred, da.Array):
            raise errors.DaskUnsupportedError(_message(node, _DATA_CONDITION))
        env[node] = tuple(branches[0 if pred else 1](operands))

    return step


# -- reports --------------------------------------------------------------------------------


def _report(index: int, step: _SegmentStep) -> dict[str, Any]:
    """What the views show of a segment. Its kernel compiles where its blocks run (once per
    worker process, or loaded from the disk cache), not here in the background, so the
    report has no compile ``state`` (the views then show no compile progress for it)."""
    seg = step.segment
    ksrc = step.kernel
    return SegmentReport(
        {
            "id": index,
            "kind": seg.kind,
            "backend": "dask",
            "ops": [n.op.value for n in seg.nodes],
            "nodes": [n.name for n in seg.nodes],
            "inputs": [n.name for n in seg.inputs],
            "outputs": [n.name for n in seg.outputs],
            "kernel": ksrc.key if ksrc is not None else "numpy-blockwise",
            "min_size": 0,
            "reason": "one Dask task per block: "
            + (
                "the Numba kernel, compiled once per worker process"
                if ksrc is not None
                else "its ops through NumPy"
            ),
            "state": None,
            "variants": {},
            "compile_ms": 0.0,
            "cache": None,
            "error": None,
        }
    )


# -- helpers --------------------------------------------------------------------------------


def _refuse_compute(*args: Any, **kwargs: Any) -> Any:
    raise errors.DaskUnsupportedError(
        "building the Dask graph of a traced function needed a computed value (an op "
        "converted a Dask array to NumPy). Fix: compute the arrays first (`x.compute()`) "
        "and call the function on NumPy arrays; please report the op."
    )


@contextlib.contextmanager
def _building() -> Iterator[None]:
    """While a graph is built nothing may compute: Dask's fallback for a NumPy function it
    does not implement (a FutureWarning, then a compute) and any ``np.asarray`` of a Dask
    array raise instead."""
    with warnings.catch_warnings(), dask.config.set(scheduler=_refuse_compute):
        warnings.filterwarnings(
            "error", message=".*is not implemented by Dask array", category=FutureWarning
        )
        try:
            yield
        except FutureWarning as w:
            raise errors.DaskUnsupportedError(
                f"{w} Fix: compute the arrays first (`x.compute()`) and call the function "
                "on NumPy arrays."
            ) from None


def _as_dask(value: Any) -> Any:
    """Dask arrays stay; NumPy arrays and scalars become one-block Dask arrays (a 0-d one
    computes to a NumPy scalar, as the NumPy executor returns)."""
    if isinstance(value, da.Array):
        return value
    arr = np.asarray(value)
    if arr.ndim == 0:
        return da.from_array(arr, chunks=()).map_blocks(
            _item, dtype=arr.dtype, meta=np.empty((), arr.dtype)
        )
    return da.from_array(arr, chunks=arr.shape)


def _item(block: np.ndarray) -> Any:
    return block[()]


def _read(params: tuple, path: tuple) -> Any:
    (_, index), *steps = path
    value = params[index]
    for kind, key in steps:
        value = getattr(value, key) if kind == "attr" else value[key]
    return value


def _updates_arguments(tree: TreeNode) -> bool:
    if tree.kind in ("input", "writeback", "replay"):
        return True
    return any(_updates_arguments(c) for c in tree.children)


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    else:
        yield value


def _describe(step: Node | Segment) -> str:
    if isinstance(step, Segment):
        how = "blockwise + tree reduction" if step.reduction is not None else "blockwise"
        return f"segment {step.index}: {step.describe()} -> one task per block ({how})"
    return f"{step.name} = {step.op.value} -> dask"


__all__ = [
    "ALONG_AXIS",
    "COMBINE",
    "DASK_NATIVE",
    "KERNELS",
    "MAX_ITERATIONS",
    "can_fuse",
    "compile_dask",
    "dashboard_link",
    "task_count",
    "unsupported",
]
