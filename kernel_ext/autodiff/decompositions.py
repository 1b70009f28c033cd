"""VJP rules of the matrix decompositions and the rules built by composition.

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
from .rules import NOTES, Cotangent, Primal, rule

K = OpKind


# -- helpers ------------------------------------------------------------------------------------


def _t(a: Any) -> Any:
    """Transpose of the last two axes (a batch of matrices)."""
    return np.swapaxes(a, -1, -2)


def _diag(v: Any) -> Any:
    """A batch of diagonal matrices with ``v`` (``(..., k)``) on the diagonal."""
    return np.expand_dims(v, -2) * np.eye(v.shape[-1], dtype=v.dtype)


def _inverse_gaps(d: Any) -> Any:
    """``1 / d`` elementwise, 0 where ``d`` is 0 (the diagonal, and repeated values: the
    convention in the module docstring)."""
    zero = d == 0
    return np.where(zero, 0.0, 1.0 / np.where(zero, 1.0, d))


def read_lower(g: Any) -> Any:
    """The gradient with respect to an input of which NumPy reads the lower triangle, given a
    gradient ``g`` valid for symmetric perturbations: each strictly lower element stands for
    itself and its mirror."""
    return np.tril(g) + np.tril(_t(g), -1)


def read_upper(g: Any) -> Any:
    """As :func:`read_lower`, for an input of which NumPy reads the upper triangle."""
    return np.triu(g) + np.triu(_t(g), 1)


def _symmetric(g: Any) -> Any:
    return 0.5 * (g + _t(g))


def outputs(p: Primal) -> list[Any]:
    """The traced results of a multi-result node (``get_output`` each: CSE merges them with
    the forward pass's own)."""
    owner = next((a.context for a in p.args if isinstance(a, Tensor)), recording_trace())
    node = owner.tensor(p.node)
    count = len(cast("tuple", p.node.aval))  # (a tuple of avals, one per result)
    return [bind(K.GET_OUTPUT, (node,), {"index": i}) for i in range(count)]


def _matrix_dims(x: Any, fn: str) -> tuple[int, int]:
    """The static sizes of the matrix axes of ``x`` (a decomposition's gradient needs them)."""
    m, n = x.shape[-2:]
    if m is None or n is None:
        raise NotImplementedError(
            f"the gradient of np.linalg.{fn} needs the static sizes of "
            "the matrix axes; give the argument a static shape in "
            "input_signature"
        )
    return m, n


# -- singular values ----------------------------------------------------------------------------


def svd_cotangent(a: Any, u: Any, s: Any, vh: Any, gu: Any, gs: Any, gvh: Any) -> Any:
    """The cotangent of ``a`` for the thin SVD ``a = u @ diag(s) @ vh`` (``u`` ``(..., m, k)``,
    ``vh`` ``(..., k, n)``) given the cotangents of its results (``None``: none)."""
    m, n = _matrix_dims(a, "svd")
    if gu is None and gvh is None:
        return np.matmul(u * np.expand_dims(gs, -2), vh)
    v = _t(vh)
    s2 = s * s
    f = _inverse_gaps(np.expand_dims(s2, -2) - np.expand_dims(s2, -1))  # 1/(s_j^2 - s_i^2)
    s_mat = _diag(s)
    s_inv = _diag(1.0 / s)
    core = 0.0 if gs is None else _diag(gs)
    extra = 0.0
    if gu is not None:
        ut_gu = np.matmul(_t(u), gu)
        core = core + np.matmul(f * (ut_gu - _t(ut_gu)), s_mat)
        if m > min(m, n):  # the part of gu outside the column space of u
            extra = extra + np.matmul(np.matmul(gu - np.matmul(u, ut_gu), s_inv), vh)
    if gvh is not None:
        gv = _t(gvh)
        vt_gv = np.matmul(_t(v), gv)
        core = core + np.matmul(s_mat, f * (vt_gv - _t(vt_gv)))
        if n > min(m, n):
            extra = extra + np.matmul(np.matmul(u, s_inv), _t(gv - np.matmul(v, vt_gv)))
    return np.matmul(np.matmul(u, core), vh) + extra


@rule(K.SVD)
def _svd(p: Primal, g: Any) -> list[Cotangent]:
    a = p.args[0]
    attrs = p.attrs
    if attrs.get("hermitian"):
        raise NotImplementedError(
            "the gradient of np.linalg.svd(hermitian=True) is not "
            "implemented; use np.linalg.eigh (or hermitian=False)"
        )
    m, n = _matrix_dims(a, "svd")
    k = min(m, n)
    if not attrs.get("compute_uv", True):
        thin = bind(K.SVD, (a,), {"full_matrices": False, "compute_uv": True, "hermitian": False})
        u, s, vh = (bind(K.GET_OUTPUT, (thin,), {"index": i}) for i in range(3))
        return [lambda: svd_cotangent(a, u, s, vh, None, g, None)]
    gu, gs, gvh = g
    u, s, vh = outputs(p)
    if attrs.get("full_matrices", True) and m != n:
        if (gu is not None and m > k) or (gvh is not None and n > k):
            raise NotImplementedError(
                "the gradient of np.linalg.svd(full_matrices=True) of a non-square matrix is "
                "not defined for the extra basis vectors of U or Vh (any orthonormal basis of "
                "the complement would do). Fix: np.linalg.svd(a, full_matrices=False), which "
                "returns the same singular values and leading vectors"
            )
        u, vh = u[..., :, :k], vh[..., :k, :]
        gu = None if gu is None else gu[..., :, :k]
        gvh = None if gvh is None else gvh[..., :k, :]
    if gs is None:
        gs = np.zeros_like(s)
    return [lambda: svd_cotangent(a, u, s, vh, gu, gs, gvh)]


# -- symmetric eigenproblems and Cholesky -------------------------------------------------------


def _read_triangle(g: Any, lower: bool) -> Any:
    return read_lower(g) if lower else read_upper(g)


def eigh_cotangent(w: Any, v: Any, gw: Any, gv: Any, lower: bool) -> Any:
    """The cotangent of ``a`` for ``w, v = eigh(a)`` (``a = v diag(w) v^T``)."""
    inner = 0.0 if gw is None else _diag(gw)
    if gv is not None:
        f = _inverse_gaps(np.expand_dims(w, -2) - np.expand_dims(w, -1))  # 1/(w_j - w_i)
        inner = inner + f * np.matmul(_t(v), gv)
    full = np.matmul(np.matmul(v, inner), _t(v))
    return _read_triangle(_symmetric(full), lower)


@rule(K.EIGH)
def _eigh(p: Primal, g: Any) -> list[Cotangent]:
    gw, gv = g
    w, v = outputs(p)
    lower = p.attrs.get("UPLO", "L").upper() == "L"
    return [lambda: eigh_cotangent(w, v, gw, gv, lower)]


@rule(K.EIGVALSH)
def _eigvalsh(p: Primal, g: Any) -> list[Cotangent]:
    a = p.args[0]
    uplo = p.attrs.get("UPLO", "L")
    both = bind(K.EIGH, (a,), {"UPLO": uplo})
    w, v = (bind(K.GET_OUTPUT, (both,), {"index": i}) for i in range(2))
    return [lambda: eigh_cotangent(w, v, g, None, uplo.upper() == "L")]


@rule(K.CHOLESKY)
def _cholesky(p: Primal, g: Any) -> list[Cotangent]:
    """``a = l @ l.T``: ``P = l^-T phi(l^T gl) l^-1`` (``phi``: the lower triangle, half
    the diagonal), symmetrised, read through the triangle NumPy reads."""
    upper = bool(p.attrs.get("upper", False))
    factor = cast("Tensor", p.out)

    def da() -> Any:
        low, gl = (_t(factor), _t(g)) if upper else (factor, g)
        x = np.matmul(_t(low), gl)
        phi = np.tril(x) - 0.5 * x * np.eye(x.shape[-1], dtype=x.dtype)
        inv = np.linalg.inv(low)
        return _read_triangle(_symmetric(np.matmul(np.matmul(_t(inv), phi), inv)), not upper)

    return [da]


# -- QR -----------------------------------------------------------------------------------------


def _copy_lower_to_upper(m: Any) -> Any:
    return np.tril(m) + _t(np.tril(m, -1))


def _qr_square_or_tall(q: Any, r: Any, gq: Any, gr: Any) -> Any:
    """``a = q r`` with ``m >= n``: ``(gq + q copyltu(M)) r^-T``, ``M = r gr^T - gq^T q``."""
    m = np.matmul(r, _t(gr)) - np.matmul(_t(gq), q)
    b = gq + np.matmul(q, _copy_lower_to_upper(m))
    return _t(np.linalg.solve(r, _t(b)))


def qr_cotangent(a: Any, q: Any, r: Any, gq: Any, gr: Any) -> Any:
    """The cotangent of ``a`` for the reduced QR ``a = q @ r``; a wide ``a = [x | y]`` is
    ``x = q r1`` and ``y = q r2``."""
    m, n = _matrix_dims(a, "qr")
    gq = np.zeros_like(q) if gq is None else gq
    gr = np.zeros_like(r) if gr is None else gr
    if m >= n:
        return _qr_square_or_tall(q, r, gq, gr)
    y = a[..., :, m:]
    gr1, gr2 = gr[..., :, :m], gr[..., :, m:]
    gx = _qr_square_or_tall(q, r[..., :, :m], gq + np.matmul(y, _t(gr2)), gr1)
    return np.concatenate([gx, np.matmul(q, gr2)], axis=-1)


@rule(K.QR)
def _qr(p: Primal, g: Any) -> list[Cotangent]:
    a = p.args[0]
    mode = p.attrs.get("mode", "reduced")
    m, n = _matrix_dims(a, "qr")
    k = min(m, n)
    if mode == "raw":
        raise NotImplementedError(
            "the gradient of np.linalg.qr(mode='raw') (Householder "
            "reflectors) is not implemented; use mode='reduced'"
        )
    if mode == "r":
        both = bind(K.QR, (a,), {"mode": "reduced"})
        q, r = (bind(K.GET_OUTPUT, (both,), {"index": i}) for i in range(2))
        return [lambda: qr_cotangent(a, q, r, None, g)]
    gq, gr = g
    q, r = outputs(p)
    if mode == "complete" and m > n:
        if gq is not None:
            raise NotImplementedError(
                "the gradient of np.linalg.qr(mode='complete') of a tall matrix is not defined "
                "for the extra columns of Q (any orthonormal basis of the complement would "
                "do). Fix: mode='reduced'"
            )
        q, r = q[..., :, :k], r[..., :k, :]
        gr = None if gr is None else gr[..., :k, :]
    return [lambda: qr_cotangent(a, q, r, gq, gr)]


# -- pseudo-inverse and least squares -----------------------------------------------------------


def pinv_cotangent(a: Any, x: Any, gx: Any, hermitian: bool = False) -> Any:
    """The cotangent of ``a`` for ``x = pinv(a)`` (Golub & Pereyra; exact while the rank
    stays the same)."""
    m, n = _matrix_dims(a, "pinv")
    xt = _t(x)
    out = -np.matmul(np.matmul(xt, gx), xt)
    out = out + np.matmul(np.matmul(np.eye(m) - np.matmul(a, x), _t(gx)), np.matmul(x, xt))
    out = out + np.matmul(np.matmul(xt, x), np.matmul(_t(gx), np.eye(n) - np.matmul(x, a)))
    return read_lower(_symmetric(out)) if hermitian else out


@rule(K.PINV)
def _pinv(p: Primal, g: Any) -> list[Cotangent]:
    a = p.args[0]
    return [lambda: pinv_cotangent(a, p.out, g, bool(p.attrs.get("hermitian", False)))]


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


@rule(K.LSTSQ)
def _lstsq(p: Primal, g: Any) -> list[Cotangent]:
    """``x`` is ``pinv(a) @ b`` (the minimum-norm solution; the cutoff ``rcond`` applied as
    lstsq does); the singular values are ``svd(a, compute_uv=False)``'s; the rank has none."""
    gx, gres, _, gsv = g
    if gres is not None:
        raise NotImplementedError(
            "the gradient of np.linalg.lstsq's residuals is not implemented (their length "
            "depends on the rank). Fix: compute them from the solution, "
            "np.sum((a @ x - b) ** 2, axis=0)"
        )
    a = p.args[0]
    m, n = _matrix_dims(a, "lstsq")
    rcond = p.attrs.get("rcond")
    rtol = float(np.finfo(a.dtype).eps * max(m, n)) if rcond is None or rcond < 0 else rcond

    def fn(a: Any, b: Any) -> tuple:
        x = np.matmul(np.linalg.pinv(a, rtol=rtol), b)
        return x, None, None, np.linalg.svd(a, compute_uv=False)

    return composed(p, [gx, None, None, gsv], fn)


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


NOTES.update(
    {
        K.SVD: "full_matrices=False, compute_uv=False, svdvals; full_matrices=True only for the "
        "singular values and leading vectors; repeated values: coupling terms dropped",
        K.EIGH: "reads one triangle, as NumPy; repeated eigenvalues: coupling terms dropped",
        K.EIGVALSH: "reads one triangle, as NumPy",
        K.CHOLESKY: "reads one triangle (upper=True: the upper), as NumPy",
        K.QR: "reduced, r, complete (square or wide); raw raises",
        K.PINV: "exact while the rank stays; hermitian reads the lower triangle",
        K.LSTSQ: "x as pinv(a) @ b, singular values; residuals raise (their length is data)",
    }
)


__all__ = [
    "composed",
    "eigh_cotangent",
    "outputs",
    "pinv_cotangent",
    "qr_cotangent",
    "read_lower",
    "read_upper",
    "route_along_axis",
    "svd_cotangent",
]
