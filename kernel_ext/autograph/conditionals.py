"""AutoGraph's ``if`` statement at run time: a Python branch, or a graph ``cond`` when traced.

Converted code passes the variables a statement modifies through ``get_state``/``set_state``
closures (TensorFlow AutoGraph's protocol), so both branches can be traced as functions of
that state. The loop operators (:mod:`kernel_ext.autograph.loops`) use :func:`if_stmt` too:
an iteration that runs only while a data-dependent ``break`` has not happened is one.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..trace.control_flow import cond, is_traced
from ..trace.tensor import Tensor
from ..trace.variables import resolve

__all__ = ["fresh", "if_stmt"]


def fresh(values: Sequence[Any]) -> tuple:
    """New tensor objects for the same values: a branch or body that mutates one in place
    (``x[0] = ...``) must not change what the other branch or the next trace sees."""
    return tuple(v.context.tensor(v.node) if isinstance(v, Tensor) else v for v in values)


def if_stmt(test: Any, body: Callable[[], None], orelse: Callable[[], None],
            get_state: Callable[[], tuple], set_state: Callable[[tuple], None],
            names: Sequence[str]) -> None:
    """``if test: body() else: orelse()``; a graph ``cond`` over the modified variables."""
    test = resolve(test)
    if not is_traced(test):
        if test:
            body()
        else:
            orelse()
        return
    init = get_state()

    def branch(fn: Callable[[], None]) -> Callable[[], tuple]:
        def run() -> tuple:
            set_state(fresh(init))
            fn()
            return tuple(get_state())
        return run

    result = cond(test, branch(body), branch(orelse), names=list(names), name="if")
    set_state(tuple(result))
