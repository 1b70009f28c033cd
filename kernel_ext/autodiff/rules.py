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
Control flow's rules (``cond``, ``while``) are registered by :mod:`kernel_ext.ops.structure`;
the matrix decompositions and the rules built by composition by
:mod:`kernel_ext.autodiff.decompositions`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir import Node, OpKind
from ..ir.params import AnyParams
from ..ir.registry import OpTable
from ..trace import Tensor

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
    def params(self) -> AnyParams:
        """The primal node's parameters (``p.params.axis``)."""
        return self.node.params

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
NOTES.update({})


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


def elementwise(p: Primal, g: Any, *parts: Callable[[], Any] | None) -> list[Cotangent]:
    """Cotangents of an elementwise op: each part (``None``: no gradient) unbroadcast to
    its operand's shape; literal operands get none."""
    out: list[Cotangent] = []
    for i, part in enumerate(parts):
        if part is None or not isinstance(p.args[i], Tensor):
            out.append(None)
        else:
            out.append(lambda part=part, i=i: unbroadcast(part(), p.shape(i)))
    return out


def multiply_vjp(p: Primal, g: Any) -> list[Cotangent]:
    a, b = p.args
    return elementwise(p, g, lambda: g * b, lambda: g * a)


# -- copies -----------------------------------------------------------------------------------


# -- shape ------------------------------------------------------------------------------------


def reshape_like(g: Any, x: Any) -> Any:
    shape = tuple(-1 if d is None else d for d in x.shape)
    return np.reshape(g, shape)


# -- indexing ---------------------------------------------------------------------------------


# -- einsum, pad, slogdet, ufunc methods ---------------------------------------------------


def unsupported_ufunc(p: Primal, method: str) -> NotImplementedError:
    return NotImplementedError(
        f"the gradient of np.{p.params.ufunc.__name__}.{method} is "
        "not implemented (add, multiply, maximum, minimum have rules)"
    )
