"""``jit_compile=True``: a whole graph, control flow included, compiled into one Numba function.

Where the fused executor runs Python between kernels, here the graph's ``while`` loops and
``cond`` branches, its fused segments, matrix products and shape ops all live in one
``nopython`` function, so a loop over small arrays costs what the arithmetic costs (the seed's
``while np.sum(x) > 1: x = np.tanh(x)`` runs its ~40 iterations without touching Python).

The generated module is self-contained text, cached like any kernel: every fused segment's
kernel core (:mod:`.codegen`, with its block buffers passed in, so the function allocates them
once for all iterations), then ``graph(inputs..., constants..., loop addresses...)``:

* 0-d values are Numba scalars, everything else arrays; array values carried through a loop
  or out of a branch are fresh C-contiguous arrays (copies where needed), so every path of
  the control flow has one Numba type;
* a segment's domain is broadcast from its inputs' run-time shapes; whatever NumPy would
  answer with an error or a value only it defines (incompatible shapes, an index out of
  range, a NaN cast to int) raises a private signal, and the call is rerun by the fused
  executor, so the result — or the error — is NumPy's own;
* float matrix products call NumPy's own ``matmul`` inner loop (same BLAS path, same bits);
  integer and bool products are plain loops (exact: wrapping arithmetic is associative).

Graphs with ops this compiler does not cover (prints, variable writes, random draws,
``einsum``, ...; :mod:`.whole_graph_ops` holds the rules of many more) run on the fused executor
instead, with a warning that names the op, as TensorFlow's ``jit_compile=True`` names the
op XLA cannot compile. The first call of a new graph runs on the fused executor while the
whole-graph function compiles in the background
(:func:`~kernel_ext.backends.compiler.set_synchronous` makes it synchronous).
"""

from __future__ import annotations

import ast
import hashlib
import re
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir import FUSIBLE_REDUCTIONS, FallbackReasons, Graph, Node, OpGroup, OpKind
from ..ir.abstract import DynamicIndex, getitem_shape
from ..ir.structure import TreeNode
from ..passes import prune_dead_code
from ..passes.fusion import Segment, partition, schedule
from ..passes.short_sums import unroll_short_sums
from .codegen import (
    CODEGEN_VERSION,
    WRAPPING_IMPORT,
    KernelEmbedding,
    KernelSource,
    ReductionPlan,
    Unsupported,
    can_compile,
    const_source,
    ctor,
    kernel_form,
    literal_into,
)
from .compiler import COMPILER, KernelHandle, SegmentReport, handle_for, segment_reports
from .cost import whole_graph_handover
from .executable import Executable
from .fused import compile_fused
from .index_ranges import index_ranges
from .inplace import InplacePlan, Step, plan_inplace
from .numpy_backend import Namer, Scope, access_expr, output_expr
from .parallel import SUM_PARALLEL_MIN
from .row_fusion import emit_row_fusion, plan_row_fusion
from .segment_call import Arg, CallRenderer, SegmentCall
from .ufunc_loops import find_loop
from .whole_graph_ops import RULES as _OP_RULES
from .whole_graph_ops import loop_literal as _loop_literal

#: Graphs with more ops than this (sub-graphs counted) are not compiled as one function.
MAX_OPS = 800
SIGNAL = "kx-fallback"  # the message of the FloatingPointError that asks for a NumPy rerun

#: Most arguments of an inlined 0-d segment kernel: CPython 3.11 compiles a call with more
#: than 30 into a ``*args`` call, which Numba's inliner refuses (a 30-output 0-d segment).
_INLINE_MAX_ARGS = 28

#: Shortest run of chained matrix products emitted as a loop (:meth:`_GraphWriter._matmul_chains`).
REROLL_MIN = 3

#: The shape ops this compiler emits (a capability of this renderer, not an op fact: the
#: others — squeeze, flip, concatenate, ... — make the graph run as fused segments).
_SUPPORTED_SHAPE_OPS = frozenset(
    {OpKind.RESHAPE, OpKind.TRANSPOSE, OpKind.EXPAND_DIMS, OpKind.COPY, OpKind.BROADCAST_TO}
)


#: Graph structure the writer handles itself: values passed through or read, no computation.
_STRUCTURE_OPS = frozenset({OpKind.PLACEHOLDER, OpKind.CONSTANT, OpKind.GET_OUTPUT, OpKind.DIM})

#: Ops :meth:`_GraphWriter.check` and the writer handle by name (beside :data:`_OP_RULES`,
#: :data:`_SUPPORTED_SHAPE_OPS` and the kernel forms of :func:`codegen.kernel_form`).
_WRITER_OPS = _STRUCTURE_OPS | {
    OpKind.COND,
    OpKind.WHILE,
    OpKind.MATMUL,
    OpKind.GETITEM,
    OpKind.SETITEM,
    OpKind.ARGMIN,
    OpKind.ARGMAX,
    OpKind.UFUNC_AT,
    OpKind.BINCOUNT,
}


def compiles(op: OpKind) -> bool:
    """Does the whole-graph compiler have a form for ``op`` (for some operands)? The op-level
    half of :meth:`_GraphWriter.check`, which then decides per node (ranks, dtypes, axes);
    ``tools/op_coverage.py`` prints it, with :data:`FALLBACK_REASONS` for the others."""
    return (
        op in _WRITER_OPS or op in _OP_RULES or op in _SUPPORTED_SHAPE_OPS or kernel_form(op, "cpu")
    )


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


class _Val:
    """A graph value in the generated function: its name, whether it is a Numba scalar,
    whether it is a fresh C-contiguous array this function owns, whether its rows are
    unit-stride, and which buffers it may share memory with.

    ``roots`` names those buffers (an allocation is named after the variable it was first
    bound to; a view inherits its source's roots), so "is this loop-carried buffer still
    referenced?" is a set test. ``parts`` holds the roots of each element of a tuple value
    (the outputs of a ``cond`` or ``while``). The sets over-approximate: a value may share
    memory only with buffers in its roots, never with others.
    """

    __slots__ = ("fresh", "name", "parts", "roots", "scalar", "unit")

    def __init__(
        self,
        name: str,
        scalar: bool,
        fresh: bool,
        roots: frozenset[str] | None = None,
        parts: list[frozenset[str]] | None = None,
        unit: bool | None = None,
    ) -> None:
        self.name, self.scalar, self.fresh = name, scalar, fresh
        if roots is None:
            roots = frozenset() if scalar else frozenset([name])
        self.roots, self.parts = roots, parts
        #: an array whose last axis is certainly unit-stride (a fresh array, a slice of one)
        self.unit = fresh and not scalar if unit is None else unit


class _SegmentArgs(CallRenderer):
    """The whole-graph renderer of a segment call: every kernel argument is a variable of
    the generated function — the domain's sizes, the inputs' values (or views of them), the
    output buffers, the accumulator, the NumPy loops (``f<k>``/``d<k>``, unpacked from the
    ``la`` argument) and the block buffers allocated once per call of the function."""

    def __init__(self) -> None:
        self.inputs: dict[int, str] = {}
        self.outputs: dict[int, str] = {}
        self.dims: list[str] = []
        self.size = ""
        self.acc = ""
        self.loops: list[int] = []  # the function-wide index of each NumPy loop
        self.scratch: list[str] = []

    def argument(self, arg: Arg, variant: str) -> str:
        kind, i = arg.kind, arg.index
        if kind == "start":
            return "0"
        if kind == "stop":
            return self.size
        if kind == "dim":
            return self.dims[i]
        if kind in ("array", "scalar"):
            return self.inputs[i]
        if kind == "output":
            return self.outputs[i]
        if kind == "acc":
            return self.acc
        if kind == "loop":
            return f"f{self.loops[i]}"
        if kind == "loop_data":
            return f"d{self.loops[i]}"
        if kind == "scratch":
            return self.scratch[i]
        return super().argument(arg, variant)


class _GraphWriter:
    def __init__(
        self, graph: Graph, fast_math: bool = False, written_back: dict[int, int] | None = None
    ) -> None:
        self.graph = graph
        #: bounded scalar integers (:mod:`.index_ranges`): indexes needing no range check
        self.ranges = index_ranges(graph)
        #: output index -> index of the array input whose argument that output is written
        #: back to (:func:`_written_back`); the function copies those in before it returns
        self.written_back = dict(written_back or {})
        #: per graph output: ("ret", position in the returned tuple) or ("param", input
        #: index) for an output the function copied into its argument (not returned)
        self.out_slots: list[tuple[str, int]] = []
        self.fast_math = fast_math  # segment kernels with fast_math's approximations
        self.lines: list[str] = []
        self.module_parts: list[str] = []
        self.helpers: dict[str, str] = {}
        self.scratch_lines: list[str] = []
        self.scratch_names: set[str] = set()
        self.params: list[str] = []  # generated function parameters, in order
        self.param_nodes: list[Node] = []  # the top-level placeholders they hold
        self.constants: list[Any] = []  # constant arrays passed as arguments
        self.loop_args: list[tuple[int, int]] = []
        self.out_bufs: dict[Node, str] = {}  # node -> the spare buffer it may write into
        self.produced: set[Node] = set()  # nodes written into a spare or a new buffer
        self._n = 0
        self._segments = 0
        self._kernel_texts: dict[str, str] = {}  # kernel text (prefix aside) -> its prefix
        #: Which setitem ops write in place and which loop slots enter as a copy
        #: (:mod:`.inplace`, decided on this writer's own schedule by :meth:`write`).
        self.plan = InplacePlan()
        self._schedules: dict[int, list[Node | Segment]] = {}
        #: setitem nodes whose value a segment already wrote into the result (its value)
        self.directed: dict[Node, _Val] = {}
        #: graph outputs whose segment writes each row tile into the output (_emit_tiled)
        self.tile_outputs: dict[Node, _Val] = {}
        self._loop_depth = 0  # graph loops around the code being written
        #: 1-D temporaries written into a prefix of a buffer kept for all iterations
        self.grow_bufs: dict[Node, str] = {}

    def fresh(self, prefix: str = "t") -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    # -- support check ----------------------------------------------------------------------
    def check(self, graph: Graph) -> None:
        """Raise Unsupported naming the first op this compiler cannot handle exactly."""
        if graph is self.graph and graph.count_ops() > MAX_OPS:
            # One Numba function of thousands of ops (a loop AutoGraph unrolled, each
            # iteration a write) takes LLVM minutes and gigabytes; the fused executor runs
            # such a graph without a compile of that size.
            raise Unsupported(f"a graph of {graph.count_ops()} ops (more than {MAX_OPS})")
        for node in graph.nodes:
            op = node.op
            if op in _STRUCTURE_OPS:
                pass
            elif op is OpKind.COND:
                for g in node.attrs["branches"]:
                    self.check(g)
            elif op is OpKind.WHILE:
                self.check(node.attrs["cond"])
                self.check(node.attrs["body"])
            elif op in _OP_RULES and _OP_RULES[op].claims(node):
                _OP_RULES[op].check(node)  # whole_graph_ops: more of NumPy's ops
            elif op in _SUPPORTED_SHAPE_OPS:
                self._check_shape(node)
            elif op is OpKind.MATMUL:
                a, b = node.args
                if not (
                    isinstance(a, Node)
                    and isinstance(b, Node)
                    and a.aval.ndim == 2
                    and b.aval.ndim == 2
                    and a.aval.dtype == b.aval.dtype == node.dtype
                ):
                    raise Unsupported("matmul other than 2-D @ 2-D of one dtype")
                if node.dtype.kind == "f" and find_loop(np.matmul, (node.dtype,) * 3) is None:
                    raise Unsupported(f"no NumPy matmul loop for {node.dtype}")
                if node.dtype.kind not in "fiub":
                    raise Unsupported(f"matmul of {node.dtype}")
            elif op is OpKind.GETITEM:
                self._check_getitem(node)
            elif op is OpKind.SETITEM:
                self._check_setitem(node)
            elif op in (OpKind.ARGMIN, OpKind.ARGMAX):
                _check_arg_reduce(node)
            elif op is OpKind.UFUNC_AT:
                _check_ufunc_at(node)
            elif op is OpKind.BINCOUNT:
                _check_bincount(node)
            elif not can_compile(node, "cpu", fast_math=self.fast_math):
                raise Unsupported(f"op '{op.value}' ({node.name})")
            if (
                node.aval is not None
                and not isinstance(node.aval, tuple)
                and node.aval.shape is None
            ):
                raise Unsupported(f"unknown rank ({node.name})")
        for inp in graph.inputs:
            if inp.aval.shape is None:
                raise Unsupported(f"input '{inp.name}' of unknown rank")

    def _check_shape(self, node: Node) -> None:
        if node.op is OpKind.EXPAND_DIMS and not isinstance(node.attrs["axis"], int):
            raise Unsupported("expand_dims with several axes")

    def _check_getitem(self, node: Node, first_dyn: int = 1) -> None:
        """Basic indexing only: static slices, integers, traced integer scalars, ``None``
        and ``...``; ``first_dyn`` is the argument position of the first traced index."""

        def traced_int(c: DynamicIndex) -> bool:
            arg = node.args[c.position - 1 + first_dyn]
            return isinstance(arg, Node) and arg.aval.shape == () and arg.dtype.kind in "iu"

        for c in node.attrs["index"]:
            if isinstance(c, slice):
                # traced start/stop (``A[i, :j]`` in a loop): Numba slices with Python's
                # clamping, as NumPy does; a traced step stays out (its sign decides the
                # clamping and the region's bounds)
                if isinstance(c.step, DynamicIndex):
                    raise Unsupported("slice with a traced step")
                for p in (c.start, c.stop):
                    if isinstance(p, DynamicIndex) and not traced_int(p):
                        raise Unsupported("slice bound that is not an integer scalar")
            elif isinstance(c, DynamicIndex):
                if not traced_int(c):
                    raise Unsupported("indexing with an array")
            elif c is None or c is Ellipsis:
                pass
            elif not isinstance(c, (int, np.integer)):
                raise Unsupported(f"index component {c!r}")

    def _check_setitem(self, node: Node) -> None:
        """``x[index] = value`` with a basic index (no ``None``) into an array, the value cast
        as NumPy casts it only where Numba's cast is the same (``same_kind`` among bool,
        integer and float dtypes; a Python number NumPy converts without complaint)."""
        self._check_getitem(node, first_dyn=2)
        x, value = node.args[0], node.args[1]
        if any(c is None for c in node.attrs["index"]):
            raise Unsupported("setitem with a None (np.newaxis) index component")
        if not isinstance(x, Node) or x.aval.shape in (None, ()):
            raise Unsupported("setitem into a 0-d value")
        dt = np.dtype(x.dtype)
        if dt.kind not in "biuf":
            raise Unsupported(f"setitem into {dt}")
        if isinstance(value, Node):
            vdt = np.dtype(value.dtype)
            if vdt.kind not in "biuf" or not np.can_cast(vdt, dt, "same_kind"):
                raise Unsupported(f"setitem of {vdt} into {dt} (an unsafe cast)")
            if value.aval.shape is None:
                raise Unsupported("setitem of a value of unknown rank")
            if value.aval.shape != () and _is_element(node, len(x.aval.shape)):
                raise Unsupported("setitem of an array into one element")
        else:
            literal_into(value, dt)

    # -- emission -----------------------------------------------------------------------------
    def write(self) -> str:
        self.check(self.graph)
        # An argument the call writes back enters as a private copy, made once here: every
        # write into it then runs in place (one outside any loop, or one in a branch that
        # may pass the argument on, would copy the whole array each time), and the fallback
        # still finds the caller's arrays untouched: they are written at the end
        # (:meth:`_returned`).
        updated = frozenset(self.graph.inputs[k] for k in set(self.written_back.values()))
        self.plan = plan_inplace(self.graph, self._steps, updated)
        env: dict[Node, _Val] = {}
        body: list[str] = []
        for node in self.graph.inputs:
            name = f"p{len(self.params)}"
            self.params.append(name)
            self.param_nodes.append(node)
            env[node] = _Val(name, node.aval.shape == (), False)
            if node in updated:
                own = self.fresh("w")
                body.append(f"    {own} = np.ascontiguousarray({name}).copy()")
                env[node] = _Val(own, False, True)
        fused = plan_row_fusion(self.graph, self.fast_math)
        tiling = None if fused is not None else row_tiling(self.graph)
        if fused is not None:  # one loop over rows (row_fusion.py)
            names = {n: (v.name, v.scalar) for n, v in env.items()}
            outs = [
                _Val(t, scalar, True)
                for t, scalar in emit_row_fusion(fused, self.graph, self, names, body)
            ]
        elif tiling is None:
            outs = self.emit_graph(self.graph, env, body, "    ")
        else:
            outs = self._emit_tiled(tiling, env, body)
        consts = [f"c{i}" for i in range(len(self.constants))]
        # NumPy loop addresses arrive in one uintp array: one argument for Numba's dispatcher
        # to type instead of two per loop (each costs it ~50 ns per call).
        loops = ["la"] if self.loop_args else []
        head = ["@_kernel", f"def graph({', '.join(self.params + consts + loops)}):"]
        for k in range(len(self.loop_args)):
            head += [f"    f{k} = la[{2 * k}]", f"    d{k} = la[{2 * k + 1}]"]
        ret = "    return (" + "".join(n + ", " for n in self._returned(outs, body)) + ")"
        func = "\n".join(head + self.scratch_lines + body + [ret])
        header = "\n".join(
            [
                f"# kernel_ext whole-graph function (codegen v{CODEGEN_VERSION})",
                "# inputs: "
                + ", ".join(f"{n.dtype.name}/{len(n.aval.shape)}" for n in self.graph.inputs),
                "import math",
                "import numpy as np",
                "from kernel_ext.backends.numba_decorators import inline as _inline, "
                "kernel as _kernel, call_loop as _call_loop",
                WRAPPING_IMPORT.format(module="numba_decorators"),
            ]
        )
        parts = [header] + list(self.helpers.values()) + self.module_parts + [func]
        return "\n\n".join(parts) + "\n"

    def _returned(self, outs: list[_Val], body: list[str]) -> list[str]:
        """The names the function returns, each once, and :attr:`out_slots`.

        An output written back to an array argument is copied into it here, at the end of
        the function, after every check that can still hand the call to the fallback (which
        must find the arguments untouched): Numba's copy is cheaper than NumPy's ``copyto``
        from Python, and the array is not boxed into a new Python object (~0.25 µs each).
        A value that may share memory with the argument keeps the Python write-back
        (``copyto`` buffers overlapping copies)."""
        names: list[str] = []
        copied: dict[str, str] = {}  # value name -> the argument it was copied into
        for i, v in enumerate(outs):
            k = self.written_back.get(i)
            if k is not None and not v.scalar:
                p = self.params[k]
                node, target = self.graph.outputs[i], self.param_nodes[k]
                same = node.aval.shape == target.aval.shape and node.dtype == target.dtype
                if v.name == p or (same and p not in v.roots and copied.get(v.name, p) == p):
                    if v.name != p and v.name not in copied:  # (p is typed writable)
                        rank = len(target.aval.shape)
                        body.append(f"    {self.assign(p, v.name, rank, rank)}")
                        copied[v.name] = p
                    self.out_slots.append(("param", k))
                    continue
            if v.name not in names:
                names.append(v.name)
            self.out_slots.append(("ret", names.index(v.name)))
        return names

    def _emit_tiled(self, rows: set[Node], env: dict[Node, _Val], lines: list[str]) -> list[_Val]:
        """The graph run on tiles of :func:`row_tile` rows at a time (:func:`row_tiling`):
        every intermediate of a tile stays in cache, where computing each on the whole array
        streams it through memory once per op or reduction. Each tile's results are copied
        into the outputs, allocated once."""
        first = next(n for n in self.graph.inputs if n in rows)
        n = self.fresh("nrows")
        lines.append(f"    {n} = {env[first].name}.shape[0]")
        width = int(np.prod(first.aval.shape[1:]))
        tile = row_tile(width)
        outs = []
        for o in self.graph.outputs:
            t = self.fresh("o")
            rest = "".join(f"{d}, " for d in o.aval.shape[1:])
            lines.append(f"    {t} = np.empty(({n}, {rest}), {ctor(np.dtype(o.dtype))})")
            outs.append(_Val(t, False, True))
        lines.append(f"    for r0 in range(0, {n}, {tile}):")
        lines.append(f"        r1 = min(r0 + {tile}, {n})")
        sub = dict(env)
        for node in rows:
            v = self.fresh("tile")
            lines.append(f"        {v} = {env[node].name}[r0:r1]")
            sub[node] = _Val(v, False, False, env[node].roots, unit=env[node].unit)
        # a segment computing an output writes its tile of the output directly
        for o, out in zip(self.graph.outputs, outs):
            if o not in self.tile_outputs and self.graph.outputs.count(o) == 1:
                self.tile_outputs[o] = out
        vals = self.emit_graph(self.graph, sub, lines, "        ")
        for o, v in zip(outs, vals):
            if v.name != f"{o.name}_tile":
                lines.append(f"        {o.name}[r0:r1] = {v.name}")
        return outs

    def _items(self, graph: Graph) -> list[Node | Segment]:
        """The order ``graph``'s steps run in: nodes, and fused segments as one step each."""
        items = self._schedules.get(id(graph))
        if items is None:
            segs = partition(graph, lambda n: can_compile(n, "cpu", fast_math=self.fast_math))
            items = self._schedules[id(graph)] = schedule(graph, segs)
        return items

    def _steps(self, graph: Graph) -> list[Step]:
        """:func:`~.inplace.plan_inplace`'s view of :meth:`_items`: what each step produces
        and reads (a segment reads its inputs and produces its outputs, fresh arrays)."""
        return [
            (item.outputs, item.inputs) if isinstance(item, Segment) else ((item,), item.inputs)
            for item in self._items(graph)
        ]

    def emit_graph(
        self, graph: Graph, env: dict[Node, _Val], lines: list[str], indent: str
    ) -> list[_Val]:
        items = self._items(graph)
        chains = self._matmul_chains(graph, items)
        i = 0
        while i < len(items):
            item = items[i]
            if isinstance(item, Segment):
                nxt = items[i + 1] if i + 1 < len(items) else None
                self.emit_segment(
                    item, env, lines, indent, self._direct_target(graph, item, nxt, env)
                )
            elif i in chains:
                chain = chains[i]
                self._emit_matmul_chain(chain, env, lines, indent)
                i += len(chain)
                continue
            else:
                self.emit_node(item, env, lines, indent)
            i += 1
        return [env[o] for o in graph.outputs]

    def _matmul_chains(self, graph: Graph, items: list) -> dict[int, list[Node]]:
        """Runs of at least :data:`REROLL_MIN` consecutive matrix products, each feeding the
        next one's operand at one position, the other operand the same: ``power(x, 100)``'s
        ``for _ in range(y): r = x @ r`` unrolled at trace time. Keyed by the schedule index
        of their first node.

        Such a run is emitted as one compiled loop (:meth:`_emit_matmul_chain`): one copy of
        the product's code instead of 100 (Numba inlined 100 copies in 80 s of compilation,
        and the code no longer fitted the instruction cache), and two buffers that ping-pong
        instead of 100 allocations. Every link but the last must be read by the next link
        only, so no other code sees the intermediate values.
        """
        uses: dict[Node, int] = {}
        for n in graph.nodes:
            for a in n.inputs:
                uses[a] = uses.get(a, 0) + 1
        for o in graph.outputs:
            uses[o] = uses.get(o, 0) + 1
        chains: dict[int, list[Node]] = {}
        i = 0
        while i < len(items):
            head = items[i]
            if (
                not isinstance(head, Node)
                or head.op is not OpKind.MATMUL
                or head in self.out_bufs
                or _OP_RULES[OpKind.MATMUL].claims(head)
            ):
                i += 1
                continue
            best: list[Node] = [head]
            for pos in (0, 1):
                run = [head]
                j = i + 1
                while j < len(items):
                    nxt, prev = items[j], run[-1]
                    if not (
                        isinstance(nxt, Node)
                        and nxt.op is OpKind.MATMUL
                        and nxt not in self.out_bufs
                        and nxt.args[pos] is prev
                        and nxt.args[1 - pos] is head.args[1 - pos]
                        and nxt.args[1 - pos] is not prev
                        and uses.get(prev) == 1
                        and nxt.dtype == head.dtype
                    ):
                        break
                    run.append(nxt)
                    j += 1
                if len(run) > len(best):
                    best = run
            if len(best) >= REROLL_MIN:
                chains[i] = best
                i += len(best)
            else:
                i += 1
        return chains

    def _emit_matmul_chain(
        self, chain: list[Node], env: dict[Node, _Val], lines: list[str], indent: str
    ) -> None:
        """``t = a @ t`` (or ``t = t @ b``) ``len(chain)`` times as one loop.

        Each product writes into the buffer of the value two steps back (``u``: the entry
        copy, or a product only the next link read), dead by then, or into a new one when
        the run-time shapes differ. The output is never one of the product's operands: ``u``
        is neither the current value nor the fixed operand.
        """
        head = chain[0]
        pos = 1 if chain[1].args[1] is head else 0
        first = [env[a] for a in head.args]
        fixed, start = first[1 - pos], first[pos]
        dt = ctor(np.dtype(head.dtype))
        # The chain's input enters as a private C-contiguous copy: the loop then has one
        # type for its value, and that buffer may be overwritten two steps later. (With the
        # first product peeled off the loop instead, LLVM compiled W2 to code 1.3x slower.)
        t = self.fresh("k")
        if start.scalar:  # pragma: no cover - check() admits 2-D operands only
            raise Unsupported("matmul of a scalar")
        lines.append(f"{indent}{t} = np.ascontiguousarray({start.name}).copy()")
        u = self.fresh("u")
        lines.append(f"{indent}{u} = np.empty((0, 0), {dt})")
        lines.append(f"{indent}for _ in range({len(chain)}):")
        inner = indent + "    "
        a, b = (fixed.name, t) if pos == 1 else (t, fixed.name)
        self.signal(lines, inner, f"{a}.shape[1] != {b}.shape[0]")
        o = self.fresh()
        lines.append(f"{inner}if {u}.shape[0] == {a}.shape[0] and {u}.shape[1] == {b}.shape[1]:")
        lines.append(f"{inner}    {o} = {u}")
        lines.append(f"{inner}else:")
        lines.append(f"{inner}    {o} = np.empty(({a}.shape[0], {b}.shape[1]), {dt})")
        lines.append(f"{inner}{self._matmul_call(head, a, b, o)}")
        lines.append(f"{inner}{u} = {t}")
        lines.append(f"{inner}{t} = {o}")
        env[chain[-1]] = _Val(t, False, True)

    def _call_kernel(
        self, lines: list[str], indent: str, px: str, call: str, reduces: bool
    ) -> None:
        """Call a segment kernel; it returns its NumPy-only-case flag (and the accumulator)."""
        target = f"{px}bad, {px}acc" if reduces else f"{px}bad"
        lines.append(f"{indent}{target} = {call}")
        self.signal(lines, indent, f"{px}bad")

    def loop_ref(self, idx: int) -> str:
        """The arguments naming NumPy loop ``idx`` (its address and data pointer)."""
        return f"f{idx}, d{idx}"

    def signal(self, lines: list[str], indent: str, cond: str) -> None:
        lines.append(f"{indent}if {cond}:")
        lines.append(f"{indent}    raise FloatingPointError('{SIGNAL}')")

    # -- fused segments ---------------------------------------------------------------------
    def emit_segment(
        self,
        seg: Segment,
        env: dict[Node, _Val],
        lines: list[str],
        indent: str,
        direct: Node | None = None,
    ) -> None:
        """A fused segment: its kernel embedded in the module (block buffers allocated once
        per function call), called with the domain broadcast from the run-time shapes.

        ``direct``: a ``setitem`` whose value the segment writes straight into the region
        of the setitem's result (:meth:`_direct_target`), which :meth:`_emit_setitem` then
        only names."""
        split = self._split_sum(seg) if self._loop_depth else None
        if split is not None:
            x = split[1].inputs[0]
            if x not in seg.outputs and len(x.aval.shape) == 1:
                # the temporary only feeds the sum: one buffer for all iterations, grown
                # when a longer one is needed (a triangular loop's slices grow by one)
                buf = self.fresh("sum_tmp")
                self.scratch_lines.append(f"    {buf} = np.empty(0, {ctor(np.dtype(x.dtype))})")
                self.grow_bufs[x] = buf
            self.emit_segment(split[0], env, lines, indent, direct)
            seg = split[1]
        k = self._segments
        self._segments += 1
        px = f"s{k}_"
        if self._emit_numpy_sum(seg, env, lines, indent, px):
            return
        embedding = KernelEmbedding(seg, px, self.fast_math)
        call = embedding.call
        rank = call.rank
        if rank == 0 and self._emit_scalar_segment(seg, embedding, env, lines, indent, px):
            return
        ins = [env[n] for n in seg.inputs]
        # The contiguous kernel serves segments whose array inputs all span the domain (no
        # broadcasting) and reduce over every axis: 1-D views, vectorised loops, lanes.
        tiled = {
            i: self.tile_outputs[o]
            for i, o in enumerate(seg.outputs)
            if o in self.tile_outputs and i in call.map_outputs
        }
        flat = rank == 0 or (
            call.has_flat
            and bool(call.array_inputs)
            and direct is None
            and not tiled
            and all(seg.inputs[i].aval.shape == seg.domain for i in call.array_inputs)
        )
        variant = "flat" if flat else "nd"
        kname = f"{px}{variant}"
        # A 0-d segment (the loop test ``sum > thr``) is inlined into the function: its
        # one-element loops and buffers then fold into scalar code.
        unit: set[str] = set()
        if not flat:
            unit = {
                f"in{i}"
                for i in call.array_inputs
                if ins[i].unit and seg.inputs[i].aval.shape == seg.domain and None not in seg.domain
            }
            if direct is not None and _unit_rows(direct):
                unit |= {f"out{i}" for i in call.map_outputs if seg.outputs[i] is direct.args[1]}
            unit |= {f"out{i}" for i in tiled}  # rows of a C-contiguous output
        kernel = embedding.kernel(
            variant, kname, "@_inline" if rank == 0 else "@_kernel", frozenset(unit)
        )
        if rank == 0 and kernel.text.split("):", 1)[0].count(",") >= _INLINE_MAX_ARGS:
            # CPython passes more arguments as one tuple (*args), which Numba cannot inline
            kernel = embedding.kernel(variant, kname, "@_kernel", frozenset(unit))
        call = kernel.call
        self.helpers.update(kernel.helpers)
        kname = self._module_kernel(kernel.constants, kernel.text, px, kname)
        args = _SegmentArgs()
        args.inputs = {i: v.name for i, v in enumerate(ins)}
        for buf in call.scratch_of(variant):
            var = f"{px}{buf.name}"
            self.scratch_lines.append(f"    {var} = {buf.allocation()}")
            args.scratch.append(var)
        for ufunc, loop in call.loops:
            found = find_loop(ufunc, loop)
            assert found is not None
            args.loops.append(len(self.loop_args))
            self.loop_args.append(found)
        red = call.reduction
        if flat and rank > 0:
            self._emit_flat(seg, call, px, kname, args, env, lines, indent)
            return
        if rank == 0:
            for i in call.map_outputs:
                # One-element output buffers shared by every 0-d segment (each result is
                # read right after its call): an unrolled loop of 20 tests allocated 60.
                dt = np.dtype(call.output_dtypes[i])
                buf = f"z{i}_{dt.name}"
                if buf not in self.scratch_names:
                    self.scratch_names.add(buf)
                    self.scratch_lines.append(f"    {buf} = np.empty(1, {ctor(dt)})")
                args.outputs[i] = buf
            args.size = "1"
            text = f"{kname}({', '.join(args.arguments(call, 'flat', scratch=True))})"
            self._call_kernel(lines, indent, px, text, red is not None)
            for i in call.map_outputs:
                t = self.fresh()
                lines.append(f"{indent}{t} = {args.outputs[i]}[0]")
                env[seg.outputs[i]] = _Val(t, True, False)
            if red is not None:
                self._finish_total(seg, red, f"{px}acc", "1.0", 0, env, lines, indent)
            return
        # the domain: NumPy broadcasting of the array inputs' run-time shapes
        dims = [f"{px}n{d}" for d in range(rank)]
        for d in dims:
            lines.append(f"{indent}{d} = 1")
        for i in call.array_inputs:
            a = ins[i]
            r = len(seg.inputs[i].aval.shape)
            for ax in range(r):
                d = dims[rank - r + ax]
                v = self.fresh("e")
                lines.append(f"{indent}{v} = {a.name}.shape[{ax}]")
                lines.append(f"{indent}if {v} != 1:")
                self.signal(lines, indent + "    ", f"{d} != 1 and {d} != {v}")
                lines.append(f"{indent}    {d} = {v}")
        shape = "(" + "".join(f"{d}, " for d in dims) + ")"
        if call.empty_falls_back:  # NumPy's empty reductions: an error, a NaN, a warning
            self.signal(lines, indent, " * ".join(dims) + " == 0")
        args.dims = dims
        static = None not in seg.domain
        for i in call.array_inputs:
            a = ins[i]
            if seg.inputs[i].aval.shape == seg.domain and static:
                continue  # already the domain's shape: no view needed
            v = self.fresh("b")
            lines.append(f"{indent}{v} = np.broadcast_to({a.name}, {shape})")
            args.inputs[i] = v
        if direct is not None:
            mode = self._setitem_mode(direct, env, seg)
            assert mode is not None
            dest, view, _ = self._setitem_target(direct, mode, env, lines, indent)
            self.directed[direct] = dest
        for i in call.map_outputs:
            if direct is not None and seg.outputs[i] is direct.args[1]:
                args.outputs[i] = view
                env[seg.outputs[i]] = _Val(view, False, False, dest.roots)
                continue
            if i in tiled:
                out = tiled[i]
                view = f"{out.name}_tile"
                lines.append(f"{indent}{view} = {out.name}[r0:r1]")
                self.signal(lines, indent, f"{view}.shape != {shape}")
                args.outputs[i] = view
                env[seg.outputs[i]] = _Val(view, False, False, out.roots, unit=True)
                continue
            t = self.fresh()
            self._out_buffer(
                seg.outputs[i],
                shape,
                f"{{sp}}.shape == {shape}",
                ctor(call.output_dtypes[i]),
                lines,
                indent,
                t,
            )
            args.outputs[i] = t
            env[seg.outputs[i]] = _Val(t, False, True)
        if red is not None:
            keep = "(" + "".join(f"{d}, " for d in red.accumulator_shape(dims)) + ")"
            args.acc = self.fresh("acc")
            lines.append(
                f"{indent}{args.acc} = np.full({keep}, "
                f"{const_source(red.identity, red.acc_dtype)}, "
                f"{ctor(red.acc_dtype)})"
            )
        self.signal(lines, indent, f"{kname}({', '.join(args.arguments(call, 'nd', True))})")
        if red is not None:
            self._finish_reduction(seg, red, args.acc, dims, env, lines, indent)

    def _emit_scalar_segment(
        self,
        seg: Segment,
        embedding: KernelEmbedding,
        env: dict[Node, _Val],
        lines: list[str],
        indent: str,
        px: str,
    ) -> bool:
        """A 0-d segment (a loop's index arithmetic, its test, ``A[i, j] * 0.1``) as one call
        of a function of scalars: ``bad, t1, t2 = s4_scalar(i, n)``. Numba inlines it and
        the values stay in registers; the block kernel's one-element loop stored each
        result into a heap buffer and read it back, which made an inner loop of a few
        scalar ops 4-10x slower than a hand ``@njit`` loop. False where the segment needs
        buffers (a NumPy loop call, a reduction)."""
        ins = [env[n] for n in seg.inputs]
        if not all(v.scalar for v in ins):
            return False
        deco = "@_inline" if len(ins) < _INLINE_MAX_ARGS else "@_kernel"
        kernel = embedding.scalar_kernel(f"{px}scalar", deco)
        if kernel is None:
            return False
        self.helpers.update(kernel.helpers)
        outs = []
        for i in kernel.call.map_outputs:
            t = self.fresh()
            outs.append(t)
            env[seg.outputs[i]] = _Val(t, True, False)
        bad = f"{px}bad"
        checks = "bad = bad |" in kernel.text  # a check NumPy decides (a NaN cast to int)
        body = _inline_scalar_body(
            kernel.text, [v.name for v in ins], dict(zip(kernel.call.map_outputs, outs)), px
        )
        if body is not None:
            # the statements themselves, in the loop: nothing for Numba to inline (IR
            # inlining of many small functions cost seconds of compilation)
            if kernel.constants:
                self.module_parts.append(kernel.constants)
            if checks:
                lines.append(f"{indent}{bad} = False")
            lines.extend(indent + line for line in body)
        else:
            kname = self._module_kernel(kernel.constants, kernel.text, px, f"{px}scalar")
            lines.append(
                f"{indent}{bad}{''.join(', ' + o for o in outs)} = "
                f"{kname}({', '.join(v.name for v in ins)})"
            )
        if checks:
            self.signal(lines, indent, bad)
        return True

    def _module_kernel(self, constants: str, text: str, px: str, kname: str) -> str:
        """Add a segment's kernel to the module and return the name to call it by: the
        name of an earlier kernel of the same text (its prefix aside), when there is one.

        An unrolled Python loop repeats the same segments at every iteration; each kernel
        is a function LLVM compiles, so 49 copies of one sum took minutes where one
        takes a second."""
        canon = re.sub(rf"\b{px}", "sX_", constants + "\n" + text)
        first = self._kernel_texts.get(canon)
        if first is not None:
            return first + kname[len(px) :]
        self._kernel_texts[canon] = px
        self.module_parts.append(constants)
        self.module_parts.append(text)
        return kname

    def _split_sum(self, seg: Segment) -> tuple[Segment, Segment] | None:
        """``np.sum(a * b)`` in a loop body as NumPy computes it: the elementwise part into
        a temporary (a map segment), then NumPy's own pairwise ``add`` reduction of it
        (:meth:`_emit_numpy_sum`), bitwise. Fused, the kernel would sum through its lanes,
        in another order (the documented bound); a loop body's vectors are short, so the
        temporary costs little. None where the sum is not such a float sum."""
        red = seg.reduction
        if red is None or not seg.elementwise or red.op.accumulator is not np.add:
            return None
        x = red.args[0]
        dt = np.dtype(red.dtype)
        if (
            not isinstance(x, Node)
            or x not in seg.elementwise
            or x.aval.shape in (None, ())
            or np.dtype(x.dtype) != dt
            or dt not in (np.dtype(np.float32), np.dtype(np.float64))
        ):
            return None
        rank = len(x.aval.shape)
        axis = red.attrs.get("axis")
        if axis is not None:
            axes = {int(a) % rank for a in (axis if isinstance(axis, tuple) else (axis,))}
            if axes != set(range(rank)):
                return None
        members = seg.elementwise
        outputs = [o for o in seg.outputs if o is not red]
        if x not in outputs:
            outputs.append(x)
        inputs = [i for i in seg.inputs if any(i in n.inputs for n in members)]
        return (
            Segment(members, inputs, outputs, seg.domain, None, seg.index),
            Segment([red], [x], [red], seg.domain, red, seg.index),
        )

    def _emit_numpy_sum(
        self, seg: Segment, env: dict[Node, _Val], lines: list[str], indent: str, px: str
    ) -> bool:
        """A segment that is only the float sum (or mean) of an array over all axes: NumPy's
        own ``add`` loop in its reduce form (it sums pairwise, in the array's dtype).

        ``np.sum`` of a contiguous (or 1-D) array makes this very call on the whole array, so
        the result is NumPy's to the bit, at NumPy's speed: 2.8x faster than the float64
        lanes at 1M float32 elements, where W5b sums once per iteration. A non-contiguous
        N-d array is summed from a C-ordered copy: pairwise as well, within the documented
        bound of NumPy's order. Returns False for every other segment.
        """
        red = seg.reduction
        if red is None or seg.elementwise or red.op.accumulator is not np.add:
            return False
        x = red.args[0]
        dt = np.dtype(red.dtype)
        if (
            not isinstance(x, Node)
            or x not in env
            or x.aval.shape in (None, ())
            or np.dtype(x.dtype) != dt
            or dt not in (np.dtype(np.float32), np.dtype(np.float64))
        ):
            return False
        rank = len(x.aval.shape)
        axis = red.attrs.get("axis")
        if axis is not None:
            axes = {int(a) % rank for a in (axis if isinstance(axis, tuple) else (axis,))}
            if axes != set(range(rank)):
                return False
        found = find_loop(np.add, (dt,) * 3)
        if found is None:
            return False
        idx = len(self.loop_args)
        self.loop_args.append(found)
        self.helpers["_sum_loop"] = _SUM_LOOP
        scratch = []
        for name, size, sdt in (
            ("pp", 3, "np.uintp"),
            ("st", 3, "np.intp"),
            ("dims", 1, "np.intp"),
            ("acc", 1, ctor(dt)),
        ):
            self.scratch_lines.append(f"    {px}{name} = np.empty({size}, {sdt})")
            scratch.append(px + name)
        src = env[x].name
        if rank > 1:
            v = self.fresh("r")
            lines.append(f"{indent}{v} = {src}.ravel()")
            src = v
        t = self.fresh()
        lines.append(f"{indent}{t} = _sum_loop({src}, f{idx}, d{idx}, {', '.join(scratch)})")
        if red.op is OpKind.MEAN:
            # NumPy's empty mean is a NaN with a warning; otherwise sum / count in the dtype
            self.signal(lines, indent, f"{src}.size == 0")
            lines.append(f"{indent}{t} = {t} / {ctor(dt)}({src}.size)")
        if red.attrs.get("keepdims"):
            lines.append(f"{indent}{t} = np.full({(1,) * rank!r}, {t})")
            env[red] = _Val(t, False, True)
        else:
            env[red] = _Val(t, True, False)
        return True

    def _emit_flat(
        self,
        seg: Segment,
        call: SegmentCall,
        px: str,
        kname: str,
        args: _SegmentArgs,
        env: dict[Node, _Val],
        lines: list[str],
        indent: str,
    ) -> None:
        red = call.reduction
        first = args.inputs[call.array_inputs[0]]
        for i in call.array_inputs[1:]:
            self.signal(lines, indent, f"{args.inputs[i]}.shape != {first}.shape")
        n = f"{px}size"
        lines.append(f"{indent}{n} = {first}.size")
        if call.empty_falls_back:
            self.signal(lines, indent, f"{n} == 0")
        rank = call.rank
        if rank > 1:  # 1-D as it is: a 1-D view (a reshape) costs more than 5 elements do
            for i in call.array_inputs:
                v = self.fresh("r")
                lines.append(f"{indent}{v} = {args.inputs[i]}.ravel()")
                args.inputs[i] = v
        for i in call.map_outputs:
            t = self.fresh()
            dt = ctor(call.output_dtypes[i])
            self._out_buffer(
                seg.outputs[i],
                n,
                f"{{sp}}.size == {n}",
                dt,
                lines,
                indent,
                t,
                "{sp}" if rank == 1 else f"{{sp}}.reshape({n})",
            )
            args.outputs[i] = t
        args.size = n
        text = f"{kname}({', '.join(args.arguments(call, 'flat', scratch=True))})"
        self._call_kernel(lines, indent, px, text, red is not None)
        for i in call.map_outputs:
            t = args.outputs[i]
            if rank > 1:
                lines.append(f"{indent}{t} = {t}.reshape({first}.shape)")
            env[seg.outputs[i]] = _Val(t, False, True)
        if red is not None:
            self._finish_total(seg, red, f"{px}acc", n, rank, env, lines, indent)

    def _finish_total(
        self,
        seg: Segment,
        red: ReductionPlan,
        acc: str,
        count: str,
        rank: int,
        env: dict[Node, _Val],
        lines: list[str],
        indent: str,
    ) -> None:
        """A reduction over every axis, returned by the kernel as one accumulator: NumPy's
        result from it (a mean divided by ``count``; keepdims as a 1-filled shape)."""
        if red.mean:
            acc = f"({acc} / {count})"
        t = self.fresh()
        lines.append(f"{indent}{t} = {ctor(red.out_dtype)}({acc})")
        if red.keepdims and rank > 0:
            lines.append(f"{indent}{t} = np.full({(1,) * rank!r}, {t})")
            env[seg.reduction] = _Val(t, False, True)  # type: ignore[index]
        else:
            env[seg.reduction] = _Val(t, True, False)  # type: ignore[index]

    def _finish_reduction(
        self,
        seg: Segment,
        red: ReductionPlan,
        acc: str,
        dims: list[str],
        env: dict[Node, _Val],
        lines: list[str],
        indent: str,
    ) -> None:
        """An N-d kernel's accumulator array (keepdims shape) as NumPy's result."""
        out_dt = ctor(red.out_dtype)
        if red.mean:
            lines.append(f"{indent}{acc} = {acc} / ({red.count(dims)})")
        t = self.fresh()
        if red.axis is None and not red.keepdims:
            lines.append(f"{indent}{t} = {out_dt}({acc}.ravel()[0])")
            env[seg.reduction] = _Val(t, True, False)  # type: ignore[index]
            return
        lines.append(f"{indent}{t} = {acc}.astype({out_dt})")
        if not red.keepdims:
            shape = "(" + "".join(f"{d}, " for d in red.result_dims(dims)) + ")"
            lines.append(f"{indent}{t} = {t}.reshape({shape})")
        env[seg.reduction] = _Val(t, False, True)  # type: ignore[index]

    # -- other ops ----------------------------------------------------------------------------
    def emit_node(self, node: Node, env: dict[Node, _Val], lines: list[str], indent: str) -> None:
        op = node.op
        if op is OpKind.PLACEHOLDER:
            return
        if op is OpKind.CONSTANT:
            value = np.asarray(node.attrs["value"])
            if value.ndim == 0 and value.dtype.kind in "biuf":
                # a literal in the source, not one more argument for the dispatcher to
                # type at every call (~50 ns each)
                t = self.fresh("k")
                self.scratch_lines.append(f"    {t} = {const_source(value[()], value.dtype)}")
                env[node] = _Val(t, True, False)
                return
            name = f"c{len(self.constants)}"
            self.constants.append(value[()] if value.ndim == 0 else value)
            env[node] = _Val(name, value.ndim == 0, False)
            return
        args = [env[a] if isinstance(a, Node) else a for a in node.args]
        t = self.fresh()
        scalar = (
            node.aval is not None and not isinstance(node.aval, tuple) and node.aval.shape == ()
        )
        if op is OpKind.GET_OUTPUT:
            src = args[0]
            lines.append(f"{indent}{t} = {src.name}[{node.attrs['index']}]")
            part = src.parts[node.attrs["index"]] if src.parts is not None else src.roots
            env[node] = _Val(t, scalar, True, None if scalar else part)
            return
        if op is OpKind.DIM:
            lines.append(f"{indent}{t} = np.int64({args[0].name}.shape[{node.attrs['axis']}])")
            env[node] = _Val(t, True, False)
            return
        if op is OpKind.COND:
            self._emit_cond(node, args, t, env, lines, indent)
            return
        if op is OpKind.WHILE:
            self._emit_while(node, args, t, env, lines, indent)
            return
        if op in _OP_RULES and _OP_RULES[op].claims(node):
            kind = _OP_RULES[op].emit(self, node, args, t, lines, indent)
            roots = args[0].roots if kind == "view" else None
            env[node] = _Val(t, kind == "scalar", kind == "fresh", roots)
            return
        if op is OpKind.MATMUL:
            self._emit_matmul(node, args, t, lines, indent)
            env[node] = _Val(t, False, True)
            return
        if op is OpKind.SETITEM:
            self._emit_setitem(node, env, lines, indent)
            return
        if op in (OpKind.ARGMIN, OpKind.ARGMAX):
            self._emit_arg_reduce(node, args[0], t, env, lines, indent)
            return
        if op is OpKind.UFUNC_AT:
            self._emit_ufunc_at(node, args, t, env, lines, indent)
            return
        if op is OpKind.BINCOUNT:
            self.helpers["_bincount"] = _BINCOUNT
            lines.append(
                f"{indent}{t}_ok, {t} = _bincount({args[0].name}, "
                f"{int(node.attrs.get('minlength', 0))})"
            )
            self.signal(lines, indent, f"not {t}_ok")  # a negative value: NumPy's error
            env[node] = _Val(t, False, True)
            return
        if op is OpKind.GETITEM:  # a view of x (or one element of it)
            self._emit_getitem(node, args, t, lines, indent)
            env[node] = _Val(
                t,
                scalar,
                False,
                None if scalar else args[0].roots,
                unit=not scalar and args[0].unit and _unit_rows(node),
            )
            return
        x = args[0].name
        if op is OpKind.RESHAPE:
            shape = tuple(node.attrs["shape"])
            if shape == ():
                lines.append(f"{indent}{t} = np.ascontiguousarray({x}).ravel()[0]")
            else:
                lines.append(f"{indent}{t} = np.ascontiguousarray({x}).reshape({shape!r})")
        elif op is OpKind.TRANSPOSE:
            axes = node.attrs.get("axes")
            axes = tuple(range(len(node.args[0].aval.shape)))[::-1] if axes is None else tuple(axes)
            lines.append(f"{indent}{t} = np.transpose({x}, {axes!r})")
        elif op is OpKind.EXPAND_DIMS:
            lines.append(f"{indent}{t} = np.expand_dims({x}, {int(node.attrs['axis'])})")
        elif op is OpKind.BROADCAST_TO:
            lines.append(f"{indent}{t} = np.broadcast_to({x}, {tuple(node.attrs['shape'])!r})")
        elif op is OpKind.COPY:
            lines.append(
                f"{indent}{t} = {x}.copy()" if not args[0].scalar else f"{indent}{t} = {x}"
            )
            env[node] = _Val(t, scalar, True)
            return
        else:  # pragma: no cover - check() rejects everything else
            raise Unsupported(op.value)
        # reshape/transpose/expand_dims/broadcast_to: views of x (a reshape's of a contiguous
        # array: its rows are unit-stride)
        env[node] = _Val(
            t,
            scalar,
            False,
            None if scalar else args[0].roots,
            unit=op is OpKind.RESHAPE and not scalar,
        )

    def _emit_getitem(
        self, node: Node, args: list[Any], t: str, lines: list[str], indent: str
    ) -> None:
        parts, _ = self._index(node, args[0], args, 1, lines, indent)
        lines.append(f"{indent}{t} = {args[0].name}[{', '.join(parts) or ':'}]")

    def _index(
        self, node: Node, x: _Val, args: list[Any], first_dyn: int, lines: list[str], indent: str
    ) -> tuple[list[str], list[tuple[str, str] | None]]:
        """A basic index as Numba source: its components, and per axis of ``x`` the run-time
        bounds ``(lo, hi)`` of what it selects (an integer, or a slice of step 1; None for a
        strided slice). An integer out of range is NumPy's IndexError: it signals a rerun
        there. ``first_dyn``: the argument position of the first traced index."""
        comps = node.attrs["index"]
        shape = node.args[0].aval.shape
        rank = len(shape)
        used = sum(1 for c in comps if c is not None and c is not Ellipsis)
        parts: list[str] = []
        bounds: list[tuple[str, str] | None] = []
        axis = 0
        for c in comps:
            if c is None:
                parts.append("None")
                continue
            if c is Ellipsis:
                parts.append("...")
                for a in range(axis, axis + rank - used):
                    bounds.append(("0", f"{x.name}.shape[{a}]"))
                axis += rank - used
                continue
            n = f"{x.name}.shape[{axis}]"
            axis += 1
            if isinstance(c, slice):
                ends = [
                    None
                    if p is None
                    else args[p.position - 1 + first_dyn].name
                    if isinstance(p, DynamicIndex)
                    else int(p)
                    for p in (c.start, c.stop)
                ]
                parts.append(
                    f"{'' if ends[0] is None else ends[0]}:"
                    f"{'' if ends[1] is None else ends[1]}"
                    f"{'' if c.step is None else ':' + str(c.step)}"
                )
                if c.step not in (None, 1):
                    bounds.append(None)
                    continue
                lo = "0" if ends[0] is None else _clamp(ends[0], n)
                hi = n if ends[1] is None else _clamp(ends[1], n)
                bounds.append((lo, f"max({hi}, {lo})"))
                continue
            if isinstance(c, DynamicIndex):
                i = args[c.position - 1 + first_dyn].name
                known = self.ranges.get(node.args[c.position - 1 + first_dyn])
                dim = shape[axis - 1] if shape is not None else None
                if known is not None and dim is not None and known[0] >= 0 and known[1] < dim:
                    # in range by the static shape (a counted loop's index): no check, as in
                    # a hand-written loop over range(n) (and LLVM may vectorise the loop)
                    parts.append(i)
                    bounds.append((i, f"{i} + 1"))
                    continue
            else:
                i = str(int(c))
                dim = shape[axis - 1] if shape is not None else None
                if dim is not None and -dim <= int(c) < dim:
                    # in range by the static shape: no check, a non-negative literal (an
                    # unrolled Python loop's x[i] is most of its lines otherwise)
                    k = int(c) % dim
                    parts.append(str(k))
                    bounds.append((str(k), str(k + 1)))
                    continue
            # an index out of range is an IndexError in NumPy: rerun there to raise it
            v = self.fresh("i")
            lines.append(f"{indent}{v} = {i}")
            self.signal(lines, indent, f"{v} < -{n} or {v} >= {n}")
            parts.append(v)
            bounds.append(
                (f"({v} + {n} if {v} < 0 else {v})", f"({v} + {n} + 1 if {v} < 0 else {v} + 1)")
            )
        for a in range(axis, rank):
            bounds.append(("0", f"{x.name}.shape[{a}]"))
        if parts == ["..."]:
            parts = [":"]  # Numba has no x[...] on its own; x[:] is the same view
        return parts, bounds

    # -- setitem --------------------------------------------------------------------------------
    def _direct_target(
        self, graph: Graph, seg: Segment, nxt: Any, env: dict[Node, _Val]
    ) -> Node | None:
        """The ``setitem`` right after ``seg`` whose value ``seg`` may write straight into
        the written region (no temporary), or None.

        The value must be one of ``seg``'s map outputs read by nothing else, exactly the
        region's static shape and the base's dtype (no broadcast, no cast), and the base and
        traced indices already computed. Where the write would be in place, ``seg`` must not
        read the base's memory (a stencil reading ``u`` while ``u[1:-1, 1:-1]`` is written
        would read new values): it then writes into a fresh buffer instead when copying the
        rest of the base costs less than the region (:meth:`_setitem_mode`).
        """
        if (
            not isinstance(nxt, Node)
            or nxt.op is not OpKind.SETITEM
            or _OP_RULES[OpKind.SETITEM].claims(nxt)
        ):  # an advanced index: a scatter
            return None
        x, value = nxt.args[0], nxt.args[1]
        if (
            not isinstance(value, Node)
            or value not in seg.outputs
            or value is seg.reduction
            or len(seg.domain) == 0
            or None in seg.domain
        ):
            return None
        if (
            sum(a is value for n in graph.nodes for a in n.args) != 1
            or value in graph.outputs
            or x not in env
        ):
            return None
        if any(isinstance(a, Node) and a not in env for a in nxt.args[2:]):
            return None
        shape = x.aval.shape
        if None in shape or np.dtype(value.dtype) != np.dtype(x.dtype):
            return None
        dyn = [a.aval for a in nxt.args[2:]]
        if getitem_shape(shape, nxt.attrs["index"], dyn) != tuple(seg.domain):
            return None
        if self._setitem_mode(nxt, env, seg) is None:
            return None
        return nxt

    def _setitem_mode(
        self, node: Node, env: dict[Node, _Val], seg: Segment | None = None
    ) -> str | None:
        """How ``node`` writes: ``"inplace"`` (into its base, which the plan found owned and
        dead), ``"rest"`` (into a fresh buffer — a dead buffer a loop left, see
        :meth:`_emit_while` — with everything outside the region copied from the base), or
        ``"copy"`` (into a fresh copy of the whole base). With ``seg`` (its value's segment,
        writing into the region directly) None where no mode allows that."""
        base = env[node.args[0]]
        rest = self._rest_cost(node)
        if node in self.plan.writes:
            if seg is None or not any(
                env[i].roots & base.roots for i in seg.inputs if not env[i].scalar
            ):
                return "inplace"
            # the segment reads the base: write into a fresh buffer when the rest of the
            # base is smaller than the region (a stencil's border), else via a temporary
            return "rest" if rest is not None and rest[0] <= rest[1] else None
        return "copy" if rest is None else "rest"

    def _rest_cost(self, node: Node) -> tuple[int, int] | None:
        """(elements outside the region, elements in it) by the static shapes, or None when
        the rest cannot be copied as boxes (a strided slice) or the sizes are unknown."""
        comps = node.attrs["index"]
        x = node.args[0]
        shape = x.aval.shape
        if None in shape or any(isinstance(c, slice) and c.step not in (None, 1) for c in comps):
            return None
        dyn = [a.aval for a in node.args[2:]]
        region = getitem_shape(shape, comps, dyn)
        if region is None or None in region:
            return None
        total = int(np.prod(shape))
        inside = int(np.prod(region))
        return total - inside, inside

    def _setitem_target(
        self, node: Node, mode: str, env: dict[Node, _Val], lines: list[str], indent: str
    ) -> tuple[_Val, str, list[str]]:
        """The buffer ``node`` writes into (``mode`` of :meth:`_setitem_mode`), ready but
        for the region: returns it, the region's view variable and the index parts."""
        x = env[node.args[0]]
        args = [env.get(a) if isinstance(a, Node) else a for a in node.args]
        parts, bounds = self._index(node, x, args, 2, lines, indent)
        idx = ", ".join(parts) or ":"
        if mode == "inplace":
            dest = _Val(x.name, False, x.fresh, x.roots)
        else:
            t = self.fresh()
            dt = ctor(np.dtype(node.dtype))
            rank = len(node.aval.shape)
            shape = "(" + "".join(f"{x.name}.shape[{a}], " for a in range(rank)) + ")"
            test = " and ".join(f"{{sp}}.shape[{a}] == {x.name}.shape[{a}]" for a in range(rank))
            self._out_buffer(node, shape, test, dt, lines, indent, t)
            dest = _Val(t, False, True)
            if mode == "copy" or any(b is None for b in bounds):
                lines.append(f"{indent}{self.assign(t, x.name, rank, rank)}")
            else:
                self._copy_rest(t, x.name, bounds, lines, indent)  # type: ignore[arg-type]
        view = ""
        if not _is_element(node, len(node.aval.shape)):
            view = self.fresh("w")
            lines.append(f"{indent}{view} = {dest.name}[{idx}]")
        return dest, view, parts

    def assign(self, dest: str, src: str, rank: int, src_rank: int) -> str:
        """The statement ``dest[...] = src`` for arrays of ranks ``rank`` and ``src_rank`` (at
        most ``rank``; its axes broadcast against ``dest``'s last ones, shapes already
        checked), as a call of a loop helper: Numba's own array-to-array assignment
        compiles its broadcasting machinery for every type pair, 2-4 s each, which made
        most of a loop kernel's first call."""
        name = f"_assign{rank}_{src_rank}"
        if name not in self.helpers:
            self.helpers[name] = _assign_source(name, rank, src_rank)
        return f"{name}({dest}, {src})"

    def _copy_rest(
        self, dest: str, src: str, bounds: list[tuple[str, str]], lines: list[str], indent: str
    ) -> None:
        """Copy ``src`` into ``dest`` outside the box ``bounds``: per axis ``d``, the slabs
        before and after the box along ``d`` within the box along the axes before it."""
        names = []
        for lo, hi in bounds:
            a, b = self.fresh("lo"), self.fresh("hi")
            lines.append(f"{indent}{a} = {lo}")
            lines.append(f"{indent}{b} = {hi}")
            names.append((a, b))
        rank = len(bounds)
        for d in range(rank):
            inside = [f"{a}:{b}" for a, b in names[:d]]
            rest = [":"] * (rank - d - 1)
            for part in (f":{names[d][0]}", f"{names[d][1]}:"):
                idx = ", ".join(inside + [part] + rest)
                copy = self.assign(f"{dest}[{idx}]", f"{src}[{idx}]", rank, rank)
                lines.append(f"{indent}{copy}")

    def _emit_setitem(
        self, node: Node, env: dict[Node, _Val], lines: list[str], indent: str
    ) -> None:
        """``x[index] = value`` as NumPy does it: the value cast to ``x``'s dtype and
        broadcast to the region (a shape that does not broadcast signals NumPy's error)."""
        done = self.directed.pop(node, None)
        if done is not None:  # the value's segment wrote it (emit_segment)
            env[node] = done
            return
        mode = self._setitem_mode(node, env)
        assert mode is not None
        dest, view, parts = self._setitem_target(node, mode, env, lines, indent)
        x = node.args[0]
        dt = np.dtype(x.dtype)
        value = node.args[1]
        element = _is_element(node, len(x.aval.shape))
        vr = rr = 0
        if not isinstance(value, Node):
            src = const_source(literal_into(value, dt), dt)
        elif env[value].scalar:
            src = env[value].name
            if np.dtype(value.dtype) != dt:
                src = f"{ctor(dt)}({src})"
        else:
            v = env[value]
            src = v.name
            if v.roots & dest.roots:  # NumPy reads the value before it writes (overlap)
                c = self.fresh("k")
                lines.append(f"{indent}{c} = {src}.copy()")
                src = c
            vr = len(value.aval.shape)
            rr = len(
                getitem_shape(
                    x.aval.shape,
                    node.attrs["index"],  # type: ignore[arg-type]
                    [a.aval for a in node.args[2:]],
                )
            )
            for k in range(1, vr + 1):
                self.signal(
                    lines,
                    indent,
                    f"{src}.shape[{vr - k}] != 1 and "
                    f"{src}.shape[{vr - k}] != {view}.shape[{rr - k}]",
                )
            if np.dtype(value.dtype) != dt:
                c = self.fresh("k")
                lines.append(f"{indent}{c} = {src}.astype({ctor(dt)})")
                src = c
        if element:  # (an ``...`` there spans no axis)
            lines.append(
                f"{indent}{dest.name}[{', '.join(p for p in parts if p != '...')}] = {src}"
            )
        elif isinstance(value, Node) and not env[value].scalar and vr <= rr:
            lines.append(f"{indent}{self.assign(view, src, rr, vr)}")
        else:
            lines.append(f"{indent}{view}[:] = {src}")
        env[node] = dest

    # -- argmin/argmax, ufunc.at, bincount -------------------------------------------------
    def _emit_arg_reduce(
        self, node: Node, x: _Val, t: str, env: dict[Node, _Val], lines: list[str], indent: str
    ) -> None:
        """``np.argmin``/``np.argmax``: the first extreme, or the first NaN (NumPy's rule),
        along one axis (moved last) or over the flattened array."""
        name = f"_{node.op.value}"
        self.helpers[name + "1"] = _ARG_REDUCE.format(
            name=name, cmp="<" if node.op is OpKind.ARGMIN else ">"
        )
        axis, keepdims = node.attrs.get("axis"), node.attrs.get("keepdims", False)
        rank = len(node.args[0].aval.shape)
        if x.scalar:  # a 0-d value: NumPy's answer is 0
            lines.append(f"{indent}{t} = np.int64(0)")
            env[node] = _Val(t, True, False)
            return
        if axis is None or rank == 1:
            flat = self.fresh("r")
            lines.append(f"{indent}{flat} = np.ascontiguousarray({x.name}).ravel()")
            self.signal(lines, indent, f"{flat}.size == 0")  # NumPy's empty-sequence error
            lines.append(f"{indent}{t} = np.int64({name}1({flat}))")
            if keepdims:
                lines.append(f"{indent}{t} = np.full({(1,) * rank!r}, {t})")
                env[node] = _Val(t, False, True)
            else:
                env[node] = _Val(t, True, False)
            return
        ax = int(axis) % rank
        perm = tuple(a for a in range(rank) if a != ax) + (ax,)
        v = self.fresh("v")
        lines.append(f"{indent}{v} = np.transpose({x.name}, {perm!r})")
        self.signal(lines, indent, f"{v}.shape[{rank - 1}] == 0")
        shape = "(" + "".join(f"{v}.shape[{a}], " for a in range(rank - 1)) + ")"
        lines.append(f"{indent}{t} = np.empty({shape}, np.int64)")
        lines.append(f"{indent}for _ix in np.ndindex({t}.shape):")
        lines.append(f"{indent}    {t}[_ix] = {name}1({v}[_ix])")
        if keepdims:
            lines.append(f"{indent}{t} = np.expand_dims({t}, {ax})")
        env[node] = _Val(t, False, True)

    def _emit_ufunc_at(
        self,
        node: Node,
        args: list[Any],
        t: str,
        env: dict[Node, _Val],
        lines: list[str],
        indent: str,
    ) -> None:
        """``np.add.at(a, idx, b)`` (subtract, multiply): unbuffered, in index order, into a
        copy of ``a`` — NumPy's order, so float results are NumPy's bits. An index out of
        range, or values of another shape, signal NumPy's error."""
        base, values, idx = args[0], args[1], args[2]
        ufunc = node.attrs["ufunc"]
        dt = np.dtype(node.dtype)
        wrap = dt.kind in "iu"
        op = {
            np.add: ("_wadd({a}, {b})", "({a} + {b})"),
            np.subtract: ("_wsub({a}, {b})", "({a} - {b})"),
            np.multiply: ("_wmul({a}, {b})", "({a} * {b})"),
        }[ufunc][0 if wrap else 1]
        rank = len(node.aval.shape)
        scalar = values.scalar
        name = f"_at_{ufunc.__name__}_{rank}{'s' if scalar else ''}"
        self.helpers[name] = _ufunc_at_source(name, op, rank, scalar)
        lines.append(f"{indent}{t} = {base.name}.copy()")
        if not scalar:
            self.signal(
                lines,
                indent,
                f"{values.name}.shape[0] != {idx.name}.shape[0]"
                + "".join(
                    f" or {values.name}.shape[{a}] != {t}.shape[{a}]" for a in range(1, rank)
                ),
            )
        self.signal(lines, indent, f"not {name}({t}, {idx.name}, {values.name})")
        env[node] = _Val(t, False, True)

    def _out_buffer(
        self,
        node: Node,
        shape: str,
        size_test: str,
        dt: str,
        lines: list[str],
        indent: str,
        t: str,
        take: str = "{sp}",
    ) -> None:
        """``t = np.empty(shape, dt)``, or the dead buffer a loop left for ``node``.

        Inside a ``while`` body, the node that computes a loop variable's next value may write
        into the buffer of that variable's value from two iterations ago (its *spare*, see
        :meth:`_emit_while`), when the run-time sizes agree (``size_test``; ``take`` views
        the spare as the buffer needed)."""
        grow = self.grow_bufs.get(node)
        if grow is not None:  # (1-D: ``shape`` is a size or a one-element tuple)
            size = shape[1:].split(",")[0] if shape.startswith("(") else shape
            lines.append(f"{indent}if {grow}.size < {size}:")
            lines.append(f"{indent}    {grow} = np.empty({size}, {dt})")
            lines.append(f"{indent}{t} = {grow}[:{size}]")
            return
        spare = self.out_bufs.get(node)
        if spare is None:
            lines.append(f"{indent}{t} = np.empty({shape}, {dt})")
            return
        self.produced.add(node)
        lines.append(f"{indent}if {size_test.format(sp=spare)}:")
        lines.append(f"{indent}    {t} = {take.format(sp=spare)}")
        lines.append(f"{indent}else:")
        lines.append(f"{indent}    {t} = np.empty({shape}, {dt})")

    def _emit_matmul(
        self, node: Node, args: list[_Val], t: str, lines: list[str], indent: str
    ) -> None:
        a, b = args[0].name, args[1].name
        self.signal(lines, indent, f"{a}.shape[1] != {b}.shape[0]")
        # Never one of the operands: a spare is a dead buffer, and a new one is new.
        self._out_buffer(
            node,
            f"({a}.shape[0], {b}.shape[1])",
            f"{{sp}}.shape[0] == {a}.shape[0] and {{sp}}.shape[1] == {b}.shape[1]",
            ctor(np.dtype(node.dtype)),
            lines,
            indent,
            t,
        )
        lines.append(f"{indent}{self._matmul_call(node, a, b, t)}")

    def _matmul_call(self, node: Node, a: str, b: str, out: str) -> str:
        """The statement computing ``out = a @ b`` (``out`` a fresh C-contiguous buffer)."""
        dt = np.dtype(node.dtype)
        if dt.kind == "f":
            found = find_loop(np.matmul, (dt,) * 3)
            idx = len(self.loop_args)
            self.loop_args.append(found)  # type: ignore[arg-type]
            self.helpers["_matmul_loop"] = _MATMUL_LOOP
            if "mm_pp" not in self.scratch_names:
                # the loop's pointer, size and stride arrays: allocated once per call of the
                # function, shared by its products (they run one after the other)
                self.scratch_names.add("mm_pp")
                self.scratch_lines += [
                    "    mm_pp = np.empty(3, np.uintp)",
                    "    mm_dims = np.empty(4, np.intp)",
                    "    mm_st = np.empty(9, np.intp)",
                ]
            return f"_matmul_loop({a}, {b}, {out}, {self.loop_ref(idx)}, mm_pp, mm_dims, mm_st)"
        name = "_matmul_bool" if dt.kind == "b" else "_matmul_int"
        self.helpers[name] = _MATMUL_BOOL if dt.kind == "b" else _MATMUL_INT
        return f"{name}({a}, {b}, {out})"

    def _carry(self, v: _Val, lines: list[str], indent: str, copy: bool = False) -> _Val:
        """A value that may be carried through a loop or out of a branch: one Numba type on
        every path (fresh C-contiguous arrays; scalars as they are). ``copy``: a private
        copy even of a fresh array (a loop slot its body writes in place)."""
        if v.scalar or (v.fresh and not copy):
            return v
        t = self.fresh("k")
        lines.append(f"{indent}{t} = np.ascontiguousarray({v.name}).copy()")
        return _Val(t, False, True)

    def _emit_cond(
        self,
        node: Node,
        args: list[Any],
        t: str,
        env: dict[Node, _Val],
        lines: list[str],
        indent: str,
    ) -> None:
        pred, operands = args[0], args[1:]
        outs = [f"{t}_{i}" for i in range(len(node.aval))]
        parts: list[frozenset[str]] = [frozenset()] * len(outs)
        for head, graph in zip((f"if {pred.name}:", "else:"), node.attrs["branches"]):
            lines.append(f"{indent}{head}")
            sub = dict(env)
            for ph, v in zip(graph.inputs, operands):
                sub[ph] = v
            inner = indent + "    "
            vals = [self._carry(v, lines, inner) for v in self.emit_graph(graph, sub, lines, inner)]
            parts = [p | v.roots for p, v in zip(parts, vals)]
            if outs:
                lines.append(f"{inner}{', '.join(outs)}, = {', '.join(v.name for v in vals)},")
            else:
                lines.append(f"{inner}pass")
        lines.append(f"{indent}{t} = ({''.join(o + ', ' for o in outs)})")
        env[node] = _Val(t, False, True, frozenset().union(*parts), parts)

    def _reuse_targets(self, body: Graph, init: list[_Val]) -> dict[int, Node]:
        """Loop variables whose next value a matmul or a fused segment of the body computes
        (one node per variable, the same dtype and rank as the variable): candidates for
        writing into a dead buffer of that variable (:meth:`_emit_while`)."""
        targets: dict[int, Node] = {}
        for i, (out, v) in enumerate(zip(body.outputs, init)):
            if (
                v.scalar
                or out.op in (OpKind.PLACEHOLDER, OpKind.CONSTANT)
                or body.outputs.count(out) != 1
                or out.aval.shape == ()
            ):
                continue
            if out.op in (OpKind.MATMUL, OpKind.SETITEM) or can_compile(
                out, "cpu", fast_math=self.fast_math
            ):
                targets[i] = out
        return targets

    def _emit_while(
        self,
        node: Node,
        args: list[Any],
        t: str,
        env: dict[Node, _Val],
        lines: list[str],
        indent: str,
    ) -> None:
        """A ``while True:`` loop over the carried values.

        Buffer reuse: a loop variable ``x`` whose next value a segment or matmul computes
        keeps a *spare*: the buffer of its value from the previous iteration, once nothing can
        read it any more, which the next iteration's producer writes into instead of
        allocating (two buffers ping-pong; with 1M elements a fresh buffer per iteration costs
        page faults, with 5 an allocation). The old buffer becomes the spare only when

        * no value carried into the next iteration may share its memory (static: ``roots``;
          a variable passed through, returned by a branch or viewed keeps it alive), and
        * the loop owns it (run time, ``own``): the copy made on entry, or a buffer the
          producer filled. A fresh value carried in without a copy may still be referenced
          after the loop, so it is never recycled.

        The spare is checked against the producer's run-time size (a variable may change
        shape between iterations); a mismatch allocates.
        """
        n = node.attrs["n_vars"]
        cond_g, body_g = node.attrs["cond"], node.attrs["body"]
        init, captures = args[:n], args[n:]
        for i, v in enumerate(init):  # a literal operand (a gradient's count, empty stack)
            if not isinstance(v, _Val):
                src, scalar = _loop_literal(v, node.attrs["out_avals"][i])
                init[i] = _Val(self.fresh("k"), scalar, not scalar)
                lines.append(f"{indent}{init[i].name} = {src}")
        lvars = [_Val(f"{t}_{i}", v.scalar, True) for i, v in enumerate(init)]
        targets = self._reuse_targets(body_g, init)
        # a slot whose body writes its buffer in place starts from a private copy (.inplace)
        copies = self.plan.entry_copies.get(node, frozenset())
        for i, (lv, v) in enumerate(zip(lvars, init)):
            c = self._carry(v, lines, indent, i in copies)
            lines.append(f"{indent}{lv.name} = {c.name}")
            if i in targets:
                out = targets[i]
                if np.dtype(out.dtype) != np.dtype(node.args[i].dtype) or len(
                    out.aval.shape
                ) != len(node.args[i].aval.shape):
                    del targets[i]
                    continue
                empty = f"{t}_z{i}"
                shape = (0,) * len(out.aval.shape)
                self.scratch_lines.append(
                    f"    {empty} = np.empty({shape!r}, {ctor(np.dtype(out.dtype))})"
                )
                lines.append(f"{indent}{t}_sp{i} = {empty}")
                lines.append(f"{indent}{t}_own{i} = {c is not v}")
        lines.append(f"{indent}while True:")
        self._loop_depth += 1
        inner = indent + "    "
        sub = dict(env)
        for ph, v in zip(cond_g.inputs, lvars + captures):
            sub[ph] = v
        (test,) = self.emit_graph(cond_g, sub, lines, inner)
        lines.append(f"{inner}if not {test.name}:")
        lines.append(f"{inner}    break")
        sub = dict(env)
        for ph, v in zip(body_g.inputs, lvars + captures):
            sub[ph] = v
        saved = dict(self.out_bufs)
        for i, out in targets.items():
            self.out_bufs[out] = f"{t}_sp{i}"
        vals = self.emit_graph(body_g, sub, lines, inner)
        self.out_bufs = saved
        carried = [self._carry(v, lines, inner) for v in vals]
        for i in targets:
            if any(lvars[i].name in c.roots for c in carried):
                continue  # the old value lives on: the spare stays empty
            lines.append(f"{inner}{t}_sp{i} = {lvars[i].name} if {t}_own{i} else {t}_z{i}")
        if lvars:
            lines.append(
                f"{inner}{', '.join(lv.name for lv in lvars)}, = "
                f"{', '.join(c.name for c in carried)},"
            )
        for i, out in targets.items():
            new = sub[out]
            owned = (
                out in self.produced
                and carried[i] is new
                and new.roots == frozenset([new.name])
                and not any(new.name in c.roots for j, c in enumerate(carried) if j != i)
            )
            lines.append(f"{inner}{t}_own{i} = {owned}")
        self._loop_depth -= 1
        lines.append(f"{indent}{t} = ({''.join(lv.name + ', ' for lv in lvars)})")
        # After the loop a variable holds its initial value, a capture or a buffer filled
        # inside the loop (one shared name for those: conservative).
        outer = frozenset().union(*(v.roots for v in args if isinstance(v, _Val)))
        parts = [frozenset() if lv.scalar else outer | {t} for lv in lvars]
        env[node] = _Val(t, False, True, frozenset().union(*parts), parts)


#: The local names of a scalar kernel (codegen's ``s<i>`` inputs, ``o<i>`` outputs, ``t``/``c``
#: /``v``/``u`` temporaries and the ``bad`` flag): renamed when its body is inlined.
_SCALAR_LOCAL = re.compile(r"\b(bad|[stcvuo]\d+(?:_\d+)?)\b")


def _inline_scalar_body(
    text: str, inputs: list[str], outputs: dict[int, str], px: str
) -> list[str] | None:
    """The statements of scalar kernel ``text`` (``def name(s0, ...): bad = False; ...;
    return (bad, o0, ...)``) as lines of the calling function: inputs renamed to the
    caller's values, outputs to ``outputs``, temporaries and ``bad`` prefixed with ``px``.
    None when a local of the kernel is not a name this renaming knows (then it is called)."""
    tree = ast.parse(text)
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    local = {a.arg for a in fn.args.args} | {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    if any(_SCALAR_LOCAL.fullmatch(name) is None for name in local):
        return None
    lines = text.split("\n")
    start = next(k for k, line in enumerate(lines) if line.startswith("def ")) + 2
    body = lines[start:-1]  # after "bad = False", before the return

    def rename(m: re.Match) -> str:
        name = m.group(1)
        if name in local and name[0] == "s" and name[1:].isdigit():
            return inputs[int(name[1:])]
        if name in local and name[0] == "o" and name[1:].isdigit():
            return outputs[int(name[1:])]
        return px + name if name in local else name

    return [_SCALAR_LOCAL.sub(rename, line[4:]) for line in body]


def _assign_source(name: str, rank: int, src_rank: int) -> str:
    """A loop helper ``name(d, s)``: ``d[...] = s`` for ``s`` broadcast to ``d``'s shape
    (:meth:`_GraphWriter.assign`); a 0-d ``d`` takes the element of ``s``."""
    lines = ["@_kernel", f"def {name}(d, s):"]
    lead = rank - src_rank
    for k in range(src_rank):  # stride 0 along a broadcast axis of length 1
        lines.append(f"    b{k} = 0 if s.shape[{k}] == 1 and d.shape[{lead + k}] != 1 else 1")
    indent = "    "
    for a in range(rank):
        lines.append(f"{indent}for i{a} in range(d.shape[{a}]):")
        indent += "    "
    dst = ", ".join(f"i{a}" for a in range(rank)) or "()"
    src = ", ".join(f"i{lead + k} * b{k}" for k in range(src_rank)) or "()"
    lines.append(f"{indent}d[{dst}] = s[{src}]")
    return "\n".join(lines)


def _clamp(bound: int | str, n: str) -> str:
    """Source of a slice bound (a literal, or the name of a traced integer) clamped into
    ``[0, n]`` as Python's slicing does."""
    if isinstance(bound, str):
        return f"(max({n} + {bound}, 0) if {bound} < 0 else min({bound}, {n}))"
    return f"max({n} + ({bound}), 0)" if bound < 0 else f"min({bound}, {n})"


def _check_arg_reduce(node: Node) -> None:
    x = node.args[0]
    if not isinstance(x, Node) or x.aval.shape is None or np.dtype(x.dtype).kind not in "biuf":
        raise Unsupported(f"{node.op.value} of {getattr(x, 'aval', x)}")
    if set(node.attrs) - {"axis", "keepdims"}:
        raise Unsupported(f"{node.op.value} with {sorted(node.attrs)}")
    axis = node.attrs.get("axis")
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise Unsupported(f"{node.op.value} over axes {axis!r}")


#: ufunc.at's ufuncs this compiler writes (their loops are one wrapping or float operation)
_AT_UFUNCS = (np.add, np.subtract, np.multiply)


def _check_ufunc_at(node: Node) -> None:
    """``ufunc.at(a, idx, b)``: one 1-D integer index array into the first axis of a 1-D or
    2-D array, and values of ``a``'s dtype, one per index (or one for all)."""
    ufunc, index = node.attrs["ufunc"], node.attrs["index"]
    a, b = node.args[0], node.args[1]
    if ufunc not in _AT_UFUNCS:
        raise Unsupported(f"{getattr(ufunc, '__name__', ufunc)}.at")
    if (
        not isinstance(a, Node)
        or a.aval.shape is None
        or len(a.aval.shape) not in (1, 2)
        or np.dtype(a.dtype).kind not in "iuf"
    ):
        raise Unsupported(f"{ufunc.__name__}.at into {getattr(a, 'aval', a)}")
    if len(index) != 1 or not isinstance(index[0], DynamicIndex) or len(node.args) != 3:
        raise Unsupported(f"{ufunc.__name__}.at with index {index!r}")
    idx = node.args[2]
    if (
        not isinstance(idx, Node)
        or idx.aval.shape is None
        or len(idx.aval.shape) != 1
        or np.dtype(idx.dtype).kind not in "iu"
        or np.dtype(idx.dtype) == np.uint64
    ):
        raise Unsupported(f"{ufunc.__name__}.at with index {getattr(idx, 'aval', idx)}")
    if (
        not isinstance(b, Node)
        or np.dtype(b.dtype) != np.dtype(a.dtype)
        or b.aval.shape is None
        or (b.aval.shape != () and len(b.aval.shape) != len(a.aval.shape))
    ):
        raise Unsupported(
            f"{ufunc.__name__}.at of {getattr(b, 'aval', b)!s} into "
            f"{a.aval} (values of another dtype or shape)"
        )


def _check_bincount(node: Node) -> None:
    x, weights = node.args[0], node.args[1]
    minlength = node.attrs.get("minlength", 0)
    if weights is not None or set(node.attrs) - {"minlength"}:
        raise Unsupported("bincount with weights")
    if not isinstance(minlength, (int, np.integer)) or minlength < 0:
        raise Unsupported(f"bincount with minlength={minlength!r}")
    if (
        not isinstance(x, Node)
        or x.aval.shape is None
        or len(x.aval.shape) != 1
        or np.dtype(x.dtype).kind not in "biu"
        or np.dtype(x.dtype) == np.uint64
    ):
        raise Unsupported(f"bincount of {getattr(x, 'aval', x)}")


def _ufunc_at_source(name: str, op: str, rank: int, scalar: bool) -> str:
    """A helper applying ``out[idx[k]] = op(out[idx[k]], vals[k])`` for each ``k`` in order;
    returns False (nothing more written) at an index out of range."""
    v = "vals" if scalar else "vals[k]"
    lines = [
        "@_inline",
        f"def {name}(out, idx, vals):",
        "    n = out.shape[0]",
        "    for k in range(idx.shape[0]):",
        "        i = np.int64(idx[k])",
        "        if i < 0:",
        "            i += n",
        "        if i < 0 or i >= n:",
        "            return False",
    ]
    if rank == 1:
        lines.append(f"        out[i] = {op.format(a='out[i]', b=v)}")
    else:
        lines.append("        for j in range(out.shape[1]):")
        vj = "vals" if scalar else "vals[k, j]"
        lines.append(f"            out[i, j] = {op.format(a='out[i, j]', b=vj)}")
    lines.append("    return True")
    return "\n".join(lines) + "\n"


#: Elements of one row tile's intermediates (32k: 128 KB of float32 each, a few of them
#: in L2 at once)
TILE_ELEMENTS = 1 << 15
#: Fewest rows a graph needs to run in tiles
TILE_MIN_ROWS = 64


def row_tile(width: int) -> int:
    """Rows per tile for rows of ``width`` elements."""
    return max(1, TILE_ELEMENTS // max(width, 1))


def row_tiling(graph: Graph) -> set[Node] | None:
    """The inputs to slice by rows when ``graph`` computes each row of its outputs from the
    same row of those inputs alone (elementwise work, reductions along other axes and their
    results spread back over the row, indexing that keeps the first axis whole), has at
    least one such reduction, and at least :data:`TILE_MIN_ROWS` rows; else None.

    Everything else is *row-free*: it holds no row axis (lower rank, or a leading 1), so it
    broadcasts over the rows and is the same for every tile (``g`` and ``b`` of a layer
    norm). Only static shapes qualify."""
    if graph.outputs == [] or any(
        n.aval is None or isinstance(n.aval, tuple) or n.aval.shape is None or None in n.aval.shape
        for n in graph.nodes
    ):
        return None
    out0 = graph.outputs[0].aval.shape
    if len(out0) < 2 or out0[0] < TILE_MIN_ROWS:
        return None
    nrows = out0[0]
    row: dict[Node, bool] = {}
    reduces = False

    def has_rows(v: Any) -> bool:
        return isinstance(v, Node) and row[v]

    def free_fits(v: Any, rank: int) -> bool:
        """A row-free operand of a rank-``rank`` row value: broadcast over its rows."""
        if not isinstance(v, Node):
            return True
        shape = v.aval.shape
        return len(shape) < rank or shape[0] == 1

    for node in graph.nodes:
        op = node.op
        shape = node.aval.shape
        if op is OpKind.PLACEHOLDER:
            row[node] = len(shape) >= 2 and shape[0] == nrows
            continue
        if op is OpKind.CONSTANT:
            if len(shape) >= 1 and shape[0] == nrows and nrows != 1:
                return None
            row[node] = False
            continue
        args = node.args
        if not any(has_rows(a) for a in args):
            if op.group is not OpGroup.ELEMENTWISE:
                return None  # row-free work other than elementwise: not worth a per-tile rerun
            row[node] = False
            continue
        if op.group is OpGroup.ELEMENTWISE:
            rank = len(shape)
            for a in args:
                if has_rows(a):
                    if len(a.aval.shape) != rank or a.aval.shape[0] != nrows:
                        return None
                elif not free_fits(a, rank):
                    return None
        elif op in FUSIBLE_REDUCTIONS or op in (OpKind.ARGMIN, OpKind.ARGMAX):
            axis = node.attrs.get("axis")
            rank = len(args[0].aval.shape)
            axes = axis if isinstance(axis, tuple) else (axis,)
            if (
                axis is None
                or any(not isinstance(a, (int, np.integer)) or int(a) % rank == 0 for a in axes)
                or len(args) != 1
            ):
                return None
            reduces = True
        elif op is OpKind.GETITEM:
            index = node.attrs["index"]
            if (
                len(args) != 1
                or not index
                or not isinstance(index[0], slice)
                or index[0] != slice(None)
            ):
                return None  # (a traced index is an argument: len(args) > 1)
        elif op is OpKind.EXPAND_DIMS:
            if int(node.attrs["axis"]) % (len(args[0].aval.shape) + 1) == 0:
                return None
        else:
            return None
        if not shape or shape[0] != nrows:
            return None
        row[node] = True
    if not reduces or not all(
        row.get(o, False) and o.aval.shape[0] == nrows for o in graph.outputs
    ):
        return None
    return {n for n in graph.inputs if row[n]}


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
        if node.op is OpKind.COND and any(_holds(g, ops) for g in node.attrs["branches"]):
            return True
        if node.op is OpKind.WHILE and (
            _holds(node.attrs["cond"], ops) or _holds(node.attrs["body"], ops)
        ):
            return True
    return False


def _unit_rows(node: Node) -> bool:
    """Does ``x[index]`` (``node``, a getitem or setitem) keep the last axis of ``x`` as its
    own last axis, sliced with step 1 (so a unit-stride row of ``x`` stays one)?"""
    comps = node.attrs["index"]
    rank = len(node.args[0].aval.shape)
    axes = sum(1 for c in comps if c is not None and c is not Ellipsis)
    if rank == 0:
        return False
    if Ellipsis not in comps and axes < rank:
        return True  # the last axis is an implicit ``:`` after every component
    for c in reversed(comps):
        if c is None:
            return False  # a new axis (stride 0) comes last
        if c is Ellipsis:
            return axes < rank  # ``...`` spans the last axis, whole
        return isinstance(c, slice) and c.step in (None, 1)
    return False


def _is_element(node: Node, rank: int) -> bool:
    """Does ``node``'s index pick one element (an integer for every axis)?"""
    comps = [c for c in node.attrs["index"] if c is not Ellipsis]
    return len(comps) == rank and all(isinstance(c, (int, np.integer, DynamicIndex)) for c in comps)


# argmin/argmax of one non-empty row: NumPy's answer is the first NaN if there is one, else
# the first extreme (ties keep the earliest: strict comparison).
_ARG_REDUCE = """\
@_inline
def {name}1(row):
    best = row[0]
    k = 0
    if best == best:
        for j in range(1, row.shape[0]):
            v = row[j]
            if v != v:
                k = j
                break
            if v {cmp} best:
                best = v
                k = j
    return k
"""

# np.bincount(x, minlength=m) of non-negative integers (a negative one: NumPy's ValueError)
_BINCOUNT = """\
@_inline
def _bincount(x, minlength):
    top = -1
    for i in range(x.shape[0]):
        v = np.int64(x[i])
        if v < 0:
            return False, np.zeros(0, np.int64)
        if v > top:
            top = v
    out = np.zeros(max(top + 1, minlength), np.int64)
    for i in range(x.shape[0]):
        out[np.int64(x[i])] += 1
    return True, out
"""

# NumPy's float add loop called the way a reduction calls it (output = first input, both
# with stride 0): it adds the pairwise sum of the n elements, in index order (a reversed
# array too, as np.sum does), to the output, which starts from +0.0 as NumPy's does.
_SUM_LOOP = """\
@_inline
def _sum_loop(x, f, d, pp, st, dims, acc):
    acc[0] = 0
    pp[0] = acc.ctypes.data
    pp[1] = x.ctypes.data
    pp[2] = acc.ctypes.data
    st[0] = 0
    st[1] = x.strides[0]
    st[2] = 0
    dims[0] = x.shape[0]
    _call_loop(f, pp.ctypes.data, dims.ctypes.data, st.ctypes.data, d)
    return acc[0]
"""

# Four output columns at a time, accumulated in registers: the inner loop stores nothing, so
# LLVM needs no run-time alias checks between ``out`` and the operands. Measured on W2
# (100 products of 10x10 int32): 46 µs, against 60-70 µs for the i-k-j loop over rows (its
# vector loop, alias checks and 8 + 2 tail do not pay on 10-wide rows) and 57 µs for the
# hand-written Numba kernel. Products and sums wrap in the operands' own dtype, as NumPy's
# integer matmul loop does (``_wadd``/``_wmul``: Numba's ``+``/``*`` would widen to int64 and
# tell LLVM that the sums never overflow, which they may).
_MATMUL_INT = """\
@_inline
def _matmul_int(a, b, out):
    n, m, p = a.shape[0], a.shape[1], b.shape[1]
    for i in range(n):
        j = 0
        while j + 4 <= p:
            s0 = s1 = s2 = s3 = out.dtype.type(0)
            for k in range(m):
                aik = a[i, k]
                r = b[k]
                s0 = _wadd(s0, _wmul(aik, r[j]))
                s1 = _wadd(s1, _wmul(aik, r[j + 1]))
                s2 = _wadd(s2, _wmul(aik, r[j + 2]))
                s3 = _wadd(s3, _wmul(aik, r[j + 3]))
            out[i, j] = s0
            out[i, j + 1] = s1
            out[i, j + 2] = s2
            out[i, j + 3] = s3
            j += 4
        while j < p:
            s0 = out.dtype.type(0)
            for k in range(m):
                s0 = _wadd(s0, _wmul(a[i, k], b[k, j]))
            out[i, j] = s0
            j += 1
    return out
"""

_MATMUL_BOOL = """\
@_inline
def _matmul_bool(a, b, out):
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            out[i, j] = False
        for k in range(a.shape[1]):
            if a[i, k]:
                for j in range(b.shape[1]):
                    out[i, j] = out[i, j] or b[k, j]
    return out
"""

# NumPy's own matmul inner loop (a gufunc loop: outer count, then m, n, p; outer strides,
# then the core strides of a, b and out), called as np.matmul calls it on these arrays.
_MATMUL_LOOP = """\
@_inline
def _matmul_loop(a, b, out, f, d, ptrs, dims, steps):
    ptrs[0] = a.ctypes.data
    ptrs[1] = b.ctypes.data
    ptrs[2] = out.ctypes.data
    dims[0] = 1
    dims[1] = a.shape[0]
    dims[2] = a.shape[1]
    dims[3] = b.shape[1]
    steps[0] = 0
    steps[1] = 0
    steps[2] = 0
    steps[3] = a.strides[0]
    steps[4] = a.strides[1]
    steps[5] = b.strides[0]
    steps[6] = b.strides[1]
    steps[7] = out.strides[0]
    steps[8] = out.strides[1]
    if dims[1] > 0 and dims[3] > 0:
        if dims[2] == 0:
            out[:] = 0
        else:
            _call_loop(f, ptrs.ctypes.data, dims.ctypes.data, steps.ctypes.data, d)
    return out
"""

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
        sizes.append(SUM_PARALLEL_MIN)
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
        or plan_row_fusion(compiled, fast_math) is not None
    )
    handover = None if keep else whole_graph_handover(sizes)
    graph = compiled
    writer = _GraphWriter(graph, fast_math, _written_back(graph, tree))
    try:
        source = writer.write()
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
    run, run_source = _runner(graph, tree, n_params, writer, handle, fallback, handover)
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
        run, run_source, "numba-cpu", [report, *fallbacks], (time.perf_counter() - t0) * 1e3
    )


def _written_back(graph: Graph, tree: TreeNode) -> dict[int, int]:
    """Graph output index -> index of the array input whose argument the call writes that
    output back to (the ``writeback`` nodes of ``tree``)."""
    by_path = {
        n.attrs.get("path"): k for k, n in enumerate(graph.inputs) if n.aval.shape not in (None, ())
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
    writer: _GraphWriter,
    handle: KernelHandle,
    fallback: Callable[..., Any],
    handover: int | None = None,
) -> tuple[Callable, str]:
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
    lines = [f"def run({params}):"]
    ins = []
    for node in writer.param_nodes:
        expr = access_expr(node.attrs["path"], namer)
        v = f"a{len(ins)}"
        if node.aval.shape == ():
            lines.append(f"    {v} = {expr}[()]")
        else:
            lines.append(f"    {v} = {expr}")
        ins.append(v)
    args = ", ".join(ins + consts + loops)
    array_ins = [v for v, n in zip(ins, writer.param_nodes) if n.aval.shape != ()]
    contiguous = " and ".join(f"{v}.flags.c_contiguous" for v in array_ins) or "True"
    head = lines[1:]
    if handover is not None and array_ins:
        # from handover_size elements on, the faster of the two executors by measurement
        big = " or ".join(f"{v}.size >= {handover}" for v in array_ins)
        size = f"max({', '.join(v + '.size' for v in array_ins)}, 0)"
        namer.globals["_ho"] = _Handover(namer.globals, handle)
        lines.append(f"    if {big}:")
        lines.append(f"        return _ho({size}, {params})")
    body_start = len(lines)
    lines.append(f"    g = _H.graph_c if {contiguous} else _H.graph_a")
    lines.append("    if g is None:")
    writable = frozenset(j for where, j in writer.out_slots if where == "param")
    need = f"_H.need_graph(({args}{',' if args else ''}), {namer.bind(writable, '_w')})"
    lines.append(f"        {need}")
    lines.append(f"        _r = _fallback({params})")
    lines.append("        if _deferred:")
    lines.append("            _flush()")
    lines.append("        return _r")
    lines.append("    try:")
    lines.append(f"        outs = g({args})")
    lines.append("    except FloatingPointError as e:")
    lines.append("        if str(e) != _SIGNAL:")
    lines.append("            raise")
    lines.append(f"        return _fallback({params})")
    scope = Scope("v_")
    written = []
    for i, (o, (where, j)) in enumerate(zip(graph.outputs, writer.out_slots)):
        dt = namer.bind(np.dtype(o.dtype).type, "_t")
        if where == "param":  # copied into its argument by the compiled function
            lines.append(f"    {scope.var(o)} = {ins[j]}")
            written.append(i)
        elif o.aval.shape == ():
            lines.append(f"    {scope.var(o)} = {dt}(outs[{j}])")
        else:
            lines.append(f"    {scope.var(o)} = outs[{j}]")
    lines.append(f"    _r = {output_expr(tree, graph, namer, scope, frozenset(written))}")
    lines.append("    if _deferred:")
    lines.append("        _flush()")
    lines.append("    return _r")
    # request(p0, ...): ask for the compiled function for such arguments, run nothing
    # (tiering starts a loop graph's compile on its first call without a second run)
    body = lines[body_start:]
    lines += [
        "",
        f"def request({params}):",
        *head,
        f"    {need}",
        "    if _deferred:",
        "        _flush()",
    ]
    if "_ho" in namer.globals:  # the compiled path at any size (the handover's trial)
        lines += ["", f"def run_graph({params}):", *head, *body]
    source = "\n".join(lines) + "\n"
    exec(compile(source, "<kx-whole-graph>", "exec"), namer.globals)
    return namer.globals["run"], source


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
        _GraphWriter(graph).check(graph)
    except Unsupported as e:
        return str(e)
    return None


__all__ = ["SIGNAL", "compile_whole_graph", "unsupported_reason"]
