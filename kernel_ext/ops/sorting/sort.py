"""Sort and partition: sort, argsort, partition, argpartition and lexsort.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.array_rules import static_shape
from ...autodiff.decompositions import route_along_axis
from ...autodiff.rules import NOTES, VJP, Cotangent, Primal
from ...backends.emit.literals import Unsupported, ctor
from ...backends.emit.source import Source
from ...backends.static_shapes import ranked_shape
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...backends.whole_graph_ops.common import (
    Rule,
    Writer,
    array_arg,
    checked_axis,
    only_params,
)
from ...ir import LOWER, Node, OpKind
from ...ir.abstract.core import (
    ABSTRACT_EVAL,
    INTP,
    AbstractValue,
    Shape,
    broadcast_shapes,
    known_rank,
    normalize_axis,
)
from ...ir.params import LexsortParams, PartitionParams, SortParams
from ...onnx.builder import GraphBuilder, elem_type
from ...onnx.refusal import refuse
from ...onnx.rules.common import ANY_VALUE, handled_params, wide
from ...onnx.rules.common import RULES as ONNX
from ...trace import Tensor
from ...trace.context import bind
from ...trace.numpy_api.common import array_arg as traced_array_arg
from ...trace.numpy_api.common import implements, is_traced, ndim_of, static_attr
from ...trace.opaque import numpy_call
from ...trace.variables import Variable

# --- sort, argsort ------------------------------------------------------------------------


def _sort_attrs(axis: Any, kind: Any, stable: Any) -> dict[str, Any]:
    """The static attrs of a sort: the axis, and ``kind``/``stable`` when given (they decide
    the order of ties, so the graph runs NumPy's sort with the same ones)."""
    attrs: dict[str, Any] = {"axis": None if axis is None else int(axis)}
    if kind is not None:
        attrs["kind"] = str(kind)
    if stable is not None:
        attrs["stable"] = bool(stable)
    return attrs


@implements(np.sort)
def _sort(a: Any, axis: Any = -1, kind: Any = None, *, stable: Any = None) -> Any:
    if ndim_of(a) == 0:  # (NumPy's own rules for a 0-d input: its call)
        return numpy_call(np.sort, (a,), {"axis": axis, "kind": kind, "stable": stable})
    return bind(OpKind.SORT, (a,), _sort_attrs(axis, kind, stable))


@implements(np.argsort)
def _argsort(a: Any, axis: Any = -1, kind: Any = None, *, stable: Any = None) -> Any:
    if ndim_of(a) == 0:  # (NumPy's argsort of a 0-d array is array([0]): its call)
        return numpy_call(np.argsort, (a,), {"axis": axis, "kind": kind, "stable": stable})
    return bind(OpKind.ARGSORT, (a,), _sort_attrs(axis, kind, stable))


@ABSTRACT_EVAL.register(OpKind.SORT)
def _eval_sort(params: SortParams, x: AbstractValue) -> AbstractValue:
    return _sorted(params, x, x.dtype)


@ABSTRACT_EVAL.register(OpKind.ARGSORT)
def _eval_argsort(params: SortParams, x: AbstractValue) -> AbstractValue:
    return _sorted(params, x, np.dtype(np.intp))


def _sorted(
    params: SortParams | PartitionParams, x: AbstractValue, dtype: np.dtype
) -> AbstractValue:
    axis = params.axis
    if axis is None:
        return AbstractValue((x.size,), dtype)
    if x.shape is not None:
        normalize_axis(axis, len(x.shape))
    return AbstractValue(x.shape, dtype)


@LOWER.register(OpKind.SORT, OpKind.ARGSORT)
def _lower_sort(node: Node) -> Callable[..., Any]:
    fn = np.sort if node.op is OpKind.SORT else np.argsort
    return functools.partial(fn, **node.params.kwargs())


@VJP.register(OpKind.SORT)
def _vjp_sort(p: Primal, g: Any) -> list[Cotangent]:
    params = cast("SortParams", p.params)
    x = p.args[0]
    axis = params.axis

    def dx() -> Any:
        flat = axis is None
        xs, gs = (np.reshape(x, (-1,)), g) if flat else (x, g)
        ax = 0 if flat else axis % len(xs.shape)
        # the sort's inverse permutation, then g gathered with it (take_along_axis)
        inverse = np.argsort(np.argsort(xs, axis=ax), axis=ax)
        if None in xs.shape:
            raise NotImplementedError("the gradient of sort needs static shapes")
        index = tuple(
            inverse if d == ax else np.arange(n).reshape((n,) + (1,) * (len(xs.shape) - d - 1))
            for d, n in enumerate(xs.shape)
        )
        picked = gs[index]
        return np.reshape(picked, x.shape) if flat else picked

    return [dx]


NOTES.add(OpKind.SORT, "static shapes")

# The whole-graph form. NumPy's sort order: NaNs last, ``-0.0 == 0.0`` (the sort and the
# binary search of searchsorted share it).
NAN_LAST_LT = """\
@_inline
def _lt(a, b):
    return a < b or (b != b and a == a)
"""

# A stable bottom-up merge sort of indices by NumPy's order (NaNs last, ``-0.0 == 0.0``):
# NumPy's own stable sort. Where NumPy's default (unstable) kind may order ties its own way,
# the caller checks that there are none that matter.
_ARGSORT = """\
@_inline
def _argsort_lane(v, idx, tmp):
    n = v.shape[0]
    for i in range(n):
        idx[i] = i
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                if _lt(v[idx[j]], v[idx[i]]):
                    tmp[k] = idx[j]
                    j += 1
                else:
                    tmp[k] = idx[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = idx[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = idx[j]
                j += 1
                k += 1
            lo = hi
        for q in range(n):
            idx[q] = tmp[q]
        width *= 2


@_inline
def _sort_rows(x2, o2, want_index, bits):
    # o2: the sorted values (want_index False) or their indices; returns True where NumPy's
    # result could differ: equal values of different bits (sort: -0.0 and 0.0, two NaNs of
    # different payloads), or any tie (argsort of an unstable kind: ``bits`` None)
    n = x2.shape[1]
    idx = np.empty(n, np.int64)
    tmp = np.empty(n, np.int64)
    for r in range(x2.shape[0]):
        v = x2[r]
        _argsort_lane(v, idx, tmp)
        for i in range(n):
            if i > 0:
                a = v[idx[i - 1]]
                b = v[idx[i]]
                if a == b or (a != a and b != b):
                    if want_index:
                        return True
                    if bits[r, idx[i - 1]] != bits[r, idx[i]]:
                        return True
            if want_index:
                o2[r, i] = idx[i]
            else:
                o2[r, i] = v[idx[i]]
    return False
"""


def _check_sort(node: Node) -> tuple[Node, int | None]:
    params = cast("SortParams", node.params)
    only_params(node, {"axis", "kind"})
    x = array_arg(node, 0, "a value")
    kind = params.kind
    if kind not in (None, "quicksort", "stable", "mergesort", "heapsort"):
        raise Unsupported(f"{node.op.value} kind {kind!r}")
    rank = len(ranked_shape(x))
    axis = params.axis
    if axis is None:
        return x, None
    if rank == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    return x, checked_axis(axis, rank, node.op.value)


def _emit_sort(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """Each lane (the axis moved last, C-ordered) sorted by a stable merge sort. A stable
    ``argsort`` is NumPy's; for ``sort`` and an unstable ``argsort`` the sorted result is
    unique where no tie could come out in another order, which is checked: else it signals.
    """
    params = cast("SortParams", node.params)
    x_node, axis = _check_sort(node)
    rank = len(ranked_shape(x_node))
    x = args[0].name
    dt = np.dtype(x_node.dtype)
    out_dt = ctor(np.dtype(node.dtype))
    if axis is None:
        perm = inv = None
        src = f"{x}.ravel()"
        rank = 1
    else:
        perm = [d for d in range(rank) if d != axis] + [axis]
        inv = [perm.index(d) for d in range(rank)]
        src = f"np.transpose({x}, {tuple(perm)!r})" if perm != list(range(rank)) else x
    c = w.fresh("s")
    out.line(f"{c} = np.ascontiguousarray({src})")
    lanes = " * ".join(f"{c}.shape[{d}]" for d in range(rank - 1)) or "1"
    n = f"{c}.shape[{rank - 1}]"
    x2, o2 = w.fresh("s"), w.fresh("s")
    out.line(f"{x2} = {c}.reshape(({lanes}, {n}))")
    out.line(f"{o2} = np.empty(({lanes}, {n}), {out_dt})")
    stable = params.kind in ("stable", "mergesort")
    want_index = node.op is OpKind.ARGSORT
    w.helpers["_lt"] = NAN_LAST_LT
    w.helpers["_argsort"] = _ARGSORT
    bad = w.fresh("bad")
    if want_index and stable:  # ties in index order: NumPy's stable sort, nothing to check
        w.helpers["_argsort_stable"] = _ARGSORT_STABLE
        out.line(f"{bad} = _sort_rows_stable({x2}, {o2})")
    else:
        # the bits of equal values (a float's bits; an integer's are its value)
        bits = f"{x2}.view(np.uint{8 * dt.itemsize})" if dt.kind == "f" else x2
        out.line(f"{bad} = _sort_rows({x2}, {o2}, {want_index}, {bits})")
    w.signal(out, bad)
    shaped = f"{o2}.reshape({c}.shape)"
    if inv is not None and inv != list(range(rank)):
        shaped = f"np.ascontiguousarray(np.transpose({shaped}, {tuple(inv)!r}))"
    out.line(f"{t} = {shaped}")
    return "fresh"


_ARGSORT_STABLE = """\
@_inline
def _sort_rows_stable(x2, o2):
    n = x2.shape[1]
    idx = np.empty(n, np.int64)
    tmp = np.empty(n, np.int64)
    for r in range(x2.shape[0]):
        _argsort_lane(x2[r], idx, tmp)
        for i in range(n):
            o2[r, i] = idx[i]
    return False
"""

WHOLE_GRAPH.add(OpKind.SORT, Rule(lambda n: _check_sort(n) and None, _emit_sort))
WHOLE_GRAPH.add(OpKind.ARGSORT, Rule(lambda n: _check_sort(n) and None, _emit_sort))


@ONNX.register(OpKind.SORT)
def _onnx_sort(b: GraphBuilder, node: Node) -> list[str]:
    """Sorted values (ties are equal values, so any sort ``kind`` gives the same result) by
    an ascending TopK over the whole axis; NaNs last, as NumPy orders them."""
    params = cast("SortParams", node.params)
    handled_params(node, axis=ANY_VALUE, kind=ANY_VALUE, stable=ANY_VALUE)
    x = node.args[0]
    name, axis = b.value(x), params.axis
    dt = np.dtype(np.int32) if x.dtype == np.bool_ else wide(x.dtype)
    name = b.cast(name, x.dtype, dt)
    if axis is None:
        name, axis = b.one("Reshape", [name, b.ints([-1])]), 0
    axis = int(axis) % max(x.aval.ndim, 1)
    count = b.shape_of(name, axis, axis + 1)
    if dt.kind != "f":
        values = b.add("TopK", [name, count], 2, axis=axis, largest=0, sorted=1)[0]
        return [b.cast(values, dt, x.dtype)]
    nan = b.one("IsNaN", [name])
    finite = b.one("Where", [nan, b.const(np.inf, dt), name])
    values = b.add("TopK", [finite, count], 2, axis=axis, largest=0, sorted=1)[0]
    nans = b.one(
        "ReduceSum", [b.one("Cast", [nan], to=elem_type(np.int64)), b.ints([axis])], keepdims=1
    )
    size = b.one("Squeeze", [count, b.ints([0])])
    position = b.one("Range", [b.const(0, np.int64), size, b.const(1, np.int64)])
    # (a sort is always made with its axis, so the class default never stands in here)
    shape = [1] * x.aval.ndim if params.axis is not None else [1]
    shape[axis] = -1
    position = b.one("Reshape", [position, b.ints(shape)])
    last = b.one("GreaterOrEqual", [position, b.one("Sub", [size, nans])])
    return [b.one("Where", [last, b.const(np.nan, dt), values])]


_STABLE_KINDS = ("stable", "mergesort")


@ONNX.register(OpKind.ARGSORT)
def _onnx_argsort(b: GraphBuilder, node: Node) -> list[str]:
    """A stable argsort: ONNX's TopK breaks ties by the lower index, which is NumPy's
    ``kind="stable"``; NaNs go last in a second stable pass (as NumPy sorts them). NumPy's
    default kind orders ties as its introsort happens to, so only a stable sort is exported."""
    params = cast("SortParams", node.params)
    handled_params(node, axis=ANY_VALUE, kind=ANY_VALUE, stable=ANY_VALUE)
    if not (params.kind in _STABLE_KINDS or params.stable is True):
        raise refuse(
            node,
            "NumPy's default sort kind orders equal values as its introsort "
            "happens to, which no ONNX op reproduces",
            "np.argsort(x, kind='stable') (ties in index order), which ONNX's TopK is",
        )
    x = node.args[0]
    dt = np.dtype(np.int32) if x.dtype == np.bool_ else wide(x.dtype)
    name = b.cast(b.value(x), x.dtype, dt)
    axis = params.axis
    if axis is None:
        name, axis = b.one("Reshape", [name, b.ints([-1])]), 0
    axis = int(axis) % max(x.aval.ndim, 1)
    count = b.shape_of(name, axis, axis + 1)
    if dt.kind != "f":
        return [b.add("TopK", [name, count], 2, axis=axis, largest=0, sorted=1)[1]]
    nan = b.one("IsNaN", [name])
    keys = b.one("Where", [nan, b.const(np.inf, dt), name])
    order = b.add("TopK", [keys, count], 2, axis=axis, largest=0, sorted=1)[1]
    flags = b.one(
        "GatherElements", [b.one("Cast", [nan], to=elem_type(np.int32)), order], axis=axis
    )
    nan_last = b.add("TopK", [flags, count], 2, axis=axis, largest=0, sorted=1)[1]
    return [b.one("GatherElements", [order, nan_last], axis=axis)]


# --- partition, argpartition --------------------------------------------------------------


@implements(np.argpartition)
def _argpartition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect") -> Any:
    if is_traced(kth):
        return numpy_call(np.argpartition, (a, kth), {"axis": axis, "kind": kind})
    return bind(
        OpKind.ARGPARTITION,
        (a,),
        {"kth": static_attr(kth), "kind": kind, "axis": None if axis is None else int(axis)},
    )


@implements(np.partition)
def _partition(a: Any, kth: Any, axis: Any = -1, kind: str = "introselect") -> Any:
    if is_traced(kth):
        return numpy_call(np.partition, (a, kth), {"axis": axis, "kind": kind})
    return bind(
        OpKind.PARTITION,
        (a,),
        {"kth": static_attr(kth), "kind": kind, "axis": None if axis is None else int(axis)},
    )


@ABSTRACT_EVAL.register(OpKind.ARGPARTITION)
def _eval_argpartition(params: PartitionParams, x: AbstractValue) -> AbstractValue:
    out = _sorted(params, x, INTP)
    axis = params.axis  # every maker gives it: the class default never stands in
    n = None if out.shape is None else out.shape[0 if axis is None else axis]
    for k in np.atleast_1d(params.kth).tolist():
        if n and not -n <= k < n:  # NumPy checks no kth along an empty axis
            raise ValueError(f"kth(={k}) out of bounds ({n})")
    return out


@ABSTRACT_EVAL.register(OpKind.PARTITION)
def _eval_partition(params: PartitionParams, x: AbstractValue) -> AbstractValue:
    indices = cast("AbstractValue", ABSTRACT_EVAL[OpKind.ARGPARTITION](params, x))  # one output
    return AbstractValue(indices.shape, x.dtype)


@LOWER.register(OpKind.ARGPARTITION)
def _lower_argpartition(node: Node) -> Callable[..., Any]:
    params = cast("PartitionParams", node.params)
    kth = params.kth
    kw = params.kwargs("kth")
    return lambda x: np.argpartition(x, list(kth) if isinstance(kth, tuple) else kth, **kw)


@LOWER.register(OpKind.PARTITION)
def _lower_partition(node: Node) -> Callable[..., Any]:
    params = cast("PartitionParams", node.params)
    kth = params.kth
    kw = params.kwargs("kth")
    return lambda x: np.partition(x, list(kth) if isinstance(kth, tuple) else kth, **kw)


@VJP.register(OpKind.PARTITION)
def _vjp_partition(p: Primal, g: Any) -> list[Cotangent]:
    """A permutation of ``a`` along the axis: output ``i`` is the input element of the same
    rank (found from the forward result, so NumPy's own arrangement is followed; equal values
    share one rank order)."""
    params = cast("PartitionParams", p.params)
    a = p.args[0]
    axis = params.axis

    def dx() -> Any:
        flat = axis is None
        x = np.reshape(a, (-1,)) if flat else a
        shape = static_shape(x, "np.partition")
        ax = 0 if flat else axis % len(shape)
        forward = cast("Tensor", p.out)  # (the forward result: a partition has one)
        out = forward if not flat else np.reshape(forward, (-1,))
        rank_of_out = np.argsort(np.argsort(out, axis=ax, kind="stable"), axis=ax, kind="stable")
        order = np.argsort(x, axis=ax, kind="stable")
        grid = tuple(
            rank_of_out if d == ax else np.arange(n).reshape((n,) + (1,) * (len(shape) - d - 1))
            for d, n in enumerate(shape)
        )
        back = route_along_axis(order[grid], g, shape, ax)
        return np.reshape(back, a.shape) if flat else back

    return [dx]


NOTES.add(OpKind.PARTITION, "the element of the same rank (ties in stable sort order)")

# --- lexsort ------------------------------------------------------------------------------


@implements(np.lexsort)
def _lexsort(keys: Any, axis: int = -1) -> Any:
    if isinstance(keys, (Tensor, Variable, np.ndarray)):  # one array: its rows are the keys
        return bind(OpKind.LEXSORT, (keys,), {"axis": int(axis), "array": True})
    return bind(OpKind.LEXSORT, tuple(traced_array_arg(k) for k in keys), {"axis": int(axis)})


@ABSTRACT_EVAL.register(OpKind.LEXSORT)
def _eval_lexsort(params: LexsortParams, *keys: AbstractValue) -> AbstractValue:
    """One 2-D (or more) array of keys, or several keys of one shape: indices of that shape
    (a key's shape, without the leading key axis of a single array)."""
    axis = params.axis
    shape: Shape | None
    probe: np.ndarray | list[np.ndarray]
    if params.array:
        shape = known_rank(keys[0], "lexsort")
        if not shape:
            raise TypeError("need sequence of keys with len > 0 in lexsort")
        shape = shape[1:] if len(shape) > 1 else shape  # a 1-D array is one key
        probe = np.ones((1,) * len(cast("Shape", keys[0].shape)), keys[0].dtype)
    else:
        shape = broadcast_shapes(*[k.shape for k in keys])
        if any(k.shape is not None and len(k.shape) != len(shape or ()) for k in keys):
            raise ValueError("all keys need to be the same shape")
        probe = [np.ones((1,) * len(shape or ()), k.dtype) for k in keys]
    out = np.lexsort(probe, axis=axis)
    return AbstractValue(None if shape is None else tuple(shape), out.dtype)


@LOWER.register(OpKind.LEXSORT)
def _lower_lexsort(node: Node) -> Callable[..., Any]:
    params = cast("LexsortParams", node.params)
    axis = params.axis
    if params.array:  # one array whose rows are the keys
        return lambda keys: np.lexsort(keys, axis=axis)
    return lambda *keys: np.lexsort(keys, axis=axis)
