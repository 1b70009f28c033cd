"""Unary math ufuncs: negative, positive, conjugate, absolute, fabs, sign, sqrt, cbrt, square,
reciprocal, the exponentials and logarithms, the trigonometric and hyperbolic functions and
their inverses, deg2rad/radians, rad2deg/degrees, spacing.

Their abstract evaluation and reference lowering are every ufunc's (:mod:`.ufuncs`); the
gradient of sign and spacing is zero (``autodiff.rules.ZERO_GRADIENT``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...autodiff.rules import NOTES, VJP, Cotangent, Primal
from ...autodiff.rules import Rule as VjpRule
from ...backends.codegen.inline_templates import CUDA_MATH, INLINE, by_kind
from ...ir import Node, OpKind
from ...onnx.builder import GraphBuilder
from ...onnx.refusal import refuse
from ...onnx.rules.common import RULES as ONNX
from ...passes.simplify import RULES as SIMPLIFY
from ...passes.simplify import idempotent, identity_on, involution
from .ufuncs import INTS, NUMBERS, Emit, float_only, no_onnx_form, onnx_op, ufunc_rule

K = OpKind
LN2, LN10 = math.log(2.0), math.log(10.0)


def _unary(derivative: Callable[[Any, Any], Any]) -> VjpRule:
    """A unary op whose cotangent is ``g * derivative(x, out)``."""

    def vjp(p: Primal, g: Any) -> list[Cotangent]:
        return [lambda: g * derivative(p.args[0], p.out)]

    return vjp


# --- negative, positive, conjugate ---

SIMPLIFY.add(K.NEGATIVE, [involution(NUMBERS)])
SIMPLIFY.add(K.POSITIVE, [identity_on(NUMBERS)])
SIMPLIFY.add(K.CONJUGATE, [involution(NUMBERS), identity_on(INTS + "f")])

VJP.add(K.NEGATIVE, lambda p, g: [lambda: -g])
VJP.register(K.POSITIVE, K.CONJUGATE)(lambda p, g: [g])

INLINE.add(K.NEGATIVE, [by_kind("iuf", lambda o, b: f"(-{o[0]})")])
INLINE.add(K.POSITIVE, [by_kind("iuf", lambda o, b: o[0])])
INLINE.add(K.CONJUGATE, [by_kind("biuf", lambda o, b: o[0])])


def _negative(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    if dt.kind == "u":  # (ONNX's Neg is for signed types; 0 - x wraps as NumPy's)
        return b.one("Sub", [b.const(0, dt), n[0]])
    return b.one("Neg", n)


ONNX.add(K.NEGATIVE, ufunc_rule(_negative))
ONNX.add(K.POSITIVE, ufunc_rule(onnx_op("Identity"), bool_as=None))
ONNX.add(K.CONJUGATE, ufunc_rule(onnx_op("Identity"), bool_as=None))


# --- absolute, fabs, sign ---

SIMPLIFY.add(K.ABSOLUTE, [idempotent(INTS + "f"), identity_on("bu")])
SIMPLIFY.add(K.FABS, [idempotent("f")])
SIMPLIFY.add(K.SIGN, [idempotent(INTS + "f")])

VJP.register(K.ABSOLUTE, K.FABS)(_unary(lambda x, y: np.sign(x)))
NOTES.add(K.ABSOLUTE, "0 at 0")
NOTES.add(K.FABS, "0 at 0")

INLINE.add(
    K.ABSOLUTE,
    [by_kind("if", lambda o, b: f"abs({o[0]})"), by_kind("bu", lambda o, b: o[0])],
)
INLINE.add(K.FABS, [by_kind("f", lambda o, b: f"abs({o[0]})")])
INLINE.add(
    K.SIGN,
    [
        by_kind(
            "f",
            lambda o, b: (
                f"({b.one} if {o[0]} > 0 else (-{b.one} if {o[0]} < 0 "
                f"else ({b.zero} if {o[0]} == 0 else {o[0]})))"
            ),
        ),
        by_kind(
            "i", lambda o, b: f"({b.one} if {o[0]} > 0 else (-{b.one} if {o[0]} < 0 else {b.zero}))"
        ),
        by_kind("u", lambda o, b: f"({b.one} if {o[0]} > 0 else {b.zero})"),
    ],
)


def _sign(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    sign = b.one("Sign", n)
    if dt.kind != "f":
        return sign
    return b.one("Where", [b.one("IsNaN", n), n[0], sign])  # sign(nan) is nan


ONNX.add(K.ABSOLUTE, ufunc_rule(onnx_op("Abs")))
ONNX.add(K.FABS, ufunc_rule(onnx_op("Abs")))
ONNX.add(K.SIGN, ufunc_rule(_sign))


# --- sqrt, cbrt, square, reciprocal ---

VJP.add(K.SQRT, _unary(lambda x, y: 0.5 / y))
VJP.add(K.CBRT, _unary(lambda x, y: (1.0 / 3.0) / (y * y)))
VJP.add(K.SQUARE, _unary(lambda x, y: 2.0 * x))
VJP.add(K.RECIPROCAL, _unary(lambda x, y: -(y * y)))

CUDA_MATH.add(K.SQRT, "_dsqrt")
INLINE.add(
    K.SQUARE,
    [
        by_kind("iu", lambda o, b: f"_wmul({o[0]}, {o[0]})"),
        by_kind("f", lambda o, b: f"({o[0]} * {o[0]})"),
        by_kind("b", lambda o, b: o[0]),
    ],
)
INLINE.add(K.RECIPROCAL, [by_kind("f", lambda o, b: f"({b.one} / {o[0]})")])


def _square(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    return b.one("Mul", [n[0], n[0]])


def _reciprocal(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    if dt.kind != "f":
        raise refuse(
            node, "NumPy's integer reciprocal is an integer division", "use 1.0 / x on floats"
        )
    return b.one("Reciprocal", n)


ONNX.add(K.SQRT, ufunc_rule(float_only("Sqrt")))
ONNX.add(K.CBRT, no_onnx_form("no ONNX operator computes a correctly signed cube root"))
ONNX.add(K.SQUARE, ufunc_rule(_square))
ONNX.add(K.RECIPROCAL, ufunc_rule(_reciprocal))


# --- exp, exp2, expm1, log, log2, log10, log1p ---

VJP.add(K.EXP, _unary(lambda x, y: y))
VJP.add(K.EXP2, _unary(lambda x, y: y * LN2))
VJP.add(K.EXPM1, _unary(lambda x, y: y + 1.0))
VJP.add(K.LOG, _unary(lambda x, y: 1.0 / x))
VJP.add(K.LOG2, _unary(lambda x, y: 1.0 / (x * LN2)))
VJP.add(K.LOG10, _unary(lambda x, y: 1.0 / (x * LN10)))
VJP.add(K.LOG1P, _unary(lambda x, y: 1.0 / (x + 1.0)))

CUDA_MATH.add(K.EXP, "_dexp")
CUDA_MATH.add(K.LOG, "_dlog")


def _log_base(base: float) -> Emit:
    return lambda b, n, dt, node: b.one(
        "Div", [float_only("Log")(b, n, dt, node), b.const(math.log(base), dt)]
    )


def _exp2(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    return b.one("Pow", [b.const(2.0, dt), n[0]])


def _log1p(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    # Kahan's log1p: log(u) * x / (u - 1) with u = 1 + x keeps log1p's relative accuracy
    # for tiny x (log(1 + x) alone loses it); u == 1 means log1p(x) == x to working precision
    x = n[0]
    u = b.one("Add", [x, b.const(1.0, dt)])
    um1 = b.one("Sub", [u, b.const(1.0, dt)])
    ratio = b.one("Div", [b.one("Mul", [b.one("Log", [u]), x]), um1])
    exact = b.one("Equal", [um1, b.const(0.0, dt)])
    inf = b.one("IsInf", [x], detect_negative=0)
    return b.one("Where", [exact, x, b.one("Where", [inf, x, ratio])])


def _expm1(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    # Kahan's expm1: (u - 1) * x / log(u) with u = exp(x)
    x = n[0]
    u = b.one("Exp", [x])
    um1 = b.one("Sub", [u, b.const(1.0, dt)])
    ratio = b.one("Div", [b.one("Mul", [um1, x]), b.one("Log", [u])])
    small = b.one("Equal", [u, b.const(1.0, dt)])
    edge = b.one("Or", [b.one("IsInf", [u]), b.one("Equal", [um1, b.const(-1.0, dt)])])
    return b.one("Where", [small, x, b.one("Where", [edge, um1, ratio])])


ONNX.add(K.EXP, ufunc_rule(float_only("Exp")))
ONNX.add(K.EXP2, ufunc_rule(_exp2))
ONNX.add(K.EXPM1, ufunc_rule(_expm1))
ONNX.add(K.LOG, ufunc_rule(float_only("Log")))
ONNX.add(K.LOG2, ufunc_rule(_log_base(2.0)))
ONNX.add(K.LOG10, ufunc_rule(_log_base(10.0)))
ONNX.add(K.LOG1P, ufunc_rule(_log1p))


# --- sin, cos, tan, arcsin, arccos, arctan, sinh, cosh, tanh, arcsinh, arccosh, arctanh ---

VJP.add(K.SIN, _unary(lambda x, y: np.cos(x)))
VJP.add(K.COS, _unary(lambda x, y: -np.sin(x)))
VJP.add(K.TAN, _unary(lambda x, y: 1.0 + y * y))
VJP.add(K.ARCSIN, _unary(lambda x, y: 1.0 / np.sqrt(1.0 - x * x)))
VJP.add(K.ARCCOS, _unary(lambda x, y: -1.0 / np.sqrt(1.0 - x * x)))
VJP.add(K.ARCTAN, _unary(lambda x, y: 1.0 / (1.0 + x * x)))
VJP.add(K.SINH, _unary(lambda x, y: np.cosh(x)))
VJP.add(K.COSH, _unary(lambda x, y: np.sinh(x)))
VJP.add(K.TANH, _unary(lambda x, y: 1.0 - y * y))
VJP.add(K.ARCSINH, _unary(lambda x, y: 1.0 / np.sqrt(x * x + 1.0)))
VJP.add(K.ARCCOSH, _unary(lambda x, y: 1.0 / np.sqrt(x * x - 1.0)))
VJP.add(K.ARCTANH, _unary(lambda x, y: 1.0 / (1.0 - x * x)))

CUDA_MATH.add(K.TANH, "_dtanh")

# (onnxruntime's CPU provider has float32 kernels only for most of these: float64 is refused)
ONNX.add(K.SIN, ufunc_rule(float_only("Sin")))
ONNX.add(K.COS, ufunc_rule(float_only("Cos")))
ONNX.add(K.TAN, ufunc_rule(float_only("Tan", False)))
ONNX.add(K.ARCSIN, ufunc_rule(float_only("Asin", False)))
ONNX.add(K.ARCCOS, ufunc_rule(float_only("Acos", False)))
ONNX.add(K.ARCTAN, ufunc_rule(float_only("Atan", False)))
ONNX.add(K.SINH, ufunc_rule(float_only("Sinh", False)))
ONNX.add(K.COSH, ufunc_rule(float_only("Cosh", False)))
ONNX.add(K.TANH, ufunc_rule(float_only("Tanh")))
ONNX.add(K.ARCSINH, ufunc_rule(float_only("Asinh", False)))
ONNX.add(K.ARCCOSH, ufunc_rule(float_only("Acosh", False)))
ONNX.add(K.ARCTANH, ufunc_rule(float_only("Atanh", False)))


# --- deg2rad, radians, rad2deg, degrees ---

VJP.add(K.DEG2RAD, _unary(lambda x, y: math.pi / 180.0))
VJP.add(K.RAD2DEG, _unary(lambda x, y: 180.0 / math.pi))
VJP.add(K.DEGREES, VJP[K.RAD2DEG])
VJP.add(K.RADIANS, VJP[K.DEG2RAD])
NOTES.add(K.DEGREES, "as rad2deg")
NOTES.add(K.RADIANS, "as deg2rad")


def _scale(factor: float) -> Emit:
    return lambda b, n, dt, node: b.one("Mul", [n[0], b.const(factor, dt)])


ONNX.add(K.DEG2RAD, ufunc_rule(_scale(math.pi / 180)))
ONNX.add(K.RADIANS, ufunc_rule(_scale(math.pi / 180)))
ONNX.add(K.RAD2DEG, ufunc_rule(_scale(180 / math.pi)))
ONNX.add(K.DEGREES, ufunc_rule(_scale(180 / math.pi)))


# --- spacing ---

ONNX.add(K.SPACING, no_onnx_form("ONNX has no Spacing"))
