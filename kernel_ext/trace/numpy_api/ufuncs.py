"""Ufunc methods on traced values: ``outer`` (a composition), binding NumPy's own signature.
``reduce``, ``accumulate`` and ``reduceat`` record one op each, and ``at`` one: their entry
points are in their ops' definitions, :mod:`kernel_ext.ops.reductions.ufunc_methods` and
:mod:`kernel_ext.ops.indexing.scatter_adds`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import UFUNC_METHODS, Tensor
from ..variables import Variable
from .common import ndim_of


def _ufunc_outer(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> Any:
    """``ufunc.outer(a, b)`` is ``ufunc(a[..., None, ..., None], b)`` with one new axis per
    dimension of ``b``: NumPy's definition, and the same loop, so it traces (and fuses) as the
    ufunc. Operands are arrays first: a Python number is strong here, as in NumPy."""
    if ufunc.nin != 2 or len(inputs) != 2:
        raise ValueError("outer product only supported for binary functions")
    a, b = (x if isinstance(x, (Tensor, Variable)) else np.asarray(x) for x in inputs)
    nb = ndim_of(b)
    if nb:
        na = ndim_of(a)
        a = np.expand_dims(a, tuple(range(na, na + nb)))
    return ufunc(a, b, **kwargs)


UFUNC_METHODS.update(outer=_ufunc_outer)
