"""Rounding and float predicates: floor, ceil, trunc, rint, isnan, isinf, isfinite, signbit.

Their abstract evaluation and reference lowering are every ufunc's (:mod:`.ufuncs`), and their
gradient is zero (``autodiff.rules.ZERO_GRADIENT``); a fused kernel calls NumPy's float loop
for the rounding functions (``op.kernel_loop``), inline for a 0-d value on the CPU
(``backends.codegen.lowering``'s exact float functions)."""

from __future__ import annotations

import numpy as np

from ...backends.codegen.inline_templates import INLINE, by_kind
from ...ir import Node, OpKind
from ...onnx.builder import GraphBuilder
from ...onnx.rules.common import RULES as ONNX
from ...passes.simplify import RULES as SIMPLIFY
from ...passes.simplify import idempotent, identity_on
from .ufuncs import INTS_BOOL, Emit, no_onnx_form, ufunc_rule

K = OpKind


# --- floor, ceil, trunc, rint ---

SIMPLIFY.add(K.FLOOR, [idempotent("f"), identity_on(INTS_BOOL)])
SIMPLIFY.add(K.CEIL, [idempotent("f"), identity_on(INTS_BOOL)])
SIMPLIFY.add(K.TRUNC, [idempotent("f"), identity_on(INTS_BOOL)])
SIMPLIFY.add(K.RINT, [idempotent("f")])

INLINE.add(K.FLOOR, [by_kind("biu", lambda o, b: o[0])])
INLINE.add(K.CEIL, [by_kind("biu", lambda o, b: o[0])])
INLINE.add(K.TRUNC, [by_kind("biu", lambda o, b: o[0])])
INLINE.add(K.RINT, [])


def _integers_identity(op_type: str) -> Emit:
    """floor/ceil/trunc/rint: the identity on integers (NumPy's integer loops)."""

    def emit(b: GraphBuilder, names: list[str], dt: np.dtype, node: Node) -> str:
        return b.one("Identity" if dt.kind in "iub" else op_type, names)

    return emit


def _trunc(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    if dt.kind in "iub":
        return b.one("Identity", n)
    negative = b.one("Less", [n[0], b.const(0, dt)])
    return b.one("Where", [negative, b.one("Ceil", n), b.one("Floor", n)])


ONNX.add(K.FLOOR, ufunc_rule(_integers_identity("Floor")))
ONNX.add(K.CEIL, ufunc_rule(_integers_identity("Ceil")))
ONNX.add(K.TRUNC, ufunc_rule(_trunc))
ONNX.add(K.RINT, ufunc_rule(_integers_identity("Round")))


# --- isnan, isinf, isfinite ---

INLINE.add(
    K.ISNAN,
    [by_kind("f", lambda o, b: f"({o[0]} != {o[0]})"), by_kind("biu", lambda o, b: "False")],
)
INLINE.add(
    K.ISINF,
    [
        by_kind("f", lambda o, b: f"(abs({o[0]}) == {b.const(np.inf)})"),
        by_kind("biu", lambda o, b: "False"),
    ],
)
INLINE.add(
    K.ISFINITE,
    [
        by_kind("f", lambda o, b: f"(abs({o[0]}) < {b.const(np.inf)})"),
        by_kind("biu", lambda o, b: "True"),
    ],
)


def _float_test(op_type: str) -> Emit:
    """isnan/isinf: always False on integers and bools (their NumPy loops)."""

    def emit(b: GraphBuilder, names: list[str], dt: np.dtype, node: Node) -> str:
        if dt.kind == "f":
            return b.one(op_type, names)
        return b.one("Not", [b.one("Equal", [names[0], names[0]])])

    return emit


def _isfinite(b: GraphBuilder, n: list[str], dt: np.dtype, node: Node) -> str:
    if dt.kind != "f":
        return b.one("Equal", [n[0], n[0]])  # integers are always finite
    return b.one("Not", [b.one("Or", [b.one("IsNaN", n), b.one("IsInf", n)])])


# (the ONNX forms take bools as they are)
ONNX.add(K.ISNAN, ufunc_rule(_float_test("IsNaN"), bool_as=None))
ONNX.add(K.ISINF, ufunc_rule(_float_test("IsInf"), bool_as=None))
ONNX.add(K.ISFINITE, ufunc_rule(_isfinite, bool_as=None))


# --- signbit ---

INLINE.add(K.SIGNBIT, [by_kind("iu", lambda o, b: f"({o[0]} < 0)")])

ONNX.add(K.SIGNBIT, no_onnx_form("no ONNX operator reads the sign bit (of -0.0 and NaN)"))
