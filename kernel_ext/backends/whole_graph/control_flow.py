"""``cond`` and ``while`` in the whole-graph function: carried values, branch
outputs and the buffers a loop reuses between iterations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ...ir import Graph, Node, OpKind
from ...ir.abstract import DynamicIndex
from ...ir.params import CondParams, IndexParams, WhileParams
from ..codegen import can_compile
from ..emit.literals import ctor
from ..emit.source import STEP, Source
from ..static_shapes import aval_of_node, ranked_shape
from ..whole_graph_ops import loop_literal as _loop_literal
from .base import WriterBase
from .indexing import in_range
from .values import Value


class ControlFlow(WriterBase):
    """The control-flow half of :class:`.writer.GraphWriter`."""

    if TYPE_CHECKING:  # the writer's, which emits the branches and loop bodies

        def emit_graph(self, graph: Graph, env: dict[Node, Value], out: Source) -> list[Value]: ...

        def emit_node(
            self, node: Node, env: dict[Node, Value], out: Source, cond: Value | None = None
        ) -> None: ...

    def _carry(self, v: Value, out: Source, copy: bool = False) -> Value:
        """A value that may be carried through a loop or out of a branch: one Numba type on
        every path (fresh C-contiguous arrays; scalars as they are). ``copy``: a private
        copy even of a fresh array (a loop slot its body writes in place)."""
        if v.scalar or (v.fresh and not copy):
            return v
        t = self.fresh("k")
        if v.fill is not None:
            out.line(f"{t} = {v.fill}")
        else:
            out.line(f"{t} = np.ascontiguousarray({v.name}).copy()")
        return Value(t, False, True)

    def _emit_cond(
        self,
        node: Node,
        args: list[Any],
        t: str,
        env: dict[Node, Value],
        out: Source,
    ) -> None:
        pred, operands = args[0], args[1:]
        # (a cond's aval is the tuple of its outputs')
        outs = [f"{t}_{i}" for i in range(len(cast("tuple", node.aval)))]
        parts: list[frozenset[str]] = [frozenset()] * len(outs)
        branches = cast("CondParams", node.params).branches
        for head, graph in zip((f"if {pred.name}:", "else:"), branches):
            sub = dict(env)
            for ph, v in zip(graph.inputs, operands):
                sub[ph] = v
            with out.block(head) as branch:
                vals = [self._carry(v, branch) for v in self.emit_graph(graph, sub, branch)]
                parts = [p | v.roots for p, v in zip(parts, vals)]
                if outs:
                    branch.line(f"{', '.join(outs)}, = {', '.join(v.name for v in vals)},")
                else:
                    branch.line("pass")
        out.line(f"{t} = ({''.join(o + ', ' for o in outs)})")
        env[node] = Value(t, False, True, frozenset().union(*parts), parts)

    def _reuse_targets(self, body: Graph, init: list[Value]) -> dict[int, Node]:
        """Loop variables whose next value a matmul or a fused segment of the body computes
        (one node per variable, the same dtype and rank as the variable): candidates for
        writing into a dead buffer of that variable (:meth:`_emit_while`)."""
        targets: dict[int, Node] = {}
        for i, (out, v) in enumerate(zip(body.outputs, init)):
            if (
                v.scalar
                or out.op in (OpKind.PLACEHOLDER, OpKind.CONSTANT)
                or body.outputs.count(out) != 1
                or aval_of_node(out).shape == ()
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
        env: dict[Node, Value],
        out: Source,
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
        loop = cast("WhileParams", node.params)
        n = loop.n_vars
        cond_g, body_g = loop.cond, loop.body
        init, captures = args[:n], args[n:]
        for i, v in enumerate(init):  # a literal operand (a gradient's count, empty stack)
            if not isinstance(v, Value):
                src, scalar = _loop_literal(v, loop.out_avals[i])
                init[i] = Value(self.fresh("k"), scalar, not scalar)
                out.line(f"{init[i].name} = {src}")
        lvars = [Value(f"{t}_{i}", v.scalar, True) for i, v in enumerate(init)]
        targets = self._reuse_targets(body_g, init)
        owned_on_entry = self._enter_loop(node, lvars, init, targets, out)
        self._loop_depth += 1
        # The body is written apart and placed after the spares' set-up: only the spares its
        # producers took are set up (a body that writes its variable in place takes none, and
        # an unused empty buffer would still be allocated and freed at every call).
        inner = Source(indent=out.indent + STEP)
        sub = dict(env)
        for ph, v in zip(cond_g.inputs, lvars + captures):
            sub[ph] = v
        (test,) = self.emit_graph(cond_g, sub, inner)
        with inner.block(f"if not {test.name}:") as done:
            done.line("break")
        sub = dict(env)
        for ph, v in zip(body_g.inputs, lvars + captures):
            sub[ph] = v
        for read in self._invariant_reads(body_g, n):
            self.emit_node(read, sub, out)  # (before the loop: see the method)
            self.hoisted.add(read)
        saved = dict(self.out_bufs)
        for i, target in targets.items():
            self.out_bufs[target] = f"{t}_sp{i}"
        vals = self.emit_graph(body_g, sub, inner)
        self.out_bufs = saved
        targets = {i: n for i, n in targets.items() if f"{t}_sp{i}" in self.spares_taken}
        for i, target in targets.items():
            empty = f"{t}_z{i}"
            shape = (0,) * len(ranked_shape(target))
            self.preamble.line(f"{empty} = np.empty({shape!r}, {ctor(np.dtype(target.dtype))})")
            out.line(f"{t}_sp{i} = {empty}")
            out.line(f"{t}_own{i} = {owned_on_entry[i]}")
        out.line("while True:")
        out.lines.extend(inner.lines)
        news = [sub[target] for target in targets.values()]
        self._next_iteration(t, lvars, news, vals, targets, out.nested())
        self._loop_depth -= 1
        out.line(f"{t} = ({''.join(lv.name + ', ' for lv in lvars)})")
        # After the loop a variable holds its initial value, a capture or a buffer filled
        # inside the loop (one shared name for those: conservative).
        outer = frozenset().union(*(v.roots for v in args if isinstance(v, Value)))
        parts = [frozenset() if lv.scalar else outer | {t} for lv in lvars]
        env[node] = Value(t, False, True, frozenset().union(*parts), parts)

    def _invariant_reads(self, body: Graph, n_vars: int) -> list[Node]:
        """The nodes of a loop's ``body`` that read one element of an array the loop does
        not change, at an index it does not change, in range by the static shape: they are
        read once, before the loop, rather than at every iteration.

        LLVM would hoist such a load itself, but not past a store it cannot prove to write
        other memory, and every array looks alike to it: ``knapsack``'s ``weights[i]``,
        read at each step of a loop that writes ``best[c]``, was loaded 192 times a row. In
        the graph the array is a capture, a value no iteration changes, whatever memory the
        loop writes. An index in range cannot fail, so a read made when the loop then runs
        no iteration has no effect."""
        captured = set(body.inputs[n_vars:])
        reads = []
        for node in body.nodes:
            if (
                node.op is OpKind.GETITEM
                and aval_of_node(node).shape == ()
                and all(a in captured for a in node.inputs)
                and self._index_in_range(node)
            ):
                reads.append(node)
        return reads

    def _index_in_range(self, node: Node) -> bool:
        """Is every integer of ``node``'s index (a GETITEM of one element) in range of its
        array's static shape, so that the read needs no check (:meth:`_integer_index`)?"""
        shape = node.args[0].aval.shape
        comps = cast("IndexParams", node.params).index
        if shape is None or None in shape or len(comps) != len(shape):
            return False
        for c, dim in zip(comps, shape):
            if isinstance(c, DynamicIndex):
                known = self.ranges.get(node.args[c.position])
            elif isinstance(c, (int, np.integer)) and not isinstance(c, bool):
                known = (int(c), int(c))
            else:
                return False
            if not in_range(known, dim):
                return False
        return True

    def _enter_loop(
        self,
        node: Node,
        lvars: list[Value],
        init: list[Value],
        targets: dict[int, Node],
        out: Source,
    ) -> dict[int, bool]:
        """Bind the loop variables to their initial values; drop the reuse targets whose
        dtype or rank differs from their variable's. Per remaining target: does the loop own
        the buffer it starts from (a copy made here)?"""
        # a slot whose body writes its buffer in place starts from a private copy (.inplace)
        copies = self.plan.entry_copies.get(node, frozenset())
        owned: dict[int, bool] = {}
        for i, (lv, v) in enumerate(zip(lvars, init)):
            c = self._carry(v, out, i in copies)
            out.line(f"{lv.name} = {c.name}")
            if i not in targets:
                continue
            target = targets[i]
            if np.dtype(target.dtype) != np.dtype(node.args[i].dtype) or len(
                ranked_shape(target)
            ) != len(ranked_shape(node.args[i])):
                del targets[i]
                continue
            owned[i] = c is not v
        return owned

    def _next_iteration(
        self,
        t: str,
        lvars: list[Value],
        news: list[Value],
        vals: list[Value],
        targets: dict[int, Node],
        out: Source,
    ) -> None:
        """The end of a loop's body (after it, ``out``): the variables take their next
        values (``vals``); each spare takes its variable's old buffer when nothing can read
        it any more, and ``own`` records whether the loop owns the new one (``news``: the
        values the targets computed)."""
        carried = [self._carry(v, out) for v in vals]
        for i in targets:
            if any(lvars[i].name in c.roots for c in carried):
                continue  # the old value lives on: the spare stays empty
            out.line(f"{t}_sp{i} = {lvars[i].name} if {t}_own{i} else {t}_z{i}")
        if lvars:
            out.line(
                f"{', '.join(lv.name for lv in lvars)}, = {', '.join(c.name for c in carried)},"
            )
        for (i, target), new in zip(targets.items(), news):
            owned = (
                target in self.produced
                and carried[i] is new
                and new.roots == frozenset([new.name])
                and not any(new.name in c.roots for j, c in enumerate(carried) if j != i)
            )
            out.line(f"{t}_own{i} = {owned}")
