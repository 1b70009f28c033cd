"""Fused reductions: what a reduction node accumulates, in which dtype, from which identity
(:class:`ReductionPlan`), or why it stays in NumPy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import numpy as np

from ...ir import FUSIBLE_REDUCTIONS, UFUNC_OPS, Node, OpKind
from ...ir.params import ReduceParams
from ...ir.registry import OpTable
from .. import codegen
from ..emit.literals import BOOL, F64, SUPPORTED_DTYPES, Unsupported, dtype_kind
from .inline_templates import INLINE, truth


@dataclass(frozen=True)
class ReductionPlan:
    """A fused reduction: what is accumulated, in which dtype, from which identity."""

    op: OpKind
    axis: int | None  # normalised, or None for all axes
    keepdims: bool
    value_dtype: np.dtype  # dtype each element is cast to first (NumPy's reduction dtype)
    acc_dtype: np.dtype  # accumulator dtype (float64 for float sums and products)
    out_dtype: np.dtype
    identity: Any
    #: The dtype an N-d float sum or mean over an axis other than the last accumulates in
    #: when the call reproduces NumPy's order (``None``: always ``acc_dtype``). NumPy reduces
    #: a C-ordered array over such an axis row after row, ``out += row`` in the result's own
    #: dtype (no pairwise summation there), and so does the ``nd`` kernel: accumulating in
    #: ``value_dtype`` in that order is NumPy's result to the bit, and vectorises. The runner
    #: picks it per call (:attr:`sequential_axis`); other layouts keep ``acc_dtype``.
    seq_dtype: np.dtype | None = None

    @property
    def sequential_axis(self) -> bool:
        """Does the ``nd`` kernel accumulate this reduction row by row (an axis other than
        the last, into ``acc`` of the result's shape), rather than through lanes?"""
        return self.seq_dtype is not None

    def combine(self, acc: str, v: str) -> str:
        """Expression folding value ``v`` into accumulator ``acc``: the op's accumulator
        ufunc (``op.accumulator``, the op table's fact) written inline as for an elementwise
        node in the accumulator's dtype (so a float max propagates NaN as ``maximum``)."""
        ufunc = self.op.accumulator
        assert ufunc is not None  # (a fusible reduction has one)
        return _inline_ufunc(ufunc, [acc, v], self.acc_dtype)

    @property
    def mean(self) -> bool:
        """Is the result the accumulator divided by the count of reduced elements?"""
        return self.op is OpKind.MEAN

    def count(self, dims: list[str]) -> str:
        """Source text of the number of elements each result reduces (domain sizes
        ``dims``)."""
        return " * ".join(dims) if self.axis is None else dims[self.axis]

    def accumulator_shape(self, dims: list[str]) -> list[str]:
        """The N-d accumulator's shape: the domain's, 1 on every reduced axis."""
        return ["1" if self.axis is None or d == self.axis else size for d, size in enumerate(dims)]

    def result_dims(self, dims: list[str]) -> list[str]:
        """The result's shape without keepdims: the domain's less the reduced axes."""
        return [] if self.axis is None else [size for d, size in enumerate(dims) if d != self.axis]


class _Operands:
    """What an inline template sees when it folds two values already in one dtype."""

    def __init__(self, operands: list[str], dtype: np.dtype) -> None:
        self.ops, self.dtype = operands, dtype

    def truth(self, k: int) -> str:
        return truth(self.ops[k], self.dtype)

    def float_op(self, op: str, o: list[str]) -> str:
        return f"({o[0]} {op} {o[1]})"  # an accumulator and a loaded value: never folded


def _inline_ufunc(ufunc: np.ufunc, operands: list[str], dtype: np.dtype) -> str:
    """``ufunc`` applied inline to ``operands`` of ``dtype`` (its elementwise template)."""
    kind = dtype_kind(dtype)
    for kinds, fn in INLINE[UFUNC_OPS[ufunc]]:
        if kind in kinds:
            return fn(operands, _Operands(operands, dtype))
    raise Unsupported(f"no inline {ufunc.__name__} on {dtype}")


def accumulator(op: OpKind) -> np.ufunc:
    """The ufunc a fusible reduction accumulates with (every such op has one)."""
    return cast("np.ufunc", op.accumulator)


def identity(ufunc: np.ufunc, dtype: np.dtype) -> Any:
    """The value an accumulation with ``ufunc`` starts from: the ufunc's identity, or — for
    ``maximum``/``minimum``, which have none — the dtype's extreme that the ufunc never
    picks over another value."""
    if ufunc.identity is not None:
        return ufunc.identity
    if dtype.kind == "f":
        lo, hi = -np.inf, np.inf
    elif dtype == BOOL:
        lo, hi = False, True
    else:
        info = np.iinfo(dtype)
        lo, hi = info.min, info.max
    picked = ufunc(np.array(lo, dtype), np.array(hi, dtype))
    return lo if picked == np.array(hi, dtype) else hi


def reduction_plan(node: Node, auto: bool = False) -> ReductionPlan:
    """The plan of a fusible reduction node, or Unsupported (``auto``: no float max/min)."""
    if node.op not in FUSIBLE_REDUCTIONS:
        raise Unsupported(node.op.value)
    x = node.args[0]
    if not isinstance(x, Node) or x.shape is None:
        raise Unsupported("reduction of an unknown rank")
    in_dt = np.dtype(x.dtype)
    out_dt = np.dtype(node.dtype)
    if in_dt not in SUPPORTED_DTYPES or out_dt not in SUPPORTED_DTYPES:
        raise Unsupported("reduction dtype")
    extra = set(node.params) - {"axis", "keepdims", "dtype"}
    if extra:
        raise Unsupported(f"reduction attrs {extra}")
    ndim = len(x.shape)
    axis = _reduced_axis(node, ndim)
    keepdims = bool(cast("ReduceParams", node.params).keepdims)
    _check_float_policy(node.op, out_dt, auto)
    reduced = Reduced(node, axis, keepdims, ndim, in_dt, out_dt)
    return REDUCTION_PLANS.get(node.op, _sum_plan)(reduced)


def _reduced_axis(node: Node, ndim: int) -> int | None:
    """The one axis ``node`` reduces, normalised (None: all of them), or Unsupported for
    several axes that are not all of them, or an axis of a 0-d value."""
    params = cast("ReduceParams", node.params)
    axis = params.axis
    if isinstance(axis, tuple):
        if len(axis) == 1:
            axis = axis[0]
        elif sorted(a % max(ndim, 1) for a in axis) == list(range(ndim)):
            axis = None
        else:
            raise Unsupported("several reduction axes")
    if axis is None:
        return None
    if ndim == 0:
        raise Unsupported("axis of a 0-d value")
    axis = int(axis) % ndim
    if ndim == 1 and not params.keepdims:
        return None
    return axis


def _check_float_policy(op: OpKind, out_dt: np.dtype, auto: bool) -> None:
    """Unsupported for a float reduction the mode keeps in NumPy (:data:`.BITWISE_ONLY`:
    all of them; ``auto``: max and min)."""
    if codegen.BITWISE_ONLY and out_dt.kind == "f":
        # Float sums differ in summation order (within the documented bound, not bitwise).
        raise Unsupported("float reduction (bitwise mode)")
    if auto and out_dt.kind == "f" and op in (OpKind.MAX, OpKind.MIN):
        # Which NaN a float max/min returns depends on the order (NumPy's SIMD reductions
        # return the canonical NaN past a length, the NaN found below it): not bitwise and
        # not covered by a rounding bound, so only backend="numba" fuses them.
        raise Unsupported("float max/min (auto)")


class Reduced(NamedTuple):
    """A reduction node with what the plan builders need of it."""

    node: Node
    axis: int | None
    keepdims: bool
    ndim: int
    in_dt: np.dtype
    out_dt: np.dtype


def _sum_plan(r: Reduced) -> ReductionPlan:
    """sum / prod / mean: NumPy casts elements to the result dtype, then accumulates (in a
    64-bit accumulator of the result's kind here)."""
    op, out_dt = r.node.op, r.out_dt
    if out_dt == BOOL:
        raise Unsupported("bool sum")
    if op is OpKind.PROD and out_dt.kind == "f":
        # A float product's overflow/underflow to inf/0 depends on the order of the factors
        # (inf * 0 is NaN): no bound relates two orders, so NumPy keeps computing it.
        raise Unsupported("float product")
    acc = _SUM_ACCUMULATORS[out_dt.kind]
    value_dt = out_dt
    # (whether a dtype was given, as before: a presence test, not a test of its value)
    if op is OpKind.MEAN and "dtype" not in r.node.params and r.in_dt.kind in "iub":
        value_dt = F64
    seq = None
    if r.axis is not None and r.axis < r.ndim - 1 and value_dt.kind == "f" and value_dt != acc:
        seq = value_dt  # float32 row by row, as NumPy (float64 already is: acc == value_dt)
    return ReductionPlan(
        op, r.axis, r.keepdims, value_dt, acc, out_dt, identity(accumulator(op), acc), seq
    )


#: The accumulator dtype of a sum, product or mean, per result kind.
_SUM_ACCUMULATORS = {"f": F64, "i": np.dtype(np.int64), "u": np.dtype(np.uint64)}

#: The plan builder per reduction op, registered by its definition in :mod:`kernel_ext.ops`
#: (sum, prod and mean, which have none: :func:`_sum_plan`).
REDUCTION_PLANS: OpTable[Callable[[Reduced], ReductionPlan]] = OpTable("fused reduction plan")
