"""Comparisons and logic: equal, not_equal, less, less_equal, greater, greater_equal,
logical_and, logical_or, logical_xor, logical_not.

Their abstract evaluation and reference lowering are every ufunc's (:mod:`.ufuncs`), and their
gradient is zero (``autodiff.rules.ZERO_GRADIENT``): their results are booleans."""

from __future__ import annotations

import numpy as np

from ...backends.codegen.inline_templates import INLINE, by_kind, compare
from ...ir import Node, OpKind
from ...onnx.builder import GraphBuilder
from ...onnx.rules.common import RULES as ONNX
from ...passes.simplify import RULES as SIMPLIFY
from ...passes.simplify import identity_operand, involution, same_operands
from .ufuncs import Emit, onnx_op, truthy, ufunc_rule, zero

K = OpKind


# --- equal, not_equal, less, less_equal, greater, greater_equal ---

INLINE.add(K.EQUAL, [by_kind("biuf", compare("=="))])
INLINE.add(K.NOT_EQUAL, [by_kind("biuf", compare("!="))])
INLINE.add(K.LESS, [by_kind("iuf", compare("<"))])
INLINE.add(K.LESS_EQUAL, [by_kind("iuf", compare("<="))])
INLINE.add(K.GREATER, [by_kind("iuf", compare(">"))])
INLINE.add(K.GREATER_EQUAL, [by_kind("iuf", compare(">="))])


def _not_equal(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    return b.one("Not", [b.one("Equal", n)])


# (equality takes bools as they are; ONNX orders numbers only, so bools go through int8)
ONNX.add(K.EQUAL, ufunc_rule(onnx_op("Equal"), bool_as=None))
ONNX.add(K.NOT_EQUAL, ufunc_rule(_not_equal, bool_as=None))
ONNX.add(K.LESS, ufunc_rule(onnx_op("Less")))
ONNX.add(K.LESS_EQUAL, ufunc_rule(onnx_op("LessOrEqual")))
ONNX.add(K.GREATER, ufunc_rule(onnx_op("Greater")))
ONNX.add(K.GREATER_EQUAL, ufunc_rule(onnx_op("GreaterOrEqual")))


# --- logical_and, logical_or, logical_xor, logical_not ---

SIMPLIFY.add(K.LOGICAL_AND, identity_operand({"b": truthy}, "both") + [same_operands("b")])
SIMPLIFY.add(K.LOGICAL_OR, identity_operand({"b": zero}, "both") + [same_operands("b")])
SIMPLIFY.add(K.LOGICAL_NOT, [involution("b")])

INLINE.add(K.LOGICAL_AND, [by_kind("biuf", lambda o, b: f"({b.truth(0)} & {b.truth(1)})")])
INLINE.add(K.LOGICAL_OR, [by_kind("biuf", lambda o, b: f"({b.truth(0)} | {b.truth(1)})")])
INLINE.add(K.LOGICAL_XOR, [by_kind("biuf", lambda o, b: f"({b.truth(0)} != {b.truth(1)})")])
INLINE.add(
    K.LOGICAL_NOT,
    [by_kind("b", lambda o, b: f"(not {o[0]})"), by_kind("iuf", lambda o, b: f"({o[0]} == 0)")],
)


def _logical(op_type: str) -> Emit:
    def emit(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
        return b.one(op_type, [b.to_bool(x, dt) for x in n])

    return emit


ONNX.add(K.LOGICAL_AND, ufunc_rule(_logical("And"), bool_as=None))
ONNX.add(K.LOGICAL_OR, ufunc_rule(_logical("Or"), bool_as=None))
ONNX.add(K.LOGICAL_XOR, ufunc_rule(_logical("Xor"), bool_as=None))
ONNX.add(K.LOGICAL_NOT, ufunc_rule(_logical("Not"), bool_as=None))
