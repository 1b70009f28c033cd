"""Abstract-evaluation rules of indexing: ``getitem``/``setitem`` (shapes probed on zero-strided
views), and the data-dependent lengths (nonzero, argwhere, compress, trim_zeros: ``None``), and
multi-index conversions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ops import OpKind
from .core import (
    INTP,
    AbstractValue,
    Shape,
    abstract_rule,
    broadcast_shapes,
    dtype_of,
    format_shape,
    known_rank,
    normalize_axes,
    normalize_axis,
    shape_of,
)


@dataclass(frozen=True)
class DynamicIndex:
    """A slot of an index template filled at run time by the node's input number ``position``."""

    position: int

    def __repr__(self) -> str:
        return f"${self.position}"


_SENTINELS = (10007, 10009)  # stand-ins for unknown dims in the two shape probes


_FANCY_SENTINELS = (2, 3)  # stand-ins for unknown dims of traced index arrays


def _probe_view(shape: Shape, probe: int) -> np.ndarray:
    dims = tuple(_SENTINELS[probe] if d is None else d for d in shape)
    return np.lib.stride_tricks.as_strided(
        np.zeros(1, np.bool_), shape=dims, strides=(0,) * len(dims), writeable=False
    )


def _probe_component(c: Any, dyn: Sequence[Any], probe: int) -> Any:
    """One index component with traced slots replaced by concrete stand-ins."""
    if isinstance(c, DynamicIndex):
        a = dyn[c.position - 1]
        if a.ndim == 0:
            return 0
        shape = tuple(_FANCY_SENTINELS[probe] if d is None else d for d in a.shape)
        if a.dtype == np.bool_:
            # A traced mask selects a data-dependent count: probe it as int indices whose
            # length differs between probes, so that dimension comes out unknown.
            return tuple(np.zeros(_FANCY_SENTINELS[probe] + 4, np.intp) for _ in shape)
        return np.zeros(shape, np.intp)
    if isinstance(c, slice) and any(isinstance(p, DynamicIndex) for p in (c.start, c.stop, c.step)):
        return slice(0, probe + 1)  # a slice with traced bounds has an unknown length
    return c


def getitem_shape(
    shape: Shape | None, template: tuple[Any, ...], dyn: Sequence[Any]
) -> Shape | None:
    """Result shape of ``x[index]`` (NumPy's basic and advanced rules, asked of NumPy)."""
    if shape is None:
        return None
    try:
        return _getitem_probes(shape, template, dyn)
    except IndexError:
        if 0 not in shape or not any(
            isinstance(c, DynamicIndex) and dyn[c.position - 1].ndim for c in template
        ):
            raise
    # A traced index array into a size-0 axis (x[np.nonzero(m)[0]] with x empty): NumPy takes
    # it when it is empty at run time, but no stand-in index fits a size-0 axis. Probe with
    # those axes of size 1 and of size 2: a dim that differs between them is one of them (0).
    ones = _getitem_probes(tuple(1 if d == 0 else d for d in shape), template, dyn)
    twos = _getitem_probes(tuple(2 if d == 0 else d for d in shape), template, dyn)
    return tuple(x if x == y else 0 for x, y in zip(ones, twos))


def _getitem_probes(shape: Shape, template: tuple[Any, ...], dyn: Sequence[Any]) -> Shape:
    """``getitem_shape`` on two probes whose unknown sizes differ (those dims are None)."""
    results = []
    for probe in (0, 1):
        index: list[Any] = []
        for c in template:
            p = _probe_component(c, dyn, probe)
            if isinstance(p, tuple):
                index.extend(p)
            else:
                index.append(p)
        results.append(_probe_view(shape, probe)[tuple(index)].shape)
    a, b = results
    return tuple(x if x == y else None for x, y in zip(a, b))


@abstract_rule(OpKind.GETITEM)
def _getitem(attrs: dict[str, Any], x: AbstractValue, *dyn: AbstractValue) -> AbstractValue:
    for d in dyn:
        if not (np.issubdtype(d.dtype, np.integer) or d.dtype == np.bool_):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                f"(`None`) and integer or boolean arrays are valid indices; got a "
                f"traced {d}"
            )
    return AbstractValue(getitem_shape(x.shape, attrs["index"], dyn), x.dtype)


@abstract_rule(OpKind.SETITEM)
def _setitem(
    attrs: dict[str, Any], x: AbstractValue, value: Any, *dyn: AbstractValue
) -> AbstractValue:
    target = getitem_shape(x.shape, attrs["index"], dyn)
    vshape = shape_of(value)
    if target is not None and vshape is not None:
        merged = broadcast_shapes(vshape, target)
        if merged is not None and len(merged) > len(target):
            raise ValueError(
                f"could not broadcast input array from shape {format_shape(vshape)} "
                f"into shape {format_shape(target)}"
            )
    # NumPy casts assigned values unsafely (x_int[0] = 1.5 stores 1): no dtype check.
    return x


@abstract_rule(OpKind.NONZERO)
def _nonzero(attrs: dict[str, Any], x: AbstractValue) -> tuple[AbstractValue, ...]:
    shape = known_rank(x, "nonzero")
    if not shape:
        raise ValueError(
            "Calling nonzero on 0d arrays is not allowed. Use "
            "np.atleast_1d(scalar).nonzero() instead."
        )
    return tuple(AbstractValue((None,), INTP) for _ in shape)


@abstract_rule(OpKind.ARGWHERE)
def _argwhere(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    return AbstractValue((None, len(known_rank(x, "argwhere"))), INTP)


@abstract_rule(OpKind.COMPRESS)
def _compress(attrs: dict[str, Any], condition: AbstractValue, a: AbstractValue) -> AbstractValue:
    if condition.ndim not in (None, 1):
        raise ValueError("condition must be a 1-d array")
    axis = attrs.get("axis")
    if axis is None:
        return AbstractValue((None,), a.dtype)
    shape = known_rank(a, "compress")
    axis = normalize_axis(axis, len(shape))
    return AbstractValue(shape[:axis] + (None,) + shape[axis + 1 :], a.dtype)


@abstract_rule(OpKind.TRIM_ZEROS)
def _trim_zeros(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    shape = known_rank(x, "trim_zeros")
    axes = normalize_axes(attrs.get("axis"), len(shape))
    return AbstractValue(tuple(None if i in axes else d for i, d in enumerate(shape)), x.dtype)


@abstract_rule(OpKind.RAVEL_MULTI_INDEX)
def _ravel_multi_index(attrs: dict[str, Any], *index: Any) -> AbstractValue:
    dims = attrs["dims"]
    if len(index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    probe = tuple(np.zeros((1,) * len(shape_of(i) or ()), dtype_of(i)) for i in index)
    kw = {k: v for k, v in attrs.items() if k != "dims"}
    if all(d > 0 for d in dims):
        np.ravel_multi_index(probe, dims, **kw)  # NumPy's checks of dtypes, mode and order
    return AbstractValue(broadcast_shapes(*[shape_of(i) for i in index]), INTP)


@abstract_rule(OpKind.UNRAVEL_INDEX)
def _unravel_index(attrs: dict[str, Any], indices: AbstractValue) -> tuple[AbstractValue, ...]:
    shape = attrs["shape"]
    if indices.dtype.kind not in "iub":
        raise TypeError("only int indices permitted")
    return tuple(AbstractValue(indices.shape, INTP) for _ in shape)
