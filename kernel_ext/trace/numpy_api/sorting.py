"""Sorting, searching and sets: ``np.sort``/``np.argsort``, ``np.partition``, ``np.unique`` and
the set functions, ``np.searchsorted``, ``np.digitize`` and ``np.lexsort`` (the bit packers'
entry points live with their ops, in :mod:`kernel_ext.ops.shape.bits`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir import OpKind
from ..context import bind
from ..opaque import numpy_call
from ..tensor import Tensor
from ..variables import Variable
from ..zero_d import mark_array
from .common import (
    Opaque,
    array_arg,
    bind_outputs,
    composition,
    implements,
    is_traced,
    ndim_of,
    static_attr,
)


def _sort_attrs(axis: Any, kind: Any, stable: Any) -> dict:
    """The static attrs of a sort: the axis, and ``kind``/``stable`` when given (they decide
    the order of ties, so the graph runs NumPy's sort with the same ones)."""
    attrs: dict[str, Any] = {"axis": None if axis is None else int(axis)}
    if kind is not None:
        attrs["kind"] = str(kind)
    if stable is not None:
        attrs["stable"] = bool(stable)
    return attrs


@implements(np.sort)
def _sort(a: Any, axis: Any = -1, kind: Any = None, *, stable: Any = None) -> Any:
    if ndim_of(a) == 0:  # (NumPy's own rules for a 0-d input: its call)
        return numpy_call(np.sort, (a,), {"axis": axis, "kind": kind, "stable": stable})
    return bind(OpKind.SORT, (a,), _sort_attrs(axis, kind, stable))


@implements(np.argsort)
def _argsort(a: Any, axis: Any = -1, kind: Any = None, *, stable: Any = None) -> Any:
    if ndim_of(a) == 0:  # (NumPy's argsort of a 0-d array is array([0]): its call)
        return numpy_call(np.argsort, (a,), {"axis": axis, "kind": kind, "stable": stable})
    return bind(OpKind.ARGSORT, (a,), _sort_attrs(axis, kind, stable))


@implements(np.argpartition)
def _argpartition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect") -> Any:
    if is_traced(kth):
        return numpy_call(np.argpartition, (a, kth), {"axis": axis, "kind": kind})
    return bind(
        OpKind.ARGPARTITION,
        (a,),
        {"kth": static_attr(kth), "kind": kind, "axis": None if axis is None else int(axis)},
    )


@implements(np.unique)
def _unique(
    ar: Any,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: Any = None,
    *,
    equal_nan: bool = True,
    sorted: bool = True,
) -> Any:
    if axis is not None:
        return numpy_call(
            np.unique,
            (ar,),
            {
                "return_index": return_index,
                "return_inverse": return_inverse,
                "return_counts": return_counts,
                "axis": axis,
                "equal_nan": equal_nan,
                "sorted": sorted,
            },
        )
    attrs = {
        "return_index": bool(return_index),
        "return_inverse": bool(return_inverse),
        "return_counts": bool(return_counts),
        "equal_nan": bool(equal_nan),
    }
    if not sorted:
        attrs["sorted"] = False
    if not (return_index or return_inverse or return_counts):
        return bind(OpKind.UNIQUE, (ar,), attrs)
    outputs = bind_outputs(OpKind.UNIQUE, (ar,), attrs, "unique")
    if return_inverse:  # NumPy reshapes it to the input's shape: a 0-d input gives a 0-d array
        mark_array(outputs[1 + bool(return_index)])
    return tuple(outputs)


@composition(np.sort_complex)
def _sort_complex(a: Any) -> Any:
    b = np.sort(array_arg(a))
    if b.dtype.kind == "c":
        return b
    return b.astype("F" if b.dtype.char in "bhBH" else "G" if b.dtype.char == "g" else "D")


@implements(np.isin)
def _isin(
    element: Any,
    test_elements: Any,
    assume_unique: bool = False,
    invert: bool = False,
    *,
    kind: Any = None,
) -> Any:
    attrs: dict[str, Any] = {"invert": bool(invert)}
    if assume_unique:
        attrs["assume_unique"] = True
    if kind is not None:
        attrs["kind"] = kind
    return bind(OpKind.ISIN, (element, test_elements), attrs)


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


@implements(np.searchsorted)
def _searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got '{side}')")
    return bind(OpKind.SEARCHSORTED, (a, v, sorter), {"side": side})


@implements(np.digitize)
def _digitize(x: Any, bins: Any, right: bool = False) -> Any:
    return bind(OpKind.DIGITIZE, (x, bins), {"right": bool(right)})


@implements(np.partition)
def _partition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect") -> Any:
    if is_traced(kth):
        return numpy_call(np.partition, (a, kth), {"axis": axis, "kind": kind})
    return bind(
        OpKind.PARTITION,
        (a,),
        {"kth": static_attr(kth), "kind": kind, "axis": None if axis is None else int(axis)},
    )


@implements(np.lexsort)
def _lexsort(keys: Any, axis: int = -1) -> Any:
    if isinstance(keys, (Tensor, Variable, np.ndarray)):  # one array: its rows are the keys
        return bind(OpKind.LEXSORT, (keys,), {"axis": int(axis), "array": True})
    return bind(OpKind.LEXSORT, tuple(array_arg(k) for k in keys), {"axis": int(axis)})
