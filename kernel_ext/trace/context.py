"""The tracing context: the graph being recorded, ``bind``, captures, variables, leak checks.

A :class:`TraceContext` is active (on a thread-local stack) while a Function's Python body runs
on symbolic tensors. :func:`bind` is the one way ops enter a graph (JAX's vocabulary): it lifts
every argument (a tensor of this trace, a captured array, a weak Python scalar, a variable read),
asks the op's abstract-eval rule for the output type and appends the node.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Sequence

import numpy as np

from .. import errors
from ..ir import Graph, Node, OpKind

_LITERALS = (bool, int, float, complex)
_state = threading.local()


class _Activity:
    """How many traces are running in the whole process (any thread).

    The cache-hit path of a Function reads ``ACTIVITY.depth`` (a plain attribute, no
    thread-local lookup): only when some trace is running does it take the slow path, which
    then checks this thread's own stack.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.lock = threading.Lock()


ACTIVITY = _Activity()


def context_stack() -> list["TraceContext"]:
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


def current_context() -> "TraceContext | None":
    """The innermost active trace of this thread, or ``None`` when running eagerly."""
    stack = getattr(_state, "stack", None)
    return stack[-1] if stack else None


class TraceContext:
    """Everything recorded while one Function body is traced for one input signature."""

    def __init__(self, name: str, *, function_name: str | None = None,
                 variable_policy: Callable[["Variable"], None] | None = None,
                 parent: "TraceContext | None" = None) -> None:
        self.graph = Graph(name)
        self.function_name = function_name or name
        self.parent = parent
        self.active = True
        # Values of enclosing traces used here (a cond branch or loop body reading an outer
        # tensor): (outer node, local placeholder), in first-use order.
        self.captures: list[tuple[Node, Node]] = []
        self._outer: dict[Node, Node] = {}
        self.created_variables: list["Variable"] = []
        self._variable_policy = variable_policy
        # id(array) -> (array, node): one capture per array object; holding the array keeps its
        # id from being reused by another object during the trace.
        self._captured: dict[int, tuple[Any, Node]] = {}

    # -- lifecycle ---------------------------------------------------------------------------
    def child(self, name: str) -> "TraceContext":
        """A context for a sub-graph (branch, loop body) nested in this one."""
        return TraceContext(name, function_name=self.function_name,
                            variable_policy=self._variable_policy, parent=self)

    def is_ancestor(self, other: "TraceContext") -> bool:
        ctx = self.parent
        while ctx is not None:
            if ctx is other:
                return True
            ctx = ctx.parent
        return False

    def capture_outer(self, tensor: "Tensor") -> Node:
        """A placeholder of this sub-graph standing for ``tensor`` of an enclosing trace."""
        outer_node = tensor._node if tensor._ctx is self.parent else \
            self.parent.capture_outer(tensor)  # type: ignore[union-attr]
        hit = self._outer.get(outer_node)
        if hit is not None:
            return hit
        ph = self.graph.create_node(OpKind.PLACEHOLDER, (), {
            "shape": outer_node.aval.shape, "dtype": outer_node.aval.dtype},
            name=outer_node.name)
        self._outer[outer_node] = ph
        self.captures.append((outer_node, ph))
        return ph

    def __enter__(self) -> "TraceContext":
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
    def placeholder(self, name: str, shape: tuple | None, dtype: Any, path: tuple) -> "Tensor":
        node = self.graph.placeholder(name, shape, dtype, path=path)
        return Tensor(node, self)

    def on_variable_created(self, var: "Variable") -> None:
        if self._variable_policy is not None:
            self._variable_policy(var)
        self.created_variables.append(var)

    # -- lifting ------------------------------------------------------------------------------
    def lift(self, value: Any) -> Any:
        """The graph form of an op argument: a Node, or an inline weak literal."""
        if isinstance(value, Tensor):
            return self.lift_tensor(value)
        if isinstance(value, Variable):
            return self.read_variable(value)._node
        if isinstance(value, np.generic):  # before literals: np.float64 subclasses float
            return self.graph.constant(value)
        if isinstance(value, _LITERALS) or value is None:
            return value
        if isinstance(value, np.ndarray):
            return self.capture(value)
        if isinstance(value, (list, tuple)):
            if _contains_tensor(value):
                return self.lift(_stack_nested(value))
            return self.capture(np.asarray(value))
        raise TypeError(
            f"cannot use a {type(value).__name__} ({_short_repr(value)}) as an operand of a "
            f"traced NumPy operation in '{self.function_name}'; expected an array, a NumPy or "
            "Python number, or a traced value. Fix: convert it with np.asarray(...) first.")

    def capture(self, array: np.ndarray) -> Node:
        """A constant node for an outside array, copied now: graphs freeze captured values."""
        if array.dtype.kind in "OUSV":
            raise TypeError(f"arrays of dtype {array.dtype} cannot enter a graph (only numeric "
                            f"and bool arrays can) in '{self.function_name}'")
        hit = self._captured.get(id(array))
        if hit is not None:
            return hit[1]
        node = self.graph.constant(array, captured=True)
        self._captured[id(array)] = (array, node)
        return node

    def check_owned(self, tensor: "Tensor") -> None:
        ctx = tensor._ctx
        if ctx is self and self.active:
            return
        raise leaked_error(tensor)

    def lift_tensor(self, tensor: "Tensor") -> Node:
        """The node for ``tensor`` here: its own, or a capture if it belongs to an enclosing
        trace that is still running."""
        ctx = tensor._ctx
        if ctx is self and self.active:
            return tensor._node
        if ctx.active and self.is_ancestor(ctx):
            return self.capture_outer(tensor)
        raise leaked_error(tensor)

    def read_variable(self, var: "Variable") -> "Tensor":
        node = self.graph.create_node(OpKind.READ_VARIABLE, (), {"variable": var},
                                      name=f"{var.name}/read")
        return Tensor(node, self)


def leaked_error(tensor: "Tensor") -> errors.LeakedTensorError:
    ctx = tensor._ctx
    if ctx.parent is not None:
        return errors.LeakedTensorError(
            f"The traced value {tensor._describe()} was created inside the loop body or branch "
            f"'{ctx.graph.name}' of '{ctx.function_name}' and used outside it (for example "
            "appended to a Python list in a loop over a traced value: the body is traced only "
            "once). Fix: collect per-iteration values in a kx.TensorArray "
            "(ta = ta.write(i, value); ta.stack()), or carry the value as a loop variable.")
    return errors.LeakedTensorError(
        f"The traced value {tensor._describe()} was created while tracing "
        f"'{ctx.function_name}' and has leaked out of that trace (it was stored in a global, an "
        "attribute or a list and used later). Outside its trace it has no value. Fix: return "
        "it from the function (results come back as NumPy arrays), or keep state in a "
        "kx.Variable and assign to it.")


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


def bind(op: OpKind, args: Sequence[Any], attrs: dict | None = None,
         name: str | None = None) -> "Tensor | None":
    """Record ``op(*args)`` in the owning trace and return the traced result (JAX's ``bind``)."""
    ctx = current_context()
    if ctx is None:
        for a in args:
            if isinstance(a, Tensor):
                raise leaked_error(a)
        raise RuntimeError("internal: bind() outside any trace")
    lifted = [ctx.lift(a) for a in args]
    node = ctx.graph.create_node(op, lifted, attrs or {}, name=name)
    return None if node.aval is None else Tensor(node, ctx)


def user_frame_description() -> str:
    """``file:line: source`` of the innermost frame outside kernel_ext and NumPy."""
    import linecache
    frame = sys._getframe(1)
    while frame is not None:
        fname = frame.f_code.co_filename.replace("\\", "/")
        if "/kernel_ext/" not in fname and "/numpy/" not in fname:
            line = linecache.getline(fname, frame.f_lineno).strip()
            return f"{fname}:{frame.f_lineno}" + (f": `{line}`" if line else "")
        frame = frame.f_back
    return "<unknown location>"


# Tensor and Variable import this module, so they are bound here, after its definitions: the
# hot functions above (``lift``, ``bind``) read module globals instead of importing per call.
from .tensor import Tensor  # noqa: E402
from .variables import Variable  # noqa: E402
