"""The VJP rule table: one vector-Jacobian product rule per differentiable :class:`OpKind`.

JAX's per-primitive transpose rules are the model. ``VJP[op](p, g)`` takes the forward node
(:class:`Primal`: its arguments as traced values or inline literals, its traced result) and
the cotangent ``g`` of its result, and returns one cotangent per argument, in ``node.args``
order: a traced value, ``None`` (no gradient flows there), or a zero-argument callable that
makes it, so cotangents nobody asked for are never recorded. Rules are written in NumPy on
traced values, so the backward pass is an ordinary graph of existing ops: the optimiser and
the fused backends treat it like any other, and a tape recording it can differentiate again.

Cotangents are always real floating point; the backward pass casts each to its argument's
dtype and never asks a rule about integer or boolean values. Conventions where NumPy's
function has no derivative:

* ``maximum``/``minimum``/``fmax``/``fmin`` ties: the gradient goes to the first operand
  (TensorFlow's convention; NumPy documents no derivative).
* ``max``/``min`` reductions: the whole gradient goes to the first occurrence of the extreme
  value in C order over the reduced axes: the element ``np.argmax``/``np.argmin`` documents
  returning ("the indices corresponding to the first occurrence are returned").
* ``absolute``/``sign``-like kinks: ``sign(0) = 0`` (so ``d|x|/dx`` at 0 is 0, as in JAX).
* ``clip(x, lo, hi)`` as ``minimum(maximum(x, lo), hi)`` with the tie rule above: at ``x ==
  lo`` or ``x == hi`` the gradient goes to ``x``.
* ``prod``/``cumprod`` divide by the input: where an input is 0 the result is not finite.

Ops whose result is integer or boolean (comparisons, ``argmax``, ``isnan``, bit operations)
and piecewise-constant float ops (``floor``, ``sign``, ...) are in :data:`ZERO_GRADIENT`.
Control flow (``cond``) is registered by :mod:`kernel_ext.autodiff.backward`, which it needs;
the rules built by composition by :mod:`kernel_ext.autodiff.decompositions`; the rules of
the linear-algebra ops by :mod:`kernel_ext.ops.linalg`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..ir import DynamicIndex, Node, OpKind
from ..ir.abstract import normalize_axes
from ..ir.registry import OpTable
from ..trace import Tensor, bind

K = OpKind


@dataclass
class Primal:
    """One forward node as a rule sees it."""

    node: Node
    #: ``node.args`` with every input node as a traced value (literals as they are).
    args: list[Any]
    #: The node's traced result (``None`` for multi-result nodes).
    out: Tensor | None

    @property
    def attrs(self) -> dict:
        return self.node.attrs

    def shape(self, i: int) -> tuple | None:
        """The static shape of argument ``i`` (a literal is 0-d)."""
        a = self.args[i]
        return a.shape if isinstance(a, Tensor) else np.shape(a)


Cotangent = Any  # Tensor | None | Callable[[], Tensor]
Rule = Callable[[Primal, Any], Sequence[Cotangent]]

#: op -> its VJP rule (the table).
VJP: OpTable[Rule] = OpTable("gradient (VJP)")

#: Ops whose derivative is zero wherever it exists: piecewise-constant float functions and
#: ops whose results are integer or boolean (no cotangent ever reaches these).
ZERO_GRADIENT = frozenset(
    {
        K.SIGN,
        K.FLOOR,
        K.CEIL,
        K.TRUNC,
        K.RINT,
        K.ISNAN,
        K.ISINF,
        K.ISFINITE,
        K.SIGNBIT,
        K.LOGICAL_NOT,
        K.INVERT,
        K.FLOOR_DIVIDE,
        K.HEAVISIDE,
        K.EQUAL,
        K.NOT_EQUAL,
        K.LESS,
        K.LESS_EQUAL,
        K.GREATER,
        K.GREATER_EQUAL,
        K.LOGICAL_AND,
        K.LOGICAL_OR,
        K.LOGICAL_XOR,
        K.BITWISE_AND,
        K.BITWISE_OR,
        K.BITWISE_XOR,
        K.LEFT_SHIFT,
        K.RIGHT_SHIFT,
        K.GCD,
        K.LCM,
        K.ANY,
        K.ALL,
        K.ARGMAX,
        K.ARGMIN,
        K.ARGSORT,
        K.DIM,
        K.ARANGE,
        # ops with integer or boolean results, or piecewise constant (spacing)
        K.NONZERO,
        K.ARGWHERE,
        K.ARGPARTITION,
        K.NANARGMAX,
        K.NANARGMIN,
        K.SEARCHSORTED,
        K.DIGITIZE,
        K.LEXSORT,
        K.ISIN,
        K.RAVEL_MULTI_INDEX,
        K.UNRAVEL_INDEX,
        K.PACKBITS,
        K.UNPACKBITS,
        K.BITWISE_COUNT,
        K.SPACING,
    }
)


#: What a rule does beyond the textbook derivative (docs/gradients.md shows these).
NOTES: OpTable[str] = OpTable("gradient note")
NOTES.update(
    {
        K.MAXIMUM: "ties: the first operand",
        K.MINIMUM: "ties: the first operand",
        K.FMAX: "ties: the first operand; a NaN operand gets none",
        K.FMIN: "ties: the first operand; a NaN operand gets none",
        K.MAX: "ties: the first occurrence (C order over the axes), as np.argmax documents",
        K.MIN: "ties: the first occurrence (C order over the axes), as np.argmin documents",
        K.ABSOLUTE: "0 at 0",
        K.FABS: "0 at 0",
        K.POWER: "d/db uses log(a), a == 0 taken as 1",
        K.FLOAT_POWER: "as power",
        K.CLIP: "as minimum(maximum(x, lo), hi): at a bound the gradient goes to x",
        K.PROD: "divides by x: not finite where x has zeros",
        K.CUMPROD: "divides by x: not finite where x has zeros",
        K.CAST: "float to float: cast back; from integers: none",
        K.COPY: "none when made by kx.stop_gradient",
        K.GETITEM: "static, dynamic, boolean masks; integer arrays scatter-add (np.bincount)",
        K.SETITEM: "repeated integer-array positions: undefined, as NumPy's write order",
        K.CONCATENATE: "static sizes along the axis",
        K.SORT: "static shapes",
        K.COND: "a cond on the same predicate re-running each branch",
        K.WHILE: "stacks each iteration's state, then a reverse loop replays the body's VJP; "
        "loop variables keep their shapes; any order (the reverse loop is a loop)",
        K.GET_OUTPUT: "routes the cotangent to its cond or while output",
        K.NUMPY_CALL: "names the function and the line",
        K.RANDOM_CALL: "names the function",
        K.TENSOR_ARRAY_WRITE: "not yet",
        K.ASSIGN_VARIABLE: "no result: never on a gradient path",
        K.ASSIGN_ADD_VARIABLE: "no result: never on a gradient path",
        K.ASSIGN_SUB_VARIABLE: "no result: never on a gradient path",
        K.PRINT: "no result: never on a gradient path",
        K.CHECK: "no result: never on a gradient path (a replayed forward pass checks again)",
        K.NANMAX: "ties: the first occurrence; NaNs get none",
        K.NANMIN: "ties: the first occurrence; NaNs get none",
        K.NANPROD: "divides by x: not finite where x has zeros",
        K.UFUNC_REDUCE: "add, multiply, maximum, minimum (ties: the first occurrence)",
        K.UFUNC_AT: "add, subtract (np.add.at: a scatter-add)",
    }
)


#: Register a VJP rule for some ops: ``@rule(OpKind.SIN)``.
rule = VJP.register


def _zero_rule(p: Primal, g: Any) -> list[Cotangent]:
    return [None] * len(p.args)


for _kind in ZERO_GRADIENT:
    VJP.add(_kind, _zero_rule)


# -- helpers ------------------------------------------------------------------------------------


def swap_last_axes(a: Any) -> Any:
    """``a`` with its last two axes exchanged (the transpose of a stack of matrices)."""
    return np.swapaxes(a, -1, -2)


def unbroadcast(g: Any, shape: tuple | None) -> Any:
    """``g`` summed back to ``shape`` (the operand's) over the axes broadcasting added."""
    gs = g.shape
    if shape is None or gs is None or tuple(gs) == tuple(shape):
        return g
    lead = len(gs) - len(shape)
    if lead > 0:
        g = np.sum(g, axis=tuple(range(lead)))
    axes = tuple(i for i, (s, d) in enumerate(zip(shape, g.shape)) if s == 1 and d != 1)
    if axes:
        g = np.sum(g, axis=axes, keepdims=True)
    return g


def _elementwise(p: Primal, g: Any, *parts: Callable[[], Any] | None) -> list[Cotangent]:
    """Cotangents of an elementwise op: each part (``None``: no gradient) unbroadcast to
    its operand's shape; literal operands get none."""
    out: list[Cotangent] = []
    for i, part in enumerate(parts):
        if part is None or not isinstance(p.args[i], Tensor):
            out.append(None)
        else:
            out.append(lambda part=part, i=i: unbroadcast(part(), p.shape(i)))
    return out


def _unary(derivative: Callable[[Any, Any], Any]) -> Rule:
    """A unary op whose cotangent is ``g * derivative(x, out)``."""

    def vjp(p: Primal, g: Any) -> list[Cotangent]:
        return [lambda: g * derivative(p.args[0], p.out)]

    return vjp


def expand_to(g: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """The cotangent ``g`` of a reduction of ``x`` over ``axis``, broadcast back to x."""
    if x.shape is None:
        return g + np.zeros_like(x)
    axes = normalize_axes(axis, len(x.shape))
    if not keepdims and axes:
        g = np.expand_dims(g, axes)
    if None in x.shape:
        return g + np.zeros_like(x)
    return np.broadcast_to(g, x.shape)


def _count(x: Any, axis: Any) -> Any:
    """How many elements a reduction of ``x`` over ``axis`` folds (a Python int if static)."""
    axes = normalize_axes(axis, len(x.shape))
    dims = [x.shape[a] for a in axes]
    if None not in dims:
        return math.prod(dims)
    return np.sum(np.ones_like(x), axis=axes, keepdims=True)


LN2, LN10 = math.log(2.0), math.log(10.0)

# -- elementwise, unary -----------------------------------------------------------------------

rule(K.NEGATIVE)(lambda p, g: [lambda: -g])
rule(K.POSITIVE, K.CONJUGATE)(lambda p, g: [g])
rule(K.ABSOLUTE, K.FABS)(_unary(lambda x, y: np.sign(x)))
rule(K.SQRT)(_unary(lambda x, y: 0.5 / y))
rule(K.CBRT)(_unary(lambda x, y: (1.0 / 3.0) / (y * y)))
rule(K.SQUARE)(_unary(lambda x, y: 2.0 * x))
rule(K.RECIPROCAL)(_unary(lambda x, y: -(y * y)))
rule(K.EXP)(_unary(lambda x, y: y))
rule(K.EXP2)(_unary(lambda x, y: y * LN2))
rule(K.EXPM1)(_unary(lambda x, y: y + 1.0))
rule(K.LOG)(_unary(lambda x, y: 1.0 / x))
rule(K.LOG2)(_unary(lambda x, y: 1.0 / (x * LN2)))
rule(K.LOG10)(_unary(lambda x, y: 1.0 / (x * LN10)))
rule(K.LOG1P)(_unary(lambda x, y: 1.0 / (x + 1.0)))
rule(K.SIN)(_unary(lambda x, y: np.cos(x)))
rule(K.COS)(_unary(lambda x, y: -np.sin(x)))
rule(K.TAN)(_unary(lambda x, y: 1.0 + y * y))
rule(K.ARCSIN)(_unary(lambda x, y: 1.0 / np.sqrt(1.0 - x * x)))
rule(K.ARCCOS)(_unary(lambda x, y: -1.0 / np.sqrt(1.0 - x * x)))
rule(K.ARCTAN)(_unary(lambda x, y: 1.0 / (1.0 + x * x)))
rule(K.SINH)(_unary(lambda x, y: np.cosh(x)))
rule(K.COSH)(_unary(lambda x, y: np.sinh(x)))
rule(K.TANH)(_unary(lambda x, y: 1.0 - y * y))
rule(K.ARCSINH)(_unary(lambda x, y: 1.0 / np.sqrt(x * x + 1.0)))
rule(K.ARCCOSH)(_unary(lambda x, y: 1.0 / np.sqrt(x * x - 1.0)))
rule(K.ARCTANH)(_unary(lambda x, y: 1.0 / (1.0 - x * x)))
rule(K.DEG2RAD)(_unary(lambda x, y: math.pi / 180.0))
rule(K.RAD2DEG)(_unary(lambda x, y: 180.0 / math.pi))


# -- elementwise, binary ----------------------------------------------------------------------


@rule(K.ADD)
def _add(p: Primal, g: Any) -> list[Cotangent]:
    return _elementwise(p, g, lambda: g, lambda: g)


@rule(K.SUBTRACT)
def _subtract(p: Primal, g: Any) -> list[Cotangent]:
    return _elementwise(p, g, lambda: g, lambda: -g)


@rule(K.MULTIPLY)
def multiply_vjp(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    return _elementwise(p, g, lambda: g * b, lambda: g * a)


@rule(K.DIVIDE)
def _divide(p: Primal, g: Any) -> list[Cotangent]:
    _a, b = p.args
    return _elementwise(p, g, lambda: g / b, lambda: -g * p.out / b)


@rule(K.POWER, K.FLOAT_POWER)
def _power(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args

    def da() -> Any:
        if not isinstance(b, Tensor) and b == 0:
            return g * 0.0
        if not isinstance(b, Tensor) and b == 2:
            return g * (2.0 * a)
        # b * a**(b-1) written as b * out / a would be wrong at a == 0
        return g * (b * np.power(a, b - 1))

    def db() -> Any:
        # log(a) with a == 0 replaced by 1: d/db 0**b is 0 where b > 0 (JAX's choice)
        safe = np.where(a == 0, 1.0, a) if isinstance(a, Tensor) else (a if a != 0 else 1.0)
        return g * (p.out * np.log(safe))

    return _elementwise(p, g, da, db if _float_operand(b) else None)


def _float_operand(x: Any) -> bool:
    return isinstance(x, Tensor) and x.dtype.kind == "f"


@rule(K.MAXIMUM, K.MINIMUM, K.FMAX, K.FMIN)
def _extremum(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    op = p.node.op
    first = (a >= b) if op in (K.MAXIMUM, K.FMAX) else (a <= b)
    if op in (K.FMAX, K.FMIN):  # fmax/fmin ignore a NaN operand
        first = (first | np.isnan(b)) & ~np.isnan(a) if isinstance(a, Tensor) else first
    return _elementwise(p, g, lambda: np.where(first, g, 0.0), lambda: np.where(first, 0.0, g))


@rule(K.ARCTAN2)
def _arctan2(p: Primal, g: Any) -> list[Cotangent]:
    y, x = p.args
    return _elementwise(p, g, lambda: g * x / (x * x + y * y), lambda: -g * y / (x * x + y * y))


@rule(K.HYPOT)
def _hypot(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    return _elementwise(p, g, lambda: g * a / p.out, lambda: g * b / p.out)


@rule(K.COPYSIGN)
def _copysign(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    return _elementwise(p, g, lambda: np.where(np.signbit(a) == np.signbit(b), g, -g), None)


@rule(K.LOGADDEXP, K.LOGADDEXP2)
def _logaddexp(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    exp = np.exp if p.node.op is K.LOGADDEXP else np.exp2
    return _elementwise(p, g, lambda: g * exp(a - p.out), lambda: g * exp(b - p.out))


@rule(K.REMAINDER, K.FMOD)
def _remainder(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    whole = np.floor if p.node.op is K.REMAINDER else np.trunc
    return _elementwise(p, g, lambda: g, lambda: -g * whole(a / b))


# -- elementwise, non-ufunc -------------------------------------------------------------------


@rule(K.WHERE)
def _where(p: Primal, g: Any) -> list[Cotangent]:
    c, _, _ = p.args
    return _elementwise(p, g, None, lambda: np.where(c, g, 0.0), lambda: np.where(c, 0.0, g))


@rule(K.CLIP)
def _clip(p: Primal, g: Any) -> list[Cotangent]:
    x, lo, hi = p.args
    m = x if lo is None else np.maximum(x, lo)
    keep = True if hi is None else (m <= hi)
    to_x = keep if lo is None else (x >= lo) & keep
    return _elementwise(
        p,
        g,
        lambda: np.where(to_x, g, 0.0),
        lambda: np.where((x < lo) & keep, g, 0.0),
        lambda: np.where(m > hi, g, 0.0),
    )


@rule(K.CAST)
def _cast(p: Primal, g: Any) -> list[Cotangent]:
    return [g]  # the backward pass casts it to the operand's dtype (nothing for integers)


@rule(K.COPY)
def _copy(p: Primal, g: Any) -> list[Cotangent]:
    return [None] if p.attrs.get("stop_gradient") else [g]


# -- reductions -------------------------------------------------------------------------------


def _reduction_parts(p: Primal) -> tuple[Any, Any, bool]:
    return p.args[0], p.attrs.get("axis"), bool(p.attrs.get("keepdims", False))


@rule(K.SUM)
def _sum(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = _reduction_parts(p)
    return [lambda: expand_to(g, x, axis, keepdims)]


@rule(K.MEAN)
def _mean(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = _reduction_parts(p)
    return [lambda: expand_to(g, x, axis, keepdims) / _count(x, axis)]


@rule(K.PROD)
def _prod(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = _reduction_parts(p)
    return [lambda: expand_to(g, x, axis, keepdims) * expand_to(p.out, x, axis, keepdims) / x]


@rule(K.VAR, K.STD)
def _var(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = _reduction_parts(p)
    ddof = p.attrs.get("ddof", 0)

    def dx() -> Any:
        centred = x - np.mean(x, axis=axis, keepdims=True)
        scale = 2.0 / (_count(x, axis) - ddof)
        gx = expand_to(g, x, axis, keepdims)
        if p.node.op is K.STD:
            gx = gx / (2.0 * expand_to(p.out, x, axis, keepdims))
        return gx * scale * centred

    return [dx]


@rule(K.MAX, K.MIN)
def _max(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = _reduction_parts(p)

    def dx() -> Any:
        hit = x == expand_to(p.out, x, axis, keepdims)
        return np.where(first_occurrence(hit, axis), expand_to(g, x, axis, keepdims), 0.0)

    return [dx]


def first_occurrence(mask: Any, axis: Any) -> Any:
    """``mask`` keeping only its first True over ``axis`` (C order over several axes)."""
    ndim = len(mask.shape)
    axes = normalize_axes(axis, ndim)
    if len(axes) == 1:
        return mask & (np.cumsum(mask, axis=axes[0]) == 1)
    kept = [a for a in range(ndim) if a not in axes]
    order = kept + list(axes)
    moved = np.transpose(mask, order)
    shape = moved.shape
    if None in shape:
        raise NotImplementedError(
            "the gradient of max/min over several axes needs static "
            "shapes; reduce over one axis at a time"
        )
    flat = np.reshape(moved, tuple(shape[: len(kept)]) + (-1,))
    first = flat & (np.cumsum(flat, axis=-1) == 1)
    return np.transpose(np.reshape(first, shape), np.argsort(order).tolist())


# -- scans ------------------------------------------------------------------------------------


def reverse_cumsum(g: Any, axis: int) -> Any:
    return np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)


@rule(K.CUMSUM, K.CUMPROD)
def _scan(p: Primal, g: Any) -> list[Cotangent]:
    x = p.args[0]
    axis = p.attrs.get("axis")

    def dx() -> Any:
        weights = g if p.node.op is K.CUMSUM else g * p.out
        if axis is None:
            flat = reverse_cumsum(weights, 0)
            dflat = flat if p.node.op is K.CUMSUM else flat / np.reshape(x, (-1,))
            return np.reshape(dflat, x.shape)
        back = reverse_cumsum(weights, axis)
        return back if p.node.op is K.CUMSUM else back / x

    return [dx]


# -- shape ------------------------------------------------------------------------------------


def reshape_like(g: Any, x: Any) -> Any:
    shape = tuple(-1 if d is None else d for d in x.shape)
    return np.reshape(g, shape)


@rule(K.RESHAPE, K.SQUEEZE)
def _reshape(p: Primal, g: Any) -> list[Cotangent]:
    return [lambda: reshape_like(g, p.args[0])]


@rule(K.EXPAND_DIMS)
def _expand_dims(p: Primal, g: Any) -> list[Cotangent]:
    return [lambda: np.squeeze(g, axis=p.attrs["axis"])]


@rule(K.TRANSPOSE)
def _transpose(p: Primal, g: Any) -> list[Cotangent]:
    axes = p.attrs.get("axes")
    if axes is None:
        return [lambda: np.transpose(g)]
    return [lambda: np.transpose(g, np.argsort(axes).tolist())]


@rule(K.BROADCAST_TO)
def _broadcast_to(p: Primal, g: Any) -> list[Cotangent]:
    return [lambda: unbroadcast(g, p.shape(0))]


@rule(K.FLIP)
def _flip(p: Primal, g: Any) -> list[Cotangent]:
    return [lambda: np.flip(g, p.attrs.get("axis"))]


@rule(K.CONCATENATE)
def _concatenate(p: Primal, g: Any) -> list[Cotangent]:
    axis = p.attrs.get("axis", 0)
    flat = axis is None
    gg = np.reshape(g, (-1,)) if flat else g
    ax = 0 if flat else axis % len(g.shape)
    cts: list[Cotangent] = []
    start = 0
    for x in p.args:
        n = (
            (x.size if flat else cast("tuple", x.shape)[ax])
            if isinstance(x, Tensor)
            else np.size(x)
        )
        if n is None:
            raise NotImplementedError(
                "the gradient of concatenate needs the static sizes of its operands along the axis"
            )

        def part(x: Any = x, lo: int = start, hi: int = start + n) -> Any:
            piece = gg[(slice(None),) * ax + (slice(lo, hi),)]
            return np.reshape(piece, x.shape) if flat else piece

        cts.append(part if isinstance(x, Tensor) else None)
        start += n
    return cts


@rule(K.STACK)
def _stack(p: Primal, g: Any) -> list[Cotangent]:
    axis = p.attrs.get("axis", 0) % len(g.shape)
    return [
        (lambda i=i: g[(slice(None),) * axis + (i,)]) if isinstance(x, Tensor) else None
        for i, x in enumerate(p.args)
    ]


# -- indexing ---------------------------------------------------------------------------------


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


@rule(K.GETITEM)
def _getitem(p: Primal, g: Any) -> list[Cotangent]:
    x, *dyn = p.args
    return [lambda: scatter_add(x, p.attrs["index"], dyn, g)] + [None] * len(dyn)


@rule(K.SETITEM)
def _setitem(p: Primal, g: Any) -> list[Cotangent]:
    _x, value, *dyn = p.args
    template = p.attrs["index"]

    def dx() -> Any:
        return bind(K.SETITEM, (g, 0.0, *dyn), {"index": template})

    def dvalue() -> Any:
        picked = bind(K.GETITEM, (g, *dyn), {"index": template})
        return unbroadcast(picked, p.shape(1))

    return [dx, dvalue if isinstance(value, Tensor) else None] + [None] * len(dyn)


# -- sorting ----------------------------------------------------------------------------------


@rule(K.SORT)
def _sort(p: Primal, g: Any) -> list[Cotangent]:
    x = p.args[0]
    axis = p.attrs.get("axis", -1)

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


# -- nan reductions, einsum, pad, slogdet, ufunc methods ------------------------------------


def _nan_hole(x: Any, g: Any) -> Any:
    """``g`` with zeros where ``x`` is NaN (the nan functions ignore those elements)."""
    return np.where(np.isnan(x), 0.0, g)


def _non_nan_count(x: Any, axis: Any) -> Any:
    return np.sum(~np.isnan(x), axis=normalize_axes(axis, len(x.shape)), keepdims=True)


@rule(K.NANSUM)
def _nansum(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = _reduction_parts(p)
    return [lambda: _nan_hole(x, expand_to(g, x, axis, keepdims))]


@rule(K.NANMEAN)
def _nanmean(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = _reduction_parts(p)
    return [lambda: _nan_hole(x, expand_to(g, x, axis, keepdims) / _non_nan_count(x, axis))]


@rule(K.NANPROD)
def _nanprod(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = _reduction_parts(p)
    return [
        lambda: _nan_hole(
            x, expand_to(g, x, axis, keepdims) * expand_to(p.out, x, axis, keepdims) / x
        )
    ]


@rule(K.NANVAR, K.NANSTD)
def _nanvar(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = _reduction_parts(p)
    ddof = p.attrs.get("ddof", 0)

    def dx() -> Any:
        centred = x - np.nanmean(x, axis=axis, keepdims=True)
        gx = expand_to(g, x, axis, keepdims)
        if p.node.op is K.NANSTD:
            gx = gx / (2.0 * expand_to(p.out, x, axis, keepdims))
        return _nan_hole(x, gx * (2.0 / (_non_nan_count(x, axis) - ddof)) * centred)

    return [dx]


@rule(K.NANMAX, K.NANMIN)
def _nanmax(p: Primal, g: Any) -> list[Cotangent]:
    x, axis, keepdims = _reduction_parts(p)

    def dx() -> Any:
        hit = x == expand_to(p.out, x, axis, keepdims)  # NaN never equals: skipped
        return np.where(first_occurrence(hit, axis), expand_to(g, x, axis, keepdims), 0.0)

    return [dx]


@rule(K.NANCUMSUM)
def _nancumsum(p: Primal, g: Any) -> list[Cotangent]:
    x = p.args[0]
    axis = p.attrs.get("axis")

    def dx() -> Any:
        if axis is None:
            return _nan_hole(x, np.reshape(reverse_cumsum(g, 0), x.shape))
        return _nan_hole(x, reverse_cumsum(g, axis))

    return [dx]


def _unsupported_ufunc(p: Primal, method: str) -> NotImplementedError:
    return NotImplementedError(
        f"the gradient of np.{p.attrs['ufunc'].__name__}.{method} is "
        "not implemented (add, multiply, maximum, minimum have rules)"
    )


@rule(K.UFUNC_REDUCE)
def _ufunc_reduce(p: Primal, g: Any) -> list[Cotangent]:
    """``np.add.reduce`` is a sum, ``multiply`` a product, ``maximum``/``minimum`` a max/min
    (ties: the first occurrence); the default axis is 0."""
    x, ufunc = p.args[0], p.attrs["ufunc"]
    axis, keepdims = p.attrs.get("axis", 0), bool(p.attrs.get("keepdims", False))
    if ufunc is np.add:
        return [lambda: expand_to(g, x, axis, keepdims)]
    if ufunc is np.multiply:
        return [lambda: expand_to(g, x, axis, keepdims) * expand_to(p.out, x, axis, keepdims) / x]
    if ufunc in (np.maximum, np.minimum):

        def dx() -> Any:
            hit = x == expand_to(p.out, x, axis, keepdims)
            return np.where(first_occurrence(hit, axis), expand_to(g, x, axis, keepdims), 0.0)

        return [dx]
    raise _unsupported_ufunc(p, "reduce")


@rule(K.UFUNC_AT)
def _ufunc_at(p: Primal, g: Any) -> list[Cotangent]:
    """``np.add.at(a, index, b)`` (a scatter-add: repeated positions add up) and
    ``np.subtract.at``: ``a`` gets ``g``, ``b`` gets ``±g[index]`` (a gather)."""
    _a, b, *dyn = p.args
    ufunc = p.attrs["ufunc"]
    if ufunc not in (np.add, np.subtract):
        raise _unsupported_ufunc(p, "at")

    def db() -> Any:
        # (Any: a Tensor, whose operators trace.operators installs where mypy cannot see)
        picked: Any = bind(K.GETITEM, (g, *dyn), {"index": p.attrs["index"]})
        return unbroadcast(picked if ufunc is np.add else -picked, p.shape(1))

    return [g, db if isinstance(b, Tensor) else None] + [None] * len(dyn)
