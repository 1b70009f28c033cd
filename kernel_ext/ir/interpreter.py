"""The NumPy reference interpreter: the living specification of every op.

``LOWER[op](node)`` returns a plain callable that computes the node from its argument values
(input arrays and inline literals, in ``node.args`` order). :func:`interpret` runs a graph node
by node with these callables; the NumPy backend binds the same callables into generated Python
code, so both executors share one definition of each op's meaning.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .abstract import DynamicIndex
from .graph import Graph, Node
from .ops import OpKind
from .registry import OpTable

Lowering = Callable[[Node], Callable[..., Any]]
#: Each op's reference lowering: ``LOWER[op](node)`` is a callable of its argument values.
LOWER: OpTable[Lowering] = OpTable("reference lowering")
_lower = LOWER.register


def build_index(template: tuple[Any, ...], dyn: Sequence[Any]) -> tuple[Any, ...]:
    """The concrete index: template slots (also inside slices) filled from ``dyn``."""

    def fill(c: Any) -> Any:
        if isinstance(c, DynamicIndex):
            return dyn[c.position - 1]
        if isinstance(c, slice):
            return slice(fill(c.start), fill(c.stop), fill(c.step))
        return c

    return tuple(fill(c) for c in template)


# -- named NumPy functions and data-dependent shapes -------------------------------------------
# Each is NumPy's own function on the static attrs, so results are NumPy's bit for bit; a
# ``None`` dim of the node's abstract value is whatever length NumPy returns at run time.


# -- linalg, fft and array helpers -------------------------------------------------------------
# NumPy's own function with the node's static attrs, argument for argument.


def format_print(template: tuple[Any, ...], values: Sequence[Any], sep: str, end: str) -> str:
    """``kx.print`` text: literal parts as-is, values as NumPy prints them."""
    it = iter(values)
    parts = [str(next(it)) if part is None else part for part in template]
    return sep.join(parts) + end


def tensor_array_write(
    buffer: np.ndarray,
    index: Any,
    value: Any,
    *,
    dtype: np.dtype,
    size: int,
    dynamic_size: bool,
    in_place: bool = False,
) -> np.ndarray:
    """A new buffer with ``value`` at row ``index``; rows are allocated on the first write
    (when the element shape becomes known) and grown geometrically when dynamic. ``buffer``
    ``None`` is an empty one (the gradient's stacking loops start from it). ``in_place``
    (the executors' reinplacing, when nothing reads ``buffer`` afterwards): a write within
    its rows goes into ``buffer`` itself instead of a copy."""
    value = np.asarray(value)
    if buffer is None:
        buffer = np.zeros((0,), dtype)
    if value.dtype != dtype:
        if not np.can_cast(value.dtype, dtype, casting="same_kind"):
            raise TypeError(
                f"TensorArray of dtype {dtype} cannot hold a {value.dtype} value "
                f"(same_kind casting). Fix: .astype(np.{dtype.name}) first."
            )
        value = value.astype(dtype)
    i = int(index)
    if i < 0:
        raise IndexError(f"TensorArray index {i} is negative")
    rows = buffer.shape[0]
    if rows == 0:
        if i >= size and not dynamic_size:
            raise IndexError(
                f"TensorArray index {i} is out of range for size {size}; "
                "Fix: TensorArray(..., dynamic_size=True) to let it grow"
            )
        out = np.zeros((max(size, i + 1),) + value.shape, dtype)
    elif buffer.shape[1:] != value.shape:
        raise ValueError(
            f"TensorArray elements must all have one shape: {buffer.shape[1:]} "
            f"was written before, now {value.shape}"
        )
    elif i >= rows:
        if not dynamic_size:
            raise IndexError(
                f"TensorArray index {i} is out of range for size {rows}; "
                "Fix: TensorArray(..., dynamic_size=True) to let it grow"
            )
        out = np.zeros((max(i + 1, 2 * rows),) + value.shape, dtype)
        out[:rows] = buffer
    else:
        out = buffer if in_place else buffer.copy()
    out[i] = value
    return out


# -- ufunc.at ---------------------------------------------------------------------------------
# Multi-output ufuncs (frexp, modf, divmod) return their tuple through the generic ufunc
# lowering. The reductions, scans and the other ufunc methods are kernel_ext.ops.reductions'.


def interpret(graph: Graph, inputs: Sequence[Any]) -> list[Any]:
    """Run ``graph`` on concrete ``inputs`` (one per placeholder), node by node, with NumPy."""
    if len(inputs) != len(graph.inputs):
        raise ValueError(
            f"graph {graph.name!r} takes {len(graph.inputs)} inputs, got {len(inputs)}"
        )
    env: dict[Node, Any] = dict(zip(graph.inputs, inputs))
    for node in graph.nodes:
        if node.op is OpKind.PLACEHOLDER:
            continue
        fn = LOWER[node.op](node)
        args = [env[a] if isinstance(a, Node) else a for a in node.args]
        env[node] = fn(*args)
    return [env[o] for o in graph.outputs]
