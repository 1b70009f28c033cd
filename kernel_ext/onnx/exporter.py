"""``export``: a traced function (one concrete function) as an ONNX model, checked.

The model's inputs are the concrete function's tensor inputs (the graph's placeholders, named
after them, ``None`` dimensions as symbolic ``dim_param``s), its outputs the returned arrays in
the order ``ConcreteFunction.structured_outputs`` lists them (then the new contents of
arguments the function updates in place), variables become initializers holding their values
at export time. :func:`input_feed` builds the ``InferenceSession.run`` feed from the
arguments one would pass the function.
"""

from __future__ import annotations

import os
from typing import Any, cast

import numpy as np

from kernel_ext.engine import ConcreteFunction, Function
from kernel_ext.ir import AbstractValue
from kernel_ext.onnx.builder import GraphBuilder, ModelContext, elem_type, onnx_modules
from kernel_ext.onnx.refusal import refuse
from kernel_ext.onnx.rules import RULES
from kernel_ext.saved_model.targets import concrete_functions

#: The opset written by default: the lowest with every operator the rules use
#: (BitwiseNot, ScatterND's min/max reductions, Reduce ops taking axes as an input).
DEFAULT_OPSET = 18


def _concrete_functions(obj: Any) -> list[ConcreteFunction]:
    """The concrete functions ``obj`` stands for, as every exporter reads them
    (:func:`kernel_ext.saved_model.targets.concrete_functions`), flattened: an ONNX model
    holds one, so a holder object must hold exactly one traced function."""
    if isinstance(obj, Function) and not obj.concrete_functions and obj.input_signature is None:
        return []
    try:
        by_name = concrete_functions(obj)
    except TypeError:
        raise TypeError(
            f"kx.onnx.export: obj must be a kx.function or a ConcreteFunction, "
            f"got {type(obj).__name__}. Fix: decorate the function with "
            "@kx.function and call it (or get_concrete_function(...)) before "
            "exporting"
        ) from None
    return [cf for cfs in by_name.values() for cf in cfs]


def _choose(obj: Any, signature: Any) -> ConcreteFunction:
    """The one concrete function to export: ONNX models have one input signature."""
    if isinstance(signature, ConcreteFunction):
        return signature
    if signature is not None:
        if not isinstance(obj, Function):
            raise TypeError(
                "kx.onnx.export: signature= needs obj to be a kx.function, got "
                f"{type(obj).__name__}"
            )
        specs = signature if isinstance(signature, (tuple, list)) else (signature,)
        return obj.get_concrete_function(*specs)
    found = _concrete_functions(obj)
    if len(found) == 1:
        return found[0]
    name = getattr(obj, "name", "function")
    if not found:
        raise ValueError(
            f"kx.onnx.export: '{name}' has no trace yet (ONNX needs one input "
            "signature). Fix: call it once, or pass signature=(kx.TensorSpec("
            "...), ...)"
        )
    listed = "; ".join(f"({cf.signature_text()})" for cf in found)
    raise ValueError(
        f"kx.onnx.export: '{name}' has {len(found)} traces ({listed}) and an ONNX "
        "model holds one. Fix: pass signature= (TensorSpecs or one of "
        f"{name}.concrete_functions), or export each ConcreteFunction"
    )


def _dims(shape: tuple, input_name: str) -> list[Any]:
    """Static dims as ints, ``None`` dims as symbolic names (``x_dim0``)."""
    return [f"{input_name}_dim{i}" if d is None else int(d) for i, d in enumerate(shape)]


def build_model(cf: ConcreteFunction, opset: int | None = None) -> Any:
    """The ONNX ``ModelProto`` of one concrete function (checked with ``full_check``)."""
    onnx, helper, _ = onnx_modules()
    opset = DEFAULT_OPSET if opset is None else int(opset)
    latest = onnx.defs.onnx_opset_version()
    if not DEFAULT_OPSET <= opset <= latest:
        raise ValueError(
            f"kx.onnx.export: opset={opset} is outside {DEFAULT_OPSET}..{latest} "
            f"(the rules use opset-{DEFAULT_OPSET} operators; this onnx knows up "
            f"to {latest}). Fix: pass opset=None for {DEFAULT_OPSET}"
        )
    graph = cf.graph
    if not graph.outputs:
        raise ValueError(
            f"kx.onnx.export: '{graph.name}' returns no array computed in its "
            "graph (Python numbers are constants of the trace), so its ONNX model "
            "would be empty. Fix: pass the values as NumPy arrays"
        )
    model = ModelContext(opset)
    builder = GraphBuilder(model, RULES)
    inputs = []
    for node in graph.inputs:
        name = model.fresh(node.name)
        builder.env[node] = [name]
        aval = cast("AbstractValue", node.aval)  # (a traced graph's values all have one)
        if aval.dtype.kind not in "biuf":
            raise refuse(node, f"input of dtype {node.dtype}", "pass a numeric array")
        inputs.append(
            helper.make_tensor_value_info(
                name, elem_type(node.dtype), _dims(cast("tuple", aval.shape), name)
            )
        )
    builder.emit(graph)
    outputs = []
    for i, node in enumerate(graph.outputs):
        name = builder.one("Identity", [builder.value(node)], hint=f"output_{i}")
        outputs.append(
            helper.make_tensor_value_info(
                name,
                elem_type(node.dtype),
                [
                    d if d is not None else None
                    for d in cast("tuple", cast("AbstractValue", node.aval).shape)
                ],
            )
        )
    onnx_graph = helper.make_graph(
        builder.nodes, graph.name, inputs, outputs, initializer=model.initializers
    )
    opsets = [helper.make_opsetid("", opset)]
    ir_version = helper.find_min_ir_version_for(opsets)
    proto = helper.make_model(
        onnx_graph,
        opset_imports=opsets,
        ir_version=max(ir_version, 8),
        producer_name="jupyterlab-tffunction",
        doc_string=f"{graph.name}({cf.signature_text()})",
    )
    onnx.checker.check_model(proto, full_check=True)
    return proto


def export(
    obj: Any,
    path: str | os.PathLike[str] | None = None,
    opset: int | None = None,
    *,
    signature: Any = None,
) -> Any:
    """Write ``obj`` as an ONNX model to ``path`` (when given) and return the ``ModelProto``.

    ``obj`` is a ``ConcreteFunction`` or a ``kx.function``; a function with several traces
    needs ``signature=`` (a tuple of ``TensorSpec``s or example arguments, or one of its
    concrete functions), as an ONNX model has one input signature (torch.onnx.export exports
    one trace, tf2onnx one ``input_signature``). ``opset``: the ONNX opset (default
    :data:`DEFAULT_OPSET`). An op without a faithful ONNX form raises
    :class:`~kernel_ext.onnx.OnnxExportError` naming the op, its line and the fix.
    """
    onnx, _, _ = onnx_modules()
    proto = build_model(_choose(obj, signature), opset)
    if path is not None:
        onnx.save_model(proto, os.fspath(path))
    return proto


def input_feed(cf: ConcreteFunction, *args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
    """The ``InferenceSession.run`` feed for calling the exported ``cf`` on these arguments
    (the tensors inside them, by input name, as arrays)."""
    values = cf.function_type.bind(args, kwargs)
    feed: dict[str, np.ndarray] = {}
    names = ModelContext(DEFAULT_OPSET)  # the names build_model gives the inputs, in order
    for node in cf.graph.inputs:
        (_, index), *steps = node.params.path
        value = values[index]
        for kind, key in steps:
            value = value[key] if kind in ("item", "key") else getattr(value, key)
        feed[names.fresh(node.name)] = np.asarray(value, dtype=node.dtype)
    return feed
