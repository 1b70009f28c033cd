"""Factorisations and solvers: inv, det, solve, slogdet, svd, cholesky, qr, eigh, eigvalsh,
lstsq and pinv, every layer's rules.

Each op's NumPy entry point, abstract evaluation (dtypes from NumPy on a 1x1 identity),
reference lowering, VJP and whole-graph rule, side by side (see :mod:`kernel_ext.ops`); the
traced forms of ``inv``, ``solve`` and ``svd`` are in :mod:`kernel_ext.trace.numpy_api.linalg`,
whose compositions call them, and are registered here. ONNX refuses all but ``det``
(``onnx/rules/refusals.py``: the standard has no factorisation or solver); ``det`` is ONNX's
``Det``.

**Gradients of the decompositions** (``svd``, ``eigh``/``eigvalsh``, ``cholesky``, ``qr``,
``pinv``, ``lstsq``): the standard reverse-mode formulas, whose pieces and the conventions
NumPy's functions impose on them (the triangle read, repeated values, full bases) are
:mod:`kernel_ext.autodiff.decompositions`'s (and ``docs/gradients.md``'s).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.decompositions import composed, outputs
from ...autodiff.rules import NOTES, VJP, Cotangent, Primal, swap_last_axes, unbroadcast
from ...backends.emit.literals import Unsupported, ctor
from ...backends.emit.source import Source
from ...backends.static_shapes import ranked_shape
from ...backends.ufunc_loops import find_loop
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...backends.whole_graph_ops.common import (
    Rule,
    Writer,
    array_arg,
    loop_scratch,
    only_params,
    ufunc_loop,
)
from ...ir import Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL, AbstractValue, Shape
from ...ir.abstract.core import broadcast_shapes, known_rank, probe_dtype
from ...ir.interpreter import LOWER
from ...ir.params import (
    CholeskyParams,
    EighParams,
    LstsqParams,
    NoParams,
    PinvParams,
    QrParams,
    SvdParams,
)
from ...onnx.builder import GraphBuilder
from ...onnx.refusal import refuse
from ...onnx.rules.common import RULES as ONNX
from ...onnx.rules.common import out_dtype
from ...trace import Tensor, bind
from ...trace.numpy_api.common import (
    bind_outputs,
    bound_arguments,
    declare,
    implements,
    is_traced,
    static_attr,
)
from ...trace.numpy_api.linalg import inv, result_type, solve, svd
from ...trace.opaque import numpy_call
from ...trace.signatures import numpy_signature
from .products import operand_rank

K = OpKind


# --- helpers the ops below share: their shape checks, the dtype probe, matrix algebra for
# the decompositions' gradients ---


def _square_check(a: AbstractValue) -> None:
    if a.shape is not None:
        if len(a.shape) < 2:
            raise np.linalg.LinAlgError(
                f"{len(a.shape)}-dimensional array given. Array must be at least two-dimensional"
            )
        if None not in a.shape[-2:] and a.shape[-1] != a.shape[-2]:
            raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


def _linalg_probe(a: AbstractValue, fn: Callable[[np.ndarray], Any]) -> Any:
    """``fn`` on a 1x1 identity of ``a``'s dtype: NumPy's result dtypes (and its refusal of
    dtypes linalg does not take)."""
    return fn(np.eye(1, dtype=a.dtype))


def _at_least_2d(a: AbstractValue, fn: str) -> Shape:
    shape = known_rank(a, fn)
    if len(shape) < 2:
        raise np.linalg.LinAlgError(
            f"{len(shape)}-dimensional array given. Array must be at least two-dimensional"
        )
    return shape


def _min_dim(m: int | None, n: int | None) -> int | None:
    return None if m is None or n is None else min(m, n)


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


# --- inv, det, solve ---


implements(np.linalg.inv)(inv)


@implements(np.linalg.det)
def _det(a: Any) -> Any:
    return bind(OpKind.DET, (a,))


implements(np.linalg.solve)(solve)


@ABSTRACT_EVAL.register(K.INV)
def _inv_aval(params: NoParams, a: AbstractValue) -> AbstractValue:
    _square_check(a)
    return AbstractValue(a.shape, probe_dtype(np.linalg.inv, a))


@ABSTRACT_EVAL.register(K.DET)
def _det_aval(params: NoParams, a: AbstractValue) -> AbstractValue:
    _square_check(a)
    return AbstractValue(None if a.shape is None else a.shape[:-2], probe_dtype(np.linalg.det, a))


@ABSTRACT_EVAL.register(K.SOLVE)
def _solve_aval(params: NoParams, a: AbstractValue, b: AbstractValue) -> AbstractValue:
    _square_check(a)
    dtype = probe_dtype(lambda x, y: np.linalg.solve(x, y), a, b)
    if a.shape is None or b.shape is None:
        return AbstractValue(None, dtype)
    if len(b.shape) == 1:
        return AbstractValue(b.shape, dtype)
    return AbstractValue(broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], dtype)


# (matmul, dot and outer, which the layer served from the same table, are in .products)
_LINALG: dict[OpKind, Callable[..., Any]] = {
    OpKind.INV: np.linalg.inv,
    OpKind.DET: np.linalg.det,
    OpKind.SOLVE: np.linalg.solve,
}


@LOWER.register(*_LINALG)
def _lower_solvers(node: Node) -> Callable[..., Any]:
    return _LINALG[node.op]


@VJP.register(K.INV)
def _inv_vjp(p: Primal, g: Any) -> list[Cotangent]:
    t = swap_last_axes(p.out)
    return [lambda: -np.matmul(np.matmul(t, g), t)]


@VJP.register(K.DET)
def _det_vjp(p: Primal, g: Any) -> list[Cotangent]:
    a = p.args[0]
    return [
        lambda: np.expand_dims(np.expand_dims(g * p.out, -1), -1) * swap_last_axes(np.linalg.inv(a))
    ]


@VJP.register(K.SOLVE)
def _solve_vjp(p: Primal, g: Any) -> list[Cotangent]:
    a, _b = p.args
    x = p.out
    assert x is not None  # (a solve has its result)
    vector = operand_rank(p, 1) == 1
    gb = np.linalg.solve(swap_last_axes(a), g)

    def da() -> Any:
        d = (
            -(np.expand_dims(gb, -1) * np.expand_dims(x, -2))
            if vector
            else -np.matmul(gb, swap_last_axes(x))
        )
        return unbroadcast(d, p.shape(0))

    return [da, lambda: unbroadcast(gb, p.shape(1))]


# Whole graph: NumPy's own LAPACK gufunc loops.


def _linalg_loop(op: OpKind, b_rank: int) -> np.ufunc:
    """The ``numpy.linalg._umath_linalg`` gufunc ``np.linalg.<op>`` calls for 2-D ``a``."""
    from numpy.linalg import _umath_linalg as umath_linalg

    if op is OpKind.SOLVE:
        return umath_linalg.solve1 if b_rank == 1 else umath_linalg.solve
    return umath_linalg.inv if op is OpKind.INV else umath_linalg.det


def _check_linalg(node: Node) -> tuple[np.ufunc, int]:
    """The gufunc and the rank of ``b`` (0 without one)."""
    only_params(node, set())
    a = array_arg(node, 0, "a matrix")
    if len(ranked_shape(a)) != 2:
        raise Unsupported(f"{node.op.value} of a stack of matrices (2-D only)")
    rank_b = 0
    for x in node.args[: 2 if node.op is OpKind.SOLVE else 1]:
        if not isinstance(x, Node) or np.dtype(x.dtype).kind not in "iuf":
            raise Unsupported(f"{node.op.value} of {getattr(x, 'dtype', type(x).__name__)}")
    if node.op is OpKind.SOLVE:
        rank_b = len(ranked_shape(array_arg(node, 1, "b")))
        if rank_b not in (1, 2):
            raise Unsupported(f"solve with a {rank_b}-D b")
    if np.dtype(node.dtype) not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise Unsupported(f"{node.op.value} into {node.dtype}")
    ufunc = _linalg_loop(node.op, rank_b)
    if find_loop(ufunc, (np.dtype(np.float64),) * ufunc.nargs) is None:
        raise Unsupported(f"no NumPy {ufunc.__name__} loop for float64")
    return ufunc, rank_b


def _emit_linalg(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """One call of the gufunc loop ``np.linalg`` makes, on float64 copies (NumPy computes
    every real dtype in double, then casts to the result's dtype), with the core strides
    of those copies: the loop copies them into its Fortran buffer and calls LAPACK
    (``dgesv``, ``dgetrf``...) exactly as under NumPy. NumPy's errors — a matrix that is
    not square, shapes that do not match, a singular matrix (``solve``/``inv``: NaNs and
    its invalid flag, which ``np.linalg`` turns into LinAlgError) — and non-finite inputs
    (whose invalid operations NumPy would also report) signal."""
    ufunc, rank_b = _check_linalg(node)
    pp, dims, st = loop_scratch(w).split(", ")
    f, d = ufunc_loop(w, ufunc, (np.dtype(np.float64),) * ufunc.nargs).split(", ")
    ops = [w.fresh("la") for _ in range(1 + (node.op is OpKind.SOLVE))]
    for v, a in zip(ops, args):
        out.line(f"{v} = np.ascontiguousarray({a.name}).astype(np.float64)")
    a = ops[0]
    w.signal(out, f"{a}.shape[0] != {a}.shape[1] or {a}.shape[0] == 0")
    if node.op is not OpKind.DET:
        for v in ops:
            w.signal(out, f"not np.all(np.isfinite({v}))")
    o = w.fresh("la")
    if node.op is OpKind.SOLVE:
        b = ops[1]
        w.signal(out, f"{b}.shape[0] != {a}.shape[0]")
        if rank_b == 2:
            w.signal(out, f"{b}.shape[1] == 0")
        out.line(f"{o} = np.empty({b}.shape, np.float64)")
        cores = (
            [f"{a}.strides[0]", f"{a}.strides[1]"]
            + [f"{b}.strides[{k}]" for k in range(rank_b)]
            + [f"{o}.strides[{k}]" for k in range(rank_b)]
        )
        ptrs = [a, b, o]
        sizes = [f"{a}.shape[0]"] + ([f"{b}.shape[1]"] if rank_b == 2 else [])
    elif node.op is OpKind.INV:
        out.line(f"{o} = np.empty({a}.shape, np.float64)")
        cores = [f"{a}.strides[0]", f"{a}.strides[1]", f"{o}.strides[0]", f"{o}.strides[1]"]
        ptrs, sizes = [a, o], [f"{a}.shape[0]"]
    else:
        out.line(f"{o} = np.empty(1, np.float64)")
        cores = [f"{a}.strides[0]", f"{a}.strides[1]"]
        ptrs, sizes = [a, o], [f"{a}.shape[0]"]
    for k, p in enumerate(ptrs):
        out.line(f"{pp}[{k}] = {p}.ctypes.data")
        out.line(f"{st}[{k}] = 0")  # one matrix: the outer loop runs once
    out.line(f"{dims}[0] = 1")
    for k, s in enumerate(sizes):
        out.line(f"{dims}[{k + 1}] = {s}")
    for k, s in enumerate(cores):
        out.line(f"{st}[{len(ptrs) + k}] = {s}")
    out.line(f"_call_loop({f}, {pp}.ctypes.data, {dims}.ctypes.data, {st}.ctypes.data, {d})")
    if node.op is not OpKind.DET:
        w.signal(out, f"np.any(np.isnan({o}))")
    cast = "" if np.dtype(node.dtype) == np.float64 else f".astype({ctor(np.dtype(node.dtype))})"
    if node.op is OpKind.DET:
        out.line(f"{t} = {o}{cast}[0]")
        return "scalar"
    out.line(f"{t} = {o}{cast}")
    return "fresh"


for _kind in (K.SOLVE, K.INV, K.DET):
    WHOLE_GRAPH.add(_kind, Rule(lambda n: _check_linalg(n) and None, _emit_linalg))


@ONNX.register(K.DET)
def _onnx_det(b: GraphBuilder, node: Node) -> list[str]:
    out = out_dtype(node)
    if out.kind != "f":
        raise refuse(node, "ONNX's Det computes floats only", "cast to float first")
    return [b.one("Det", [b.operand(node.args[0], out)])]


# --- slogdet ---


@implements(np.linalg.slogdet)
def _slogdet(a: Any) -> Any:
    return result_type(np.linalg.slogdet)._make(bind_outputs(OpKind.SLOGDET, (a,), {}, "slogdet"))


@ABSTRACT_EVAL.register(K.SLOGDET)
def _slogdet_aval(params: NoParams, a: AbstractValue) -> tuple[AbstractValue, ...]:
    _square_check(a)
    sign, logabsdet = _linalg_probe(a, np.linalg.slogdet)
    batch = None if a.shape is None else a.shape[:-2]
    return (
        AbstractValue(batch, np.asarray(sign).dtype),
        AbstractValue(batch, np.asarray(logabsdet).dtype),
    )


@LOWER.register(K.SLOGDET)
def _lower_slogdet(node: Node) -> Callable[..., Any]:
    return np.linalg.slogdet


@VJP.register(K.SLOGDET)
def _slogdet_vjp(p: Primal, gs: Any) -> list[Cotangent]:
    g = gs[1]  # the sign is piecewise constant
    if g is None:
        return [None]
    a = p.args[0]
    return [lambda: np.expand_dims(np.expand_dims(g, -1), -1) * swap_last_axes(np.linalg.inv(a))]


NOTES.add(K.SLOGDET, "through logabsdet (the sign has none)")


# --- svd ---


implements(np.linalg.svd)(svd)


@ABSTRACT_EVAL.register(K.SVD)
def _svd_aval(params: SvdParams, a: AbstractValue) -> AbstractValue | tuple[AbstractValue, ...]:
    shape = known_rank(a, "linalg.svd")
    if len(shape) < 2:
        raise np.linalg.LinAlgError(
            f"{len(shape)}-dimensional array given. Array must be at least two-dimensional"
        )
    full = params.full_matrices
    uv: Any = params.compute_uv  # (NumPy's stubs take a literal True or False)
    probe = _linalg_probe(a, lambda e: np.linalg.svd(e, compute_uv=uv))
    *batch, m, n = shape
    k = None if m is None or n is None else min(m, n)
    s = AbstractValue(tuple(batch) + (k,), (probe.S if uv else probe).dtype)
    if not uv:
        return s
    u = AbstractValue(tuple(batch) + (m, m if full else k), probe.U.dtype)
    vh = AbstractValue(tuple(batch) + (n if full else k, n), probe.Vh.dtype)
    return (u, s, vh)


@LOWER.register(K.SVD)
def _lower_svd(node: Node) -> Callable[..., Any]:
    return functools.partial(np.linalg.svd, **node.params.kwargs())


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


@VJP.register(K.SVD)
def _svd_vjp(p: Primal, g: Any) -> list[Cotangent]:
    a = p.args[0]
    params = cast("SvdParams", p.params)
    if params.hermitian:
        raise NotImplementedError(
            "the gradient of np.linalg.svd(hermitian=True) is not "
            "implemented; use np.linalg.eigh (or hermitian=False)"
        )
    m, n = _matrix_dims(a, "svd")
    k = min(m, n)
    if not params.compute_uv:
        thin = bind(K.SVD, (a,), {"full_matrices": False, "compute_uv": True, "hermitian": False})
        u, s, vh = (bind(K.GET_OUTPUT, (thin,), {"index": i}) for i in range(3))
        return [lambda: svd_cotangent(a, u, s, vh, None, g, None)]
    gu, gs, gvh = g
    u, s, vh = outputs(p)
    if params.full_matrices and m != n:
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


NOTES.add(
    K.SVD,
    "full_matrices=False, compute_uv=False, svdvals; full_matrices=True only for the "
    "singular values and leading vectors; repeated values: coupling terms dropped",
)


# --- cholesky, qr, eigh, eigvalsh, lstsq, pinv: NumPy's function with the node's params ---


def _linalg_op(
    kind: OpKind, names: tuple[str, ...], result: Callable[..., Any] | None = None
) -> Callable[..., Any]:
    """The handler of ``np.linalg.<kind>``: one op with the named arguments as attrs (their
    defaults bound); several results come back in NumPy's namedtuple."""
    func = getattr(np.linalg, kind.value)

    @declare.parameters(*numpy_signature(func).parameters)
    def handler(*args: Any, **kwargs: Any) -> Any:
        p = bound_arguments(func, args, kwargs)
        statics = {k: p[k] for k in names if k in p and p[k] is not np._NoValue}
        if is_traced(statics):
            return numpy_call(func, args, kwargs)
        inputs = tuple(v for k, v in p.items() if k not in names and v is not np._NoValue)
        attrs = {k: static_attr(v) for k, v in statics.items()}
        node = cast("Tensor", bind(kind, inputs, attrs))
        if not node.node.multi_output:
            return node
        n_out = len(node.node.outputs)
        outs = [bind(OpKind.GET_OUTPUT, (node,), {"index": i}) for i in range(n_out)]
        return tuple(outs) if result is None else result(*outs)

    handler.__name__ = f"_{kind.value}"
    return handler


def _result_class(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., Any]:
    cls = type(fn(*args, **kwargs))
    return (lambda *outs: cls(*outs)) if cls is not tuple else (lambda *outs: tuple(outs))


# (a symmetric positive definite stand-in: NumPy's function called on it once names the class
# of its results)
_SPD = np.eye(2) * 2.0


@LOWER.register(K.CHOLESKY, K.QR, K.EIGH, K.EIGVALSH, K.LSTSQ, K.PINV)
def _lower_linalg(node: Node) -> Callable[..., Any]:
    fn: Callable[..., Any] = getattr(np.linalg, node.op.value)
    if node.op is OpKind.QR and cast("QrParams", node.params).mode == "raw":
        return lambda a: tuple(fn(a, mode="raw"))
    return functools.partial(fn, **node.params.kwargs())


# --- eigh, eigvalsh ---


implements(np.linalg.eigh)(_linalg_op(OpKind.EIGH, ("UPLO",), _result_class(np.linalg.eigh, _SPD)))


implements(np.linalg.eigvalsh)(_linalg_op(OpKind.EIGVALSH, ("UPLO",)))


@ABSTRACT_EVAL.register(K.EIGH)
def _eigh_aval(params: EighParams, a: AbstractValue) -> tuple[AbstractValue, ...]:
    _square_check(a)
    w, v = _linalg_probe(a, lambda e: np.linalg.eigh(e, **params.kwargs()))
    return (
        AbstractValue(None if a.shape is None else a.shape[:-1], w.dtype),
        AbstractValue(a.shape, v.dtype),
    )


@ABSTRACT_EVAL.register(K.EIGVALSH)
def _eigvalsh_aval(params: EighParams, a: AbstractValue) -> AbstractValue:
    _square_check(a)
    w = _linalg_probe(a, lambda e: np.linalg.eigvalsh(e, **params.kwargs()))
    return AbstractValue(None if a.shape is None else a.shape[:-1], w.dtype)


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


@VJP.register(K.EIGH)
def _eigh_vjp(p: Primal, g: Any) -> list[Cotangent]:
    params = cast("EighParams", p.params)
    gw, gv = g
    w, v = outputs(p)
    lower = params.UPLO.upper() == "L"
    return [lambda: eigh_cotangent(w, v, gw, gv, lower)]


@VJP.register(K.EIGVALSH)
def _eigvalsh_vjp(p: Primal, g: Any) -> list[Cotangent]:
    params = cast("EighParams", p.params)
    a = p.args[0]
    uplo = params.UPLO
    both = bind(K.EIGH, (a,), {"UPLO": uplo})
    w, v = (bind(K.GET_OUTPUT, (both,), {"index": i}) for i in range(2))
    return [lambda: eigh_cotangent(w, v, g, None, uplo.upper() == "L")]


NOTES.add(K.EIGH, "reads one triangle, as NumPy; repeated eigenvalues: coupling terms dropped")
NOTES.add(K.EIGVALSH, "reads one triangle, as NumPy")


# --- cholesky ---


implements(np.linalg.cholesky)(_linalg_op(OpKind.CHOLESKY, ("upper",)))


@ABSTRACT_EVAL.register(K.CHOLESKY)
def _cholesky_aval(params: CholeskyParams, a: AbstractValue) -> AbstractValue:
    _square_check(a)
    return AbstractValue(a.shape, _linalg_probe(a, lambda e: np.linalg.cholesky(e)).dtype)


@VJP.register(K.CHOLESKY)
def _cholesky_vjp(p: Primal, g: Any) -> list[Cotangent]:
    """``a = l @ l.T``: ``P = l^-T phi(l^T gl) l^-1`` (``phi``: the lower triangle, half
    the diagonal), symmetrised, read through the triangle NumPy reads."""
    params = cast("CholeskyParams", p.params)
    upper = bool(params.upper)
    factor = cast("Tensor", p.out)

    def da() -> Any:
        low, gl = (_t(factor), _t(g)) if upper else (factor, g)
        x = np.matmul(_t(low), gl)
        phi = np.tril(x) - 0.5 * x * np.eye(x.shape[-1], dtype=x.dtype)
        inv = np.linalg.inv(low)
        return _read_triangle(_symmetric(np.matmul(np.matmul(_t(inv), phi), inv)), not upper)

    return [da]


NOTES.add(K.CHOLESKY, "reads one triangle (upper=True: the upper), as NumPy")


# --- qr ---


@implements(np.linalg.qr)
def _qr(a: Any, mode: str = "reduced") -> Any:
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    node = bind(OpKind.QR, (a,), {"mode": mode})
    if mode == "r":
        return node
    q, r = (bind(OpKind.GET_OUTPUT, (node,), {"index": i}) for i in range(2))
    return (q, r) if mode == "raw" else _result_class(np.linalg.qr, _SPD)(q, r)


@ABSTRACT_EVAL.register(K.QR)
def _qr_aval(params: QrParams, a: AbstractValue) -> AbstractValue | tuple[AbstractValue, ...]:
    *batch, m, n = _at_least_2d(a, "linalg.qr")
    mode: Any = params.mode  # (NumPy's stubs take a literal; NumPy checks the value)
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


@VJP.register(K.QR)
def _qr_vjp(p: Primal, g: Any) -> list[Cotangent]:
    params = cast("QrParams", p.params)
    a = p.args[0]
    mode = params.mode
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


NOTES.add(K.QR, "reduced, r, complete (square or wide); raw raises")


# --- pinv ---


implements(np.linalg.pinv)(_linalg_op(OpKind.PINV, ("rcond", "hermitian", "rtol")))


@ABSTRACT_EVAL.register(K.PINV)
def _pinv_aval(params: PinvParams, a: AbstractValue) -> AbstractValue:
    *batch, m, n = _at_least_2d(a, "linalg.pinv")
    dtype = _linalg_probe(a, lambda e: np.linalg.pinv(e, **params.kwargs())).dtype
    return AbstractValue(tuple(batch) + (n, m), dtype)


def pinv_cotangent(a: Any, x: Any, gx: Any, hermitian: bool = False) -> Any:
    """The cotangent of ``a`` for ``x = pinv(a)`` (Golub & Pereyra; exact while the rank
    stays the same)."""
    m, n = _matrix_dims(a, "pinv")
    xt = _t(x)
    out = -np.matmul(np.matmul(xt, gx), xt)
    out = out + np.matmul(np.matmul(np.eye(m) - np.matmul(a, x), _t(gx)), np.matmul(x, xt))
    out = out + np.matmul(np.matmul(xt, x), np.matmul(_t(gx), np.eye(n) - np.matmul(x, a)))
    return read_lower(_symmetric(out)) if hermitian else out


@VJP.register(K.PINV)
def _pinv_vjp(p: Primal, g: Any) -> list[Cotangent]:
    params = cast("PinvParams", p.params)
    a = p.args[0]
    return [lambda: pinv_cotangent(a, p.out, g, bool(params.hermitian))]


NOTES.add(K.PINV, "exact while the rank stays; hermitian reads the lower triangle")


# --- lstsq ---


implements(np.linalg.lstsq)(
    _linalg_op(OpKind.LSTSQ, ("rcond",), _result_class(np.linalg.lstsq, _SPD, _SPD[0]))
)


@ABSTRACT_EVAL.register(K.LSTSQ)
def _lstsq_aval(
    params: LstsqParams, a: AbstractValue, b: AbstractValue
) -> tuple[AbstractValue, ...]:
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
        np.eye(1, dtype=a.dtype), np.ones((1,) * len(bshape), b.dtype), **params.kwargs()
    )
    return (
        AbstractValue((n,) + tuple(bshape[1:]), x.dtype),
        AbstractValue((None,), res.dtype),
        AbstractValue((), np.asarray(rank).dtype),
        AbstractValue((_min_dim(m, n),), sv.dtype),
    )


@VJP.register(K.LSTSQ)
def _lstsq_vjp(p: Primal, g: Any) -> list[Cotangent]:
    """``x`` is ``pinv(a) @ b`` (the minimum-norm solution; the cutoff ``rcond`` applied as
    lstsq does); the singular values are ``svd(a, compute_uv=False)``'s; the rank has none."""
    params = cast("LstsqParams", p.params)
    gx, gres, _, gsv = g
    if gres is not None:
        raise NotImplementedError(
            "the gradient of np.linalg.lstsq's residuals is not implemented (their length "
            "depends on the rank). Fix: compute them from the solution, "
            "np.sum((a @ x - b) ** 2, axis=0)"
        )
    a = p.args[0]
    m, n = _matrix_dims(a, "lstsq")
    rcond = params.rcond
    rtol = float(np.finfo(a.dtype).eps * max(m, n)) if rcond is None or rcond < 0 else rcond

    def fn(a: Any, b: Any) -> tuple[Any, ...]:
        x = np.matmul(np.linalg.pinv(a, rtol=rtol), b)
        return x, None, None, np.linalg.svd(a, compute_uv=False)

    return composed(p, [gx, None, None, gsv], fn)


NOTES.add(K.LSTSQ, "x as pinv(a) @ b, singular values; residuals raise (their length is data)")
