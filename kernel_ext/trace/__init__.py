"""Tracing: symbolic tensors and NumPy's protocols, trace types, variables, the trace context."""

from .context import TraceContext, bind, current_context
from .numpy_api import HANDLERS, supported_numpy_functions
from .opaque import MUTATING_FUNCTIONS, numpy_call
from .printing import kx_print
from .pytree import TreeNode, flatten_outputs, unflatten
from .tensor import Tensor
from .types import (
    Dataclass,
    Dict,
    Literal,
    PlaceholderContext,
    Sequence_,
    TensorSpec,
    TraceType,
    VariableType,
    WeakRef,
    make_trace_type,
)
from .variables import Variable

__all__ = [
    "HANDLERS",
    "MUTATING_FUNCTIONS",
    "Dataclass",
    "Dict",
    "Literal",
    "PlaceholderContext",
    "Sequence_",
    "Tensor",
    "TensorSpec",
    "TraceContext",
    "TraceType",
    "TreeNode",
    "Variable",
    "VariableType",
    "WeakRef",
    "bind",
    "current_context",
    "flatten_outputs",
    "kx_print",
    "make_trace_type",
    "numpy_call",
    "supported_numpy_functions",
    "unflatten",
]
