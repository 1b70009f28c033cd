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
            names: Sequence[str], live: Sequence[str] | None = None) -> None:
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
    kept = list(range(len(names))) if live is None else \
        [i for i, n in enumerate(names) if n in live]

    def branch(fn: Callable[[], None]) -> Callable[[], tuple]:
        def run() -> tuple:
            set_state(init)  # (arrays updated in place are rolled back by cond itself)
            fn()
            state = get_state()
            return tuple(state[i] for i in kept)
        return run

    result = cond(test, branch(body), branch(orelse), names=[names[i] for i in kept],
                  name="if")
    # the names nothing reads afterwards keep what they held before the if (each branch
    # bound them to values of its own sub-graph, which must not leak out of it)
    final = list(init)
    for i, value in zip(kept, result):
        final[i] = value
    set_state(tuple(final))
