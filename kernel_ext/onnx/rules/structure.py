"""Sources, structure and state: constants, variables, tuple results, copies."""

from __future__ import annotations

from kernel_ext.ir import Node, OpKind
from kernel_ext.onnx.builder import GraphBuilder
from kernel_ext.onnx.rules.common import RULES, K, refusal_rule, rule_for


@rule_for(K.COPY)
def copy(b: GraphBuilder, node: Node) -> list[str]:
    return [b.one("Identity", [b.value(node.args[0])])]


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
