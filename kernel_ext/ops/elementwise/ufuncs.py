"""Every single-output ufunc's generic rules (abstract evaluation by NumPy's
``resolve_dtypes``, reference lowering by the ufunc itself), and the helpers the family's
modules share: the simplifications' element tests and dtype kinds, and the ONNX translation
of a ufunc from its loop dtypes.

The op modules of this package register each op's own rules with these."""

from __future__ import annotations

import functools
import math
import typing
from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir import COMPARISONS, Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL, AbstractValue, Rule, broadcast_shapes
from ...ir.abstract.core import operand_dtype, shape_of
from ...ir.interpreter import LOWER
from ...ir.params import UfuncParams
from ...onnx.builder import GraphBuilder
from ...onnx.builder import Rule as OnnxRule
from ...onnx.refusal import refuse
from ...onnx.rules.common import ANY_VALUE, NARROW, handled_params, out_dtype, refusal_rule

# --- every ufunc (one output; multi_output.py has frexp, modf, divmod) ---


def _ufunc_rule(ufunc: np.ufunc) -> Rule:
    resolved: dict[
        tuple[Any, ...], np.dtype
    ] = {}  # NumPy's answer per operand dtypes (a pure function)

    outs = (None,) * ufunc.nout

    def rule(params: UfuncParams, *args: Any) -> AbstractValue:
        dtypes = tuple([operand_dtype(a) for a in args]) + outs
        key = (dtypes, params.dtype)
        out = resolved.get(key)
        if out is None:
            if params.dtype is not None:  # (a ufunc node is given dtype only when not None)
                sig = (None,) * ufunc.nin + (np.dtype(params.dtype),)
                out = ufunc.resolve_dtypes(dtypes, signature=sig)[-1]
            else:
                out = ufunc.resolve_dtypes(dtypes)[-1]
            if len(resolved) < 4096:
                resolved[key] = out
        return AbstractValue(broadcast_shapes(*[shape_of(a) for a in args]), out)

    return rule


def _ufunc_lowering(node: Node) -> Callable[..., Any]:
    ufunc = node.op.ufunc
    assert ufunc is not None  # registered for UFUNC_OPS only
    dtype = typing.cast("UfuncParams", node.params).dtype
    if dtype is not None:
        return functools.partial(ufunc, dtype=dtype)
    return ufunc


for _kind in OpKind:
    if _kind.ufunc is not None:
        if _kind.ufunc.nout == 1:
            ABSTRACT_EVAL.add(_kind, _ufunc_rule(_kind.ufunc))
        # (multi-output ufuncs return their tuple through the same lowering)
        LOWER.add(_kind, _ufunc_lowering)


# --- simplifications: element tests and dtype kinds ---
# Element tests take an array (a constant's value) or a Python literal; literals are tested
# in plain Python, which is many times cheaper than a round trip through NumPy.


def one(v: Any) -> Any:
    return v == 1


def zero(v: Any) -> Any:
    return v == 0


def negative_zero(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return (v == 0) & np.signbit(v)
    return type(v) is float and v == 0 and math.copysign(1.0, v) < 0


def positive_zero(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return (v == 0) & ~np.signbit(v)
    return (type(v) in (bool, int) and v == 0) or (
        type(v) is float and v == 0 and math.copysign(1.0, v) > 0
    )


def truthy(v: Any) -> Any:
    return v != 0


#: dtype kinds the simplifications name
INTS = "iu"
INTS_BOOL = "biu"
REAL = "biuf"
NUMBERS = "iufc"


# --- ONNX: a ufunc computed in its NumPy loop's dtypes ---


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
    dtype = typing.cast("UfuncParams", node.params).dtype
    outs = (np.dtype(dtype),) * ufunc.nout if dtype is not None else (None,) * ufunc.nout
    try:
        return tuple(np.dtype(d) for d in ufunc.resolve_dtypes(ins + outs))
    except (TypeError, ValueError) as e:
        raise refuse(
            node,
            f"NumPy's loop for these operands is unclear ({e})",
            "cast the operands to one dtype first",
        ) from None


#: Writes a ufunc's ONNX nodes from its operands' names, the loop's dtype and the node.
Emit = Callable[[GraphBuilder, list[str], np.dtype, Node], str]


def ufunc_rule(emit: Emit, bool_as: Any = np.int8) -> OnnxRule:
    """A ufunc rule: operands cast to the loop's input dtype, ``emit`` computes the loop's
    output; on a bool loop without an ONNX bool kernel the operands go through ``bool_as``
    (ints 0/1; ``None``: the ONNX form takes bools as they are), and a bool result is cast
    back."""

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


def onnx_op(op_type: str, **attrs: Any) -> Emit:
    """The ONNX operator ``op_type`` on the operands as they are."""
    return lambda b, names, dt, node: b.one(op_type, names, **attrs)


def float_only(op_type: str, float64: bool = True) -> Emit:
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


def no_onnx_form(why: str) -> OnnxRule:
    """The refusal of an op ONNX has no operator for, saying ``why``."""
    return refusal_rule(
        why, "compute it outside the exported function and pass the result in as an argument"
    )
