"""Bitwise and integer ufuncs: bitwise_and, bitwise_or, bitwise_xor, invert, left_shift,
right_shift, gcd, lcm, bitwise_count.

Their abstract evaluation and reference lowering are every ufunc's (:mod:`.ufuncs`), and their
gradient is zero (``autodiff.rules.ZERO_GRADIENT``); a fused kernel has no form for gcd, lcm
and bitwise_count (``backends.codegen.KERNEL_FALLBACK_REASONS`` says why)."""

from __future__ import annotations

import numpy as np

from ...backends.codegen.inline_templates import INLINE, by_kind
from ...ir import Node, OpKind
from ...onnx.builder import GraphBuilder
from ...onnx.refusal import refuse
from ...onnx.rules.common import RULES as ONNX
from ...passes.simplify import RULES as SIMPLIFY
from ...passes.simplify import identity_operand, involution, same_operands
from .ufuncs import INTS_BOOL, Emit, no_onnx_form, truthy, ufunc_rule, zero

K = OpKind


# --- bitwise_and, bitwise_or, bitwise_xor, invert ---

SIMPLIFY.add(
    K.BITWISE_OR,
    identity_operand({"b": zero, "i": zero, "u": zero}, "both") + [same_operands(INTS_BOOL)],
)
SIMPLIFY.add(K.BITWISE_XOR, identity_operand({"b": zero, "i": zero, "u": zero}, "both"))
SIMPLIFY.add(K.BITWISE_AND, identity_operand({"b": truthy}, "both") + [same_operands(INTS_BOOL)])
SIMPLIFY.add(K.INVERT, [involution(INTS_BOOL)])

INLINE.add(K.BITWISE_AND, [by_kind("biu", lambda o, b: f"({o[0]} & {o[1]})")])
INLINE.add(K.BITWISE_OR, [by_kind("biu", lambda o, b: f"({o[0]} | {o[1]})")])
INLINE.add(K.BITWISE_XOR, [by_kind("biu", lambda o, b: f"({o[0]} ^ {o[1]})")])
INLINE.add(
    K.INVERT,
    [by_kind("iu", lambda o, b: f"(~{o[0]})"), by_kind("b", lambda o, b: f"(not {o[0]})")],
)


def _bitwise(op_type: str, logical: str) -> Emit:
    return lambda b, n, dt, node: b.one(logical if dt == np.bool_ else op_type, n)


def _invert(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    return b.one("Not" if dt == np.bool_ else "BitwiseNot", n)


# (the ONNX forms take bools as they are: And, Or, Xor, Not)
ONNX.add(K.BITWISE_AND, ufunc_rule(_bitwise("BitwiseAnd", "And"), bool_as=None))
ONNX.add(K.BITWISE_OR, ufunc_rule(_bitwise("BitwiseOr", "Or"), bool_as=None))
ONNX.add(K.BITWISE_XOR, ufunc_rule(_bitwise("BitwiseXor", "Xor"), bool_as=None))
ONNX.add(K.INVERT, ufunc_rule(_invert, bool_as=None))


# --- left_shift, right_shift ---

SIMPLIFY.add(K.LEFT_SHIFT, identity_operand({"i": zero, "u": zero}))
SIMPLIFY.add(K.RIGHT_SHIFT, identity_operand({"i": zero, "u": zero}))

INLINE.add(K.LEFT_SHIFT, [by_kind("iu", lambda o, b: b.helper("shl", o))])
INLINE.add(K.RIGHT_SHIFT, [by_kind("iu", lambda o, b: b.helper("shr", o))])


def _unsigned(dt: np.dtype) -> np.dtype:
    return np.dtype(f"u{dt.itemsize}")


def _shift_count(b: GraphBuilder, k: str, dt: np.dtype) -> tuple[str, str]:
    """(shift count as the unsigned type, is it at least the bit width): a negative count is
    huge as unsigned, as in NumPy's ``npy_lshift``/``npy_rshift``, which give 0 (or the sign)
    for counts past the width where C (and ONNX's BitShift) leave it undefined."""
    udt = _unsigned(dt)
    count = b.cast(k, dt, udt) if dt != udt else k
    bits = b.const(8 * dt.itemsize, udt)
    too_far = b.one("GreaterOrEqual", [count, bits])
    return b.one("Min", [count, b.const(8 * dt.itemsize - 1, udt)]), too_far


def _left_shift(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    if dt.kind not in "iu":
        raise refuse(node, f"shifts of {dt}", "shift integers")
    udt = _unsigned(dt)
    count, too_far = _shift_count(b, n[1], dt)
    shifted = b.one("BitShift", [b.cast(n[0], dt, udt), count], direction="LEFT")
    # (zero past the width: a multiply, as onnxruntime has no Where for wide unsigned types)
    shifted = b.one("Mul", [shifted, b.cast(b.one("Not", [too_far]), np.bool_, udt)])
    return b.cast(shifted, udt, dt)


def _right_shift(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    """Arithmetic for signed integers: ``~(~x >> k)`` for negative x (a logical shift of a
    non-negative value), which also gives NumPy's -1 for counts past the width."""
    if dt.kind not in "iu":
        raise refuse(node, f"shifts of {dt}", "shift integers")
    udt = _unsigned(dt)
    count, too_far = _shift_count(b, n[1], dt)
    if dt == udt:
        shifted = b.one("BitShift", [n[0], count], direction="RIGHT")
        return b.one("Mul", [shifted, b.cast(b.one("Not", [too_far]), np.bool_, dt)])
    negative = b.one("Less", [n[0], b.const(0, dt)])
    magnitude = b.one("Where", [negative, b.one("BitwiseNot", [n[0]]), n[0]])
    shifted = b.cast(
        b.one("BitShift", [b.cast(magnitude, dt, udt), count], direction="RIGHT"), udt, dt
    )
    return b.one("Where", [negative, b.one("BitwiseNot", [shifted]), shifted])


ONNX.add(K.LEFT_SHIFT, ufunc_rule(_left_shift))
ONNX.add(K.RIGHT_SHIFT, ufunc_rule(_right_shift))


# --- gcd, lcm, bitwise_count ---

ONNX.add(K.GCD, no_onnx_form("ONNX has no Gcd"))
ONNX.add(K.LCM, no_onnx_form("ONNX has no Lcm"))
ONNX.add(K.BITWISE_COUNT, no_onnx_form("ONNX has no population count"))
