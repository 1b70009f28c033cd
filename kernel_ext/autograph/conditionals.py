"""AutoGraph's ``if`` statement at run time: a Python branch, or a graph ``cond`` when traced.

Converted code passes the variables a statement modifies through ``get_state``/``set_state``
closures (TensorFlow AutoGraph's protocol), so both branches can be traced as functions of
that state. The loop operators (:mod:`kernel_ext.autograph.loops`) use :func:`if_stmt` too:
an iteration that runs only while a data-dependent ``break`` has not happened is one.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..trace.control_flow import cond, is_traced
from ..trace.variables import resolve

__all__ = ["if_stmt"]


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
            set_state(init)  # (arrays updated in place are rolled back by cond itself)
            fn()
            return tuple(get_state())
        return run

    result = cond(test, branch(body), branch(orelse), names=list(names), name="if")
    set_state(tuple(result))
