"""``GraphWriter``: the graph walk of the whole-graph compiler — op checks, node
emission, buffers and the generated function's frame."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...ir import AbstractValue, Graph, Node, OpKind
from ...ir.params import CondParams, ConstantParams, GetOutputParams, WhileParams
from ...passes.fusion import Segment, partition, schedule
from .. import row_fusion
from ..codegen import CODEGEN_VERSION, WRAPPING_IMPORT, can_compile, kernel_form
from ..emit.literals import Unsupported, const_source, ctor
from ..emit.source import STEP, Source
from ..inplace import Step, plan_inplace
from ..row_fusion import emit_row_fusion, kernel_function
from ..static_shapes import aval_of_node, ranked_shape, static_shape
from ..whole_graph_ops import RULES, rule_for
from ..whole_graph_ops.linalg import matmul_call, plain_matmul
from . import support
from .control_flow import ControlFlow
from .indexing import BasicIndexing
from .segments import SegmentEmission
from .support import REROLL_MIN
from .tiling import row_tile, row_tiling
from .values import Value


class GraphWriter(SegmentEmission, BasicIndexing, ControlFlow):
    """Writes a graph as one Numba function (:meth:`write`); checks first (:meth:`check`)."""

    # -- support check ----------------------------------------------------------------------
    def check(self, graph: Graph) -> None:
        """Raise Unsupported naming the first op this compiler cannot handle exactly."""
        if graph is self.graph and graph.count_ops() > support.MAX_OPS:
            # One Numba function of thousands of ops (a loop AutoGraph unrolled, each
            # iteration a write) takes LLVM minutes and gigabytes; the fused executor runs
            # such a graph without a compile of that size.
            raise Unsupported(f"a graph of {graph.count_ops()} ops (more than {support.MAX_OPS})")
        for node in graph.nodes:
            self._check_node(node)
            if isinstance(node.aval, AbstractValue) and node.aval.shape is None:
                raise Unsupported(f"unknown rank ({node.name})")
        for inp in graph.inputs:
            if aval_of_node(inp).shape is None:
                raise Unsupported(f"input '{inp.name}' of unknown rank")

    def _check_node(self, node: Node) -> None:
        """Raise Unsupported unless ``node`` has a form: its op's rule
        (:mod:`.whole_graph_ops`), the writer's own (graph structure, control flow, basic
        indexing) or a kernel op of a fused segment."""
        rule = rule_for(node)
        if rule is not None:
            rule.check(node)
            return
        own = _WRITER_CHECKS.get(node.op)
        if own is not None:
            own(self, node)
        elif not can_compile(node, "cpu", fast_math=self.fast_math):
            raise Unsupported(f"op '{node.op.value}' ({node.name})")

    def _check_cond(self, node: Node) -> None:
        for g in cast("CondParams", node.params).branches:
            self.check(g)

    def _check_while(self, node: Node) -> None:
        loop = cast("WhileParams", node.params)
        self.check(loop.cond)
        self.check(loop.body)

    # -- emission -----------------------------------------------------------------------------
    def write(self) -> str:
        self.check(self.graph)
        # An argument the call writes back enters as a buffer the function owns, made once
        # here: every write into it then runs in place (one outside any loop, or one in a
        # branch that may pass the argument on, would copy the whole array each time). That
        # buffer is a private copy, written into the argument at the end (:meth:`_returned`)
        # so that the fallback still finds the caller's arrays untouched; or, where nothing
        # can signal (``args_in_place``), the caller's array itself when it is C-contiguous,
        # as eager NumPy writes it (no copy in, none out).
        updated = frozenset(self.graph.inputs[k] for k in set(self.written_back.values()))
        self.plan = plan_inplace(self.graph, self._steps, updated)
        env: dict[Node, Value] = {}
        body = Source(indent=STEP)
        self._check_shapes(body)
        for node in self.graph.inputs:
            name = f"p{len(self.params)}"
            self.params.append(name)
            self.param_nodes.append(node)
            env[node] = Value(name, aval_of_node(node).shape == (), False)
            if node in updated:
                own = self.fresh("w")
                copy = "" if self.args_in_place else ".copy()"
                body.line(f"{own} = np.ascontiguousarray({name}){copy}")
                env[node] = Value(own, False, True)
        fused = row_fusion.plan_row_fusion(self.graph, self.fast_math)
        tiling = None if fused is not None else row_tiling(self.graph)
        if fused is not None:  # one loop over rows (row_fusion.py)
            names = {n: (v.name, v.scalar) for n, v in env.items()}
            outs = [
                Value(t, scalar, True)
                for t, scalar in emit_row_fusion(fused, self.graph, self, names, body)
            ]
        elif tiling is None:
            outs = self.emit_graph(self.graph, env, body)
        else:
            outs = self._emit_tiled(tiling, env, body)
        # NumPy loop addresses arrive in one uintp array: one argument for Numba's dispatcher
        # to type instead of two per loop (each costs it ~50 ns per call).
        loops = ["la"] if self.loop_args else []
        returned = self._returned(outs, body)
        lines = self._used_preamble(body.lines + [", ".join(returned)]) + body.lines
        lines = self._drop_unused_constants(lines + [", ".join(returned)])
        returned_text = lines.pop()
        consts = [f"c{i}" for i in range(len(self.constants))]
        # One value returned as itself, not in a 1-tuple: Numba boxes one object fewer and
        # the runner indexes nothing (a row-split function returns its tuple, .parallel).
        self.returns_one = fused is None and len(returned) == 1
        func = kernel_function(
            f"graph({', '.join(self.params + consts + loops)})",
            len(self.loop_args),
            lines,
            (
                f"return {returned_text}"
                if self.returns_one
                else "return (" + returned_text + (", " if returned_text else "") + ")"
            ),
        )
        header = "\n".join(
            [
                f"# kernel_ext whole-graph function (codegen v{CODEGEN_VERSION})",
                "# inputs: "
                + ", ".join(
                    f"{aval_of_node(n).dtype.name}/{len(ranked_shape(n))}"
                    for n in self.graph.inputs
                ),
                "import math",
                "import numpy as np",
                "from kernel_ext.backends.numba_decorators import inline as _inline, "
                "kernel as _kernel, call_loop as _call_loop",
                WRAPPING_IMPORT.format(module="numba_decorators"),
            ]
        )
        parts = [header] + list(self.helpers.values()) + self.module_parts + ["\n".join(func.lines)]
        return "\n\n".join(parts) + "\n"

    def _check_shapes(self, body: Source) -> None:
        """Test each array input's static shape first (:attr:`shapes_checked`): a call with
        another shape reaches the fallback signal before anything is computed or written
        (the runner's calls never do: they are keyed by shape; a direct entry's calls may,
        and test only the arguments' class then, which costs Python ~40 ns an argument).
        The test also tells LLVM every input's extent: syrk, syr2k and trmm at 48 rows ran
        1.6-2x faster with it (constant strides: their inner loops vectorise). The price:
        the source names the sizes, so traces of other sizes no longer share a kernel whose
        source did not (a ``while`` over array ops; graphs with no control flow share one
        size-erased function from the second size on, :mod:`..sharing`, which has none)."""
        tests = []
        for k, node in enumerate(self.graph.inputs):
            shape = aval_of_node(node).shape
            if shape is None or None in shape:
                return  # (sizes erased: the function serves several)
            tests += [f"p{k}.shape[{d}] != {n}" for d, n in enumerate(shape)]
        if tests:
            # (not counted in ``signals``: nothing is written before it)
            with body.block(f"if {' or '.join(tests)}:") as other:
                other.line(f"raise FloatingPointError('{support.SIGNAL}')")
        self.shapes_checked = True

    def _used_preamble(self, lines: list[str]) -> list[str]:
        """The preamble without the filled constants that nothing in ``lines`` (the body
        and what it returns) reads: each of their uses was a private copy, made by filling
        a new array."""
        text = "\n".join(self.preamble.lines + lines)
        unused = {
            line
            for name, line in self.filled_lines.items()
            if re.search(rf"\b{name}\b", text.replace(line, "")) is None
        }
        return [line for line in self.preamble.lines if line.strip() not in unused]

    def _drop_unused_constants(self, lines: list[str]) -> list[str]:
        """``lines`` (the function's) without the constant arrays they do not read (each
        use of one of one value was a private copy, made by filling a new array): those
        are no arguments then (one fewer for the dispatcher to unbox); the others are
        numbered again in order."""
        text = "\n".join(lines)
        used = [k for k in range(len(self.constants)) if re.search(rf"\bc{k}\b", text)]
        if len(used) == len(self.constants):
            return lines
        number = {old: new for new, old in enumerate(used)}
        n_old = len(self.constants)
        self.constants = [self.constants[k] for k in used]

        def renamed(m: re.Match[str]) -> str:
            k = int(m.group(1))
            if k >= n_old:  # pragma: no cover - every c<k> of the function is a constant
                raise AssertionError(f"c{k} is no constant argument of the function")
            return f"c{number[k]}"

        return [re.sub(r"\bc(\d+)\b", renamed, line) for line in lines]

    def _returned(self, outs: list[Value], body: Source) -> list[str]:
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
                same = (
                    aval_of_node(node).shape == aval_of_node(target).shape
                    and node.dtype == target.dtype
                )
                if self.args_in_place and same and copied.get(v.name, p) == p:
                    # (any value may share the argument's memory here: the helper tells)
                    if v.name not in copied:
                        body.line(self._store_back(p, v.name, len(ranked_shape(target))))
                        copied[v.name] = p
                    self.out_slots.append(("param", k))
                    continue
                if v.name == p or (same and p not in v.roots and copied.get(v.name, p) == p):
                    if v.name != p and v.name not in copied:  # (p is typed writable)
                        rank = len(ranked_shape(target))
                        body.line(self.assign(p, v.name, rank, rank))
                        copied[v.name] = p
                    self.out_slots.append(("param", k))
                    continue
            if v.name not in names:
                names.append(v.name)
            if v.fresh and not v.scalar:
                self.fresh_returns.add(names.index(v.name))
            self.out_slots.append(("ret", names.index(v.name)))
        return names

    def _store_back(self, param: str, value: str, rank: int) -> str:
        """The statement giving argument ``param`` the contents of ``value`` (its shape and
        dtype), written in place (``args_in_place``): nothing where ``value`` is the
        argument's own memory, laid out as it is (the writes landed there); through a copy
        where ``value`` is another view of that memory (as ``np.copyto`` buffers an
        overlapping copy); else a plain copy."""
        name = f"_store_back{rank}"
        if name not in self.helpers:
            assign = self.assign("d", "s", rank, rank).split("(")[0]
            self.helpers.setdefault("_extent", EXTENT_SOURCE)
            self.helpers[name] = _store_back_source(name, rank, assign)
        return f"{name}({param}, {value})"

    def _emit_tiled(self, rows: set[Node], env: dict[Node, Value], out: Source) -> list[Value]:
        """The graph run on tiles of :func:`row_tile` rows at a time (:func:`row_tiling`):
        every intermediate of a tile stays in cache, where computing each on the whole array
        streams it through memory once per op or reduction. Each tile's results are copied
        into the outputs, allocated once."""
        first = next(n for n in self.graph.inputs if n in rows)
        n = self.fresh("nrows")
        out.line(f"{n} = {env[first].name}.shape[0]")
        width = int(np.prod(static_shape(first)[1:]))
        tile = row_tile(width)
        outs: list[Value] = []
        for o in self.graph.outputs:
            t = self.fresh("o")
            rest = "".join(f"{d}, " for d in static_shape(o)[1:])
            out.line(f"{t} = np.empty(({n}, {rest}), {ctor(np.dtype(o.dtype))})")
            outs.append(Value(t, False, True))
        with out.block(f"for r0 in range(0, {n}, {tile}):") as body:
            body.line(f"r1 = min(r0 + {tile}, {n})")
            sub = dict(env)
            for node in rows:
                v = self.fresh("tile")
                body.line(f"{v} = {env[node].name}[r0:r1]")
                sub[node] = Value(v, False, False, env[node].roots, unit=env[node].unit)
            # a segment computing an output writes its tile of the output directly
            for o, result in zip(self.graph.outputs, outs):
                if o not in self.tile_outputs and self.graph.outputs.count(o) == 1:
                    self.tile_outputs[o] = result
            vals = self.emit_graph(self.graph, sub, body)
            for result, val in zip(outs, vals):
                if val.name != f"{result.name}_tile":
                    body.line(f"{result.name}[r0:r1] = {val.name}")
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

    def emit_graph(self, graph: Graph, env: dict[Node, Value], out: Source) -> list[Value]:
        items = self._items(graph)
        chains = self._matmul_chains(graph, items)
        i = 0
        while i < len(items):
            item = items[i]
            if isinstance(item, Segment):
                nxt = items[i + 1] if i + 1 < len(items) else None
                self.emit_segment(item, env, out, self._direct_target(graph, item, nxt, env))
            elif i in chains:
                chain = chains[i]
                self._emit_matmul_chain(chain, env, out)
                i += len(chain)
                continue
            elif item not in self.hoisted:  # (written before its loop: _invariant_reads)
                self.emit_node(item, env, out, self._covering_check(graph, item, env))
            i += 1
        return [env[o] for o in graph.outputs]

    def _covering_check(self, graph: Graph, node: Node, env: dict[Node, Value]) -> Value | None:
        """For a check of ``isnan(x)`` or ``isinf(x)``: the condition of another check of
        ``graph`` on ``x``'s range (``int(x)``'s three checks), when it is computed already.

        That condition holds whenever the check's own does, and every check signals the same
        way (the fused executor reruns the call and raises the right error), so testing it
        here instead signals on the same calls, and the checks test one value: LLVM keeps the
        first test only (``histogram``'s loop ran 1.2x faster)."""
        if node.op is not OpKind.CHECK:
            return None
        covering = self._range_checks.get(id(graph))
        if covering is None:
            covering = self._range_checks[id(graph)] = range_checks(graph)
        pred = node.args[0]
        if not isinstance(pred, Node) or pred.op not in (OpKind.ISNAN, OpKind.ISINF):
            return None
        wider = covering.get(pred.args[0])
        return env.get(wider) if isinstance(wider, Node) else None

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
                or not plain_matmul(head)
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

    def _emit_matmul_chain(self, chain: list[Node], env: dict[Node, Value], out: Source) -> None:
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
        out.line(f"{t} = np.ascontiguousarray({start.name}).copy()")
        u = self.fresh("u")
        out.line(f"{u} = np.empty((0, 0), {dt})")
        a, b = (fixed.name, t) if pos == 1 else (t, fixed.name)
        with out.block(f"for _ in range({len(chain)}):") as body:
            self.signal(body, f"{a}.shape[1] != {b}.shape[0]")
            o = self.fresh()
            same = f"{u}.shape[0] == {a}.shape[0] and {u}.shape[1] == {b}.shape[1]"
            with body.block(f"if {same}:") as reuse:
                reuse.line(f"{o} = {u}")
            with body.block("else:") as allocate:
                allocate.line(f"{o} = np.empty(({a}.shape[0], {b}.shape[1]), {dt})")
            body.line(matmul_call(self, head, a, b, o))
            body.line(f"{u} = {t}")
            body.line(f"{t} = {o}")
        env[chain[-1]] = Value(t, False, True)

    def _call_kernel(self, out: Source, px: str, call: str, reduces: bool) -> None:
        """Call a segment kernel; it returns its NumPy-only-case flag (and the accumulator)."""
        target = f"{px}bad, {px}acc" if reduces else f"{px}bad"
        out.line(f"{target} = {call}")
        self.signal(out, f"{px}bad")

    # -- fused segments ---------------------------------------------------------------------

    def emit_node(
        self, node: Node, env: dict[Node, Value], out: Source, cond: Value | None = None
    ) -> None:
        """Append the source computing ``node`` (not a segment's) and bind its value in
        ``env``: through its op's rule, or the writer's own form (:meth:`_check_node`).
        ``cond``: a check's condition to test instead of its own (:meth:`_covering_check`)."""
        op = node.op
        if op is OpKind.PLACEHOLDER:
            return
        if op is OpKind.CONSTANT:
            self._emit_constant(node, env)
            return
        args = [env[a] if isinstance(a, Node) else a for a in node.args]
        if cond is not None:
            args[0] = cond
        t = self.fresh()
        rule = rule_for(node)
        if rule is None:
            _WRITER_EMITS[op](self, node, args, t, env, out)
            return
        kind = rule.emit(self, node, args, t, out)
        view = kind in ("view", "unit_view")
        env[node] = Value(
            t,
            kind == "scalar",
            kind == "fresh",
            args[0].roots if view else None,
            unit=True if kind == "unit_view" else None,
        )

    def _emit_constant(self, node: Node, env: dict[Node, Value]) -> None:
        value = np.asarray(cast("ConstantParams", node.params).value)
        if value.ndim == 0 and value.dtype.kind in "biuf":
            # a literal in the source, not one more argument for the dispatcher to type at
            # every call (~50 ns each)
            t = self.fresh("k")
            self.preamble.line(f"{t} = {const_source(value[()], value.dtype)}")
            env[node] = Value(t, True, False)
            return
        fill = _fill_source(value)
        if fill is not None and value.size <= FILLED_MAX:
            # filled in the source: a few elements cost less to fill at every call than one
            # more array argument costs the dispatcher to unbox (~0.15 µs: gemver's x and w);
            # left out if every use is a private copy, made by ``fill`` itself (write)
            t = f"cf{self.filled_constants}"
            self.filled_constants += 1
            self.filled_lines[t] = f"{t} = {fill}"
            self.preamble.line(self.filled_lines[t])
            env[node] = Value(t, False, False, fill=fill)
            return
        name = f"c{len(self.constants)}"
        self.constants.append(value[()] if value.ndim == 0 else value)
        env[node] = Value(name, value.ndim == 0, False, fill=fill)

    def _emit_get_output(
        self,
        node: Node,
        args: list[Any],
        t: str,
        env: dict[Node, Value],
        out: Source,
    ) -> None:
        src = args[0]
        scalar = _is_scalar(node)
        index = cast("GetOutputParams", node.params).index
        out.line(f"{t} = {src.name}[{index}]")
        part = src.parts[index] if src.parts is not None else src.roots
        env[node] = Value(t, scalar, True, None if scalar else part)

    def _emit_dim(
        self,
        node: Node,
        args: list[Any],
        t: str,
        env: dict[Node, Value],
        out: Source,
    ) -> None:
        out.line(f"{t} = np.int64({args[0].name}.shape[{node.params.axis}])")
        env[node] = Value(t, True, False)


#: comparison op -> does ``op(x, c)`` bound ``x`` from above (else from below)
_BOUNDS = {
    OpKind.LESS: True,
    OpKind.LESS_EQUAL: True,
    OpKind.GREATER: False,
    OpKind.GREATER_EQUAL: False,
}


def _finite(c: Any) -> bool:
    """Is ``c`` a finite real number (a literal operand or a 0-d constant)?"""
    if isinstance(c, Node):
        if c.op is not OpKind.CONSTANT:
            return False
        c = np.asarray(cast("ConstantParams", c.params).value)
        if c.ndim != 0:
            return False
        c = c[()]
    return isinstance(c, (int, float, np.integer, np.floating)) and bool(np.isfinite(c))


def _bound(test: Any) -> tuple[Node, bool] | None:
    """``(x, from_above)`` when ``test`` compares a value ``x`` with a finite number."""
    if not isinstance(test, Node) or test.op not in _BOUNDS or len(test.args) != 2:
        return None
    a, b = test.args
    if isinstance(a, Node) and _finite(b) and not _finite(a):
        return a, _BOUNDS[test.op]
    if isinstance(b, Node) and _finite(a) and not _finite(b):
        return b, not _BOUNDS[test.op]
    return None


def range_checks(graph: Graph) -> dict[Node, Node]:
    """Value ``x`` -> the condition of a check of ``graph`` that holds whenever ``x`` is NaN
    or infinite: ``not (x < hi and x >= lo)`` with finite bounds (the range check of
    ``int(x)``; a NaN fails both comparisons, an infinity one of them)."""
    found: dict[Node, Node] = {}
    for node in graph.nodes:
        pred = node.args[0] if node.op is OpKind.CHECK and node.args else None
        if not isinstance(pred, Node) or pred.op is not OpKind.LOGICAL_NOT:
            continue
        both = pred.args[0]
        if not isinstance(both, Node) or both.op is not OpKind.LOGICAL_AND:
            continue
        bounds = [b for b in map(_bound, both.args) if b is not None]
        if len(bounds) == 2 == len(both.args):
            (x, above), (y, other) = bounds
            if x is y and above != other:
                found.setdefault(x, pred)
    return found


def _store_back_source(name: str, rank: int, assign: str) -> str:
    """The helper ``name(d, s)`` of :meth:`GraphWriter._store_back` for arrays of ``rank``
    axes; ``assign``: the loop helper copying ``s`` into ``d``."""
    out = Source()
    out.line("@_kernel")
    with out.block(f"def {name}(d, s):") as body:
        with body.block("if s.ctypes.data == d.ctypes.data and s.strides == d.strides:") as same:
            same.line("return")
        with body.block("if s.size == 0:") as empty:
            empty.line("return")
        body.line("s_lo, s_hi = _extent(s)")
        body.line("d_lo, d_hi = _extent(d)")
        with body.block("if s_lo < d_hi and d_lo < s_hi:") as overlap:
            overlap.line(f"{assign}(d, s.copy())")
        with body.block("else:") as apart:
            apart.line(f"{assign}(d, s)")
    return "\n".join(out.lines)


#: The byte range ``[lo, hi)`` an array spans (signed: a negative stride's span is below
#: its first element), for :func:`_store_back_source`.
EXTENT_SOURCE = """\
@_kernel
def _extent(a):
    lo = np.int64(a.ctypes.data)
    hi = lo + a.itemsize
    for k in range(a.ndim):
        span = (a.shape[k] - 1) * a.strides[k]
        if span < 0:
            lo += span
        else:
            hi += span
    return lo, hi"""


#: the most elements of a constant array the function fills itself (:func:`_fill_source`)
FILLED_MAX = 256


def _fill_source(value: np.ndarray) -> str | None:
    """The source of a new array equal to ``value`` bit for bit when it is an array of
    numbers all of the same bits (``np.zeros(n)``, ``np.full(shape, -0.0)``), else None."""
    if value.ndim == 0 or value.size == 0:
        return None
    if value.dtype.kind not in "biuf" or not value.dtype.isnative:
        return None
    flat = np.ascontiguousarray(value).reshape(-1)
    first = flat[0]
    if flat.tobytes() != np.full(flat.shape, first, value.dtype).tobytes():
        return None
    dt = ctor(value.dtype)
    if not first.tobytes().strip(b"\0"):
        return f"np.zeros({value.shape!r}, {dt})"
    return f"np.full({value.shape!r}, {const_source(first, value.dtype)}, {dt})"


def _is_scalar(node: Node) -> bool:
    return node.shape == ()


def _no_check(writer: GraphWriter, node: Node) -> None:
    """Graph structure: values passed through or read, nothing to check."""


#: The checks of the ops the writer emits itself (:meth:`GraphWriter._check_node`).
_WRITER_CHECKS: dict[OpKind, Callable[[GraphWriter, Node], None]] = {
    OpKind.PLACEHOLDER: _no_check,
    OpKind.CONSTANT: _no_check,
    OpKind.GET_OUTPUT: _no_check,
    OpKind.DIM: _no_check,
    OpKind.COND: GraphWriter._check_cond,
    OpKind.WHILE: GraphWriter._check_while,
    OpKind.GETITEM: GraphWriter._check_getitem,
    OpKind.SETITEM: GraphWriter._check_setitem,
}

#: How the writer emits those ops (placeholders and constants aside: they bind no fresh name).
_WRITER_EMITS: dict[
    OpKind, Callable[[GraphWriter, Node, list[Any], str, dict[Node, Value], Source], None]
] = {
    OpKind.GET_OUTPUT: GraphWriter._emit_get_output,
    OpKind.DIM: GraphWriter._emit_dim,
    OpKind.COND: GraphWriter._emit_cond,
    OpKind.WHILE: GraphWriter._emit_while,
    OpKind.GETITEM: GraphWriter._emit_getitem,
    OpKind.SETITEM: GraphWriter._emit_setitem,
}

#: The ops the writer emits itself: graph structure (values passed through or read), control
#: flow, and basic indexing (views, and writes into the buffers it plans). Every other op has
#: a rule in :mod:`..whole_graph_ops` or is a kernel op of a fused segment.
WRITER_OPS = frozenset(_WRITER_CHECKS)


def compiles(op: OpKind) -> bool:
    """Does the whole-graph compiler have a form for ``op`` (for some operands)? The op-level
    half of :meth:`GraphWriter.check`, which then decides per node (ranks, dtypes, axes);
    ``tools/op_coverage.py`` prints it, with :data:`.support.FALLBACK_REASONS` for the others."""
    return op in WRITER_OPS or op in RULES or kernel_form(op, "cpu")
