"""VJP rules built by composition, and the helpers other rules share (``outputs``,
``route_along_axis``).

The matrix decompositions' rules are in :mod:`kernel_ext.ops.linalg.factorisations`, with
every other rule of those ops.

**Composition rules** (:func:`composed`): an op whose derivative is that of a composition of
ops with rules (``lstsq`` is ``pinv(a) @ b``, ``median`` a sort and a mean of the middle
elements, ``np.pad``'s statistic modes a concatenation of reductions of edge slices) gets
its cotangents by recording that composition in the current trace and running the backward
pass over it: the recomputed values need not be NumPy's bits, only its derivative.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ..ir import Node, OpKind
from ..ir.abstract import normalize_axes
from ..trace import Tensor, bind
from .backward import backward, recording_trace
from .rules import NOTES, Cotangent, Primal, reverse_cumsum, rule

K = OpKind


# -- helpers ------------------------------------------------------------------------------------


def outputs(p: Primal) -> list[Any]:
    """The traced results of a multi-result node (``get_output`` each: CSE merges them with
    the forward pass's own)."""
    owner = next((a.context for a in p.args if isinstance(a, Tensor)), recording_trace())
    node = owner.tensor(p.node)
    count = len(cast("tuple", p.node.aval))  # (a tuple of avals, one per result)
    return [bind(K.GET_OUTPUT, (node,), {"index": i}) for i in range(count)]


# -- composition --------------------------------------------------------------------------------


def composed(p: Primal, g: Any, fn: Callable[..., Any]) -> list[Cotangent]:
    """The cotangents of ``p``'s arguments through ``fn``, a composition of ops with rules
    that computes the same function (or the same results, for a multi-result node: ``g`` a
    list). ``fn`` is recorded in the current trace and differentiated there."""
    ctx = recording_trace()
    start = len(ctx.graph.nodes)
    lifted = [ctx.tensor(ctx.lift(a)) if isinstance(a, Tensor) else a for a in p.args]
    result = fn(*lifted)
    made = set(ctx.graph.nodes[start:])
    pairs = zip(result, g) if isinstance(g, (list, tuple)) else [(result, g)]
    targets = [(ctx.lift(r), ct) for r, ct in pairs if ct is not None and isinstance(r, Tensor)]
    sources: list[Node | None] = []
    for t in lifted:
        node = t.node if isinstance(t, Tensor) else None
        sources.append(None if node in sources else node)  # an operand given twice: once
    found = backward(ctx, targets, made.__contains__, [s for s in sources if s is not None])
    return [None if s is None else found.get(s) for s in sources]


# -- pad, order statistics, scans ---------------------------------------------------------------

_COPY_MODES = ("edge", "wrap", "reflect", "symmetric")


def _axis_pairs(value: Any, ndim: int) -> np.ndarray:
    """A pad option (``stat_length``, ``end_values``, ...) as one (before, after) pair per axis,
    as ``np.pad`` reads it."""
    return np.broadcast_to(np.asarray(value, dtype=object), (ndim, 2))


@rule(K.PAD)
def _pad(p: Primal, g: Any) -> list[Cotangent]:
    """Every mode. ``constant``: the middle of ``g``. The copying modes (``edge``, ``wrap``,
    ``reflect``/``symmetric`` even): each element gets the sum of the output positions that
    copy it (the pad of an iota array names them; a bincount sums). The other linear modes
    (``linear_ramp``, ``mean``, odd reflections): NumPy pads one axis after the other with a
    fixed linear map along that axis, so the cotangent applies each map's transpose (found by
    padding an identity matrix). ``maximum``/``minimum``/``median``: by composition (ties: the
    first occurrence; median: the middle element(s) of a stable sort)."""
    x = p.args[0]
    widths = [tuple(w) for w in p.attrs["pad_width"]]
    mode = p.attrs.get("mode", "constant")
    options = {k: v for k, v in p.node.params.items() if k not in ("pad_width", "mode")}
    if mode in ("constant", "empty"):
        return [
            lambda: g[tuple(slice(before, -after if after else None) for before, after in widths)]
        ]
    shape = x.shape
    if None in shape:
        raise NotImplementedError(f"the gradient of np.pad(mode={mode!r}) needs static shapes")
    odd = options.get("reflect_type", "even") == "odd"
    if mode in _COPY_MODES and not odd:

        def gather() -> Any:
            size = math.prod(shape)
            iota = np.pad(np.arange(size).reshape(shape), widths, mode)
            sums = np.bincount(
                np.reshape(iota, (-1,)), weights=np.reshape(g, (-1,)), minlength=size
            )
            return np.reshape(sums, shape).astype(g.dtype)

        return [gather]
    if mode in ("maximum", "minimum", "median"):
        return composed(
            p, g, lambda a: _pad_by_statistic(a, widths, mode, options.get("stat_length"))
        )

    def linear() -> Any:
        ct = g
        ndim = len(shape)
        for axis in range(ndim):
            n = shape[axis]
            step = (widths[axis], (0, 0))
            kw: dict[str, Any] = {}
            for key, value in options.items():
                if key == "reflect_type" or value is None:
                    kw[key] = value
                else:  # this axis's pair; any valid pair for the unpadded second axis
                    kw[key] = (
                        tuple(_axis_pairs(value, ndim)[axis]),
                        (1, 1) if key == "stat_length" else (0, 0),
                    )
            w = np.pad(np.eye(n), step, mode, **kw) - np.pad(np.zeros((n, n)), step, mode, **kw)
            moved = np.moveaxis(ct, axis, -1)
            ct = np.moveaxis(np.matmul(moved, w.astype(g.dtype)), -1, axis)
        return ct

    return [linear]


def _pad_by_statistic(a: Any, widths: list, mode: str, stat_length: Any) -> Any:
    """``np.pad(a, widths, mode)`` for ``maximum``/``minimum``/``median`` as NumPy computes it:
    axis after axis, each side filled with the statistic of the ``stat_length`` elements
    nearest to it (all of them by default), the axes padded before included."""
    stat = cast(
        Callable[..., Any], {"maximum": np.max, "minimum": np.min, "median": np.median}[mode]
    )
    lengths = _axis_pairs(stat_length, a.ndim) if stat_length is not None else None
    for axis, (before, after) in enumerate(widths):
        n = a.shape[axis]
        parts: list[Any] = []
        for side, width in ((0, before), (1, after)):
            if not width:
                parts.append(None)
                continue
            length = (
                n
                if lengths is None or lengths[axis][side] is None
                else min(int(lengths[axis][side]), n)
            )
            window = slice(0, length) if side == 0 else slice(n - length, n)
            chunk = a[(slice(None),) * axis + (window,)]
            value = stat(chunk, axis=axis, keepdims=True)
            target = list(a.shape)
            target[axis] = width
            parts.append(np.broadcast_to(value, tuple(target)))
        pieces = [q for q in (parts[0], a, parts[1]) if q is not None]
        a = np.concatenate(pieces, axis=axis) if len(pieces) > 1 else a
    return a


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


@rule(K.MEDIAN)
def _median(p: Primal, g: Any) -> list[Cotangent]:
    x = p.args[0]
    if x.shape is None or None in x.shape:
        raise NotImplementedError("the gradient of np.median needs static shapes")
    axis, keepdims = p.attrs.get("axis"), bool(p.attrs.get("keepdims", False))
    return composed(p, g, lambda a: _median_by_sorting(a, axis, keepdims))


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


def route_along_axis(source: Any, g: Any, shape: tuple, axis: int) -> Any:
    """``zeros(shape)`` plus each element of ``g`` at its own position with its index along
    ``axis`` replaced by ``source``'s (a traced integer array of ``shape``): a scatter-add
    (np.bincount of flat positions: repeated sources add up)."""
    size = math.prod(shape)
    stride = math.prod(shape[axis + 1 :])
    own = np.arange(size).reshape(shape)
    along = np.arange(shape[axis]).reshape((shape[axis],) + (1,) * (len(shape) - axis - 1))
    flat = (own - along * stride) + source * stride
    sums = np.bincount(np.reshape(flat, (-1,)), weights=np.reshape(g, (-1,)), minlength=size)
    return np.reshape(sums, shape).astype(g.dtype)


@rule(K.UFUNC_ACCUMULATE)
def _ufunc_accumulate(p: Primal, g: Any) -> list[Cotangent]:
    """``add`` is a cumulative sum, ``multiply`` a cumulative product (divides by ``x``);
    ``maximum``/``minimum`` (``fmax``/``fmin``) route each output's cotangent to the element it
    copies: the running extreme, ties to the first occurrence."""
    x, ufunc = p.args[0], p.attrs["ufunc"]
    axis = p.attrs.get("axis", 0)
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


NOTES.update(
    {
        K.PAD: "every mode: copies summed back, linear modes by their transposes, "
        "maximum/minimum/median by composition",
        K.MEDIAN: "the middle element(s) of a stable sort",
        K.UFUNC_ACCUMULATE: "add, multiply (divides by x), maximum, minimum, fmax, fmin "
        "(to the running extreme; ties: the first occurrence)",
    }
)


__all__ = [
    "composed",
    "outputs",
    "route_along_axis",
]
