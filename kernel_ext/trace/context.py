"""The tracing context: the graph being recorded, ``bind``, captures, variables, leak checks.

A :class:`TraceContext` is active (on a thread-local stack, :mod:`kernel_ext.trace.state`) while
a Function's Python body runs on symbolic tensors. :meth:`TraceContext.bind` is the one way ops
enter a graph (JAX's vocabulary): it lifts every argument (a tensor of this trace, a captured
array, a weak Python scalar, a variable read), asks the op's abstract-eval rule for the output
type and appends the node; the module-level :func:`bind` does that in the current trace.
:meth:`TraceContext.tensor` is the one place traced values are made.

Module order (no cycles): ``state`` < ``operators`` < ``tensor`` < ``variables`` < ``context``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import errors
from ..ir import Graph, Node, OpKind
from .source_lines import record_lines
from .state import ACTIVITY, context_stack, current_context
from .tensor import Tensor, bind, leaked_error, user_frame_description
from .types import PLAIN_ARRAY_CLASSES, array_subclass_error
from .variables import Variable

_LITERALS = (bool, int, float, complex)

# Re-exported: the names callers have always imported from here.
__all__ = [
    "ACTIVITY",
    "LoopNote",
    "TraceContext",
    "bind",
    "context_stack",
    "current_context",
    "leaked_error",
    "user_frame_description",
]


@dataclass
class LoopNote:
    """What AutoGraph made of one loop statement in one trace (summed over its runs: a loop
    nested in an unrolled loop runs once per outer iteration)."""

    #: ``file:line: `source``` of the loop statement (cells as ``cell [5], line 3``).
    where: str
    #: Iterations traced one by one into the graph (Python iterations).
    unrolled: int = 0
    #: Graph ``while`` loops it became.
    graph_loops: int = 0
    #: Why iterations were unrolled (the first reason given: a short range, a use of the
    #: index as a Python value, a peeled first iteration, ...); empty when none was given.
    reason: str = ""

    def text(self) -> str:
        """``"loop at cell [3], line 4: `for i in range(n):` — 30 iterations unrolled (line
        6: `t = lst[i]` needs a Python value of the loop index), then a graph loop"``: the
        line the monitor, the sidebar and the report show."""
        parts = []
        if self.unrolled:
            why = f" ({self.reason})" if self.reason else ""
            parts.append(f"{self.unrolled} iteration{'s' * (self.unrolled != 1)} unrolled{why}")
        if self.graph_loops:
            loops = "a graph loop" if self.graph_loops == 1 else f"{self.graph_loops} graph loops"
            parts.append(("then " if parts else "") + loops)
        return f"loop at {self.where} — {', '.join(parts) or 'no iterations'}"

    def snapshot(self) -> tuple[int, int, str]:
        """The counts and reason, to :meth:`restore` after a discarded graph-loop attempt."""
        return (self.unrolled, self.graph_loops, self.reason)

    def restore(self, saved: tuple[int, int, str]) -> None:
        self.unrolled, self.graph_loops, self.reason = saved


class TraceContext:
    """Everything recorded while one Function body is traced for one input signature."""

    def __init__(
        self,
        name: str,
        *,
        function_name: str | None = None,
        variable_policy: Callable[[Variable], None] | None = None,
        parent: TraceContext | None = None,
    ) -> None:
        self.graph = record_lines(Graph(name))  # every node knows the user line that made it
        self.function_name = function_name or name
        self.parent = parent
        self.active = True
        # Values of enclosing traces used here (a cond branch or loop body reading an outer
        # tensor): (outer node, local placeholder), in first-use order.
        self.captures: list[tuple[Node, Node]] = []
        self._outer: dict[Node, Node] = {}
        self.created_variables: list[Variable] = []
        self._variable_policy = variable_policy
        # id(array) -> (array, node): one capture per array object; holding the array keeps its
        # id from being reused by another object during the trace.
        self._captured: dict[int, tuple[Any, Node]] = {}
        #: The function's arguments as traced: ``(path, placeholder tensor)`` per array leaf.
        self.inputs: list[tuple[tuple, Tensor]] = []
        #: Roots updated in place while this trace (branch, body) was current, first update
        #: first, each with its state before that update (``Tensor.state``): what a branch or
        #: loop body carries out, and what the engine writes back.
        self.mutated: dict[int, tuple[Tensor, tuple]] = {}
        #: Roots whose reshape was taken as a view (the top-level trace's; see ViewStep).
        self.layout_roots: dict[int, Tensor] = {}
        #: Plain arrays a traced value was written into (the top-level trace's): id -> (the
        #: array, the traced value that now stands for it). See :meth:`promote`.
        self.promoted: dict[int, tuple[np.ndarray, Tensor]] = {}
        #: What AutoGraph made of each loop statement (the top-level trace's), by location.
        self.loops: dict[str, LoopNote] = {}
        #: 0-d argument roots written the way only an ndarray can be (``x[()] = v``,
        #: ``out=x``): a call passing a NumPy scalar there runs as NumPy (the top-level
        #: trace's; see ``Tensor.array_target``).
        self.array_writes: dict[int, Tensor] = {}

    # -- lifecycle ---------------------------------------------------------------------------
    def child(self, name: str) -> TraceContext:
        """A context for a sub-graph (branch, loop body) nested in this one."""
        return TraceContext(
            name,
            function_name=self.function_name,
            variable_policy=self._variable_policy,
            parent=self,
        )

    def is_ancestor(self, other: TraceContext) -> bool:
        ctx = self.parent
        while ctx is not None:
            if ctx is other:
                return True
            ctx = ctx.parent
        return False

    def capture_outer(self, tensor: Tensor) -> Node:
        """A placeholder of this sub-graph standing for ``tensor`` of an enclosing trace."""
        node = tensor.node  # (a view first catches up with its root: it may change context)
        outer_node = node if tensor.context is self.parent else self.parent.capture_outer(tensor)  # type: ignore[union-attr]
        hit = self._outer.get(outer_node)
        if hit is not None:
            return hit
        ph = self.graph.create_node(
            OpKind.PLACEHOLDER,
            (),
            {"shape": outer_node.shape, "dtype": outer_node.dtype},
            name=outer_node.name,
        )
        self._outer[outer_node] = ph
        self.captures.append((outer_node, ph))
        return ph

    def __enter__(self) -> TraceContext:
        self.active = True
        context_stack().append(self)
        with ACTIVITY.lock:
            ACTIVITY.depth += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        with ACTIVITY.lock:
            ACTIVITY.depth -= 1
        stack = context_stack()
        stack.remove(self)
        self.active = False
        self._captured.clear()

    # -- inputs -------------------------------------------------------------------------------
    def placeholder(self, name: str, shape: tuple | None, dtype: Any, path: tuple) -> Tensor:
        tensor = self.tensor(self.graph.placeholder(name, shape, dtype, path=path))
        self.inputs.append((path, tensor))
        return tensor

    # -- in-place updates (functionalization; see Tensor) ------------------------------------
    def note_mutation(self, root: Tensor) -> None:
        """``root`` is about to be updated in place while this trace is current."""
        if id(root) not in self.mutated:
            self.mutated[id(root)] = (root, root.state())

    def outer_updates(self) -> list[tuple[Tensor, tuple]]:
        """The roots of enclosing traces this one updated, with their state before."""
        return [
            (root, pre)
            for root, pre in self.mutated.values()
            if pre[1] is not self and not pre[1].is_ancestor(self)
        ]

    def note_array_write(self, root: Tensor) -> None:
        """``root``, a 0-d argument, was written as an ndarray (see :attr:`array_writes`)."""
        self.top().array_writes.setdefault(id(root), root)

    def note_layout_root(self, root: Tensor) -> None:
        """The trace took a reshape of ``root`` as a view: valid for C-contiguous data only."""
        self.top().layout_roots.setdefault(id(root), root)

    def note_loop(
        self, where: str, unrolled: int = 0, graph_loops: int = 0, reason: str = ""
    ) -> None:
        """Count ``unrolled`` Python iterations and ``graph_loops`` graph loops for the loop
        statement at ``where`` (kept by the function's own trace: :attr:`loops`); ``reason``
        says why iterations were unrolled (the first one given is kept)."""
        loops = self.top().loops
        note = loops.get(where)
        if note is None:
            note = loops[where] = LoopNote(where)
        note.unrolled += unrolled
        note.graph_loops += graph_loops
        if reason and not note.reason:
            note.reason = reason

    def top(self) -> TraceContext:
        """The trace of the function itself (this one, or the one this branch/body is in)."""
        top = self
        while top.parent is not None:
            top = top.parent
        return top

    def promote(self, array: np.ndarray) -> Tensor:
        """The traced value standing for the plain ``array`` from now on, made when a traced
        value is first written into it (``out = np.zeros(n); out[i] = t``, ``buf += t``): a
        root whose first value is the array's contents. Every later use of the array object
        (any name, a container holding it, the returned value) reads that root's current
        value, so the buffer behaves as NumPy's would; the array itself is never written."""
        top = self.top()
        hit = top.promoted.get(id(array))
        if hit is not None:
            return hit[1]
        if array.base is not None and any(
            np.shares_memory(array, a) for a, _ in top.promoted.values()
        ):
            raise errors.UnsupportedOpError(
                "a traced value is written into a view of an array that already holds traced "
                f"values ({user_frame_description()}); the two would not see each other's "
                "updates. Fix: write through the array itself (buf[i, j] = ...), not a "
                "view taken of it earlier."
            )
        tensor = top.tensor(top.capture(array))
        top.promoted[id(array)] = (array, tensor)
        return tensor

    def tensor(self, node: Node) -> Tensor:
        """The traced value of ``node``, a node of this trace's graph: the one place tensors
        are made (placeholders, op results, variable reads, branch and loop outputs)."""
        return Tensor(node, self)

    def bind(
        self,
        op: OpKind,
        args: Sequence[Any],
        attrs: Mapping[str, Any] | None = None,
        name: str | None = None,
        meta: dict | None = None,
    ) -> Tensor | None:
        """Record ``op(*args)`` here: lift every argument, append the node (its abstract-eval
        rule gives the output type; ``meta``: its annotations) and return its traced value
        (``None`` for ops with no result, such as print)."""
        lifted = [self.lift(a) for a in args]
        node = self.graph.create_node(op, lifted, attrs or {}, name=name, meta=meta)
        return None if node.aval is None else Tensor(node, self)

    def on_variable_created(self, var: Variable) -> None:
        if self._variable_policy is not None:
            self._variable_policy(var)
        self.created_variables.append(var)

    # -- lifting ------------------------------------------------------------------------------
    def lift(self, value: Any) -> Any:
        """The graph form of an op argument: a Node, or an inline weak literal."""
        if isinstance(value, Tensor):
            return self.lift_tensor(value)
        if isinstance(value, Variable):
            return self.read_variable(value).node
        if isinstance(value, np.generic):  # before literals: np.float64 subclasses float
            return self.graph.constant(value)
        if isinstance(value, _LITERALS) or value is None:
            return value
        if isinstance(value, np.ndarray):
            promoted = self.top().promoted
            hit = promoted.get(id(value))
            if hit is not None:  # a buffer a traced value was written into: its current value
                return self.lift_tensor(hit[1])
            if promoted and any(np.shares_memory(value, a) for a, _ in promoted.values()):
                raise errors.UnsupportedOpError(
                    "an array that shares memory with a buffer traced values were written "
                    f"into is read at {user_frame_description()} (a view taken before the "
                    "writes, or the buffer's base): it would show the buffer's old contents. "
                    "Fix: take the view after the writes, from the buffer itself "
                    "(v = out[1:3] after out[i] = ...)."
                )
            return self.capture(value)
        if isinstance(value, (list, tuple)):
            if _contains_tensor(value):
                return self.lift(_stack_nested(value))
            return self.capture(np.asarray(value))
        raise TypeError(
            f"cannot use a {type(value).__name__} ({_short_repr(value)}) as an operand of a "
            f"traced NumPy operation in '{self.function_name}'; expected an array, a NumPy or "
            "Python number, or a traced value. Fix: convert it with np.asarray(...) first."
        )

    def capture(self, array: np.ndarray) -> Node:
        """A constant node for an outside array, copied now: graphs freeze captured values."""
        if array.dtype.kind in "OUSV":
            raise TypeError(
                f"arrays of dtype {array.dtype} cannot enter a graph (only numeric "
                f"and bool arrays can) in '{self.function_name}'"
            )
        if type(array) not in PLAIN_ARRAY_CLASSES:
            # a constant is a plain array: a masked global would silently lose its mask
            raise array_subclass_error(
                array,
                "",
                f"an array read from outside '{self.function_name}' at {user_frame_description()}",
            )
        hit = self._captured.get(id(array))
        if hit is not None:
            return hit[1]
        node = self.graph.constant(array, captured=True)
        self._captured[id(array)] = (array, node)
        return node

    def shared_buffers(self, holders: Sequence[Any] = ()) -> list[np.ndarray]:
        """Promoted arrays (:meth:`promote`) that state outside the trace holds: a module
        global, a closure cell, an object's attribute. Writing into such an array is a side
        effect on state the function does not own, which a graph would make once (at trace
        time: not at all) instead of at every call. ``holders`` are objects to ask directly
        (the garbage collector does not report an attribute dict holding only arrays and
        numbers once something has read ``obj.__dict__``)."""
        import gc
        import sys
        import types

        shared = []
        held = {id(v) for h in holders for v in _attribute_values(h)}
        for array, _ in self.promoted.values():
            if id(array) in held:
                shared.append(array)
                continue
            for ref in gc.get_referrers(array):
                if (
                    isinstance(ref, types.CellType)
                    or (
                        isinstance(ref, dict)
                        and (_is_module_dict(ref, sys.modules) or _is_attribute_dict(ref))
                    )
                    or (_holds_as_attribute(ref, array))
                ):
                    shared.append(array)
                    break
        return shared

    def check_owned(self, tensor: Tensor) -> None:
        ctx = tensor.context
        if ctx is self and self.active:
            return
        raise leaked_error(tensor)

    def lift_tensor(self, tensor: Tensor) -> Node:
        """The node for ``tensor`` here: its own, or a capture if it belongs to an enclosing
        trace that is still running."""
        node = tensor.node  # (a view first catches up with its root: it may change context)
        ctx = tensor.context
        if ctx is self and self.active:
            return node
        if ctx.active and self.is_ancestor(ctx):
            return self.capture_outer(tensor)
        raise leaked_error(tensor)

    def read_variable(self, var: Variable) -> Tensor:
        node = self.graph.create_node(
            OpKind.READ_VARIABLE, (), {"variable": var}, name=f"{var.name}/read"
        )
        return self.tensor(node)


def _contains_tensor(value: Any) -> bool:
    if isinstance(value, (Tensor, Variable)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_contains_tensor(v) for v in value)
    return False


def _stack_nested(value: Any) -> Any:
    """``[t0, t1]`` as ``np.stack``: NumPy's own list-to-array rule, traced."""
    if isinstance(value, (list, tuple)):
        return np.stack([_stack_nested(v) for v in value])
    return value


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_module_dict(d: dict, modules: dict) -> bool:
    """Is ``d`` a module's globals?"""
    name = d.get("__name__")
    module = modules.get(name) if isinstance(name, str) else None
    return module is not None and getattr(module, "__dict__", None) is d


def _is_attribute_dict(d: dict) -> bool:
    """Is ``d`` some object's ``__dict__`` (its attributes)?"""
    import gc

    return any(
        getattr(owner, "__dict__", None) is d
        for owner in gc.get_referrers(d)
        if not isinstance(owner, (dict, list, tuple))
    )


def _attribute_values(owner: object) -> list[Any]:
    try:
        return list(vars(owner).values())
    except TypeError:  # no __dict__ (slots, builtins)
        return []


def _holds_as_attribute(owner: object, array: np.ndarray) -> bool:
    """Does ``owner`` (an object whose attributes live inline, not in a dict the garbage
    collector reports) hold ``array`` as an attribute?"""
    if isinstance(owner, (dict, list, tuple, set, frozenset)) or not hasattr(owner, "__dict__"):
        return False
    try:
        return any(v is array for v in vars(owner).values())
    except TypeError:
        return False
