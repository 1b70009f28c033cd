"""State and effects: the variable ops (``read_variable``, ``assign_variable``,
``assign_add_variable``, ``assign_sub_variable``), ``print`` and ``check`` (a run-time check
raising the traced exception).

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`). None of them has a
gradient: they have no result (a variable read is a leaf of the backward pass), and the
backward pass raises, naming the op, when one is on a gradient path. ONNX reads a variable
as a model input and refuses the others (a model has no state, no output and no exceptions).
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from ...autodiff.rules import NOTES
from ...backends.emit.literals import Unsupported
from ...backends.emit.source import Source
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...backends.whole_graph_ops.common import Rule, Writer
from ...ir.abstract.core import (
    ABSTRACT_EVAL,
    AbstractValue,
    broadcast_shapes,
    format_shape,
    shape_of,
)
from ...ir.graph import Node
from ...ir.interpreter import LOWER, format_print
from ...ir.ops import OpKind
from ...ir.params import CheckParams, PrintParams, VariableParams
from ...onnx.builder import GraphBuilder
from ...onnx.rules.common import RULES as ONNX
from ...onnx.rules.common import refusal_rule

K = OpKind

# --- read_variable ---


@ABSTRACT_EVAL.register(K.READ_VARIABLE)
def _read_variable(params: VariableParams) -> AbstractValue:
    var = params.variable
    return AbstractValue(tuple(var.shape), np.dtype(var.dtype))


@LOWER.register(K.READ_VARIABLE)
def _lower_read_variable(node: Node) -> Callable[..., Any]:
    params = cast("VariableParams", node.params)
    var = params.variable
    return lambda: var.storage


@ONNX.register(K.READ_VARIABLE)
def _onnx_read_variable(b: GraphBuilder, node: Node) -> list[str]:
    params = cast("VariableParams", node.params)
    var = params.variable
    return [b.model.variable(var, getattr(var, "name", None) or node.name)]


# --- assign_variable, assign_add_variable, assign_sub_variable ---


@ABSTRACT_EVAL.register(K.ASSIGN_VARIABLE, K.ASSIGN_ADD_VARIABLE, K.ASSIGN_SUB_VARIABLE)
def _assign(params: VariableParams, value: Any) -> None:
    var = params.variable
    shape = shape_of(value)
    if shape is not None and None not in shape and tuple(shape) != tuple(var.shape):
        broadcast_shapes(shape, tuple(var.shape))
        if len(shape) > len(var.shape) or broadcast_shapes(shape, var.shape) != tuple(var.shape):
            raise ValueError(
                f"cannot assign a value of shape {format_shape(shape)} to variable "
                f"'{var.name}' of shape {format_shape(tuple(var.shape))}"
            )
    return None


@LOWER.register(K.ASSIGN_VARIABLE)
def _lower_assign(node: Node) -> Callable[..., Any]:
    params = cast("VariableParams", node.params)
    store: Callable[..., Any] = params.variable.store
    return store


@LOWER.register(K.ASSIGN_ADD_VARIABLE)
def _lower_assign_add(node: Node) -> Callable[..., Any]:
    params = cast("VariableParams", node.params)
    var = params.variable
    return lambda v: var.store(np.add(var.peek(), v), owned=True)


@LOWER.register(K.ASSIGN_SUB_VARIABLE)
def _lower_assign_sub(node: Node) -> Callable[..., Any]:
    params = cast("VariableParams", node.params)
    var = params.variable
    return lambda v: var.store(np.subtract(var.peek(), v), owned=True)


NOTES.add(K.ASSIGN_VARIABLE, "no result: never on a gradient path")
NOTES.add(K.ASSIGN_ADD_VARIABLE, "no result: never on a gradient path")
NOTES.add(K.ASSIGN_SUB_VARIABLE, "no result: never on a gradient path")

_STATE_FIX = (
    "an ONNX model has no state: return the new value from the function and assign "
    "the variable outside it"
)
for _kind in (K.ASSIGN_VARIABLE, K.ASSIGN_ADD_VARIABLE, K.ASSIGN_SUB_VARIABLE):
    ONNX.add(_kind, refusal_rule("ONNX models cannot update a variable", _STATE_FIX))


# --- print ---


@ABSTRACT_EVAL.register(K.PRINT)
def _print(params: PrintParams, *args: Any) -> None:
    return None


@LOWER.register(K.PRINT)
def _lower_print(node: Node) -> Callable[..., Any]:
    params = cast("PrintParams", node.params)
    template, sep, end = params.template, params.sep, params.end

    def do_print(*values: Any) -> None:
        # Looked up at run time: Jupyter swaps sys.stdout per cell.
        sys.stdout.write(format_print(template, values, sep, end))

    return do_print


NOTES.add(K.PRINT, "no result: never on a gradient path")
ONNX.add(
    K.PRINT,
    refusal_rule(
        "ONNX models have no output side effects",
        "remove the kx.print call from the function you export",
    ),
)


# --- check ---


@ABSTRACT_EVAL.register(K.CHECK)
def _check(params: CheckParams, pred: Any, *message_values: Any) -> None:
    shape = shape_of(pred)
    if shape is not None and tuple(shape) != ():
        raise ValueError(
            f"the condition of a run-time check must be 0-d, got shape {format_shape(tuple(shape))}"
        )
    return None


#: How a traced value appears in a run-time check's message, as eager Python has it: a value
#: NumPy gives as a Python number (``PythonNumber``, a range index) or as a NumPy scalar.
_MESSAGE_FORMS: dict[str, Callable[[Any], Any]] = {
    "int": lambda v: int(v),
    "float": lambda v: float(v),
    "bool": lambda v: bool(v),
    "complex": lambda v: complex(v),
    "scalar": lambda v: v[()] if isinstance(v, np.ndarray) else v,
    "array": lambda v: v,
}
_CONVERSIONS: dict[str | None, Callable[[Any], Any]] = {
    None: lambda v: v,
    "s": str,
    "r": repr,
    "a": ascii,
}


def check_error(
    error: BaseException, args: tuple[Any, ...], values: Sequence[Any]
) -> BaseException:
    """The exception a failed run-time check raises: ``error`` (made while tracing) with each
    of its arguments described by ``args`` rebuilt from the run-time ``values``: ``None``
    (the traced argument as it is), ``("value", slot, form)`` (a traced value itself) or
    ``("message", parts)`` (an f-string: literal text, or ``(slot, form, conversion,
    spec)`` formatted as Python formats ``f"{value!conversion:spec}"``)."""
    try:
        out = copy.copy(error)  # a fresh one per failure: its traceback is this call's
    except Exception:  # an exception class whose constructor copy cannot call
        out = error
    if all(a is None for a in args):
        return out
    rebuilt = []
    for original, how in zip(error.args, args):
        if how is None:
            rebuilt.append(original)
        elif how[0] == "value":
            rebuilt.append(_MESSAGE_FORMS[how[2]](values[how[1]]))
        else:
            rebuilt.append(
                "".join(
                    part
                    if isinstance(part, str)
                    else format(
                        _CONVERSIONS[part[2]](_MESSAGE_FORMS[part[1]](values[part[0]])), part[3]
                    )
                    for part in how[1]
                )
            )
    out.args = tuple(rebuilt)
    return out


@LOWER.register(K.CHECK)
def _lower_check(node: Node) -> Callable[..., Any]:
    """Inputs: the condition, the message's values, then ``writes`` pairs (an argument, its
    value now): arguments updated in place before the check keep the update when it raises,
    as eagerly (the executor would write them back only when the call completes)."""
    params = cast("CheckParams", node.params)
    error, args, writes = params.error, params.args, params.writes

    def check(pred: Any, *inputs: Any) -> None:
        if pred:
            split = len(inputs) - 2 * writes
            for k in range(split, len(inputs), 2):
                if inputs[k] is not inputs[k + 1]:
                    np.copyto(inputs[k], inputs[k + 1])
            raise check_error(error, args, inputs[:split])

    return check


NOTES.add(K.CHECK, "no result: never on a gradient path (a replayed forward pass checks again)")


def _check_check(node: Node) -> None:
    pred = node.args[0]
    if not isinstance(pred, Node) or pred.shape != ():  # (no value, or not 0-d)
        raise Unsupported(f"a run-time check on a condition that is not 0-d ({node.name})")


def _emit_check(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """A failed check signals: the fused executor reruns the call from the arguments, which
    the compiled function has not written yet, and raises the check's exception with its
    message formatted there (NumPy's values, Python's formatting)."""
    w.signal(out, args[0].name)
    out.line(f"{t} = 0")
    return "scalar"


WHOLE_GRAPH.add(K.CHECK, Rule(_check_check, _emit_check))
ONNX.add(
    K.CHECK,
    refusal_rule(
        "ONNX models cannot raise an exception",
        "check the inputs before calling the model, or drop the check",
    ),
)
