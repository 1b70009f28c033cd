"""Linear algebra: matmul, dot, outer, det, and the refusals of the factorisations."""

from __future__ import annotations

import numpy as np

from kernel_ext.ir import Node
from kernel_ext.onnx.builder import GraphBuilder
from kernel_ext.onnx.refusal import refuse
from kernel_ext.onnx.rules.common import (
    ANY_VALUE,
    K,
    handled_params,
    integer_sum,
    out_dtype,
    rank,
    rule_for,
    wide,
)


def _linalg_work(out: np.dtype) -> np.dtype:
    """The dtype products are computed in: int64 for narrow integers (the low bits, NumPy's
    wrapped result, do not depend on the width) and for bools (any product term nonzero is
    NumPy's True)."""
    return np.dtype(np.int64) if out == np.bool_ else wide(out)


def _linalg_operands(b: GraphBuilder, node: Node) -> list[str]:
    out = out_dtype(node)
    if out.kind not in "iufb" or out == np.float16:
        raise refuse(
            node,
            f"onnxruntime has no {out} MatMul kernel",
            "cast the operands to a float or integer dtype first",
        )
    return [b.operand(a, _linalg_work(out)) for a in node.args]


def _linalg_result(b: GraphBuilder, node: Node, name: str) -> list[str]:
    return [b.cast(name, _linalg_work(out_dtype(node)), out_dtype(node))]


@rule_for(K.MATMUL)
def matmul(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node)
    return _linalg_result(b, node, b.one("MatMul", _linalg_operands(b, node)))


@rule_for(K.DOT)
def dot(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node)
    ranks = [rank(a) if isinstance(a, Node) else np.ndim(a) for a in node.args]
    names = _linalg_operands(b, node)
    if 0 in ranks:
        return _linalg_result(b, node, b.one("Mul", names))
    if max(ranks) > 2:
        raise refuse(
            node,
            "np.dot of arrays above 2-D sums over a different axis than ONNX's MatMul",
            "use np.matmul (or @) or np.tensordot",
        )
    return _linalg_result(b, node, b.one("MatMul", names))


@rule_for(K.OUTER)
def outer(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node)
    a, c = _linalg_operands(b, node)
    col = b.one("Reshape", [a, b.ints([-1, 1])])
    row = b.one("Reshape", [c, b.ints([1, -1])])
    return _linalg_result(b, node, b.one("Mul", [col, row]))


@rule_for(K.VECDOT)
def vecdot(b: GraphBuilder, node: Node) -> list[str]:
    """np.vecdot of real arrays: the products summed over the last axis (integers exactly)."""
    handled_params(node)
    a, c = _linalg_operands(b, node)
    product = b.one("Mul", [a, c])
    out = out_dtype(node)
    ndim = max(rank(arg) for arg in node.args if isinstance(arg, Node))
    if out.kind == "f":
        return [b.one("ReduceSum", [product, b.ints([-1])], keepdims=0)]
    return _linalg_result(b, node, integer_sum(b, product, ndim, [ndim - 1], False))


@rule_for(K.VDOT)
def vdot(b: GraphBuilder, node: Node) -> list[str]:
    """np.vdot of real arrays: the flattened products summed (integers exactly)."""
    handled_params(node)
    a, c = [b.one("Reshape", [n, b.ints([-1])]) for n in _linalg_operands(b, node)]
    product = b.one("Mul", [a, c])
    if out_dtype(node).kind == "f":
        return [b.one("ReduceSum", [product], keepdims=0)]
    return _linalg_result(b, node, integer_sum(b, product, 1, [0], False))


@rule_for(K.EINSUM)
def einsum(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, subscripts=ANY_VALUE, optimize=ANY_VALUE)
    subscripts = node.attrs["subscripts"]
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
    return _linalg_result(b, node, b.one("Einsum", _linalg_operands(b, node), equation=subscripts))


@rule_for(K.DET)
def det(b: GraphBuilder, node: Node) -> list[str]:
    out = out_dtype(node)
    if out.kind != "f":
        raise refuse(node, "ONNX's Det computes floats only", "cast to float first")
    return [b.one("Det", [b.operand(node.args[0], out)])]
