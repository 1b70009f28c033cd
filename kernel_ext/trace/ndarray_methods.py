"""The ndarray methods of a traced value that are NumPy functions of it (``x.reshape``,
``x.sum``, ``x.argsort``, ``x.cumsum``, ...): each takes ndarray's documented parameters and
hands every one on to the NumPy function, whose handler runs NumPy's own call for a parameter
it does not implement (signatures.py): none is dropped.

:class:`NdarrayMethods` is a base of :class:`~kernel_ext.trace.tensor.Tensor`; the methods
that record an op themselves (``astype``, ``copy``, ``put``, ...) are on ``Tensor``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir import NDARRAY_METHODS, OpGroup
from .signatures import method_signature

if TYPE_CHECKING:
    from .tensor import Tensor


class NdarrayMethods:
    """ndarray's methods as NumPy functions of ``self`` (a mixin of ``Tensor``)."""

    __slots__ = ()

    def reshape(self, *shape: Any, order: str = "C", copy: Any = None) -> Tensor:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return np.reshape(self, shape, order=order, copy=copy)

    def transpose(self, *axes: Any) -> Tensor:
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return np.transpose(self, axes if axes else None)

    def squeeze(self, axis: Any = None) -> Tensor:
        return np.squeeze(self, axis=axis)

    def swapaxes(self, a: int, b: int) -> Tensor:
        return np.swapaxes(self, a, b)

    def dot(self, b: Any, out: Any = None) -> Tensor:
        return np.dot(self, b, out=out)

    def clip(self, min: Any = None, max: Any = None, out: Any = None, **kwargs: Any) -> Tensor:
        # (ndarray.clip: either bound may be left out; both None is NumPy's identity)
        return np.clip(self, min, max, out=out, **kwargs)

    def round(self, decimals: int = 0, out: Any = None) -> Tensor:
        return np.round(self, decimals, out=out)

    def conj(self) -> Tensor:
        return np.conjugate(self)

    def take(
        self, indices: Any, axis: int | None = None, out: Any = None, mode: str = "raise"
    ) -> Tensor:
        return np.take(self, indices, axis=axis, out=out, mode=mode)

    def argsort(
        self,
        axis: int | None = -1,
        kind: str | None = None,
        order: Any = None,
        *,
        stable: bool | None = None,
    ) -> Tensor:
        return np.argsort(self, axis=axis, kind=kind, order=order, stable=stable)

    def sort(
        self,
        axis: int = -1,
        kind: str | None = None,
        order: Any = None,
        *,
        stable: bool | None = None,
    ) -> None:
        self._rebind(np.sort(self, axis=axis, kind=kind, order=order, stable=stable))

    # more ndarray methods and attributes, as NumPy defines them
    @property
    def real(self) -> Tensor:
        return np.real(self)

    @property
    def imag(self) -> Tensor:
        return np.imag(self)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int | None:
        size = self.size
        return None if size is None else size * self.dtype.itemsize

    @property
    def base(self) -> Tensor | None:
        """The array a view looks into (None for an array that owns its data), as NumPy's."""
        return self._root

    def conjugate(self) -> Tensor:
        return np.conjugate(self)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
        return np.diagonal(self, offset, axis1, axis2)

    def trace(
        self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None
    ) -> Tensor:
        return np.trace(self, offset, axis1, axis2, dtype, out)

    def nonzero(self) -> tuple:
        return np.nonzero(self)

    def repeat(self, repeats: Any, axis: Any = None) -> Tensor:
        return np.repeat(self, repeats, axis)

    def searchsorted(self, v: Any, side: str = "left", sorter: Any = None) -> Tensor:
        return np.searchsorted(self, v, side, sorter)

    def compress(self, condition: Any, axis: Any = None, out: Any = None) -> Tensor:
        return np.compress(condition, self, axis, out)

    def choose(self, choices: Any, out: Any = None, mode: str = "raise") -> Tensor:
        return np.choose(self, choices, out, mode)

    def argpartition(
        self, kth: Any, axis: int = -1, kind: str = "introselect", order: Any = None
    ) -> Tensor:
        return np.argpartition(self, kth, axis, kind, order)

    def partition(
        self, kth: Any, axis: int = -1, kind: str = "introselect", order: Any = None
    ) -> None:
        """``x.partition(kth)``: NumPy's in-place partition (the array takes its result)."""
        self.assign(np.partition(self, kth, axis, kind, order))

    def cumsum(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Tensor:
        return np.cumsum(self, axis=axis, dtype=dtype, out=out)

    def cumprod(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Tensor:
        return np.cumprod(self, axis=axis, dtype=dtype, out=out)


def _reduction_method(name: str) -> Callable[..., Any]:
    fn = getattr(np, name)
    signature = method_signature(fn)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:  # the method's own parameters (x.std has no correction=, np.std has)
            signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{name}() {e}") from None
        return fn(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"Traced ``np.{name}``."
    return method


# Every reduction op that is an ndarray method is the method of its name (the op table's
# naming rule; nansum & co. are NumPy functions only, as on ndarray).
for _kind in NDARRAY_METHODS:
    if _kind.group is OpGroup.REDUCTION:
        setattr(NdarrayMethods, _kind.value, _reduction_method(_kind.value))
