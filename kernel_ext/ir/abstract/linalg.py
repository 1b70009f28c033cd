"""Abstract-evaluation rules of linear algebra: matmul/dot/outer, solve/inv/det, einsum, vdot,
correlate/convolve, the factorizations (dtypes from NumPy on a 1x1 identity) and the gufuncs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..ops import OpKind
from .core import (
    ABSTRACT_EVAL,
    AbstractValue,
    Rule,
    Shape,
    abstract_rule,
    broadcast_shapes,
    format_shape,
    known_rank,
    probe_dtype,
    shape_of,
)


def _inner_mismatch(fn: str, a: Shape, b: Shape, da: Any, db: Any) -> None:
    if da is not None and db is not None and da != db:
        raise ValueError(
            f"{fn}: Input operand 1 has a mismatch in its core dimension 0 "
            f"(size {db} is different from {da}); shapes {format_shape(a)} and "
            f"{format_shape(b)}"
        )


@abstract_rule(OpKind.MATMUL)
def _matmul(attrs: dict[str, Any], a: AbstractValue, b: AbstractValue) -> AbstractValue:
    dtype = np.matmul.resolve_dtypes((a.dtype, b.dtype, None))[-1]
    if a.shape is None or b.shape is None:
        return AbstractValue(None, dtype)
    if len(a.shape) == 0 or len(b.shape) == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    sa = (1,) + a.shape if len(a.shape) == 1 else a.shape
    sb = b.shape + (1,) if len(b.shape) == 1 else b.shape
    _inner_mismatch("matmul", a.shape, b.shape, sa[-1], sb[-2])
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    out = batch + (sa[-2], sb[-1])
    if len(a.shape) == 1:
        out = out[:-2] + out[-1:]
    if len(b.shape) == 1:
        out = out[:-1]
    return AbstractValue(out, dtype)


@abstract_rule(OpKind.DOT)
def _dot(attrs: dict[str, Any], a: AbstractValue, b: AbstractValue) -> AbstractValue:
    # (a Python number operand, np.dot(a, 2), is a literal with no AbstractValue: 0-d, and
    # np.dot makes it an array of its default dtype, so it is not weak as in a ufunc)
    dtype = _array_result_type(a, b)
    a_shape, b_shape = shape_of(a), shape_of(b)
    if a_shape is None or b_shape is None:
        return AbstractValue(None, dtype)
    if len(a_shape) == 0 or len(b_shape) == 0:
        return AbstractValue(broadcast_shapes(a_shape, b_shape), dtype)
    if len(b_shape) == 1:
        _inner_mismatch("dot", a_shape, b_shape, a_shape[-1], b_shape[0])
        return AbstractValue(a_shape[:-1], dtype)
    _inner_mismatch("dot", a_shape, b_shape, a_shape[-1], b_shape[-2])
    return AbstractValue(a_shape[:-1] + b_shape[:-2] + b_shape[-1:], dtype)


@abstract_rule(OpKind.OUTER)
def _outer(attrs: dict[str, Any], a: AbstractValue, b: AbstractValue) -> AbstractValue:
    sizes = tuple(x.size if isinstance(x, AbstractValue) else 1 for x in (a, b))
    return AbstractValue(sizes, _array_result_type(a, b))


def _array_result_type(*operands: Any) -> np.dtype:
    """The result dtype of a function that makes each operand an array first (np.dot,
    np.outer): a Python number is not weak there, it becomes an array of its default dtype."""
    return np.result_type(
        *(x.dtype if isinstance(x, AbstractValue) else np.asarray(x).dtype for x in operands)
    )


def _square_check(a: AbstractValue) -> None:
    if a.shape is not None:
        if len(a.shape) < 2:
            raise np.linalg.LinAlgError(
                f"{len(a.shape)}-dimensional array given. Array must be at least two-dimensional"
            )
        if None not in a.shape[-2:] and a.shape[-1] != a.shape[-2]:
            raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


@abstract_rule(OpKind.INV)
def _inv(attrs: dict[str, Any], a: AbstractValue) -> AbstractValue:
    _square_check(a)
    return AbstractValue(a.shape, probe_dtype(np.linalg.inv, a))


@abstract_rule(OpKind.DET)
def _det(attrs: dict[str, Any], a: AbstractValue) -> AbstractValue:
    _square_check(a)
    return AbstractValue(None if a.shape is None else a.shape[:-2], probe_dtype(np.linalg.det, a))


@abstract_rule(OpKind.SOLVE)
def _solve(attrs: dict[str, Any], a: AbstractValue, b: AbstractValue) -> AbstractValue:
    _square_check(a)
    dtype = probe_dtype(lambda x, y: np.linalg.solve(x, y), a, b)
    if a.shape is None or b.shape is None:
        return AbstractValue(None, dtype)
    if len(b.shape) == 1:
        return AbstractValue(b.shape, dtype)
    return AbstractValue(broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], dtype)


def einsum_shape(subscripts: str, shapes: Sequence[Shape | None]) -> Shape | None:
    """The result shape of ``np.einsum(subscripts, *operands)`` (explicit ``->`` or implicit
    output, ``...`` broadcasting, size-1 labels broadcasting as NumPy's einsum does)."""
    subs = subscripts.replace(" ", "")
    inputs, arrow, output = subs.partition("->")
    specs = inputs.split(",")
    if len(specs) != len(shapes):
        raise ValueError(
            "more operands provided to einstein sum function than specified in "
            "the subscripts string"
            if len(shapes) > len(specs)
            else "fewer operands provided to einstein sum function than specified in "
            "the subscripts string"
        )
    if any(s is None for s in shapes):
        return None
    dims, ellipses = _einsum_label_dims(specs, shapes)  # type: ignore[arg-type]
    sizes = _einsum_label_sizes(dims)
    ell = broadcast_shapes(*ellipses) or ()
    if not arrow:
        counts: dict[str, int] = {}
        for ch in inputs.replace(".", "").replace(",", ""):
            counts[ch] = counts.get(ch, 0) + 1
        return tuple(ell) + tuple(sizes[c] for c in sorted(counts) if counts[c] == 1)
    return _einsum_output_shape(output, sizes, tuple(ell))


def _einsum_label_dims(
    specs: list[str], shapes: Sequence[Shape]
) -> tuple[dict[str, list[int | None]], list[Shape]]:
    """Each label's dimensions across the operands, and each operand's ``...`` dimensions
    (NumPy's errors for an operand whose rank the subscripts do not match)."""
    dims: dict[str, list[int | None]] = {}
    ellipses = []
    for i, (spec, shape) in enumerate(zip(specs, shapes)):
        head, dots, tail = spec.partition("...")
        n_ell = len(shape) - len(head) - len(tail) if dots else 0
        if n_ell < 0 or (not dots and len(spec) != len(shape)):
            raise ValueError(
                "operand has more dimensions than subscripts given in einstein "
                "sum, but no '...' ellipsis provided to broadcast the extra "
                "dimensions."
                if len(spec) < len(shape)
                else f"einstein sum subscripts string contains too many subscripts for operand {i}"
            )
        ellipses.append(tuple(shape[len(head) : len(head) + n_ell]))
        labelled = tuple(shape[: len(head)]) + tuple(shape[len(shape) - len(tail) :])
        for label, d in zip(head + tail, labelled):
            dims.setdefault(label, []).append(d)
    return dims, ellipses


def _einsum_label_sizes(dims: dict[str, list[int | None]]) -> dict[str, int | None]:
    """Each label's size: its one size other than 1 (None if unknown), 1 if all are 1."""
    sizes: dict[str, int | None] = {}
    for label, ds in dims.items():
        known = {d for d in ds if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError(
                "operands could not be broadcast together with remapped shapes; "
                f"label '{label}' has sizes {sorted(known)}"
            )
        sizes[label] = known.pop() if known else None if None in ds else 1
    return sizes


def _einsum_output_shape(output: str, sizes: dict[str, int | None], ell: Shape) -> Shape:
    """The shape of an explicit output (``->`` subscripts), with NumPy's errors."""
    head, dots, tail = output.partition("...")
    if not dots and ell:
        raise ValueError(
            "output has more dimensions than subscripts given in einstein sum, "
            "but no '...' ellipsis provided to broadcast the extra dimensions."
        )
    for c in head + tail:
        if c not in sizes:
            raise ValueError(
                f"einstein sum subscripts string included output subscript '{c}' "
                "which never appeared in an input"
            )
    return tuple(sizes[c] for c in head) + (ell if dots else ()) + tuple(sizes[c] for c in tail)


@abstract_rule(OpKind.EINSUM)
def _einsum(attrs: dict[str, Any], *operands: Any) -> AbstractValue:
    subscripts = attrs["subscripts"]
    kwargs = {k: v for k, v in attrs.items() if k not in ("subscripts", "optimize")}
    dtype = probe_dtype(lambda *ops: np.einsum(subscripts, *ops, **kwargs), *operands)
    return AbstractValue(einsum_shape(subscripts, [shape_of(o) for o in operands]), dtype)


@abstract_rule(OpKind.VDOT)
def _vdot(attrs: dict[str, Any], a: Any, b: Any) -> AbstractValue:
    na = a.size if isinstance(a, AbstractValue) else 1
    nb = b.size if isinstance(b, AbstractValue) else 1
    if na is not None and nb is not None and na != nb:
        raise ValueError("vectors have different lengths")
    return AbstractValue((), probe_dtype(np.vdot, a, b))


def _correlate_rule(fn: Callable[..., Any]) -> Rule:
    """``np.correlate``/``np.convolve`` of two non-empty 1-D arrays: ``valid`` keeps
    ``max - min + 1`` values, ``same`` ``max``, ``full`` ``n + m - 1``."""

    def rule(attrs: dict[str, Any], a: Any, v: Any) -> AbstractValue:
        mode = attrs.get("mode", "valid")
        dtype = probe_dtype(lambda x, y: fn(x, y, mode), a, v)
        n, m = (shape_of(a) or (1,))[0], (shape_of(v) or (1,))[0]
        for what, d in (("a", n), ("v", m)):
            if d == 0:
                raise ValueError(f"{what} cannot be empty")
        if n is None or m is None:
            return AbstractValue((None,), dtype)
        sizes = {"valid": max(n, m) - min(n, m) + 1, "same": max(n, m), "full": n + m - 1}
        return AbstractValue((sizes[mode],), dtype)

    return rule


ABSTRACT_EVAL[OpKind.CORRELATE] = _correlate_rule(np.correlate)


ABSTRACT_EVAL[OpKind.CONVOLVE] = _correlate_rule(np.convolve)


def _linalg_probe(a: AbstractValue, fn: Callable[[np.ndarray], Any]) -> Any:
    """``fn`` on a 1x1 identity of ``a``'s dtype: NumPy's result dtypes (and its refusal of
    dtypes linalg does not take)."""
    return fn(np.eye(1, dtype=a.dtype))


@abstract_rule(OpKind.SVD)
def _svd(attrs: dict[str, Any], a: AbstractValue) -> AbstractValue | tuple[AbstractValue, ...]:
    shape = known_rank(a, "linalg.svd")
    if len(shape) < 2:
        raise np.linalg.LinAlgError(
            f"{len(shape)}-dimensional array given. Array must be at least two-dimensional"
        )
    full, uv = attrs.get("full_matrices", True), attrs.get("compute_uv", True)
    probe = _linalg_probe(a, lambda e: np.linalg.svd(e, compute_uv=uv))
    *batch, m, n = shape
    k = None if m is None or n is None else min(m, n)
    s = AbstractValue(tuple(batch) + (k,), (probe.S if uv else probe).dtype)
    if not uv:
        return s
    u = AbstractValue(tuple(batch) + (m, m if full else k), probe.U.dtype)
    vh = AbstractValue(tuple(batch) + (n if full else k, n), probe.Vh.dtype)
    return (u, s, vh)


@abstract_rule(OpKind.SLOGDET)
def _slogdet(attrs: dict[str, Any], a: AbstractValue) -> tuple[AbstractValue, ...]:
    _square_check(a)
    sign, logabsdet = _linalg_probe(a, np.linalg.slogdet)
    batch = None if a.shape is None else a.shape[:-2]
    return (
        AbstractValue(batch, np.asarray(sign).dtype),
        AbstractValue(batch, np.asarray(logabsdet).dtype),
    )


@abstract_rule(OpKind.CHOLESKY)
def _cholesky(attrs: dict[str, Any], a: AbstractValue) -> AbstractValue:
    _square_check(a)
    return AbstractValue(a.shape, _linalg_probe(a, lambda e: np.linalg.cholesky(e)).dtype)


def _at_least_2d(a: AbstractValue, fn: str) -> Shape:
    shape = known_rank(a, fn)
    if len(shape) < 2:
        raise np.linalg.LinAlgError(
            f"{len(shape)}-dimensional array given. Array must be at least two-dimensional"
        )
    return shape


def _min_dim(m: int | None, n: int | None) -> int | None:
    return None if m is None or n is None else min(m, n)


@abstract_rule(OpKind.QR)
def _qr(attrs: dict[str, Any], a: AbstractValue) -> AbstractValue | tuple[AbstractValue, ...]:
    *batch, m, n = _at_least_2d(a, "linalg.qr")
    mode = attrs.get("mode", "reduced")
    probe = _linalg_probe(a, lambda e: np.linalg.qr(e, mode=mode))
    k, b = _min_dim(m, n), tuple(batch)
    if mode == "r":
        return AbstractValue(b + (k, n), probe.dtype)
    if mode == "raw":
        return (AbstractValue(b + (n, m), probe[0].dtype), AbstractValue(b + (k,), probe[1].dtype))
    q_cols, r_rows = (m, m) if mode == "complete" else (k, k)
    return (
        AbstractValue(b + (m, q_cols), probe.Q.dtype),
        AbstractValue(b + (r_rows, n), probe.R.dtype),
    )


@abstract_rule(OpKind.EIGH)
def _eigh(attrs: dict[str, Any], a: AbstractValue) -> tuple[AbstractValue, ...]:
    _square_check(a)
    w, v = _linalg_probe(a, lambda e: np.linalg.eigh(e, **attrs))
    return (
        AbstractValue(None if a.shape is None else a.shape[:-1], w.dtype),
        AbstractValue(a.shape, v.dtype),
    )


@abstract_rule(OpKind.EIGVALSH)
def _eigvalsh(attrs: dict[str, Any], a: AbstractValue) -> AbstractValue:
    _square_check(a)
    w = _linalg_probe(a, lambda e: np.linalg.eigvalsh(e, **attrs))
    return AbstractValue(None if a.shape is None else a.shape[:-1], w.dtype)


@abstract_rule(OpKind.LSTSQ)
def _lstsq(attrs: dict[str, Any], a: AbstractValue, b: AbstractValue) -> tuple[AbstractValue, ...]:
    """``x`` (N,) or (N, K); the residuals are empty unless the rank is N < M, a length
    the values decide; the rank; the singular values (min(M, N),)."""
    ashape, bshape = known_rank(a, "linalg.lstsq"), known_rank(b, "linalg.lstsq")
    if len(ashape) != 2:
        raise np.linalg.LinAlgError(
            f"{len(ashape)}-dimensional array given. Array must be two-dimensional"
        )
    if len(bshape) not in (1, 2):
        raise np.linalg.LinAlgError(
            f"{len(bshape)}-dimensional array given. Array must be one or two-dimensional"
        )
    m, n = ashape
    if m is not None and bshape[0] is not None and m != bshape[0]:
        raise np.linalg.LinAlgError("Incompatible dimensions")
    x, res, rank, sv = np.linalg.lstsq(
        np.eye(1, dtype=a.dtype), np.ones((1,) * len(bshape), b.dtype), **attrs
    )
    return (
        AbstractValue((n,) + tuple(bshape[1:]), x.dtype),
        AbstractValue((None,), res.dtype),
        AbstractValue((), np.asarray(rank).dtype),
        AbstractValue((_min_dim(m, n),), sv.dtype),
    )


@abstract_rule(OpKind.PINV)
def _pinv(attrs: dict[str, Any], a: AbstractValue) -> AbstractValue:
    *batch, m, n = _at_least_2d(a, "linalg.pinv")
    dtype = _linalg_probe(a, lambda e: np.linalg.pinv(e, **attrs)).dtype
    return AbstractValue(tuple(batch) + (n, m), dtype)


def _core_dims(x: Any, core: int, fn: str) -> tuple[Shape, Shape]:
    shape = known_rank(x, fn) if isinstance(x, AbstractValue) else np.shape(x)
    if len(shape) < core:
        raise ValueError(
            f"{fn}: Input operand does not have enough dimensions (has "
            f"{len(shape)}, gufunc core with signature requires {core})"
        )
    return tuple(shape[: len(shape) - core]), tuple(shape[len(shape) - core :])


def _same_dim(a: int | None, b: int | None, fn: str) -> None:
    if a is not None and b is not None and a != b:
        raise ValueError(
            f"{fn}: Input operand 1 has a mismatch in its core dimension 0 "
            f"({b} is different from {a})"
        )


@abstract_rule(OpKind.VECDOT)
def _vecdot(attrs: dict[str, Any], x1: Any, x2: Any) -> AbstractValue:
    (b1, (n1,)), (b2, (n2,)) = _core_dims(x1, 1, "vecdot"), _core_dims(x2, 1, "vecdot")
    _same_dim(n1, n2, "vecdot")
    return AbstractValue(broadcast_shapes(b1, b2), probe_dtype(np.vecdot, x1, x2))


@abstract_rule(OpKind.MATVEC)
def _matvec(attrs: dict[str, Any], a: Any, v: Any) -> AbstractValue:
    (b1, (m, n)), (b2, (k,)) = _core_dims(a, 2, "matvec"), _core_dims(v, 1, "matvec")
    _same_dim(n, k, "matvec")
    return AbstractValue(broadcast_shapes(b1, b2) + (m,), probe_dtype(np.matvec, a, v))


@abstract_rule(OpKind.VECMAT)
def _vecmat(attrs: dict[str, Any], v: Any, a: Any) -> AbstractValue:
    (b1, (k,)), (b2, (m, n)) = _core_dims(v, 1, "vecmat"), _core_dims(a, 2, "vecmat")
    _same_dim(k, m, "vecmat")
    return AbstractValue(broadcast_shapes(b1, b2) + (n,), probe_dtype(np.vecmat, v, a))
