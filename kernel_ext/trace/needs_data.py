"""The ndarray members that need an array's data (``bool(x)``, ``int(x)``, ``np.asarray(x)``,
``x.numpy()``, ``x.item()``, ``x.strides``, ...): on a traced value each raises an error that
says why (the data exists only when the graph runs) and what to do instead.

:class:`NeedsData` is a base of :class:`~kernel_ext.trace.tensor.Tensor`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .. import errors
from .describe import describe_tensor, refused_conversion, usage_site, user_frame_description

if TYPE_CHECKING:
    from .tensor import Tensor

#: How to fill a buffer with traced values when AutoGraph cannot rewrite ``buf[i] = t``.
PLAIN_BUFFER_FIX = (
    "fill a buffer made with np.empty/np.ndarray/np.zeros, keep AutoGraph on (it records "
    "buf[i] = t) or build the array from traced values (np.stack, np.where, np.concatenate)."
)


class NeedsData:
    """The members of a traced value that would need its data (a mixin of ``Tensor``, whose
    ``context``, ``node``, ``__getitem__`` and ``_static_length`` they use)."""

    __slots__ = ()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        tensor = cast("Tensor", self)  # (the Tensor this is a base of)
        raise errors.TracingConversionError(
            f"NumPy tried to convert the traced value {describe_tensor(tensor)} into a concrete "
            f"array at {user_frame_description()} while tracing '{tensor.context.function_name}'. "
            "np.asarray/np.array, NumPy scalar types (np.float64(x)), writing into a plain "
            "NumPy array (buf[i] = x), Python containers of traced values and C extensions need "
            "real data, which a traced value does not have until the graph runs. Fix: keep "
            "AutoGraph on (kx.function's default), which records these; or "
            "use NumPy functions directly on the traced value (they are recorded into the "
            "graph), or do this outside the kx.function on its returned arrays."
        )

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: Any = None,
        dl_device: Any = None,
        copy: Any = None,
    ) -> Any:
        """DLPack export needs the data's memory, which a traced value does not have; with
        AutoGraph on, ``np.from_dlpack(x)`` never gets here (it is a view of ``x``)."""
        tensor = cast("Tensor", self)  # (the Tensor this is a base of)
        raise errors.TracingConversionError(
            f"np.from_dlpack (or another DLPack consumer) asked for the memory of the traced "
            f"value {describe_tensor(tensor)} at {user_frame_description()} while tracing "
            f"'{tensor.context.function_name}'; it has none until the graph runs. Fix: keep "
            "AutoGraph on (kx.function's default), which makes np.from_dlpack(x) a view of x "
            "as NumPy does, or use x itself (np.asarray(x))."
        )

    def __dlpack_device__(self) -> tuple[int, int]:
        """The CPU (``kDLCPU``, device 0): NumPy arrays live there, as this value will."""
        return (1, 0)

    def _needs_value(self, what: str, fix: str) -> errors.TracedBoolError:
        where, _ = usage_site()
        tensor = cast("Tensor", self)  # (the Tensor this is a base of)
        return errors.TracedBoolError(
            f"{what} a traced value {describe_tensor(tensor)} at {where} in "
            f"'{tensor.context.function_name}' needs its data, which only exists when the graph "
            f"runs. {fix}"
        )

    def __bool__(self) -> bool:
        _, converted = usage_site()
        refused = refused_conversion()
        if converted and refused is None:
            how = (
                "AutoGraph is on, but this use is not one it converts: only `if`/`while`/"
                "`for` statements, conditional expressions (`a if c else b`), `and`/`or`/"
                "`not`, `assert` and the builtins max/min/sum/any/all become graph operations; "
                "a comprehension's `if`, `bool()`, and code in functions AutoGraph "
                "does not convert (the standard library, C extensions) need a Python bool. "
                "Fix: write the test as an `if` statement, or use np.where(cond, a, b) / "
                "kx.cond(pred, true_fn, false_fn); check data outside the kx.function."
            )
        elif refused is not None:
            how = (
                f"AutoGraph is on, but it left '{refused[0]}' unconverted ({refused[1]}), "
                "so its `if`/`while`/`and`/`or`/`not` on a traced value run as Python. "
                "Fix: make its source available as written (define it in a file or a "
                "notebook cell, not with exec), or use np.where(cond, a, b) / "
                "kx.cond(pred, true_fn, false_fn)."
            )
        else:
            how = (
                "This happens with `if`/`while`/`and`/`or`/`not` on a traced value while "
                "AutoGraph is off (kx.function(autograph=False)). Fix: keep AutoGraph on, "
                "or use np.where(cond, a, b) / kx.cond(pred, true_fn, false_fn)."
            )
        raise self._needs_value("Using as a Python bool", how)

    def __iter__(self) -> Any:
        """``x[0], x[1], ...`` along the first dimension, as iterating an ndarray yields.

        Each item is read when the iterator reaches it (so a write to ``x`` between items is
        seen, as with NumPy's views). The first dimension must be static; a ``for`` statement
        over the traced value itself is converted by AutoGraph and works without that.
        """
        tensor = cast("Tensor", self)  # (the Tensor this is a base of)
        n = tensor._static_length("Iterating in Python over")
        return (tensor[i] for i in range(n))

    def __index__(self) -> int:
        raise self._needs_value(
            "Using as a Python int (a list or plain-array index, a shape, a count)",
            "Fix: pass the count as a Python int (or loop with kx.range(n)); index a plain "
            "array with np.take(array, i), which the graph records; for a size known only at "
            "run time (len(x[mask])), make the array from the data itself "
            "(np.zeros_like(x[mask]), np.full_like(x[mask], v)).",
        )

    # (NumPy calls these too when a traced value is written into one element of a plain
    # array, ``buf[i] = t`` without AutoGraph, and reports "setting an array element with a
    # sequence" with this error as its cause: the messages say so)
    def __int__(self) -> int:
        raise self._needs_value(
            "int() of (or writing into a plain integer array)",
            "Fix: use x.astype(np.int64) to stay in the graph. To " + PLAIN_BUFFER_FIX,
        )

    def __float__(self) -> float:
        raise self._needs_value(
            "float() of (or writing into a plain float array)",
            "Fix: use x.astype(np.float64) to stay in the graph. To " + PLAIN_BUFFER_FIX,
        )

    def __complex__(self) -> complex:
        raise self._needs_value(
            "complex() of (or writing into a plain complex array)",
            "Fix: use x.astype(np.complex128). To " + PLAIN_BUFFER_FIX,
        )

    def item(self, *args: Any) -> Any:
        raise self._no_python_value("item()")

    def numpy(self) -> np.ndarray:
        tensor = cast("Tensor", self)  # (the Tensor this is a base of)
        if not tensor.context.active:
            raise errors.SymbolicValueError(
                f"{describe_tensor(tensor)} leaked out of its trace of "
                f"'{tensor.context.function_name}' and has no value: .numpy() is not available. "
                "Fix: return it from the function; kx.function results are already NumPy "
                "arrays."
            )
        raise errors.SymbolicValueError(
            f"{describe_tensor(tensor)} is a traced value inside "
            f"'{tensor.context.function_name}': it has no value yet, so .numpy() is not "
            "available. Fix: return it (results are NumPy arrays) or print it at run time with "
            "kx.print(...)."
        )

    def tolist(self) -> list[Any]:
        raise self._no_python_value("tolist()")

    def _no_python_value(self, method: str) -> errors.SymbolicValueError:
        """The error of a method that would turn the traced value into Python values, naming
        the method the user called."""
        tensor = cast("Tensor", self)  # (the Tensor this is a base of)
        return errors.SymbolicValueError(
            f"{describe_tensor(tensor)}.{method} has no value while tracing; return the value "
            "from the function instead (results come back as NumPy values)."
        )


def _memory_attribute(name: str) -> property:
    def get(self: Any) -> Any:
        raise errors.SymbolicValueError(
            f"{describe_tensor(self)}.{name} describes memory that a traced value does not "
            f"have while '{self.context.function_name}' is traced (the graph decides layouts "
            "when it runs). Fix: compute with NumPy operations instead, or use it outside the "
            "kx.function on the returned arrays."
        )

    return property(get)


for _name in (
    "flags",
    "strides",
    "ctypes",
    "data",
    "flat",
    "view",
    "tobytes",
    "tofile",
    "dump",
    "dumps",
    "byteswap",
    "resize",
    "setflags",
    "getfield",
    "setfield",
    "device",
    "to_device",
):
    setattr(NeedsData, _name, _memory_attribute(_name))
