"""Abstract values (shape + dtype), the shape helpers every rule uses, and the rule table.

An :class:`AbstractValue` is what the tracer knows about a value before it exists: its dtype
(always concrete) and its shape, where a dimension may be ``None`` (unknown size) and the whole
shape may be ``None`` (unknown rank). ``abstract_rule`` registers a rule in ``ABSTRACT_EVAL``;
the family modules of this package hold the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast, overload

import numpy as np

from ..ops import OpKind
from ..params import make_params
from ..registry import OpTable

Shape = tuple[int | None, ...]
#: A shape whose every dim is known
KnownShape = tuple[int, ...]


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
        # (no cast: kx.saved_model.export_source spells this class, and what it calls, as
        # source)
        if self.shape is None:
            return None
        size = 1
        for d in self.shape:
            if d is None:
                return None
            size *= d
        return size

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


# Shape helpers


def shape_of(x: Any) -> Shape | None:
    return x.shape if isinstance(x, AbstractValue) else ()


@overload
def broadcast_shapes(*shapes: Shape) -> Shape: ...


@overload
def broadcast_shapes(*shapes: Shape | None) -> Shape | None: ...


def broadcast_shapes(*shapes: Shape | None) -> Shape | None:
    """NumPy broadcasting over shapes that may hold ``None`` dims (or be of unknown rank)."""
    if None in shapes:
        return None
    known_shapes = cast("tuple[Shape, ...]", shapes)  # no ``None`` among them (checked above)
    # The common cases first: 0-d operands (scalars) change nothing, and operands of one
    # shape broadcast to it (tracing asks this for every elementwise op).
    ranked = [s for s in known_shapes if s]
    if not ranked:
        return ()
    first = ranked[0]
    if len(ranked) == 1 or all(s == first for s in ranked):
        return tuple(first)
    ndim = max((len(s) for s in known_shapes), default=0)
    out: list[int | None] = []
    for i in range(-ndim, 0):
        dims = [s[i] for s in known_shapes if len(s) >= -i]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError(
                "operands could not be broadcast together with shapes "
                + " ".join(
                    format_shape(s).replace("[", "(").replace("]", ")") for s in known_shapes
                )
            )
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


def operand_dtype(x: Any) -> Any:
    """What ``resolve_dtypes`` takes for an operand: a dtype, or ``int/float/complex`` if weak."""
    if isinstance(x, AbstractValue):
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(np.bool_)
    return type(x)


def result_type(*args: Any) -> np.dtype:
    """``np.result_type`` with Python scalars weak (NEP 50)."""
    return np.result_type(*[a.dtype if isinstance(a, AbstractValue) else a for a in args])


# Rules

#: What a graph node holds as its ``aval``: one abstract value, one per output of a
#: multi-output op (eigh, unique with counts, opaque and random calls returning tuples), or
#: ``None`` for an op without a value (print, variable writes).
NodeAval = AbstractValue | tuple[AbstractValue, ...] | None

#: A rule gives what the node it types holds: see :data:`NodeAval`.
Rule = Callable[..., NodeAval]


#: Each op's abstract evaluation: ``ABSTRACT_EVAL[op](attrs, *args)``.
ABSTRACT_EVAL: OpTable[Rule] = OpTable("abstract evaluation")
abstract_rule = ABSTRACT_EVAL.register


# Shapes follow NumPy's documented rules (with ``None`` dims flowing through); dtypes are
# NumPy's answer on 1-element probes (``probe_dtype``), which also raises NumPy's own error for
# an argument NumPy refuses (a float array to bincount, a 2-D array to correlate). A length
# that depends on the values (nonzero, unique, bincount, compress, trim_zeros) is ``None``.

INTP = np.dtype(np.intp)


def known_rank(x: AbstractValue, fn: str) -> Shape:
    if x.shape is None:
        raise ValueError(
            f"np.{fn} needs the rank of its input when tracing; give the "
            "argument a known rank in input_signature"
        )
    return x.shape


def dtype_of(x: Any) -> np.dtype:
    return x.dtype if isinstance(x, AbstractValue) else np.asarray(x).dtype


def abstract_eval(op: OpKind, attrs: Mapping[str, Any], args: Sequence[Any]) -> NodeAval:
    """Output abstract value(s) of ``op`` applied to ``args`` (AbstractValues or literals):
    a tuple for a multi-output op, ``None`` for an op without a value. ``attrs``: the op's
    parameters, a value of its class or a mapping read into one (the rule gets the value)."""
    rule = ABSTRACT_EVAL.get(op)
    if rule is None:
        raise NotImplementedError(f"no abstract-evaluation rule for op {op!r}")
    return rule(make_params(op, attrs), *args)
