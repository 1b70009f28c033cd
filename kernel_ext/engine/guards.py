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

A trace that wrote into a 0-d argument the way only an ndarray can be written (``s[()] = v``,
``np.copyto(s, v)``, ``out=s``, ``s.fill(v)``: ``TraceContext.array_writes``) assumed a fourth:
**that argument is a 0-d array, not a NumPy scalar** (one trace serves both; NumPy raises
``TypeError`` or writes into a temporary for a scalar).

A trace that iterated a dict argument (its placeholder noted it,
:class:`~kernel_ext.trace.types.KeyOrderWatch`) assumed a third: **the keys come in the
traced order**. The dict's trace type ignores the order (TensorFlow's rule: ``{1: 2, 3: 4}``
and ``{3: 4, 1: 2}`` share a trace), so this is checked per call too.

When a call breaks an assumption, the function runs as plain Python on the real arrays for
that call (exactly NumPy's answer, by construction) and the call is counted as eager. Traces
that update nothing and iterate no dict argument have no guard, so the common cache hit pays
nothing.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Sequence
from typing import Any

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

    def __init__(
        self,
        updated: list[tuple],
        arrays: list[tuple],
        contiguous: list[tuple],
        names: Sequence[str] = (),
        dict_orders: Sequence[tuple[tuple, tuple]] = (),
        arrays_only: Sequence[tuple] = (),
    ):
        self.updated = updated  # paths of the arguments the trace writes into
        self.arrays = arrays  # paths of every array argument
        self.contiguous = contiguous  # paths of arguments that must be C-contiguous
        self.dict_orders = list(dict_orders)  # (path, keys in the traced order) of dicts
        self.arrays_only = list(arrays_only)  # 0-d arguments written as arrays
        self.names = tuple(names)  # parameter names, for the reason text
        # Checked per call, so prepared once: the pairs to compare (an updated argument with
        # every other array argument, each unordered pair once), by index into ``arrays``.
        index = {p: i for i, p in enumerate(arrays)}
        pairs: dict[tuple[int, int], None] = {}
        for path in updated:
            i = index.get(path)
            if i is None:
                continue
            for j in range(len(arrays)):
                if j != i:
                    pairs[(min(i, j), max(i, j))] = None
        self._pairs = [(i, j, i if arrays[i] in updated else j) for i, j in pairs]

    @classmethod
    def for_trace(
        cls,
        ctx: TraceContext,
        updated: dict[int, tuple[tuple, Tensor]],
        names: Sequence[str] = (),
        dict_orders: Sequence[tuple[tuple, tuple]] = (),
    ) -> CallGuard | None:
        """The guard a finished trace needs, or None (it assumed nothing of its arguments)."""
        contiguous = [path for path, t in ctx.inputs if id(t) in ctx.layout_roots]
        arrays_only = [path for path, t in ctx.inputs if id(t) in ctx.array_writes]
        if not updated and not contiguous and not dict_orders and not arrays_only:
            return None
        arrays = [path for path, _ in ctx.inputs]
        return cls(
            [path for path, _ in updated.values()],
            arrays,
            contiguous,
            names,
            dict_orders,
            arrays_only,
        )

    def violated(self, values: Sequence[Any]) -> str | None:
        """Why this call breaks an assumption (None: it does not)."""
        for path in self.arrays_only:
            value = value_at(values, path)
            if isinstance(value, np.generic):
                return scalar_argument_reason(path, value, self.names)
        for path, order in self.dict_orders:
            keys = tuple(value_at(values, path))
            if keys != order:
                return (
                    f"argument '{path_text(path, self.names)}' has its keys in another "
                    f"order ({list(keys)!r}) than the call that traced it "
                    f"({list(order)!r}), and the function iterates it"
                )
        for path in self.contiguous:
            value = value_at(values, path)
            if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
                return (
                    f"argument '{path_text(path, self.names)}' is not C-contiguous (the "
                    "trace took a reshape of it as a view)"
                )
        if not self._pairs:
            return None
        leaves = [value_at(values, p) for p in self.arrays]
        for i, j, updated in self._pairs:
            a, b = leaves[i], leaves[j]
            if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
                continue
            # Two distinct arrays that each own their memory cannot overlap: the common
            # case, decided without asking NumPy to compare their extents.
            if a is not b and a.base is None and b.base is None:
                continue
            if np.may_share_memory(a, b) and np.shares_memory(a, b):
                other = j if updated == i else i
                return (
                    f"argument '{path_text(self.arrays[updated], self.names)}', updated "
                    "in place, shares memory with argument "
                    f"'{path_text(self.arrays[other], self.names)}'"
                )
        return None

    def wrap(
        self, run: Callable[..., Any], eager: Callable[[str, Sequence[Any]], Any]
    ) -> Callable[..., Any]:
        """``run`` preceded by the check; a violating call goes to ``eager(reason, values)``.

        The common call is decided by generated straight-line code: every array argument the
        check compares owns its memory (``base is None``), they are distinct objects, and
        those that must be C-contiguous are. Any other call takes :meth:`violated`'s full
        check (views, NumPy's extent comparison), so the answer is the same either way."""
        violated = self.violated

        def checked(*values: Any) -> Any:
            reason = violated(values)
            if reason is not None:
                return eager(reason, values)
            return run(*values)

        compared = sorted({k for i, j, _ in self._pairs for k in (i, j)})
        paths = [self.arrays[k] for k in compared]
        paths += [p for p in self.contiguous if p not in paths]
        paths += [p for p, _ in self.dict_orders if p not in paths]
        paths += [p for p in self.arrays_only if p not in paths]
        if not paths or any(not _simple_path(p) for p in paths):
            return checked
        names = {p: f"a{n}" for n, p in enumerate(paths)}
        lines = ["def guarded(*values):"]
        lines += [f"    {names[p]} = {_path_source(p)}" for p in paths]
        tests = [
            f"({names[self.arrays[k]]}.__class__ is not _nd or "
            f"{names[self.arrays[k]]}.base is None)"
            for k in compared
        ]
        tests += [
            f"({names[p]}.__class__ is not _nd or {names[p]}.flags.c_contiguous)"
            for p in self.contiguous
        ]
        tests += [f"not isinstance({names[p]}, _generic)" for p in self.arrays_only]
        if len(compared) > 1:
            ids = ", ".join(f"id({names[self.arrays[k]]})" for k in compared)
            tests.append(f"len({{{ids}}}) == {len(compared)}")
        orders = {f"_order{n}": order for n, (_, order) in enumerate(self.dict_orders)}
        tests += [f"tuple({names[p]}) == _order{n}" for n, (p, _) in enumerate(self.dict_orders)]
        lines += [
            "    if " + " and ".join(tests) + ":",
            "        return _run(*values)",
            "    return _checked(*values)",
        ]
        namespace: dict[str, Any] = {
            "_nd": np.ndarray,
            "_generic": np.generic,
            "_run": run,
            "_checked": checked,
            **orders,
        }
        exec(compile("\n".join(lines) + "\n", "<kx-guard>", "exec"), namespace)
        return namespace["guarded"]


class NeedsEagerCall(Exception):
    """A trace failed on an assumption this call breaks: run the call as NumPy itself."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def scalar_at_array_write(
    ctx: TraceContext, values: Sequence[Any], names: Sequence[str] = ()
) -> str | None:
    """Why the call ``values`` breaks the assumption of a trace (finished or not) that
    wrote into a 0-d argument as an array: it passes a NumPy scalar there (None: it does
    not). NumPy checks the destination first (``np.copyto(np.float64(1), big)`` is a
    ``TypeError``, not a shape error), so a trace that failed on such a call must let NumPy
    answer it."""
    for path, tensor in ctx.inputs:
        if id(tensor) in ctx.array_writes and isinstance(value_at(values, path), np.generic):
            return scalar_argument_reason(path, value_at(values, path), names)
    return None


def scalar_argument_reason(path: tuple, value: Any, names: Sequence[str]) -> str:
    """The eager-call reason for a NumPy scalar where the trace writes into an array."""
    return (
        f"argument '{path_text(path, names)}' is a NumPy scalar ({type(value).__name__}), "
        "which the function writes into as an array (NumPy raises or writes into a "
        "temporary copy there)"
    )


def _simple_path(path: tuple) -> bool:
    """Can :func:`_path_source` spell ``path`` (int and str keys, identifier attributes)?"""
    (_, index), *steps = path
    return isinstance(index, int) and all(
        (
            kind == "attr"
            and isinstance(key, str)
            and key.isidentifier()
            and not keyword.iskeyword(key)
        )
        or (kind != "attr" and key.__class__ in (int, str))
        for kind, key in steps
    )


def _path_source(path: tuple) -> str:
    """Source text reading the argument leaf at ``path`` out of ``values``."""
    (_, index), *steps = path
    text = f"values[{index}]"
    for kind, key in steps:
        text += f".{key}" if kind == "attr" else f"[{key!r}]"
    return text


def path_text(path: tuple, names: Sequence[str] = ()) -> str:
    """``x[0]['w']`` style text of an argument path (``#i`` where the parameter's name is
    not given)."""
    (_, index), *steps = path
    text = names[index] if index < len(names) else f"#{index}"
    for kind, key in steps:
        text += f".{key}" if kind == "attr" else f"[{key!r}]"
    return text


__all__ = [
    "CallGuard",
    "NeedsEagerCall",
    "path_text",
    "scalar_argument_reason",
    "scalar_at_array_write",
    "value_at",
]
