"""Call guards: what a trace that updates its arguments assumed about them, checked per call.

A trace that writes into its arguments (functionalized: the graph computes the new values and
the executor copies them back, :mod:`kernel_ext.trace.pytree` ``writeback``) assumed two
things NumPy decides only from the actual arrays:

* **no aliasing**: the arguments it updates share no memory with its other array arguments.
  ``axpy(x, x)`` or overlapping views (``f(a[1:], a[:-1])``) make one write visible through
  another argument in the middle of the function, which a graph computed from separate inputs
  cannot reproduce;
* **C-contiguous layout** of arguments whose reshape it took as a view (NumPy copies instead
  for other layouts; :class:`~kernel_ext.trace.tensor.ViewStep`).

When a call breaks an assumption, the function runs as plain Python on the real arrays for
that call (exactly NumPy's answer, by construction) and the call is counted as eager. Traces
that update nothing have no guard, so the common cache hit pays nothing.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..trace.context import TraceContext
from ..trace.tensor import Tensor


def value_at(values: Sequence[Any], path: tuple) -> Any:
    """The argument leaf at ``path`` (``(("arg", i), ("item", j), ("key", k), ...)``)."""
    (_, index), *steps = path
    value = values[index]
    for kind, key in steps:
        value = getattr(value, key) if kind == "attr" else value[key]
    return value


class CallGuard:
    """The per-call check of one trace's assumptions (see the module docstring)."""

    def __init__(self, updated: list[tuple], arrays: list[tuple], contiguous: list[tuple],
                 names: Sequence[str] = ()):
        self.updated = updated        # paths of the arguments the trace writes into
        self.arrays = arrays          # paths of every array argument
        self.contiguous = contiguous  # paths of arguments that must be C-contiguous
        self.names = tuple(names)     # parameter names, for the reason text

    @classmethod
    def for_trace(cls, ctx: TraceContext, updated: dict[int, tuple[tuple, Tensor]],
                  names: Sequence[str] = ()) -> "CallGuard | None":
        """The guard a finished trace needs, or None (it updates no argument)."""
        contiguous = [path for path, t in ctx.inputs if id(t) in ctx.layout_roots]
        if not updated and not contiguous:
            return None
        arrays = [path for path, _ in ctx.inputs]
        return cls([path for path, _ in updated.values()], arrays, contiguous, names)

    def violated(self, values: Sequence[Any]) -> str | None:
        """Why this call breaks an assumption (None: it does not)."""
        for path in self.contiguous:
            value = value_at(values, path)
            if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
                return (f"argument '{path_text(path, self.names)}' is not C-contiguous (the "
                        "trace took a reshape of it as a view)")
        if not self.updated or len(self.arrays) < 2:
            return None
        leaves = [value_at(values, p) for p in self.arrays]
        for path in self.updated:
            target = value_at(values, path)
            if not isinstance(target, np.ndarray):
                continue
            for other_path, other in zip(self.arrays, leaves):
                if other_path != path and isinstance(other, np.ndarray) and \
                        np.may_share_memory(target, other) and np.shares_memory(target, other):
                    return (f"argument '{path_text(path, self.names)}', updated in place, "
                            "shares memory with argument "
                            f"'{path_text(other_path, self.names)}'")
        return None

    def wrap(self, run: Callable[..., Any], eager: Callable[[str, Sequence[Any]], Any]
             ) -> Callable[..., Any]:
        """``run`` preceded by the check; a violating call goes to ``eager(reason, values)``."""
        violated = self.violated

        def guarded(*values: Any) -> Any:
            reason = violated(values)
            if reason is not None:
                return eager(reason, values)
            return run(*values)
        return guarded


def path_text(path: tuple, names: Sequence[str] = ()) -> str:
    """``x[0]['w']`` style text of an argument path (``#i`` where the parameter's name is
    not given)."""
    (_, index), *steps = path
    text = names[index] if index < len(names) else f"#{index}"
    for kind, key in steps:
        text += f".{key}" if kind == "attr" else f"[{key!r}]"
    return text


__all__ = ["CallGuard", "path_text", "value_at"]
