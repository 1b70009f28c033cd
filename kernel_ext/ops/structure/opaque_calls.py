"""Opaque calls: ``numpy_call`` (a NumPy function run as it is) and ``random_call`` (a draw
from ``np.random`` or a ``np.random.Generator``).

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`). Their argument
templates, result structures and run-time result checks are the IR's (:mod:`kernel_ext.ir.calls`).
Neither has a gradient: the backward pass raises, naming the function (``NOTES`` says so),
and neither has an ONNX form (a Python function, NumPy's random streams).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from ...autodiff.rules import NOTES
from ...ir.abstract.core import ABSTRACT_EVAL, AbstractValue
from ...ir.calls import call_name, check_result
from ...ir.graph import Node
from ...ir.interpreter import LOWER
from ...ir.ops import OpKind
from ...ir.params import CallParams
from ...onnx.rules.common import RULES as ONNX
from ...onnx.rules.common import refusal_rule

K = OpKind

# --- numpy_call, random_call ---


@ABSTRACT_EVAL.register(K.NUMPY_CALL, K.RANDOM_CALL)
def _opaque_call(
    params: CallParams, *args: Any
) -> AbstractValue | tuple[AbstractValue, ...] | None:
    # Found when the call was traced, by running the callable on stand-ins (trace/opaque.py):
    # no rule could know what an arbitrary NumPy function returns.
    out_aval: AbstractValue | tuple[AbstractValue, ...] | None = params.out_aval
    return out_aval


@LOWER.register(K.NUMPY_CALL, K.RANDOM_CALL)
def _lower_opaque_call(node: Node) -> Callable[..., Any]:
    """The callable as it is, on the static arguments and the run-time inputs; its result is
    checked against the traced abstract value (a stand-in found it: ``ir/calls.py``)."""
    params = cast("CallParams", node.params)
    fn, template, out_aval = params.fn, params.template, params.out_aval
    describe = node.meta.get("where") or call_name(fn)
    if template.constant() and out_aval is not None:
        # ``rng.normal(0.0, 0.05, size=(30,))``: arguments filled once (filling them at
        # every call cost about as much as a small draw itself)
        args, kwargs = template.fill(())

        def call_constant() -> Any:
            return check_result(fn(*args, **kwargs), out_aval, describe)

        return call_constant

    def call(*values: Any) -> Any:
        args, kwargs = template.fill(values)
        result = fn(*args, **kwargs)
        return None if out_aval is None else check_result(result, out_aval, describe)

    return call


NOTES.add(K.NUMPY_CALL, "names the function and the line")
NOTES.add(K.RANDOM_CALL, "names the function")
ONNX.add(
    K.RANDOM_CALL,
    refusal_rule(
        "ONNX's random ops do not draw NumPy's streams",
        "draw the random values outside and pass them in as an argument",
    ),
)
ONNX.add(
    K.NUMPY_CALL,
    refusal_rule(
        "it runs a Python function as it is, at each call",
        "compute that value outside the exported function and pass it in as an argument",
    ),
)
