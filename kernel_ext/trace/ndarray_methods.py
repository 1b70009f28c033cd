"""The ndarray methods of a traced value that are NumPy functions of it (``x.reshape``,
``x.sum``, ``x.argsort``, ``x.cumsum``, ...): each takes ndarray's documented parameters and
hands every one on to the NumPy function, whose handler runs NumPy's own call for a parameter
it does not implement (signatures.py): none is dropped.

:class:`NdarrayMethods` is a base of :class:`~kernel_ext.trace.tensor.Tensor`; the methods
that record an op themselves (``astype``, ``copy``, ``put``, ...) are on ``Tensor``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from ..ir import NDARRAY_METHODS, OpGroup
from .signatures import method_signature

if TYPE_CHECKING:
    from .tensor import Tensor

# The string options as ndarray's methods type them (NumPy checks the value at run time).
SortKind = Literal["quicksort", "mergesort", "heapsort", "stable"]
SortSide = Literal["left", "right"]
ReshapeOrder = Literal["C", "F", "A"]
IndexMode = Literal["raise", "wrap", "clip"]
PartitionKind = Literal["introselect"]


class NdarrayMethods:
    """ndarray's methods as NumPy functions of ``self`` (a mixin of ``Tensor``)."""

    __slots__ = ()

    if TYPE_CHECKING:
        # Tensor's (NeedsData's), through which NumPy's stubs take ``self`` as array-like. At
        # run time NumPy hands a traced value to the function's handler
        # (``Tensor.__array_function__``), which returns a Tensor: hence each result's cast.
        def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray: ...

    def reshape(self, *shape: Any, order: ReshapeOrder = "C", copy: Any = None) -> Tensor:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return cast("Tensor", np.reshape(self, shape, order=order, copy=copy))

    def transpose(self, *axes: Any) -> Tensor:
        given: Sequence[Any] | None = axes
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            given = axes[0]
        return cast("Tensor", np.transpose(self, given if given else None))

    def squeeze(self, axis: Any = None) -> Tensor:
        return cast("Tensor", np.squeeze(self, axis=axis))

    def swapaxes(self, a: int, b: int) -> Tensor:
        return cast("Tensor", np.swapaxes(self, a, b))

    def dot(self, b: Any, out: Any = None) -> Tensor:
        return cast("Tensor", np.dot(self, b, out=out))

    def clip(self, min: Any = None, max: Any = None, out: Any = None, **kwargs: Any) -> Tensor:
        # (ndarray.clip: either bound may be left out; both None is NumPy's identity)
        return cast("Tensor", np.clip(self, min, max, out=out, **kwargs))

    def round(self, decimals: int = 0, out: Any = None) -> Tensor:
        return cast("Tensor", np.round(self, decimals, out=out))

    def conj(self) -> Tensor:
        return cast("Tensor", np.conjugate(self))

    def take(
        self, indices: Any, axis: int | None = None, out: Any = None, mode: IndexMode = "raise"
    ) -> Tensor:
        return cast("Tensor", np.take(self, indices, axis=axis, out=out, mode=mode))

    def argsort(
        self,
        axis: int | None = -1,
        kind: SortKind | None = None,
        order: Any = None,
        *,
        stable: bool | None = None,
    ) -> Tensor:
        return cast("Tensor", np.argsort(self, axis=axis, kind=kind, order=order, stable=stable))

    def sort(
        self,
        axis: int = -1,
        kind: SortKind | None = None,
        order: Any = None,
        *,
        stable: bool | None = None,
    ) -> None:
        cast("Tensor", self)._rebind(
            np.sort(self, axis=axis, kind=kind, order=order, stable=stable)
        )

    # more ndarray methods and attributes, as NumPy defines them
    @property
    def real(self) -> Tensor:
        return np.real(self)

    @property
    def imag(self) -> Tensor:
        return np.imag(self)

    @property
    def itemsize(self) -> int:
        return cast("Tensor", self).dtype.itemsize

    @property
    def nbytes(self) -> int | None:
        tensor = cast("Tensor", self)
        size = tensor.size
        return None if size is None else size * tensor.dtype.itemsize

    @property
    def base(self) -> Tensor | None:
        """The array a view looks into (None for an array that owns its data), as NumPy's."""
        return cast("Tensor", self)._root

    def conjugate(self) -> Tensor:
        return cast("Tensor", np.conjugate(self))

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
        return cast("Tensor", np.diagonal(self, offset, axis1, axis2))

    def trace(
        self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None
    ) -> Tensor:
        return cast("Tensor", np.trace(self, offset, axis1, axis2, dtype, out))

    def nonzero(self) -> tuple[Tensor, ...]:
        return cast("tuple[Tensor, ...]", np.nonzero(self))

    def repeat(self, repeats: Any, axis: Any = None) -> Tensor:
        return cast("Tensor", np.repeat(self, repeats, axis))

    def searchsorted(self, v: Any, side: SortSide = "left", sorter: Any = None) -> Tensor:
        return cast("Tensor", np.searchsorted(self, v, side, sorter))

    def compress(self, condition: Any, axis: Any = None, out: Any = None) -> Tensor:
        return cast("Tensor", np.compress(condition, self, axis, out))

    def choose(self, choices: Any, out: Any = None, mode: IndexMode = "raise") -> Tensor:
        return cast("Tensor", np.choose(self, choices, out, mode))

    def argpartition(
        self, kth: Any, axis: int = -1, kind: PartitionKind = "introselect", order: Any = None
    ) -> Tensor:
        return cast("Tensor", np.argpartition(self, kth, axis, kind, order))

    def partition(
        self, kth: Any, axis: int = -1, kind: PartitionKind = "introselect", order: Any = None
    ) -> None:
        """``x.partition(kth)``: NumPy's in-place partition (the array takes its result)."""
        cast("Tensor", self).assign(cast("Tensor", np.partition(self, kth, axis, kind, order)))

    def cumsum(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Tensor:
        return cast("Tensor", np.cumsum(self, axis=axis, dtype=dtype, out=out))

    def cumprod(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Tensor:
        return cast("Tensor", np.cumprod(self, axis=axis, dtype=dtype, out=out))


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
