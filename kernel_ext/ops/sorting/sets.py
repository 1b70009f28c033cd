"""Sets: unique and isin.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.decompositions import composed
from ...autodiff.rules import NOTES, VJP, Cotangent, Primal
from ...backends.emit.literals import Unsupported
from ...backends.emit.source import Source
from ...backends.whole_graph_ops.common import (
    MIXED_ZEROS,
    Rule,
    Writer,
    array_arg,
    only_params,
    shape_tuple,
)
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...ir import LOWER, Node, OpKind
from ...ir.abstract.core import (
    ABSTRACT_EVAL,
    INTP,
    AbstractValue,
    known_rank,
    probe_dtype,
    shape_of,
)
from ...ir.params import IsinParams, UniqueParams
from ...trace import bind
from ...trace.numpy_api.common import bind_outputs, implements
from ...trace.opaque import numpy_call
from ...trace.zero_d import mark_array

# --- unique -------------------------------------------------------------------------------


@implements(np.unique)
def _unique(
    ar: Any,
    return_index: bool = False,
    return_inverse: bool = False,
    return_counts: bool = False,
    axis: Any = None,
    *,
    equal_nan: bool = True,
    sorted: bool = True,
) -> Any:
    if axis is not None:
        return numpy_call(
            np.unique,
            (ar,),
            {
                "return_index": return_index,
                "return_inverse": return_inverse,
                "return_counts": return_counts,
                "axis": axis,
                "equal_nan": equal_nan,
                "sorted": sorted,
            },
        )
    attrs = {
        "return_index": bool(return_index),
        "return_inverse": bool(return_inverse),
        "return_counts": bool(return_counts),
        "equal_nan": bool(equal_nan),
    }
    if not sorted:
        attrs["sorted"] = False
    if not (return_index or return_inverse or return_counts):
        return bind(OpKind.UNIQUE, (ar,), attrs)
    outputs = bind_outputs(OpKind.UNIQUE, (ar,), attrs, "unique")
    if return_inverse:  # NumPy reshapes it to the input's shape: a 0-d input gives a 0-d array
        mark_array(outputs[1 + bool(return_index)])
    return tuple(outputs)


@ABSTRACT_EVAL.register(OpKind.UNIQUE)
def _eval_unique(
    params: UniqueParams, x: AbstractValue
) -> AbstractValue | tuple[AbstractValue, ...]:
    shape = known_rank(x, "unique")
    values = AbstractValue((None,), x.dtype)
    extra = []
    if params.return_index:
        extra.append(AbstractValue((None,), INTP))
    if params.return_inverse:
        # NumPy 2 gives the inverse the input's shape (axis=None); ask it which rank
        probe = np.unique(np.zeros((1,) * len(shape), x.dtype), return_inverse=True)[1]
        inverse = shape if probe.ndim == len(shape) else (x.size,)
        extra.append(AbstractValue(tuple(inverse), INTP))
    if params.return_counts:
        extra.append(AbstractValue((None,), INTP))
    return (values, *extra) if extra else values


@LOWER.register(OpKind.UNIQUE)
def _lower_unique(node: Node) -> Callable[..., Any]:
    return functools.partial(np.unique, **node.params.kwargs())


@VJP.register(OpKind.UNIQUE)
def _vjp_unique(p: Primal, g: Any) -> list[Cotangent]:
    """The sorted distinct values: each is its first occurrence (``return_index``), so a
    repeated value's gradient goes there (the values are not differentiable at repeats)."""
    multi = p.node.multi_output
    gv = g[0] if multi else g
    if gv is None:
        return [None]
    # the forward call's equal_nan and sorted, each only if it was given
    options = p.params.kwargs("return_index", "return_inverse", "return_counts")

    def fn(a: Any) -> Any:
        both = bind(
            OpKind.UNIQUE,
            (a,),
            {"return_index": True, "return_inverse": False, "return_counts": False, **options},
        )
        first = bind(OpKind.GET_OUTPUT, (both,), {"index": 1})
        values = np.ravel(a)[first]
        return (
            [values, *[None] * (len(cast("tuple[Any, ...]", p.node.aval)) - 1)] if multi else values
        )

    return composed(p, g, fn)


NOTES.add(OpKind.UNIQUE, "values: the first occurrence of each (not differentiable at repeats)")

# The whole-graph form: ``np.unique`` (``_unique1d``): the sorted values, a value kept where it
# differs from the one before, its first index from a stable (merge) argsort, its count from
# the next kept place. Equal floats of different bits (``-0.0``/``0.0``; NaNs, which
# ``equal_nan`` merges) keep the one NumPy's sort put first: those signal.
_UNIQUE = """\
@_inline
def _unique_runs(aux):
    n = aux.shape[0]
    mask = np.empty(n, np.bool_)
    if n > 0:
        mask[0] = True
    for i in range(1, n):
        mask[i] = aux[i] != aux[i - 1]
    starts = np.flatnonzero(mask)
    counts = np.empty(starts.shape[0], np.int64)
    for i in range(starts.shape[0]):
        end = starts[i + 1] if i + 1 < starts.shape[0] else n
        counts[i] = end - starts[i]
    return starts, counts
"""


def _check_unique(node: Node) -> np.dtype:
    params = cast("UniqueParams", node.params)
    only_params(node, {"return_index", "return_inverse", "return_counts", "equal_nan"})
    x = array_arg(node, 0, "an array")
    if params.return_inverse:
        raise Unsupported("unique with return_inverse")
    if not params.equal_nan:
        raise Unsupported("unique with equal_nan=False")
    if np.dtype(x.dtype).kind not in "iuf":
        raise Unsupported(f"unique of {x.dtype}")
    return np.dtype(x.dtype)


def _emit_unique(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    params = cast("UniqueParams", node.params)
    dt = _check_unique(node)
    flat, aux, perm = w.fresh("u"), w.fresh("u"), w.fresh("u")
    out.line(f"{flat} = np.ascontiguousarray({args[0].name}).ravel()")
    with_index = bool(params.return_index)
    if with_index:  # NumPy: a mergesort argsort, so the first of equal values is kept
        out.line(f"{perm} = np.argsort({flat}, kind='mergesort')")
        out.line(f"{aux} = {flat}[{perm}]")
    else:
        out.line(f"{aux} = np.sort({flat})")
    if dt.kind == "f":
        w.helpers["_mixed_zeros"] = MIXED_ZEROS
        w.signal(
            out,
            f"{aux}.shape[0] > 0 and {aux}[{aux}.shape[0] - 1] != {aux}[{aux}.shape[0] - 1]",
        )
        w.signal(out, f"_mixed_zeros({aux})")
    w.helpers["_unique_runs"] = _UNIQUE
    starts, counts, vals = w.fresh("u"), w.fresh("u"), w.fresh("u")
    out.line(f"{starts}, {counts} = _unique_runs({aux})")
    out.line(f"{vals} = {aux}[{starts}]")
    outs = [vals]
    if with_index:
        outs.append(f"{perm}[{starts}]")
    if params.return_counts:
        outs.append(counts)
    if len(outs) == 1:
        out.line(f"{t} = {vals}")
    else:
        out.line(f"{t} = {shape_tuple(outs)}")
    return "fresh"


WHOLE_GRAPH.add(OpKind.UNIQUE, Rule(lambda n: _check_unique(n) and None, _emit_unique))

# --- isin ---------------------------------------------------------------------------------


@implements(np.isin)
def _isin(
    element: Any,
    test_elements: Any,
    assume_unique: bool = False,
    invert: bool = False,
    *,
    kind: Any = None,
) -> Any:
    attrs: dict[str, Any] = {"invert": bool(invert)}
    if assume_unique:
        attrs["assume_unique"] = True
    if kind is not None:
        attrs["kind"] = kind
    return bind(OpKind.ISIN, (element, test_elements), attrs)


@ABSTRACT_EVAL.register(OpKind.ISIN)
def _eval_isin(params: IsinParams, element: Any, test: Any) -> AbstractValue:
    probe_dtype(lambda e, t: np.isin(e, t, **params.kwargs()), element, test)
    return AbstractValue(shape_of(element), np.dtype(np.bool_))


@LOWER.register(OpKind.ISIN)
def _lower_isin(node: Node) -> Callable[..., Any]:
    return functools.partial(np.isin, **node.params.kwargs())
