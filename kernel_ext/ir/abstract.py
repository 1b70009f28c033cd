"""Abstract values (shape + dtype) and the per-op abstract-evaluation rules.

An :class:`AbstractValue` is what the tracer knows about a value before it exists: its dtype
(always concrete) and its shape, where a dimension may be ``None`` (unknown size) and the whole
shape may be ``None`` (unknown rank).

``ABSTRACT_EVAL[op](attrs, *args)`` computes a node's output from its inputs' abstract values
(Python scalar literals are passed as themselves: they are *weak* under NEP 50). The rules agree
with NumPy 2 because they ask NumPy: dtypes come from ``ufunc.resolve_dtypes``/``result_type``
or from running the op on tiny 1-element probes, shapes from NumPy's own broadcasting and
indexing rules (indexing is probed on zero-strided views, which cost no memory).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .ops import OpGroup, OpKind

Shape = tuple  # tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class AbstractValue:
    """The static type of a graph value: ``shape`` (``None`` dims allowed, or ``None``), dtype."""

    shape: Shape | None
    dtype: np.dtype

    @property
    def ndim(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def size(self) -> int | None:
        if self.shape is None or any(d is None for d in self.shape):
            return None
        return math.prod(self.shape)

    def __str__(self) -> str:
        return format_aval(self.shape, self.dtype)


def format_shape(shape: Shape | None) -> str:
    """``[2, None]``-style text; ``[*]`` for unknown rank."""
    if shape is None:
        return "[*]"
    return "[" + ", ".join("None" if d is None else str(d) for d in shape) + "]"


def format_aval(shape: Shape | None, dtype: np.dtype) -> str:
    return f"{np.dtype(dtype).name}{format_shape(shape)}"


def aval_of(value: Any) -> AbstractValue:
    """The abstract value of a concrete array or NumPy scalar."""
    arr = np.asarray(value)
    return AbstractValue(tuple(arr.shape), arr.dtype)


# ---------------------------------------------------------------------------------------------
# Shape helpers
# ---------------------------------------------------------------------------------------------

def _shape(x: Any) -> Shape | None:
    return x.shape if isinstance(x, AbstractValue) else ()


def broadcast_shapes(*shapes: Shape | None) -> Shape | None:
    """NumPy broadcasting over shapes that may hold ``None`` dims (or be of unknown rank)."""
    if None in shapes:
        return None
    # The common cases first: 0-d operands (scalars) change nothing, and operands of one
    # shape broadcast to it (tracing asks this for every elementwise op).
    ranked = [s for s in shapes if s]
    if not ranked:
        return ()
    first = ranked[0]
    if len(ranked) == 1 or all(s == first for s in ranked):
        return tuple(first)
    ndim = max((len(s) for s in shapes), default=0)
    out: list[int | None] = []
    for i in range(-ndim, 0):
        dims = [s[i] for s in shapes if len(s) >= -i]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError(
                "operands could not be broadcast together with shapes "
                + " ".join(format_shape(s).replace("[", "(").replace("]", ")") for s in shapes))
        if known:
            out.append(known.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def normalize_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` (``None``/int/tuple) as sorted non-negative axes; ``None`` means all."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = tuple(normalize_axis(int(a), ndim) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return out


def _probe_array(x: Any) -> Any:
    """A tiny concrete stand-in with ``x``'s dtype and rank (every dim 1)."""
    if isinstance(x, AbstractValue):
        ndim = x.ndim if x.ndim is not None else 1
        return np.ones((1,) * ndim, dtype=x.dtype)
    return x


def probe_dtype(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> np.dtype:
    """The dtype ``fn`` returns for 1-element stand-ins of ``args`` (literals passed as-is)."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(*[_probe_array(a) for a in args], **kwargs)).dtype


def _weak(x: Any) -> Any:
    """What ``resolve_dtypes`` takes for an operand: a dtype, or ``int/float/complex`` if weak."""
    if isinstance(x, AbstractValue):
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(np.bool_)
    return type(x)


def result_type(*args: Any) -> np.dtype:
    """``np.result_type`` with Python scalars weak (NEP 50)."""
    return np.result_type(*[a.dtype if isinstance(a, AbstractValue) else a for a in args])


# ---------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------

Rule = Callable[..., "AbstractValue | None"]
ABSTRACT_EVAL: dict[OpKind, Rule] = {}


def _rule(*kinds: OpKind) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for kind in kinds:
            ABSTRACT_EVAL[kind] = fn
        return fn
    return register


def _ufunc_rule(kind: OpKind) -> Rule:
    ufunc = kind.ufunc

    resolved: dict[tuple, np.dtype] = {}  # NumPy's answer per operand dtypes (a pure function)

    outs = (None,) * ufunc.nout

    def rule(attrs: dict, *args: Any) -> AbstractValue:
        dtypes = tuple([_weak(a) for a in args]) + outs
        key = (dtypes, attrs.get("dtype"))
        out = resolved.get(key)
        if out is None:
            if "dtype" in attrs:
                sig = (None,) * ufunc.nin + (np.dtype(attrs["dtype"]),)
                out = ufunc.resolve_dtypes(dtypes, signature=sig)[-1]
            else:
                out = ufunc.resolve_dtypes(dtypes)[-1]
            if len(resolved) < 4096:
                resolved[key] = out
        return AbstractValue(broadcast_shapes(*[_shape(a) for a in args]), out)

    return rule


for _kind in OpKind:
    if _kind.ufunc is not None:
        ABSTRACT_EVAL[_kind] = _ufunc_rule(_kind)


@_rule(OpKind.PLACEHOLDER)
def _placeholder(attrs: dict) -> AbstractValue:
    return AbstractValue(attrs["shape"], np.dtype(attrs["dtype"]))


@_rule(OpKind.CONSTANT)
def _constant(attrs: dict) -> AbstractValue:
    return aval_of(attrs["value"])


@_rule(OpKind.WHERE)
def _where(attrs: dict, cond: Any, x: Any, y: Any) -> AbstractValue:
    return AbstractValue(broadcast_shapes(_shape(cond), _shape(x), _shape(y)), result_type(x, y))


@_rule(OpKind.CAST)
def _cast(attrs: dict, x: AbstractValue) -> AbstractValue:
    return AbstractValue(x.shape, np.dtype(attrs["dtype"]))


@_rule(OpKind.CLIP)
def _clip(attrs: dict, x: Any, lo: Any, hi: Any) -> AbstractValue:
    shape = broadcast_shapes(*[_shape(a) for a in (x, lo, hi) if a is not None])
    return AbstractValue(shape, probe_dtype(np.clip, x, lo, hi))




def reduced_shape(shape: Shape | None, axis: Any, keepdims: bool) -> Shape | None:
    if shape is None:
        return () if axis is None and not keepdims else None
    if not shape and isinstance(axis, int) and axis in (0, -1):
        return ()  # NumPy reduces a 0-d array along "axis 0" (or -1) to itself
    axes = normalize_axes(axis, len(shape))
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduction_rule(kind: OpKind) -> Rule:
    fn = kind.numpy_function

    def rule(attrs: dict, x: AbstractValue) -> AbstractValue:
        axis, keepdims = attrs.get("axis"), attrs.get("keepdims", False)
        if kind in (OpKind.ARGMAX, OpKind.ARGMIN) and isinstance(axis, tuple):
            raise TypeError(f"np.{kind.value} takes one integer axis or None, not {axis!r}")
        if x.shape is not None and x.shape.count(0) and kind in (
                OpKind.MAX, OpKind.MIN, OpKind.ARGMAX, OpKind.ARGMIN) and axis is None:
            raise ValueError(f"zero-size array to reduction operation {kind.value} "
                             "which has no identity")
        extra = {k: v for k, v in attrs.items() if k not in ("axis", "keepdims")}
        probe_axis = axis if x.ndim is not None else None
        dtype = probe_dtype(fn, x, axis=probe_axis, keepdims=keepdims, **extra)
        if kind in (OpKind.ARGMAX, OpKind.ARGMIN) and axis is None:
            shape = (1,) * (x.ndim or 0) if keepdims else ()
            return AbstractValue(shape if x.shape is not None or not keepdims else None, dtype)
        return AbstractValue(reduced_shape(x.shape, axis, keepdims), dtype)

    return rule


for _kind in OpKind:
    if _kind.group is OpGroup.REDUCTION:
        ABSTRACT_EVAL[_kind] = _reduction_rule(_kind)


def _scan_rule(fn: Callable[..., Any]) -> Rule:
    def rule(attrs: dict, x: AbstractValue) -> AbstractValue:
        return _scan(fn, attrs, x)
    return rule


def _scan(fn: Callable[..., Any], attrs: dict, x: AbstractValue) -> AbstractValue:
    axis = attrs.get("axis")
    dtype = probe_dtype(fn, x, axis=axis if x.ndim else None,
                        **({"dtype": attrs["dtype"]} if "dtype" in attrs else {}))
    if axis is None:
        size = x.size
        return AbstractValue((size,), dtype)
    if x.shape is not None:
        normalize_axis(axis, len(x.shape))
    return AbstractValue(x.shape, dtype)


ABSTRACT_EVAL[OpKind.CUMSUM] = _scan_rule(np.cumsum)
ABSTRACT_EVAL[OpKind.CUMPROD] = _scan_rule(np.cumprod)


def reshape_shape(shape: Shape | None, newshape: tuple[int, ...]) -> Shape | None:
    """NumPy's reshape rule, with ``-1`` resolved where the input size is known."""
    if list(newshape).count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    size = None if shape is None or None in shape else math.prod(shape)
    known = math.prod(d for d in newshape if d != -1)
    if -1 not in newshape:
        if size is not None and size != known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(newshape)}")
        return tuple(newshape)
    if size is None:
        return tuple(None if d == -1 else d for d in newshape)
    if known == 0 or size % known:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(newshape)}")
    return tuple(size // known if d == -1 else d for d in newshape)


@_rule(OpKind.RESHAPE)
def _reshape(attrs: dict, x: AbstractValue) -> AbstractValue:
    return AbstractValue(reshape_shape(x.shape, attrs["shape"]), x.dtype)


@_rule(OpKind.TRANSPOSE)
def _transpose(attrs: dict, x: AbstractValue) -> AbstractValue:
    if x.shape is None:
        return x
    axes = attrs.get("axes")
    if axes is None:
        return AbstractValue(x.shape[::-1], x.dtype)
    axes = tuple(normalize_axis(a, len(x.shape)) for a in axes)
    if sorted(axes) != list(range(len(x.shape))):
        raise ValueError("axes don't match array")
    return AbstractValue(tuple(x.shape[a] for a in axes), x.dtype)


@_rule(OpKind.EXPAND_DIMS)
def _expand_dims(attrs: dict, x: AbstractValue) -> AbstractValue:
    if x.shape is None:
        return x
    axis = attrs["axis"]
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = len(x.shape) + len(axes)
    axes = normalize_axes(axes, ndim)
    rest = iter(x.shape)
    return AbstractValue(tuple(1 if i in axes else next(rest) for i in range(ndim)), x.dtype)


@_rule(OpKind.SQUEEZE)
def _squeeze(attrs: dict, x: AbstractValue) -> AbstractValue:
    if x.shape is None:
        return x
    axis = attrs.get("axis")
    if axis is None:
        return AbstractValue(tuple(d for d in x.shape if d != 1), x.dtype)
    axes = normalize_axes(axis, len(x.shape))
    for a in axes:
        if x.shape[a] not in (1, None):
            raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return AbstractValue(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype)


@_rule(OpKind.BROADCAST_TO)
def _broadcast_to(attrs: dict, x: AbstractValue) -> AbstractValue:
    target = tuple(attrs["shape"])
    got = broadcast_shapes(x.shape, target)
    if got is not None and x.shape is not None and len(x.shape) > len(target):
        raise ValueError(f"cannot broadcast a shape {format_shape(x.shape)} to {target}")
    return AbstractValue(target, x.dtype)


@_rule(OpKind.CONCATENATE)
def _concatenate(attrs: dict, *xs: AbstractValue) -> AbstractValue:
    dtype = result_type(*[np.empty(0, x.dtype) for x in xs]) if xs else np.dtype(float)
    if "dtype" in attrs:
        dtype = np.dtype(attrs["dtype"])
    axis = attrs.get("axis", 0)
    if any(x.shape is None for x in xs):
        return AbstractValue(None, dtype)
    if axis is None:
        sizes = [x.size for x in xs]
        return AbstractValue((None if None in sizes else sum(sizes),), dtype)
    ndim = len(xs[0].shape)
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    if any(len(x.shape) != ndim for x in xs):
        raise ValueError("all the input array dimensions except for the concatenation axis must "
                         "match exactly, but the arrays have different numbers of dimensions")
    ax = normalize_axis(axis, ndim)
    out: list[int | None] = []
    for i in range(ndim):
        dims = [x.shape[i] for x in xs]
        if i == ax:
            out.append(None if None in dims else sum(dims))
        else:
            known = {d for d in dims if d is not None}
            if len(known) > 1:
                raise ValueError("all the input array dimensions except for the concatenation "
                                 f"axis must match exactly, but along dimension {i} they differ")
            out.append(known.pop() if known else None)
    return AbstractValue(tuple(out), dtype)


@_rule(OpKind.STACK)
def _stack(attrs: dict, *xs: AbstractValue) -> AbstractValue:
    dtype = result_type(*[np.empty(0, x.dtype) for x in xs])
    if any(x.shape is None for x in xs):
        return AbstractValue(None, dtype)
    shapes = {x.shape for x in xs}
    merged = xs[0].shape
    if len(shapes) > 1:
        if len({len(s) for s in shapes}) > 1:
            raise ValueError("all input arrays must have the same shape")
        merged = tuple(
            (lambda ds: None if None in ds and len(ds - {None}) <= 1 else (
                ds.pop() if len(ds) == 1 else _raise_stack()))({s[i] for s in shapes})
            for i in range(len(merged)))
    axis = normalize_axis(attrs.get("axis", 0), len(merged) + 1)
    out = list(merged)
    out.insert(axis, len(xs))
    return AbstractValue(tuple(out), dtype)


def _raise_stack() -> None:
    raise ValueError("all input arrays must have the same shape")


@_rule(OpKind.FLIP, OpKind.COPY)
def _same(attrs: dict, x: AbstractValue) -> AbstractValue:
    if x.shape is not None and attrs.get("axis") is not None:
        normalize_axes(attrs["axis"], len(x.shape))
    return x


# --- indexing --------------------------------------------------------------------------------

@dataclass(frozen=True)
class DynamicIndex:
    """A slot of an index template filled at run time by the node's input number ``position``."""

    position: int

    def __repr__(self) -> str:
        return f"${self.position}"


_SENTINELS = (10007, 10009)   # stand-ins for unknown dims in the two shape probes
_FANCY_SENTINELS = (2, 3)     # stand-ins for unknown dims of traced index arrays


def _probe_view(shape: Shape, probe: int) -> np.ndarray:
    dims = tuple(_SENTINELS[probe] if d is None else d for d in shape)
    return np.lib.stride_tricks.as_strided(
        np.zeros(1, np.bool_), shape=dims, strides=(0,) * len(dims), writeable=False)


def _probe_component(c: Any, dyn: Sequence[Any], probe: int) -> Any:
    """One index component with traced slots replaced by concrete stand-ins."""
    if isinstance(c, DynamicIndex):
        a = dyn[c.position - 1]
        if a.ndim == 0:
            return 0
        shape = tuple(_FANCY_SENTINELS[probe] if d is None else d for d in a.shape)
        if a.dtype == np.bool_:
            # A traced mask selects a data-dependent count: probe it as int indices whose
            # length differs between probes, so that dimension comes out unknown.
            return tuple(np.zeros(_FANCY_SENTINELS[probe] + 4, np.intp) for _ in shape)
        return np.zeros(shape, np.intp)
    if isinstance(c, slice) and any(isinstance(p, DynamicIndex)
                                    for p in (c.start, c.stop, c.step)):
        return slice(0, probe + 1)  # a slice with traced bounds has an unknown length
    return c


def getitem_shape(shape: Shape | None, template: tuple, dyn: Sequence[Any]) -> Shape | None:
    """Result shape of ``x[index]`` (NumPy's basic and advanced rules, asked of NumPy)."""
    if shape is None:
        return None
    try:
        return _getitem_probes(shape, template, dyn)
    except IndexError:
        if 0 not in shape or not any(isinstance(c, DynamicIndex) and dyn[c.position - 1].ndim
                                     for c in template):
            raise
    # A traced index array into a size-0 axis (x[np.nonzero(m)[0]] with x empty): NumPy takes
    # it when it is empty at run time, but no stand-in index fits a size-0 axis. Probe with
    # those axes of size 1 and of size 2: a dim that differs between them is one of them (0).
    ones = _getitem_probes(tuple(1 if d == 0 else d for d in shape), template, dyn)
    twos = _getitem_probes(tuple(2 if d == 0 else d for d in shape), template, dyn)
    return tuple(x if x == y else 0 for x, y in zip(ones, twos))


def _getitem_probes(shape: Shape, template: tuple, dyn: Sequence[Any]) -> Shape:
    """``getitem_shape`` on two probes whose unknown sizes differ (those dims are None)."""
    results = []
    for probe in (0, 1):
        index: list[Any] = []
        for c in template:
            p = _probe_component(c, dyn, probe)
            if isinstance(p, tuple):
                index.extend(p)
            else:
                index.append(p)
        results.append(_probe_view(shape, probe)[tuple(index)].shape)
    a, b = results
    return tuple(x if x == y else None for x, y in zip(a, b))


@_rule(OpKind.GETITEM)
def _getitem(attrs: dict, x: AbstractValue, *dyn: AbstractValue) -> AbstractValue:
    for d in dyn:
        if not (np.issubdtype(d.dtype, np.integer) or d.dtype == np.bool_):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                             f"(`None`) and integer or boolean arrays are valid indices; got a "
                             f"traced {d}")
    return AbstractValue(getitem_shape(x.shape, attrs["index"], dyn), x.dtype)


@_rule(OpKind.SETITEM)
def _setitem(attrs: dict, x: AbstractValue, value: Any, *dyn: AbstractValue) -> AbstractValue:
    target = getitem_shape(x.shape, attrs["index"], dyn)
    vshape = _shape(value)
    if target is not None and vshape is not None:
        merged = broadcast_shapes(vshape, target)
        if merged is not None and len(merged) > len(target):
            raise ValueError(f"could not broadcast input array from shape {format_shape(vshape)} "
                             f"into shape {format_shape(target)}")
    # NumPy casts assigned values unsafely (x_int[0] = 1.5 stores 1): no dtype check.
    return x


# --- linear algebra --------------------------------------------------------------------------

def _inner_mismatch(fn: str, a: Shape, b: Shape, da: Any, db: Any) -> None:
    if da is not None and db is not None and da != db:
        raise ValueError(f"{fn}: Input operand 1 has a mismatch in its core dimension 0 "
                         f"(size {db} is different from {da}); shapes {format_shape(a)} and "
                         f"{format_shape(b)}")


@_rule(OpKind.MATMUL)
def _matmul(attrs: dict, a: AbstractValue, b: AbstractValue) -> AbstractValue:
    dtype = np.matmul.resolve_dtypes((a.dtype, b.dtype, None))[-1]
    if a.shape is None or b.shape is None:
        return AbstractValue(None, dtype)
    if len(a.shape) == 0 or len(b.shape) == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    sa = (1,) + a.shape if len(a.shape) == 1 else a.shape
    sb = b.shape + (1,) if len(b.shape) == 1 else b.shape
    _inner_mismatch("matmul", a.shape, b.shape, sa[-1], sb[-2])
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    out = batch + (sa[-2], sb[-1])
    if len(a.shape) == 1:
        out = out[:-2] + out[-1:]
    if len(b.shape) == 1:
        out = out[:-1]
    return AbstractValue(out, dtype)


@_rule(OpKind.DOT)
def _dot(attrs: dict, a: AbstractValue, b: AbstractValue) -> AbstractValue:
    dtype = result_type(a, b)
    if a.shape is None or b.shape is None:
        return AbstractValue(None, dtype)
    if len(a.shape) == 0 or len(b.shape) == 0:
        return AbstractValue(broadcast_shapes(a.shape, b.shape), dtype)
    if len(b.shape) == 1:
        _inner_mismatch("dot", a.shape, b.shape, a.shape[-1], b.shape[0])
        return AbstractValue(a.shape[:-1], dtype)
    _inner_mismatch("dot", a.shape, b.shape, a.shape[-1], b.shape[-2])
    return AbstractValue(a.shape[:-1] + b.shape[:-2] + b.shape[-1:], dtype)


@_rule(OpKind.OUTER)
def _outer(attrs: dict, a: AbstractValue, b: AbstractValue) -> AbstractValue:
    return AbstractValue((a.size, b.size), result_type(a, b))


def _square_check(a: AbstractValue) -> None:
    if a.shape is not None:
        if len(a.shape) < 2:
            raise np.linalg.LinAlgError(f"{len(a.shape)}-dimensional array given. Array must be "
                                        "at least two-dimensional")
        if None not in a.shape[-2:] and a.shape[-1] != a.shape[-2]:
            raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


@_rule(OpKind.INV)
def _inv(attrs: dict, a: AbstractValue) -> AbstractValue:
    _square_check(a)
    return AbstractValue(a.shape, probe_dtype(np.linalg.inv, a))


@_rule(OpKind.DET)
def _det(attrs: dict, a: AbstractValue) -> AbstractValue:
    _square_check(a)
    return AbstractValue(None if a.shape is None else a.shape[:-2], probe_dtype(np.linalg.det, a))


@_rule(OpKind.SOLVE)
def _solve(attrs: dict, a: AbstractValue, b: AbstractValue) -> AbstractValue:
    _square_check(a)
    dtype = probe_dtype(lambda x, y: np.linalg.solve(x, y), a, b)
    if a.shape is None or b.shape is None:
        return AbstractValue(None, dtype)
    if len(b.shape) == 1:
        return AbstractValue(b.shape, dtype)
    return AbstractValue(broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:], dtype)


# --- sorting ---------------------------------------------------------------------------------

@_rule(OpKind.SORT)
def _sort(attrs: dict, x: AbstractValue) -> AbstractValue:
    return _sorted(attrs, x, x.dtype)


@_rule(OpKind.ARGSORT)
def _argsort(attrs: dict, x: AbstractValue) -> AbstractValue:
    return _sorted(attrs, x, np.dtype(np.intp))


def _sorted(attrs: dict, x: AbstractValue, dtype: np.dtype) -> AbstractValue:
    axis = attrs.get("axis", -1)
    if axis is None:
        return AbstractValue((x.size,), dtype)
    if x.shape is not None:
        normalize_axis(axis, len(x.shape))
    return AbstractValue(x.shape, dtype)


# --- stateful --------------------------------------------------------------------------------

@_rule(OpKind.READ_VARIABLE)
def _read_variable(attrs: dict) -> AbstractValue:
    var = attrs["variable"]
    return AbstractValue(tuple(var.shape), np.dtype(var.dtype))


@_rule(OpKind.ASSIGN_VARIABLE, OpKind.ASSIGN_ADD_VARIABLE, OpKind.ASSIGN_SUB_VARIABLE)
def _assign(attrs: dict, value: Any) -> None:
    var = attrs["variable"]
    shape = _shape(value)
    if shape is not None and None not in shape and tuple(shape) != tuple(var.shape):
        broadcast_shapes(shape, tuple(var.shape))
        if len(shape) > len(var.shape) or broadcast_shapes(shape, var.shape) != tuple(var.shape):
            raise ValueError(f"cannot assign a value of shape {format_shape(shape)} to variable "
                             f"'{var.name}' of shape {format_shape(tuple(var.shape))}")
    return None


@_rule(OpKind.PRINT)
def _print(attrs: dict, *args: Any) -> None:
    return None


# -- run-time checks ----------------------------------------------------------------------------

@_rule(OpKind.CHECK)
def _check(attrs: dict, pred: Any, *message_values: Any) -> None:
    shape = _shape(pred)
    if shape is not None and tuple(shape) != ():
        raise ValueError(f"the condition of a run-time check must be 0-d, got shape "
                         f"{format_shape(tuple(shape))}")
    return None


@_rule(OpKind.DIM)
def _dim(attrs: dict, x: AbstractValue) -> AbstractValue:
    if x.shape is not None:
        normalize_axis(attrs["axis"], len(x.shape))
    return AbstractValue((), np.dtype(np.int64))


@_rule(OpKind.ARANGE)
def _arange(attrs: dict, start: Any, stop: Any, step: Any) -> AbstractValue:
    dtype = np.dtype(attrs["dtype"])
    if all(isinstance(a, (int, float)) for a in (start, stop, step)):
        return AbstractValue((len(np.arange(start, stop, step)),), dtype)
    return AbstractValue((None,), dtype)


@_rule(OpKind.TENSOR_ARRAY_WRITE)
def _tensor_array_write(attrs: dict, buffer: AbstractValue, index: Any,
                        value: Any) -> AbstractValue:
    vshape = _shape(value)
    return AbstractValue(None if vshape is None else (None,) + tuple(vshape),
                         np.dtype(attrs["dtype"]))


@_rule(OpKind.COND, OpKind.WHILE)
def _control_flow(attrs: dict, *args: Any) -> tuple:
    return tuple(attrs["out_avals"])


@_rule(OpKind.NUMPY_CALL, OpKind.RANDOM_CALL)
def _opaque_call(attrs: dict, *args: Any) -> AbstractValue | tuple | None:
    # Found when the call was traced, by running the callable on stand-ins (trace/opaque.py):
    # no rule could know what an arbitrary NumPy function returns.
    return attrs["out_aval"]


@_rule(OpKind.GET_OUTPUT)
def _get_output(attrs: dict, x: tuple) -> AbstractValue:
    return x[attrs["index"]]


# -- ufunc methods and the nan family (issue 14) ----------------------------------------------

def _multi_output_ufunc_rule(kind: OpKind) -> Rule:
    """``frexp``/``modf``/``divmod``: one abstract value per output (NumPy's loop dtypes)."""
    ufunc = kind.ufunc

    def rule(attrs: dict, *args: Any) -> tuple:
        dtypes = tuple(_weak(a) for a in args) + (None,) * ufunc.nout
        if "dtype" in attrs:
            sig = (None,) * ufunc.nin + (np.dtype(attrs["dtype"]),) * ufunc.nout
            resolved = ufunc.resolve_dtypes(dtypes, signature=sig)
        else:
            resolved = ufunc.resolve_dtypes(dtypes)
        shape = broadcast_shapes(*[_shape(a) for a in args])
        return tuple(AbstractValue(shape, np.dtype(d)) for d in resolved[ufunc.nin:])

    return rule


for _kind in OpKind:
    if _kind.ufunc is not None and _kind.ufunc.nout > 1:
        ABSTRACT_EVAL[_kind] = _multi_output_ufunc_rule(_kind)


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

    def rule(attrs: dict, x: AbstractValue) -> AbstractValue:
        axis = attrs.get("axis")
        if kind in (OpKind.NANARGMAX, OpKind.NANARGMIN) and isinstance(axis, tuple):
            raise TypeError(f"np.{kind.value} takes one integer axis or None, not {axis!r}")
        if x.shape is not None and any(x.shape[a] == 0
                                       for a in normalize_axes(axis, len(x.shape))):
            if kind in (OpKind.NANARGMAX, OpKind.NANARGMIN):
                raise ValueError(f"attempt to get {kind.value[3:]} of an empty sequence")
            _no_identity_check("f" + kind.value[3:], x, axis)  # NumPy reduces with fmax/fmin
        return generic(attrs, x)

    return rule


for _kind in (OpKind.NANMAX, OpKind.NANMIN, OpKind.NANARGMAX, OpKind.NANARGMIN):
    ABSTRACT_EVAL[_kind] = _nan_extremum_rule(_kind)


def _quantile_rule(kind: OpKind) -> Rule:
    """percentile/quantile (and nan*): ``q``'s shape, then the reduced shape."""
    fn = kind.numpy_function

    def rule(attrs: dict, x: AbstractValue) -> AbstractValue:
        empty = _empty_probe(fn, attrs, x)
        if empty is not None:
            return empty
        q, axis, keepdims = attrs["q"], attrs.get("axis"), attrs.get("keepdims", False)
        extra = {k: v for k, v in attrs.items() if k not in ("q", "axis", "keepdims")}
        dtype = probe_dtype(lambda a: fn(a, q, axis=axis if x.ndim is not None else None,
                                         keepdims=keepdims, **extra), x)
        return AbstractValue(np.shape(q) + reduced_shape(x.shape, axis, keepdims)
                             if x.shape is not None else None, dtype)

    return rule


for _kind in (OpKind.PERCENTILE, OpKind.NANPERCENTILE, OpKind.QUANTILE, OpKind.NANQUANTILE):
    ABSTRACT_EVAL[_kind] = _quantile_rule(_kind)


def _empty_probe(fn: Callable[..., Any], attrs: dict, x: AbstractValue) -> AbstractValue | None:
    """The exact result type of ``fn`` on a statically empty array, by running it on one
    (no memory): NumPy answers empty input with special cases a 1-element probe cannot see
    (``nanquantile`` of an empty array is ``nanmean``'s: ``q``'s dimensions are dropped)."""
    if x.shape is None or None in x.shape or math.prod(x.shape) != 0:
        return None
    kwargs = dict(attrs)
    args = (kwargs.pop("q"),) if "q" in kwargs else ()
    with np.errstate(all="ignore"):
        out = np.asarray(fn(np.zeros(x.shape, x.dtype), *args, **kwargs))
    return AbstractValue(out.shape, out.dtype)


def _median_rule(kind: OpKind) -> Rule:
    generic, fn = ABSTRACT_EVAL[kind], kind.numpy_function

    def rule(attrs: dict, x: AbstractValue) -> AbstractValue:
        return _empty_probe(fn, attrs, x) or generic(attrs, x)
    return rule


for _kind in (OpKind.MEDIAN, OpKind.NANMEDIAN):
    ABSTRACT_EVAL[_kind] = _median_rule(_kind)

def _quietly(rule: Rule) -> Rule:
    """``rule`` with NumPy's warnings silenced: probing the nan functions on 1-element stand-ins
    warns ("Degrees of freedom <= 0", "Mean of empty slice") where the real call may not."""
    def quiet(attrs: dict, *args: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return rule(attrs, *args)
    return quiet


for _kind in (OpKind.NANSUM, OpKind.NANPROD, OpKind.NANMEAN, OpKind.NANMAX, OpKind.NANMIN,
              OpKind.NANSTD, OpKind.NANVAR, OpKind.NANARGMAX, OpKind.NANARGMIN, OpKind.MEDIAN,
              OpKind.NANMEDIAN, OpKind.PERCENTILE, OpKind.NANPERCENTILE, OpKind.QUANTILE,
              OpKind.NANQUANTILE):
    ABSTRACT_EVAL[_kind] = _quietly(ABSTRACT_EVAL[_kind])

ABSTRACT_EVAL[OpKind.NANCUMSUM] = _scan_rule(np.nancumsum)
ABSTRACT_EVAL[OpKind.NANCUMPROD] = _scan_rule(np.nancumprod)


def _ufunc_kwargs(attrs: dict) -> dict:
    """The keyword arguments of a ufunc method node (everything but the ufunc itself)."""
    return {k: v for k, v in attrs.items() if k != "ufunc"}


@_rule(OpKind.UFUNC_REDUCE)
def _ufunc_reduce(attrs: dict, x: AbstractValue) -> AbstractValue:
    ufunc, axis = attrs["ufunc"], attrs.get("axis", 0)
    kwargs = _ufunc_kwargs(attrs)
    if x.shape is not None and "initial" not in attrs and ufunc.identity is None:
        _no_identity_check(ufunc.__name__, x, axis)
    if x.ndim is None:
        kwargs["axis"] = None
    dtype = probe_dtype(ufunc.reduce, x, **kwargs)
    return AbstractValue(reduced_shape(x.shape, axis, attrs.get("keepdims", False)), dtype)


@_rule(OpKind.UFUNC_ACCUMULATE)
def _ufunc_accumulate(attrs: dict, x: AbstractValue) -> AbstractValue:
    ufunc, axis = attrs["ufunc"], attrs.get("axis", 0)
    if x.shape is not None:
        if not x.shape:
            raise TypeError("cannot accumulate on a scalar")
        normalize_axis(axis, len(x.shape))
    dtype = probe_dtype(ufunc.accumulate, x, **{**_ufunc_kwargs(attrs), "axis": 0})
    return AbstractValue(x.shape, dtype)


@_rule(OpKind.UFUNC_REDUCEAT)
def _ufunc_reduceat(attrs: dict, x: AbstractValue, indices: AbstractValue) -> AbstractValue:
    ufunc, axis = attrs["ufunc"], attrs.get("axis", 0)
    if indices.ndim is not None and indices.ndim != 1:
        raise ValueError("index must be 1-dimensional")
    if indices.dtype.kind not in "iu":
        raise TypeError(f"Cannot cast array data from {indices.dtype!r} to dtype('int64') "
                        "according to the rule 'safe'")
    kwargs = {**_ufunc_kwargs(attrs), "axis": 0}
    dtype = probe_dtype(lambda a: ufunc.reduceat(a.reshape(-1)[:1], np.zeros(1, np.intp),
                                                 **kwargs), x)
    if x.shape is None:
        return AbstractValue(None, dtype)
    if not x.shape:
        raise TypeError("cannot reduceat a scalar")
    ax = normalize_axis(axis, len(x.shape))
    count = None if indices.shape is None else indices.shape[0]
    return AbstractValue(x.shape[:ax] + (count,) + x.shape[ax + 1:], dtype)


@_rule(OpKind.UFUNC_AT)
def _ufunc_at(attrs: dict, a: AbstractValue, b: Any, *dyn: AbstractValue) -> AbstractValue:
    ufunc = attrs["ufunc"]
    target = getitem_shape(a.shape, attrs["index"], dyn)
    if b is not None:
        vshape = _shape(b)
        if target is not None and vshape is not None:
            merged = broadcast_shapes(vshape, target)
            if merged is not None and len(merged) > len(target):
                raise ValueError(f"array is not broadcastable to correct shape "
                                 f"{format_shape(vshape)} into {format_shape(target)}")
    # the loop NumPy picks for a's dtype with b (an error here is NumPy's error eagerly)
    probe = np.ones(1, a.dtype)
    with np.errstate(all="ignore"):
        if b is None:
            ufunc.at(probe, [0])
        else:
            ufunc.at(probe, [0], np.ones(1, b.dtype) if isinstance(b, AbstractValue) else b)
    return a


# -- named NumPy functions and data-dependent shapes (issue 14) --------------------------------
# Shapes follow NumPy's documented rules (with ``None`` dims flowing through); dtypes are
# NumPy's answer on 1-element probes (``probe_dtype``), which also raises NumPy's own error for
# an argument NumPy refuses (a float array to bincount, a 2-D array to correlate). A length
# that depends on the values (nonzero, unique, bincount, compress, trim_zeros) is ``None``.

_INTP = np.dtype(np.intp)


def _add_dims(*dims: int | None) -> int | None:
    return None if any(d is None for d in dims) else sum(dims)  # type: ignore[arg-type]


def _known_rank(x: AbstractValue, fn: str) -> tuple:
    if x.shape is None:
        raise ValueError(f"np.{fn} needs the rank of its input when tracing; give the "
                         "argument a known rank in input_signature")
    return x.shape


@_rule(OpKind.PAD)
def _pad(attrs: dict, x: AbstractValue) -> AbstractValue:
    shape = _known_rank(x, "pad")
    widths, mode = attrs["pad_width"], attrs["mode"]
    for axis, (d, (before, after)) in enumerate(zip(shape, widths)):
        if d == 0 and (before or after) and mode not in ("constant", "empty"):
            raise ValueError(f"can't extend empty axis {axis} using modes other than "
                             "'constant' or 'empty'")
    return AbstractValue(tuple(_add_dims(d, b, a) for d, (b, a) in zip(shape, widths)),
                         x.dtype)


@_rule(OpKind.DIAGFLAT)
def _diagflat(attrs: dict, v: AbstractValue) -> AbstractValue:
    n = _add_dims(v.size, abs(attrs.get("k", 0)))
    return AbstractValue((n, n), v.dtype)


@_rule(OpKind.INSERT)
def _insert(attrs: dict, arr: AbstractValue, values: Any) -> AbstractValue:
    """NumPy's ``insert``: one index (a scalar, or a one-element sequence or slice) inserts
    ``values`` as a block (its first or ``axis`` dim after padding it to ``arr``'s rank); more
    indices insert one slice each."""
    shape, axis, obj = _known_rank(arr, "insert"), attrs.get("axis"), attrs["obj"]
    if axis is None:
        shape, axis = (arr.size,), 0
    else:
        axis = normalize_axis(axis, len(shape))
    n = shape[axis]
    if isinstance(obj, slice):
        count = None if n is None else len(range(*obj.indices(n)))
    else:
        index = np.asarray(obj)
        count = int(np.count_nonzero(index)) if index.dtype == np.bool_ else index.size
    if count == 1 or (count is None and isinstance(obj, slice)):
        vshape = _shape(values)
        if vshape is None or count is None:
            numnew = None
        else:
            vshape = (1,) * (len(shape) - len(vshape)) + tuple(vshape)
            scalar = not isinstance(obj, (slice, tuple)) and np.ndim(obj) == 0
            numnew = vshape[0] if scalar else vshape[axis]
    else:
        numnew = count
    out = list(shape)
    out[axis] = _add_dims(n, numnew)
    return AbstractValue(tuple(out), arr.dtype)


@_rule(OpKind.BINCOUNT)
def _bincount(attrs: dict, x: AbstractValue, weights: Any) -> AbstractValue:
    # max(x) + 1, at least minlength: a length only the values decide
    dtype = probe_dtype(lambda a, w: np.bincount(a, w, attrs.get("minlength", 0)), x, weights)
    return AbstractValue((None,), dtype)


@_rule(OpKind.NONZERO)
def _nonzero(attrs: dict, x: AbstractValue) -> tuple:
    shape = _known_rank(x, "nonzero")
    if not shape:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                         "np.atleast_1d(scalar).nonzero() instead.")
    return tuple(AbstractValue((None,), _INTP) for _ in shape)


@_rule(OpKind.ARGWHERE)
def _argwhere(attrs: dict, x: AbstractValue) -> AbstractValue:
    return AbstractValue((None, len(_known_rank(x, "argwhere"))), _INTP)


@_rule(OpKind.COMPRESS)
def _compress(attrs: dict, condition: AbstractValue, a: AbstractValue) -> AbstractValue:
    if condition.ndim not in (None, 1):
        raise ValueError("condition must be a 1-d array")
    axis = attrs.get("axis")
    if axis is None:
        return AbstractValue((None,), a.dtype)
    shape = _known_rank(a, "compress")
    axis = normalize_axis(axis, len(shape))
    return AbstractValue(shape[:axis] + (None,) + shape[axis + 1:], a.dtype)


@_rule(OpKind.TRIM_ZEROS)
def _trim_zeros(attrs: dict, x: AbstractValue) -> AbstractValue:
    shape = _known_rank(x, "trim_zeros")
    axes = normalize_axes(attrs.get("axis"), len(shape))
    return AbstractValue(tuple(None if i in axes else d for i, d in enumerate(shape)), x.dtype)


@_rule(OpKind.UNIQUE)
def _unique(attrs: dict, x: AbstractValue) -> AbstractValue | tuple:
    shape = _known_rank(x, "unique")
    values = AbstractValue((None,), x.dtype)
    extra = []
    if attrs.get("return_index"):
        extra.append(AbstractValue((None,), _INTP))
    if attrs.get("return_inverse"):
        # NumPy 2 gives the inverse the input's shape (axis=None); ask it which rank
        probe = np.unique(np.zeros((1,) * len(shape), x.dtype), return_inverse=True)[1]
        inverse = shape if probe.ndim == len(shape) else (x.size,)
        extra.append(AbstractValue(tuple(inverse), _INTP))
    if attrs.get("return_counts"):
        extra.append(AbstractValue((None,), _INTP))
    return (values, *extra) if extra else values


@_rule(OpKind.ARGPARTITION)
def _argpartition(attrs: dict, x: AbstractValue) -> AbstractValue:
    out = _sorted(attrs, x, _INTP)
    axis = attrs.get("axis")
    n = None if out.shape is None else out.shape[0 if axis is None else axis]
    for k in np.atleast_1d(attrs["kth"]).tolist():
        if n and not -n <= k < n:  # NumPy checks no kth along an empty axis
            raise ValueError(f"kth(={k}) out of bounds ({n})")
    return out


@_rule(OpKind.HISTOGRAM)
def _histogram(attrs: dict, a: AbstractValue, bins: Any, weights: Any) -> tuple:
    static_bins = attrs.get("bins")
    if isinstance(bins, AbstractValue):
        if bins.ndim != 1:
            raise ValueError("`bins` must be 1d, when an array")
        edges = bins.shape[0]
        probe_bins: Any = np.arange(2, dtype=bins.dtype)
    elif isinstance(static_bins, str):
        edges, probe_bins = None, static_bins  # the data choose the number of bins
    else:
        edges, probe_bins = static_bins + 1, static_bins
    with np.errstate(all="ignore"):
        hist, bin_edges = np.histogram(
            np.ones(1, a.dtype), bins=probe_bins, range=attrs.get("range"),
            density=attrs.get("density"),
            weights=None if weights is None else np.ones(1, weights.dtype))
    n = None if edges is None else edges - 1
    return (AbstractValue((n,), hist.dtype), AbstractValue((edges,), bin_edges.dtype))


@_rule(OpKind.INTERP)
def _interp(attrs: dict, x: Any, xp: AbstractValue, fp: AbstractValue, left: Any, right: Any,
            period: Any) -> AbstractValue:
    for name, v in (("xp", xp), ("fp", fp)):
        if isinstance(v, AbstractValue) and v.ndim not in (None, 1):
            raise ValueError(f"object too deep for desired array ({name} must be 1-D)")
    n_xp, n_fp = _shape(xp)[0] if _shape(xp) else None, _shape(fp)[0] if _shape(fp) else None
    if n_xp is not None and n_fp is not None and n_xp != n_fp:
        raise ValueError("fp and xp are not of the same length.")
    dtype = probe_dtype(np.interp, x, xp, fp, left, right, period)
    return AbstractValue(_shape(x), dtype)


def einsum_shape(subscripts: str, shapes: Sequence[Shape | None]) -> Shape | None:
    """The result shape of ``np.einsum(subscripts, *operands)`` (explicit ``->`` or implicit
    output, ``...`` broadcasting, size-1 labels broadcasting as NumPy's einsum does)."""
    subs = subscripts.replace(" ", "")
    inputs, arrow, output = subs.partition("->")
    specs = inputs.split(",")
    if len(specs) != len(shapes):
        raise ValueError("more operands provided to einstein sum function than specified in "
                         "the subscripts string" if len(shapes) > len(specs) else
                         "fewer operands provided to einstein sum function than specified in "
                         "the subscripts string")
    if any(s is None for s in shapes):
        return None
    dims: dict[str, list[int | None]] = {}
    ellipses = []
    for i, (spec, shape) in enumerate(zip(specs, shapes)):
        head, dots, tail = spec.partition("...")
        n_ell = len(shape) - len(head) - len(tail) if dots else 0
        if n_ell < 0 or (not dots and len(spec) != len(shape)):
            raise ValueError("operand has more dimensions than subscripts given in einstein "
                             "sum, but no '...' ellipsis provided to broadcast the extra "
                             "dimensions." if len(spec) < len(shape) else
                             "einstein sum subscripts string contains too many subscripts "
                             f"for operand {i}")
        ellipses.append(tuple(shape[len(head):len(head) + n_ell]))
        labelled = tuple(shape[:len(head)]) + tuple(shape[len(shape) - len(tail):])
        for label, d in zip(head + tail, labelled):
            dims.setdefault(label, []).append(d)
    sizes: dict[str, int | None] = {}
    for label, ds in dims.items():
        known = {d for d in ds if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError("operands could not be broadcast together with remapped shapes; "
                             f"label '{label}' has sizes {sorted(known)}")
        sizes[label] = known.pop() if known else None if None in ds else 1
    ell = broadcast_shapes(*ellipses) or ()
    if not arrow:
        counts: dict[str, int] = {}
        for ch in inputs.replace(".", "").replace(",", ""):
            counts[ch] = counts.get(ch, 0) + 1
        return tuple(ell) + tuple(sizes[c] for c in sorted(counts) if counts[c] == 1)
    head, dots, tail = output.partition("...")
    if not dots and ell:
        raise ValueError("output has more dimensions than subscripts given in einstein sum, "
                         "but no '...' ellipsis provided to broadcast the extra dimensions.")
    for c in head + tail:
        if c not in sizes:
            raise ValueError(f"einstein sum subscripts string included output subscript '{c}' "
                             "which never appeared in an input")
    return tuple(sizes[c] for c in head) + (tuple(ell) if dots else ()) + tuple(
        sizes[c] for c in tail)


@_rule(OpKind.EINSUM)
def _einsum(attrs: dict, *operands: Any) -> AbstractValue:
    subscripts = attrs["subscripts"]
    kwargs = {k: v for k, v in attrs.items() if k not in ("subscripts", "optimize")}
    dtype = probe_dtype(lambda *ops: np.einsum(subscripts, *ops, **kwargs), *operands)
    return AbstractValue(einsum_shape(subscripts, [_shape(o) for o in operands]), dtype)


@_rule(OpKind.VDOT)
def _vdot(attrs: dict, a: Any, b: Any) -> AbstractValue:
    na = a.size if isinstance(a, AbstractValue) else 1
    nb = b.size if isinstance(b, AbstractValue) else 1
    if na is not None and nb is not None and na != nb:
        raise ValueError("vectors have different lengths")
    return AbstractValue((), probe_dtype(np.vdot, a, b))


def _correlate_rule(fn: Callable[..., Any]) -> Rule:
    """``np.correlate``/``np.convolve`` of two non-empty 1-D arrays: ``valid`` keeps
    ``max - min + 1`` values, ``same`` ``max``, ``full`` ``n + m - 1``."""
    def rule(attrs: dict, a: Any, v: Any) -> AbstractValue:
        mode = attrs.get("mode", "valid")
        dtype = probe_dtype(lambda x, y: fn(x, y, mode), a, v)
        n, m = (_shape(a) or (1,))[0], (_shape(v) or (1,))[0]
        for what, d in (("a", n), ("v", m)):
            if d == 0:
                raise ValueError(f"{what} cannot be empty")
        if n is None or m is None:
            return AbstractValue((None,), dtype)
        sizes = {"valid": max(n, m) - min(n, m) + 1, "same": max(n, m), "full": n + m - 1}
        return AbstractValue((sizes[mode],), dtype)
    return rule


ABSTRACT_EVAL[OpKind.CORRELATE] = _correlate_rule(np.correlate)
ABSTRACT_EVAL[OpKind.CONVOLVE] = _correlate_rule(np.convolve)


def _linalg_probe(a: AbstractValue, fn: Callable[[np.ndarray], Any]) -> Any:
    """``fn`` on a 1x1 identity of ``a``'s dtype: NumPy's result dtypes (and its refusal of
    dtypes linalg does not take)."""
    return fn(np.eye(1, dtype=a.dtype))


@_rule(OpKind.SVD)
def _svd(attrs: dict, a: AbstractValue) -> AbstractValue | tuple:
    shape = _known_rank(a, "linalg.svd")
    if len(shape) < 2:
        raise np.linalg.LinAlgError(f"{len(shape)}-dimensional array given. Array must be at "
                                    "least two-dimensional")
    full, uv = attrs.get("full_matrices", True), attrs.get("compute_uv", True)
    probe = _linalg_probe(a, lambda e: np.linalg.svd(e, compute_uv=uv))
    *batch, m, n = shape
    k = None if m is None or n is None else min(m, n)
    s = AbstractValue(tuple(batch) + (k,), (probe.S if uv else probe).dtype)
    if not uv:
        return s
    u = AbstractValue(tuple(batch) + (m, m if full else k), probe.U.dtype)
    vh = AbstractValue(tuple(batch) + (n if full else k, n), probe.Vh.dtype)
    return (u, s, vh)


@_rule(OpKind.SLOGDET)
def _slogdet(attrs: dict, a: AbstractValue) -> tuple:
    _square_check(a)
    sign, logabsdet = _linalg_probe(a, np.linalg.slogdet)
    batch = None if a.shape is None else a.shape[:-2]
    return (AbstractValue(batch, np.asarray(sign).dtype),
            AbstractValue(batch, np.asarray(logabsdet).dtype))


# -- coverage: linalg, fft and array helpers (issue 14) ----------------------------------------
# Shapes by NumPy's documented rules (``None`` dims flow through); dtypes, and NumPy's refusal
# of an argument it does not take, from NumPy itself on small stand-ins (``probe_dtype``, the
# 1x1 identity of ``_linalg_probe``).

@_rule(OpKind.REAL, OpKind.IMAG)
def _real_imag(attrs: dict, x: AbstractValue) -> AbstractValue:
    return AbstractValue(x.shape, np.empty(0, x.dtype).real.dtype)


@_rule(OpKind.SEARCHSORTED)
def _searchsorted(attrs: dict, a: AbstractValue, v: Any, sorter: Any) -> AbstractValue:
    side = attrs.get("side", "left")
    dtype = probe_dtype(lambda x, y, s: np.searchsorted(x, y, side, None if s is None else
                                                        np.zeros_like(s)), a, v, sorter)
    return AbstractValue(_shape(v), dtype)


@_rule(OpKind.DIGITIZE)
def _digitize(attrs: dict, x: Any, bins: AbstractValue) -> AbstractValue:
    right = attrs.get("right", False)
    dtype = probe_dtype(lambda a, b: np.digitize(a, b, right), x, bins)
    return AbstractValue(_shape(x), dtype)


@_rule(OpKind.PARTITION)
def _partition(attrs: dict, x: AbstractValue) -> AbstractValue:
    return AbstractValue(ABSTRACT_EVAL[OpKind.ARGPARTITION](attrs, x).shape, x.dtype)


@_rule(OpKind.LEXSORT)
def _lexsort(attrs: dict, *keys: AbstractValue) -> AbstractValue:
    """One 2-D (or more) array of keys, or several keys of one shape: indices of that shape
    (a key's shape, without the leading key axis of a single array)."""
    axis = attrs.get("axis", -1)
    if attrs.get("array"):
        shape = _known_rank(keys[0], "lexsort")
        if not shape:
            raise TypeError("need sequence of keys with len > 0 in lexsort")
        shape = shape[1:] if len(shape) > 1 else shape  # a 1-D array is one key
        probe = np.ones((1,) * len(keys[0].shape), keys[0].dtype)
    else:
        shape = broadcast_shapes(*[k.shape for k in keys])
        if any(k.shape is not None and len(k.shape) != len(shape or ()) for k in keys):
            raise ValueError("all keys need to be the same shape")
        probe = [np.ones((1,) * len(shape or ()), k.dtype) for k in keys]
    out = np.lexsort(probe, axis=axis)
    return AbstractValue(None if shape is None else tuple(shape), out.dtype)


@_rule(OpKind.ISIN)
def _isin(attrs: dict, element: Any, test: Any) -> AbstractValue:
    probe_dtype(lambda e, t: np.isin(e, t, **attrs), element, test)
    return AbstractValue(_shape(element), np.dtype(np.bool_))


@_rule(OpKind.RAVEL_MULTI_INDEX)
def _ravel_multi_index(attrs: dict, *index: Any) -> AbstractValue:
    dims = attrs["dims"]
    if len(index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    probe = tuple(np.zeros((1,) * len(_shape(i) or ()), _weak_dtype(i)) for i in index)
    kw = {k: v for k, v in attrs.items() if k != "dims"}
    if all(d > 0 for d in dims):
        np.ravel_multi_index(probe, dims, **kw)  # NumPy's checks of dtypes, mode and order
    return AbstractValue(broadcast_shapes(*[_shape(i) for i in index]), _INTP)


def _weak_dtype(x: Any) -> np.dtype:
    return x.dtype if isinstance(x, AbstractValue) else np.asarray(x).dtype


@_rule(OpKind.UNRAVEL_INDEX)
def _unravel_index(attrs: dict, indices: AbstractValue) -> tuple:
    shape = attrs["shape"]
    if indices.dtype.kind not in "iub":
        raise TypeError("only int indices permitted")
    return tuple(AbstractValue(indices.shape, _INTP) for _ in shape)


def _bits_axis(attrs: dict, a: AbstractValue, fn: str) -> tuple[Shape, int]:
    axis = attrs.get("axis")
    if axis is None:
        return (a.size,), 0
    shape = _known_rank(a, fn)
    return shape, normalize_axis(axis, len(shape))


@_rule(OpKind.PACKBITS)
def _packbits(attrs: dict, a: AbstractValue) -> AbstractValue:
    if a.dtype.kind not in "iub":
        raise TypeError("Expected an input array of integer or boolean data type")
    shape, axis = _bits_axis(attrs, a, "packbits")
    n = shape[axis]
    out = list(shape)
    out[axis] = None if n is None else -(-n // 8)
    return AbstractValue(tuple(out), np.dtype(np.uint8))


@_rule(OpKind.UNPACKBITS)
def _unpackbits(attrs: dict, a: AbstractValue) -> AbstractValue:
    if a.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    shape, axis = _bits_axis(attrs, a, "unpackbits")
    n, count = shape[axis], attrs.get("count")
    bits = None if n is None else 8 * n
    if count is not None and bits is not None:
        bits = count if count >= 0 else max(bits + count, 0)
    elif count is not None and count >= 0:
        bits = count
    out = list(shape)
    out[axis] = bits
    return AbstractValue(tuple(out), np.dtype(np.uint8))


@_rule(OpKind.CHOLESKY)
def _cholesky(attrs: dict, a: AbstractValue) -> AbstractValue:
    _square_check(a)
    return AbstractValue(a.shape, _linalg_probe(a, lambda e: np.linalg.cholesky(e)).dtype)


def _at_least_2d(a: AbstractValue, fn: str) -> tuple:
    shape = _known_rank(a, fn)
    if len(shape) < 2:
        raise np.linalg.LinAlgError(f"{len(shape)}-dimensional array given. Array must be at "
                                    "least two-dimensional")
    return shape


def _min_dim(m: int | None, n: int | None) -> int | None:
    return None if m is None or n is None else min(m, n)


@_rule(OpKind.QR)
def _qr(attrs: dict, a: AbstractValue) -> AbstractValue | tuple:
    *batch, m, n = _at_least_2d(a, "linalg.qr")
    mode = attrs.get("mode", "reduced")
    probe = _linalg_probe(a, lambda e: np.linalg.qr(e, mode=mode))
    k, b = _min_dim(m, n), tuple(batch)
    if mode == "r":
        return AbstractValue(b + (k, n), probe.dtype)
    if mode == "raw":
        return (AbstractValue(b + (n, m), probe[0].dtype), AbstractValue(b + (k,), probe[1].dtype))
    q_cols, r_rows = (m, m) if mode == "complete" else (k, k)
    return (AbstractValue(b + (m, q_cols), probe.Q.dtype),
            AbstractValue(b + (r_rows, n), probe.R.dtype))


@_rule(OpKind.EIGH)
def _eigh(attrs: dict, a: AbstractValue) -> tuple:
    _square_check(a)
    w, v = _linalg_probe(a, lambda e: np.linalg.eigh(e, **attrs))
    return (AbstractValue(None if a.shape is None else a.shape[:-1], w.dtype),
            AbstractValue(a.shape, v.dtype))


@_rule(OpKind.EIGVALSH)
def _eigvalsh(attrs: dict, a: AbstractValue) -> AbstractValue:
    _square_check(a)
    w = _linalg_probe(a, lambda e: np.linalg.eigvalsh(e, **attrs))
    return AbstractValue(None if a.shape is None else a.shape[:-1], w.dtype)


@_rule(OpKind.LSTSQ)
def _lstsq(attrs: dict, a: AbstractValue, b: AbstractValue) -> tuple:
    """``x`` (N,) or (N, K); the residuals are empty unless the rank is N < M, a length
    the values decide; the rank; the singular values (min(M, N),)."""
    ashape, bshape = _known_rank(a, "linalg.lstsq"), _known_rank(b, "linalg.lstsq")
    if len(ashape) != 2:
        raise np.linalg.LinAlgError(f"{len(ashape)}-dimensional array given. Array must be "
                                    "two-dimensional")
    if len(bshape) not in (1, 2):
        raise np.linalg.LinAlgError(f"{len(bshape)}-dimensional array given. Array must be "
                                    "one or two-dimensional")
    m, n = ashape
    if m is not None and bshape[0] is not None and m != bshape[0]:
        raise np.linalg.LinAlgError("Incompatible dimensions")
    x, res, rank, sv = np.linalg.lstsq(np.eye(1, dtype=a.dtype),
                                       np.ones((1,) * len(bshape), b.dtype),
                                       **attrs)
    return (AbstractValue((n,) + tuple(bshape[1:]), x.dtype), AbstractValue((None,), res.dtype),
            AbstractValue((), np.asarray(rank).dtype), AbstractValue((_min_dim(m, n),), sv.dtype))


@_rule(OpKind.PINV)
def _pinv(attrs: dict, a: AbstractValue) -> AbstractValue:
    *batch, m, n = _at_least_2d(a, "linalg.pinv")
    dtype = _linalg_probe(a, lambda e: np.linalg.pinv(e, **attrs)).dtype
    return AbstractValue(tuple(batch) + (n, m), dtype)


def _core_dims(x: Any, core: int, fn: str) -> tuple[Shape, Shape]:
    shape = _known_rank(x, fn) if isinstance(x, AbstractValue) else np.shape(x)
    if len(shape) < core:
        raise ValueError(f"{fn}: Input operand does not have enough dimensions (has "
                         f"{len(shape)}, gufunc core with signature requires {core})")
    return tuple(shape[:len(shape) - core]), tuple(shape[len(shape) - core:])


def _same_dim(a: int | None, b: int | None, fn: str) -> None:
    if a is not None and b is not None and a != b:
        raise ValueError(f"{fn}: Input operand 1 has a mismatch in its core dimension 0 "
                         f"({b} is different from {a})")


@_rule(OpKind.VECDOT)
def _vecdot(attrs: dict, x1: Any, x2: Any) -> AbstractValue:
    (b1, (n1,)), (b2, (n2,)) = _core_dims(x1, 1, "vecdot"), _core_dims(x2, 1, "vecdot")
    _same_dim(n1, n2, "vecdot")
    return AbstractValue(broadcast_shapes(b1, b2), probe_dtype(np.vecdot, x1, x2))


@_rule(OpKind.MATVEC)
def _matvec(attrs: dict, a: Any, v: Any) -> AbstractValue:
    (b1, (m, n)), (b2, (k,)) = _core_dims(a, 2, "matvec"), _core_dims(v, 1, "matvec")
    _same_dim(n, k, "matvec")
    return AbstractValue(broadcast_shapes(b1, b2) + (m,), probe_dtype(np.matvec, a, v))


@_rule(OpKind.VECMAT)
def _vecmat(attrs: dict, v: Any, a: Any) -> AbstractValue:
    (b1, (k,)), (b2, (m, n)) = _core_dims(v, 1, "vecmat"), _core_dims(a, 2, "vecmat")
    _same_dim(k, m, "vecmat")
    return AbstractValue(broadcast_shapes(b1, b2) + (n,), probe_dtype(np.vecmat, v, a))


#: np.fft transforms that take one axis (``n``, ``axis``) and their result length along it
#: given the length ``n`` asked for (or ``None``: from the input's length ``m``)
_FFT_1D = {"fft": lambda n, m: n or m, "ifft": lambda n, m: n or m,
           "rfft": lambda n, m: _half(n or m), "ihfft": lambda n, m: _half(n or m),
           "irfft": lambda n, m: n or _twice(m), "hfft": lambda n, m: n or _twice(m)}


def _half(n: int | None) -> int | None:
    return None if n is None else n // 2 + 1


def _twice(m: int | None) -> int | None:
    return None if m is None else 2 * (m - 1)


@_rule(OpKind.FFT)
def _fft(attrs: dict, x: AbstractValue) -> AbstractValue:
    """Shapes by ``np.fft``'s rules (``_cook_nd_args``): each transformed axis takes its
    ``n``/``s`` entry or keeps its length; rfft halves the last axis (``n // 2 + 1``), irfft
    and hfft double it back (``2 * (m - 1)``) unless ``n``/``s`` says. Dtype and NumPy's
    errors (bad axes, ``n < 1``, a bad ``norm``) from the transform of a small stand-in."""
    transform = attrs["transform"]
    kw = {k: v for k, v in attrs.items() if k != "transform"}
    shape = list(_known_rank(x, f"fft.{transform}"))
    probe = getattr(np.fft, transform)(np.ones((2,) * len(shape), x.dtype), **kw)
    if transform in _FFT_1D:
        axis = normalize_axis(kw.get("axis", -1), len(shape))
        shape[axis] = _FFT_1D[transform](kw.get("n"), shape[axis])
        return AbstractValue(tuple(shape), probe.dtype)
    s, axes = kw.get("s"), kw.get("axes")
    if axes is None:
        axes = (-2, -1) if transform.endswith("2") else \
            range(-len(s), 0) if s is not None else range(len(shape))
    axes = [normalize_axis(a, len(shape)) for a in axes]
    sizes = list(s) if s is not None else [shape[a] for a in axes]
    real = transform.startswith(("rfft", "irfft"))
    if real and s is None and transform.startswith("irfft"):
        sizes[-1] = _twice(shape[axes[-1]])
    for a, n in zip(axes, sizes):
        shape[a] = n
    if real and transform.startswith("rfft"):
        shape[axes[-1]] = _half(sizes[-1])
    return AbstractValue(tuple(shape), probe.dtype)


def abstract_eval(op: OpKind, attrs: dict, args: Sequence[Any]) -> AbstractValue | None:
    """Output abstract value of ``op`` applied to ``args`` (AbstractValues or literals)."""
    rule = ABSTRACT_EVAL.get(op)
    if rule is None:
        raise NotImplementedError(f"no abstract-evaluation rule for op {op!r}")
    return rule(attrs, *args)


assert all(k in ABSTRACT_EVAL for k in OpKind)
