"""Inline templates of elementwise ops: per op and loop kind, the expression that computes it
with NumPy's exact semantics (the table :func:`.lowering.lower` and reductions' accumulators
read)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ...ir import OpKind
from ..emit.literals import BOOL

if TYPE_CHECKING:
    from .writer import InlineContext


def _t(kinds: str, fn: Callable[..., str]) -> tuple[str, Callable[..., str]]:
    return kinds, fn


def truth(expr: str, dtype: np.dtype) -> str:
    """``expr`` (of ``dtype``) as a bool: itself for a bool, ``expr != 0`` otherwise."""
    return expr if dtype == BOOL else f"({expr} != 0)"


# Float ops with ``op.kernel_loop`` call NumPy's loop on the CPU (bitwise equal); CUDA has
# device math for a few of them (math.* exists on the device and in the simulator).
CUDA_MATH = {
    OpKind.EXP: "_dexp",
    OpKind.LOG: "_dlog",
    OpKind.TANH: "_dtanh",
    OpKind.SQRT: "_dsqrt",
}


def _cmp(op: str) -> Callable[..., str]:
    return lambda o, b: f"({o[0]} {op} {o[1]})"


def _pick(cmp: str, nan_from: int | None) -> Callable[..., str]:
    """``a if a <cmp> b else b``; with ``nan_from`` the NaN of that operand wins the pick
    (maximum/minimum propagate a NaN of either side via ``a != a``; fmax/fmin prefer the
    non-NaN operand, so only ``b``'s NaN makes them pick ``a``).

    The comparison decides which operand a tie returns, which matters for ``-0.0 == 0.0``:
    NumPy's ``maximum``/``minimum`` return ``b`` on a tie (``maximum(-0.0, 0.0)`` is
    ``+0.0``, ``maximum(0.0, -0.0)`` is ``-0.0``), so they compare strictly. NumPy's
    ``fmax``/``fmin`` answer a tie of zeros differently in its SIMD lanes and its scalar
    tail; they keep ``a``."""

    def template(o: list[str], b: InlineContext) -> str:
        if nan_from is None:
            return f"({o[0]} if {o[0]} {cmp} {o[1]} else {o[1]})"
        nan = o[nan_from]
        return f"({o[0]} if ({o[0]} {cmp} {o[1]}) | ({nan} != {nan}) else {o[1]})"

    return template


_max_f, _min_f = _pick(">", 0), _pick("<", 0)
_fmax_f, _fmin_f = _pick(">=", 1), _pick("<=", 1)
_max_i, _min_i = _pick(">=", None), _pick("<=", None)


# (op, loop kind) -> inline template; loop kinds: b(ool) i(nt) u(nsigned) f(loat).
# Integer +, - and * are the wrapping intrinsics ``_wadd``/``_wsub``/``_wmul`` every kernel
# module imports (numba_decorators; numba_cuda on the device): Numba's own operators tell
# LLVM that signed arithmetic never overflows (``nsw``), and LLVM then folds ``x + 1 > x``
# to True. The intrinsics also compute in the operands' width (Numba widens small integers).
INLINE: dict[OpKind, list[tuple[str, Callable[..., str]]]] = {
    OpKind.ADD: [
        _t("b", lambda o, b: f"({o[0]} | {o[1]})"),
        _t("iu", lambda o, b: f"_wadd({o[0]}, {o[1]})"),
        _t("f", lambda o, b: b.float_op("+", o)),
    ],
    OpKind.SUBTRACT: [
        _t("iu", lambda o, b: f"_wsub({o[0]}, {o[1]})"),
        _t("f", lambda o, b: b.float_op("-", o)),
    ],
    OpKind.MULTIPLY: [
        _t("b", lambda o, b: f"({o[0]} & {o[1]})"),
        _t("iu", lambda o, b: f"_wmul({o[0]}, {o[1]})"),
        _t("f", lambda o, b: b.float_op("*", o)),
    ],
    OpKind.DIVIDE: [_t("f", lambda o, b: b.float_op("/", o))],
    OpKind.NEGATIVE: [_t("iuf", lambda o, b: f"(-{o[0]})")],
    OpKind.POSITIVE: [_t("iuf", lambda o, b: o[0])],
    OpKind.CONJUGATE: [_t("biuf", lambda o, b: o[0])],
    OpKind.ABSOLUTE: [_t("if", lambda o, b: f"abs({o[0]})"), _t("bu", lambda o, b: o[0])],
    OpKind.FABS: [_t("f", lambda o, b: f"abs({o[0]})")],
    OpKind.SQUARE: [
        _t("iu", lambda o, b: f"_wmul({o[0]}, {o[0]})"),
        _t("f", lambda o, b: f"({o[0]} * {o[0]})"),
        _t("b", lambda o, b: o[0]),
    ],
    OpKind.RECIPROCAL: [_t("f", lambda o, b: f"({b.one} / {o[0]})")],
    OpKind.SIGN: [
        _t(
            "f",
            lambda o, b: (
                f"({b.one} if {o[0]} > 0 else (-{b.one} if {o[0]} < 0 "
                f"else ({b.zero} if {o[0]} == 0 else {o[0]})))"
            ),
        ),
        _t(
            "i", lambda o, b: f"({b.one} if {o[0]} > 0 else (-{b.one} if {o[0]} < 0 else {b.zero}))"
        ),
        _t("u", lambda o, b: f"({b.one} if {o[0]} > 0 else {b.zero})"),
    ],
    OpKind.MAXIMUM: [_t("f", _max_f), _t("iu", _max_i), _t("b", lambda o, b: f"({o[0]} | {o[1]})")],
    OpKind.MINIMUM: [_t("f", _min_f), _t("iu", _min_i), _t("b", lambda o, b: f"({o[0]} & {o[1]})")],
    OpKind.FMAX: [_t("f", _fmax_f), _t("iu", _max_i), _t("b", lambda o, b: f"({o[0]} | {o[1]})")],
    OpKind.FMIN: [_t("f", _fmin_f), _t("iu", _min_i), _t("b", lambda o, b: f"({o[0]} & {o[1]})")],
    OpKind.EQUAL: [_t("biuf", _cmp("=="))],
    OpKind.NOT_EQUAL: [_t("biuf", _cmp("!="))],
    OpKind.LESS: [_t("iuf", _cmp("<"))],
    OpKind.LESS_EQUAL: [_t("iuf", _cmp("<="))],
    OpKind.GREATER: [_t("iuf", _cmp(">"))],
    OpKind.GREATER_EQUAL: [_t("iuf", _cmp(">="))],
    OpKind.LOGICAL_AND: [_t("biuf", lambda o, b: f"({b.truth(0)} & {b.truth(1)})")],
    OpKind.LOGICAL_OR: [_t("biuf", lambda o, b: f"({b.truth(0)} | {b.truth(1)})")],
    OpKind.LOGICAL_XOR: [_t("biuf", lambda o, b: f"({b.truth(0)} != {b.truth(1)})")],
    OpKind.LOGICAL_NOT: [
        _t("b", lambda o, b: f"(not {o[0]})"),
        _t("iuf", lambda o, b: f"({o[0]} == 0)"),
    ],
    OpKind.BITWISE_AND: [_t("biu", lambda o, b: f"({o[0]} & {o[1]})")],
    OpKind.BITWISE_OR: [_t("biu", lambda o, b: f"({o[0]} | {o[1]})")],
    OpKind.BITWISE_XOR: [_t("biu", lambda o, b: f"({o[0]} ^ {o[1]})")],
    OpKind.INVERT: [_t("iu", lambda o, b: f"(~{o[0]})"), _t("b", lambda o, b: f"(not {o[0]})")],
    OpKind.ISNAN: [_t("f", lambda o, b: f"({o[0]} != {o[0]})"), _t("biu", lambda o, b: "False")],
    OpKind.ISINF: [
        _t("f", lambda o, b: f"(abs({o[0]}) == {b.const(np.inf)})"),
        _t("biu", lambda o, b: "False"),
    ],
    OpKind.ISFINITE: [
        _t("f", lambda o, b: f"(abs({o[0]}) < {b.const(np.inf)})"),
        _t("biu", lambda o, b: "True"),
    ],
    OpKind.SIGNBIT: [_t("iu", lambda o, b: f"({o[0]} < 0)")],
    # NumPy's heaviside answers a NaN ``x`` with its own NaN constant (not ``x``'s payload).
    OpKind.HEAVISIDE: [
        _t(
            "f",
            lambda o, b: (
                f"({b.zero} if {o[0]} < 0 else ({b.one} if "
                f"{o[0]} > 0 else ({o[1]} if {o[0]} == 0 "
                f"else {b.const(np.nan)})))"
            ),
        )
    ],
    OpKind.FLOOR: [_t("biu", lambda o, b: o[0])],
    OpKind.CEIL: [_t("biu", lambda o, b: o[0])],
    OpKind.TRUNC: [_t("biu", lambda o, b: o[0])],
    OpKind.RINT: [],
    OpKind.FLOOR_DIVIDE: [_t("iu", lambda o, b: b.helper("fdiv", o))],
    OpKind.REMAINDER: [_t("iu", lambda o, b: b.helper("mod", o))],
    OpKind.FMOD: [_t("iu", lambda o, b: b.helper("fmod", o))],
    OpKind.POWER: [_t("iu", lambda o, b: b.int_power(o))],
    OpKind.LEFT_SHIFT: [_t("iu", lambda o, b: b.helper("shl", o))],
    OpKind.RIGHT_SHIFT: [_t("iu", lambda o, b: b.helper("shr", o))],
}
