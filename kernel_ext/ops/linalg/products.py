"""Products: matmul, dot, outer, vdot, vecdot, matvec, vecmat and einsum, every layer's rules.

Each op's NumPy entry points, abstract evaluation, reference lowering, simplification, VJP,
whole-graph rule and ONNX translation, side by side (see :mod:`kernel_ext.ops`); ``np.outer``'s
traced form is :func:`kernel_ext.trace.numpy_api.linalg.outer`, which a composition also calls.
The whole-graph compiler's 2-D product loop (``matmul_call``), which its writer also chains, and
NumPy's matmul gufunc loop on 3-D views (``MM_FLOAT``) stay in
:mod:`kernel_ext.backends.whole_graph_ops.linalg`. ONNX computes the products with ``MatMul``,
``Mul`` and ``Einsum``; ``matvec`` and ``vecmat`` have no translation
(``onnx/rules/refusals.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.rules import (
    NOTES,
    VJP,
    Cotangent,
    Primal,
    multiply_vjp,
    reshape_like,
    swap_last_axes,
    unbroadcast,
)
from ...backends.emit.literals import Unsupported, ctor
from ...backends.emit.source import Source
from ...backends.static_shapes import aval_of_node, ranked_shape
from ...backends.ufunc_loops import find_loop
from ...backends.whole_graph_ops.common import (
    LOOP3,
    Rule,
    Writer,
    alloc_result,
    array_arg,
    loop_scratch,
    need_ufunc_loop,
    only_params,
    result_dtype,
    shape_tuple,
    ufunc_loop,
)
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...backends.whole_graph_ops.linalg import MM_FLOAT, matmul_call, plain_matmul
from ...ir import Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL, AbstractValue, Shape, einsum_shape
from ...ir.abstract.core import broadcast_shapes, format_shape, known_rank, probe_dtype, shape_of
from ...ir.interpreter import LOWER
from ...ir.params import ConstantParams, EinsumParams, NoParams
from ...onnx.builder import GraphBuilder
from ...onnx.refusal import refuse
from ...onnx.rules.common import ANY_VALUE, handled_params, integer_sum, out_dtype, rank, wide
from ...onnx.rules.common import RULES as ONNX
from ...passes.simplify import MAX_SCAN, Proposal, kind_of
from ...passes.simplify import RULES as SIMPLIFY
from ...trace import Tensor
from ...trace.context import bind
from ...trace.numpy_api.common import declare, implements, is_traced
from ...trace.numpy_api.linalg import outer
from ...trace.opaque import numpy_call, ufunc_method_call
from ...trace.signatures import ALL
from ...trace.tensor import GUFUNCS

K = OpKind


# --- matmul, dot, outer ---


@implements(np.dot)
def _dot(a: Any, b: Any) -> Any:
    return bind(OpKind.DOT, (a, b))


implements(np.outer)(outer)


def _inner_mismatch(fn: str, a: Shape, b: Shape, da: Any, db: Any) -> None:
    if da is not None and db is not None and da != db:
        raise ValueError(
            f"{fn}: Input operand 1 has a mismatch in its core dimension 0 "
            f"(size {db} is different from {da}); shapes {format_shape(a)} and "
            f"{format_shape(b)}"
        )


@ABSTRACT_EVAL.register(K.MATMUL)
def _matmul_aval(params: NoParams, a: AbstractValue, b: AbstractValue) -> AbstractValue:
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


@ABSTRACT_EVAL.register(K.DOT)
def _dot_aval(params: NoParams, a: AbstractValue, b: AbstractValue) -> AbstractValue:
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


@ABSTRACT_EVAL.register(K.OUTER)
def _outer_aval(params: NoParams, a: AbstractValue, b: AbstractValue) -> AbstractValue:
    sizes = tuple(x.size if isinstance(x, AbstractValue) else 1 for x in (a, b))
    return AbstractValue(sizes, _array_result_type(a, b))


def _array_result_type(*operands: Any) -> np.dtype:
    """The result dtype of a function that makes each operand an array first (np.dot,
    np.outer): a Python number is not weak there, it becomes an array of its default dtype."""
    return np.result_type(
        *(x.dtype if isinstance(x, AbstractValue) else np.asarray(x).dtype for x in operands)
    )


# (inv, det and solve, which the layer served from the same table, are in .factorisations)
_LINALG: dict[OpKind, Callable[..., Any]] = {
    OpKind.MATMUL: np.matmul,
    OpKind.DOT: np.dot,
    OpKind.OUTER: np.outer,
}


@LOWER.register(*_LINALG)
def _lower_products(node: Node) -> Callable[..., Any]:
    return _LINALG[node.op]


def _is_identity_matrix(c: Any) -> bool:
    if not isinstance(c, Node) or c.op is not OpKind.CONSTANT:
        return False
    value = cast("ConstantParams", c.params).value
    return (
        value.ndim == 2
        and value.shape[0] == value.shape[1]
        and value.size <= MAX_SCAN
        and bool(np.array_equal(value, np.eye(value.shape[0], dtype=value.dtype)))
    )


def _simplify_matmul(node: Node, args: tuple[Any, ...]) -> Proposal:
    """``x @ I -> x`` and ``I @ x -> x`` for integer and bool ``x``: every product is exact and
    the added zeros cannot overflow (for floats ``nan * 0`` and signed zeros break it)."""
    a, b = args
    if _is_identity_matrix(b) and (kind_of(a) or "-") in "biu":
        return cast("Node", a)
    if _is_identity_matrix(a) and (kind_of(b) or "-") in "biu":
        return cast("Node", b)
    return None


SIMPLIFY.add(K.MATMUL, [_simplify_matmul])


def operand_rank(p: Primal, i: int) -> int:
    """The rank of argument ``i`` (a product's rank decides its rule; it is always known)."""
    shape = p.shape(i)
    if shape is None:
        raise TypeError(f"the gradient of {p.node.op.value} needs its operands' ranks")
    return len(shape)


@VJP.register(K.MATMUL)
def _matmul_vjp(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    a_vec, b_vec = operand_rank(p, 0) == 1, operand_rank(p, 1) == 1
    a2 = np.expand_dims(a, 0) if a_vec else a
    b2 = np.expand_dims(b, -1) if b_vec else b
    g2 = g
    if a_vec and b_vec:
        return [lambda: g * b, lambda: g * a]
    if a_vec:
        g2 = np.expand_dims(g2, -2)
    if b_vec:
        g2 = np.expand_dims(g2, -1)

    def da() -> Any:
        d = np.matmul(g2, swap_last_axes(b2))
        d = np.squeeze(d, -2) if a_vec else d
        return unbroadcast(d, p.shape(0))

    def db() -> Any:
        d = np.matmul(swap_last_axes(a2), g2)
        d = np.squeeze(d, -1) if b_vec else d
        return unbroadcast(d, p.shape(1))

    return [da, db]


@VJP.register(K.DOT)
def _dot_vjp(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    na, nb = operand_rank(p, 0), operand_rank(p, 1)
    if na == 0 or nb == 0:
        return list(multiply_vjp(p, g))
    if na <= 2 and nb <= 2:
        return list(_matmul_vjp(p, g))
    if nb == 1:  # (..., k) . (k,): sum over a's last axis
        return [
            lambda: np.expand_dims(g, -1) * b,
            lambda: np.tensordot(g, a, axes=(list(range(na - 1)), list(range(na - 1)))),
        ]
    raise NotImplementedError(
        "the gradient of np.dot of an array with more than two "
        "dimensions by a matrix is not implemented; use np.matmul"
    )


@VJP.register(K.OUTER)
def _outer_vjp(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    fa, fb = np.reshape(a, (-1,)), np.reshape(b, (-1,))
    return [lambda: reshape_like(np.matmul(g, fb), a), lambda: reshape_like(np.matmul(fa, g), b)]


NOTES.add(K.DOT, "N-D by matrix not yet (use matmul)")


# Whole graph: NumPy's matmul gufunc loop (``MM_FLOAT``) for floats, wrapping loops for
# integers, an OR of ANDs for bools; a 2-D @ 2-D product of one dtype through
# ``matmul_call``, the form the writer also chains.

# Integer products wrap in the operands' dtype (``_wadd``/``_wmul``), as NumPy's integer
# matmul loop does; the order of the terms does not change a wrapped sum.
_MM_INT = """\
@_inline
def _mm_int(a, b, o):
    nb = o.shape[0]
    for q in range(nb):
        x = a[q if a.shape[0] != 1 else 0]
        y = b[q if b.shape[0] != 1 else 0]
        for i in range(x.shape[0]):
            for j in range(y.shape[1]):
                s = o.dtype.type(0)
                for k in range(x.shape[1]):
                    s = _wadd(s, _wmul(x[i, k], y[k, j]))
                o[q, i, j] = s
"""

_MM_BOOL = """\
@_inline
def _mm_bool(a, b, o):
    nb = o.shape[0]
    for q in range(nb):
        x = a[q if a.shape[0] != 1 else 0]
        y = b[q if b.shape[0] != 1 else 0]
        for i in range(x.shape[0]):
            for j in range(y.shape[1]):
                s = False
                for k in range(x.shape[1]):
                    if x[i, k] and y[k, j]:
                        s = True
                        break
                o[q, i, j] = s
"""


def _matmul_ranks(node: Node) -> tuple[Node, Node, np.dtype]:
    a, b = array_arg(node, 0, "an operand"), array_arg(node, 1, "an operand")
    ra, rb = len(ranked_shape(a)), len(ranked_shape(b))
    dt = result_dtype(node)
    if node.op is OpKind.DOT:
        if not (1 <= ra <= 2 and 1 <= rb <= 2):
            raise Unsupported(f"dot of ranks {ra} and {rb} (1-D and 2-D operands only)")
    elif not (1 <= ra <= 3 and 1 <= rb <= 3):
        raise Unsupported(f"matmul of ranks {ra} and {rb} (up to one batch axis)")
    for x in (a, b):
        if not np.can_cast(aval_of_node(x).dtype, dt, "safe"):
            raise Unsupported(f"{node.op.value} of {x.dtype} into {dt}")
    if dt.kind == "f":
        if find_loop(np.matmul, (dt,) * 3) is None:
            raise Unsupported(f"no NumPy matmul loop for {dt}")
    elif dt.kind not in "biu":
        raise Unsupported(f"{node.op.value} of {dt}")
    return a, b, dt


def _emit_matmul(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    a_node, b_node, dt = _matmul_ranks(node)
    ra, rb = len(ranked_shape(a_node)), len(ranked_shape(b_node))
    a, b = args[0].name, args[1].name
    dts = ctor(dt)
    if np.dtype(a_node.dtype) != dt:
        v = w.fresh("m")
        out.line(f"{v} = {a}.astype({dts})")
        a = v
    if np.dtype(b_node.dtype) != dt:
        v = w.fresh("m")
        out.line(f"{v} = {b}.astype({dts})")
        b = v
    # 3-D views (batch, rows, cols); a 1-D a is one row, a 1-D b one column
    a3 = {1: f"{a}[None, None, :]", 2: f"{a}[None, :, :]", 3: a}[ra]
    b3 = {1: f"{b}[None, :, None]", 2: f"{b}[None, :, :]", 3: b}[rb]
    if node.op is OpKind.DOT and dt.kind == "f":
        # np.dot copies an operand that BLAS cannot read as it is, then calls BLAS as
        # np.matmul would; the bits agree with matmul's loop (tested) when no copy is made,
        # so the other layouts (a matrix neither C- nor F-contiguous, a vector with a
        # stride <= 0) are rerun in NumPy.
        for x, r in ((a, ra), (b, rb)):
            if r == 2:
                w.signal(out, f"not ({x}.flags.c_contiguous or {x}.flags.f_contiguous)")
            else:
                w.signal(out, f"{x}.strides[0] <= 0 and {x}.shape[0] > 1")
    va, vb = w.fresh("ma"), w.fresh("mb")
    out.line(f"{va} = {a3}")
    out.line(f"{vb} = {b3}")
    w.signal(out, f"{va}.shape[2] != {vb}.shape[1]")
    batched = ra == 3 or rb == 3
    nb = "1"
    if batched:
        nb = w.fresh("nb")
        w.signal(
            out,
            f"{va}.shape[0] != {vb}.shape[0] and {va}.shape[0] != 1 and {vb}.shape[0] != 1",
        )
        out.line(f"{nb} = max({va}.shape[0], {vb}.shape[0])")
    out_dims = (
        ([nb] if batched else [])
        + ([f"{va}.shape[1]"] if ra > 1 else [])
        + ([f"{vb}.shape[2]"] if rb > 1 else [])
    )
    scalar = not out_dims
    o = w.fresh("mo")
    if scalar:
        out.line(f"{o} = np.empty((1, 1, 1), {dts})")
        o3 = o
    else:
        shape = shape_tuple(out_dims)
        test = " and ".join(f"{{sp}}.shape[{i}] == {d}" for i, d in enumerate(out_dims))
        w._out_buffer(node, shape, test, dts, out, o)
        if batched:
            o3 = {1: f"{o}[:, None, :]", 2: f"{o}[:, :, None]"}.get(
                1 if ra == 1 else 2 if rb == 1 else 0, o
            )
        else:
            o3 = {(2, 1): f"{o}[None, :, None]", (1, 2): f"{o}[None, None, :]"}.get(
                (ra, rb), f"{o}[None, :, :]"
            )
    if dt.kind == "f":
        w.helpers["_mm_float"] = MM_FLOAT
        # NumPy's strides: 0 for a dimension it added (a 1-D operand, a broadcast batch)
        sa0 = f"{va}.strides[0] if {va}.shape[0] != 1 else 0" if ra == 3 else "0"
        sb0 = f"{vb}.strides[0] if {vb}.shape[0] != 1 else 0" if rb == 3 else "0"
        sa1 = f"{va}.strides[1]" if ra > 1 else "0"
        sb2 = f"{vb}.strides[2]" if rb > 1 else "0"
        so1 = "0" if ra == 1 or scalar else f"{o}.strides[{1 if batched else 0}]"
        so2 = "0" if rb == 1 or scalar else f"{o}.strides[{len(out_dims) - 1}]"
        out.line(
            f"_mm_float({va}, {vb}, {o3}, {ufunc_loop(w, np.matmul, (dt,) * 3)}, "
            f"{loop_scratch(w)}, {sa0}, {sa1}, {sb0}, {sb2}, {so1}, {so2})"
        )
    else:
        name = "_mm_bool" if dt.kind == "b" else "_mm_int"
        w.helpers[name] = _MM_BOOL if dt.kind == "b" else _MM_INT
        out.line(f"{name}({va}, {vb}, {o3})")
    if scalar:
        out.line(f"{t} = {o}[0, 0, 0]")
        return "scalar"
    out.line(f"{t} = {o}")
    return "fresh"


WHOLE_GRAPH.add(K.DOT, Rule(lambda n: _matmul_ranks(n) and None, _emit_matmul))


def _check_plain_matmul(node: Node) -> None:
    dt = aval_of_node(node).dtype
    if dt.kind == "f" and find_loop(np.matmul, (dt,) * 3) is None:
        raise Unsupported(f"no NumPy matmul loop for {dt}")
    if dt.kind not in "fiub":
        raise Unsupported(f"matmul of {dt}")


def _emit_plain_matmul(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    a, b = args[0].name, args[1].name
    w.signal(out, f"{a}.shape[1] != {b}.shape[0]")
    # Never one of the operands: a spare is a dead buffer, and a new one is new.
    w._out_buffer(
        node,
        f"({a}.shape[0], {b}.shape[1])",
        f"{{sp}}.shape[0] == {a}.shape[0] and {{sp}}.shape[1] == {b}.shape[1]",
        ctor(np.dtype(node.dtype)),
        out,
        t,
    )
    out.line(matmul_call(w, node, a, b, t))
    return "fresh"


def _check_matmul(node: Node) -> None:
    if plain_matmul(node):
        _check_plain_matmul(node)
    else:
        _matmul_ranks(node)


def _emit_any_matmul(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    emit = _emit_plain_matmul if plain_matmul(node) else _emit_matmul
    return emit(w, node, args, t, out)


WHOLE_GRAPH.add(K.MATMUL, Rule(_check_matmul, _emit_any_matmul))


def _check_outer(node: Node) -> np.dtype:
    only_params(node, set())
    a, b = array_arg(node, 0, "an operand"), array_arg(node, 1, "an operand")
    dt = result_dtype(node)
    for x in (a, b):
        if np.dtype(x.dtype) != dt:
            raise Unsupported(f"outer of {x.dtype} into {dt} (one dtype only)")
    if dt.kind == "b":
        raise Unsupported("outer of bools")
    need_ufunc_loop(np.multiply, dt)
    return dt


def _emit_outer(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """``multiply(a.ravel()[:, None], b.ravel()[None, :])`` as NumPy runs it: its multiply
    loop once per row, ``a[i]`` with stride 0."""
    dt = _check_outer(node)
    a, b = w.fresh("u"), w.fresh("u")
    out.line(f"{a} = {args[0].name}.ravel()")
    out.line(f"{b} = {args[1].name}.ravel()")
    alloc_result(w, node, [f"{a}.size", f"{b}.size"], ctor(dt), out, t)
    w.helpers["_loop3"] = LOOP3
    i = w.fresh("i")
    with (
        out.block(f"if {b}.size > 0:") as nonempty,
        nonempty.block(f"for {i} in range({a}.size):") as body,
    ):
        body.line(
            f"_loop3({ufunc_loop(w, np.multiply, (dt,) * 3)}, {loop_scratch(w)}, "
            f"{a}[{i}:].ctypes.data, {b}.ctypes.data, {t}[{i}].ctypes.data, {b}.size, "
            f"0, {b}.strides[0], {t}.strides[1])"
        )
    return "fresh"


WHOLE_GRAPH.add(K.OUTER, Rule(lambda n: _check_outer(n) and None, _emit_outer))


# ONNX: the products in the result's dtype, or int64 for narrow integers and bools


def _onnx_work(out: np.dtype) -> np.dtype:
    """The dtype products are computed in: int64 for narrow integers (the low bits, NumPy's
    wrapped result, do not depend on the width) and for bools (any product term nonzero is
    NumPy's True)."""
    return np.dtype(np.int64) if out == np.bool_ else wide(out)


def _onnx_operands(b: GraphBuilder, node: Node) -> list[str]:
    out = out_dtype(node)
    if out.kind not in "iufb" or out == np.float16:
        raise refuse(
            node,
            f"onnxruntime has no {out} MatMul kernel",
            "cast the operands to a float or integer dtype first",
        )
    return [b.operand(a, _onnx_work(out)) for a in node.args]


def _onnx_result(b: GraphBuilder, node: Node, name: str) -> list[str]:
    return [b.cast(name, _onnx_work(out_dtype(node)), out_dtype(node))]


@ONNX.register(K.MATMUL)
def _onnx_matmul(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node)
    return _onnx_result(b, node, b.one("MatMul", _onnx_operands(b, node)))


@ONNX.register(K.DOT)
def _onnx_dot(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node)
    ranks = [rank(a) if isinstance(a, Node) else np.ndim(a) for a in node.args]
    names = _onnx_operands(b, node)
    if 0 in ranks:
        return _onnx_result(b, node, b.one("Mul", names))
    if max(ranks) > 2:
        raise refuse(
            node,
            "np.dot of arrays above 2-D sums over a different axis than ONNX's MatMul",
            "use np.matmul (or @) or np.tensordot",
        )
    return _onnx_result(b, node, b.one("MatMul", names))


@ONNX.register(K.OUTER)
def _onnx_outer(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node)
    a, c = _onnx_operands(b, node)
    col = b.one("Reshape", [a, b.ints([-1, 1])])
    row = b.one("Reshape", [c, b.ints([1, -1])])
    return _onnx_result(b, node, b.one("Mul", [col, row]))


# --- vdot ---


@implements(np.vdot)
def _vdot(a: Any, b: Any) -> Any:
    return bind(OpKind.VDOT, (a, b))


@ABSTRACT_EVAL.register(K.VDOT)
def _vdot_aval(params: NoParams, a: Any, b: Any) -> AbstractValue:
    na = a.size if isinstance(a, AbstractValue) else 1
    nb = b.size if isinstance(b, AbstractValue) else 1
    if na is not None and nb is not None and na != nb:
        raise ValueError("vectors have different lengths")
    return AbstractValue((), probe_dtype(np.vdot, a, b))


@LOWER.register(K.VDOT)
def _lower_vdot(node: Node) -> Callable[..., Any]:
    return np.vdot


@VJP.register(K.VDOT)
def _vdot_vjp(p: Primal, g: Any) -> list[Cotangent]:
    """``sum(ravel(a) * ravel(b))`` (real arrays)."""
    a, b = p.args

    def part(mine: Any, other: Any) -> Any:
        return np.reshape(
            g * np.ravel(other),
            np.shape(mine)
            if not isinstance(mine, Tensor)
            else tuple(-1 if d is None else d for d in cast("tuple[Any, ...]", mine.shape)),
        )

    return [
        (lambda: part(a, b)) if isinstance(a, Tensor) else None,
        (lambda: part(b, a)) if isinstance(b, Tensor) else None,
    ]


NOTES.add(K.VDOT, "real arrays")


@ONNX.register(K.VDOT)
def _onnx_vdot(b: GraphBuilder, node: Node) -> list[str]:
    """np.vdot of real arrays: the flattened products summed (integers exactly)."""
    handled_params(node)
    a, c = [b.one("Reshape", [n, b.ints([-1])]) for n in _onnx_operands(b, node)]
    product = b.one("Mul", [a, c])
    if out_dtype(node).kind == "f":
        return [b.one("ReduceSum", [product], keepdims=0)]
    return _onnx_result(b, node, integer_sum(b, product, 1, [0], False))


# --- vecdot, matvec, vecmat ---


def _gufunc(kind: OpKind) -> Callable[..., Any]:
    def handler(*inputs: Any, **kwargs: Any) -> Any:
        if kwargs:  # axes=, axis=, out=, dtype=: NumPy's own gufunc call
            return ufunc_method_call(getattr(np, kind.value), "__call__", inputs, kwargs)
        return bind(kind, inputs)

    return handler


GUFUNCS.update(
    {
        np.vecdot: _gufunc(OpKind.VECDOT),
        np.matvec: _gufunc(OpKind.MATVEC),
        np.vecmat: _gufunc(OpKind.VECMAT),
    }
)


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


@ABSTRACT_EVAL.register(K.VECDOT)
def _vecdot_aval(params: NoParams, x1: Any, x2: Any) -> AbstractValue:
    (b1, (n1,)), (b2, (n2,)) = _core_dims(x1, 1, "vecdot"), _core_dims(x2, 1, "vecdot")
    _same_dim(n1, n2, "vecdot")
    return AbstractValue(broadcast_shapes(b1, b2), probe_dtype(np.vecdot, x1, x2))


@ABSTRACT_EVAL.register(K.MATVEC)
def _matvec_aval(params: NoParams, a: Any, v: Any) -> AbstractValue:
    (b1, (m, n)), (b2, (k,)) = _core_dims(a, 2, "matvec"), _core_dims(v, 1, "matvec")
    _same_dim(n, k, "matvec")
    return AbstractValue(broadcast_shapes(b1, b2) + (m,), probe_dtype(np.matvec, a, v))


@ABSTRACT_EVAL.register(K.VECMAT)
def _vecmat_aval(params: NoParams, v: Any, a: Any) -> AbstractValue:
    (b1, (k,)), (b2, (m, n)) = _core_dims(v, 1, "vecmat"), _core_dims(a, 2, "vecmat")
    _same_dim(k, m, "vecmat")
    return AbstractValue(broadcast_shapes(b1, b2) + (n,), probe_dtype(np.vecmat, v, a))


@LOWER.register(K.VECDOT, K.MATVEC, K.VECMAT)
def _lower_gufunc(node: Node) -> Callable[..., Any]:
    gufunc: Callable[..., Any] = getattr(np, node.op.value)
    return gufunc


@VJP.register(K.VECDOT)
def _vecdot_vjp(p: Primal, g: Any) -> list[Cotangent]:
    """``sum(x1 * x2, axis=-1)`` over broadcast batch axes."""
    x1, x2 = p.args
    ge = np.expand_dims(g, -1)
    return [
        (lambda: unbroadcast(ge * x2, p.shape(0))) if isinstance(x1, Tensor) else None,
        (lambda: unbroadcast(ge * x1, p.shape(1))) if isinstance(x2, Tensor) else None,
    ]


@VJP.register(K.MATVEC)
def _matvec_vjp(p: Primal, g: Any) -> list[Cotangent]:
    """``out[..., i] = sum_j a[..., i, j] v[..., j]``."""
    a, v = p.args
    return [
        (lambda: unbroadcast(np.expand_dims(g, -1) * np.expand_dims(v, -2), p.shape(0)))
        if isinstance(a, Tensor)
        else None,
        (lambda: unbroadcast(np.sum(np.expand_dims(g, -1) * a, axis=-2), p.shape(1)))
        if isinstance(v, Tensor)
        else None,
    ]


@VJP.register(K.VECMAT)
def _vecmat_vjp(p: Primal, g: Any) -> list[Cotangent]:
    """``out[..., j] = sum_i v[..., i] a[..., i, j]``."""
    v, a = p.args
    return [
        (lambda: unbroadcast(np.sum(a * np.expand_dims(g, -2), axis=-1), p.shape(0)))
        if isinstance(v, Tensor)
        else None,
        (lambda: unbroadcast(np.expand_dims(v, -1) * np.expand_dims(g, -2), p.shape(1)))
        if isinstance(a, Tensor)
        else None,
    ]


NOTES.add(K.VECDOT, "over the last axis")
NOTES.add(K.MATVEC, "")
NOTES.add(K.VECMAT, "")


@ONNX.register(K.VECDOT)
def _onnx_vecdot(b: GraphBuilder, node: Node) -> list[str]:
    """np.vecdot of real arrays: the products summed over the last axis (integers exactly)."""
    handled_params(node)
    a, c = _onnx_operands(b, node)
    product = b.one("Mul", [a, c])
    out = out_dtype(node)
    ndim = max(rank(arg) for arg in node.args if isinstance(arg, Node))
    if out.kind == "f":
        return [b.one("ReduceSum", [product, b.ints([-1])], keepdims=0)]
    return _onnx_result(b, node, integer_sum(b, product, ndim, [ndim - 1], False))


# --- einsum ---
# (its shape, einsum_shape, stays in kernel_ext.ir.abstract.linalg with the other shape helpers)


@implements(np.einsum)
@declare.parameters("operands", "optimize", ALL)
def _einsum(*operands: Any, optimize: Any = False, **kwargs: Any) -> Any:
    if not operands or not isinstance(operands[0], str) or is_traced(kwargs):
        # the interleaved form einsum(a, [0, 1], b, [1, 2]): NumPy's own call
        return numpy_call(np.einsum, operands, {"optimize": optimize, **kwargs})
    attrs: dict[str, Any] = {"subscripts": operands[0]}
    if optimize is not False:
        attrs["optimize"] = optimize
    for key, value in kwargs.items():
        attrs[key] = np.dtype(value) if key == "dtype" and value is not None else value
    return bind(OpKind.EINSUM, tuple(operands[1:]), attrs)


@ABSTRACT_EVAL.register(K.EINSUM)
def _einsum_aval(params: EinsumParams, *operands: Any) -> AbstractValue:
    subscripts = params.subscripts
    kwargs = params.kwargs("subscripts", "optimize")
    dtype = probe_dtype(lambda *ops: np.einsum(subscripts, *ops, **kwargs), *operands)
    return AbstractValue(einsum_shape(subscripts, [shape_of(o) for o in operands]), dtype)


@LOWER.register(K.EINSUM)
def _lower_einsum(node: Node) -> Callable[..., Any]:
    params = cast("EinsumParams", node.params)
    subscripts = params.subscripts
    kw = params.kwargs("subscripts")

    def einsum(*operands: Any) -> Any:
        out = np.einsum(subscripts, *operands, **kw)
        # NumPy returns a view for a pure relabelling ('ii->i', 'ij->ji'); the graph's einsum
        # owns its result (LINALG ops never alias), so such a result is copied.
        if isinstance(out, np.ndarray) and any(
            isinstance(o, np.ndarray) and np.may_share_memory(out, o) for o in operands
        ):
            out = out.copy()
        return out

    return einsum


def _einsum_parts(subscripts: str, n: int) -> tuple[list[str], str]:
    """The operands' subscripts and the output's, the implicit output (the letters used
    once, sorted) made explicit."""
    text = subscripts.replace(" ", "")
    if "." in text:
        raise NotImplementedError(
            "the gradient of einsum with '...' is not implemented; name every axis"
        )
    if "->" in text:
        ins, out = text.split("->")
    else:
        ins = text
        out = "".join(sorted(c for c in set(ins.replace(",", "")) if ins.count(c) == 1))
    parts = ins.split(",")
    assert len(parts) == n
    return parts, out


@VJP.register(K.EINSUM)
def _einsum_vjp(p: Primal, g: Any) -> list[Cotangent]:
    """The cotangent of operand ``i`` is an einsum of ``g`` with the other operands, the
    subscripts permuted so that operand ``i``'s come out; letters only operand ``i`` has (it
    sums over them alone) are broadcast back."""
    params = cast("EinsumParams", p.params)
    parts, out = _einsum_parts(params.subscripts, len(p.args))

    def operand(i: int) -> Any:
        mine = parts[i]
        if len(set(mine)) != len(mine):
            raise NotImplementedError(
                "the gradient of einsum with a repeated subscript in "
                f"one operand ({mine!r}: a diagonal) is not implemented"
            )
        others = [j for j in range(len(parts)) if j != i]
        known = set(out).union(*(parts[j] for j in others))
        kept = "".join(c for c in mine if c in known)
        spec = ",".join([out] + [parts[j] for j in others]) + "->" + kept
        d = np.einsum(spec, g, *[p.args[j] for j in others])
        missing = [k for k, c in enumerate(mine) if c not in known]
        if missing:
            d = np.broadcast_to(
                np.expand_dims(d, tuple(missing)), cast("tuple[Any, ...]", p.shape(i))
            )
        return d

    return [
        (lambda i=i: operand(i)) if isinstance(a, Tensor) else None for i, a in enumerate(p.args)
    ]


NOTES.add(K.EINSUM, "static subscripts without '...' or a repeated letter in one operand")


@ONNX.register(K.EINSUM)
def _onnx_einsum(b: GraphBuilder, node: Node) -> list[str]:
    params = cast("EinsumParams", node.params)
    handled_params(node, subscripts=ANY_VALUE, optimize=ANY_VALUE)
    subscripts = params.subscripts
    terms = subscripts.split("->")[0].split(",")
    spans = {
        (rank(a) if isinstance(a, Node) else np.ndim(a)) - len(t.replace("...", ""))
        for t, a in zip(terms, node.args)
        if "..." in t
    }
    if len(spans) > 1:
        raise refuse(
            node,
            "ONNX's Einsum needs every ellipsis to stand for as many axes (NumPy broadcasts them)",
            "give the operands the same number of axes",
        )
    return _onnx_result(b, node, b.one("Einsum", _onnx_operands(b, node), equation=subscripts))
