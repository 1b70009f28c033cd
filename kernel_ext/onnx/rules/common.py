"""What the families of ONNX rules share: ``RULES``, ``rule_for``, parameter checks, dtype
helpers and refusals."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from kernel_ext.ir import AbstractValue, Node, OpKind
from kernel_ext.ir.registry import OpTable
from kernel_ext.onnx.builder import GraphBuilder, Rule
from kernel_ext.onnx.refusal import refuse

K = OpKind
RULES: OpTable[Rule] = OpTable("ONNX translation")
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
ANY_VALUE = object()  # a parameter the rule reads (any value)


#: Register the ONNX translation of some ops: ``@rule_for(OpKind.ADD)``.
rule_for = RULES.register


def handled_params(node: Node, **handled: Any) -> dict[str, Any]:
    """The node's parameters, refusing any the rule does not handle (``ANY_VALUE``: read by the
    rule; another value: only that value, NumPy's default, has a translation)."""
    params = node.params.kwargs()
    for key, value in params.items():
        if key not in handled:
            raise refuse(
                node, f"its parameter {key}={value!r} has no translation", f"call it without {key}="
            )
        want = handled[key]
        if want is not ANY_VALUE and not same_value(value, want):
            raise refuse(
                node,
                f"its parameter {key}={value!r} has no translation (only {want!r})",
                f"call it without {key}=",
            )
    return params


def same_value(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays compare elementwise
        return False


def sorted_axes(axis: Any, ndim: int) -> list[int]:
    """``axis`` (int, tuple or None: all) as sorted non-negative ints."""
    if axis is None:
        return list(range(ndim))
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    return sorted(int(a) % max(ndim, 1) for a in items)


def rank(node: Node) -> int:
    """The rank of a node's value: the rules translate values of known rank (typed
    ``int | None`` in the IR, for traces of unknown rank)."""
    return cast("int", cast("AbstractValue", node.aval).ndim)


def output_avals(node: Node) -> tuple[AbstractValue, ...]:
    """The abstract values of a multi-output node (cond, while), a tuple in ``node.aval``."""
    return cast("tuple[AbstractValue, ...]", node.aval)


def out_dtype(node: Node) -> np.dtype:
    return np.dtype(node.dtype)


#: Integer dtypes onnxruntime lacks most kernels for: computed in int64 and cast back, which
#: wraps as NumPy's own loops do (exact for comparisons, extremes and sorting; modular for
#: arithmetic, where the low bits do not depend on the width).
NARROW = frozenset(np.dtype(d) for d in (np.int8, np.int16, np.uint8, np.uint16, np.uint32))


def wide(dtype: Any) -> np.dtype:
    """The dtype onnxruntime computes ``dtype`` in (int64 for the narrow integers)."""
    dtype = np.dtype(dtype)
    return np.dtype(np.int64) if dtype in NARROW else dtype


def refusal_rule(why: str, fix: str) -> Rule:
    """A rule that refuses every node of its op, with the reason (kept as ``rule.why`` for
    the op coverage table) and the fix."""

    def rule(b: GraphBuilder, node: Node) -> list[str]:
        raise refuse(node, why, fix)

    rule.why = why  # type: ignore[attr-defined]
    return rule


def integer_sum(b: GraphBuilder, name: str, ndim: int, axes: list[int], keepdims: bool) -> str:
    """An exact (wrapping) integer sum over ``axes``: onnxruntime's integer ReduceSum goes
    through floating point (wrong past 2**53, saturating on overflow), its CumSum does not.
    The reduced axes are moved last and flattened, a zero is put in front (empty sums), and
    the running sum's last element is the total."""
    keep = [a for a in range(ndim) if a not in axes]
    moved = b.one("Transpose", [name], perm=keep + axes) if ndim else name
    lead = b.shape_of(moved, 0, len(keep)) if keep else b.ints([])
    # (the reduced length spelled out: -1 cannot be inferred next to an empty kept axis)
    length = b.one("ReduceProd", [b.shape_of(moved, len(keep))], keepdims=1)
    flat = b.one("Reshape", [moved, b.one("Concat", [lead, length], axis=0)], allowzero=1)
    pads = [0] * (len(keep) + 1)
    padded = b.one("Pad", [flat, b.ints(pads[:-1] + [1] + pads)])
    running = b.one("CumSum", [padded, b.const(len(keep), np.int64)])
    total = b.one("Gather", [running, b.const(-1, np.int64)], axis=len(keep))
    if keepdims and axes:
        total = b.one("Unsqueeze", [total, b.ints(axes)])
    return total
