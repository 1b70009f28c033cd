"""The gradient formulas of the matrix decompositions (their VJP rules are registered by
:mod:`kernel_ext.ops.linalg.factorisations`) and the rules built by composition.

**Decompositions** (``svd``, ``eigh``/``eigvalsh``, ``cholesky``, ``qr``, ``pinv``,
``lstsq``): the standard reverse-mode formulas (Giles 2008, Townsend 2016, Walter & Lehmann
2018; the ones JAX and PyTorch use), written in NumPy on traced values and batched over
leading axes, so the backward pass stays an ordinary graph. Three facts of NumPy's functions
shape them:

* ``cholesky``, ``eigh``, ``eigvalsh`` and ``pinv(hermitian=True)`` read one triangle of
  their input (the lower one; the upper one for ``cholesky(upper=True)`` and ``UPLO='U'``):
  an element of the other triangle does not change the result, so its gradient is 0, and an
  off-diagonal element of the triangle read stands for both mirror elements, so it gets both
  halves of the symmetric gradient (:func:`read_lower`). This is the derivative of NumPy's
  function, which finite differences see; JAX and TensorFlow give the symmetrised gradient.
* Eigenvectors and singular vectors are defined up to sign, and up to a rotation where
  eigenvalues or singular values repeat. Away from repeats the gradient is that of the vectors
  NumPy (LAPACK) returns. **Repeated values convention:** the terms coupling two equal
  values (``1 / (s_j^2 - s_i^2)``) are dropped (taken as 0). The result is exact for a loss
  that does not depend on the choice of basis inside the repeated subspace (anything built
  from the values alone, or from ``U S Vh``, ``V diag(w) V^T``); for other losses no
  derivative exists.
* ``svd(full_matrices=True)`` of a non-square matrix returns basis vectors of the orthogonal
  complement that no formula determines: only the singular values and the first ``min(m, n)``
  columns of ``U`` (rows of ``Vh``) may carry a gradient; a gradient reaching the others
  raises ``NotImplementedError`` naming the fix (``full_matrices=False``). ``qr(mode=
  'complete')`` of a tall matrix likewise; ``mode='raw'`` (Householder reflectors) raises.

**Composition rules** (:func:`composed`): an op whose derivative is that of a composition of
ops with rules (``lstsq`` is ``pinv(a) @ b``, ``np.pad``'s statistic modes a concatenation
of reductions of edge slices) gets its cotangents by recording that composition in the
current trace and running the backward pass over it: the recomputed values need not be
NumPy's bits, only its derivative.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ..ir import Node, OpKind
from ..trace import Tensor, bind
from .backward import backward, recording_trace
from .rules import NOTES, Cotangent, Primal

K = OpKind


# -- helpers ------------------------------------------------------------------------------------


def outputs(p: Primal) -> list[Any]:
    """The traced results of a multi-result node (``get_output`` each: CSE merges them with
    the forward pass's own)."""
    owner = next((a.context for a in p.args if isinstance(a, Tensor)), recording_trace())
    node = owner.tensor(p.node)
    count = len(cast("tuple", p.node.aval))  # (a tuple of avals, one per result)
    return [bind(K.GET_OUTPUT, (node,), {"index": i}) for i in range(count)]


# -- singular values ----------------------------------------------------------------------------


# -- symmetric eigenproblems and Cholesky -------------------------------------------------------


# -- QR -----------------------------------------------------------------------------------------


# -- pseudo-inverse and least squares -----------------------------------------------------------


def composed(p: Primal, g: Any, fn: Callable[..., Any]) -> list[Cotangent]:
    """The cotangents of ``p``'s arguments through ``fn``, a composition of ops with rules
    that computes the same function (or the same results, for a multi-result node: ``g`` a
    list). ``fn`` is recorded in the current trace and differentiated there."""
    ctx = recording_trace()
    start = len(ctx.graph.nodes)
    lifted = [ctx.tensor(ctx.lift(a)) if isinstance(a, Tensor) else a for a in p.args]
    result = fn(*lifted)
    made = set(ctx.graph.nodes[start:])
    pairs = zip(result, g) if isinstance(g, (list, tuple)) else [(result, g)]
    targets = [(ctx.lift(r), ct) for r, ct in pairs if ct is not None and isinstance(r, Tensor)]
    sources: list[Node | None] = []
    for t in lifted:
        node = t.node if isinstance(t, Tensor) else None
        sources.append(None if node in sources else node)  # an operand given twice: once
    found = backward(ctx, targets, made.__contains__, [s for s in sources if s is not None])
    return [None if s is None else found.get(s) for s in sources]


# -- order statistics, scans --------------------------------------------------------------------


def route_along_axis(source: Any, g: Any, shape: tuple, axis: int) -> Any:
    """``zeros(shape)`` plus each element of ``g`` at its own position with its index along
    ``axis`` replaced by ``source``'s (a traced integer array of ``shape``): a scatter-add
    (np.bincount of flat positions: repeated sources add up)."""
    size = math.prod(shape)
    stride = math.prod(shape[axis + 1 :])
    own = np.arange(size).reshape(shape)
    along = np.arange(shape[axis]).reshape((shape[axis],) + (1,) * (len(shape) - axis - 1))
    flat = (own - along * stride) + source * stride
    sums = np.bincount(np.reshape(flat, (-1,)), weights=np.reshape(g, (-1,)), minlength=size)
    return np.reshape(sums, shape).astype(g.dtype)


NOTES.update({})


__all__ = [
    "composed",
    "outputs",
    "route_along_axis",
]
