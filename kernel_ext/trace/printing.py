"""``kx.print``: printing that happens every time a graph runs (``tf.print`` for NumPy).

Python's ``print`` inside a traced function runs once, while tracing. ``kx.print`` records a
stateful ``print`` node instead, so it prints at every execution with the run-time values,
formatted as NumPy prints them (``kx.print("x:", np.int32(1))`` prints ``x: 1``).
"""

from __future__ import annotations

import sys
from typing import Any

from ..ir import OpKind
from ..ir.interpreter import format_print
from .context import current_context
from .tensor import Tensor
from .variables import Variable


def kx_print(*values: Any, sep: str = " ", end: str = "\n") -> None:
    """Print ``values`` now (eagerly) or at every run of the graph being traced."""
    ctx = current_context()
    if ctx is None:
        shown = []
        for v in values:
            if isinstance(v, Tensor):
                v.context.check_owned(v)
            shown.append(v.peek() if isinstance(v, Variable) else v)  # (only formatted)
        sys.stdout.write(format_print((None,) * len(shown), shown, sep, end))
        return
    template: list[str | None] = []
    args: list[Any] = []
    for v in values:
        if isinstance(v, (Tensor, Variable)):
            template.append(None)
            args.append(ctx.lift(v))
        else:
            template.append(str(v))  # a Python value is frozen at trace time, like any other
    ctx.graph.create_node(OpKind.PRINT, args, {"template": tuple(template), "sep": sep, "end": end})
