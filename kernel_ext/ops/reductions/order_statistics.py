"""Order statistics: median, nanmedian, percentile, nanpercentile, quantile, nanquantile.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`); the lowering is the
group's (:mod:`.generic`: NumPy's function, ``q``/``method`` keyword attrs). The ONNX
refusals are ``onnx.rules.refusals``'."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.array_rules import static_shape
from ...autodiff.decompositions import composed
from ...autodiff.rules import NOTES, VJP, Cotangent, Primal
from ...backends.emit.literals import Unsupported, ctor
from ...backends.emit.source import Source
from ...backends.static_shapes import ranked_shape
from ...backends.whole_graph_ops.common import (
    DTYPES,
    MIXED_ZEROS,
    Rule,
    Writer,
    array_arg,
    checked_axis,
    only_params,
    shape_tuple,
)
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...ir import Node, OpKind
from ...ir.abstract import (
    ABSTRACT_EVAL,
    AbstractValue,
    KnownShape,
    normalize_axes,
    probe_dtype,
    reduced_shape,
)
from ...ir.abstract import Rule as AbstractRule
from ...ir.params import QuantileParams, ReduceParams
from ...trace.numpy_api.common import implements
from .common import OneOutputRule, quietly
from .entry_points import nan_reduction_handler
from .generic import QUANTILES  # (and the generic rules refined here: registered first)

K = OpKind

# --- median, nanmedian, percentile, nanpercentile, quantile, nanquantile ---

implements(np.median)(nan_reduction_handler(K.MEDIAN))
implements(np.nanmedian)(nan_reduction_handler(K.NANMEDIAN))
for _kind in (K.PERCENTILE, K.NANPERCENTILE, K.QUANTILE, K.NANQUANTILE):
    implements(_kind.numpy_function)(nan_reduction_handler(_kind, q=True, method=True))


def _empty_probe(
    fn: Callable[..., Any], params: ReduceParams | QuantileParams, x: AbstractValue
) -> AbstractValue | None:
    """The exact result type of ``fn`` on a statically empty array, by running it on one
    (no memory): NumPy answers empty input with special cases a 1-element probe cannot see
    (``nanquantile`` of an empty array is ``nanmean``'s: ``q``'s dimensions are dropped)."""
    if x.shape is None or None in x.shape or math.prod(cast("KnownShape", x.shape)) != 0:
        return None
    # (a quantile's ``q`` is always given: NumPy's second positional argument)
    args = (params.q,) if isinstance(params, QuantileParams) else ()
    kwargs = params.kwargs("q")
    with np.errstate(all="ignore"):
        out = np.asarray(fn(np.zeros(x.shape, x.dtype), *args, **kwargs))
    return AbstractValue(out.shape, out.dtype)


def _quantile_rule(kind: OpKind) -> AbstractRule:
    """percentile/quantile (and nan*): ``q``'s shape, then the reduced shape."""
    fn = kind.numpy_function

    def rule(params: QuantileParams, x: AbstractValue) -> AbstractValue:
        empty = _empty_probe(fn, params, x)
        if empty is not None:
            return empty
        q, axis, keepdims = params.q, params.axis, params.keepdims
        extra = params.kwargs("q", "axis", "keepdims")
        dtype = probe_dtype(
            lambda a: fn(
                a, q, axis=axis if x.ndim is not None else None, keepdims=keepdims, **extra
            ),
            x,
        )
        return AbstractValue(
            np.shape(q) + reduced_shape(x.shape, axis, keepdims) if x.shape is not None else None,
            dtype,
        )

    return rule


for _kind in QUANTILES:
    ABSTRACT_EVAL.add(_kind, quietly(_quantile_rule(_kind)))


def _median_rule(kind: OpKind) -> AbstractRule:
    # (the generic reduction rule, registered by :mod:`.generic`: one output)
    generic = cast("OneOutputRule", ABSTRACT_EVAL[kind])
    fn = kind.numpy_function

    def rule(params: ReduceParams, x: AbstractValue) -> AbstractValue:
        return _empty_probe(fn, params, x) or generic(params, x)

    return rule


for _kind in (K.MEDIAN, K.NANMEDIAN):
    # the generic rule, refined; NumPy's warnings silenced
    ABSTRACT_EVAL.replace(_kind, quietly(_median_rule(_kind)))


def _quantiles(a: Any, q: Any, axis: Any, keepdims: bool, nan: bool, scalar: bool) -> Any:
    """NumPy's ``method='linear'`` quantiles ``q`` (fractions in [0, 1]) of ``a`` over
    ``axis``: sort (NaNs last), then interpolate between the order statistics at
    ``q * (count - 1)``; ``count`` is the number of non-NaN values for the nan functions."""
    ndim = len(a.shape)
    axes = normalize_axes(axis, ndim)
    kept = [d for d in range(ndim) if d not in axes]
    lead = tuple(a.shape[d] for d in kept)
    rows = math.prod(lead)
    flat = np.reshape(np.transpose(a, kept + list(axes)), (rows, -1))
    ordered = np.sort(flat, axis=-1)
    qs = np.reshape(np.asarray(q, np.float64), (-1,))
    if nan:
        count = np.sum(~np.isnan(flat), axis=-1, keepdims=True)
        pos = qs * (count - 1).astype(np.float64)  # (rows, Q), traced
        low = np.floor(pos).astype(np.intp)
        high = np.minimum(low + 1, count - 1)
        frac = pos - low
        row = np.arange(rows)[:, None]
        value = ordered[row, low] * (1.0 - frac) + ordered[row, high] * frac
    else:
        n = math.prod(a.shape[d] for d in axes)
        pos = qs * (n - 1)
        low = np.floor(pos).astype(np.intp)
        high = np.minimum(low + 1, n - 1)
        frac = pos - low
        value = ordered[:, low] * (1.0 - frac) + ordered[:, high] * frac
    # NumPy's layout: q's axes first, then the kept axes (reduced ones as 1 with keepdims)
    value = np.transpose(value)  # (Q, rows)
    tail = tuple(1 if d in axes else a.shape[d] for d in range(ndim)) if keepdims else lead
    return np.reshape(value, tail if scalar else tuple(np.shape(q)) + tail)


_QUANTILE_OPS = {
    K.PERCENTILE: (100.0, False),
    K.NANPERCENTILE: (100.0, True),
    K.QUANTILE: (1.0, False),
    K.NANQUANTILE: (1.0, True),
    K.NANMEDIAN: (None, True),
}


@VJP.register(*_QUANTILE_OPS)
def _quantile(p: Primal, g: Any) -> list[Cotangent]:
    scale, nan = _QUANTILE_OPS[p.node.op]
    # (nanmedian's parameters have no method: it is the linear 0.5-quantile)
    params = cast("ReduceParams | QuantileParams", p.params)
    method = params.method if isinstance(params, QuantileParams) else "linear"
    if method != "linear":
        raise NotImplementedError(
            f"the gradient of np.{p.node.op.value} with method="
            f"{method!r} is not implemented (only 'linear', the default)"
        )
    static_shape(p.args[0], f"np.{p.node.op.value}")
    q = 0.5 if scale is None else np.asarray(cast("QuantileParams", params).q, np.float64) / scale
    axis, keepdims = params.axis, bool(params.keepdims)
    return composed(p, g, lambda a: _quantiles(a, q, axis, keepdims, nan, np.ndim(q) == 0))


def _median_by_sorting(a: Any, axis: Any, keepdims: bool) -> Any:
    """``np.median``: the mean of the middle element(s) of the sorted values over ``axis``."""
    ndim = len(a.shape)
    axes = normalize_axes(axis, ndim)
    kept = [d for d in range(ndim) if d not in axes]
    moved = np.transpose(a, kept + list(axes))
    lead = tuple(a.shape[d] for d in kept)
    flat = np.reshape(moved, lead + (-1,))
    count = math.prod(a.shape[d] for d in axes)
    ordered = np.sort(flat, axis=-1)
    half = count // 2
    middle = (
        ordered[..., half] if count % 2 else 0.5 * (ordered[..., half - 1] + ordered[..., half])
    )
    if keepdims:
        middle = np.reshape(middle, tuple(1 if d in axes else a.shape[d] for d in range(ndim)))
    return middle


@VJP.register(K.MEDIAN)
def _median(p: Primal, g: Any) -> list[Cotangent]:
    x = p.args[0]
    if x.shape is None or None in x.shape:
        raise NotImplementedError("the gradient of np.median needs static shapes")
    params = cast("ReduceParams", p.params)
    axis, keepdims = params.axis, bool(params.keepdims)
    return composed(p, g, lambda a: _median_by_sorting(a, axis, keepdims))


NOTES.add(K.MEDIAN, "the middle element(s) of a stable sort")
NOTES.add(K.PERCENTILE, "method='linear': a sort and a lerp")
NOTES.add(K.NANPERCENTILE, "as percentile; NaNs get none")
NOTES.add(K.QUANTILE, "method='linear': a sort and a lerp")
NOTES.add(K.NANQUANTILE, "as quantile; NaNs get none")
NOTES.add(K.NANMEDIAN, "as nanquantile(0.5)")


# ``np.median``: NumPy's ``mean`` of the one or two middle values — their sum in the sum's
# dtype (the input's for floats, float64 for integers) as NumPy's add reduction makes it
# (from +0.0: ``0.0 + (a + b)``, so a zero median is +0.0 whichever zeros were picked),
# divided in float64 by the intp count, cast to the result's dtype.
_MEDIAN_ROWS = """\
@_inline
def _median_rows_{c}(y2, out):
    n = y2.shape[1]
    for r in range(y2.shape[0]):
        s = np.sort(y2[r])
        if s[n - 1] != s[n - 1]:
            return True
        if n % 2 == 1:
            total = {acc}(0) + {acc}(s[n // 2])
            count = np.float64(1)
        else:
            total = {acc}(0) + ({acc}(s[n // 2 - 1]) + {acc}(s[n // 2]))
            count = np.float64(2)
        out[r] = {out}(np.float64(total) / count)
    return False
"""


# ``np.quantile(..., method="linear")`` of float64 lanes: NumPy's ``_quantile`` — the
# virtual index ``(n - 1) * q``, its neighbours (both the last value at or above ``n - 1``),
# ``gamma = index - previous`` and ``_lerp``: ``a + (b - a) * gamma``, or
# ``b - (b - a) * (1 - gamma)`` where ``gamma >= 0.5``.
_QUANTILE_ROWS = """\
@_inline
def _quantile_rows(y2, q, out):
    n = y2.shape[1]
    for r in range(y2.shape[0]):
        s = np.sort(y2[r])
        if s[n - 1] != s[n - 1]:
            return True
        mixed = _mixed_zeros(s)
        for i in range(q.shape[0]):
            vi = np.float64(n - 1) * q[i]
            if vi >= n - 1:
                p = n - 1
                g = vi - np.float64(-1)
                nx = n - 1
            elif vi < 0:
                p = 0
                g = vi
                nx = 0
            else:
                p = int(np.floor(vi))
                g = vi - np.float64(p)
                nx = p + 1
            a = s[p]
            b = s[nx]
            if mixed and (a == 0 or b == 0):
                return True
            d = b - a
            v = a + d * g
            if g >= 0.5:
                v = b - d * (1.0 - g)
            out[i, r] = v
    return False
"""


def _check_order_stat(node: Node) -> tuple[Node, int | None, np.ndarray | None]:
    """The reduced array, its axis (None: all) and the quantiles as fractions (float64;
    None for ``median``), or Unsupported."""
    x = array_arg(node, 0, "a value")
    rank = len(ranked_shape(x))
    if node.op is OpKind.MEDIAN:
        only_params(node, {"axis", "keepdims"})
        q = None
        if np.dtype(x.dtype).kind not in "iuf":
            raise Unsupported(f"median of {x.dtype}")
    else:
        only_params(node, {"axis", "keepdims", "q"})
        if np.dtype(x.dtype) != np.float64:
            raise Unsupported(
                f"{node.op.value} of {x.dtype} (float64 only: NumPy's "
                "promotion of the weights differs for others)"
            )
        raw = np.asarray(cast("QuantileParams", node.params).q)
        if raw.dtype.kind not in "iuf" or raw.ndim > 1:
            raise Unsupported(f"{node.op.value} with q of {raw.dtype} and rank {raw.ndim}")
        if node.op is OpKind.PERCENTILE:
            q = np.true_divide(raw, 100)  # NumPy's own conversion
        elif raw.dtype.kind != "f":
            raise Unsupported("quantile with integer q (NumPy takes, not interpolates)")
        else:
            q = raw
        q = np.asarray(q, np.float64)
        if np.isnan(q).any() or (q < 0).any() or (q > 1).any():
            raise Unsupported(f"{node.op.value} q out of range (NumPy's ValueError)")
    if np.dtype(node.dtype) not in DTYPES:
        raise Unsupported(f"{node.op.value} to {node.dtype}")
    if rank == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    axis = cast("ReduceParams | QuantileParams", node.params).axis
    if isinstance(axis, (tuple, list)):
        if len(axis) != 1:
            raise Unsupported(f"{node.op.value} over several axes")
        axis = axis[0]
    return x, None if axis is None else checked_axis(axis, rank, node.op.value), q


def _emit_order_stat(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """Lanes along the axis (moved last, C-ordered), each sorted, then NumPy's formula; an
    empty lane (NumPy's warning and NaN) signals, as do the cases of :data:`MIXED_ZEROS`."""
    x_node, axis, q = _check_order_stat(node)
    rank = len(ranked_shape(x_node))
    x = args[0].name
    dt = np.dtype(x_node.dtype)
    out_dt = np.dtype(node.dtype)
    if axis is None:
        src, kept = f"{x}.ravel()", []
        y = w.fresh("y")
        out.line(f"{y} = np.ascontiguousarray({x}).ravel()")
        lanes, n = "1", f"{y}.shape[0]"
    else:
        kept = [d for d in range(rank) if d != axis]
        perm = kept + [axis]
        src = x if perm == list(range(rank)) else f"np.transpose({x}, {tuple(perm)!r})"
        y = w.fresh("y")
        out.line(f"{y} = np.ascontiguousarray({src})")
        lanes = " * ".join(f"{x}.shape[{d}]" for d in kept) or "1"
        n = f"{x}.shape[{axis}]"
    w.signal(out, f"{n} == 0")
    y2, o = w.fresh("y"), w.fresh("o")
    out.line(f"{y2} = {y}.reshape(({lanes}, {n}))")
    w.helpers["_mixed_zeros"] = MIXED_ZEROS
    if q is None:
        acc = ctor(dt) if dt.kind == "f" else "np.float64"
        name = f"_median_rows_{dt.char}"
        w.helpers[name] = _MEDIAN_ROWS.format(c=dt.char, acc=acc, out=ctor(out_dt))
        out.line(f"{o} = np.empty({lanes}, {ctor(out_dt)})")
        w.signal(out, f"{name}({y2}, {o})")
        qdims: list[str] = []
    else:
        qc = f"c{len(w.constants)}"
        w.constants.append(np.ascontiguousarray(q.ravel()))
        w.helpers["_quantile_rows"] = _QUANTILE_ROWS
        out.line(f"{o} = np.empty(({q.size}, {lanes}), np.float64)")
        w.signal(out, f"_quantile_rows({y2}, {qc}, {o})")
        qdims = [str(s) for s in q.shape]
    keep = bool(cast("ReduceParams | QuantileParams", node.params).keepdims)
    dims = qdims + [
        ("1" if d == axis or axis is None else f"{x}.shape[{d}]")
        for d in range(rank)
        if keep or (axis is not None and d != axis)
    ]
    if not dims:
        out.line(f"{t} = {o}.ravel()[0]")
        return "scalar"
    out.line(f"{t} = {o}.reshape({shape_tuple(dims)})")
    return "fresh"


for _kind in (K.MEDIAN, K.PERCENTILE, K.QUANTILE):
    WHOLE_GRAPH.add(_kind, Rule(lambda n: _check_order_stat(n) and None, _emit_order_stat))
