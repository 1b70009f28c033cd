"""tensor_array_write: a row written into a TensorArray's stack (``kx.TensorArray``, and the
stacks a loop's gradient keeps of each iteration's state).

The write itself is :func:`kernel_ext.ir.interpreter.tensor_array_write` (the trace's eager
TensorArray and the executors' in-place form call it too); the whole-graph compiler's literal
loop operands (the empty stack) are ``backends.whole_graph_ops.loop_literal``. No gradient
rule: ``autodiff.backward.NO_GRADIENT_REASONS`` says why.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.rules import NOTES
from ...backends.emit.literals import Unsupported, ctor
from ...backends.emit.source import Source
from ...backends.static_shapes import aval_of_node, ranked_shape
from ...backends.whole_graph_ops.common import DTYPES, Rule, Writer, only_params
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...ir import Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL, AbstractValue
from ...ir.abstract.core import shape_of
from ...ir.interpreter import LOWER, tensor_array_write
from ...ir.params import TensorArrayWriteParams
from ...onnx.rules.common import RULES as ONNX
from ...onnx.rules.common import refusal_rule

K = OpKind

# --- tensor_array_write ---


@ABSTRACT_EVAL.register(K.TENSOR_ARRAY_WRITE)
def _abstract_tensor_array_write(
    params: TensorArrayWriteParams, buffer: AbstractValue, index: Any, value: Any
) -> AbstractValue:
    vshape = shape_of(value)
    return AbstractValue(
        None if vshape is None else (None,) + tuple(vshape), np.dtype(params.dtype)
    )


@LOWER.register(K.TENSOR_ARRAY_WRITE)
def _lower_tensor_array_write(node: Node) -> Callable[..., Any]:
    return functools.partial(tensor_array_write, **node.params.kwargs())


NOTES.add(K.TENSOR_ARRAY_WRITE, "not yet")

# The whole-graph rule writes a row exactly as ``ir.interpreter.tensor_array_write`` does:
# rows allocated (zeros) at the first write, grown geometrically when dynamic, into the buffer
# itself where the in-place plan (``backends/inplace.py``) found it private and dead, else
# into a copy. A negative or out-of-range index and a row of another shape signal: the fused
# executor reruns the call and raises NumPy's error.


def _check_tensor_array_write(node: Node) -> None:
    params = cast("TensorArrayWriteParams", node.params)
    only_params(node, {"dtype", "size", "dynamic_size"})
    buffer, index, value = node.args
    dt = np.dtype(params.dtype)
    if dt not in DTYPES:
        raise Unsupported(f"a TensorArray of {dt}")
    if buffer is not None and (
        not isinstance(buffer, Node)
        or aval_of_node(buffer).shape is None
        or np.dtype(buffer.dtype) != dt
    ):
        raise Unsupported("tensor_array_write into a buffer that is not a stack")
    if isinstance(index, Node):
        if aval_of_node(index).shape != () or np.dtype(index.dtype).kind not in "iu":
            raise Unsupported("tensor_array_write at a non-integer index")
    elif not isinstance(index, (int, np.integer)) or isinstance(index, bool):
        raise Unsupported(f"tensor_array_write at {index!r}")
    if (
        not isinstance(value, Node)
        or aval_of_node(value).shape is None
        or None in ranked_shape(value)
        or np.dtype(value.dtype) not in DTYPES
    ):
        raise Unsupported("tensor_array_write of a value of unknown shape")
    if not np.can_cast(aval_of_node(value).dtype, dt, casting="same_kind"):
        raise Unsupported(f"tensor_array_write of {value.dtype} into {dt}")  # NumPy's error
    if aval_of_node(node).shape is None or len(ranked_shape(node)) != len(ranked_shape(value)) + 1:
        raise Unsupported("tensor_array_write of a stack of another rank")


def _emit_tensor_array_write(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    params = cast("TensorArrayWriteParams", node.params)
    buffer, index, value = args
    dt = np.dtype(params.dtype)
    size, dynamic = int(params.size), bool(params.dynamic_size)
    vshape = node.args[2].aval.shape
    rank = len(vshape)
    i = w.fresh("i")
    out.line(f"{i} = np.int64({index if not hasattr(index, 'name') else index.name})")
    w.signal(out, f"{i} < 0")
    row = "".join(f", {value.name}.shape[{d}]" for d in range(rank)) if not value.scalar else ""
    zeros = f"np.zeros((max({size}, {i} + 1){row},), {ctor(dt)})"
    grown = f"np.zeros((max({i} + 1, 2 * {{rows}}){row},), {ctor(dt)})"
    in_place = node in w.plan.writes
    if buffer is None:
        if not dynamic:
            w.signal(out, f"{i} >= {size}")
        out.line(f"{t} = {zeros}")
    else:
        b, rows = buffer.name, w.fresh("rows")
        out.line(f"{rows} = {b}.shape[0]")
        with out.block(f"if {rows} == 0:") as empty:
            if not dynamic:
                w.signal(empty, f"{i} >= {size}")
            empty.line(f"{t} = {zeros}")
        with out.block("else:") as stacked:
            for d in range(rank):  # every row has one shape (NumPy raises ValueError)
                w.signal(stacked, f"{b}.shape[{d + 1}] != {value.name}.shape[{d}]")
            with stacked.block(f"if {i} >= {rows}:") as grow:
                if not dynamic:
                    w.signal(grow, "True")
                grow.line(f"{t} = {grown.format(rows=rows)}")
                grow.line(f"{t}[:{rows}] = {b}")
            with stacked.block("else:") as keep:
                keep.line(f"{t} = {b if in_place else b + '.copy()'}")
    src = value.name
    if np.dtype(node.args[2].dtype) != dt:
        src = f"{ctor(dt)}({src})" if value.scalar else f"{src}.astype({ctor(dt)})"
    out.line(f"{t}[{i}] = {src}")
    # (written in place, the stack is still the loop's own buffer: nothing else reads the
    # old one, which the in-place plan checked, so it is carried without a copy)
    return "fresh"


WHOLE_GRAPH.add(K.TENSOR_ARRAY_WRITE, Rule(_check_tensor_array_write, _emit_tensor_array_write))


ONNX.add(
    K.TENSOR_ARRAY_WRITE,
    refusal_rule(
        "a growing TensorArray has no ONNX form",
        "collect the rows in a preallocated array with x[i] = row, or with np.stack",
    ),
)
