"""Building ONNX graphs from the IR: model-wide names and initializers, one builder per graph.

A :class:`GraphBuilder` holds the ONNX nodes of one graph (the main graph, an ``If`` branch or
a ``Loop`` body) and maps each IR node to the names of its ONNX values. Sub-graphs see the
names of their enclosing graphs (ONNX's outer-scope references), so captured values need no
plumbing; every name is unique in the whole model, as ONNX's single-assignment rule asks.
The op rules (:mod:`kernel_ext.onnx.rules`) call the helpers here and never build protobuf
messages themselves: everything goes through ``onnx.helper`` and ``onnx.numpy_helper``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kernel_ext.ir import Graph, Node, OpKind
from kernel_ext.onnx.refusal import refuse

#: Dtype kinds onnxruntime computes with (complex, strings and objects are refused, and
#: float16, which most of its CPU kernels lack).
SUPPORTED_KINDS = frozenset("biuf")


def onnx_modules() -> tuple[Any, Any, Any]:
    """``onnx``, ``onnx.helper``, ``onnx.numpy_helper``, or an ImportError naming the extra."""
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError as e:  # pragma: no cover - the test extra installs onnx
        raise ImportError(
            "kx.onnx needs the onnx package: pip install "
            "'jupyterlab-tffunction[onnx]' (onnx and onnxruntime)"
        ) from e
    return onnx, helper, numpy_helper


def elem_type(dtype: Any) -> int:
    """The ONNX TensorProto element type of a NumPy dtype."""
    _, helper, _ = onnx_modules()
    return int(helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))


class ModelContext:
    """What the whole model shares: unique value names, initializers (variables), the opset."""

    def __init__(self, opset: int) -> None:
        self.opset = opset
        self.initializers: list[Any] = []
        self._variables: dict[int, str] = {}
        self._taken: set[str] = set()
        self._counter = itertools.count()

    def fresh(self, hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint) or "v"
        name = base
        while name in self._taken:
            name = f"{base}_{next(self._counter)}"
        self._taken.add(name)
        return name

    def variable(self, variable: Any, hint: str) -> str:
        """The initializer holding ``variable``'s value now (one per variable)."""
        name = self._variables.get(id(variable))
        if name is None:
            _, _, numpy_helper = onnx_modules()
            name = self._variables[id(variable)] = self.fresh(hint)
            value = np.array(variable.numpy(), copy=True)
            self.initializers.append(numpy_helper.from_array(value, name))
        return name


Rule = Callable[["GraphBuilder", Node], list[str]]


class GraphBuilder:
    """The ONNX nodes of one graph and the IR-node -> ONNX-names map it (and its sub-graphs)
    read."""

    def __init__(
        self,
        model: ModelContext,
        rules: dict[OpKind, Rule],
        env: dict[Node, list[str]] | None = None,
    ) -> None:
        self.model = model
        self.rules = rules
        self.env: dict[Node, list[str]] = dict(env or {})
        self.nodes: list[Any] = []

    # -- values -------------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        return self.model.fresh(hint)

    def add(
        self,
        op_type: str,
        inputs: Sequence[str],
        outputs: int = 1,
        hint: str | None = None,
        **attrs: Any,
    ) -> list[str]:
        """Append one ONNX node; returns its output names."""
        _, helper, _ = onnx_modules()
        names = [self.fresh(f"{hint or op_type}") for _ in range(outputs)]
        self.nodes.append(
            helper.make_node(
                op_type, list(inputs), names, name=self.fresh(f"{op_type}_node"), **attrs
            )
        )
        return names

    def one(
        self, op_type: str, inputs: Sequence[str], hint: str | None = None, **attrs: Any
    ) -> str:
        return self.add(op_type, inputs, 1, hint, **attrs)[0]

    def const(self, value: Any, dtype: Any = None) -> str:
        """A ``Constant`` node holding ``value`` (as ``dtype`` when given)."""
        _, helper, numpy_helper = onnx_modules()
        array = np.asarray(value, dtype=dtype)
        name = self.fresh("const")
        tensor = numpy_helper.from_array(np.array(array, order="C"), name + "_value")
        self.nodes.append(
            helper.make_node("Constant", [], [name], value=tensor, name=self.fresh("Constant_node"))
        )
        return name

    def ints(self, values: Sequence[int]) -> str:
        """A 1-D int64 constant (axes, shapes, starts...)."""
        return self.const(np.asarray(list(values), dtype=np.int64).reshape(-1))

    def value(self, node: Node) -> str:
        return self.env[node][0]

    def cast(self, name: str, src: Any, dst: Any) -> str:
        """``name`` (of dtype ``src``) as ``dst``: NumPy's ``astype`` (to bool: ``!= 0``)."""
        src, dst = np.dtype(src), np.dtype(dst)
        if src == dst:
            return name
        if dst == np.bool_:
            return self.to_bool(name, src)
        return self.one("Cast", [name], to=elem_type(dst))

    def to_bool(self, name: str, src: Any) -> str:
        """Truth value of each element, as NumPy takes it (nonzero, NaN included, is True)."""
        src = np.dtype(src)
        if src == np.bool_:
            return name
        return self.one("Not", [self.one("Equal", [name, self.const(0, src)])])

    def operand(self, arg: Any, dtype: Any) -> str:
        """An op's argument (an IR node or an inline literal) as a value of ``dtype``."""
        if isinstance(arg, Node):
            return self.cast(self.value(arg), arg.dtype, dtype)
        return self.const(np.asarray(arg).astype(dtype))

    def shape_of(self, name: str, start: int | None = None, end: int | None = None) -> str:
        attrs: dict[str, Any] = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
        return self.one("Shape", [name], **attrs)

    # -- graphs -------------------------------------------------------------------------------
    def emit(self, graph: Graph) -> None:
        """Translate ``graph``'s nodes (its placeholders must already be in ``env``)."""
        for node in graph.nodes:
            if node.op is OpKind.PLACEHOLDER:
                continue
            for aval in _avals(node):
                if aval.dtype.kind not in SUPPORTED_KINDS or aval.dtype == np.float16:
                    raise refuse(
                        node,
                        f"its value has dtype {aval.dtype}, which "
                        "onnxruntime's CPU kernels do not compute with",
                        "cast float16 values to float32 first, and keep complex "
                        "and non-numeric values out of the exported function",
                    )
            rule = self.rules.get(node.op)
            if rule is None:
                raise refuse(node, "no rule translates this op", _generic_fix(node))
            self.env[node] = rule(self, node)

    def subgraph(
        self,
        graph: Graph,
        bindings: dict[Node, str],
        inputs: Sequence[Any],
        out_dtypes: Sequence[Any],
        name: str,
        finish: Callable[[GraphBuilder, list[str]], list[str]] | None = None,
    ) -> Any:
        """An ONNX sub-graph computing ``graph`` with its placeholders bound to names (outer
        values or the sub-graph's own ``inputs``: value infos); its outputs cast to
        ``out_dtypes``, then passed through ``finish`` (a Loop body appends its condition)."""
        _, helper, _ = onnx_modules()
        inner = GraphBuilder(self.model, self.rules, self.env)
        inner.env.update({node: [n] for node, n in bindings.items()})
        inner.emit(graph)
        outs = [inner.cast(inner.value(o), o.dtype, dt) for o, dt in zip(graph.outputs, out_dtypes)]
        if finish is not None:
            outs = finish(inner, outs)
        final = [inner.one("Identity", [o], hint=f"{name}_out") for o in outs]
        # (a Loop body's condition output leads its outputs)
        dtypes = [np.bool_, *out_dtypes] if finish is not None else list(out_dtypes)
        infos = [
            helper.make_tensor_value_info(n, elem_type(dt), None) for n, dt in zip(final, dtypes)
        ]
        return helper.make_graph(inner.nodes, self.fresh(name), list(inputs), infos)


def _avals(node: Node) -> list[Any]:
    return list(node.outputs)


def _generic_fix(node: Node) -> str:
    return (
        "compute this value outside the exported function and pass it in as an argument, "
        "or keep running it with kx.function (docs/onnx.md lists the ops with an ONNX form)"
    )
