"""nonzero, argwhere, compress, trim_zeros: the ops whose result length only the data decides
(their abstract values have a ``None`` dim).

Gradients: ``nonzero`` and ``argwhere`` have integer results (``autodiff.rules.ZERO_GRADIENT``);
``trim_zeros``'s ONNX refusal is in ``onnx/rules/refusals.py``, and the whole-graph compiler's
reasons for ``compress`` and ``trim_zeros`` are its ``FALLBACK_REASONS``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal, cast

import numpy as np

from ...autodiff.array_rules import static_shape
from ...autodiff.decompositions import composed
from ...autodiff.rules import NOTES, VJP, Cotangent, Primal
from ...backends.emit.literals import Unsupported
from ...backends.emit.source import Source
from ...backends.static_shapes import ranked_shape
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...backends.whole_graph_ops.common import (
    Rule,
    Writer,
    array_arg,
    emit_nonzero,
    only_params,
    shape_tuple,
)
from ...ir import Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL, AbstractValue, normalize_axes, normalize_axis
from ...ir.abstract.core import INTP, known_rank
from ...ir.interpreter import LOWER
from ...ir.params import AxisParams, NoParams, TrimZerosParams
from ...onnx.builder import GraphBuilder
from ...onnx.refusal import refuse
from ...onnx.rules.common import ANY_VALUE, handled_params
from ...onnx.rules.common import RULES as ONNX
from ...trace import bind, numpy_call
from ...trace.numpy_api.common import axis_attr, implements

K = OpKind

# --- nonzero, argwhere ---
# (``np.nonzero``'s entry point stays in ``trace/numpy_api/indexing.py``: ``np.flatnonzero``
# and ``np.where(condition)`` are compositions that call it)


@implements(np.argwhere)
def _argwhere(a: Any) -> Any:
    return bind(OpKind.ARGWHERE, (a,))


@ABSTRACT_EVAL.register(K.NONZERO)
def _abstract_nonzero(params: NoParams, x: AbstractValue) -> tuple[AbstractValue, ...]:
    shape = known_rank(x, "nonzero")
    if not shape:
        raise ValueError(
            "Calling nonzero on 0d arrays is not allowed. Use "
            "np.atleast_1d(scalar).nonzero() instead."
        )
    return tuple(AbstractValue((None,), INTP) for _ in shape)


@ABSTRACT_EVAL.register(K.ARGWHERE)
def _abstract_argwhere(params: NoParams, x: AbstractValue) -> AbstractValue:
    return AbstractValue((None, len(known_rank(x, "argwhere"))), INTP)


@LOWER.register(K.NONZERO)
def _lower_nonzero(node: Node) -> Callable[..., Any]:
    return np.nonzero


@LOWER.register(K.ARGWHERE)
def _lower_argwhere(node: Node) -> Callable[..., Any]:
    return np.argwhere


def _check_nonzero(node: Node) -> int:
    only_params(node, set())
    x = array_arg(node, 0, "an array")
    rank = len(ranked_shape(x))
    if rank == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    return rank


def _emit_nonzero_op(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """``np.nonzero``: the flat positions of the true (non-zero: NaN included, ``-0.0`` not)
    elements in C order, unravelled per axis; ``np.argwhere``: the same, one row each."""
    rank = _check_nonzero(node)
    m = w.fresh("m")
    out.line(f"{m} = np.ascontiguousarray({args[0].name})")
    axes = emit_nonzero(w, m, rank, out)
    if node.op is OpKind.NONZERO:
        out.line(f"{t} = {shape_tuple(axes)}")
        return "fresh"
    out.line(f"{t} = np.empty(({axes[0]}.shape[0], {rank}), np.int64)")
    for q, a in enumerate(axes):
        out.line(f"{t}[:, {q}] = {a}")
    return "fresh"


WHOLE_GRAPH.add(K.NONZERO, Rule(lambda n: _check_nonzero(n) and None, _emit_nonzero_op))
WHOLE_GRAPH.add(K.ARGWHERE, Rule(lambda n: _check_nonzero(n) and None, _emit_nonzero_op))


@ONNX.register(K.NONZERO)
def nonzero(b: GraphBuilder, node: Node) -> list[str]:
    """np.nonzero: ONNX's NonZero lists the indices in NumPy's (row-major) order."""
    x = node.args[0]
    if x.aval.ndim == 0:
        raise refuse(node, "np.nonzero of a 0-d value", "np.nonzero(np.atleast_1d(x))")
    found = b.one("NonZero", [b.to_bool(b.value(x), x.dtype)])
    return [b.one("Gather", [found, b.const(i, np.int64)], axis=0) for i in range(x.aval.ndim)]


@ONNX.register(K.ARGWHERE)
def argwhere(b: GraphBuilder, node: Node) -> list[str]:
    x = node.args[0]
    if x.aval.ndim == 0:
        raise refuse(node, "np.argwhere of a 0-d value", "np.argwhere(np.atleast_1d(x))")
    return [b.one("Transpose", [b.one("NonZero", [b.to_bool(b.value(x), x.dtype)])], perm=[1, 0])]


# --- compress ---


@implements(np.compress)
def _compress(condition: Any, a: Any, axis: Any = None) -> Any:
    return bind(OpKind.COMPRESS, (condition, a), {"axis": None if axis is None else int(axis)})


@ABSTRACT_EVAL.register(K.COMPRESS)
def _abstract_compress(
    params: AxisParams, condition: AbstractValue, a: AbstractValue
) -> AbstractValue:
    if condition.ndim not in (None, 1):
        raise ValueError("condition must be a 1-d array")
    axis = params.axis
    if axis is None:
        return AbstractValue((None,), a.dtype)
    shape = known_rank(a, "compress")
    axis = normalize_axis(axis, len(shape))
    return AbstractValue(shape[:axis] + (None,) + shape[axis + 1 :], a.dtype)


@LOWER.register(K.COMPRESS)
def _lower_compress(node: Node) -> Callable[..., Any]:
    params = cast("AxisParams", node.params)
    axis = params.axis
    return lambda condition, a: np.compress(condition, a, axis)


@VJP.register(K.COMPRESS)
def _vjp_compress(p: Primal, g: Any) -> list[Cotangent]:
    """``a`` at the true positions of ``condition`` (shorter conditions padded with false)."""
    params = cast("AxisParams", p.params)
    axis = params.axis

    def fn(condition: Any, a: Any) -> Any:
        flat = a if axis is not None else np.ravel(a)
        ax = 0 if axis is None else axis % len(flat.shape)
        n = static_shape(flat, "np.compress")[ax]
        (c,) = static_shape(condition, "np.compress")
        mask = condition if c == n else np.concatenate([condition, np.zeros(n - c, bool)])
        return flat[(slice(None),) * ax + (mask != 0,)]

    return composed(p, g, fn)


NOTES.add(K.COMPRESS, "composition: a boolean mask")


@ONNX.register(K.COMPRESS)
def compress(b: GraphBuilder, node: Node) -> list[str]:
    """np.compress: ONNX's Compress (a condition shorter than the axis selects from its
    start in both)."""
    params = cast("AxisParams", node.params)
    handled_params(node, axis=ANY_VALUE)
    condition, a = node.args
    cond = b.one("Reshape", [b.operand(condition, np.bool_), b.ints([-1])])
    axis = params.axis
    if axis is None:
        return [b.one("Compress", [b.value(a), cond])]
    return [b.one("Compress", [b.value(a), cond], axis=int(axis) % a.aval.ndim)]


# --- trim_zeros ---


@implements(np.trim_zeros)
def _trim_zeros(filt: Any, trim: Literal["f", "b", "fb", "bf"] = "fb", axis: Any = None) -> Any:
    if filt.shape is None:
        return numpy_call(np.trim_zeros, (filt,), {"trim": trim, "axis": axis})
    np.trim_zeros(np.zeros((1,) * filt.ndim, filt.dtype), trim, axis)  # NumPy's checks
    if filt.shape == ():
        return filt  # (nothing to trim: NumPy hands the input back, in its own form)
    return bind(OpKind.TRIM_ZEROS, (filt,), {"trim": trim, "axis": axis_attr(axis)})


@ABSTRACT_EVAL.register(K.TRIM_ZEROS)
def _abstract_trim_zeros(params: TrimZerosParams, x: AbstractValue) -> AbstractValue:
    shape = known_rank(x, "trim_zeros")
    axes = normalize_axes(params.axis, len(shape))
    return AbstractValue(tuple(None if i in axes else d for i, d in enumerate(shape)), x.dtype)


@LOWER.register(K.TRIM_ZEROS)
def _lower_trim_zeros(node: Node) -> Callable[..., Any]:
    return functools.partial(np.trim_zeros, **node.params.kwargs())


@VJP.register(K.TRIM_ZEROS)
def _vjp_trim_zeros(p: Primal, g: Any) -> list[Cotangent]:
    """A 1-D ``filt`` without its leading and/or trailing zeros: a boolean mask of the
    positions kept (after the first non-zero, before the last)."""
    params = cast("TrimZerosParams", p.params)
    trim = params.trim.lower()
    if len(static_shape(p.args[0], "np.trim_zeros")) != 1:
        raise NotImplementedError("the gradient of np.trim_zeros is implemented for 1-D arrays")

    def fn(a: Any) -> Any:
        nonzero = (a != 0).astype(np.int64)
        keep = np.ones(a.shape, bool)
        if "f" in trim:
            keep = keep & (np.cumsum(nonzero) > 0)
        if "b" in trim:
            keep = keep & (np.flip(np.cumsum(np.flip(nonzero))) > 0)
        return a[keep]

    return composed(p, g, fn)


NOTES.add(K.TRIM_ZEROS, "1-D; composition: a boolean mask")
