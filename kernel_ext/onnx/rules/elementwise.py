"""Elementwise ops: NumPy's loop dtypes made explicit, NaN and integer edge cases spelled out."""

from __future__ import annotations

import math
import typing
from collections.abc import Callable
from typing import Any

import numpy as np

from kernel_ext.ir import COMPARISONS, Node, OpKind
from kernel_ext.onnx.builder import GraphBuilder, Rule
from kernel_ext.onnx.refusal import refuse
from kernel_ext.onnx.rules.common import (
    ANY_VALUE,
    NARROW,
    RULES,
    K,
    handled_params,
    out_dtype,
    refusal_rule,
    rule_for,
    wide,
)


def _weak(arg: Any) -> Any:
    """An inline literal as ``resolve_dtypes`` takes it: Python int/float/complex are weak."""
    if isinstance(arg, Node):
        return arg.dtype
    if isinstance(arg, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(arg, (int, float, complex)) and not isinstance(arg, np.generic):
        return type(arg)
    return np.asarray(arg).dtype


def _loop(node: Node) -> tuple[np.dtype, ...]:
    """The dtypes of the ufunc loop NumPy runs for this node (inputs then outputs)."""
    ufunc = typing.cast(np.ufunc, node.op.ufunc)  # a ufunc rule's op has one
    ins = tuple(_weak(a) for a in node.args[: ufunc.nin])
    outs = (
        (np.dtype(node.attrs["dtype"]),) * ufunc.nout
        if "dtype" in node.attrs
        else (None,) * ufunc.nout
    )
    try:
        return tuple(np.dtype(d) for d in ufunc.resolve_dtypes(ins + outs))
    except (TypeError, ValueError) as e:
        raise refuse(
            node,
            f"NumPy's loop for these operands is unclear ({e})",
            "cast the operands to one dtype first",
        ) from None


Emit = Callable[[GraphBuilder, list[str], np.dtype, Node], str]


def _elementwise(emit: Emit, bool_as: Any = np.int8) -> Rule:
    """A ufunc rule: operands cast to the loop's input dtype, ``emit`` computes the loop's
    output; on a bool loop without an ONNX bool kernel the operands go through ``bool_as``
    (ints 0/1), and a bool result is cast back."""

    def rule(b: GraphBuilder, node: Node) -> list[str]:
        handled_params(node, dtype=ANY_VALUE)
        loop = _loop(node)
        nin = typing.cast(np.ufunc, node.op.ufunc).nin
        in_dt, out_dt = loop[0], loop[nin]
        if any(d != in_dt for d in loop[:nin]):
            raise refuse(
                node,
                f"its loop mixes operand dtypes {loop[:nin]}",
                "cast the operands to one dtype first",
            )
        if in_dt in NARROW:
            names = [b.operand(a, np.int64) for a in node.args[:nin]]
            result = emit(b, names, np.dtype(np.int64), node)
            result_dt = np.dtype(np.bool_) if out_dt == np.bool_ else np.dtype(np.int64)
            return [b.cast(b.cast(result, result_dt, out_dt), out_dt, out_dtype(node))]
        names = [b.operand(a, in_dt) for a in node.args[:nin]]
        if in_dt == np.bool_ and bool_as is not None:
            names = [b.cast(n, np.bool_, bool_as) for n in names]
            result = emit(b, names, np.dtype(bool_as), node)
            # (a comparison's ONNX form gives bools itself; arithmetic gives bool_as)
            result_dt = (
                np.dtype(bool_as) if out_dt == np.bool_ and node.op not in COMPARISONS else out_dt
            )
            result = b.cast(result, result_dt, out_dt)
        else:
            result = emit(b, names, in_dt, node)
        return [b.cast(result, out_dt, out_dtype(node))]

    return rule


def _onnx(op_type: str, **attrs: Any) -> Emit:
    return lambda b, names, dt, node: b.one(op_type, names, **attrs)


def _float_only(op_type: str, float64: bool = True) -> Emit:
    """An ONNX op on floats; ``float64=False``: onnxruntime's CPU provider has only a
    float32 kernel for it, so a float64 loop is refused (never computed in float32)."""

    def emit(b: GraphBuilder, names: list[str], dt: np.dtype, node: Node) -> str:
        if dt.kind != "f":
            raise refuse(
                node,
                f"ONNX's {op_type} computes floats only, this loop is {dt}",
                "cast the operand to a float dtype first",
            )
        if dt == np.float64 and not float64:
            raise refuse(
                node,
                f"onnxruntime has no float64 kernel for {op_type} (computing "
                "it in float32 would lose NumPy's precision)",
                "cast the operand to float32 if that precision is enough",
            )
        return b.one(op_type, names)

    return emit


def _float_only_emit(emit: Emit) -> Emit:
    def checked(b: GraphBuilder, names: list[str], dt: np.dtype, node: Node) -> str:
        if dt.kind != "f":
            raise refuse(node, f"this loop is {dt}, not a float", "cast to a float first")
        return emit(b, names, dt, node)

    return checked


def _float_test(op_type: str) -> Emit:
    """isnan/isinf: always False on integers and bools (their NumPy loops)."""

    def emit(b: GraphBuilder, names: list[str], dt: np.dtype, node: Node) -> str:
        if dt.kind == "f":
            return b.one(op_type, names)
        return b.one("Not", [b.one("Equal", [names[0], names[0]])])

    return emit


def _integers_identity(op_type: str) -> Emit:
    """floor/ceil/trunc/rint: the identity on integers (NumPy's integer loops)."""

    def emit(b: GraphBuilder, names: list[str], dt: np.dtype, node: Node) -> str:
        return b.one("Identity" if dt.kind in "iub" else op_type, names)

    return emit


def _scale(factor: float) -> Emit:
    return lambda b, n, dt, node: b.one("Mul", [n[0], b.const(factor, dt)])


def _square(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    return b.one("Mul", [n[0], n[0]])


def _sign(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    sign = b.one("Sign", n)
    if dt.kind != "f":
        return sign
    return b.one("Where", [b.one("IsNaN", n), n[0], sign])  # sign(nan) is nan


def _trunc(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    if dt.kind in "iub":
        return b.one("Identity", n)
    negative = b.one("Less", [n[0], b.const(0, dt)])
    return b.one("Where", [negative, b.one("Ceil", n), b.one("Floor", n)])


def _isfinite(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    if dt.kind != "f":
        return b.one("Equal", [n[0], n[0]])  # integers are always finite
    return b.one("Not", [b.one("Or", [b.one("IsNaN", n), b.one("IsInf", n)])])


def _log_base(base: float) -> Emit:
    return lambda b, n, dt, node: b.one(
        "Div", [_float_only("Log")(b, n, dt, node), b.const(math.log(base), dt)]
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


def _reciprocal(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    if dt.kind != "f":
        raise refuse(
            node, "NumPy's integer reciprocal is an integer division", "use 1.0 / x on floats"
        )
    return b.one("Reciprocal", n)


def _invert(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    return b.one("Not" if dt == np.bool_ else "BitwiseNot", n)


def _logical(op_type: str) -> Emit:
    def emit(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
        return b.one(op_type, [b.to_bool(x, dt) for x in n])

    return emit


def _not_equal(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    return b.one("Not", [b.one("Equal", n)])


def _bitwise(op_type: str, logical: str) -> Emit:
    return lambda b, n, dt, node: b.one(logical if dt == np.bool_ else op_type, n)


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


def _heaviside(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    x, h = n
    zero, one = b.const(0, dt), b.const(1, dt)
    out = b.one(
        "Where",
        [b.one("Less", [x, zero]), zero, b.one("Where", [b.one("Greater", [x, zero]), one, h])],
    )
    return b.one("Where", [b.one("IsNaN", [x]), x, out])


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


def _remainder(fmod: int) -> Emit:
    def emit(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
        a, d = n
        if dt.kind == "f":
            return b.one("Mod", n, fmod=1) if fmod else _float_divmod(b, a, d, dt)[1]
        zero, safe = _safe_divisor(b, d, dt)
        return b.one("Where", [zero, b.const(0, dt), b.one("Mod", [a, safe], fmod=fmod)])

    return emit


def _power(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
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


def _hypot(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    """C's hypot without overflow: ``m * sqrt(1 + (s/m)**2)`` with m the larger magnitude;
    0 for two zeros, inf when either is infinite (even against NaN, as C99's hypot)."""
    a, c = b.one("Abs", [n[0]]), b.one("Abs", [n[1]])
    big, small = b.one("Max", [a, c]), b.one("Min", [a, c])
    zero, one = b.const(0.0, dt), b.const(1.0, dt)
    ratio = b.one("Div", [small, b.one("Where", [b.one("Equal", [big, zero]), one, big])])
    scaled = b.one("Mul", [big, b.one("Sqrt", [b.one("Add", [one, b.one("Mul", [ratio, ratio])])])])
    infinite = b.one("Or", [b.one("IsInf", [a]), b.one("IsInf", [c])])
    return b.one("Where", [infinite, b.const(np.inf, dt), scaled])


def _negative(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    if dt.kind == "u":  # (ONNX's Neg is for signed types; 0 - x wraps as NumPy's)
        return b.one("Sub", [b.const(0, dt), n[0]])
    return b.one("Neg", n)


_UNARY: dict[OpKind, Emit] = {
    K.NEGATIVE: _negative,
    K.POSITIVE: _onnx("Identity"),
    K.ABSOLUTE: _onnx("Abs"),
    K.FABS: _onnx("Abs"),
    K.SIGN: _sign,
    K.SQRT: _float_only("Sqrt"),
    K.SQUARE: _square,
    K.RECIPROCAL: _reciprocal,
    K.EXP: _float_only("Exp"),
    K.EXP2: _exp2,
    K.EXPM1: _expm1,
    K.LOG: _float_only("Log"),
    K.LOG2: _log_base(2.0),
    K.LOG10: _log_base(10.0),
    K.LOG1P: _log1p,
    K.SIN: _float_only("Sin"),
    K.COS: _float_only("Cos"),
    K.TAN: _float_only("Tan", False),
    K.ARCSIN: _float_only("Asin", False),
    K.ARCCOS: _float_only("Acos", False),
    K.ARCTAN: _float_only("Atan", False),
    K.SINH: _float_only("Sinh", False),
    K.COSH: _float_only("Cosh", False),
    K.TANH: _float_only("Tanh"),
    K.ARCSINH: _float_only("Asinh", False),
    K.ARCCOSH: _float_only("Acosh", False),
    K.ARCTANH: _float_only("Atanh", False),
    K.DEG2RAD: _scale(math.pi / 180),
    K.RADIANS: _scale(math.pi / 180),
    K.RAD2DEG: _scale(180 / math.pi),
    K.DEGREES: _scale(180 / math.pi),
    K.FLOOR: _integers_identity("Floor"),
    K.CEIL: _integers_identity("Ceil"),
    K.TRUNC: _trunc,
    K.RINT: _integers_identity("Round"),
    K.ISNAN: _float_test("IsNaN"),
    K.ISINF: _float_test("IsInf"),
    K.ISFINITE: _isfinite,
    K.LOGICAL_NOT: _logical("Not"),
    K.INVERT: _invert,
    K.CONJUGATE: _onnx("Identity"),
}
_BINARY: dict[OpKind, Emit] = {
    K.ADD: _onnx("Add"),
    K.SUBTRACT: _onnx("Sub"),
    K.MULTIPLY: _onnx("Mul"),
    K.DIVIDE: _float_only("Div"),
    K.FLOOR_DIVIDE: _floor_divide,
    K.REMAINDER: _remainder(0),
    K.FMOD: _remainder(1),
    K.POWER: _power,
    K.FLOAT_POWER: _float_only("Pow"),
    K.MAXIMUM: _onnx("Max"),
    K.MINIMUM: _onnx("Min"),
    K.FMAX: _fminmax("Max"),
    K.FMIN: _fminmax("Min"),
    K.HEAVISIDE: _heaviside,
    K.EQUAL: _onnx("Equal"),
    K.NOT_EQUAL: _not_equal,
    K.LESS: _onnx("Less"),
    K.LESS_EQUAL: _onnx("LessOrEqual"),
    K.GREATER: _onnx("Greater"),
    K.GREATER_EQUAL: _onnx("GreaterOrEqual"),
    K.LOGICAL_AND: _logical("And"),
    K.LOGICAL_OR: _logical("Or"),
    K.LOGICAL_XOR: _logical("Xor"),
    K.BITWISE_AND: _bitwise("BitwiseAnd", "And"),
    K.BITWISE_OR: _bitwise("BitwiseOr", "Or"),
    K.BITWISE_XOR: _bitwise("BitwiseXor", "Xor"),
    K.LEFT_SHIFT: _left_shift,
    K.RIGHT_SHIFT: _right_shift,
    K.HYPOT: _float_only_emit(_hypot),
}
#: Ops whose ONNX form takes bool operands as they are (no detour through int8).
_BOOL_NATIVE = frozenset(
    {
        K.EQUAL,
        K.NOT_EQUAL,
        K.LOGICAL_NOT,
        K.LOGICAL_AND,
        K.LOGICAL_OR,
        K.LOGICAL_XOR,
        K.INVERT,
        K.BITWISE_AND,
        K.BITWISE_OR,
        K.BITWISE_XOR,
        K.POSITIVE,
        K.CONJUGATE,
        K.ISNAN,
        K.ISINF,
        K.ISFINITE,
    }
)
for _kind, _emit in {**_UNARY, **_BINARY}.items():
    RULES[_kind] = _elementwise(_emit, None if _kind in _BOOL_NATIVE else np.int8)

for _kind, _why in {
    K.CBRT: "no ONNX operator computes a correctly signed cube root",
    K.SIGNBIT: "no ONNX operator reads the sign bit (of -0.0 and NaN)",
    K.ARCTAN2: "ONNX has no Atan2 (a composition differs on signed zeros and infinities)",
    K.COPYSIGN: "no ONNX operator reads the sign bit",
    K.LOGADDEXP: "ONNX has no LogAddExp (a composition overflows where NumPy's does not)",
    K.LOGADDEXP2: "ONNX has no LogAddExp2",
    K.GCD: "ONNX has no Gcd",
    K.LCM: "ONNX has no Lcm",
    K.NEXTAFTER: "ONNX has no NextAfter",
    K.SPACING: "ONNX has no Spacing",
    K.LDEXP: "ONNX has no Ldexp",
    K.FREXP: "ONNX has no Frexp",
    K.MODF: "ONNX has no Modf",
    K.DIVMOD: "no rule yet for two-output divmod (use // and % separately)",
    K.BITWISE_COUNT: "ONNX has no population count",
}.items():
    RULES[_kind] = refusal_rule(
        _why, "compute it outside the exported function and pass the result in as an argument"
    )


@rule_for(K.WHERE)
def where(b: GraphBuilder, node: Node) -> list[str]:
    cond, x, y = node.args
    pred = (
        b.operand(cond, np.bool_)
        if not isinstance(cond, Node)
        else b.to_bool(b.value(cond), cond.dtype)
    )
    out = out_dtype(node)
    work = np.dtype(np.int8) if out == np.bool_ else wide(out)  # (no bool, int16 Where)
    chosen = b.one("Where", [pred, b.operand(x, work), b.operand(y, work)])
    return [b.cast(chosen, work, out)]


@rule_for(K.CAST)
def cast(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, dtype=ANY_VALUE)
    x = node.args[0]
    return [b.one("Identity", [b.operand(x, out_dtype(node))])]


@rule_for(K.CLIP)
def clip(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node)
    out = out_dtype(node)
    if out == np.bool_:
        raise refuse(node, "clip on booleans has no ONNX form", "clip an integer array")
    a, lo, hi = (list(node.args) + [None, None])[:3]
    work = wide(out)
    result = b.operand(a, work)
    if lo is not None:
        result = b.one("Max", [result, b.operand(lo, work)])
    if hi is not None:
        result = b.one("Min", [result, b.operand(hi, work)])
    return [b.cast(result, work, out)]
