"""Bins and lookup: searchsorted, digitize, histogram and interp.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.rules import NOTES
from ...backends.emit.literals import Unsupported, const_source, ctor
from ...backends.emit.source import Source
from ...backends.static_shapes import ranked_shape
from ...backends.whole_graph_ops.common import (
    DTYPES,
    Rule,
    Writer,
    array_arg,
    only_params,
    shape_tuple,
)
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...ir import LOWER, Node, OpKind
from ...ir.abstract.core import ABSTRACT_EVAL, AbstractValue, Shape, probe_dtype, shape_of
from ...ir.params import DigitizeParams, HistogramParams, NoParams, SearchsortedParams
from ...trace.context import bind
from ...trace.numpy_api.common import bind_outputs, implements, is_traced, static_attr
from ...trace.opaque import numpy_call
from .sort import NAN_LAST_LT

# --- searchsorted, digitize ---------------------------------------------------------------


@implements(np.searchsorted)
def _searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got '{side}')")
    return bind(OpKind.SEARCHSORTED, (a, v, sorter), {"side": side})


@implements(np.digitize)
def _digitize(x: Any, bins: Any, right: bool = False) -> Any:
    return bind(OpKind.DIGITIZE, (x, bins), {"right": bool(right)})


@ABSTRACT_EVAL.register(OpKind.SEARCHSORTED)
def _eval_searchsorted(
    params: SearchsortedParams, a: AbstractValue, v: Any, sorter: Any
) -> AbstractValue:
    side: Any = params.side  # (NumPy's stubs take a literal; NumPy checks the value)
    dtype = probe_dtype(
        lambda x, y, s: np.searchsorted(x, y, side, None if s is None else np.zeros_like(s)),
        a,
        v,
        sorter,
    )
    return AbstractValue(shape_of(v), dtype)


@ABSTRACT_EVAL.register(OpKind.DIGITIZE)
def _eval_digitize(params: DigitizeParams, x: Any, bins: AbstractValue) -> AbstractValue:
    right = params.right
    dtype = probe_dtype(lambda a, b: np.digitize(a, b, right), x, bins)
    return AbstractValue(shape_of(x), dtype)


@LOWER.register(OpKind.SEARCHSORTED)
def _lower_searchsorted(node: Node) -> Callable[..., Any]:
    params = cast("SearchsortedParams", node.params)
    side: Any = params.side  # (NumPy's stubs take a literal; NumPy checks the value)
    return lambda a, v, sorter: np.searchsorted(a, v, side, sorter)


@LOWER.register(OpKind.DIGITIZE)
def _lower_digitize(node: Node) -> Callable[..., Any]:
    params = cast("DigitizeParams", node.params)
    right = params.right
    return lambda x, bins: np.digitize(x, bins, right)


# NumPy's binary search (``npysort/binsearch.cpp``) step for step, so that even an unsorted
# ``a`` gives NumPy's answer: each key narrows from where the previous one ended (the bounds
# reset when the keys go down), comparing with NumPy's order (NaNs last). ``right``: the
# comparison is ``a <= key`` instead of ``a < key``.
_SEARCHSORTED = """\
@_inline
def _ss_cmp(a, b, right):
    if right:
        return not _lt(b, a)
    return _lt(a, b)


@_inline
def _searchsorted(arr, keys, out, right):
    n = arr.shape[0]
    if keys.shape[0] == 0:
        return
    lo = 0
    hi = n
    last = keys[0]
    for i in range(keys.shape[0]):
        key = keys[i]
        if _ss_cmp(last, key, right):
            hi = n
        else:
            lo = 0
            hi = hi + 1 if hi < n else n
        last = key
        while lo < hi:
            mid = lo + ((hi - lo) >> 1)
            if _ss_cmp(arr[mid], key, right):
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo
"""

# NumPy's ``_monotonicity`` of digitize's bins (as float64): 1 increasing, -1 decreasing,
# 0 neither (NumPy's ValueError). Comparisons with a NaN are false, so a NaN second value
# makes the bins "decreasing", as in NumPy.
_MONOTONICITY = """\
@_inline
def _monotonicity(a):
    n = a.shape[0]
    if n == 0:
        return 1
    last = a[0]
    i = 1
    while i < n and a[i] == last:
        i += 1
    if i == n:
        return 1
    nxt = a[i]
    if last < nxt:
        for k in range(i + 1, n):
            last = nxt
            nxt = a[k]
            if last > nxt:
                return 0
        return 1
    for k in range(i + 1, n):  # anything else (a NaN after the first value too)
        last = nxt
        nxt = a[k]
        if last < nxt:
            return 0
    return -1
"""


def _check_search(node: Node) -> tuple[Node, Node, np.dtype]:
    """The sorted array, the keys and the dtype NumPy compares them in."""
    if node.op is OpKind.SEARCHSORTED:
        only_params(node, {"side"})
        if len(node.args) > 2 and node.args[2] is not None:
            raise Unsupported("searchsorted with a sorter")
        a, v = array_arg(node, 0, "a sorted array"), array_arg(node, 1, "keys")
    else:
        only_params(node, {"right"})
        v, a = array_arg(node, 0, "values"), array_arg(node, 1, "bins")
    if len(ranked_shape(a)) != 1:
        raise Unsupported(f"{node.op.value} into an array of rank {len(ranked_shape(a))}")
    common = np.result_type(a.dtype, v.dtype)
    if common not in DTYPES or common.kind == "b":
        raise Unsupported(f"{node.op.value} of {a.dtype} and {v.dtype}")
    if np.dtype(node.dtype) != np.dtype(np.intp):
        raise Unsupported(f"{node.op.value} into {node.dtype}")
    return a, v, common


def _emit_search(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """NumPy's binary search of each key (C order) in the common dtype of the two arrays.
    ``digitize``: NumPy's composition — the bins' monotonicity (non-monotonic bins signal
    NumPy's ValueError), then searchsorted with the other side, reversed for decreasing
    bins."""
    a_node, v_node, common = _check_search(node)
    ai, vi = (0, 1) if node.op is OpKind.SEARCHSORTED else (1, 0)
    cts = ctor(common)
    a, v = w.fresh("sa"), w.fresh("sv")
    cast_a = "" if np.dtype(a_node.dtype) == common else f".astype({cts})"
    cast_v = "" if np.dtype(v_node.dtype) == common else f".astype({cts})"
    out.line(f"{a} = {args[ai].name}{cast_a}")
    rank = len(ranked_shape(v_node))
    src = args[vi].name
    if rank == 0:
        out.line(f"{v} = np.full(1, {src}, {cts})")
    else:
        out.line(f"{v} = np.ascontiguousarray({src}{cast_v}).ravel()")
    w.helpers["_lt"] = NAN_LAST_LT
    w.helpers["_searchsorted"] = _SEARCHSORTED
    o = w.fresh("so")
    out.line(f"{o} = np.empty({v}.shape[0], np.int64)")
    if node.op is OpKind.SEARCHSORTED:
        right = cast("SearchsortedParams", node.params).side == "right"
        out.line(f"_searchsorted({a}, {v}, {o}, {right})")
    else:
        w.helpers["_monotonicity"] = _MONOTONICITY
        mono = w.fresh("mono")
        out.line(f"{mono} = _monotonicity({args[ai].name}.astype(np.float64))")
        w.signal(out, f"{mono} == 0")
        right = not cast("DigitizeParams", node.params).right  # NumPy swaps the side
        with out.block(f"if {mono} == -1:") as body:
            body.line(f"_searchsorted({a}[::-1], {v}, {o}, {right})")
            body.line(f"{o} = {a}.shape[0] - {o}")
        with out.block("else:") as body:
            body.line(f"_searchsorted({a}, {v}, {o}, {right})")
    if rank == 0:
        out.line(f"{t} = {o}[0]")
        return "scalar"
    shape = shape_tuple([f"{args[vi].name}.shape[{d}]" for d in range(rank)])
    out.line(f"{t} = {o}.reshape({shape})")
    return "fresh"


WHOLE_GRAPH.add(OpKind.SEARCHSORTED, Rule(lambda n: _check_search(n) and None, _emit_search))
WHOLE_GRAPH.add(OpKind.DIGITIZE, Rule(lambda n: _check_search(n) and None, _emit_search))

# --- histogram ----------------------------------------------------------------------------


@implements(np.histogram)
def _histogram(
    a: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None
) -> Any:
    if is_traced(range) or is_traced(density):
        return numpy_call(
            np.histogram,
            (a,),
            {"bins": bins, "range": range, "density": density, "weights": weights},
        )
    attrs: dict[str, Any] = {"range": static_attr(range), "density": density}
    if isinstance(bins, (str, int, np.integer)) and not isinstance(bins, bool):
        if not isinstance(bins, str) and bins < 1:
            raise ValueError("`bins` must be positive, when an integer")
        attrs["bins"] = bins if isinstance(bins, str) else int(bins)
        bins = None
    return tuple(bind_outputs(OpKind.HISTOGRAM, (a, bins, weights), attrs, "histogram"))


@ABSTRACT_EVAL.register(OpKind.HISTOGRAM)
def _eval_histogram(
    params: HistogramParams, a: AbstractValue, bins: Any, weights: Any
) -> tuple[AbstractValue, ...]:
    static_bins: Any = params.bins  # a bin count, a method name, or None
    if isinstance(bins, AbstractValue):
        if bins.ndim != 1:
            raise ValueError("`bins` must be 1d, when an array")
        edges = cast("Shape", bins.shape)[0]  # 1-D (checked above)
        probe_bins: Any = np.arange(2, dtype=bins.dtype)
    elif isinstance(static_bins, str):
        edges, probe_bins = None, static_bins  # the data choose the number of bins
    else:
        edges, probe_bins = static_bins + 1, static_bins
    with np.errstate(all="ignore"):
        hist, bin_edges = np.histogram(
            np.ones(1, a.dtype),
            bins=probe_bins,
            range=params.range,
            density=params.density,
            weights=None if weights is None else np.ones(1, weights.dtype),
        )
    n = None if edges is None else edges - 1
    return (AbstractValue((n,), hist.dtype), AbstractValue((edges,), bin_edges.dtype))


@LOWER.register(OpKind.HISTOGRAM)
def _lower_histogram(node: Node) -> Callable[..., Any]:
    params = cast("HistogramParams", node.params)
    static_bins: Any = params.bins
    kw = params.kwargs("bins")

    def histogram(a: Any, bins: Any, weights: Any) -> tuple[Any, ...]:
        return np.histogram(a, bins=static_bins if bins is None else bins, weights=weights, **kw)

    return histogram


# no VJP rule: autodiff.backward's NO_GRADIENT_REASONS says why
NOTES.add(OpKind.HISTOGRAM, "counts are piecewise constant in a; weights and bin edges not yet")

# ``np.histogram`` with a number of bins and a static range, of float64 values: NumPy's fast
# path for equal bins — values outside the range dropped, the index
# ``int((x - first) / denom * bins)`` corrected by one against the edges (the last bin holds
# its right edge), counted. The edges are NumPy's own, computed once when compiling.
_HISTOGRAM = """\
@_inline
def _histogram(a, edges, first, last, denom, nbins, counts):
    for x in a:
        if not (x >= first and x <= last):
            continue
        k = int(((x - first) / denom) * nbins)
        if k == nbins:
            k -= 1
        if x < edges[k]:
            k -= 1
        if x >= edges[k + 1] and k != nbins - 1:
            k += 1
        counts[k] += 1
"""


def _histogram_range(node: Node) -> tuple[float, float, float, np.ndarray]:
    """``(first, last, denom, edges)`` as NumPy's histogram computes them from the static
    range (``denom``: NumPy's ``_unsigned_subtract(last, first)`` as a float64)."""
    params = cast("HistogramParams", node.params)
    only_params(node, {"bins", "range", "density"})
    a = array_arg(node, 0, "an array")
    if np.dtype(a.dtype) != np.float64:
        raise Unsupported(f"histogram of {a.dtype} (float64 only)")
    if any(v is not None for v in node.args[1:]):
        raise Unsupported("histogram with bin edges or weights")
    bins, rng = params.bins, params.range
    if not isinstance(bins, int) or isinstance(bins, bool) or bins < 1:
        raise Unsupported(f"histogram with bins={bins!r} (a number of bins only)")
    if params.density:
        raise Unsupported("histogram with density")
    if rng is None or len(rng) != 2 or any(type(v) not in (int, float, np.float64) for v in rng):
        raise Unsupported(f"histogram with range={rng!r} (a static range of Python numbers)")
    first, last = rng
    try:
        edges = np.histogram_bin_edges(np.empty(0, np.float64), bins, (first, last))
    except ValueError as e:
        raise Unsupported(f"histogram range {rng!r} ({e})") from None
    if first == last:  # NumPy widens an empty range by 0.5 on each side
        first, last = first - 0.5, last + 0.5
    dt = np.result_type(last, first)
    if dt.kind == "i":
        denom = float(
            np.subtract(
                np.asarray(last, dt),
                np.asarray(first, dt),
                casting="unsafe",
                dtype=np.dtype(f"u{dt.itemsize}"),
            )
        )
    else:
        denom = float(np.subtract(last, first, dtype=dt))
    return float(first), float(last), denom, edges


def _emit_histogram(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    params = cast("HistogramParams", node.params)
    first, last, denom, edges = _histogram_range(node)
    nbins = int(params.bins)
    ec = f"c{len(w.constants)}"
    w.constants.append(edges)
    w.helpers["_histogram"] = _HISTOGRAM
    counts = w.fresh("h")
    f64 = np.dtype(np.float64)
    out.line(f"{counts} = np.zeros({nbins}, np.int64)")
    out.line(
        f"_histogram(np.ascontiguousarray({args[0].name}).ravel(), {ec}, "
        f"{const_source(first, f64)}, {const_source(last, f64)}, "
        f"{const_source(denom, f64)}, {nbins}, {counts})"
    )
    out.line(f"{t} = ({counts}, {ec}.copy())")
    return "fresh"


WHOLE_GRAPH.add(OpKind.HISTOGRAM, Rule(lambda n: _histogram_range(n) and None, _emit_histogram))

# --- interp -------------------------------------------------------------------------------


@implements(np.interp)
def _interp(
    x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None
) -> Any:
    return bind(OpKind.INTERP, (x, xp, fp, left, right, period))


@ABSTRACT_EVAL.register(OpKind.INTERP)
def _eval_interp(
    params: NoParams,
    x: Any,
    xp: AbstractValue,
    fp: AbstractValue,
    left: Any,
    right: Any,
    period: Any,
) -> AbstractValue:
    for name, v in (("xp", xp), ("fp", fp)):
        if isinstance(v, AbstractValue) and v.ndim not in (None, 1):
            raise ValueError(f"object too deep for desired array ({name} must be 1-D)")
    xp_shape, fp_shape = shape_of(xp), shape_of(fp)
    n_xp = xp_shape[0] if xp_shape else None
    n_fp = fp_shape[0] if fp_shape else None
    if n_xp is not None and n_fp is not None and n_xp != n_fp:
        raise ValueError("fp and xp are not of the same length.")
    dtype = probe_dtype(np.interp, x, xp, fp, left, right, period)
    return AbstractValue(shape_of(x), dtype)


@LOWER.register(OpKind.INTERP)
def _lower_interp(node: Node) -> Callable[..., Any]:
    return np.interp


# ``np.interp`` (``compiled_base.c``'s ``arr_interp``) on float64 values: for sorted ``xp``
# the interval ``j`` with ``xp[j] <= x < xp[j + 1]`` is unique, so any search finds NumPy's;
# then NumPy's formula: the slope ``(fp[j+1] - fp[j]) / (xp[j+1] - xp[j])`` times
# ``x - xp[j]`` plus ``fp[j]``, retried from the right end on a NaN. An unsorted (or NaN)
# ``xp`` is searched NumPy's own way with its guesses: those calls signal.
_INTERP = """\
@_inline
def _interp(x, xp, fp, out):
    m = xp.shape[0]
    for i in range(m - 1):
        if not xp[i] <= xp[i + 1]:
            return True
    lval = fp[0]
    rval = fp[m - 1]
    for i in range(x.shape[0]):
        v = x[i]
        if m == 1:  # (NumPy checks no NaN here)
            out[i] = lval if v < xp[0] else (rval if v > xp[0] else fp[0])
            continue
        if v != v:
            out[i] = v
            continue
        if v > xp[m - 1]:
            out[i] = rval
            continue
        if v < xp[0]:
            out[i] = lval
            continue
        lo = 0
        hi = m
        while lo < hi:
            mid = lo + ((hi - lo) >> 1)
            if v >= xp[mid]:
                lo = mid + 1
            else:
                hi = mid
        j = lo - 1
        if j == m - 1 or xp[j] == v:
            out[i] = fp[j]
            continue
        slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
        r = slope * (v - xp[j]) + fp[j]
        if r != r:
            r = slope * (v - xp[j + 1]) + fp[j + 1]
            if r != r and fp[j] == fp[j + 1]:
                r = fp[j]
        out[i] = r
    return False
"""


def _check_interp(node: Node) -> None:
    only_params(node, set())
    if any(a is not None for a in node.args[3:]):
        raise Unsupported("interp with left, right or period")
    for i, what in enumerate(("x", "xp", "fp")):
        a = array_arg(node, i, what)
        if i and len(ranked_shape(a)) != 1:
            raise Unsupported(f"interp with a {len(ranked_shape(a))}-D {what}")
    if np.dtype(node.dtype) != np.float64:
        raise Unsupported(f"interp into {node.dtype}")


def _emit_interp(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """The three arrays as float64 (NumPy's conversion); lengths of ``xp`` and ``fp`` that
    differ, or an empty ``xp`` (NumPy's ValueError), signal."""
    _check_interp(node)
    x, xp, fp = (w.fresh("ip") for _ in range(3))
    rank = len(node.args[0].aval.shape)
    for v, a in zip((x, xp, fp), args):
        if v == x and rank == 0:
            out.line(f"{v} = np.full(1, np.float64({a.name}), np.float64)")
        else:
            out.line(f"{v} = np.ascontiguousarray({a.name}).ravel().astype(np.float64)")
    w.signal(out, f"{xp}.shape[0] != {fp}.shape[0] or {xp}.shape[0] == 0")
    o = w.fresh("ip")
    out.line(f"{o} = np.empty({x}.shape[0], np.float64)")
    w.helpers["_interp"] = _INTERP
    w.signal(out, f"_interp({x}, {xp}, {fp}, {o})")
    if rank == 0:
        out.line(f"{t} = {o}[0]")
        return "scalar"
    shape = shape_tuple([f"{args[0].name}.shape[{d}]" for d in range(rank)])
    out.line(f"{t} = {o}.reshape({shape})")
    return "fresh"


WHOLE_GRAPH.add(OpKind.INTERP, Rule(_check_interp, _emit_interp))
