"""Gradients through graph ``while`` loops: stack each iteration's state, then run backwards.

TensorFlow's approach (``tf.while_loop`` under a ``GradientTape``), on this IR:

1. **The forward loop stacks its state.** The first time a gradient reaches a ``while`` node,
   the node is rewritten in place (:func:`stacking_loop`): its body gains an iteration counter
   and one stack per loop variable, written with ``tensor_array_write`` (``kx.TensorArray``'s
   op) at the counter, *before* the iteration runs. The node keeps its first outputs, so every
   reader of the loop's results is unchanged, and the stacks cost one buffer per variable
   (grown geometrically) rather than a second run of the loop. A loop that no gradient
   reaches is never rewritten.
2. **A reverse loop runs the body's VJP** from the last iteration to the first
   (:func:`while_vjp`): iteration ``k`` reads the state it started from out of the stacks,
   replays the body on it (:func:`~kernel_ext.autodiff.backward.inline_graph`: the body's
   intermediate values are recomputed, not kept) and differentiates that replay from the
   loop variables' cotangents to the state's cotangents, which the next (earlier) iteration
   carries on with. Loop-invariant operands (the arrays the body captured, ``x`` in
   ``for i in range(n): y = y * x``) sum their cotangents over the iterations.

The cotangent of the loop's initial values is the state's cotangent after the reverse loop.
Loops inside the body (nested loops) are differentiated the same way inside the replay.
The reverse loop is an ordinary graph loop, optimised and executed like the forward one.

**Higher order.** The reverse loop is an ordinary ``while`` node, so differentiating it again
(``kx.grad(kx.grad(f))``, a Hessian-vector product) runs this same machinery on it: it
stacks its own state and gets a reverse loop of its own. That second reverse pass sends
cotangents to the forward loop's stacks (the reverse loop read them); the forward loop's VJP
adds row ``k`` of a stack's cotangent to the cotangent of the state iteration ``k`` started
from.

Limits: every loop variable must keep its shape over the iterations (a stack holds
same-shaped rows: a variable whose shape changes raises when the stack is written).

:mod:`kernel_ext.ops.structure.control_flow` registers :func:`while_vjp` as ``while``'s rule.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ..ir import AbstractValue, Graph, Node, OpKind
from ..trace import Tensor, TraceContext, current_context
from ..trace.control_flow import while_loop
from .backward import (
    STACKED,
    backward,
    differentiable,
    inline_graph,
    mark_backward,
    recording_trace,
)
from .rules import Primal

# ``STACKED`` (from .backward) is the note, in its meta, of a ``while`` node rewritten to stack
# its state: a ``StackedLoop``.


class StackedLoop:
    """What :func:`stacking_loop` made of one ``while`` node."""

    def __init__(self, n_vars: int, body: Graph, count: Node, stacks: list[Node]) -> None:
        #: The loop variables before the rewrite (the node's first outputs).
        self.n_vars = n_vars
        #: The body before the rewrite: what the reverse loop replays.
        self.body = body
        #: ``get_output`` nodes of the rewritten loop: the iteration count and one stack per
        #: loop variable (row ``k``: the variable's value when iteration ``k`` began).
        self.count = count
        self.stacks = stacks


def _with_extra_inputs(
    graph: Graph, at: int, avals: list[AbstractValue], names: list[str]
) -> tuple[Graph, list[Node]]:
    """A copy of ``graph`` with new placeholders inserted at input position ``at`` (after
    the loop variables, before the captured operands: the ``while`` operand order)."""
    g = graph.rebuilt(graph.nodes)
    old_inputs = list(g.inputs)
    extra = [
        g.create_node(
            OpKind.PLACEHOLDER, (), {"shape": a.shape, "dtype": a.dtype}, name=name, aval=a
        )
        for a, name in zip(avals, names)
    ]
    g.inputs = old_inputs[:at] + extra + old_inputs[at:]
    body = [n for n in g.nodes if n.op is not OpKind.PLACEHOLDER]
    g.nodes = list(g.inputs) + body  # the verifier wants placeholders first, in input order
    return g, extra


def stacking_loop(owner: TraceContext, node: Node) -> StackedLoop:
    """Rewrite ``node`` (a ``while`` of ``owner``'s graph) in place so that it also counts its
    iterations and stacks each iteration's starting state (once per node; later calls return
    the same :class:`StackedLoop`).

    The new loop variables come after the old ones, with inline initial values (``int64(0)``
    and ``None``, an empty stack) so that no node has to be inserted before the loop: a tape
    remembers stretches of the node list by position.
    """
    done = node.meta.get(STACKED)
    if done is not None:
        return done
    n = node.params.n_vars
    specs: list[AbstractValue] = list(node.params.out_avals)
    count_aval = AbstractValue((), np.dtype(np.int64))
    stack_avals = [
        AbstractValue(None if s.shape is None else (None, *s.shape), s.dtype) for s in specs
    ]
    extra_avals = [count_aval, *stack_avals]
    names = ["iteration"] + [f"stack_{k}" for k in range(n)]
    body, phs = _with_extra_inputs(node.params.body, n, extra_avals, names)
    cond, _ = _with_extra_inputs(node.params.cond, n, extra_avals, names)
    count, stacks = phs[0], phs[1:]
    writes = [
        body.create_node(
            OpKind.TENSOR_ARRAY_WRITE,
            (stack, count, body.inputs[k]),
            {"dtype": specs[k].dtype, "size": 0, "dynamic_size": True},
            name=f"stack_{k}_write",
        )
        for k, stack in enumerate(stacks)
    ]
    following = body.create_node(OpKind.ADD, (count, 1), name="next_iteration")
    body.outputs = list(body.outputs) + [following, *writes]
    out_avals = tuple(specs) + (count_aval,) + tuple(w.aval for w in writes)
    original_body = node.params.body
    # (the count starts as an int64, not Python's 0: a fused segment of the body takes its
    # 0-d operands as NumPy scalars, and a Python int there failed under backend="numba")
    node.args = (*node.args[:n], np.int64(0), *([None] * n), *node.args[n:])
    node.params = node.params.replace(
        cond=cond, body=body, n_vars=len(out_avals), out_avals=out_avals
    )
    # (a tuple of avals, one per result: ir.graph types ``aval`` as a single one)
    node.aval = cast("Any", out_avals)
    outs = [
        owner.graph.create_node(
            OpKind.GET_OUTPUT,
            (node,),
            {"index": n + j},
            name=f"{node.name}_{'count' if j == 0 else 'stack'}",
        )
        for j in range(n + 1)
    ]
    mark_backward([*writes, following, *outs])  # the graph views show them as backward
    done = StackedLoop(n, original_body, outs[0], outs[1:])
    node.meta[STACKED] = done
    return done


def restack(ctx: TraceContext, node: Node, old: StackedLoop) -> StackedLoop:
    """Record on ``node`` (a replay, in ``ctx``, of a loop :func:`stacking_loop` rewrote) the
    outputs that hold its iteration count and stacks."""
    n = old.n_vars
    outs = [
        ctx.graph.create_node(
            OpKind.GET_OUTPUT,
            (node,),
            {"index": n + j},
            name=f"{node.name}_{'count' if j == 0 else 'stack'}",
        )
        for j in range(n + 1)
    ]
    mark_backward(outs)
    done = StackedLoop(n, old.body, outs[0], outs[1:])
    node.meta[STACKED] = done
    return done


def while_vjp(p: Primal, gs: list[Any]) -> list[Any]:
    """The cotangents of a ``while`` node's operands (the loop variables' initial values,
    then the captured operands): a reverse graph loop over the stacked iterations."""
    node = p.node
    n_total = node.params.n_vars
    caps = p.args[n_total:]
    stacked = node.meta.get(STACKED)
    n = stacked.n_vars if stacked is not None else n_total
    # A second-order pass reaches the stacks (the reverse loop read them): row k of a stack's
    # cotangent joins the cotangent of the state iteration k started from.
    g_stacks: list[Any] = list(gs[n + 1 : 2 * n + 1]) if stacked is not None else [None] * n
    specs = node.params.out_avals[:n]
    slots = [k for k in range(n) if differentiable(specs[k])]
    wanted_caps = [
        j for j, c in enumerate(caps) if isinstance(c, Tensor) and differentiable(c.node.aval)
    ]
    reached = [k for k in slots if gs[k] is not None or g_stacks[k] is not None]
    if not reached or not (slots or wanted_caps):
        return [None] * len(p.args)
    owner = _owner_of(p)
    info = stacking_loop(owner, node)
    count = owner.tensor(info.count)
    stacks = [owner.tensor(s) for s in info.stacks]
    inits = p.args[:n]
    ct0 = [
        gs[k] if gs[k] is not None else np.zeros_like(_tensor_like(inits[k], specs[k]))
        for k in slots
    ]
    acc0 = [np.zeros_like(caps[j]) for j in wanted_caps]
    body = info.body

    def cond_fn(k: Any, *carry: Any) -> Any:
        return k > 0

    def body_fn(k: Any, *carry: Any) -> tuple:
        ctx = recording_trace()
        k = k - 1
        cts, accs = carry[: len(slots)], carry[len(slots) :]
        # pre-lifted, so that each input is one node of this body: the backward pass's sources
        state = [ctx.tensor(ctx.lift(stack[k])) for stack in stacks]
        captured = [ctx.tensor(ctx.lift(c)) if isinstance(c, Tensor) else c for c in caps]
        env, new = inline_graph(body, state + captured)
        made = set(new)
        targets = []
        for k_slot, ct in zip(slots, cts):
            value = env[body.outputs[k_slot]]
            if isinstance(value, Tensor):
                targets.append((ctx.lift(value), ct))
        sources = [state[k_slot].node for k_slot in slots] + [captured[j].node for j in wanted_caps]
        found = backward(ctx, targets, made.__contains__, sources)
        new_cts = [_cast(found.get(state[k_slot].node), state[k_slot]) for k_slot in slots]
        new_cts = [
            ct if g_stacks[k_slot] is None else ct + _cast(g_stacks[k_slot][k], ct)
            for ct, k_slot in zip(new_cts, slots)
        ]
        new_accs = [
            acc
            if captured[j].node not in found
            else acc + _cast(found[captured[j].node], captured[j])
            for acc, j in zip(accs, wanted_caps)
        ]
        return (k, *new_cts, *new_accs)

    _, *result = while_loop(cond_fn, body_fn, (count, *ct0, *acc0), name=f"{node.name}_grad")
    out: list[Any] = [None] * len(p.args)
    for k_slot, ct in zip(slots, result[: len(slots)]):
        out[k_slot] = ct
    for j, acc in zip(wanted_caps, result[len(slots) :]):
        out[len(p.args) - len(caps) + j] = acc
    return out


def _owner_of(p: Primal) -> TraceContext:
    """The trace whose graph holds the forward node (the backward pass may be recording into
    a nested one: a loop body replayed by an outer loop's reverse pass)."""
    for a in p.args:
        if isinstance(a, Tensor):
            return a.context
    ctx = current_context()
    assert ctx is not None
    return ctx


def _tensor_like(init: Any, spec: AbstractValue) -> Any:
    """A value of the loop variable's shape and dtype (for a zero cotangent)."""
    if isinstance(init, Tensor):
        return init
    return np.zeros(spec.shape or (), spec.dtype)


def _cast(ct: Any, like: Tensor) -> Any:
    """``ct`` as a loop-carried cotangent of ``like``: zeros where nothing flowed, its dtype
    and shape exactly (a graph loop keeps each variable's dtype and shape)."""
    if ct is None:
        return np.zeros_like(like)
    if not isinstance(ct, Tensor):
        ct = np.asarray(ct, like.dtype)
    if ct.dtype != like.dtype:
        ct = ct.astype(like.dtype)
    if ct.shape != like.shape:
        ct = ct + np.zeros_like(like)
    return ct


__all__ = ["STACKED", "StackedLoop", "stacking_loop", "while_vjp"]
