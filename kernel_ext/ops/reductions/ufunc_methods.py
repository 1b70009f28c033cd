"""The ufunc methods that reduce and scan: ufunc_reduce, ufunc_reduceat, ufunc_accumulate
(``np.<ufunc>.reduce``, ``.reduceat``, ``.accumulate``; the ufunc is ``params.ufunc``).

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`). The ONNX refusals
of reduce and reduceat are ``onnx.rules.refusals``'."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.array_rules import static_shape
from ...autodiff.decompositions import route_along_axis
from ...autodiff.rules import NOTES, VJP, Cotangent, Primal, unsupported_ufunc
from ...backends.emit.literals import Unsupported, ctor
from ...backends.emit.source import Source
from ...backends.static_shapes import ranked_shape
from ...backends.ufunc_loops import find_loop
from ...backends.whole_graph_ops.common import (
    ACCUMULATE,
    LOOP3,
    Rule,
    Writer,
    alloc_result,
    array_arg,
    checked_axis,
    lanes_along,
    loop_scratch,
    only_params,
    result_dtype,
    ufunc_loop,
)
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...ir import UFUNC_REDUCTIONS, Node, OpKind
from ...ir.abstract import (
    ABSTRACT_EVAL,
    AbstractValue,
    normalize_axis,
    probe_dtype,
    reduced_shape,
)
from ...ir.interpreter import LOWER, Lowering
from ...ir.params import ConstantParams, UfuncMethodParams
from ...onnx.builder import GraphBuilder
from ...onnx.refusal import refuse
from ...onnx.rules.common import ANY_VALUE, handled_params
from ...onnx.rules.common import RULES as ONNX
from ...trace import Tensor
from ...trace.context import bind
from ...trace.numpy_api.common import axis_attr, is_static_value
from ...trace.opaque import ufunc_method_call
from ...trace.tensor import UFUNC_METHODS
from .common import expand_to, first_occurrence, no_identity_check, reverse_cumsum
from .extrema import check_extreme, emit_extreme
from .scans import cumsum

K = OpKind


def _ufunc_method(method: str) -> Lowering:
    """``ufunc.<method>`` with the node's keyword parameters (``params.ufunc`` names the
    ufunc)."""

    def lowering(node: Node) -> Callable[..., Any]:
        ufunc = cast("UfuncMethodParams", node.params).ufunc
        return functools.partial(getattr(ufunc, method), **node.params.kwargs("ufunc"))

    return lowering


def _method_attrs(
    ufunc: np.ufunc, kwargs: dict[str, Any], allowed: tuple[str, ...]
) -> dict[str, Any] | None:
    """Static attrs of a ufunc method call, or None when an option needs the opaque call."""
    attrs: dict[str, Any] = {"ufunc": ufunc}
    for key, value in kwargs.items():
        if key not in allowed:
            return None
        if key == "axis":
            attrs["axis"] = axis_attr(value)
        elif key == "dtype":
            if value is not None:
                attrs["dtype"] = np.dtype(value)
        elif key == "keepdims":
            attrs["keepdims"] = bool(value)
        elif key == "initial":
            if value is np._NoValue:
                continue
            if not is_static_value(value) or np.ndim(value):
                return None
            attrs["initial"] = value
    return attrs


# --- ufunc_reduce ---


def _trace_ufunc_reduce(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``ufunc.reduce``: a sum/prod/max/min/any/all where one is the same reduction (they
    fuse), else a ``ufunc_reduce`` node."""
    if kwargs.get("where", True) is not True:
        return ufunc_method_call(ufunc, "reduce", inputs, kwargs)
    attrs = _method_attrs(ufunc, kwargs, ("axis", "dtype", "keepdims", "initial"))
    if attrs is None or len(inputs) != 1:
        return ufunc_method_call(ufunc, "reduce", inputs, kwargs)
    attrs.setdefault("axis", 0)
    attrs.setdefault("keepdims", False)
    kind = UFUNC_REDUCTIONS.get(ufunc)
    if kind is not None and "initial" not in attrs:
        del attrs["ufunc"]
        return bind(kind, inputs, attrs)
    return bind(OpKind.UFUNC_REDUCE, inputs, attrs)


UFUNC_METHODS["reduce"] = _trace_ufunc_reduce


@ABSTRACT_EVAL.register(OpKind.UFUNC_REDUCE)
def _abstract_ufunc_reduce(params: UfuncMethodParams, x: AbstractValue) -> AbstractValue:
    ufunc, axis = params.ufunc, params.axis
    kwargs = params.kwargs("ufunc")
    if x.shape is not None and "initial" not in params and ufunc.identity is None:
        no_identity_check(ufunc.__name__, x, axis)
    if x.ndim is None:
        kwargs["axis"] = None
    dtype = probe_dtype(ufunc.reduce, x, **kwargs)
    return AbstractValue(reduced_shape(x.shape, axis, params.keepdims), dtype)


LOWER.add(OpKind.UFUNC_REDUCE, _ufunc_method("reduce"))


@VJP.register(K.UFUNC_REDUCE)
def _ufunc_reduce(p: Primal, g: Any) -> list[Cotangent]:
    """``np.add.reduce`` is a sum, ``multiply`` a product, ``maximum``/``minimum`` a max/min
    (ties: the first occurrence); the default axis is 0."""
    params = cast("UfuncMethodParams", p.params)
    x, ufunc = p.args[0], params.ufunc
    axis, keepdims = params.axis, bool(params.keepdims)
    if ufunc is np.add:
        return [lambda: expand_to(g, x, axis, keepdims)]
    if ufunc is np.multiply:
        return [lambda: expand_to(g, x, axis, keepdims) * expand_to(p.out, x, axis, keepdims) / x]
    if ufunc in (np.maximum, np.minimum):

        def dx() -> Any:
            hit = x == expand_to(p.out, x, axis, keepdims)
            return np.where(first_occurrence(hit, axis), expand_to(g, x, axis, keepdims), 0.0)

        return [dx]
    raise unsupported_ufunc(p, "reduce")


NOTES.add(K.UFUNC_REDUCE, "add, multiply, maximum, minimum (ties: the first occurrence)")


# Whole graph: maximum and minimum, as max and min over several axes (:mod:`.extrema`).
def _claims_ufunc_reduce(node: Node) -> bool:
    return cast("UfuncMethodParams", node.params).ufunc in (np.maximum, np.minimum)


WHOLE_GRAPH.add(
    K.UFUNC_REDUCE,
    Rule(lambda n: check_extreme(n) and None, emit_extreme, _claims_ufunc_reduce),
)


# --- ufunc_reduceat ---


def _trace_ufunc_reduceat(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    attrs = _method_attrs(ufunc, kwargs, ("axis", "dtype"))
    if attrs is None or len(inputs) != 2 or not isinstance(attrs.get("axis", 0), int):
        return ufunc_method_call(ufunc, "reduceat", inputs, kwargs)
    attrs.setdefault("axis", 0)
    array, indices = inputs
    if isinstance(indices, (list, tuple, range)):
        indices = np.asarray(indices)
    return bind(OpKind.UFUNC_REDUCEAT, (array, indices), attrs)


UFUNC_METHODS["reduceat"] = _trace_ufunc_reduceat


@ABSTRACT_EVAL.register(OpKind.UFUNC_REDUCEAT)
def _abstract_ufunc_reduceat(
    params: UfuncMethodParams, x: AbstractValue, indices: AbstractValue
) -> AbstractValue:
    ufunc, axis = params.ufunc, params.axis
    if indices.ndim is not None and indices.ndim != 1:
        raise ValueError("index must be 1-dimensional")
    if indices.dtype.kind not in "iu":
        raise TypeError(
            f"Cannot cast array data from {indices.dtype!r} to dtype('int64') "
            "according to the rule 'safe'"
        )
    kwargs = {**params.kwargs("ufunc"), "axis": 0}
    dtype = probe_dtype(
        lambda a: ufunc.reduceat(a.reshape(-1)[:1], np.zeros(1, np.intp), **kwargs), x
    )
    if x.shape is None:
        return AbstractValue(None, dtype)
    if not x.shape:
        raise TypeError("cannot reduceat a scalar")
    ax = normalize_axis(axis, len(x.shape))
    count = None if indices.shape is None else indices.shape[0]
    return AbstractValue(x.shape[:ax] + (count,) + x.shape[ax + 1 :], dtype)


LOWER.add(OpKind.UFUNC_REDUCEAT, _ufunc_method("reduceat"))


@VJP.register(K.UFUNC_REDUCEAT)
def _ufunc_reduceat(p: Primal, g: Any) -> list[Cotangent]:
    """``np.add.reduceat``: sums of segments, a fixed linear map along the axis for constant
    indices (``np.add.reduceat`` of an identity matrix is its matrix)."""
    x, indices = p.args
    params = cast("UfuncMethodParams", p.params)
    if params.ufunc is not np.add:
        raise NotImplementedError(
            f"the gradient of np.{params.ufunc.__name__}.reduceat "
            "is not implemented (np.add.reduceat has a rule)"
        )
    index = (
        cast("ConstantParams", indices.node.params).value
        if isinstance(indices, Tensor) and indices.node.op is K.CONSTANT
        else (None if isinstance(indices, Tensor) else indices)
    )
    if index is None:
        raise NotImplementedError("the gradient of np.add.reduceat needs constant indices")
    shape = static_shape(x, "np.add.reduceat")
    axis = params.axis % len(shape)
    w = np.add.reduceat(np.eye(shape[axis]), np.asarray(index), axis=0)  # (segments, n)

    def dx() -> Any:
        moved = np.moveaxis(g, axis, -1)
        return np.moveaxis(np.matmul(moved, w.astype(g.dtype)), -1, axis)

    return [dx, None]


NOTES.add(K.UFUNC_REDUCEAT, "np.add with constant indices")


# --- ufunc_accumulate ---


def _trace_ufunc_accumulate(
    ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    attrs = _method_attrs(ufunc, kwargs, ("axis", "dtype"))
    if attrs is None or len(inputs) != 1 or isinstance(attrs.get("axis", 0), tuple):
        return ufunc_method_call(ufunc, "accumulate", inputs, kwargs)
    attrs.setdefault("axis", 0)
    if attrs["axis"] is None:
        raise TypeError("'NoneType' object cannot be interpreted as an integer")
    return bind(OpKind.UFUNC_ACCUMULATE, inputs, attrs)


UFUNC_METHODS["accumulate"] = _trace_ufunc_accumulate


@ABSTRACT_EVAL.register(OpKind.UFUNC_ACCUMULATE)
def _abstract_ufunc_accumulate(params: UfuncMethodParams, x: AbstractValue) -> AbstractValue:
    ufunc, axis = params.ufunc, params.axis
    if x.shape is not None:
        if not x.shape:
            raise TypeError("cannot accumulate on a scalar")
        normalize_axis(axis, len(x.shape))
    dtype = probe_dtype(ufunc.accumulate, x, **{**params.kwargs("ufunc"), "axis": 0})
    return AbstractValue(x.shape, dtype)


LOWER.add(OpKind.UFUNC_ACCUMULATE, _ufunc_method("accumulate"))


def _running_source(x: Any, out: Any, axis: int) -> Any:
    """For ``out = np.maximum.accumulate(x, axis)`` (or minimum): the position along ``axis``
    of the element each output copies: the latest position up to it that set a new extreme
    (a tie keeps the earlier element, as ``maximum``'s ties go to its first operand)."""
    shape = x.shape
    n = shape[axis]
    lead = (slice(None),) * axis
    before = np.concatenate([out[lead + (slice(0, 1),)], out[lead + (slice(0, n - 1),)]], axis=axis)
    first = np.zeros(shape, bool)
    first[lead + (0,)] = True  # the first element always starts a run
    positions = np.arange(n).reshape((n,) + (1,) * (len(shape) - axis - 1))
    starts = np.where((out != before) | first, positions, 0)
    return np.maximum.accumulate(starts, axis=axis)


@VJP.register(K.UFUNC_ACCUMULATE)
def _ufunc_accumulate(p: Primal, g: Any) -> list[Cotangent]:
    """``add`` is a cumulative sum, ``multiply`` a cumulative product (divides by ``x``);
    ``maximum``/``minimum`` (``fmax``/``fmin``) route each output's cotangent to the element it
    copies: the running extreme, ties to the first occurrence."""
    params = cast("UfuncMethodParams", p.params)
    x, ufunc = p.args[0], params.ufunc
    axis = params.axis
    if ufunc is np.add:
        return [lambda: reverse_cumsum(g, axis)]
    if ufunc is np.multiply:
        return [lambda: reverse_cumsum(g * p.out, axis) / x]
    if ufunc in (np.maximum, np.minimum, np.fmax, np.fmin):

        def dx() -> Any:
            shape = x.shape
            if shape is None or None in shape:
                raise NotImplementedError(
                    f"the gradient of np.{ufunc.__name__}.accumulate needs static shapes"
                )
            ax = axis % len(shape)
            return route_along_axis(_running_source(x, p.out, ax), g, shape, ax)

        return [dx]
    raise NotImplementedError(
        f"the gradient of np.{ufunc.__name__}.accumulate is not "
        "implemented (add, multiply, maximum, minimum have rules)"
    )


NOTES.add(
    K.UFUNC_ACCUMULATE,
    "add, multiply (divides by x), maximum, minimum, fmax, fmin "
    "(to the running extreme; ties: the first occurrence)",
)


def _check_accumulate(node: Node) -> tuple[Node, np.dtype, int, np.ufunc]:
    only_params(node, {"axis", "ufunc"})
    params = cast("UfuncMethodParams", node.params)
    ufunc = params.ufunc
    x = array_arg(node, 0, "a value")
    dt = result_dtype(node)
    if not isinstance(ufunc, np.ufunc) or ufunc.nin != 2 or ufunc.nout != 1:
        raise Unsupported(f"accumulate of {ufunc!r}")
    if np.dtype(x.dtype) != dt:
        raise Unsupported(f"{ufunc.__name__}.accumulate of {x.dtype} into {dt}")
    if find_loop(ufunc, (dt,) * 3) is None:
        raise Unsupported(f"no NumPy {ufunc.__name__} loop for {dt}")
    rank = len(ranked_shape(x))
    if rank == 0:
        raise Unsupported("accumulate of a 0-d value")
    return x, dt, checked_axis(params.axis, rank, "accumulate"), ufunc


def _emit_accumulate(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """``ufunc.accumulate`` as the cumsum rule of :mod:`.scans` computes it: NumPy's own loop of
    the ufunc for the dtype, called with its output one step behind its first input."""
    x_node, dt, axis, ufunc = _check_accumulate(node)
    rank = len(ranked_shape(x_node))
    dts = ctor(dt)
    x = w.fresh("x")
    out.line(f"{x} = np.ascontiguousarray({args[0].name})")
    alloc_result(w, node, [f"{x}.shape[{d}]" for d in range(rank)], dts, out, t)
    outer, n, inner = lanes_along(x, rank, axis)
    shape3 = f"({outer}, {n}, {inner})"
    w.helpers["_loop3"] = LOOP3
    w.helpers["_accumulate"] = ACCUMULATE
    out.line(
        f"_accumulate({x}.reshape({shape3}), {t}.reshape({shape3}), "
        f"{ufunc_loop(w, ufunc, (dt,) * 3)}, {loop_scratch(w)})"
    )
    return "fresh"


WHOLE_GRAPH.add(K.UFUNC_ACCUMULATE, Rule(lambda n: _check_accumulate(n) and None, _emit_accumulate))


@ONNX.register(K.UFUNC_ACCUMULATE)
def ufunc_accumulate(b: GraphBuilder, node: Node) -> list[str]:
    """``np.add.accumulate`` is a cumsum in the node's dtype; no other ufunc's running
    reduction (cumulative product, maximum...) has an ONNX op."""
    handled_params(node, ufunc=ANY_VALUE, axis=ANY_VALUE, dtype=ANY_VALUE)
    ufunc = cast("UfuncMethodParams", node.params).ufunc
    if ufunc is not np.add:
        raise refuse(
            node,
            f"ONNX has no running {ufunc.__name__} (only CumSum)",
            "compute it outside the exported function and pass the result in",
        )
    attrs = node.params.kwargs("ufunc")
    attrs.setdefault("axis", 0)
    as_cumsum = Node(node.name, K.CUMSUM, node.args, attrs, node.aval, node.source)
    return cumsum(b, as_cumsum)
