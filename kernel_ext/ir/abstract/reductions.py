"""Abstract-evaluation rules of reductions and scans, the nan family, median and the quantiles,
and the ufunc methods (``reduce``, ``accumulate``, ``reduceat``; ``at`` is indexing's).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ..ops import OpGroup, OpKind
from .core import (
    ABSTRACT_EVAL,
    AbstractValue,
    KnownShape,
    Rule,
    Shape,
    abstract_rule,
    normalize_axes,
    normalize_axis,
    probe_dtype,
)


def reduced_shape(shape: Shape | None, axis: Any, keepdims: bool) -> Shape | None:
    if shape is None:
        return () if axis is None and not keepdims else None
    if not shape and isinstance(axis, int) and axis in (0, -1):
        return ()  # NumPy reduces a 0-d array along "axis 0" (or -1) to itself
    axes = normalize_axes(axis, len(shape))
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


#: The rule of an op with one output
OneOutputRule = Callable[..., AbstractValue]


def _reduction_rule(kind: OpKind) -> OneOutputRule:
    fn = kind.numpy_function

    def rule(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
        axis, keepdims = attrs.get("axis"), attrs.get("keepdims", False)
        if kind in (OpKind.ARGMAX, OpKind.ARGMIN) and isinstance(axis, tuple):
            raise TypeError(f"np.{kind.value} takes one integer axis or None, not {axis!r}")
        if (
            x.shape is not None
            and x.shape.count(0)
            and kind in (OpKind.MAX, OpKind.MIN, OpKind.ARGMAX, OpKind.ARGMIN)
            and axis is None
        ):
            raise ValueError(
                f"zero-size array to reduction operation {kind.value} which has no identity"
            )
        extra = {k: v for k, v in attrs.items() if k not in ("axis", "keepdims")}
        probe_axis = axis if x.ndim is not None else None
        dtype = probe_dtype(fn, x, axis=probe_axis, keepdims=keepdims, **extra)
        if kind in (OpKind.ARGMAX, OpKind.ARGMIN) and axis is None:
            shape = (1,) * (x.ndim or 0) if keepdims else ()
            return AbstractValue(shape if x.shape is not None or not keepdims else None, dtype)
        return AbstractValue(reduced_shape(x.shape, axis, keepdims), dtype)

    return rule


#: Reductions whose rule adds NumPy's empty-input errors to the generic one (below)
_NAN_EXTREMA = (OpKind.NANMAX, OpKind.NANMIN, OpKind.NANARGMAX, OpKind.NANARGMIN)
#: Reductions with a ``q`` operand: a rule of their own (below)
_QUANTILES = (OpKind.PERCENTILE, OpKind.NANPERCENTILE, OpKind.QUANTILE, OpKind.NANQUANTILE)
#: Reductions that are ufunc methods: rules of their own (below)
_UFUNC_METHOD_REDUCTIONS = (OpKind.UFUNC_REDUCE, OpKind.UFUNC_REDUCEAT)

for _kind in OpKind:
    if (
        _kind.group is OpGroup.REDUCTION
        and _kind not in _NAN_EXTREMA + _QUANTILES + _UFUNC_METHOD_REDUCTIONS
    ):
        ABSTRACT_EVAL.add(_kind, _reduction_rule(_kind))


def _scan_rule(fn: Callable[..., Any]) -> Rule:
    def rule(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
        return _scan(fn, attrs, x)

    return rule


def _scan(fn: Callable[..., Any], attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    axis = attrs.get("axis")
    dtype = probe_dtype(
        fn,
        x,
        axis=axis if x.ndim else None,
        **({"dtype": attrs["dtype"]} if "dtype" in attrs else {}),
    )
    if axis is None:
        size = x.size
        return AbstractValue((size,), dtype)
    if x.shape is not None:
        normalize_axis(axis, len(x.shape))
    return AbstractValue(x.shape, dtype)


ABSTRACT_EVAL.add(OpKind.CUMSUM, _scan_rule(np.cumsum))


ABSTRACT_EVAL.add(OpKind.CUMPROD, _scan_rule(np.cumprod))


def _no_identity_check(name: str, x: AbstractValue, axis: Any) -> None:
    """NumPy's error for reducing an empty axis with an operation that has no identity."""
    if not x.shape:  # unknown rank, or 0-d: one element, nothing empty
        return
    axes = normalize_axes(axis, len(x.shape))
    if any(x.shape[a] == 0 for a in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")


def _nan_extremum_rule(kind: OpKind) -> Rule:
    """nanmax/nanmin/nanargmax/nanargmin: the generic reduction rule, after NumPy's checks
    (one integer axis for the arg-reductions; no identity for an empty axis)."""
    generic = _reduction_rule(kind)

    def rule(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
        axis = attrs.get("axis")
        if kind in (OpKind.NANARGMAX, OpKind.NANARGMIN) and isinstance(axis, tuple):
            raise TypeError(f"np.{kind.value} takes one integer axis or None, not {axis!r}")
        if x.shape is not None and any(x.shape[a] == 0 for a in normalize_axes(axis, len(x.shape))):
            if kind in (OpKind.NANARGMAX, OpKind.NANARGMIN):
                raise ValueError(f"attempt to get {kind.value[3:]} of an empty sequence")
            _no_identity_check("f" + kind.value[3:], x, axis)  # NumPy reduces with fmax/fmin
        return generic(attrs, x)

    return rule


for _kind in _NAN_EXTREMA:
    ABSTRACT_EVAL.add(_kind, _nan_extremum_rule(_kind))


def _quantile_rule(kind: OpKind) -> Rule:
    """percentile/quantile (and nan*): ``q``'s shape, then the reduced shape."""
    fn = kind.numpy_function

    def rule(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
        empty = _empty_probe(fn, attrs, x)
        if empty is not None:
            return empty
        q, axis, keepdims = attrs["q"], attrs.get("axis"), attrs.get("keepdims", False)
        extra = {k: v for k, v in attrs.items() if k not in ("q", "axis", "keepdims")}
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


for _kind in _QUANTILES:
    ABSTRACT_EVAL.add(_kind, _quantile_rule(_kind))


def _empty_probe(
    fn: Callable[..., Any], attrs: dict[str, Any], x: AbstractValue
) -> AbstractValue | None:
    """The exact result type of ``fn`` on a statically empty array, by running it on one
    (no memory): NumPy answers empty input with special cases a 1-element probe cannot see
    (``nanquantile`` of an empty array is ``nanmean``'s: ``q``'s dimensions are dropped)."""
    if x.shape is None or None in x.shape or math.prod(cast("KnownShape", x.shape)) != 0:
        return None
    kwargs = dict(attrs)
    args = (kwargs.pop("q"),) if "q" in kwargs else ()
    with np.errstate(all="ignore"):
        out = np.asarray(fn(np.zeros(x.shape, x.dtype), *args, **kwargs))
    return AbstractValue(out.shape, out.dtype)


def _median_rule(kind: OpKind) -> Rule:
    # (the generic reduction rule, registered above: one output)
    generic = cast("OneOutputRule", ABSTRACT_EVAL[kind])
    fn = kind.numpy_function

    def rule(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
        return _empty_probe(fn, attrs, x) or generic(attrs, x)

    return rule


for _kind in (OpKind.MEDIAN, OpKind.NANMEDIAN):
    ABSTRACT_EVAL.replace(_kind, _median_rule(_kind))  # the generic rule, refined


def _quietly(rule: Rule) -> Rule:
    """``rule`` with NumPy's warnings silenced: probing the nan functions on 1-element stand-ins
    warns ("Degrees of freedom <= 0", "Mean of empty slice") where the real call may not."""

    def quiet(attrs: dict[str, Any], *args: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return rule(attrs, *args)

    return quiet


for _kind in (
    OpKind.NANSUM,
    OpKind.NANPROD,
    OpKind.NANMEAN,
    OpKind.NANMAX,
    OpKind.NANMIN,
    OpKind.NANSTD,
    OpKind.NANVAR,
    OpKind.NANARGMAX,
    OpKind.NANARGMIN,
    OpKind.MEDIAN,
    OpKind.NANMEDIAN,
    OpKind.PERCENTILE,
    OpKind.NANPERCENTILE,
    OpKind.QUANTILE,
    OpKind.NANQUANTILE,
):
    ABSTRACT_EVAL.replace(_kind, _quietly(ABSTRACT_EVAL[_kind]))


ABSTRACT_EVAL.add(OpKind.NANCUMSUM, _scan_rule(np.nancumsum))


ABSTRACT_EVAL.add(OpKind.NANCUMPROD, _scan_rule(np.nancumprod))


def _ufunc_kwargs(attrs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of a ufunc method node (everything but the ufunc itself)."""
    return {k: v for k, v in attrs.items() if k != "ufunc"}


@abstract_rule(OpKind.UFUNC_REDUCE)
def _ufunc_reduce(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    ufunc, axis = attrs["ufunc"], attrs.get("axis", 0)
    kwargs = _ufunc_kwargs(attrs)
    if x.shape is not None and "initial" not in attrs and ufunc.identity is None:
        _no_identity_check(ufunc.__name__, x, axis)
    if x.ndim is None:
        kwargs["axis"] = None
    dtype = probe_dtype(ufunc.reduce, x, **kwargs)
    return AbstractValue(reduced_shape(x.shape, axis, attrs.get("keepdims", False)), dtype)


@abstract_rule(OpKind.UFUNC_ACCUMULATE)
def _ufunc_accumulate(attrs: dict[str, Any], x: AbstractValue) -> AbstractValue:
    ufunc, axis = attrs["ufunc"], attrs.get("axis", 0)
    if x.shape is not None:
        if not x.shape:
            raise TypeError("cannot accumulate on a scalar")
        normalize_axis(axis, len(x.shape))
    dtype = probe_dtype(ufunc.accumulate, x, **{**_ufunc_kwargs(attrs), "axis": 0})
    return AbstractValue(x.shape, dtype)


@abstract_rule(OpKind.UFUNC_REDUCEAT)
def _ufunc_reduceat(
    attrs: dict[str, Any], x: AbstractValue, indices: AbstractValue
) -> AbstractValue:
    ufunc, axis = attrs["ufunc"], attrs.get("axis", 0)
    if indices.ndim is not None and indices.ndim != 1:
        raise ValueError("index must be 1-dimensional")
    if indices.dtype.kind not in "iu":
        raise TypeError(
            f"Cannot cast array data from {indices.dtype!r} to dtype('int64') "
            "according to the rule 'safe'"
        )
    kwargs = {**_ufunc_kwargs(attrs), "axis": 0}
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
