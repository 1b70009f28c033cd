"""The shape of ``x[index]`` (``getitem_shape``: NumPy's rules, probed on zero-strided views)
and ``DynamicIndex``, the slot of an index template filled at run time.

The indexing ops' abstract-evaluation rules are in :mod:`kernel_ext.ops.indexing`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .core import Shape


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
