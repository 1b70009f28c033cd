"""Reinplacing: which functional ``setitem`` ops an executor may run as NumPy's in-place write.

Tracing turns every write into an out-of-place op (functionalization, ``trace/tensor.py``):
``out[i, j] = v`` becomes ``out2 = setitem(out1, v, i, j)``, a copy of the whole buffer with one
element changed. That keeps the graph pure, but a loop filling an ``n x n`` buffer element by
element would copy it ``n**2`` times. PyTorch's functionalization is followed by a
*reinplacing* pass for the same reason; this module is ours. A ``setitem`` runs in place
(``x[idx] = v; out2 = x``) when its base ``x``

* is **owned**: its buffer was made during this call by an op that allocates (another
  ``setitem``, ``copy``, ``concatenate``, ...), or it is an array argument whose new contents
  the call writes back to it anyway (``owned_inputs``: the write then lands in the caller's
  array, as eager NumPy's does, and the copy back is skipped); never another argument, a
  constant, a variable's storage or anything an opaque call or a variable write may have
  kept a reference to; and
* is **dead** afterwards: no later step of the executor reads ``x`` or anything sharing its
  memory (a view of it, a value a loop or branch passed it through, a graph output).

Loops keep their buffers: a ``while`` slot is owned in its body when every iteration hands the
next one a private buffer (the body's output for the slot is owned and shares memory with no
other output). Its buffer on entry is the operand itself when that is owned and dead after the
loop, or else one copy made on entry: one copy per loop instead of one per iteration. Branches
of a ``cond`` write in place into buffers they made themselves and into the operands that
are owned and dead after the ``cond`` except through its outputs (the table a loop fills
inside an ``if``); an output every branch returns a private buffer for is owned.

The decision needs the order in which the executor runs its steps (fusion may move a segment
after a node that comes later in program order), so it is made on the emitter's own schedule:
``steps_of(graph)`` gives, for each step, the nodes it produces and the nodes it reads.

**Variables** get the same treatment (:func:`_plan_variables`). A variable write
(``assign``/``assign_add``/``assign_sub``: an optimizer's update) replaces the variable's
buffer by a new array, so a training step allocated one array per variable per step. It runs
in place (``Variable.update_in_place``: ``np.subtract(buf, delta, out=buf)``) when every read of
that variable before it is dead by then (no later step reads the value or a view of it, no
retaining op took it, it is not returned), the delta has the variable's dtype and a shape that
broadcasts to it, and — checked at run time — the buffer was never handed to anyone outside
(``Variable.storage``, ``np.asarray(v)``, an eager read, a read the call returns mark it
exposed). Reads whose value dies inside the call use ``Variable.peek``, which does not mark
it. Reads and writes inside ``cond``/``while`` bodies are left alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import count
from typing import Any, cast

import numpy as np

from ..ir import Graph, Node, OpGroup, OpKind
from ..ir.interpreter import LOWER, build_index, tensor_array_write
from ..ir.params import CondParams, GetOutputParams, IndexParams, VariableParams, WhileParams

#: One executor step: the nodes it produces and the nodes it reads.
Step = tuple[Sequence[Node], Sequence[Node]]
StepsOf = Callable[[Graph], Sequence[Step]]

# Ops that may keep a reference to an operand after they ran (a variable's storage, a user's
# callable, a random generator's output buffer): a buffer one of them read is never reused.
_RETAINING_GROUPS = (OpGroup.STATEFUL, OpGroup.OPAQUE)


@dataclass
class InplacePlan:
    """Which ``setitem`` nodes run in place, and which loop slots are copied on entry."""

    writes: set[Node] = field(default_factory=set)
    entry_copies: dict[Node, frozenset[int]] = field(default_factory=dict)
    #: Variable reads that need not mark the buffer exposed, and variable writes that may
    #: update it in place (both lowered by :func:`write_in_place`).
    variables: set[Node] = field(default_factory=set)

    def merge(self, other: InplacePlan) -> None:
        self.writes |= other.writes
        self.entry_copies.update(other.entry_copies)
        self.variables |= other.variables


def write_in_place(node: Node) -> Callable[..., Any]:
    """The in-place lowering of a ``setitem`` node (NumPy's own ``x[idx] = value``), of a
    ``tensor_array_write`` (the row written into the stack itself), of a variable read whose
    value dies in the call and of a variable write (into the variable's buffer when it is
    still private, else as :data:`~kernel_ext.ir.interpreter.LOWER` does)."""
    if node.op is OpKind.READ_VARIABLE:
        return cast("VariableParams", node.params).variable.peek
    if node.op in _VARIABLE_WRITES:
        var, kind = cast("VariableParams", node.params).variable, _VARIABLE_WRITES[node.op]
        replace = LOWER[node.op](node)

        def write(value: Any) -> None:
            if not var.update_in_place(kind, value):
                replace(value)

        return write
    if node.op is OpKind.TENSOR_ARRAY_WRITE:
        return functools.partial(tensor_array_write, in_place=True, **node.params.kwargs())
    template = cast("IndexParams", node.params).index

    def setitem(x: np.ndarray, value: Any, *dyn: Any) -> np.ndarray:
        x[build_index(template, dyn)] = value
        return x

    return setitem


def plan_inplace(
    graph: Graph, steps_of: StepsOf, owned_inputs: frozenset[Node] = frozenset()
) -> InplacePlan:
    """The reinplacing decisions for ``graph`` and its sub-graphs, on the executor's schedule.

    ``owned_inputs``: inputs whose buffer the call may overwrite — arguments the function
    updates in place, whose new contents are written back to them at the end anyway. A write
    into one runs in the caller's array when nothing reads its old contents afterwards,
    which is what eager NumPy does (and saves the copy and the write-back)."""
    analysis = _Analysis(graph, steps_of, frozenset(owned_inputs)).run()
    _plan_variables(analysis)
    return analysis.plan


_VARIABLE_WRITES = {
    OpKind.ASSIGN_VARIABLE: "assign",
    OpKind.ASSIGN_ADD_VARIABLE: "add",
    OpKind.ASSIGN_SUB_VARIABLE: "sub",
}


def _plan_variables(an: _Analysis) -> None:
    """Add the top-level variable reads and writes that may skip the copy (module doc)."""
    nested: set[int] = set()  # variables read or written inside a branch or loop body
    for node in an.graph.nodes:
        for g in _subgraphs(node):
            nested |= _variables_in(g)
    end = len(an.steps)
    reads: dict[int, list[tuple[int, Node]]] = {}
    for k, (produced, _) in enumerate(an.steps):
        if len(produced) != 1:
            continue
        node = produced[0]
        if node.op is OpKind.READ_VARIABLE:
            var = cast("VariableParams", node.params).variable
            reads.setdefault(id(var), []).append((k, node))
            if an._dead_after(node, end - 1):
                an.plan.variables.add(node)
        elif node.op in _VARIABLE_WRITES:
            var = cast("VariableParams", node.params).variable
            value = node.args[0]
            if (
                id(var) in nested
                or not isinstance(value, Node)
                or value.shape is None  # (no value, several, or unknown rank)
            ):
                continue
            shape = tuple(value.shape)
            if (
                np.dtype(value.dtype) != var.dtype
                or len(shape) > var.ndim
                or shape != tuple(var.shape[var.ndim - len(shape) :])
            ):
                continue
            if all(an._dead_after(r, k) for _, r in reads.get(id(var), ())):
                an.plan.variables.add(node)


def _variables_in(graph: Graph) -> set[int]:
    """``id`` of every variable read or written in ``graph`` or its sub-graphs."""
    found: set[int] = set()
    for node in graph.nodes:
        if node.op is OpKind.READ_VARIABLE or node.op in _VARIABLE_WRITES:
            found.add(id(cast("VariableParams", node.params).variable))
        for g in _subgraphs(node):
            found |= _variables_in(g)
    return found


def _is_buffer(node: Any) -> bool:
    return isinstance(node, Node) and node.shape is not None and len(node.shape) >= 1


def _retains(node: Node) -> bool:
    """Does ``node`` (or anything inside its sub-graphs) possibly keep a reference to what it
    reads?"""
    if node.op.group in _RETAINING_GROUPS:
        return True
    return any(any(_retains(n) for n in g.nodes) for g in _subgraphs(node))


def _subgraphs(node: Node) -> list[Graph]:
    if node.op is OpKind.COND:
        return list(cast("CondParams", node.params).branches)
    if node.op is OpKind.WHILE:
        loop = cast("WhileParams", node.params)
        return [loop.cond, loop.body]
    return []


def _returns_private(inner: _Analysis, outs: Sequence[Node], i: int) -> bool:
    """Does the graph ``inner`` analysed return a private buffer as output ``i``: one it
    owns, that no retaining op read and that shares memory with no other output?"""
    o = outs[i]
    mine = inner.roots.get(o, frozenset())
    return bool(
        _is_buffer(o)
        and o in inner.owned
        and mine
        and not mine & inner.escaped
        and not any(inner.roots.get(p, frozenset()) & mine for q, p in enumerate(outs) if q != i)
    )


_ROOTS = count()
#: Ops that return their first operand with part of it overwritten (functionally: a copy).
_WRITES = (OpKind.SETITEM, OpKind.TENSOR_ARRAY_WRITE)


class _Analysis:
    """One pass over one graph's steps, with ``owned_params`` (loop slots) private on entry.

    Each value gets the set of *roots* (buffer identities) it may share memory with; a root's
    last read is tracked so that "dead after step k" is one comparison.
    """

    def __init__(self, graph: Graph, steps_of: StepsOf, owned_params: frozenset[Node]) -> None:
        self.graph = graph
        self.steps_of = steps_of
        self.owned_params = owned_params
        self.plan = InplacePlan()
        self.steps: list[Step] = []
        self.roots: dict[Node, frozenset[int]] = {}
        self.owned: set[Node] = set()
        self.last_read: dict[int, int] = {}  # root -> last step reading a value with it
        self.escaped: set[int] = set()  # roots a retaining op read
        self.reads: dict[Node, int] = {}  # value -> last step reading it
        self.relied: set[Node] = set()  # owned params an in-place write or loop used
        # loop -> slot -> (the roots its output shares memory with, is it owned?)
        self._slots: dict[Node, dict[int, tuple[frozenset[int], bool]]] = {}

    # -- helpers ------------------------------------------------------------------------------
    def _new_root(self) -> frozenset[int]:
        return frozenset((next(_ROOTS),))

    def _set_roots(self, node: Node, roots: frozenset[int]) -> None:
        self.roots[node] = roots
        last = self.reads.get(node, -1)
        for r in roots:
            if self.last_read.get(r, -1) < last:
                self.last_read[r] = last

    def _dead_after(self, node: Node, step: int) -> bool:
        """Is no value sharing memory with ``node`` read after ``step``, or retained?"""
        roots = self.roots.get(node, frozenset())
        return bool(roots) and all(
            self.last_read.get(r, -1) <= step and r not in self.escaped for r in roots
        )

    def _rely_on(self, node: Node) -> None:
        """Note that a decision used the ownership of the params ``node`` shares memory with."""
        roots = self.roots[node]
        self.relied |= {p for p in self.owned_params if self.roots.get(p, frozenset()) & roots}

    def _union(self, nodes: Sequence[Any]) -> frozenset[int]:
        out: frozenset[int] = frozenset()
        for a in nodes:
            if isinstance(a, Node):
                out |= self.roots.get(a, frozenset())
        return out

    # -- the pass -----------------------------------------------------------------------------
    def run(self) -> _Analysis:
        steps = self.steps = list(self.steps_of(self.graph))
        end = len(steps)
        for k, (_, reads) in enumerate(steps):
            for r in reads:
                self.reads[r] = k
        for o in self.graph.outputs:
            self.reads[o] = end
        for inp in self.graph.inputs:
            self._set_roots(inp, self._new_root())
            if inp in self.owned_params:
                self.owned.add(inp)
        for k, (produced, _reads) in enumerate(steps):
            if len(produced) == 1 and produced[0] in self.graph.inputs:
                continue
            if len(produced) != 1:  # a fused segment: elementwise work, fresh results
                for n in produced:
                    self._set_roots(n, self._new_root())
                continue
            self._node(produced[0], k)
        return self

    def _node(self, node: Node, k: int) -> None:
        op = node.op
        if _retains(node):
            for a in node.inputs:
                self.escaped |= self.roots.get(a, frozenset())
        if op in _WRITES:
            base = node.args[0]
            if isinstance(base, Node) and base in self.owned and self._dead_after(base, k):
                self.plan.writes.add(node)
                self._rely_on(base)
                self._set_roots(node, self.roots[base])
            else:
                self._set_roots(node, self._new_root())
            self.owned.add(node)
        elif op is OpKind.WHILE:
            self._while(node, k)
        elif op is OpKind.COND:
            self._cond(node, k)
        elif op is OpKind.GET_OUTPUT:
            source = node.args[0]
            per_slot = self._slots.get(source, {})
            index = cast("GetOutputParams", node.params).index
            if index in per_slot:
                roots, owned = per_slot[index]
                self._set_roots(node, roots)
                if owned:
                    self.owned.add(node)
            else:
                self._set_roots(node, self.roots.get(source, frozenset()))
        elif op.passes_through or op.may_alias:
            self._set_roots(node, self._union(node.args) | self._new_root())
        else:
            self._set_roots(node, self._new_root())
            if op.fresh and _is_buffer(node):
                self.owned.add(node)

    # -- branches -----------------------------------------------------------------------------
    def _cond(self, node: Node, k: int) -> None:
        """A ``cond``: its branches write in place into the operands that are owned, dead
        after the ``cond`` (but for what its outputs pass on) and share memory with no other
        operand — ``T[i, j] = ...`` in both branches of an ``if`` inside a loop writes the
        loop's table, as a hand-written loop does, instead of copying it per iteration. An
        output is owned when every branch returns a private buffer for it (made in the
        branch, or such an operand), so a loop carrying it keeps its buffer."""
        operands = node.args[1:]
        private = self._private_operands(operands, k)
        n_out = len(node.outputs) if node.multi_output else 0
        out_roots: list[frozenset[int]] = [frozenset()] * n_out
        out_owned = [True] * n_out
        for g in cast("CondParams", node.params).branches:
            inner = _Analysis(g, self.steps_of, frozenset(g.inputs[j] for j in private)).run()
            self.plan.merge(inner.plan)
            for j in private:
                if g.inputs[j] in inner.relied:
                    self._rely_on(operands[j])
            outer = self._outer_roots(g, inner, operands)
            outs = g.outputs
            for i, o in enumerate(outs[:n_out]):
                mine = inner.roots.get(o, frozenset())
                out_roots[i] |= self._branch_output_roots(mine, outer, inner)
                if not _returns_private(inner, outs, i):
                    out_owned[i] = False
        self._set_roots(
            node, self._union(node.args) | self._new_root() | frozenset().union(*out_roots)
        )
        self._slots[node] = {
            i: (out_roots[i] or self._new_root(), out_owned[i]) for i in range(n_out)
        }

    def _private_operands(self, operands: Sequence[Any], k: int) -> set[int]:
        """The positions of the operands a ``cond`` at step ``k`` may hand its branches to
        write in place: owned buffers, dead after it, sharing memory with no other operand."""
        private = set()
        for j, a in enumerate(operands):
            if not _is_buffer(a) or a not in self.owned or not self._dead_after(a, k):
                continue
            others = [b for i, b in enumerate(operands) if i != j]
            if any(b is a for b in others) or self._union(others) & self.roots[a]:
                continue
            private.add(j)
        return private

    def _outer_roots(
        self, g: Graph, inner: _Analysis, operands: Sequence[Any]
    ) -> dict[int, frozenset[int]]:
        """The branch's buffer identities in this graph's terms, for its placeholders': a
        placeholder's are its operand's (others get theirs in :meth:`_branch_output_roots`)."""
        outer: dict[int, frozenset[int]] = {}
        for ph, a in zip(g.inputs, operands):
            mapped = self.roots.get(a, frozenset()) if isinstance(a, Node) else frozenset()
            for r in inner.roots.get(ph, frozenset()):
                outer[r] = outer.get(r, frozenset()) | mapped
        return outer

    def _branch_output_roots(
        self, mine: frozenset[int], outer: dict[int, frozenset[int]], inner: _Analysis
    ) -> frozenset[int]:
        """What a branch output with the branch's roots ``mine`` shares memory with in this
        graph: one new root per buffer the branch made (added to ``outer``); the roots the
        branch let a retaining op read are escaped here too."""
        roots: frozenset[int] = frozenset()
        for r in mine:
            if r not in outer:
                outer[r] = self._new_root()
            roots |= outer[r]
        for r in mine & inner.escaped:
            self.escaped |= outer[r]
        return roots

    # -- loops --------------------------------------------------------------------------------
    def _while(self, node: Node, k: int) -> None:
        loop = cast("WhileParams", node.params)
        n = loop.n_vars
        cond, body = loop.cond, loop.body
        self.plan.merge(_Analysis(cond, self.steps_of, frozenset()).run().plan)
        args = node.args
        # (a slot starting as None is an empty TensorArray stack: its first write
        # allocates, so the loop owns it from the start)
        candidates = {i for i in range(n) if _is_buffer(args[i]) or args[i] is None}
        while True:
            inner = self._settle(body, candidates)
            params = body.inputs
            direct, copied = set(), set()
            for i in sorted(candidates):
                init = args[i]
                if init is None:
                    direct.add(i)
                    continue
                others = [a for j, a in enumerate(args) if j != i]
                if (
                    init in self.owned
                    and self._dead_after(init, k)
                    and not any(a is init for a in others)
                    and not (self._union(others) & self.roots[init])
                ):
                    direct.add(i)
                elif params[i] in inner.relied:
                    copied.add(i)
            dropped = candidates - direct - copied
            if not dropped:
                break
            candidates -= dropped
        self.plan.merge(inner.plan)
        for i in direct:
            if args[i] is not None:
                self._rely_on(args[i])
        if copied:
            self.plan.entry_copies[node] = frozenset(copied)
        # What the loop's outputs share memory with: an owned slot its own buffer (the
        # operand's when passed directly), any other slot everything the loop read.
        read = self._union([a for j, a in enumerate(args) if j not in direct]) | self._new_root()
        slots: dict[int, tuple[frozenset[int], bool]] = {}
        for i in range(n):
            if i in direct:
                slots[i] = (self._new_root() if args[i] is None else self.roots[args[i]], True)
            elif i in copied:
                slots[i] = (self._new_root(), True)
            else:
                slots[i] = (read, False)
        self._set_roots(node, read)
        self._slots[node] = slots

    def _settle(self, body: Graph, candidates: set[int]) -> _Analysis:
        """Analyse ``body`` with the candidate slots owned, dropping slots whose next buffer
        would not be private, until the set is stable; ``candidates`` shrinks in place."""
        while True:
            params = frozenset(body.inputs[i] for i in candidates)
            inner = _Analysis(body, self.steps_of, params).run()
            bad = set()
            outs = body.outputs
            for i in candidates:
                out = outs[i]
                mine = inner.roots.get(out, frozenset())
                if (
                    out not in inner.owned
                    or not mine
                    or mine & inner.escaped
                    or any(
                        inner.roots.get(o, frozenset()) & mine for j, o in enumerate(outs) if j != i
                    )
                ):
                    bad.add(i)
            if not bad:
                return inner
            candidates -= bad


__all__ = ["InplacePlan", "Step", "plan_inplace", "write_in_place"]
