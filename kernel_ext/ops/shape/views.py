"""Views and layout: reshape, transpose, expand_dims, squeeze, broadcast_to, flip, copy, real
and imag.

Each op's NumPy entry points, abstract evaluation, reference lowering, simplifications, VJP,
whole-graph rule and ONNX rule, in that order (see :mod:`kernel_ext.ops`). ``real``/``imag``
have no gradient and no ONNX form: their reasons stay beside those tables
(``autodiff.backward``, ``onnx.rules.refusals``); their entry points stay in
``trace.numpy_api.elementwise``, whose compositions (``np.angle``, ``np.isreal``) call them.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any, cast

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ...autodiff.rules import NOTES, Cotangent, Primal, reshape_like, unbroadcast
from ...autodiff.rules import VJP as GRADIENT
from ...backends.emit.literals import Unsupported
from ...backends.emit.source import Source
from ...backends.static_shapes import ranked_shape
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...backends.whole_graph_ops.common import Rule, Writer, array_arg, checked_axis, only_params
from ...ir import AbstractValue, Node, OpKind
from ...ir.abstract import (
    ABSTRACT_EVAL,
    broadcast_shapes,
    format_shape,
    normalize_axes,
    normalize_axis,
    reshape_shape,
)
from ...ir.interpreter import LOWER
from ...ir.params import AxesParams, AxisParams, CopyParams, NoParams, ShapeParams
from ...onnx.builder import GraphBuilder
from ...onnx.refusal import refuse
from ...onnx.rules.common import ANY_VALUE, INT64_MIN, handled_params, rank, sorted_axes
from ...onnx.rules.common import RULES as ONNX
from ...passes.rewrite import Rewrite, fully_known
from ...passes.simplify import RULES as SIMPLIFY
from ...passes.simplify import Proposal
from ...trace.context import bind
from ...trace.numpy_api.common import axis_attr, implements, ndim_of
from ...trace.zero_d import mark_array

K = OpKind


def _view_kind(node: Node) -> str:
    """What a view op's result is: a 0-d result is a Numba scalar, the rest views."""
    return "scalar" if node.shape == () else "view"


def _no_check(node: Node) -> None:
    """Numba's method takes every operand NumPy's does here (shapes checked at tracing)."""


def _shape_arg(shape: Any) -> tuple[int, ...]:
    """A NumPy shape argument (one size or a sequence of them) as a tuple of ints."""
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


# --- reshape, squeeze ---


@implements(np.reshape)
def _numpy_reshape(a: Any, shape: Any) -> Any:
    # (order= other than 'C' and copy= run NumPy's own call: signatures.py)
    return bind(OpKind.RESHAPE, (a,), {"shape": _shape_arg(shape)})


@implements(np.squeeze)
def _numpy_squeeze(a: Any, axis: Any = None) -> Any:
    return bind(OpKind.SQUEEZE, (a,), {"axis": axis_attr(axis)})


@ABSTRACT_EVAL.register(K.RESHAPE)
def _reshape(params: ShapeParams, x: AbstractValue) -> AbstractValue:
    return AbstractValue(reshape_shape(x.shape, params.shape), x.dtype)


@ABSTRACT_EVAL.register(K.SQUEEZE)
def _squeeze(params: AxisParams, x: AbstractValue) -> AbstractValue:
    if x.shape is None:
        return x
    axis = params.axis
    if axis is None:
        return AbstractValue(tuple(d for d in x.shape if d != 1), x.dtype)
    axes = normalize_axes(axis, len(x.shape))
    for a in axes:
        if x.shape[a] not in (1, None):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return AbstractValue(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)


@LOWER.register(K.RESHAPE)
def _lower_reshape(node: Node) -> Callable[..., Any]:
    shape = cast("ShapeParams", node.params).shape
    return lambda x: np.reshape(x, shape)


@LOWER.register(K.SQUEEZE)
def _lower_squeeze(node: Node) -> Callable[..., Any]:
    return functools.partial(np.squeeze, axis=cast("AxisParams", node.params).axis)


def _simplify_reshape(node: Node, args: tuple[Any, ...]) -> Proposal:
    """Reshape to the same static shape -> ``x``; reshape of a reshape -> one reshape."""
    x = args[0]
    if not isinstance(x, Node) or not fully_known(x.aval):
        return None
    if x.shape == node.shape:
        return x
    if x.op is OpKind.RESHAPE and isinstance(x.args[0], Node) and fully_known(x.args[0].aval):
        return Rewrite(OpKind.RESHAPE, (x.args[0],), dict(node.params))
    return None


SIMPLIFY.add(K.RESHAPE, [_simplify_reshape])


@GRADIENT.register(K.RESHAPE, K.SQUEEZE)
def _reshape_vjp(p: Primal, g: Any) -> list[Cotangent]:
    return [lambda: reshape_like(g, p.args[0])]


def _emit_reshape(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    shape = tuple(cast("ShapeParams", node.params).shape)
    x = args[0].name
    if shape == ():
        out.line(f"{t} = np.ascontiguousarray({x}).ravel()[0]")
        return "scalar"
    out.line(f"{t} = np.ascontiguousarray({x}).reshape({shape!r})")
    return "unit_view"  # a reshape of a contiguous array: its rows are unit-stride


WHOLE_GRAPH.add(K.RESHAPE, Rule(_no_check, _emit_reshape))


def _check_squeeze(node: Node) -> list[int]:
    """The axes ``squeeze`` removes: the given ones, or (``axis=None``) those of static
    size 1; an axis of unknown size the graph keeps must not be 1 at run time (checked)."""
    only_params(node, {"axis"})
    x = array_arg(node, 0, "an array")
    shape = ranked_shape(x)
    axis = cast("AxisParams", node.params).axis
    if axis is None:
        return [d for d, n in enumerate(shape) if n == 1]
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    norm = sorted({checked_axis(a, len(shape), "squeeze") for a in axes})
    if len(norm) != len(axes):
        raise Unsupported("squeeze with a repeated axis")
    return norm


def _emit_squeeze(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """A view with index 0 at each squeezed axis. NumPy's ValueError (a given axis not of
    size 1), or an unknown size the graph keeps that is 1 (NumPy would drop it), signal."""
    axes = _check_squeeze(node)
    every_unit_axis = cast("AxisParams", node.params).axis is None
    shape = node.args[0].aval.shape
    x = args[0].name
    for d, n in enumerate(shape):
        if d in axes and n != 1:
            w.signal(out, f"{x}.shape[{d}] != 1")
        elif every_unit_axis and n is None:
            w.signal(out, f"{x}.shape[{d}] == 1")
    if len(axes) == len(shape):
        out.line(f"{t} = {x}[{', '.join('0' for _ in shape)}]")
        return "scalar"
    index = ", ".join("0" if d in axes else ":" for d in range(len(shape)))
    out.line(f"{t} = {x}[{index}]")
    return "view"


WHOLE_GRAPH.add(K.SQUEEZE, Rule(lambda n: _check_squeeze(n) and None, _emit_squeeze))


@ONNX.register(K.RESHAPE)
def reshape(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, shape=ANY_VALUE, order="C", copy=ANY_VALUE)
    shape = cast("ShapeParams", node.params).shape
    if any(d is None for d in shape):
        raise refuse(node, "its target shape is not static", "reshape to a static shape")
    return [
        b.one(
            "Reshape", [b.value(node.args[0]), b.ints(shape)], allowzero=0 if 0 not in shape else 1
        )
    ]


@ONNX.register(K.SQUEEZE)
def squeeze(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, axis=ANY_VALUE)
    x = node.args[0]
    axis = cast("AxisParams", node.params).axis
    axes = [] if axis is None else [b.ints(sorted_axes(axis, rank(x)))]
    return [b.one("Squeeze", [b.value(x), *axes])]


# --- transpose ---


@implements(np.transpose)
def _numpy_transpose(a: Any, axes: Any = None) -> Any:
    if axes is not None:
        axes = tuple(int(i) for i in axes) if np.ndim(axes) else (operator.index(axes),)
    return bind(OpKind.TRANSPOSE, (a,), {"axes": axes})


@implements(np.swapaxes)
def _numpy_swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    n = ndim_of(a)
    axes = list(range(n))
    i = normalize_axis_index(axis1, n, "axis1")
    j = normalize_axis_index(axis2, n, "axis2")
    axes[i], axes[j] = axes[j], axes[i]
    return _numpy_transpose(a, axes)


@implements(np.moveaxis)
def _numpy_moveaxis(a: Any, source: Any, destination: Any) -> Any:
    n = ndim_of(a)
    src = list(normalize_axis_tuple(source, n, "source"))
    dst = list(normalize_axis_tuple(destination, n, "destination"))
    if len(src) != len(dst):
        raise ValueError(
            "`source` and `destination` arguments must have the same number of elements"
        )
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _numpy_transpose(a, order)


@ABSTRACT_EVAL.register(K.TRANSPOSE)
def _transpose(params: AxesParams, x: AbstractValue) -> AbstractValue:
    if x.shape is None:
        return x
    axes = params.axes
    if axes is None:
        return AbstractValue(x.shape[::-1], x.dtype)
    axes = tuple(normalize_axis(a, len(x.shape)) for a in axes)
    if sorted(axes) != list(range(len(x.shape))):
        raise ValueError("axes don't match array")
    return AbstractValue(tuple(x.shape[a] for a in axes), x.dtype)


@LOWER.register(K.TRANSPOSE)
def _lower_transpose(node: Node) -> Callable[..., Any]:
    return functools.partial(np.transpose, axes=cast("AxesParams", node.params).axes)


def _axes(axes: Any, ndim: int) -> tuple[int, ...] | None:
    if axes is None:
        return tuple(range(ndim))[::-1]
    try:
        out = tuple(int(a) % ndim for a in axes) if ndim else tuple(axes)
    except (TypeError, ZeroDivisionError):
        return None
    return out if sorted(out) == list(range(ndim)) else None


def _simplify_transpose(node: Node, args: tuple[Any, ...]) -> Proposal:
    """``transpose`` by the identity permutation -> ``x``; two transposes -> one (or none)."""
    x = args[0]
    if not isinstance(x, Node) or not isinstance(x.aval, AbstractValue) or x.aval.ndim is None:
        return None
    ndim = x.aval.ndim
    outer = _axes(cast("AxesParams", node.params).axes, ndim)
    if outer is None:
        return None
    if outer == tuple(range(ndim)):
        return x
    if x.op is OpKind.TRANSPOSE:
        inner_x = x.args[0]
        inner = _axes(cast("AxesParams", x.params).axes, ndim)
        if inner is None:
            return None
        composed = tuple(inner[a] for a in outer)
        if composed == tuple(range(ndim)):
            return cast("Node", inner_x)
        return Rewrite(OpKind.TRANSPOSE, (inner_x,), {"axes": composed})
    return None


SIMPLIFY.add(K.TRANSPOSE, [_simplify_transpose])


@GRADIENT.register(K.TRANSPOSE)
def _transpose_vjp(p: Primal, g: Any) -> list[Cotangent]:
    axes = cast("AxesParams", p.params).axes
    if axes is None:
        return [lambda: np.transpose(g)]
    return [lambda: np.transpose(g, np.argsort(axes).tolist())]


def _emit_transpose(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    axes = cast("AxesParams", node.params).axes
    axes = tuple(range(len(node.args[0].aval.shape)))[::-1] if axes is None else tuple(axes)
    out.line(f"{t} = np.transpose({args[0].name}, {axes!r})")
    return _view_kind(node)


WHOLE_GRAPH.add(K.TRANSPOSE, Rule(_no_check, _emit_transpose))


@ONNX.register(K.TRANSPOSE)
def transpose(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, axes=ANY_VALUE)
    ndim = node.args[0].aval.ndim
    axes = cast("AxesParams", node.params).axes
    perm = list(range(ndim))[::-1] if axes is None else [int(a) % ndim for a in axes]
    return [b.one("Transpose", [b.value(node.args[0])], perm=perm)]


# --- expand_dims ---


@implements(np.expand_dims)
def _numpy_expand_dims(a: Any, axis: Any) -> Any:
    return bind(OpKind.EXPAND_DIMS, (a,), {"axis": axis_attr(axis)})


@ABSTRACT_EVAL.register(K.EXPAND_DIMS)
def _expand_dims(params: AxisParams, x: AbstractValue) -> AbstractValue:
    if x.shape is None:
        return x
    axis = params.axis
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = len(x.shape) + len(axes)
    axes = normalize_axes(axes, ndim)
    rest = iter(x.shape)
    return AbstractValue(tuple(1 if i in axes else next(rest) for i in range(ndim)), x.dtype)


@LOWER.register(K.EXPAND_DIMS)
def _lower_expand_dims(node: Node) -> Callable[..., Any]:
    return functools.partial(np.expand_dims, axis=cast("AxisParams", node.params).axis)


@GRADIENT.register(K.EXPAND_DIMS)
def _expand_dims_vjp(p: Primal, g: Any) -> list[Cotangent]:
    return [lambda: np.squeeze(g, axis=cast("AxisParams", p.params).axis)]


def _expand_axes(node: Node) -> list[int]:
    x = array_arg(node, 0, "a value")
    axis = cast("AxisParams", node.params).axis
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out_rank = len(ranked_shape(x)) + len(axes)
    if len(ranked_shape(x)) == 0:
        raise Unsupported("expand_dims of a 0-d value")
    norm = sorted(checked_axis(a, out_rank, "expand_dims") for a in axes)
    if len(set(norm)) != len(norm):
        raise Unsupported("expand_dims with a repeated axis")
    return norm


def _emit_expand_dims(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    axes = _expand_axes(node)
    rank = len(node.args[0].aval.shape) + len(axes)
    index = ", ".join("None" if a in axes else ":" for a in range(rank))
    out.line(f"{t} = {args[0].name}[{index}]")
    return "view"


def _check_expand_dims(node: Node) -> None:
    if not isinstance(cast("AxisParams", node.params).axis, int):
        _expand_axes(node)


def _emit_any_expand_dims(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    axis = cast("AxisParams", node.params).axis
    if not isinstance(axis, int):
        return _emit_expand_dims(w, node, args, t, out)
    out.line(f"{t} = np.expand_dims({args[0].name}, {int(axis)})")
    return _view_kind(node)


WHOLE_GRAPH.add(K.EXPAND_DIMS, Rule(_check_expand_dims, _emit_any_expand_dims))


@ONNX.register(K.EXPAND_DIMS)
def expand_dims(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, axis=ANY_VALUE)
    axes = sorted_axes(cast("AxisParams", node.params).axis, rank(node))
    return [b.one("Unsqueeze", [b.value(node.args[0]), b.ints(axes)])]


# --- broadcast_to ---


@implements(np.broadcast_to)
def _numpy_broadcast_to(array: Any, shape: Any) -> Any:
    return bind(OpKind.BROADCAST_TO, (array,), {"shape": _shape_arg(shape)})


@ABSTRACT_EVAL.register(K.BROADCAST_TO)
def _broadcast_to(params: ShapeParams, x: AbstractValue) -> AbstractValue:
    target = tuple(params.shape)
    got = broadcast_shapes(x.shape, target)
    if got is not None and x.shape is not None and len(x.shape) > len(target):
        raise ValueError(f"cannot broadcast a shape {format_shape(x.shape)} to {target}")
    return AbstractValue(target, x.dtype)


@LOWER.register(K.BROADCAST_TO)
def _lower_broadcast_to(node: Node) -> Callable[..., Any]:
    shape = cast("ShapeParams", node.params).shape
    return lambda x: np.broadcast_to(x, shape)


def _simplify_broadcast_to(node: Node, args: tuple[Any, ...]) -> Proposal:
    """``broadcast_to(x, x.shape) -> x`` for a static shape."""
    x = args[0]
    if isinstance(x, Node) and fully_known(x.aval) and x.shape == node.shape:
        return x
    return None


SIMPLIFY.add(K.BROADCAST_TO, [_simplify_broadcast_to])


@GRADIENT.register(K.BROADCAST_TO)
def _broadcast_to_vjp(p: Primal, g: Any) -> list[Cotangent]:
    return [lambda: unbroadcast(g, p.shape(0))]


def _emit_broadcast_to(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    shape = tuple(cast("ShapeParams", node.params).shape)
    out.line(f"{t} = np.broadcast_to({args[0].name}, {shape!r})")
    return _view_kind(node)


WHOLE_GRAPH.add(K.BROADCAST_TO, Rule(_no_check, _emit_broadcast_to))


@ONNX.register(K.BROADCAST_TO)
def broadcast_to(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, shape=ANY_VALUE, subok=ANY_VALUE)
    shape = cast("ShapeParams", node.params).shape
    if any(d is None for d in shape):
        raise refuse(node, "its target shape is not static", "broadcast to a static shape")
    return [b.one("Expand", [b.value(node.args[0]), b.ints(shape)])]


# --- flip, copy ---


@implements(np.flip)
def _numpy_flip(m: Any, axis: Any = None) -> Any:
    return bind(OpKind.FLIP, (m,), {"axis": axis_attr(axis)})


@implements(np.copy)
def numpy_copy(a: Any) -> Any:  # (public: np.pad of a 0-d array is one)
    # np.copy builds an array (np.copy(np.float64(1)) is a 0-d array; .copy() keeps a scalar)
    return mark_array(bind(OpKind.COPY, (a,)))


@ABSTRACT_EVAL.register(K.FLIP)
def _flip(params: AxisParams, x: AbstractValue) -> AbstractValue:
    if x.shape is not None and params.axis is not None:
        normalize_axes(params.axis, len(x.shape))
    return x


@ABSTRACT_EVAL.register(K.COPY)
def _copy(params: CopyParams, x: AbstractValue) -> AbstractValue:
    return x


@LOWER.register(K.FLIP)
def _lower_flip(node: Node) -> Callable[..., Any]:
    return functools.partial(np.flip, axis=cast("AxisParams", node.params).axis)


@LOWER.register(K.COPY)
def _lower_copy(node: Node) -> Callable[..., Any]:
    return np.copy


def _static_axis(axis: Any) -> bool:
    return (
        axis is None
        or type(axis) is int
        or (isinstance(axis, tuple) and all(type(a) is int for a in axis))
    )


def _simplify_flip(node: Node, args: tuple[Any, ...]) -> Proposal:
    """``flip(flip(x, a), a) -> x``."""
    x = args[0]
    if (
        isinstance(x, Node)
        and x.op is OpKind.FLIP
        and x.params == node.params
        and _static_axis(cast("AxisParams", node.params).axis)
    ):
        return cast("Node", x.args[0])
    return None


def _simplify_copy(node: Node, args: tuple[Any, ...]) -> Proposal:
    """``copy(copy(x)) -> copy(x)``."""
    x = args[0]
    return x if isinstance(x, Node) and x.op is OpKind.COPY else None


SIMPLIFY.add(K.FLIP, [_simplify_flip])
SIMPLIFY.add(K.COPY, [_simplify_copy])


@GRADIENT.register(K.FLIP)
def _flip_vjp(p: Primal, g: Any) -> list[Cotangent]:
    return [lambda: np.flip(g, cast("AxisParams", p.params).axis)]


@GRADIENT.register(K.COPY)
def _copy_vjp(p: Primal, g: Any) -> list[Cotangent]:
    return [None] if cast("CopyParams", p.params).stop_gradient else [g]


NOTES.add(K.COPY, "none when made by kx.stop_gradient")


def _flip_axes(node: Node) -> set[int]:
    x = array_arg(node, 0, "a value")
    rank = len(ranked_shape(x))
    if rank == 0:
        raise Unsupported("flip of a 0-d value")
    axis = cast("AxisParams", node.params).axis
    if axis is None:
        return set(range(rank))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    return {checked_axis(a, rank, "flip") for a in axes}


def _emit_flip(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    axes = _flip_axes(node)
    rank = len(node.args[0].aval.shape)
    index = ", ".join("::-1" if a in axes else ":" for a in range(rank))
    out.line(f"{t} = {args[0].name}[{index}]")
    return "view"


def _emit_copy(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    x = args[0]
    if x.scalar:
        out.line(f"{t} = {x.name}")
        return "scalar"
    # (a constant of one value: a new array filled with it, not a copy that reads it)
    out.line(f"{t} = {x.fill}" if x.fill is not None else f"{t} = {x.name}.copy()")
    return "fresh"


WHOLE_GRAPH.add(K.FLIP, Rule(lambda n: _flip_axes(n) and None, _emit_flip))
WHOLE_GRAPH.add(K.COPY, Rule(_no_check, _emit_copy))


@ONNX.register(K.FLIP)
def flip(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, axis=ANY_VALUE)
    x = node.args[0]
    axes = sorted_axes(cast("AxisParams", node.params).axis, rank(x))
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


@ONNX.register(K.COPY)
def copy(b: GraphBuilder, node: Node) -> list[str]:
    return [b.one("Identity", [b.value(node.args[0])])]


# --- real, imag ---
# No VJP (``autodiff.backward.NO_GRADIENT_REASONS``) and no ONNX form (its refusals).


@ABSTRACT_EVAL.register(K.REAL, K.IMAG)
def _real_imag(params: NoParams, x: AbstractValue) -> AbstractValue:
    return AbstractValue(x.shape, np.empty(0, x.dtype).real.dtype)


@LOWER.register(K.REAL)
def _lower_real(node: Node) -> Callable[..., Any]:
    return np.real


@LOWER.register(K.IMAG)
def _lower_imag(node: Node) -> Callable[..., Any]:
    return np.imag


NOTES.add(K.REAL, "complex input: raises (real gradients only)")
NOTES.add(K.IMAG, "complex input: raises (real gradients only)")
