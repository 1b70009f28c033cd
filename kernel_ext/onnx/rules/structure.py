"""Sources, structure and state: constants, variables, tuple results, copies."""

from __future__ import annotations

from kernel_ext.ir import Node, OpKind
from kernel_ext.onnx.builder import GraphBuilder
from kernel_ext.onnx.rules.common import RULES, K, refusal_rule, rule_for


@rule_for(K.CONSTANT)
def constant(b: GraphBuilder, node: Node) -> list[str]:
    return [b.const(node.attrs["value"])]


@rule_for(K.READ_VARIABLE)
def read_variable(b: GraphBuilder, node: Node) -> list[str]:
    var = node.attrs["variable"]
    return [b.model.variable(var, getattr(var, "name", None) or node.name)]


@rule_for(K.GET_OUTPUT)
def get_output(b: GraphBuilder, node: Node) -> list[str]:
    return [b.env[node.args[0]][node.attrs["index"]]]


@rule_for(K.COPY)
def copy(b: GraphBuilder, node: Node) -> list[str]:
    return [b.one("Identity", [b.value(node.args[0])])]


def refusal_reason(op: OpKind) -> str | None:
    """Why ``op`` has no ONNX form (every node refused), or None when it has a rule."""
    rule = RULES.get(op)
    if rule is None:
        return None if op is K.PLACEHOLDER else "no rule"
    return getattr(rule, "why", None)


_STATE_FIX = (
    "an ONNX model has no state: return the new value from the function and assign "
    "the variable outside it"
)
for _kind in (K.ASSIGN_VARIABLE, K.ASSIGN_ADD_VARIABLE, K.ASSIGN_SUB_VARIABLE):
    RULES[_kind] = refusal_rule("ONNX models cannot update a variable", _STATE_FIX)
RULES[K.PRINT] = refusal_rule(
    "ONNX models have no output side effects",
    "remove the kx.print call from the function you export",
)
RULES[K.CHECK] = refusal_rule(
    "ONNX models cannot raise an exception",
    "check the inputs before calling the model, or drop the check",
)
RULES[K.RANDOM_CALL] = refusal_rule(
    "ONNX's random ops do not draw NumPy's streams",
    "draw the random values outside and pass them in as an argument",
)
RULES[K.NUMPY_CALL] = refusal_rule(
    "it runs a Python function as it is, at each call",
    "compute that value outside the exported function and pass it in as an argument",
)
