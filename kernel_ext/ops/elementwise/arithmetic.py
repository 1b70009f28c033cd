"""Arithmetic ufuncs: add, subtract, multiply, divide, floor_divide, remainder, fmod, power,
float_power.

Their abstract evaluation and reference lowering are every ufunc's (:mod:`.ufuncs`); the
gradient of floor_divide is zero (``autodiff.rules.ZERO_GRADIENT``). Integer ``+``, ``-`` and
``*`` in a fused kernel are the wrapping intrinsics ``_wadd``/``_wsub``/``_wmul`` every kernel
module imports (numba_decorators; numba_cuda on the device): Numba's own operators tell LLVM
that signed arithmetic never overflows (``nsw``), and LLVM then folds ``x + 1 > x`` to True.
The intrinsics also compute in the operands' width (Numba widens small integers)."""

from __future__ import annotations

import typing
from typing import Any

import numpy as np

from ...autodiff.rules import NOTES, VJP, Cotangent, Primal, elementwise, multiply_vjp
from ...backends.codegen.inline_templates import INLINE, by_kind
from ...ir import Node, OpKind
from ...onnx.builder import GraphBuilder
from ...onnx.refusal import refuse
from ...onnx.rules.common import RULES as ONNX
from ...passes.simplify import RULES as SIMPLIFY
from ...passes.simplify import identity_operand
from ...trace import Tensor
from .ufuncs import (
    Emit,
    float_only,
    negative_zero,
    one,
    onnx_op,
    positive_zero,
    ufunc_rule,
    zero,
)

K = OpKind


# --- add, subtract ---

SIMPLIFY.add(K.ADD, identity_operand({"b": zero, "i": zero, "u": zero, "f": negative_zero}, "both"))
SIMPLIFY.add(K.SUBTRACT, identity_operand({"i": zero, "u": zero, "f": positive_zero}))


@VJP.register(K.ADD)
def _add(p: Primal, g: Any) -> list[Cotangent]:
    return elementwise(p, g, lambda: g, lambda: g)


@VJP.register(K.SUBTRACT)
def _subtract(p: Primal, g: Any) -> list[Cotangent]:
    return elementwise(p, g, lambda: g, lambda: -g)


INLINE.add(
    K.ADD,
    [
        by_kind("b", lambda o, b: f"({o[0]} | {o[1]})"),
        by_kind("iu", lambda o, b: f"_wadd({o[0]}, {o[1]})"),
        by_kind("f", lambda o, b: b.float_op("+", o)),
    ],
)
INLINE.add(
    K.SUBTRACT,
    [
        by_kind("iu", lambda o, b: f"_wsub({o[0]}, {o[1]})"),
        by_kind("f", lambda o, b: b.float_op("-", o)),
    ],
)

ONNX.add(K.ADD, ufunc_rule(onnx_op("Add")))
ONNX.add(K.SUBTRACT, ufunc_rule(onnx_op("Sub")))


# --- multiply, divide ---

SIMPLIFY.add(K.MULTIPLY, identity_operand({"b": one, "i": one, "u": one, "f": one}, "both"))
SIMPLIFY.add(K.DIVIDE, identity_operand({"f": one}))

VJP.add(K.MULTIPLY, multiply_vjp)  # (the product rule, which dot's rule reuses)


@VJP.register(K.DIVIDE)
def _divide(p: Primal, g: Any) -> list[Cotangent]:
    _a, b = p.args
    return elementwise(p, g, lambda: g / b, lambda: -g * p.out / b)


INLINE.add(
    K.MULTIPLY,
    [
        by_kind("b", lambda o, b: f"({o[0]} & {o[1]})"),
        by_kind("iu", lambda o, b: f"_wmul({o[0]}, {o[1]})"),
        by_kind("f", lambda o, b: b.float_op("*", o)),
    ],
)
INLINE.add(K.DIVIDE, [by_kind("f", lambda o, b: b.float_op("/", o))])

ONNX.add(K.MULTIPLY, ufunc_rule(onnx_op("Mul")))
ONNX.add(K.DIVIDE, ufunc_rule(float_only("Div")))


# --- floor_divide, remainder, fmod ---

SIMPLIFY.add(K.FLOOR_DIVIDE, identity_operand({"i": one, "u": one}))


@VJP.register(K.REMAINDER, K.FMOD)
def _remainder(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    whole = np.floor if p.node.op is K.REMAINDER else np.trunc
    return elementwise(p, g, lambda: g, lambda: -g * whole(a / b))


INLINE.add(K.FLOOR_DIVIDE, [by_kind("iu", lambda o, b: b.helper("fdiv", o))])
INLINE.add(K.REMAINDER, [by_kind("iu", lambda o, b: b.helper("mod", o))])
INLINE.add(K.FMOD, [by_kind("iu", lambda o, b: b.helper("fmod", o))])


def _safe_divisor(b: GraphBuilder, d: str, dt: np.dtype) -> tuple[str, str]:
    """(is zero, divisor with zeros replaced by 1): integer division by zero is 0 in NumPy
    and undefined in ONNX (a crash), so it never reaches the runtime."""
    zero = b.one("Equal", [d, b.const(0, dt)])
    return zero, b.one("Where", [zero, b.const(1, dt), d])


def _float_divmod(b: GraphBuilder, a: str, d: str, dt: np.dtype) -> tuple[str, str]:
    """NumPy's ``npy_divmod`` for floats (floor quotient, remainder), step by step."""
    c0, c1 = b.const(0.0, dt), b.const(1.0, dt)
    mod = b.one("Mod", [a, d], fmod=1)
    div = b.one("Div", [b.one("Sub", [a, mod]), d])
    mod_nz = b.one("Not", [b.one("Equal", [mod, c0])])
    signs = b.one("Xor", [b.one("Less", [d, c0]), b.one("Less", [mod, c0])])
    fix = b.one("And", [mod_nz, signs])
    mod = b.one("Where", [fix, b.one("Add", [mod, d]), mod])
    div = b.one("Where", [fix, b.one("Sub", [div, c1]), div])
    mod = b.one(
        "Where", [mod_nz, mod, b.one("Where", [b.one("Less", [d, c0]), b.const(-0.0, dt), c0])]
    )
    floor = b.one("Floor", [div])
    half = b.one("Greater", [b.one("Sub", [div, floor]), b.const(0.5, dt)])
    floor = b.one("Where", [half, b.one("Add", [floor, c1]), floor])
    quotient = b.one("Div", [a, d])
    floor = b.one("Where", [b.one("Equal", [div, c0]), b.one("Mul", [c0, quotient]), floor])
    d_zero = b.one("Equal", [d, c0])
    return b.one("Where", [d_zero, quotient, floor]), b.one("Where", [d_zero, mod, mod])


def _floor_divide(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    a, d = n
    if dt.kind == "f":
        return _float_divmod(b, a, d, dt)[0]
    zero, safe = _safe_divisor(b, d, dt)
    q = b.one("Div", [a, safe])  # truncates toward zero
    rem = b.one("Sub", [a, b.one("Mul", [q, safe])])
    signs = b.one(
        "Xor", [b.one("Less", [a, b.const(0, dt)]), b.one("Less", [safe, b.const(0, dt)])]
    )
    adjust = b.one("And", [signs, b.one("Not", [b.one("Equal", [rem, b.const(0, dt)])])])
    q = b.one("Where", [adjust, b.one("Sub", [q, b.const(1, dt)]), q])
    return b.one("Where", [zero, b.const(0, dt), q])


def _remainder_emit(fmod: int) -> Emit:
    def emit(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
        a, d = n
        if dt.kind == "f":
            return b.one("Mod", n, fmod=1) if fmod else _float_divmod(b, a, d, dt)[1]
        zero, safe = _safe_divisor(b, d, dt)
        return b.one("Where", [zero, b.const(0, dt), b.one("Mod", [a, safe], fmod=fmod)])

    return emit


ONNX.add(K.FLOOR_DIVIDE, ufunc_rule(_floor_divide))
ONNX.add(K.REMAINDER, ufunc_rule(_remainder_emit(0)))
ONNX.add(K.FMOD, ufunc_rule(_remainder_emit(1)))


# --- power, float_power ---

SIMPLIFY.add(K.POWER, identity_operand({"i": one, "u": one}))


@VJP.register(K.POWER, K.FLOAT_POWER)
def _power(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args

    def da() -> Any:
        if not isinstance(b, Tensor) and b == 0:
            return g * 0.0
        if not isinstance(b, Tensor) and b == 2:
            return g * (2.0 * a)
        # b * a**(b-1) written as b * out / a would be wrong at a == 0
        return g * (b * np.power(a, b - 1))

    def db() -> Any:
        # log(a) with a == 0 replaced by 1: d/db 0**b is 0 where b > 0 (JAX's choice)
        # (a Tensor's == records an elementwise comparison, which mypy's object.__eq__ hides)
        safe = np.where(a == 0, 1.0, a) if isinstance(a, Tensor) else (a if a != 0 else 1.0)  # type: ignore[comparison-overlap]
        return g * (p.out * np.log(safe))

    return elementwise(p, g, da, db if _float_operand(b) else None)


def _float_operand(x: Any) -> bool:
    return isinstance(x, Tensor) and x.dtype.kind == "f"


NOTES.add(K.POWER, "d/db uses log(a), a == 0 taken as 1")
NOTES.add(K.FLOAT_POWER, "as power")

INLINE.add(K.POWER, [by_kind("iu", lambda o, b: b.int_power(o))])


def _power_emit(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    if dt.kind == "f":
        return b.one("Pow", n)
    exponent = node.args[1]
    if (
        isinstance(exponent, Node)
        or not isinstance(exponent, (int, np.integer))
        or not 0 <= int(exponent) <= 64
    ):
        # onnxruntime's integer Pow goes through double: wrong past 2**53
        raise refuse(
            node,
            "ONNX's integer Pow is not exact (it computes in floating point)",
            "use a literal exponent between 0 and 64, or float operands",
        )
    result, square, k = None, n[0], int(exponent)
    if k == 0:
        return b.one("Add", [b.one("Mul", [n[0], b.const(0, dt)]), b.const(1, dt)])
    while k:  # square and multiply: exact, wrapping as NumPy's integer loop does
        if k & 1:
            result = square if result is None else b.one("Mul", [result, square])
        k >>= 1
        if k:
            square = b.one("Mul", [square, square])
    return typing.cast(str, result)  # k >= 1 here: some bit of it set the result


ONNX.add(K.POWER, ufunc_rule(_power_emit))
ONNX.add(K.FLOAT_POWER, ufunc_rule(float_only("Pow")))
