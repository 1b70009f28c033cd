"""The op table: one rule per IR op kind, each writing that op's ONNX form.

``RULES[op](builder, node)`` appends the ONNX nodes computing ``node`` and returns the names
of its values. Each rule keeps NumPy's meaning explicit: operands are cast to the dtypes of
the loop NumPy itself picks (``ufunc.resolve_dtypes``, NEP 50 weak scalars included), NaN
propagation and integer division by zero are spelled out where ONNX differs, and every form
ONNX cannot express faithfully is refused (:func:`kernel_ext.onnx.refusal.refuse`) instead
of approximated. An op missing from ``RULES`` is refused by the builder.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kernel_ext.ir import COMPARISONS, DynamicIndex, Node, OpKind
from kernel_ext.onnx.builder import GraphBuilder, Rule, elem_type, onnx_modules
from kernel_ext.onnx.refusal import refuse

K = OpKind
RULES: dict[OpKind, Rule] = {}
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
_ANY = object()  # a parameter the rule reads (any value)


def _rule(*kinds: OpKind) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for kind in kinds:
            RULES[kind] = fn
        return fn

    return register


def _params(node: Node, **handled: Any) -> dict[str, Any]:
    """The node's parameters, refusing any the rule does not handle (``_ANY``: read by the
    rule; another value: only that value, NumPy's default, has a translation)."""
    params = dict(node.params)
    for key, value in params.items():
        if key not in handled:
            raise refuse(
                node, f"its parameter {key}={value!r} has no translation", f"call it without {key}="
            )
        want = handled[key]
        if want is not _ANY and not _same(value, want):
            raise refuse(
                node,
                f"its parameter {key}={value!r} has no translation (only {want!r})",
                f"call it without {key}=",
            )
    return params


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays compare elementwise
        return False


def _axes(axis: Any, ndim: int) -> list[int]:
    """``axis`` (int, tuple or None: all) as sorted non-negative ints."""
    if axis is None:
        return list(range(ndim))
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    return sorted(int(a) % max(ndim, 1) for a in items)


def _out(node: Node) -> np.dtype:
    return np.dtype(node.dtype)


#: Integer dtypes onnxruntime lacks most kernels for: computed in int64 and cast back, which
#: wraps as NumPy's own loops do (exact for comparisons, extremes and sorting; modular for
#: arithmetic, where the low bits do not depend on the width).
NARROW = frozenset(np.dtype(d) for d in (np.int8, np.int16, np.uint8, np.uint16, np.uint32))


def wide(dtype: Any) -> np.dtype:
    """The dtype onnxruntime computes ``dtype`` in (int64 for the narrow integers)."""
    dtype = np.dtype(dtype)
    return np.dtype(np.int64) if dtype in NARROW else dtype


# -- sources, structure, state ----------------------------------------------------------------


@_rule(K.CONSTANT)
def constant(b: GraphBuilder, node: Node) -> list[str]:
    return [b.const(node.attrs["value"])]


@_rule(K.READ_VARIABLE)
def read_variable(b: GraphBuilder, node: Node) -> list[str]:
    var = node.attrs["variable"]
    return [b.model.variable(var, getattr(var, "name", None) or node.name)]


@_rule(K.GET_OUTPUT)
def get_output(b: GraphBuilder, node: Node) -> list[str]:
    return [b.env[node.args[0]][node.attrs["index"]]]


@_rule(K.COPY)
def copy(b: GraphBuilder, node: Node) -> list[str]:
    return [b.one("Identity", [b.value(node.args[0])])]


def _refusal(why: str, fix: str) -> Rule:
    """A rule that refuses every node of its op, with the reason (kept as ``rule.why`` for
    the op coverage table) and the fix."""

    def rule(b: GraphBuilder, node: Node) -> list[str]:
        raise refuse(node, why, fix)

    rule.why = why  # type: ignore[attr-defined]
    return rule


def refusal_reason(op: OpKind) -> str | None:
    """Why ``op`` has no ONNX form (every node refused), or None when it has a rule."""
    rule = RULES.get(op)
    if rule is None:
        return None if op is K.PLACEHOLDER else "no rule"
    return getattr(rule, "why", None)


_STATE_FIX = (
    "an ONNX model has no state: return the new value from the function and assign "
    "the variable outside it"
)
for _kind in (K.ASSIGN_VARIABLE, K.ASSIGN_ADD_VARIABLE, K.ASSIGN_SUB_VARIABLE):
    RULES[_kind] = _refusal("ONNX models cannot update a variable", _STATE_FIX)
RULES[K.PRINT] = _refusal(
    "ONNX models have no output side effects",
    "remove the kx.print call from the function you export",
)
RULES[K.CHECK] = _refusal(
    "ONNX models cannot raise an exception",
    "check the inputs before calling the model, or drop the check",
)
RULES[K.RANDOM_CALL] = _refusal(
    "ONNX's random ops do not draw NumPy's streams",
    "draw the random values outside and pass them in as an argument",
)
RULES[K.NUMPY_CALL] = _refusal(
    "it runs a Python function as it is, at each call",
    "compute that value outside the exported function and pass it in as an argument",
)
RULES[K.TENSOR_ARRAY_WRITE] = _refusal(
    "a growing TensorArray has no ONNX form",
    "collect the rows in a preallocated array with x[i] = row, or with np.stack",
)


# -- elementwise: NumPy's loop dtypes made explicit ------------------------------------------


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
    ufunc = node.op.ufunc
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
        _params(node, dtype=_ANY)
        loop = _loop(node)
        nin = node.op.ufunc.nin
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
            return [b.cast(b.cast(result, result_dt, out_dt), out_dt, _out(node))]
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
        return [b.cast(result, out_dt, _out(node))]

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
    return result


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
    RULES[_kind] = _refusal(
        _why, "compute it outside the exported function and pass the result in as an argument"
    )


@_rule(K.WHERE)
def where(b: GraphBuilder, node: Node) -> list[str]:
    cond, x, y = node.args
    pred = (
        b.operand(cond, np.bool_)
        if not isinstance(cond, Node)
        else b.to_bool(b.value(cond), cond.dtype)
    )
    out = _out(node)
    work = np.dtype(np.int8) if out == np.bool_ else wide(out)  # (no bool, int16 Where)
    chosen = b.one("Where", [pred, b.operand(x, work), b.operand(y, work)])
    return [b.cast(chosen, work, out)]


@_rule(K.CAST)
def cast(b: GraphBuilder, node: Node) -> list[str]:
    _params(node, dtype=_ANY)
    x = node.args[0]
    return [b.one("Identity", [b.operand(x, _out(node))])]


@_rule(K.CLIP)
def clip(b: GraphBuilder, node: Node) -> list[str]:
    _params(node)
    out = _out(node)
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


# -- reductions and scans ---------------------------------------------------------------------


def _axes_input(b: GraphBuilder, node: Node, x: Node) -> list[str]:
    """The ``axes`` input of ONNX's Reduce ops ([] for all axes, NumPy's ``axis=None``)."""
    axis = node.attrs.get("axis")
    if axis is None:
        return []
    return [b.ints(_axes(axis, x.aval.ndim))]


def _any_nan(b: GraphBuilder, name: str, axes: list[str], keepdims: int) -> str:
    nan = b.one("Cast", [b.one("IsNaN", [name])], to=elem_type(np.int32))
    return b.one(
        "Cast", [b.one("ReduceMax", [nan, *axes], keepdims=keepdims)], to=elem_type(np.bool_)
    )


def _reduction(op_type: str, nan_propagates: bool = False, nan_fill: float | None = None) -> Rule:
    """sum/prod/mean/max/min: computed in the result dtype (NumPy's accumulator: int64 for
    a sum of int32 or bool, float64 for a mean of ints); max/min propagate NaN as NumPy.
    ``nan_fill``: the nan-function (nansum: NaNs count as 0, nanmax as -inf; a slice of NaNs
    only gives NaN, as NumPy's nanmax and nanmin)."""

    def rule(b: GraphBuilder, node: Node) -> list[str]:
        _params(node, axis=_ANY, keepdims=_ANY, dtype=_ANY)
        x, out = node.args[0], _out(node)
        work = np.dtype(np.int32) if out == np.bool_ else wide(out)
        name = b.operand(x, work)
        axes = _axes_input(b, node, x)
        keep = int(bool(node.attrs.get("keepdims", False)))
        nan_only = None
        if nan_fill is not None and work.kind == "f":
            nan = b.one("IsNaN", [name])
            name = b.one("Where", [nan, b.const(nan_fill, work), name])
            if not np.isfinite(nan_fill):
                numbers = b.one("Cast", [b.one("Not", [nan])], to=elem_type(np.int32))
                nan_only = b.one(
                    "Equal",
                    [b.one("ReduceMax", [numbers, *axes], keepdims=keep), b.const(0, np.int32)],
                )
        result = b.one(op_type, [name, *axes], keepdims=keep)
        if nan_propagates and out.kind == "f":
            result = b.one("Where", [_any_nan(b, name, axes, keep), b.const(np.nan, out), result])
        if nan_only is not None:
            result = b.one("Where", [nan_only, b.const(np.nan, out), result])
        return [b.cast(result, work, out)]

    return rule


@_rule(K.NANSUM)
def nansum(b: GraphBuilder, node: Node) -> list[str]:
    if _out(node).kind != "f":
        return sum_(b, node)  # (no NaN in integers: NumPy's nansum is the sum)
    return _reduction("ReduceSum", nan_fill=0.0)(b, node)


@_rule(K.NANMEAN)
def nanmean(b: GraphBuilder, node: Node) -> list[str]:
    """The sum of the numbers over their count (0/0: NaN for a slice of NaNs, as NumPy)."""
    _params(node, axis=_ANY, keepdims=_ANY, dtype=_ANY)
    x, out = node.args[0], _out(node)
    name = b.operand(x, out)
    axes = _axes_input(b, node, x)
    keep = int(bool(node.attrs.get("keepdims", False)))
    nan = b.one("IsNaN", [name])
    total = b.one(
        "ReduceSum", [b.one("Where", [nan, b.const(0.0, out), name]), *axes], keepdims=keep
    )
    count = b.one(
        "ReduceSum", [b.one("Cast", [b.one("Not", [nan])], to=elem_type(out)), *axes], keepdims=keep
    )
    return [b.one("Div", [total, count])]


def integer_sum(b: GraphBuilder, name: str, ndim: int, axes: list[int], keepdims: bool) -> str:
    """An exact (wrapping) integer sum over ``axes``: onnxruntime's integer ReduceSum goes
    through floating point (wrong past 2**53, saturating on overflow), its CumSum does not.
    The reduced axes are moved last and flattened, a zero is put in front (empty sums), and
    the running sum's last element is the total."""
    keep = [a for a in range(ndim) if a not in axes]
    moved = b.one("Transpose", [name], perm=keep + axes) if ndim else name
    lead = b.shape_of(moved, 0, len(keep)) if keep else b.ints([])
    # (the reduced length spelled out: -1 cannot be inferred next to an empty kept axis)
    length = b.one("ReduceProd", [b.shape_of(moved, len(keep))], keepdims=1)
    flat = b.one("Reshape", [moved, b.one("Concat", [lead, length], axis=0)], allowzero=1)
    pads = [0] * (len(keep) + 1)
    padded = b.one("Pad", [flat, b.ints(pads[:-1] + [1] + pads)])
    running = b.one("CumSum", [padded, b.const(len(keep), np.int64)])
    total = b.one("Gather", [running, b.const(-1, np.int64)], axis=len(keep))
    if keepdims and axes:
        total = b.one("Unsqueeze", [total, b.ints(axes)])
    return total


@_rule(K.SUM)
def sum_(b: GraphBuilder, node: Node) -> list[str]:
    out = _out(node)
    if out.kind == "f":
        return _reduction("ReduceSum")(b, node)
    _params(node, axis=_ANY, keepdims=_ANY, dtype=_ANY)
    x = node.args[0]
    ndim = x.aval.ndim
    # int64 for every integer sum: wrapping addition has the same low bits at any width
    work = np.dtype(np.int64)
    total = integer_sum(
        b,
        b.operand(x, work),
        ndim,
        _axes(node.attrs.get("axis"), ndim),
        bool(node.attrs.get("keepdims", False)),
    )
    return [b.cast(total, work, out)]


@_rule(K.PROD)
def prod(b: GraphBuilder, node: Node) -> list[str]:
    if _out(node).kind != "f":
        raise refuse(
            node,
            "onnxruntime computes integer products in floating point (wrong "
            "past 2**53, saturating where NumPy wraps)",
            "take the product of floats (x.astype(np.float64).prod())",
        )
    return _reduction("ReduceProd")(b, node)


RULES[K.MEAN] = _reduction("ReduceMean")
RULES[K.MAX] = _reduction("ReduceMax", nan_propagates=True)
RULES[K.MIN] = _reduction("ReduceMin", nan_propagates=True)
RULES[K.NANMAX] = _reduction("ReduceMax", nan_fill=-np.inf)
RULES[K.NANMIN] = _reduction("ReduceMin", nan_fill=np.inf)


def _truth_count(b: GraphBuilder, node: Node, negate: bool) -> str:
    _params(node, axis=_ANY, keepdims=_ANY)
    x = node.args[0]
    truth = b.operand(x, np.bool_)
    if negate:
        truth = b.one("Not", [truth])
    count = b.one(
        "ReduceSum",
        [b.one("Cast", [truth], to=elem_type(np.int64)), *_axes_input(b, node, x)],
        keepdims=int(bool(node.attrs.get("keepdims", False))),
    )
    return count


@_rule(K.ANY)
def any_(b: GraphBuilder, node: Node) -> list[str]:
    count = _truth_count(b, node, negate=False)
    return [b.one("Greater", [count, b.const(0, np.int64)])]


@_rule(K.ALL)
def all_(b: GraphBuilder, node: Node) -> list[str]:
    count = _truth_count(b, node, negate=True)
    return [b.one("Equal", [count, b.const(0, np.int64)])]


def _variance(b: GraphBuilder, node: Node) -> str:
    _params(node, axis=_ANY, keepdims=_ANY, ddof=_ANY, dtype=_ANY)
    x, out = node.args[0], _out(node)
    name = b.operand(x, out)
    axes = _axes_input(b, node, x)
    keep = int(bool(node.attrs.get("keepdims", False)))
    mean = b.one("ReduceMean", [name, *axes], keepdims=1)
    dev = b.one("Sub", [name, mean])
    total = b.one("ReduceSum", [b.one("Mul", [dev, dev]), *axes], keepdims=keep)
    ones = b.one("Expand", [b.const(1.0, out), b.shape_of(name)])
    count = b.one("ReduceSum", [ones, *axes], keepdims=keep)
    ddof = b.const(float(node.attrs.get("ddof", 0)), out)
    n = b.one("Max", [b.one("Sub", [count, ddof]), b.const(0.0, out)])
    return b.one("Div", [total, n])


@_rule(K.VAR)
def var(b: GraphBuilder, node: Node) -> list[str]:
    return [_variance(b, node)]


@_rule(K.STD)
def std(b: GraphBuilder, node: Node) -> list[str]:
    return [b.one("Sqrt", [_variance(b, node)])]


def _arg_reduction(op_type: str) -> Rule:
    """argmax/argmin: the first extreme index, and NumPy's first NaN when there is one."""

    def rule(b: GraphBuilder, node: Node) -> list[str]:
        _params(node, axis=_ANY, keepdims=_ANY)
        x = node.args[0]
        dt = np.dtype(np.int32) if x.dtype == np.bool_ else wide(x.dtype)
        name = b.operand(x, dt)
        axis, keep = node.attrs.get("axis"), bool(node.attrs.get("keepdims", False))
        ndim = x.aval.ndim
        if axis is None:
            name, axis = b.one("Reshape", [name, b.ints([-1])]), 0
        else:
            axis = int(axis) % max(ndim, 1)
        k = int(keep and node.attrs.get("axis") is not None)
        result = b.one(op_type, [name], axis=axis, keepdims=k, select_last_index=0)
        if dt.kind == "f":
            nan = b.one("Cast", [b.one("IsNaN", [name])], to=elem_type(np.int32))
            first_nan = b.one("ArgMax", [nan], axis=axis, keepdims=k, select_last_index=0)
            has_nan = b.one(
                "Cast",
                [b.one("ReduceMax", [nan, b.ints([axis])], keepdims=k)],
                to=elem_type(np.bool_),
            )
            result = b.one("Where", [has_nan, first_nan, result])
        if keep and node.attrs.get("axis") is None:
            result = b.one("Reshape", [result, b.ints([1] * ndim)])
        return [b.cast(result, np.int64, _out(node))]

    return rule


RULES[K.ARGMAX] = _arg_reduction("ArgMax")
RULES[K.ARGMIN] = _arg_reduction("ArgMin")


@_rule(K.CUMSUM)
def cumsum(b: GraphBuilder, node: Node) -> list[str]:
    _params(node, axis=_ANY, dtype=_ANY)
    x, out = node.args[0], _out(node)
    work = np.dtype(np.int64) if out.kind in "iub" else out  # (wrapping: same low bits)
    name = b.operand(x, work)
    axis = node.attrs.get("axis")
    if axis is None:
        name, axis = b.one("Reshape", [name, b.ints([-1])]), 0
    axis = int(axis) % max(x.aval.ndim, 1)
    return [b.cast(b.one("CumSum", [name, b.const(axis, np.int64)]), work, out)]


@_rule(K.UFUNC_ACCUMULATE)
def ufunc_accumulate(b: GraphBuilder, node: Node) -> list[str]:
    """``np.add.accumulate`` is a cumsum in the node's dtype; no other ufunc's running
    reduction (cumulative product, maximum...) has an ONNX op."""
    _params(node, ufunc=_ANY, axis=_ANY, dtype=_ANY)
    if node.attrs["ufunc"] is not np.add:
        raise refuse(
            node,
            f"ONNX has no running {node.attrs['ufunc'].__name__} (only CumSum)",
            "compute it outside the exported function and pass the result in",
        )
    attrs = {k: v for k, v in node.params.items() if k != "ufunc"}
    attrs.setdefault("axis", 0)
    as_cumsum = Node(node.name, K.CUMSUM, node.args, attrs, node.aval, node.source)
    return cumsum(b, as_cumsum)


# -- shapes -----------------------------------------------------------------------------------


@_rule(K.RESHAPE)
def reshape(b: GraphBuilder, node: Node) -> list[str]:
    _params(node, shape=_ANY, order="C", copy=_ANY)
    shape = node.attrs["shape"]
    if any(d is None for d in shape):
        raise refuse(node, "its target shape is not static", "reshape to a static shape")
    return [
        b.one(
            "Reshape", [b.value(node.args[0]), b.ints(shape)], allowzero=0 if 0 not in shape else 1
        )
    ]


@_rule(K.TRANSPOSE)
def transpose(b: GraphBuilder, node: Node) -> list[str]:
    _params(node, axes=_ANY)
    ndim = node.args[0].aval.ndim
    axes = node.attrs.get("axes")
    perm = list(range(ndim))[::-1] if axes is None else [int(a) % ndim for a in axes]
    return [b.one("Transpose", [b.value(node.args[0])], perm=perm)]


@_rule(K.EXPAND_DIMS)
def expand_dims(b: GraphBuilder, node: Node) -> list[str]:
    _params(node, axis=_ANY)
    axes = _axes(node.attrs["axis"], node.aval.ndim)
    return [b.one("Unsqueeze", [b.value(node.args[0]), b.ints(axes)])]


@_rule(K.SQUEEZE)
def squeeze(b: GraphBuilder, node: Node) -> list[str]:
    _params(node, axis=_ANY)
    x = node.args[0]
    axis = node.attrs.get("axis")
    axes = [] if axis is None else [b.ints(_axes(axis, x.aval.ndim))]
    return [b.one("Squeeze", [b.value(x), *axes])]


@_rule(K.BROADCAST_TO)
def broadcast_to(b: GraphBuilder, node: Node) -> list[str]:
    _params(node, shape=_ANY, subok=_ANY)
    shape = node.attrs["shape"]
    if any(d is None for d in shape):
        raise refuse(node, "its target shape is not static", "broadcast to a static shape")
    return [b.one("Expand", [b.value(node.args[0]), b.ints(shape)])]


@_rule(K.CONCATENATE)
def concatenate(b: GraphBuilder, node: Node) -> list[str]:
    _params(node, axis=_ANY, dtype=_ANY, casting=_ANY)
    out = _out(node)
    names = [b.operand(a, out) for a in node.args]
    axis = node.attrs.get("axis", 0)
    if axis is None:
        names, axis = [b.one("Reshape", [n, b.ints([-1])]) for n in names], 0
    return [b.one("Concat", names, axis=int(axis) % node.aval.ndim)]


@_rule(K.STACK)
def stack(b: GraphBuilder, node: Node) -> list[str]:
    _params(node, axis=_ANY, dtype=_ANY, casting=_ANY)
    out = _out(node)
    axis = int(node.attrs.get("axis", 0)) % node.aval.ndim
    names = [b.one("Unsqueeze", [b.operand(a, out), b.ints([axis])]) for a in node.args]
    return [b.one("Concat", names, axis=axis)]


@_rule(K.FLIP)
def flip(b: GraphBuilder, node: Node) -> list[str]:
    _params(node, axis=_ANY)
    x = node.args[0]
    axes = _axes(node.attrs.get("axis"), x.aval.ndim)
    if not axes:
        return [b.one("Identity", [b.value(x)])]
    return [
        b.one(
            "Slice",
            [
                b.value(x),
                b.ints([-1] * len(axes)),
                b.ints([INT64_MIN] * len(axes)),
                b.ints(axes),
                b.ints([-1] * len(axes)),
            ],
        )
    ]


@_rule(K.DIM)
def dim(b: GraphBuilder, node: Node) -> list[str]:
    x = node.args[0]
    axis = int(node.attrs["axis"]) % x.aval.ndim
    size = b.shape_of(b.value(x), axis, axis + 1)
    return [b.cast(b.one("Squeeze", [size, b.ints([0])]), np.int64, _out(node))]


@_rule(K.ARANGE)
def arange(b: GraphBuilder, node: Node) -> list[str]:
    out = _out(node)
    if out.kind not in "if" or (
        out.kind == "i"
        and any(
            np.asarray(a).dtype.kind == "f" if not isinstance(a, Node) else a.dtype.kind == "f"
            for a in node.args
        )
    ):
        raise refuse(
            node,
            "ONNX's Range computes in the result dtype only",
            "give arange integer bounds for an integer result",
        )
    names = [b.operand(a, out) for a in node.args]
    return [b.one("Range", names)]


@_rule(K.PAD)
def pad(b: GraphBuilder, node: Node) -> list[str]:
    """np.pad in the modes ONNX's Pad shares with NumPy: constant (one value), edge,
    reflect (without repeating the edge, as NumPy's), wrap (opset 19)."""
    _params(node, pad_width=_ANY, mode=_ANY, constant_values=_ANY)
    x = node.args[0]
    mode = node.attrs.get("mode", "constant")
    widths = np.asarray(node.attrs["pad_width"], dtype=np.int64).reshape(-1, 2)
    modes = {"constant": "constant", "edge": "edge", "reflect": "reflect"}
    if b.model.opset >= 19:
        modes["wrap"] = "wrap"
    if mode not in modes:
        raise refuse(
            node,
            f"np.pad mode {mode!r} has no ONNX Pad mode"
            + (" before opset 19" if mode == "wrap" else ""),
            "pad with mode 'constant', 'edge' or 'reflect' (or 'wrap' with opset=19 or later)",
        )
    if mode in ("reflect", "wrap") and any(
        d is None or w.max() >= d for d, w in zip(x.aval.shape, widths)
    ):
        raise refuse(
            node,
            f"a {mode} pad wider than its axis (or of a None dim) repeats in NumPy",
            "pad by less than the axis length",
        )
    inputs = [b.value(x), b.ints(list(widths[:, 0]) + list(widths[:, 1]))]
    if mode == "constant":
        value = np.asarray(node.attrs.get("constant_values", 0))
        if value.size != 1 and np.unique(value).size != 1:
            raise refuse(node, "different constant_values per side", "pad once per value")
        inputs.append(b.const(value.reshape(-1)[0], x.dtype))
    return [b.one("Pad", inputs, mode=modes[mode])]


@_rule(K.SORT)
def sort(b: GraphBuilder, node: Node) -> list[str]:
    """Sorted values (ties are equal values, so any sort ``kind`` gives the same result) by
    an ascending TopK over the whole axis; NaNs last, as NumPy orders them."""
    _params(node, axis=_ANY, kind=_ANY, stable=_ANY)
    x = node.args[0]
    name, axis = b.value(x), node.attrs.get("axis", -1)
    dt = np.dtype(np.int32) if x.dtype == np.bool_ else wide(x.dtype)
    name = b.cast(name, x.dtype, dt)
    if axis is None:
        name, axis = b.one("Reshape", [name, b.ints([-1])]), 0
    axis = int(axis) % max(x.aval.ndim, 1)
    count = b.shape_of(name, axis, axis + 1)
    if dt.kind != "f":
        values = b.add("TopK", [name, count], 2, axis=axis, largest=0, sorted=1)[0]
        return [b.cast(values, dt, x.dtype)]
    nan = b.one("IsNaN", [name])
    finite = b.one("Where", [nan, b.const(np.inf, dt), name])
    values = b.add("TopK", [finite, count], 2, axis=axis, largest=0, sorted=1)[0]
    nans = b.one(
        "ReduceSum", [b.one("Cast", [nan], to=elem_type(np.int64)), b.ints([axis])], keepdims=1
    )
    size = b.one("Squeeze", [count, b.ints([0])])
    position = b.one("Range", [b.const(0, np.int64), size, b.const(1, np.int64)])
    shape = [1] * x.aval.ndim if node.attrs.get("axis") is not None else [1]
    shape[axis] = -1
    position = b.one("Reshape", [position, b.ints(shape)])
    last = b.one("GreaterOrEqual", [position, b.one("Sub", [size, nans])])
    return [b.one("Where", [last, b.const(np.nan, dt), values])]


_STABLE_KINDS = ("stable", "mergesort")


@_rule(K.ARGSORT)
def argsort(b: GraphBuilder, node: Node) -> list[str]:
    """A stable argsort: ONNX's TopK breaks ties by the lower index, which is NumPy's
    ``kind="stable"``; NaNs go last in a second stable pass (as NumPy sorts them). NumPy's
    default kind orders ties as its introsort happens to, so only a stable sort is exported."""
    _params(node, axis=_ANY, kind=_ANY, stable=_ANY)
    if not (node.attrs.get("kind") in _STABLE_KINDS or node.attrs.get("stable") is True):
        raise refuse(
            node,
            "NumPy's default sort kind orders equal values as its introsort "
            "happens to, which no ONNX op reproduces",
            "np.argsort(x, kind='stable') (ties in index order), which ONNX's TopK is",
        )
    x = node.args[0]
    dt = np.dtype(np.int32) if x.dtype == np.bool_ else wide(x.dtype)
    name = b.cast(b.value(x), x.dtype, dt)
    axis = node.attrs.get("axis", -1)
    if axis is None:
        name, axis = b.one("Reshape", [name, b.ints([-1])]), 0
    axis = int(axis) % max(x.aval.ndim, 1)
    count = b.shape_of(name, axis, axis + 1)
    if dt.kind != "f":
        return [b.add("TopK", [name, count], 2, axis=axis, largest=0, sorted=1)[1]]
    nan = b.one("IsNaN", [name])
    keys = b.one("Where", [nan, b.const(np.inf, dt), name])
    order = b.add("TopK", [keys, count], 2, axis=axis, largest=0, sorted=1)[1]
    flags = b.one(
        "GatherElements", [b.one("Cast", [nan], to=elem_type(np.int32)), order], axis=axis
    )
    nan_last = b.add("TopK", [flags, count], 2, axis=axis, largest=0, sorted=1)[1]
    return [b.one("GatherElements", [order, nan_last], axis=axis)]


# -- linear algebra ---------------------------------------------------------------------------


def _linalg_work(out: np.dtype) -> np.dtype:
    """The dtype products are computed in: int64 for narrow integers (the low bits, NumPy's
    wrapped result, do not depend on the width) and for bools (any product term nonzero is
    NumPy's True)."""
    return np.dtype(np.int64) if out == np.bool_ else wide(out)


def _linalg_operands(b: GraphBuilder, node: Node) -> list[str]:
    out = _out(node)
    if out.kind not in "iufb" or out == np.float16:
        raise refuse(
            node,
            f"onnxruntime has no {out} MatMul kernel",
            "cast the operands to a float or integer dtype first",
        )
    return [b.operand(a, _linalg_work(out)) for a in node.args]


def _linalg_result(b: GraphBuilder, node: Node, name: str) -> list[str]:
    return [b.cast(name, _linalg_work(_out(node)), _out(node))]


@_rule(K.MATMUL)
def matmul(b: GraphBuilder, node: Node) -> list[str]:
    _params(node)
    return _linalg_result(b, node, b.one("MatMul", _linalg_operands(b, node)))


@_rule(K.DOT)
def dot(b: GraphBuilder, node: Node) -> list[str]:
    _params(node)
    ranks = [a.aval.ndim if isinstance(a, Node) else np.ndim(a) for a in node.args]
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


@_rule(K.OUTER)
def outer(b: GraphBuilder, node: Node) -> list[str]:
    _params(node)
    a, c = _linalg_operands(b, node)
    col = b.one("Reshape", [a, b.ints([-1, 1])])
    row = b.one("Reshape", [c, b.ints([1, -1])])
    return _linalg_result(b, node, b.one("Mul", [col, row]))


@_rule(K.VECDOT)
def vecdot(b: GraphBuilder, node: Node) -> list[str]:
    """np.vecdot of real arrays: the products summed over the last axis (integers exactly)."""
    _params(node)
    a, c = _linalg_operands(b, node)
    product = b.one("Mul", [a, c])
    out = _out(node)
    ndim = max(arg.aval.ndim for arg in node.args if isinstance(arg, Node))
    if out.kind == "f":
        return [b.one("ReduceSum", [product, b.ints([-1])], keepdims=0)]
    return _linalg_result(b, node, integer_sum(b, product, ndim, [ndim - 1], False))


@_rule(K.VDOT)
def vdot(b: GraphBuilder, node: Node) -> list[str]:
    """np.vdot of real arrays: the flattened products summed (integers exactly)."""
    _params(node)
    a, c = [b.one("Reshape", [n, b.ints([-1])]) for n in _linalg_operands(b, node)]
    product = b.one("Mul", [a, c])
    if _out(node).kind == "f":
        return [b.one("ReduceSum", [product], keepdims=0)]
    return _linalg_result(b, node, integer_sum(b, product, 1, [0], False))


@_rule(K.EINSUM)
def einsum(b: GraphBuilder, node: Node) -> list[str]:
    _params(node, subscripts=_ANY, optimize=_ANY)
    subscripts = node.attrs["subscripts"]
    terms = subscripts.split("->")[0].split(",")
    spans = {
        (a.aval.ndim if isinstance(a, Node) else np.ndim(a)) - len(t.replace("...", ""))
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


@_rule(K.DET)
def det(b: GraphBuilder, node: Node) -> list[str]:
    out = _out(node)
    if out.kind != "f":
        raise refuse(node, "ONNX's Det computes floats only", "cast to float first")
    return [b.one("Det", [b.operand(node.args[0], out)])]


# -- control flow -----------------------------------------------------------------------------


@_rule(K.COND)
def cond(b: GraphBuilder, node: Node) -> list[str]:
    pred = node.args[0]
    pred_name = (
        b.to_bool(b.value(pred), pred.dtype)
        if isinstance(pred, Node)
        else b.operand(pred, np.bool_)
    )
    operands = [
        b.value(a) if isinstance(a, Node) else b.operand(a, np.asarray(a).dtype)
        for a in node.args[1:]
    ]
    out_dtypes = [aval.dtype for aval in node.aval]
    branches = []
    for label, graph in zip(("then", "else"), node.attrs["branches"]):
        bindings = dict(zip(graph.inputs, operands))
        branches.append(b.subgraph(graph, bindings, [], out_dtypes, f"{node.name}_{label}"))
    return b.add(
        "If",
        [pred_name],
        len(out_dtypes),
        hint=node.name,
        then_branch=branches[0],
        else_branch=branches[1],
    )


@_rule(K.WHILE)
def while_(b: GraphBuilder, node: Node) -> list[str]:
    """A graph loop as ONNX's ``Loop`` without a trip count: the condition graph runs once
    before the loop and again at the end of each body, on the new values."""
    _, helper, _ = onnx_modules()
    n = node.attrs["n_vars"]
    cond_graph, body_graph = node.attrs["cond"], node.attrs["body"]
    args = [
        b.value(a) if isinstance(a, Node) else b.operand(a, np.asarray(a).dtype) for a in node.args
    ]
    dtypes = [aval.dtype for aval in node.aval]
    # (a loop-carried value keeps one dtype in ONNX: the initial values take the loop's)
    inits = [
        b.cast(v, a.dtype if isinstance(a, Node) else np.asarray(a).dtype, dt)
        for v, a, dt in zip(args[:n], node.args[:n], dtypes)
    ]
    captures = args[n:]
    first = GraphBuilder(b.model, b.rules, b.env)
    first.env.update({p: [v] for p, v in zip(cond_graph.inputs, inits + captures)})
    first.emit(cond_graph)
    b.nodes.extend(first.nodes)
    out = cond_graph.outputs[0]
    keep_going = b.to_bool(first.value(out), out.dtype)

    iteration, cond_in = b.fresh(f"{node.name}_iter"), b.fresh(f"{node.name}_cond_in")
    carried = [b.fresh(f"{node.name}_var{i}") for i in range(n)]
    inputs = [
        helper.make_tensor_value_info(iteration, elem_type(np.int64), []),
        helper.make_tensor_value_info(cond_in, elem_type(np.bool_), []),
    ]
    inputs += [
        helper.make_tensor_value_info(name, elem_type(dt), None)
        for name, dt in zip(carried, dtypes)
    ]
    bindings = dict(zip(body_graph.inputs, carried + captures))

    def finish(inner: GraphBuilder, new_values: list[str]) -> list[str]:
        again = GraphBuilder(inner.model, inner.rules, inner.env)
        again.env.update({p: [v] for p, v in zip(cond_graph.inputs, new_values + captures)})
        again.emit(cond_graph)
        inner.nodes.extend(again.nodes)
        test = cond_graph.outputs[0]
        return [inner.to_bool(again.value(test), test.dtype), *new_values]

    body = b.subgraph(body_graph, bindings, inputs, dtypes, f"{node.name}_body", finish)
    return b.add("Loop", ["", keep_going, *inits], n, hint=node.name, body=body)


# -- indexing ---------------------------------------------------------------------------------


class _Index:
    """One entry of an index template, resolved: ``kind`` is slice, int, array, mask or new."""

    def __init__(self, kind: str, value: Any, ndim: int = 1) -> None:
        self.kind, self.value, self.ndim = kind, value, ndim


def _resolve_index(
    b: GraphBuilder, node: Node, template: tuple, dyn: Sequence[Any], ndim: int
) -> list[_Index]:
    """The template's entries with run-time operands looked up and ``...`` expanded."""
    out: list[_Index | None] = []
    for c in template:
        if isinstance(c, DynamicIndex):
            arg = dyn[c.position - 1]
            if arg.dtype == np.bool_:
                out.append(_Index("mask", b.value(arg), arg.aval.ndim))
            elif arg.dtype.kind not in "iu":
                raise refuse(node, f"an index of dtype {arg.dtype}", "index with integers")
            elif arg.aval.ndim == 0:
                out.append(_Index("int", b.cast(b.value(arg), arg.dtype, np.int64)))
            else:
                out.append(
                    _Index("array", b.cast(b.value(arg), arg.dtype, np.int64), arg.aval.ndim)
                )
        elif isinstance(c, slice):
            out.append(_Index("slice", c))
        elif c is None:
            out.append(_Index("new", None, 0))
        elif c is Ellipsis:
            out.append(None)
        elif isinstance(c, (bool, np.bool_)):
            raise refuse(node, "a scalar boolean index", "index with an array mask")
        elif isinstance(c, (int, np.integer)):
            out.append(_Index("int", b.const(int(c), np.int64)))
        else:
            arr = np.asarray(c)
            if arr.dtype == np.bool_:
                out.append(_Index("mask", b.const(arr), arr.ndim))
            elif arr.dtype.kind in "iu" and arr.ndim == 0:
                out.append(_Index("int", b.const(int(arr), np.int64)))
            elif arr.dtype.kind in "iu":
                out.append(_Index("array", b.const(arr.astype(np.int64)), arr.ndim))
            else:
                raise refuse(node, f"an index {c!r}", "index with ints, slices or arrays")
    used = sum(
        0 if e is None or e.kind == "new" else (e.ndim if e.kind == "mask" else 1) for e in out
    )
    full = [_Index("slice", slice(None)) for _ in range(ndim - used)]
    if any(e is None for e in out):
        at = out.index(None)
        out = out[:at] + full + [e for e in out[at + 1 :] if e is not None]
    else:
        out = out + full
    return out  # type: ignore[return-value]


def _slice_part(b: GraphBuilder, node: Node, value: Any, dyn: Sequence[Any], default: int) -> str:
    """One start/stop/step of a slice as a 1-element int64 tensor."""
    if value is None:
        return b.ints([default])
    if isinstance(value, DynamicIndex):
        arg = dyn[value.position - 1]
        return b.one("Reshape", [b.cast(b.value(arg), arg.dtype, np.int64), b.ints([1])])
    return b.ints([int(value)])


def _basic_slices(
    b: GraphBuilder, node: Node, x: str, entries: list[_Index], dyn: Sequence[Any]
) -> str:
    """One ONNX Slice for every non-trivial slice entry (input axes are unchanged)."""
    starts, ends, axes, steps = [], [], [], []
    axis = 0
    for e in entries:
        if e.kind == "new":
            continue
        if e.kind == "slice" and e.value != slice(None):
            s = e.value
            step_static = s.step if not isinstance(s.step, DynamicIndex) else None
            if isinstance(s.step, DynamicIndex):
                raise refuse(node, "a slice with a run-time step", "use a literal step")
            negative = step_static is not None and step_static < 0
            starts.append(_slice_part(b, node, s.start, dyn, INT64_MAX if negative else 0))
            ends.append(_slice_part(b, node, s.stop, dyn, INT64_MIN if negative else INT64_MAX))
            steps.append(b.ints([1 if step_static is None else int(step_static)]))
            axes.append(axis)
        axis += e.ndim if e.kind == "mask" else 1
    if not axes:
        return x

    def cat(parts):
        return parts[0] if len(parts) == 1 else b.one("Concat", parts, axis=0)

    return b.one("Slice", [x, cat(starts), cat(ends), b.ints(axes), cat(steps)])


def index_value(
    b: GraphBuilder, node: Node, x: str, ndim: int, template: tuple, dyn: Sequence[Any]
) -> str:
    """``x[template]`` as NumPy indexes: basic slicing, integers, one boolean mask, and
    integer arrays (Gather for one, GatherND for several, NumPy's placement of the result)."""
    entries = _resolve_index(b, node, template, dyn, ndim)
    x = _basic_slices(b, node, x, entries, dyn)
    advanced = [e for e in entries if e.kind in ("array", "mask")]
    if not advanced:
        removed, axis, new_axes, out_pos = [], 0, [], 0
        for e in entries:
            if e.kind == "int":
                removed.append((axis, e.value))
                axis += 1
            elif e.kind == "new":
                new_axes.append(out_pos)
                out_pos += 1
            else:
                axis += 1
                out_pos += 1
        for ax, value in reversed(removed):
            x = b.one("Gather", [x, value], axis=ax)
        if new_axes:
            x = b.one("Unsqueeze", [x, b.ints(new_axes)])
        return x
    if any(e.kind == "new" for e in entries):
        raise refuse(node, "np.newaxis together with an array index", "index in two steps")
    positions, axis = [], 0
    for e in entries:
        if e.kind in ("array", "mask", "int"):
            positions.append((axis, e))
        axis += e.ndim if e.kind == "mask" else 1
    if any(e.kind == "mask" for _, e in positions):
        if len(positions) != 1:
            raise refuse(
                node, "a boolean mask together with other array indices", "index in two steps"
            )
        ((p, e),) = positions
        masked = b.one("ReduceProd", [b.shape_of(x, p, p + e.ndim)], keepdims=1)
        shape = b.one(
            "Concat",
            [b.shape_of(x, 0, p) if p else b.ints([]), masked, b.shape_of(x, p + e.ndim)],
            axis=0,
        )
        flat = b.one("Reshape", [x, shape], allowzero=1)
        return b.one("Compress", [flat, b.one("Reshape", [e.value, b.ints([-1])])], axis=p)
    if len(positions) == 1:
        ((p, e),) = positions
        return b.one("Gather", [x, e.value], axis=p)
    # several integer indices: broadcast them, gather their axes moved to the front
    idx = [e.value for _, e in positions]
    for _ in range(2):
        for i in range(len(idx)):
            for j in range(len(idx)):
                if i != j:
                    idx[i] = b.one("Expand", [idx[i], b.shape_of(idx[j])])
    axes = [p for p, _ in positions]
    others = [a for a in range(ndim) if a not in axes]
    x = b.one("Transpose", [x], perm=axes + others)
    stacked = b.one("Concat", [b.one("Unsqueeze", [i, b.ints([-1])]) for i in idx], axis=-1)
    result = b.one("GatherND", [x, stacked])
    rank = max(e.ndim if e.kind == "array" else 0 for _, e in positions)
    contiguous = axes == list(range(axes[0], axes[0] + len(axes)))
    if contiguous and axes[0] > 0:
        lead = axes[0]
        perm = (
            [rank + i for i in range(lead)]
            + list(range(rank))
            + [rank + i for i in range(lead, len(others))]
        )
        result = b.one("Transpose", [result], perm=perm)
    return result


@_rule(K.NONZERO)
def nonzero(b: GraphBuilder, node: Node) -> list[str]:
    """np.nonzero: ONNX's NonZero lists the indices in NumPy's (row-major) order."""
    x = node.args[0]
    if x.aval.ndim == 0:
        raise refuse(node, "np.nonzero of a 0-d value", "np.nonzero(np.atleast_1d(x))")
    found = b.one("NonZero", [b.to_bool(b.value(x), x.dtype)])
    return [b.one("Gather", [found, b.const(i, np.int64)], axis=0) for i in range(x.aval.ndim)]


@_rule(K.ARGWHERE)
def argwhere(b: GraphBuilder, node: Node) -> list[str]:
    x = node.args[0]
    if x.aval.ndim == 0:
        raise refuse(node, "np.argwhere of a 0-d value", "np.argwhere(np.atleast_1d(x))")
    return [b.one("Transpose", [b.one("NonZero", [b.to_bool(b.value(x), x.dtype)])], perm=[1, 0])]


@_rule(K.COMPRESS)
def compress(b: GraphBuilder, node: Node) -> list[str]:
    """np.compress: ONNX's Compress (a condition shorter than the axis selects from its
    start in both)."""
    _params(node, axis=_ANY)
    condition, a = node.args
    cond = b.one("Reshape", [b.operand(condition, np.bool_), b.ints([-1])])
    axis = node.attrs.get("axis")
    if axis is None:
        return [b.one("Compress", [b.value(a), cond])]
    return [b.one("Compress", [b.value(a), cond], axis=int(axis) % a.aval.ndim)]


@_rule(K.DIAGFLAT)
def diagflat(b: GraphBuilder, node: Node) -> list[str]:
    """np.diagflat(v, k): the flattened values on the k-th diagonal of a square of zeros (a
    select from an identity mask, so inf and NaN stay off the other entries)."""
    _params(node, k=_ANY)
    v = node.args[0]
    size = v.aval.size
    if size is None:
        raise refuse(
            node, "np.diagflat of a value with a None dimension", "give the input a static shape"
        )
    k = int(node.attrs.get("k", 0))
    work = np.dtype(np.int32) if v.dtype == np.bool_ else wide(v.dtype)
    flat = b.one("Reshape", [b.operand(v, work), b.ints([1, -1])])
    mask = b.const(np.eye(size, dtype=np.bool_))
    square = b.one("Where", [mask, flat, b.const(0, work)])
    if k:
        # k > 0: k zero columns before and rows after; k < 0: rows before, columns after
        top, left = (0, k) if k > 0 else (-k, 0)
        bottom, right = (k, 0) if k > 0 else (0, -k)
        square = b.one("Pad", [square, b.ints([top, left, bottom, right])], mode="constant")
    return [b.cast(square, work, _out(node))]


@_rule(K.GETITEM)
def getitem(b: GraphBuilder, node: Node) -> list[str]:
    _params(node, index=_ANY)
    x = node.args[0]
    return [index_value(b, node, b.value(x), x.aval.ndim, node.attrs["index"], node.args[1:])]


def _positions(b: GraphBuilder, node: Node, x: Node, dyn: Sequence[Any]) -> tuple[str, str]:
    """(x flattened, the flat positions ``x[index]`` selects, in NumPy's order): an index
    grid indexed the way the op indexes ``x``."""
    name = b.value(x)
    count = b.one("Size", [name])
    grid = b.one("Range", [b.const(0, np.int64), count, b.const(1, np.int64)])
    grid = b.one("Reshape", [grid, b.shape_of(name)], allowzero=1)
    picked = index_value(b, node, grid, x.aval.ndim, node.attrs["index"], dyn)
    return b.one("Reshape", [name, b.ints([-1])]), picked


def _scatter(b: GraphBuilder, node: Node, value: Any, reduction: str) -> str:
    x = node.args[0]
    flat, picked = _positions(b, node, x, node.args[2:])
    values = b.one("Expand", [b.operand(value, x.dtype), b.shape_of(picked)])
    where_ = b.one("Unsqueeze", [b.one("Reshape", [picked, b.ints([-1])]), b.ints([-1])])
    updates = b.one("Reshape", [values, b.ints([-1])])
    attrs = {} if reduction == "none" else {"reduction": reduction}
    out = b.one("ScatterND", [flat, where_, updates], **attrs)
    return b.one("Reshape", [out, b.shape_of(b.value(x))], allowzero=1)


@_rule(K.SETITEM)
def setitem(b: GraphBuilder, node: Node) -> list[str]:
    """``x[index] = value`` on a copy: the flat positions the index selects get the value
    broadcast to them (onnxruntime's ScatterND writes in order, so a repeated position ends
    with its last value, as NumPy's assignment)."""
    _params(node, index=_ANY)
    return [_scatter(b, node, node.args[1], "none")]


_AT_REDUCTIONS = {np.add: "add", np.multiply: "mul", np.maximum: "max", np.minimum: "min"}


@_rule(K.UFUNC_AT)
def ufunc_at(b: GraphBuilder, node: Node) -> list[str]:
    """``np.add.at(a, index, b)``: ScatterND accumulating repeated positions, as ``at``."""
    _params(node, index=_ANY, ufunc=_ANY)
    ufunc = node.attrs["ufunc"]
    value = node.args[1]
    reduction = _AT_REDUCTIONS.get(ufunc)
    if reduction is None or value is None:
        raise refuse(
            node,
            f"{getattr(ufunc, '__name__', ufunc)}.at has no ONNX scatter form",
            "use np.add.at, np.multiply.at, np.maximum.at or np.minimum.at",
        )
    return [_scatter(b, node, value, reduction)]


# -- ops with no ONNX form: each refused with its reason (the builder refuses any op missing
# -- here too; listing them keeps the op coverage table's reasons complete)
_OUTSIDE = (
    "compute this value outside the exported function and pass it in as an argument, or keep "
    "running it with kx.function"
)
_NOT_WRITTEN = "no translation written yet"
_NO_LAPACK = (
    "the ONNX standard has no matrix factorisation or solver op (onnxruntime's Inverse is a "
    "contrib op, outside the standard)"
)
_NOT_EXPORTED = {
    K.CUMPROD: "ONNX has CumSum only; a product scan would be a Loop, not written",
    K.NANCUMSUM: _NOT_WRITTEN,
    K.NANCUMPROD: "ONNX has CumSum only",
    K.INV: _NO_LAPACK,
    K.SOLVE: _NO_LAPACK,
    K.SVD: _NO_LAPACK,
    K.SLOGDET: _NO_LAPACK,
    K.CHOLESKY: _NO_LAPACK,
    K.QR: _NO_LAPACK,
    K.EIGH: _NO_LAPACK,
    K.EIGVALSH: _NO_LAPACK,
    K.LSTSQ: _NO_LAPACK,
    K.PINV: _NO_LAPACK,
    K.CORRELATE: f"{_NOT_WRITTEN} (ONNX's Conv sums in its own order, not NumPy's)",
    K.CONVOLVE: f"{_NOT_WRITTEN} (ONNX's Conv sums in its own order, not NumPy's)",
    K.MATVEC: _NOT_WRITTEN,
    K.VECMAT: _NOT_WRITTEN,
    K.FFT: "complex results: the exported models hold real and integer tensors only",
    K.REAL: "complex values: the exported models hold real and integer tensors only",
    K.IMAG: "complex values: the exported models hold real and integer tensors only",
    K.INSERT: _NOT_WRITTEN,
    K.PACKBITS: f"{_NOT_WRITTEN} (ONNX has no bit packing op)",
    K.UNPACKBITS: f"{_NOT_WRITTEN} (ONNX has no bit packing op)",
    K.BINCOUNT: f"{_NOT_WRITTEN} (its length depends on the data's maximum)",
    K.TRIM_ZEROS: f"{_NOT_WRITTEN} (its length depends on the data)",
    K.RAVEL_MULTI_INDEX: _NOT_WRITTEN,
    K.UNRAVEL_INDEX: _NOT_WRITTEN,
    K.UNIQUE: f"{_NOT_WRITTEN} (its length depends on the data)",
    K.ARGPARTITION: "NumPy's order within each side of the pivot is its introselect's; "
    "ONNX's TopK orders otherwise",
    K.PARTITION: "NumPy's order within each side of the pivot is its introselect's; "
    "ONNX's TopK orders otherwise",
    K.HISTOGRAM: _NOT_WRITTEN,
    K.INTERP: _NOT_WRITTEN,
    K.SEARCHSORTED: _NOT_WRITTEN,
    K.DIGITIZE: _NOT_WRITTEN,
    K.LEXSORT: _NOT_WRITTEN,
    K.ISIN: _NOT_WRITTEN,
    K.NANPROD: _NOT_WRITTEN,
    K.NANSTD: _NOT_WRITTEN,
    K.NANVAR: _NOT_WRITTEN,
    K.NANARGMAX: _NOT_WRITTEN,
    K.NANARGMIN: _NOT_WRITTEN,
    K.MEDIAN: f"{_NOT_WRITTEN} (a sort and NumPy's interpolation)",
    K.NANMEDIAN: f"{_NOT_WRITTEN} (a sort and NumPy's interpolation)",
    K.PERCENTILE: f"{_NOT_WRITTEN} (a sort and NumPy's interpolation methods)",
    K.NANPERCENTILE: f"{_NOT_WRITTEN} (a sort and NumPy's interpolation methods)",
    K.QUANTILE: f"{_NOT_WRITTEN} (a sort and NumPy's interpolation methods)",
    K.NANQUANTILE: f"{_NOT_WRITTEN} (a sort and NumPy's interpolation methods)",
    K.UFUNC_REDUCE: f"{_NOT_WRITTEN} (np.<ufunc>.reduce for the ufuncs that are not sum, "
    "prod, max or min)",
    K.UFUNC_REDUCEAT: _NOT_WRITTEN,
}
for _kind, _why in _NOT_EXPORTED.items():
    assert _kind not in RULES, _kind  # a rule and a refusal for one op
    RULES[_kind] = _refusal(_why, _OUTSIDE)
