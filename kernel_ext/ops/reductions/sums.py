"""Sums, products and means, and the logical reductions: sum, prod, mean, any, all.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`); the abstract
evaluation and the lowering are the group's (:mod:`.generic`). A fused kernel folds them with
the op's ``accumulator``: sum, prod and mean by the kernel generator's default plan
(``backends.codegen.reductions``), any and all by the plan registered here."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ...autodiff.rules import NOTES, VJP, Cotangent, Primal
from ...backends.codegen.reductions import (
    REDUCTION_PLANS,
    Reduced,
    ReductionPlan,
    accumulator,
    identity,
)
from ...backends.emit.literals import BOOL, Unsupported
from ...ir import Node, OpKind
from ...ir.params import ReduceParams
from ...onnx.builder import GraphBuilder, elem_type
from ...onnx.refusal import refuse
from ...onnx.rules.common import ANY_VALUE, handled_params, integer_sum, out_dtype, sorted_axes
from ...onnx.rules.common import RULES as ONNX
from ...trace.numpy_api.common import implements
from .common import axes_input, count, expand_to, reduction, reduction_parts
from .entry_points import logical_handler, reduction_handler

K = OpKind

# --- sum, prod, mean ---

implements(np.sum)(reduction_handler(K.SUM))
implements(np.prod)(reduction_handler(K.PROD))
implements(np.mean)(reduction_handler(K.MEAN))


@VJP.register(K.SUM)
def _sum(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = reduction_parts(p)
    return [lambda: expand_to(g, x, axis, keepdims)]


@VJP.register(K.MEAN)
def _mean(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = reduction_parts(p)
    return [lambda: expand_to(g, x, axis, keepdims) / count(x, axis)]


@VJP.register(K.PROD)
def _prod(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = reduction_parts(p)
    return [lambda: expand_to(g, x, axis, keepdims) * expand_to(p.out, x, axis, keepdims) / x]


NOTES.add(K.PROD, "divides by x: not finite where x has zeros")


@ONNX.register(K.SUM)
def sum_(b: GraphBuilder, node: Node) -> list[str]:
    out = out_dtype(node)
    if out.kind == "f":
        return reduction("ReduceSum")(b, node)
    handled_params(node, axis=ANY_VALUE, keepdims=ANY_VALUE, dtype=ANY_VALUE)
    x = node.args[0]
    ndim = x.aval.ndim
    # int64 for every integer sum: wrapping addition has the same low bits at any width
    work = np.dtype(np.int64)
    params = cast("ReduceParams", node.params)
    total = integer_sum(
        b, b.operand(x, work), ndim, sorted_axes(params.axis, ndim), bool(params.keepdims)
    )
    return [b.cast(total, work, out)]


@ONNX.register(K.PROD)
def prod(b: GraphBuilder, node: Node) -> list[str]:
    if out_dtype(node).kind != "f":
        raise refuse(
            node,
            "onnxruntime computes integer products in floating point (wrong "
            "past 2**53, saturating where NumPy wraps)",
            "take the product of floats (x.astype(np.float64).prod())",
        )
    return reduction("ReduceProd")(b, node)


ONNX.add(K.MEAN, reduction("ReduceMean"))


# --- any, all ---
# (no gradient: ``autodiff.rules.ZERO_GRADIENT``)

implements(np.any)(logical_handler(K.ANY))
implements(np.all)(logical_handler(K.ALL))


@REDUCTION_PLANS.register(K.ANY, K.ALL)
def _logical_plan(r: Reduced) -> ReductionPlan:
    """``any``/``all``: a bool accumulator."""
    op = r.node.op
    if r.out_dt != BOOL:
        raise Unsupported("any/all to a non-bool dtype")
    return ReductionPlan(
        op, r.axis, r.keepdims, BOOL, BOOL, r.out_dt, identity(accumulator(op), BOOL)
    )


def _truth_count(b: GraphBuilder, node: Node, negate: bool) -> str:
    handled_params(node, axis=ANY_VALUE, keepdims=ANY_VALUE)
    x = node.args[0]
    truth = b.operand(x, np.bool_)
    if negate:
        truth = b.one("Not", [truth])
    count = b.one(
        "ReduceSum",
        [b.one("Cast", [truth], to=elem_type(np.int64)), *axes_input(b, node, x)],
        keepdims=int(bool(cast("ReduceParams", node.params).keepdims)),
    )
    return count


@ONNX.register(K.ANY)
def any_(b: GraphBuilder, node: Node) -> list[str]:
    count = _truth_count(b, node, negate=False)
    return [b.one("Greater", [count, b.const(0, np.int64)])]


@ONNX.register(K.ALL)
def all_(b: GraphBuilder, node: Node) -> list[str]:
    count = _truth_count(b, node, negate=True)
    return [b.one("Equal", [count, b.const(0, np.int64)])]
