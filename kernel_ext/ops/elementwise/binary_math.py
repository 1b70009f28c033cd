"""Binary float functions: maximum, minimum, fmax, fmin, arctan2, hypot, copysign, logaddexp,
logaddexp2, heaviside, nextafter, ldexp.

Their abstract evaluation and reference lowering are every ufunc's (:mod:`.ufuncs`); the
gradient of heaviside is zero (``autodiff.rules.ZERO_GRADIENT``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...autodiff.rules import NOTES, VJP, Cotangent, Primal, elementwise, unbroadcast
from ...backends.codegen.inline_templates import INLINE, by_kind, pick
from ...ir import Node, OpKind
from ...onnx.builder import GraphBuilder
from ...onnx.refusal import refuse
from ...onnx.rules.common import RULES as ONNX
from ...passes.simplify import RULES as SIMPLIFY
from ...passes.simplify import same_operands
from ...trace import Tensor
from .ufuncs import REAL, Emit, no_onnx_form, onnx_op, ufunc_rule

K = OpKind


# --- maximum, minimum, fmax, fmin ---

SIMPLIFY.add(K.MAXIMUM, [same_operands(REAL + "c")])
SIMPLIFY.add(K.MINIMUM, [same_operands(REAL + "c")])
SIMPLIFY.add(K.FMAX, [same_operands(REAL + "c")])
SIMPLIFY.add(K.FMIN, [same_operands(REAL + "c")])


@VJP.register(K.MAXIMUM, K.MINIMUM, K.FMAX, K.FMIN)
def _extremum(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    op = p.node.op
    first = (a >= b) if op in (K.MAXIMUM, K.FMAX) else (a <= b)
    if op in (K.FMAX, K.FMIN):  # fmax/fmin ignore a NaN operand
        first = (first | np.isnan(b)) & ~np.isnan(a) if isinstance(a, Tensor) else first
    return elementwise(p, g, lambda: np.where(first, g, 0.0), lambda: np.where(first, 0.0, g))


NOTES.add(K.MAXIMUM, "ties: the first operand")
NOTES.add(K.MINIMUM, "ties: the first operand")
NOTES.add(K.FMAX, "ties: the first operand; a NaN operand gets none")
NOTES.add(K.FMIN, "ties: the first operand; a NaN operand gets none")

_max_f, _min_f = pick(">", 0), pick("<", 0)
_fmax_f, _fmin_f = pick(">=", 1), pick("<=", 1)
_max_i, _min_i = pick(">=", None), pick("<=", None)


INLINE.add(
    K.MAXIMUM,
    [by_kind("f", _max_f), by_kind("iu", _max_i), by_kind("b", lambda o, b: f"({o[0]} | {o[1]})")],
)
INLINE.add(
    K.MINIMUM,
    [by_kind("f", _min_f), by_kind("iu", _min_i), by_kind("b", lambda o, b: f"({o[0]} & {o[1]})")],
)
INLINE.add(
    K.FMAX,
    [by_kind("f", _fmax_f), by_kind("iu", _max_i), by_kind("b", lambda o, b: f"({o[0]} | {o[1]})")],
)
INLINE.add(
    K.FMIN,
    [by_kind("f", _fmin_f), by_kind("iu", _min_i), by_kind("b", lambda o, b: f"({o[0]} & {o[1]})")],
)


def _fminmax(op_type: str) -> Emit:
    def emit(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
        both = b.one(op_type, n)
        if dt.kind != "f":
            return both
        a, c = n
        return b.one(
            "Where", [b.one("IsNaN", [a]), c, b.one("Where", [b.one("IsNaN", [c]), a, both])]
        )

    return emit


ONNX.add(K.MAXIMUM, ufunc_rule(onnx_op("Max")))
ONNX.add(K.MINIMUM, ufunc_rule(onnx_op("Min")))
ONNX.add(K.FMAX, ufunc_rule(_fminmax("Max")))
ONNX.add(K.FMIN, ufunc_rule(_fminmax("Min")))


# --- arctan2, hypot ---


@VJP.register(K.ARCTAN2)
def _arctan2(p: Primal, g: Any) -> list[Cotangent]:
    y, x = p.args
    return elementwise(p, g, lambda: g * x / (x * x + y * y), lambda: -g * y / (x * x + y * y))


@VJP.register(K.HYPOT)
def _hypot(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    return elementwise(p, g, lambda: g * a / p.out, lambda: g * b / p.out)


def _float_only_emit(emit: Emit) -> Emit:
    def checked(b: GraphBuilder, names: list[str], dt: np.dtype, node: Node) -> str:
        if dt.kind != "f":
            raise refuse(node, f"this loop is {dt}, not a float", "cast to a float first")
        return emit(b, names, dt, node)

    return checked


def _hypot_emit(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    """C's hypot without overflow: ``m * sqrt(1 + (s/m)**2)`` with m the larger magnitude;
    0 for two zeros, inf when either is infinite (even against NaN, as C99's hypot)."""
    a, c = b.one("Abs", [n[0]]), b.one("Abs", [n[1]])
    big, small = b.one("Max", [a, c]), b.one("Min", [a, c])
    zero, one = b.const(0.0, dt), b.const(1.0, dt)
    ratio = b.one("Div", [small, b.one("Where", [b.one("Equal", [big, zero]), one, big])])
    scaled = b.one("Mul", [big, b.one("Sqrt", [b.one("Add", [one, b.one("Mul", [ratio, ratio])])])])
    infinite = b.one("Or", [b.one("IsInf", [a]), b.one("IsInf", [c])])
    return b.one("Where", [infinite, b.const(np.inf, dt), scaled])


ONNX.add(
    K.ARCTAN2,
    no_onnx_form("ONNX has no Atan2 (a composition differs on signed zeros and infinities)"),
)
ONNX.add(K.HYPOT, ufunc_rule(_float_only_emit(_hypot_emit)))


# --- copysign ---


@VJP.register(K.COPYSIGN)
def _copysign(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    return elementwise(p, g, lambda: np.where(np.signbit(a) == np.signbit(b), g, -g), None)


ONNX.add(K.COPYSIGN, no_onnx_form("no ONNX operator reads the sign bit"))


# --- logaddexp, logaddexp2 ---


@VJP.register(K.LOGADDEXP, K.LOGADDEXP2)
def _logaddexp(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    exp = np.exp if p.node.op is K.LOGADDEXP else np.exp2
    return elementwise(p, g, lambda: g * exp(a - p.out), lambda: g * exp(b - p.out))


ONNX.add(
    K.LOGADDEXP,
    no_onnx_form("ONNX has no LogAddExp (a composition overflows where NumPy's does not)"),
)
ONNX.add(K.LOGADDEXP2, no_onnx_form("ONNX has no LogAddExp2"))


# --- heaviside ---

# NumPy's heaviside answers a NaN ``x`` with its own NaN constant (not ``x``'s payload).
INLINE.add(
    K.HEAVISIDE,
    [
        by_kind(
            "f",
            lambda o, b: (
                f"({b.zero} if {o[0]} < 0 else ({b.one} if "
                f"{o[0]} > 0 else ({o[1]} if {o[0]} == 0 "
                f"else {b.const(np.nan)})))"
            ),
        )
    ],
)


def _heaviside(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    x, h = n
    zero, one = b.const(0, dt), b.const(1, dt)
    out = b.one(
        "Where",
        [b.one("Less", [x, zero]), zero, b.one("Where", [b.one("Greater", [x, zero]), one, h])],
    )
    return b.one("Where", [b.one("IsNaN", [x]), x, out])


ONNX.add(K.HEAVISIDE, ufunc_rule(_heaviside))


# --- nextafter ---


@VJP.register(K.NEXTAFTER)
def _nextafter(p: Primal, g: Any) -> list[Cotangent]:
    """``nextafter(x, y)`` moves ``x`` by one ulp: derivative 1 in ``x``, 0 in ``y``."""
    return [g if isinstance(p.args[0], Tensor) else None, None]


NOTES.add(K.NEXTAFTER, "1 in x, none in y")

ONNX.add(K.NEXTAFTER, no_onnx_form("ONNX has no NextAfter"))


# --- ldexp ---


@VJP.register(K.LDEXP)
def _ldexp(p: Primal, g: Any) -> list[Cotangent]:
    """``x * 2**n`` (``n`` an integer)."""
    _x, n = p.args
    return [lambda: unbroadcast(g * np.ldexp(1.0, n), p.shape(0)), None]


NOTES.add(K.LDEXP, "x * 2**n; the integer n has none")

ONNX.add(K.LDEXP, no_onnx_form("ONNX has no Ldexp"))
