"""getitem, setitem: ``x[index]`` and ``x[index] = value`` (a functional update), with basic
and advanced (integer array, boolean mask) indexes.

Shapes come from :func:`kernel_ext.ir.abstract.getitem_shape` (NumPy asked on zero-strided
probes); the whole-graph compiler writes a basic index itself (its views and in-place writes:
``backends/whole_graph/indexing.py``) and an advanced one through the rule here, whose gather
and scatter are in :mod:`.fancy_indexing`. The ONNX rules stay in ``onnx/rules/indexing.py``:
``kernel_ext.onnx`` loads on first use, and a rule registered here would load it with
``kernel_ext``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from ...autodiff.rules import NOTES, VJP, Cotangent, Primal, unbroadcast
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...backends.whole_graph_ops.common import Rule
from ...ir import DynamicIndex, Node, OpKind
from ...ir.abstract import (
    ABSTRACT_EVAL,
    AbstractValue,
    broadcast_shapes,
    format_shape,
    getitem_shape,
)
from ...ir.abstract.core import shape_of
from ...ir.interpreter import LOWER, build_index
from ...passes.simplify import RULES as SIMPLIFY
from ...passes.simplify import Proposal
from ...trace import Tensor, bind
from .fancy_indexing import check_fancy, claims_fancy, emit_gather, emit_scatter

K = OpKind

# --- getitem, setitem ---


@ABSTRACT_EVAL.register(K.GETITEM)
def _abstract_getitem(
    attrs: dict[str, Any], x: AbstractValue, *dyn: AbstractValue
) -> AbstractValue:
    for d in dyn:
        if not (np.issubdtype(d.dtype, np.integer) or d.dtype == np.bool_):
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                f"(`None`) and integer or boolean arrays are valid indices; got a "
                f"traced {d}"
            )
    return AbstractValue(getitem_shape(x.shape, attrs["index"], dyn), x.dtype)


@ABSTRACT_EVAL.register(K.SETITEM)
def _abstract_setitem(
    attrs: dict[str, Any], x: AbstractValue, value: Any, *dyn: AbstractValue
) -> AbstractValue:
    target = getitem_shape(x.shape, attrs["index"], dyn)
    vshape = shape_of(value)
    if target is not None and vshape is not None:
        merged = broadcast_shapes(vshape, target)
        if merged is not None and len(merged) > len(target):
            raise ValueError(
                f"could not broadcast input array from shape {format_shape(vshape)} "
                f"into shape {format_shape(target)}"
            )
    # NumPy casts assigned values unsafely (x_int[0] = 1.5 stores 1): no dtype check.
    return x


def _is_static(template: tuple[Any, ...]) -> bool:
    return not any(
        isinstance(c, DynamicIndex)
        or (
            isinstance(c, slice)
            and any(isinstance(p, DynamicIndex) for p in (c.start, c.stop, c.step))
        )
        for c in template
    )


@LOWER.register(K.GETITEM)
def _lower_getitem(node: Node) -> Callable[..., Any]:
    template = node.attrs["index"]
    if _is_static(template):
        return lambda x: x[template]
    return lambda x, *dyn: x[build_index(template, dyn)]


@LOWER.register(K.SETITEM)
def _lower_setitem(node: Node) -> Callable[..., Any]:
    template = node.attrs["index"]

    def setitem(x: Any, value: Any, *dyn: Any) -> np.ndarray:
        out = np.array(x, copy=True)
        out[build_index(template, dyn)] = value
        return out

    return setitem


def _is_full_slice(c: Any) -> bool:
    if c is Ellipsis:
        return True
    return (
        isinstance(c, slice)
        and c.start in (None, 0)
        and c.stop is None
        and c.step in (None, 1)
        and type(c.start) is not bool
        and type(c.step) is not bool
    )


def _getitem_of_full_slices(node: Node, args: tuple[Any, ...]) -> Proposal:
    """``x[:]``, ``x[...]``, ``x[:, :]`` -> ``x``."""
    template = node.attrs["index"]
    if len(args) == 1 and template and all(_is_full_slice(c) for c in template):
        return cast("Node", args[0])
    return None


SIMPLIFY.add(K.GETITEM, [_getitem_of_full_slices])


def _has_integer_arrays(template: tuple, dyn: Sequence[Any]) -> bool:
    """Does the index hold an integer array (positions may repeat, so writes would lose
    contributions that a scatter-add keeps)?"""
    for c in template:
        if isinstance(c, DynamicIndex):
            d = dyn[c.position - 1]
            if d.dtype != np.bool_ and d.ndim > 0:
                return True
        elif isinstance(c, (list, np.ndarray)) and np.asarray(c).dtype != np.bool_:
            return True
    return False


def scatter_add(x: Any, template: tuple, dyn: Sequence[Any], g: Any) -> Any:
    """``zeros_like(x)`` with ``g`` added at ``x[index]`` (repeated positions add up)."""
    if not _has_integer_arrays(template, dyn):
        zeros = np.zeros_like(x, dtype=g.dtype)
        return bind(K.SETITEM, (zeros, g, *dyn), {"index": template})
    if x.shape is None or None in x.shape:
        raise NotImplementedError(
            "the gradient of indexing with integer arrays needs the indexed array's static shape"
        )
    # The flat position of every picked element: the same index applied to an iota array.
    iota = np.arange(math.prod(x.shape)).reshape(x.shape)
    where = cast("Tensor", bind(K.GETITEM, (iota, *dyn), {"index": template}))
    sums = np.bincount(np.reshape(where, (-1,)), weights=np.reshape(g, (-1,)), minlength=iota.size)
    return np.reshape(sums, x.shape).astype(g.dtype)


@VJP.register(K.GETITEM)
def _vjp_getitem(p: Primal, g: Any) -> list[Cotangent]:
    x, *dyn = p.args
    return [lambda: scatter_add(x, p.attrs["index"], dyn, g)] + [None] * len(dyn)


@VJP.register(K.SETITEM)
def _vjp_setitem(p: Primal, g: Any) -> list[Cotangent]:
    _x, value, *dyn = p.args
    template = p.attrs["index"]

    def dx() -> Any:
        return bind(K.SETITEM, (g, 0.0, *dyn), {"index": template})

    def dvalue() -> Any:
        picked = bind(K.GETITEM, (g, *dyn), {"index": template})
        return unbroadcast(picked, p.shape(1))

    return [dx, dvalue if isinstance(value, Tensor) else None] + [None] * len(dyn)


NOTES.add(K.GETITEM, "static, dynamic, boolean masks; integer arrays scatter-add (np.bincount)")
NOTES.add(K.SETITEM, "repeated integer-array positions: undefined, as NumPy's write order")

# an advanced index is this rule's (fancy_indexing.py), a basic one the writer's own
WHOLE_GRAPH.add(K.GETITEM, Rule(check_fancy, emit_gather, claims_fancy))
WHOLE_GRAPH.add(K.SETITEM, Rule(check_fancy, emit_scatter, claims_fancy))
