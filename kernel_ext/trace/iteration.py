"""``kx.range`` and ``kx.TensorArray``: what a graph loop iterates over and what it collects.

``kx.range`` with traced bounds is a graph ``arange`` (with Python bounds, Python's
``range``); a ``TensorArray`` is a buffer and a length that a loop body writes row by row
(``tensor_array_write``), carried through ``while_loop`` as two loop variables.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir import OpKind
from ..ir.interpreter import tensor_array_write
from .context import bind, current_context
from .tensor import Tensor
from .variables import resolve


def _range_dtype(values: Sequence[Any]) -> np.dtype:
    """tf.range's rule in NumPy terms: Python ints are int32, Python floats float32, arrays
    keep their dtype; mixed arguments promote."""
    dtypes: list[np.dtype] = []
    for v in values:
        if isinstance(v, (bool, int)):
            dtypes.append(np.dtype(np.int32))
        elif isinstance(v, float):
            dtypes.append(np.dtype(np.float32))
        else:
            dtypes.append(np.dtype(v.dtype))
    return np.result_type(*dtypes)


def kx_range(
    start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None, name: str = "range"
) -> Any:
    """``tf.range`` for NumPy: ``start, start + delta, ...`` below ``limit``.

    Values take their arguments' dtype (int32 in, int32 out; Python ints count as int32, as in
    TensorFlow). In a traced function ``for i in kx.range(n)`` is always a graph loop.
    """
    if limit is None:
        start, limit = 0, start
    args = [resolve(a) for a in (start, limit, delta)]
    out_dtype = np.dtype(dtype) if dtype is not None else _range_dtype(args)
    ctx = current_context()
    if ctx is None:
        bounds: list[Any] = [np.asarray(a) for a in args]
        return np.arange(*bounds, dtype=out_dtype)
    if not any(isinstance(a, Tensor) for a in args):
        return ctx.tensor(ctx.graph.constant(np.arange(*args, dtype=out_dtype)))
    return bind(OpKind.ARANGE, args, {"dtype": out_dtype}, name=name)


class TensorArray:
    """A list of same-shaped arrays that can be written inside graph loops (``tf.TensorArray``).

    Writes are functional, as in TensorFlow: ``ta = ta.write(i, value)``. ``stack()`` returns
    the elements as one array; ``dynamic_size=True`` lets writes past ``size`` grow it.
    """

    def __init__(
        self, dtype: Any, size: int = 0, dynamic_size: bool = False, element_shape: Any = None
    ) -> None:
        self.dtype = np.dtype(dtype)
        self._size = int(size)
        self.dynamic_size = bool(dynamic_size)
        self.buffer: Any = np.zeros((0,), self.dtype)
        self.length: Any = np.int64(size)

    def static_parts(self) -> tuple:
        """What does not change between writes: ``(dtype, size, dynamic_size)`` (the loop
        machinery carries ``buffer`` and ``length`` as values, these as structure)."""
        return (self.dtype, self._size, self.dynamic_size)

    @classmethod
    def from_parts(cls, static: tuple, buffer: Any, length: Any) -> TensorArray:
        """A TensorArray from :meth:`static_parts`, an element buffer and a length."""
        ta = cls.__new__(cls)
        ta.dtype, ta._size, ta.dynamic_size = static
        ta.buffer, ta.length = buffer, length
        return ta

    def write(self, index: Any, value: Any) -> TensorArray:
        """A TensorArray with ``value`` at ``index`` (assign the result: ``ta = ta.write(...)``)."""
        attrs = {"dtype": self.dtype, "size": self._size, "dynamic_size": self.dynamic_size}
        if current_context() is None:
            written = tensor_array_write(np.asarray(self.buffer), index, np.asarray(value), **attrs)
            length = (
                np.maximum(self.length, np.int64(index) + 1) if self.dynamic_size else self.length
            )
            return TensorArray.from_parts(self.static_parts(), written, np.int64(length))
        buffer = bind(OpKind.TENSOR_ARRAY_WRITE, (self.buffer, index, value), attrs)
        length = self.length
        if self.dynamic_size:
            length = np.maximum(
                length,
                np.add(
                    np.asarray(index, np.int64)
                    if not isinstance(index, Tensor)
                    else index.astype(np.int64),
                    1,
                ),
            )
        return TensorArray.from_parts(self.static_parts(), buffer, length)

    def read(self, index: Any) -> Any:
        return self.buffer[index]

    def stack(self) -> Any:
        """All elements as one array of shape ``(size, *element_shape)``."""
        if current_context() is None:
            return np.asarray(self.buffer)[: int(self.length)]
        return self.buffer[: self.length]

    def size(self) -> Any:
        return self.length

    def __repr__(self) -> str:
        return f"<kx.TensorArray dtype={self.dtype.name} dynamic_size={self.dynamic_size}>"
