"""Selection and conversion: where, cast, clip (elementwise ops that are not one ufunc call).

Each has its NumPy entry point (``np.where``, ``np.astype``, ``np.clip``), its own abstract
evaluation, reference lowering and fused-kernel form (the kernel generator's non-ufunc
lowerings)."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...autodiff.rules import NOTES, VJP, Cotangent, Primal, elementwise
from ...backends.codegen.lowering import NON_UFUNC_LOWERINGS, InlineTemplate, Lowering
from ...ir import Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL, AbstractValue, broadcast_shapes, probe_dtype, result_type
from ...ir.abstract.core import shape_of
from ...ir.interpreter import LOWER
from ...ir.params import DtypeParams, NoParams
from ...onnx.builder import GraphBuilder
from ...onnx.refusal import refuse
from ...onnx.rules.common import ANY_VALUE, handled_params, out_dtype, wide
from ...onnx.rules.common import RULES as ONNX
from ...passes.rewrite import fully_known
from ...passes.simplify import IEEE_FLOATS, LITERAL_TYPES, Proposal
from ...passes.simplify import RULES as SIMPLIFY
from ...trace import Tensor, bind
from ...trace.numpy_api.common import implements
from ...trace.numpy_api.indexing import nonzero

if TYPE_CHECKING:
    from ...backends.codegen.writer import InlineContext

K = OpKind


# --- where ---


@implements(np.where)
def _where(condition: Any, x: Any = np._NoValue, y: Any = np._NoValue, /) -> Any:
    no = np._NoValue
    if x is no and y is no:  # np.where(c) is np.nonzero(c): indices of a data-dependent length
        return nonzero(condition)
    if x is no or y is no:
        raise ValueError("either both or neither of x and y should be given")
    return bind(OpKind.WHERE, (condition, x, y))


@ABSTRACT_EVAL.register(OpKind.WHERE)
def _where_aval(params: NoParams, cond: Any, x: Any, y: Any) -> AbstractValue:
    return AbstractValue(
        broadcast_shapes(shape_of(cond), shape_of(x), shape_of(y)), result_type(x, y)
    )


@LOWER.register(OpKind.WHERE)
def _where_reference(node: Node) -> Callable[..., Any]:
    return np.where


def _simplify_where(node: Node, args: tuple[Any, ...]) -> Proposal:
    """``where(c, x, x) -> x``; ``where(True, x, y) -> x`` and ``where(False, x, y) -> y`` for
    a literal condition, all with static shapes (so broadcasting is known not to widen)."""
    if len(args) != 3:
        return None
    cond, x, y = args
    nodes = [a for a in args if isinstance(a, Node)]
    if not all(fully_known(a.aval) for a in nodes):
        return None
    if x is y and isinstance(x, Node):
        return x
    if isinstance(cond, LITERAL_TYPES):
        pick = x if cond else y
        return pick if isinstance(pick, Node) else None
    return None


SIMPLIFY.add(OpKind.WHERE, [_simplify_where])


@VJP.register(K.WHERE)
def _where_vjp(p: Primal, g: Any) -> list[Cotangent]:
    c, _, _ = p.args
    return elementwise(p, g, None, lambda: np.where(c, g, 0.0), lambda: np.where(c, 0.0, g))


@NON_UFUNC_LOWERINGS.register(OpKind.WHERE)
def _lower_where(node: Node, out: np.dtype) -> Lowering:
    return Lowering(
        [None, out, out], out, inline=lambda o, b: f"({o[1]} if {b.truth(0)} else {o[2]})"
    )


@ONNX.register(K.WHERE)
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


# --- cast ---


@implements(np.astype)
def _astype(x: Any, dtype: Any, /, *, copy: bool = True) -> Any:
    dtype = np.dtype(dtype)
    if not copy and isinstance(x, Tensor) and x.dtype == dtype:
        return x  # NumPy's astype(copy=False) returns the array itself
    return bind(OpKind.CAST, (x,), {"dtype": dtype})


@ABSTRACT_EVAL.register(OpKind.CAST)
def _cast_aval(params: DtypeParams, x: AbstractValue) -> AbstractValue:
    return AbstractValue(x.shape, np.dtype(params.dtype))


@LOWER.register(OpKind.CAST)
def _cast_reference(node: Node) -> Callable[..., Any]:
    dtype = np.dtype(typing.cast("DtypeParams", node.params).dtype)
    return lambda x: np.asarray(x).astype(dtype)


def _exact_widening(src: np.dtype, dst: np.dtype) -> bool:
    """Every ``src`` value is exactly representable in ``dst`` and casting it back to ``src``
    needs no warning (so ``cast(cast("x", dst), src) == x``). Complex ``dst`` is excluded: the
    way back warns (ComplexWarning)."""
    if src == dst:
        return True
    if dst.kind not in "iuf" or src.kind not in "biuf":
        return False
    if dst.kind == "f" and dst not in IEEE_FLOATS:
        return False
    if src.kind == "b":
        return True
    if src.kind == "f":
        return dst.kind == "f" and src in IEEE_FLOATS and dst.itemsize >= src.itemsize
    bits = src.itemsize * 8 - (src.kind == "i")  # magnitude bits
    if dst.kind == "f":
        return bits <= np.finfo(dst).nmant + 1
    if dst.kind == "u":
        return src.kind == "u" and dst.itemsize >= src.itemsize
    return dst.itemsize * 8 - 1 >= bits  # into signed ints


def _simplify_cast(node: Node, args: tuple[Any, ...]) -> Proposal:
    """``cast("x", x.dtype) -> x``; ``cast(cast("x", wider), x.dtype) -> x``."""
    x = args[0]
    if not isinstance(x, Node) or not isinstance(x.aval, AbstractValue):
        return None
    target = np.dtype(typing.cast("DtypeParams", node.params).dtype)
    if target == x.aval.dtype:
        return x
    if x.op is OpKind.CAST:
        inner = x.args[0]
        if (
            isinstance(inner, Node)
            and isinstance(inner.aval, AbstractValue)
            and inner.aval.dtype == target
            and _exact_widening(target, x.aval.dtype)
        ):
            return inner
    return None


SIMPLIFY.add(OpKind.CAST, [_simplify_cast])


@VJP.register(K.CAST)
def _cast_vjp(p: Primal, g: Any) -> list[Cotangent]:
    return [g]  # the backward pass casts it to the operand's dtype (nothing for integers)


NOTES.add(K.CAST, "float to float: cast back; from integers: none")


@NON_UFUNC_LOWERINGS.register(OpKind.CAST)
def _lower_cast(node: Node, out: np.dtype) -> Lowering:
    return Lowering([None], out, inline=lambda o, b: b.cast_arg(0, out))


@ONNX.register(K.CAST)
def cast(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, dtype=ANY_VALUE)
    x = node.args[0]
    return [b.one("Identity", [b.operand(x, out_dtype(node))])]


# --- clip ---


@implements(np.clip)
def _clip(
    a: Any,
    a_min: Any = np._NoValue,
    a_max: Any = np._NoValue,
    *,
    min: Any = np._NoValue,
    max: Any = np._NoValue,
) -> Any:
    """NumPy's argument rules of ``np.clip`` (its ufunc keywords ``dtype=``, ``where=``,
    ... run NumPy's own call: signatures.py)."""
    no = np._NoValue
    if a_min is no and a_max is no:
        a_min = None if min is no else min
        a_max = None if max is no else max
    elif a_min is no:
        raise TypeError("clip() missing 1 required positional argument: 'a_min'")
    elif a_max is no:
        raise TypeError("clip() missing 1 required positional argument: 'a_max'")
    elif min is not no or max is not no:
        raise ValueError(
            "Passing `min` or `max` keyword argument when `a_min` and `a_max` "
            "are provided is forbidden."
        )
    return bind(OpKind.CLIP, (a, a_min, a_max))


@ABSTRACT_EVAL.register(OpKind.CLIP)
def _clip_aval(params: NoParams, x: Any, lo: Any, hi: Any) -> AbstractValue:
    shape = broadcast_shapes(*[shape_of(a) for a in (x, lo, hi) if a is not None])
    return AbstractValue(shape, probe_dtype(np.clip, x, lo, hi))


@LOWER.register(OpKind.CLIP)
def _clip_reference(node: Node) -> Callable[..., Any]:
    return np.clip


@VJP.register(K.CLIP)
def _clip_vjp(p: Primal, g: Any) -> list[Cotangent]:
    x, lo, hi = p.args
    m = x if lo is None else np.maximum(x, lo)
    keep = True if hi is None else (m <= hi)
    to_x = keep if lo is None else (x >= lo) & keep
    return elementwise(
        p,
        g,
        lambda: np.where(to_x, g, 0.0),
        lambda: np.where((x < lo) & keep, g, 0.0),
        lambda: np.where(m > hi, g, 0.0),
    )


NOTES.add(K.CLIP, "as minimum(maximum(x, lo), hi): at a bound the gradient goes to x")


@NON_UFUNC_LOWERINGS.register(OpKind.CLIP)
def _lower_clip(node: Node, out: np.dtype) -> Lowering:
    ignored = _clip_ignored(node)
    args = [None if k in ignored else a for k, a in enumerate(node.args)]
    dts = [out if a is not None else None for a in args]
    return Lowering(dts, out, inline=_clip_inline(args, out), ignored=ignored)


def _clip_ignored(node: Node) -> tuple[int, ...]:
    """The bounds ``np.clip`` drops before it computes anything: on an integer array, a
    Python int bound at or beyond the dtype's range (NumPy's ``_methods._clip``; it then calls
    ``maximum``, ``minimum`` or ``positive`` instead, which matters when the other bound
    makes the result a float: ``clip(int64, inf, 2**64 - 1)`` is ``inf``)."""
    x = node.args[0]
    dt: np.dtype = np.dtype(x.dtype) if isinstance(x, Node) else np.asarray(x).dtype
    if dt.kind not in "iu":
        return ()
    info = np.iinfo(dt)
    lo, hi = node.args[1], node.args[2]
    return tuple(
        k
        for k, drop in (
            (1, type(lo) is int and lo <= info.min),
            (2, type(hi) is int and hi >= info.max),
        )
        if drop
    )


def _clip_inline(args: list[Any], out: np.dtype) -> InlineTemplate:
    """NumPy's ``clip``, which is three different functions on floats (they differ on ties of
    ``-0.0`` with ``0.0`` and on which of two NaNs comes back):

    * one bound missing: ``np.clip`` calls ``maximum(x, lo)`` or ``minimum(x, hi)``;
    * both bounds scalars (literals or 0-d values): the clip loop's stride-0 branch, where a
      NaN bound wins, then ``lo if x < lo else x``, then ``hi if t > hi else t`` (so
      ``clip(-0.0, 0, 3)`` is ``-0.0``);
    * array bounds: ``minimum(maximum(x, lo), hi)`` with NumPy's NaN-propagating
      ``maximum``/``minimum`` — unless NumPy's iterator hands the loop both bounds with
      stride 0 after all (a ``(1,)`` bound), which no trace-time fact decides. So the kernel
      computes the array form and raises ``bad`` (NumPy reruns the segment) where the two
      forms could differ: a zero meeting a zero bound, a NaN ``x`` meeting a NaN bound.

    Integers and bools have neither signed zeros nor NaNs: every form is the same there."""
    float_ = out.kind == "f"
    lo_arg, hi_arg = args[1], args[2]
    both = lo_arg is not None and hi_arg is not None

    def scalar(a: Any) -> bool:
        return not isinstance(a, Node) or a.shape == ()

    stride0 = both and scalar(lo_arg) and scalar(hi_arg)

    def inline(o: list[str], b: InlineContext) -> str:
        x, lo, hi = o
        if float_ and stride0:
            t = b.let(f"({lo} if {x} < {lo} else {x})", out)
            return f"({lo} if {lo} != {lo} else ({hi} if ({hi} != {hi}) | ({t} > {hi}) else {t}))"
        expr = x
        for k, cmp in ((1, ">"), (2, "<")):
            if args[k] is None:
                continue
            t = b.let(expr, out)
            pick = f"({t} if {t} {cmp} {o[k]} else {o[k]})"
            expr = f"({t} if {t} != {t} else {pick})" if float_ else pick
            if float_ and both and k == 2:
                # where the stride-0 form could answer otherwise, NumPy decides
                b.flag(
                    f"((({x} == 0) & ({lo} == 0)) | (({t} == 0) & ({hi} == 0)) | "
                    f"(({x} != {x}) & (({lo} != {lo}) | ({hi} != {hi}))))"
                )
        return expr

    return inline


@ONNX.register(K.CLIP)
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
