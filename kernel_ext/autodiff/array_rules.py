"""VJP rules of gufuncs and array helpers (copies of elements).

Most are short: ``vdot``/``vecdot``/``matvec``/``vecmat`` are products (the elementwise ones,
``degrees`` to ``divmod``, are registered with each op in :mod:`kernel_ext.ops.elementwise`).
Ops that copy
elements (``diagflat``, ``insert``, ``compress``; ``unique``'s values and ``partition`` in
:mod:`kernel_ext.ops.sorting`) route each output's cotangent back to the element it copies,
found by applying NumPy's own function to an iota array (the positions) where the copy
pattern is static, and otherwise recomputed from the forward result. Ops with a natural
decomposition into ops with rules (``correlate``/``convolve`` as a Toeplitz product,
``interp`` as a gather and a lerp) are differentiated by composition
(:func:`~kernel_ext.autodiff.decompositions.composed`); the order statistics' and scans' are
:mod:`kernel_ext.ops.reductions`'.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import OpKind
from ..trace import Tensor
from .rules import NOTES

K = OpKind


def static_shape(x: Any, what: str) -> tuple:
    shape = x.shape if isinstance(x, Tensor) else np.shape(x)
    if shape is None or None in shape:
        raise NotImplementedError(
            f"the gradient of {what} needs static shapes; give the "
            "arguments static shapes in input_signature"
        )
    return tuple(shape)


def sum_into(positions: np.ndarray, g: Any, size: int, shape: tuple) -> Any:
    """``zeros(shape)`` (flat ``size``) plus each element of ``g`` at its flat position in
    ``positions`` (same shape as ``g``; ``-1``: nowhere)."""
    keep = positions >= 0
    picked = g if keep.all() else g[keep]
    where = positions if keep.all() else positions[keep]
    sums = np.bincount(np.reshape(where, (-1,)), weights=np.reshape(picked, (-1,)), minlength=size)
    return np.reshape(sums, shape).astype(g.dtype)


# -- products ------------------------------------------------------------------------------------


# -- copies ------------------------------------------------------------------------------------


NOTES.update({})

__all__: list[str] = []
