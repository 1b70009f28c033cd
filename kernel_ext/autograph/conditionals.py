"""AutoGraph's ``if`` statement at run time: a Python branch, or a graph ``cond`` when traced.

Converted code passes the variables a statement modifies through ``get_state``/``set_state``
closures (TensorFlow AutoGraph's protocol), so both branches can be traced as functions of
that state. The loop operators (:mod:`kernel_ext.autograph.loops`) use :func:`if_stmt` too:
an iteration that runs only while a data-dependent ``break`` has not happened is one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import errors
from ..ir import OpKind
from ..trace.context import current_context
from ..trace.control_flow import cond, is_traced
from ..trace.tensor import Tensor, user_frame_description
from ..trace.variables import resolve

__all__ = ["RuntimeMessage", "fstring", "if_raise", "if_stmt"]


def if_stmt(
    test: Any,
    body: Callable[[], None],
    orelse: Callable[[], None],
    get_state: Callable[[], tuple],
    set_state: Callable[[tuple], None],
    names: Sequence[str],
    live: Sequence[str] | None = None,
) -> None:
    """``if test: body() else: orelse()``; a graph ``cond`` over the modified variables.

    ``live``: the names of ``names`` that a later statement may read (the transformer's
    liveness analysis; None: all of them). Only those are outputs of a graph ``cond``: a
    name assigned in one branch that nothing reads afterwards needs no value from the other
    branch. The others keep the values they had before the ``if``."""
    test = resolve(test)
    if not is_traced(test):
        if test:
            body()
        else:
            orelse()
        return
    init = get_state()
    kept = (
        list(range(len(names))) if live is None else [i for i, n in enumerate(names) if n in live]
    )

    def branch(fn: Callable[[], None]) -> Callable[[], tuple]:
        def run() -> tuple:
            set_state(init)  # (arrays updated in place are rolled back by cond itself)
            fn()
            state = get_state()
            return tuple(state[i] for i in kept)

        return run

    result = cond(test, branch(body), branch(orelse), names=[names[i] for i in kept], name="if")
    # the names nothing reads afterwards keep what they held before the if (each branch
    # bound them to values of its own sub-graph, which must not leak out of it)
    final = list(init)
    for i, value in zip(kept, result):
        final[i] = value
    set_state(tuple(final))


# -- run-time checks ---------------------------------------------------------------------------
# ``if bad: raise ValueError("negative")`` on a traced ``bad`` cannot run as a ``cond``: both
# branches are traced, so the ``raise`` would run while tracing, for every input. A branch that
# only raises becomes a run-time check instead (TensorFlow's assertions, JAX's checkify): a
# ``check`` node that raises the same exception, with the same message, exactly when eager
# Python would. The converted code calls :func:`if_raise` with the branch as a function that
# *returns* the exception; the statements computing its message run in the true branch of a
# ``cond``, so their values are computed only when the check fails, as eagerly.


class RuntimeMessage:
    """An f-string with traced values: its text exists only when the graph runs.

    Converted code builds f-strings inside a raising branch with :func:`fstring`; an exception
    made with one becomes a check whose message is formatted at run time. Concatenation with
    ``+`` works; anything else that needs the text now raises a clear error.
    """

    def __init__(self, parts: list) -> None:
        self.parts = parts  # str, or (value, conversion, spec)

    def __add__(self, other: Any) -> RuntimeMessage:
        if isinstance(other, RuntimeMessage):
            return RuntimeMessage(self.parts + other.parts)
        if isinstance(other, str):
            return RuntimeMessage(self.parts + [other])
        return NotImplemented

    def __radd__(self, other: Any) -> RuntimeMessage:
        if isinstance(other, str):
            return RuntimeMessage([other] + self.parts)
        return NotImplemented

    def _needs_text(self, *args: Any) -> Any:
        raise errors.TracingConversionError(
            f"the message of a run-time check at {user_frame_description()} holds traced "
            "values, whose text exists only when the graph runs; it can be formatted then "
            "only if it is an f-string (or f-strings joined with +) passed to the exception. "
            'Fix: write the message as f"... {value} ...".'
        )

    __str__ = __format__ = __mod__ = __rmod__ = _needs_text

    def template(self) -> str:
        """The text with ``{...}`` where a run-time value goes (graph views show it)."""
        return "".join(p if isinstance(p, str) else "{...}" for p in self.parts)

    def __repr__(self) -> str:
        return f"RuntimeMessage({self.template()!r})"


def fstring(*parts: Any) -> Any:
    """``f"..."`` in a raising branch: the string, or a :class:`RuntimeMessage` when a
    formatted value is traced. Each part is literal text or ``(value, conversion, spec)``."""
    if not any(isinstance(p, tuple) and is_traced(resolve(p[0])) for p in parts):
        return "".join(
            p if isinstance(p, str) else format(_CONVERT[p[1]](p[0]), p[2]) for p in parts
        )
    for p in parts:
        if isinstance(p, tuple) and isinstance(p[2], RuntimeMessage):
            RuntimeMessage([])._needs_text()
    return RuntimeMessage([p if isinstance(p, str) else (resolve(p[0]), p[1], p[2]) for p in parts])


_CONVERT: dict[str | None, Callable[[Any], Any]] = {
    None: lambda v: v,
    "s": str,
    "r": repr,
    "a": ascii,
}


def _message_form(value: Tensor) -> str:
    """How eager Python holds ``value`` when it formats it (ops.structure.state._MESSAGE_FORMS)."""
    py_type = getattr(value, "py_type", None)
    if isinstance(py_type, type) and py_type.__name__ in ("int", "float", "bool", "complex"):
        return py_type.__name__
    if isinstance(value, Tensor) and type(value).__name__ == "WeakInt":
        return "int"
    return "scalar" if value.shape == () else "array"


def _instance(error: Any) -> BaseException:
    if isinstance(error, type) and issubclass(error, BaseException):
        return error()
    if isinstance(error, BaseException):
        return error
    raise TypeError("exceptions must derive from BaseException")


def _run_time_parts(error: BaseException) -> tuple[tuple, list[Any]]:
    """How each argument of ``error`` is rebuilt at run time (``ops.structure.state.check_error``)
    and the traced values that needs."""
    values: list[Any] = []
    how: list[Any] = []
    for arg in error.args:
        arg = resolve(arg)
        if isinstance(arg, RuntimeMessage):
            parts: list[Any] = []
            for p in arg.parts:
                if isinstance(p, str) or not is_traced(p[0]):
                    parts.append(p if isinstance(p, str) else format(_CONVERT[p[1]](p[0]), p[2]))
                else:
                    parts.append((len(values), _message_form(p[0]), p[1], p[2]))
                    values.append(p[0])
            how.append(("message", tuple(parts)))
        elif is_traced(arg):
            how.append(("value", len(values), _message_form(arg)))
            values.append(arg)
        elif isinstance(arg, str) and "<kx.Tensor '" in arg:
            # formatted while tracing (``%``, ``str.format``, ``str()``): the text of a
            # traced value would be its description, not its value
            RuntimeMessage([])._needs_text()
        else:
            how.append(None)
    return tuple(how), values


def if_raise(test: Any, make_error: Callable[[], Any]) -> None:
    """``if test: raise make_error()``: Python's on a Python ``test``; on a traced one, a
    run-time check (module comment above)."""
    test = resolve(test)
    if not is_traced(test):
        if test:
            error = _instance(make_error())
            how, values = _run_time_parts(error)
            if not values:
                raise error
            # raised for every input of this trace, with a message only the run has: a
            # check that always fails, so the message is formatted at run time
            ctx = current_context()
            assert ctx is not None  # (a traced test: we are tracing)
            _record_check(ctx, ctx.graph.constant(np.True_), error, how, values)
        return
    ctx = current_context()
    assert ctx is not None  # (a traced test: we are tracing)
    found: dict[str, Any] = {}

    def failing() -> tuple:
        error = _instance(make_error())
        how, values = _run_time_parts(error)
        found.update(error=error, how=how, values=values)
        return tuple(values)

    def passing() -> tuple:
        # the same dtypes (and ranks); never used: the check passes on this path
        return tuple(np.zeros(tuple(d or 0 for d in v.shape), v.dtype) for v in found["values"])

    mutated = _mutated_arguments(ctx)
    values = cond(
        test, failing, passing, names=["<message of a run-time check>"], name="check_message"
    )
    written = _mutated_arguments(ctx)
    if written != mutated:
        raise errors.UnsupportedOpError(
            f"the raising branch at {user_frame_description()} updates an argument in place "
            "before it raises; as a run-time check it would leave the argument as it was. "
            "Fix: raise before updating, or update a copy."
        )
    _record_check(ctx, ctx.lift(test), found["error"], found["how"], list(values))


def _record_check(ctx: Any, pred: Any, error: BaseException, how: tuple, values: list[Any]) -> None:
    """The ``check`` node. Arguments updated in place before it keep their updates when it
    raises, as eagerly: the node gets each one's placeholder (the caller's array at run time)
    and its value now, and copies the one into the other before raising (executors that
    update the caller's array directly pass the same array twice: nothing to copy)."""
    pairs = [n for original, now in _argument_writes(ctx) for n in (original, now)]
    # the node keeps the exception with printable arguments (graph views print attrs);
    # check_error rebuilds the run-time ones from ``how``
    shown = [
        a.template() if isinstance(a, RuntimeMessage) else "{...}" if h is not None else a
        for a, h in zip(error.args, how)
    ]
    try:
        error = copy.copy(error)
        error.args = tuple(shown)
    except Exception:  # an exception class copy cannot rebuild: keep it as it is
        pass
    ctx.graph.create_node(
        OpKind.CHECK,
        (pred, *[ctx.lift(v) for v in values], *[ctx.lift(t) for t in pairs]),
        {"error": error, "args": how, "writes": len(pairs) // 2},
        name="check",
    )


def _argument_writes(ctx: Any) -> list[tuple[Tensor, Tensor]]:
    """(placeholder, value now) of each array argument updated in place on this path."""
    top = ctx.top()
    placeholders = {n.params.path: n for n in top.graph.inputs}
    keys: set[int] = set()
    c = ctx
    while c is not None:
        keys |= set(c.mutated)
        c = c.parent
    out = []
    for path, root in top.inputs:
        if id(root) in keys:
            node = placeholders.get(path)
            if node is None or not node.aval.shape:
                raise errors.UnsupportedOpError(
                    f"a check on a traced condition at {user_frame_description()} follows an "
                    f"in-place update of {_path_text(path)}, which is not an array the call "
                    "can update. Fix: validate the input before updating it."
                )
            out.append((Tensor(node, top), root))
    return out


def _mutated_arguments(ctx: Any) -> set[str]:
    """Names of the function's array arguments updated in place so far on this path."""
    top = ctx.top()
    roots = {id(t): path for path, t in top.inputs}
    out: set[str] = set()
    c = ctx
    while c is not None:
        for key in c.mutated:
            if key in roots:
                out.add(_path_text(roots[key]))
        c = c.parent
    return out


def _path_text(path: tuple) -> str:
    """``argument 0``, ``argument 1[2]``: an argument's leaf (its path, trace/pytree.py)."""
    head, *rest = path
    text = f"argument {head[1]}" if isinstance(head, tuple) and head[0] == "arg" else repr(head)
    return text + "".join(f"[{p[1]!r}]" if isinstance(p, tuple) else f"[{p!r}]" for p in rest)
