"""The nan family of reductions: nansum, nanprod, nanmean, nanstd, nanvar, nanmax, nanmin,
nanargmax, nanargmin.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`); the lowering is the
group's (:mod:`.generic`, NumPy's nan function), and so is the abstract evaluation but for the
nan extrema, with NumPy's warnings silenced. The nan scans are in :mod:`.scans`, the nan order
statistics in :mod:`.order_statistics`; the ONNX refusals of the ops with no form are
``onnx.rules.refusals``'."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ...autodiff.rules import NOTES, VJP, Cotangent, Primal
from ...backends.emit.literals import ctor
from ...backends.emit.source import Source
from ...backends.static_shapes import ranked_shape
from ...backends.whole_graph_ops.common import LOOP3, Rule, Writer, loop_scratch, ufunc_loop
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...ir import Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL, AbstractValue, normalize_axes
from ...ir.abstract import Rule as AbstractRule
from ...ir.params import MomentParams, ReduceParams
from ...onnx.builder import GraphBuilder, elem_type
from ...onnx.rules.common import ANY_VALUE, handled_params, out_dtype
from ...onnx.rules.common import RULES as ONNX
from ...trace.numpy_api.common import implements
from .common import (
    axes_input,
    expand_to,
    first_occurrence,
    nan_hole,
    no_identity_check,
    quietly,
    reduction,
    reduction_parts,
    reduction_rule,
)
from .entry_points import nan_reduction_handler
from .generic import NAN_EXTREMA  # (and the generic rules refined here: registered first)
from .moments import SUM_AXIS, check_moments, finish, moment_input
from .sums import sum_

K = OpKind

# --- nansum, nanprod, nanmean, nanstd, nanvar ---

implements(np.nansum)(nan_reduction_handler(K.NANSUM, dtype=True, initial=True))
implements(np.nanprod)(nan_reduction_handler(K.NANPROD, dtype=True, initial=True))
implements(np.nanmean)(nan_reduction_handler(K.NANMEAN, dtype=True))
implements(np.nanstd)(nan_reduction_handler(K.NANSTD, dtype=True, ddof=True))
implements(np.nanvar)(nan_reduction_handler(K.NANVAR, dtype=True, ddof=True))


# The generic rule (registered by :mod:`.generic`), quietly.
for _kind in (K.NANSUM, K.NANPROD, K.NANMEAN, K.NANSTD, K.NANVAR):
    ABSTRACT_EVAL.replace(_kind, quietly(ABSTRACT_EVAL[_kind]))


def _non_nan_count(x: Any, axis: Any) -> Any:
    return np.sum(~np.isnan(x), axis=normalize_axes(axis, len(x.shape)), keepdims=True)


@VJP.register(K.NANSUM)
def _nansum(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = reduction_parts(p)
    return [lambda: nan_hole(x, expand_to(g, x, axis, keepdims))]


@VJP.register(K.NANMEAN)
def _nanmean(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = reduction_parts(p)
    return [lambda: nan_hole(x, expand_to(g, x, axis, keepdims) / _non_nan_count(x, axis))]


@VJP.register(K.NANPROD)
def _nanprod(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = reduction_parts(p)
    return [
        lambda: nan_hole(
            x, expand_to(g, x, axis, keepdims) * expand_to(p.out, x, axis, keepdims) / x
        )
    ]


@VJP.register(K.NANVAR, K.NANSTD)
def _nanvar(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = reduction_parts(p)
    ddof = cast("MomentParams", p.params).ddof

    def dx() -> Any:
        centred = x - np.nanmean(x, axis=axis, keepdims=True)
        gx = expand_to(g, x, axis, keepdims)
        if p.node.op is K.NANSTD:
            gx = gx / (2.0 * expand_to(p.out, x, axis, keepdims))
        return nan_hole(x, gx * (2.0 / (_non_nan_count(x, axis) - ddof)) * centred)

    return [dx]


NOTES.add(K.NANPROD, "divides by x: not finite where x has zeros")


def _emit_nanmean(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """``np.nanmean`` as NumPy computes it: a copy with NaNs replaced by +0.0, its sum
    divided (in float64, then cast) by the count of the others; a lane of NaNs only
    (NumPy's "Mean of empty slice" warning) or an empty input signals."""
    x_node, dt, axis = check_moments(node)
    rank = len(ranked_shape(x_node))
    dts = ctor(dt)
    x3, outer, n, inner = moment_input(w, args[0].name, rank, axis, out)
    w.signal(out, f"{n} == 0")
    w.helpers["_loop3"] = LOOP3
    w.helpers["_sum_axis"] = SUM_AXIS
    arr, cnt, acc = w.fresh("arr"), w.fresh("cnt"), w.fresh("acc")
    out.line(f"{arr} = np.where(np.isnan({x3}), {dts}(0), {x3})")
    out.line(f"{cnt} = np.sum(~np.isnan({x3}), axis=1)")
    w.signal(out, f"np.any({cnt} == 0)")
    out.line(f"{acc} = np.zeros(({outer}, {inner}), {dts})")
    out.line(f"_sum_axis({arr}, {acc}, {ufunc_loop(w, np.add, (dt,) * 3)}, {loop_scratch(w)})")
    out.line(f"{acc} = ({acc}.astype(np.float64) / {cnt}.astype(np.float64)).astype({dts})")
    return finish(w, node, acc, rank, axis, args[0].name, t, out)


WHOLE_GRAPH.add(K.NANMEAN, Rule(lambda n: check_moments(n) and None, _emit_nanmean))


@ONNX.register(K.NANSUM)
def nansum(b: GraphBuilder, node: Node) -> list[str]:
    if out_dtype(node).kind != "f":
        return sum_(b, node)  # (no NaN in integers: NumPy's nansum is the sum)
    return reduction("ReduceSum", nan_fill=0.0)(b, node)


@ONNX.register(K.NANMEAN)
def nanmean(b: GraphBuilder, node: Node) -> list[str]:
    """The sum of the numbers over their count (0/0: NaN for a slice of NaNs, as NumPy)."""
    handled_params(node, axis=ANY_VALUE, keepdims=ANY_VALUE, dtype=ANY_VALUE)
    x, out = node.args[0], out_dtype(node)
    name = b.operand(x, out)
    axes = axes_input(b, node, x)
    keep = int(bool(cast("ReduceParams", node.params).keepdims))
    nan = b.one("IsNaN", [name])
    total = b.one(
        "ReduceSum", [b.one("Where", [nan, b.const(0.0, out), name]), *axes], keepdims=keep
    )
    count = b.one(
        "ReduceSum", [b.one("Cast", [b.one("Not", [nan])], to=elem_type(out)), *axes], keepdims=keep
    )
    return [b.one("Div", [total, count])]


# --- nanmax, nanmin, nanargmax, nanargmin ---

implements(np.nanmax)(nan_reduction_handler(K.NANMAX, initial=True))
implements(np.nanmin)(nan_reduction_handler(K.NANMIN, initial=True))
implements(np.nanargmax)(nan_reduction_handler(K.NANARGMAX))
implements(np.nanargmin)(nan_reduction_handler(K.NANARGMIN))


def _nan_extremum_rule(kind: OpKind) -> AbstractRule:
    """nanmax/nanmin/nanargmax/nanargmin: the generic reduction rule, after NumPy's checks
    (one integer axis for the arg-reductions; no identity for an empty axis)."""
    generic = reduction_rule(kind)

    def rule(params: ReduceParams, x: AbstractValue) -> AbstractValue:
        axis = params.axis
        if kind in (OpKind.NANARGMAX, OpKind.NANARGMIN) and isinstance(axis, tuple):
            raise TypeError(f"np.{kind.value} takes one integer axis or None, not {axis!r}")
        if x.shape is not None and any(x.shape[a] == 0 for a in normalize_axes(axis, len(x.shape))):
            if kind in (OpKind.NANARGMAX, OpKind.NANARGMIN):
                raise ValueError(f"attempt to get {kind.value[3:]} of an empty sequence")
            no_identity_check("f" + kind.value[3:], x, axis)  # NumPy reduces with fmax/fmin
        return generic(params, x)

    return rule


for _kind in NAN_EXTREMA:
    ABSTRACT_EVAL.add(_kind, quietly(_nan_extremum_rule(_kind)))


@VJP.register(K.NANMAX, K.NANMIN)
def _nanmax(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = reduction_parts(p)

    def dx() -> Any:
        hit = x == expand_to(p.out, x, axis, keepdims)  # NaN never equals: skipped
        return np.where(first_occurrence(hit, axis), expand_to(g, x, axis, keepdims), 0.0)

    return [dx]


NOTES.add(K.NANMAX, "ties: the first occurrence; NaNs get none")
NOTES.add(K.NANMIN, "ties: the first occurrence; NaNs get none")

ONNX.add(K.NANMAX, reduction("ReduceMax", nan_fill=-np.inf))
ONNX.add(K.NANMIN, reduction("ReduceMin", nan_fill=np.inf))
