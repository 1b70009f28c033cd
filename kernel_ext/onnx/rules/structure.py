"""Sources, structure and state: constants, variables, tuple results."""

from __future__ import annotations

from kernel_ext.ir import OpKind
from kernel_ext.onnx.rules.common import RULES, K, refusal_rule


def refusal_reason(op: OpKind) -> str | None:
    """Why ``op`` has no ONNX form (every node refused), or None when it has a rule."""
    rule = RULES.get(op)
    if rule is None:
        return None if op is K.PLACEHOLDER else "no rule"
    return getattr(rule, "why", None)


RULES[K.TENSOR_ARRAY_WRITE] = refusal_rule(
    "a growing TensorArray has no ONNX form",
    "collect the rows in a preallocated array with x[i] = row, or with np.stack",
)
