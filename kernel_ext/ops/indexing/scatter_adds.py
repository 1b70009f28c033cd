"""ufunc.at, bincount: scatters that accumulate into their result (repeated positions add up).

``bincount``'s ONNX refusal is in ``onnx/rules/refusals.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.rules import NOTES, VJP, Cotangent, Primal, unbroadcast, unsupported_ufunc
from ...backends.emit.literals import Unsupported
from ...backends.emit.source import Source
from ...backends.static_shapes import aval_of_node, ranked_shape
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...backends.whole_graph_ops.common import Rule, Writer
from ...ir import DynamicIndex, Node, OpKind
from ...ir.abstract import (
    ABSTRACT_EVAL,
    AbstractValue,
    broadcast_shapes,
    format_shape,
    getitem_shape,
    probe_dtype,
)
from ...ir.abstract.core import shape_of
from ...ir.interpreter import LOWER, build_index
from ...ir.params import BincountParams, UfuncAtParams
from ...onnx.builder import GraphBuilder
from ...onnx.refusal import refuse
from ...onnx.rules.common import ANY_VALUE, handled_params
from ...onnx.rules.common import RULES as ONNX
from ...trace import Tensor, bind, numpy_call
from ...trace.numpy_api.common import implements, is_traced
from ...trace.numpy_api.writes import writable_target
from ...trace.opaque import ufunc_method_call
from ...trace.tensor import UFUNC_METHODS, build_template
from .subscripts import scatter

K = OpKind

# --- ufunc.at ---


def _ufunc_at(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """``ufunc.at(a, indices[, b])``: unbuffered in place, repeated indices applied once each
    (the scatter-add). Functionalized: a ``ufunc_at`` node computes the updated copy and
    ``a`` takes it as its new value (a plain array is promoted; an argument is written back).
    """
    if kwargs or len(inputs) not in (2, 3):
        ufunc_method_call(ufunc, "at", inputs, kwargs)  # (NumPy's own at, into a's copy)
        return None
    target = writable_target(inputs[0], f"np.{ufunc.__name__}.at", "first operand must be array")
    template, dyn = build_template(inputs[1])
    b = inputs[2] if len(inputs) == 3 else None
    if isinstance(b, (list, tuple)):
        b = np.asarray(b)
    attrs = {"ufunc": ufunc, "index": template}
    target.assign(cast("Tensor", bind(OpKind.UFUNC_AT, (target, b, *dyn), attrs)))
    return None


UFUNC_METHODS.update(at=_ufunc_at)


@ABSTRACT_EVAL.register(K.UFUNC_AT)
def _abstract_ufunc_at(
    params: UfuncAtParams, a: AbstractValue, b: Any, *dyn: AbstractValue
) -> AbstractValue:
    ufunc = params.ufunc
    target = getitem_shape(a.shape, params.index, dyn)
    if b is not None:
        vshape = shape_of(b)
        if target is not None and vshape is not None:
            merged = broadcast_shapes(vshape, target)
            if merged is not None and len(merged) > len(target):
                raise ValueError(
                    f"array is not broadcastable to correct shape "
                    f"{format_shape(vshape)} into {format_shape(target)}"
                )
    # the loop NumPy picks for a's dtype with b (an error here is NumPy's error eagerly)
    probe = np.ones(1, a.dtype)
    with np.errstate(all="ignore"):
        if b is None:
            ufunc.at(probe, [0])
        else:
            ufunc.at(probe, [0], np.ones(1, b.dtype) if isinstance(b, AbstractValue) else b)
    return a


def ufunc_at(ufunc: np.ufunc, template: tuple[Any, ...], a: Any, b: Any, *dyn: Any) -> np.ndarray:
    """``ufunc.at`` as a pure function: the updated copy of ``a`` (``b`` None: a unary ufunc)."""
    out = np.array(a, copy=True)
    index = build_index(template, dyn)
    if b is None:
        ufunc.at(out, index)
    else:
        ufunc.at(out, index, b)
    return out


@LOWER.register(K.UFUNC_AT)
def _lower_ufunc_at(node: Node) -> Callable[..., Any]:
    params = cast("UfuncAtParams", node.params)
    return functools.partial(ufunc_at, params.ufunc, params.index)


@VJP.register(K.UFUNC_AT)
def _vjp_ufunc_at(p: Primal, g: Any) -> list[Cotangent]:
    """``np.add.at(a, index, b)`` (a scatter-add: repeated positions add up) and
    ``np.subtract.at``: ``a`` gets ``g``, ``b`` gets ``±g[index]`` (a gather)."""
    params = cast("UfuncAtParams", p.params)
    _a, b, *dyn = p.args
    ufunc = params.ufunc
    if ufunc not in (np.add, np.subtract):
        raise unsupported_ufunc(p, "at")

    def db() -> Any:
        # (Any: a Tensor, whose operators trace.operators installs where mypy cannot see)
        picked: Any = bind(K.GETITEM, (g, *dyn), {"index": params.index})
        return unbroadcast(picked if ufunc is np.add else -picked, p.shape(1))

    return [g, db if isinstance(b, Tensor) else None] + [None] * len(dyn)


NOTES.add(K.UFUNC_AT, "add, subtract (np.add.at: a scatter-add)")

#: ufunc.at's ufuncs this compiler writes (their loops are one wrapping or float operation)
_AT_UFUNCS = (np.add, np.subtract, np.multiply)


def _check_ufunc_at(node: Node) -> None:
    """``ufunc.at(a, idx, b)``: one 1-D integer index array into the first axis of a 1-D or
    2-D array, and values of ``a``'s dtype, one per index (or one for all)."""
    params = cast("UfuncAtParams", node.params)
    ufunc, index = params.ufunc, params.index
    a, b = node.args[0], node.args[1]
    if ufunc not in _AT_UFUNCS:
        raise Unsupported(f"{getattr(ufunc, '__name__', ufunc)}.at")
    if (
        not isinstance(a, Node)
        or aval_of_node(a).shape is None
        or len(ranked_shape(a)) not in (1, 2)
        or np.dtype(a.dtype).kind not in "iuf"
    ):
        raise Unsupported(f"{ufunc.__name__}.at into {getattr(a, 'aval', a)}")
    if len(index) != 1 or not isinstance(index[0], DynamicIndex) or len(node.args) != 3:
        raise Unsupported(f"{ufunc.__name__}.at with index {index!r}")
    idx = node.args[2]
    if (
        not isinstance(idx, Node)
        or aval_of_node(idx).shape is None
        or len(ranked_shape(idx)) != 1
        or np.dtype(idx.dtype).kind not in "iu"
        or np.dtype(idx.dtype) == np.uint64
    ):
        raise Unsupported(f"{ufunc.__name__}.at with index {getattr(idx, 'aval', idx)}")
    if (
        not isinstance(b, Node)
        or np.dtype(b.dtype) != np.dtype(a.dtype)
        or aval_of_node(b).shape is None
        or (aval_of_node(b).shape != () and len(ranked_shape(b)) != len(ranked_shape(a)))
    ):
        raise Unsupported(
            f"{ufunc.__name__}.at of {getattr(b, 'aval', b)!s} into "
            f"{a.aval} (values of another dtype or shape)"
        )


def _ufunc_at_source(name: str, op: str, rank: int, scalar: bool) -> str:
    """A helper applying ``out[idx[k]] = op(out[idx[k]], vals[k])`` for each ``k`` in order;
    returns False (nothing more written) at an index out of range."""
    v = "vals" if scalar else "vals[k]"
    helper = Source()
    helper.line("@_inline")
    with helper.block(f"def {name}(out, idx, vals):") as body:
        body.line("n = out.shape[0]")
        with body.block("for k in range(idx.shape[0]):") as each:
            each.line("i = np.int64(idx[k])")
            with each.block("if i < 0:") as negative:
                negative.line("i += n")
            with each.block("if i < 0 or i >= n:") as outside:
                outside.line("return False")
            if rank == 1:
                each.line(f"out[i] = {op.format(a='out[i]', b=v)}")
            else:
                with each.block("for j in range(out.shape[1]):") as row:
                    vj = "vals" if scalar else "vals[k, j]"
                    row.line(f"out[i, j] = {op.format(a='out[i, j]', b=vj)}")
        body.line("return True")
    return helper.text()


def _emit_ufunc_at(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """``np.add.at(a, idx, b)`` (subtract, multiply): unbuffered, in index order, into a
    copy of ``a`` — NumPy's order, so float results are NumPy's bits. An index out of
    range, or values of another shape, signal NumPy's error."""
    params = cast("UfuncAtParams", node.params)
    base, values, idx = args[0], args[1], args[2]
    ufunc = params.ufunc
    dt = np.dtype(node.dtype)
    wrap = dt.kind in "iu"
    op = {
        np.add: ("_wadd({a}, {b})", "({a} + {b})"),
        np.subtract: ("_wsub({a}, {b})", "({a} - {b})"),
        np.multiply: ("_wmul({a}, {b})", "({a} * {b})"),
    }[ufunc][0 if wrap else 1]
    rank = len(ranked_shape(node))
    scalar = values.scalar
    name = f"_at_{ufunc.__name__}_{rank}{'s' if scalar else ''}"
    w.helpers[name] = _ufunc_at_source(name, op, rank, scalar)
    out.line(f"{t} = {base.name}.copy()")
    if not scalar:
        w.signal(
            out,
            f"{values.name}.shape[0] != {idx.name}.shape[0]"
            + "".join(f" or {values.name}.shape[{a}] != {t}.shape[{a}]" for a in range(1, rank)),
        )
    w.signal(out, f"not {name}({t}, {idx.name}, {values.name})")
    return "fresh"


WHOLE_GRAPH.add(K.UFUNC_AT, Rule(_check_ufunc_at, _emit_ufunc_at))


_AT_REDUCTIONS = {np.add: "add", np.multiply: "mul", np.maximum: "max", np.minimum: "min"}


@ONNX.register(K.UFUNC_AT)
def _onnx_ufunc_at(b: GraphBuilder, node: Node) -> list[str]:
    """``np.add.at(a, index, b)``: ScatterND accumulating repeated positions, as ``at``."""
    params = cast("UfuncAtParams", node.params)
    handled_params(node, index=ANY_VALUE, ufunc=ANY_VALUE)
    ufunc = params.ufunc
    value = node.args[1]
    reduction = _AT_REDUCTIONS.get(ufunc)
    if reduction is None or value is None:
        raise refuse(
            node,
            f"{getattr(ufunc, '__name__', ufunc)}.at has no ONNX scatter form",
            "use np.add.at, np.multiply.at, np.maximum.at or np.minimum.at",
        )
    return [scatter(b, node, value, reduction)]


# --- bincount ---


@implements(np.bincount)
def _bincount(x: Any, weights: Any = None, minlength: Any = 0) -> Any:
    if is_traced(minlength):
        return numpy_call(np.bincount, (x,), {"weights": weights, "minlength": minlength})
    return bind(OpKind.BINCOUNT, (x, weights), {"minlength": int(minlength)})


@ABSTRACT_EVAL.register(K.BINCOUNT)
def _abstract_bincount(params: BincountParams, x: AbstractValue, weights: Any) -> AbstractValue:
    # max(x) + 1, at least minlength: a length only the values decide
    dtype = probe_dtype(lambda a, w: np.bincount(a, w, params.minlength), x, weights)
    return AbstractValue((None,), dtype)


@LOWER.register(K.BINCOUNT)
def _lower_bincount(node: Node) -> Callable[..., Any]:
    params = cast("BincountParams", node.params)
    minlength = params.minlength
    return lambda x, weights: np.bincount(x, weights, minlength)


@VJP.register(K.BINCOUNT)
def _vjp_bincount(p: Primal, g: Any) -> list[Cotangent]:
    """``out[i] = sum of weights[x == i]``: each weight gets ``g[x]``."""
    x, weights = p.args
    return [None, (lambda: g[x]) if isinstance(weights, Tensor) else None]


NOTES.add(K.BINCOUNT, "weights: a gather; x has none")


def _check_bincount(node: Node) -> None:
    params = cast("BincountParams", node.params)
    x, weights = node.args[0], node.args[1]
    minlength = params.minlength
    if weights is not None or set(node.params) - {"minlength"}:
        raise Unsupported("bincount with weights")
    if not isinstance(minlength, (int, np.integer)) or minlength < 0:
        raise Unsupported(f"bincount with minlength={minlength!r}")
    if (
        not isinstance(x, Node)
        or aval_of_node(x).shape is None
        or len(ranked_shape(x)) != 1
        or np.dtype(x.dtype).kind not in "biu"
        or np.dtype(x.dtype) == np.uint64
    ):
        raise Unsupported(f"bincount of {getattr(x, 'aval', x)}")


# np.bincount(x, minlength=m) of non-negative integers (a negative one: NumPy's ValueError)
_BINCOUNT = """\
@_inline
def _bincount(x, minlength):
    top = -1
    for i in range(x.shape[0]):
        v = np.int64(x[i])
        if v < 0:
            return False, np.zeros(0, np.int64)
        if v > top:
            top = v
    out = np.zeros(max(top + 1, minlength), np.int64)
    for i in range(x.shape[0]):
        out[np.int64(x[i])] += 1
    return True, out
"""


def _emit_bincount(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    params = cast("BincountParams", node.params)
    w.helpers["_bincount"] = _BINCOUNT
    minlength = int(params.minlength)
    out.line(f"{t}_ok, {t} = _bincount({args[0].name}, {minlength})")
    w.signal(out, f"not {t}_ok")  # a negative value: NumPy's error
    return "fresh"


WHOLE_GRAPH.add(K.BINCOUNT, Rule(_check_bincount, _emit_bincount))
