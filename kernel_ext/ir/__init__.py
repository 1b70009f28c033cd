"""The graph IR: op kinds, abstract values, Node/Graph, verifier, printers, reference interpreter.

This layer imports nothing else of kernel_ext; every other layer builds on it.
"""

from .abstract import (
    AbstractValue,
    DynamicIndex,
    NodeAval,
    abstract_eval,
    format_aval,
    format_shape,
)
from .calls import CallTemplate, OpaqueResultError, Operand, call_name
from .graph import Graph, Node, has_effects, subgraphs
from .graphdef import GraphDef, NodeDef, as_graph_def, to_dot
from .interpreter import LOWER, interpret
from .lint import GraphLintError, lint
from .ops import (
    COMPARISONS,
    FUSIBLE_REDUCTIONS,
    MULTI_OUTPUT_OPS,
    NDARRAY_METHODS,
    OPAQUE_CALLS,
    PARAMS_OF,
    UFUNC_OPS,
    UFUNC_REDUCTIONS,
    VIEW_OPS,
    Compute,
    FallbackReasons,
    OpGroup,
    OpKind,
    fallback_reason,
)
from .params import MISSING, Params
from .printer import format_graph

__all__ = [
    "COMPARISONS",
    "FUSIBLE_REDUCTIONS",
    "LOWER",
    "MISSING",
    "MULTI_OUTPUT_OPS",
    "NDARRAY_METHODS",
    "OPAQUE_CALLS",
    "PARAMS_OF",
    "UFUNC_OPS",
    "UFUNC_REDUCTIONS",
    "VIEW_OPS",
    "AbstractValue",
    "CallTemplate",
    "Compute",
    "DynamicIndex",
    "FallbackReasons",
    "Graph",
    "GraphDef",
    "GraphLintError",
    "Node",
    "NodeAval",
    "NodeDef",
    "OpGroup",
    "OpKind",
    "OpaqueResultError",
    "Operand",
    "Params",
    "abstract_eval",
    "as_graph_def",
    "call_name",
    "fallback_reason",
    "format_aval",
    "format_graph",
    "format_shape",
    "has_effects",
    "interpret",
    "lint",
    "subgraphs",
    "to_dot",
]
