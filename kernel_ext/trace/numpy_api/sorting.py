"""Sets and sorting as compositions: ``np.sort_complex``, ``np.setdiff1d``, ``np.intersect1d``,
``np.setxor1d``. The entry points of sort, unique, isin, searchsorted and the other sorting ops
are in :mod:`kernel_ext.ops.sorting`, the bit packers' in :mod:`kernel_ext.ops.shape.bits`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import HANDLERS
from .common import Opaque, array_arg, composition

# The set compositions call np.unique and np.isin as NumPy's own set functions do: through their
# handlers (kernel_ext.ops.sorting.sets), read from the table when called, once it is filled.


def _unique(ar: Any) -> Any:
    return HANDLERS[np.unique](ar)


def _isin(element: Any, test_elements: Any, assume_unique: bool, invert: bool) -> Any:
    return HANDLERS[np.isin](element, test_elements, assume_unique=assume_unique, invert=invert)


@composition(np.sort_complex)
def _sort_complex(a: Any) -> Any:
    b = np.sort(array_arg(a))
    if b.dtype.kind == "c":
        return b
    return b.astype("F" if b.dtype.char in "bhBH" else "G" if b.dtype.char == "g" else "D")


@composition(np.setdiff1d)
def _setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Any:
    ar1 = np.ravel(array_arg(ar1)) if assume_unique else _unique(array_arg(ar1))
    if not assume_unique:
        ar2 = _unique(array_arg(ar2))
    return ar1[_isin(ar1, ar2, assume_unique=True, invert=True)]


@composition(np.intersect1d)
def _intersect1d(
    ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False
) -> Any:
    if return_indices:
        raise Opaque
    ar1, ar2 = array_arg(ar1), array_arg(ar2)
    if assume_unique:
        ar1, ar2 = np.ravel(ar1), np.ravel(ar2)
    else:
        ar1, ar2 = _unique(ar1), _unique(ar2)
    aux = np.sort(np.concatenate((ar1, ar2)))
    return aux[:-1][np.equal(aux[1:], aux[:-1])]


@composition(np.setxor1d)
def _setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False) -> Any:
    """NumPy's setxor1d: the sorted values that differ from both neighbours (written so an
    empty result needs no length check: the edge flags are ``aux[:1]``-sized)."""
    if not assume_unique:
        ar1, ar2 = _unique(array_arg(ar1)), _unique(array_arg(ar2))
    aux = np.sort(np.concatenate((ar1, ar2), axis=None))
    edge = np.ones_like(aux[:1], dtype=bool)
    differs = np.not_equal(aux[1:], aux[:-1])
    keep = np.logical_and(np.concatenate((edge, differs)), np.concatenate((differs, edge)))
    return aux[keep]
