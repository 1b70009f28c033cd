"""Shape ops: reshape, transpose, concatenate, stack, flip, pad and the like."""

from __future__ import annotations

from typing import cast

import numpy as np

from kernel_ext.ir import Node
from kernel_ext.onnx.builder import GraphBuilder
from kernel_ext.onnx.refusal import refuse
from kernel_ext.onnx.rules.common import (
    ANY_VALUE,
    INT64_MIN,
    K,
    handled_params,
    out_dtype,
    rank,
    rule_for,
    sorted_axes,
)


@rule_for(K.RESHAPE)
def reshape(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, shape=ANY_VALUE, order="C", copy=ANY_VALUE)
    shape = node.attrs["shape"]
    if any(d is None for d in shape):
        raise refuse(node, "its target shape is not static", "reshape to a static shape")
    return [
        b.one(
            "Reshape", [b.value(node.args[0]), b.ints(shape)], allowzero=0 if 0 not in shape else 1
        )
    ]


@rule_for(K.TRANSPOSE)
def transpose(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, axes=ANY_VALUE)
    ndim = node.args[0].aval.ndim
    axes = node.attrs.get("axes")
    perm = list(range(ndim))[::-1] if axes is None else [int(a) % ndim for a in axes]
    return [b.one("Transpose", [b.value(node.args[0])], perm=perm)]


@rule_for(K.EXPAND_DIMS)
def expand_dims(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, axis=ANY_VALUE)
    axes = sorted_axes(node.attrs["axis"], rank(node))
    return [b.one("Unsqueeze", [b.value(node.args[0]), b.ints(axes)])]


@rule_for(K.SQUEEZE)
def squeeze(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, axis=ANY_VALUE)
    x = node.args[0]
    axis = node.attrs.get("axis")
    axes = [] if axis is None else [b.ints(sorted_axes(axis, rank(x)))]
    return [b.one("Squeeze", [b.value(x), *axes])]


@rule_for(K.BROADCAST_TO)
def broadcast_to(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, shape=ANY_VALUE, subok=ANY_VALUE)
    shape = node.attrs["shape"]
    if any(d is None for d in shape):
        raise refuse(node, "its target shape is not static", "broadcast to a static shape")
    return [b.one("Expand", [b.value(node.args[0]), b.ints(shape)])]


@rule_for(K.CONCATENATE)
def concatenate(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, axis=ANY_VALUE, dtype=ANY_VALUE, casting=ANY_VALUE)
    out = out_dtype(node)
    names = [b.operand(a, out) for a in node.args]
    axis = node.attrs.get("axis", 0)
    if axis is None:
        names, axis = [b.one("Reshape", [n, b.ints([-1])]) for n in names], 0
    return [b.one("Concat", names, axis=int(axis) % rank(node))]


@rule_for(K.STACK)
def stack(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, axis=ANY_VALUE, dtype=ANY_VALUE, casting=ANY_VALUE)
    out = out_dtype(node)
    axis = int(node.attrs.get("axis", 0)) % rank(node)
    names = [b.one("Unsqueeze", [b.operand(a, out), b.ints([axis])]) for a in node.args]
    return [b.one("Concat", names, axis=axis)]


@rule_for(K.FLIP)
def flip(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, axis=ANY_VALUE)
    x = node.args[0]
    axes = sorted_axes(node.attrs.get("axis"), rank(x))
    if not axes:
        return [b.one("Identity", [b.value(x)])]
    return [
        b.one(
            "Slice",
            [
                b.value(x),
                b.ints([-1] * len(axes)),
                b.ints([INT64_MIN] * len(axes)),
                b.ints(axes),
                b.ints([-1] * len(axes)),
            ],
        )
    ]


@rule_for(K.DIM)
def dim(b: GraphBuilder, node: Node) -> list[str]:
    x = node.args[0]
    axis = int(node.attrs["axis"]) % x.aval.ndim
    size = b.shape_of(b.value(x), axis, axis + 1)
    return [b.cast(b.one("Squeeze", [size, b.ints([0])]), np.int64, out_dtype(node))]


@rule_for(K.ARANGE)
def arange(b: GraphBuilder, node: Node) -> list[str]:
    out = out_dtype(node)
    if out.kind not in "if" or (
        out.kind == "i"
        and any(
            np.asarray(a).dtype.kind == "f"
            if not isinstance(a, Node)
            else cast("np.dtype", a.dtype).kind == "f"
            for a in node.args
        )
    ):
        raise refuse(
            node,
            "ONNX's Range computes in the result dtype only",
            "give arange integer bounds for an integer result",
        )
    names = [b.operand(a, out) for a in node.args]
    return [b.one("Range", names)]


@rule_for(K.PAD)
def pad(b: GraphBuilder, node: Node) -> list[str]:
    """np.pad in the modes ONNX's Pad shares with NumPy: constant (one value), edge,
    reflect (without repeating the edge, as NumPy's), wrap (opset 19)."""
    handled_params(node, pad_width=ANY_VALUE, mode=ANY_VALUE, constant_values=ANY_VALUE)
    x = node.args[0]
    mode = node.attrs.get("mode", "constant")
    widths = np.asarray(node.attrs["pad_width"], dtype=np.int64).reshape(-1, 2)
    modes = {"constant": "constant", "edge": "edge", "reflect": "reflect"}
    if b.model.opset >= 19:
        modes["wrap"] = "wrap"
    if mode not in modes:
        raise refuse(
            node,
            f"np.pad mode {mode!r} has no ONNX Pad mode"
            + (" before opset 19" if mode == "wrap" else ""),
            "pad with mode 'constant', 'edge' or 'reflect' (or 'wrap' with opset=19 or later)",
        )
    if mode in ("reflect", "wrap") and any(
        d is None or w.max() >= d for d, w in zip(x.aval.shape, widths)
    ):
        raise refuse(
            node,
            f"a {mode} pad wider than its axis (or of a None dim) repeats in NumPy",
            "pad by less than the axis length",
        )
    inputs = [b.value(x), b.ints(list(widths[:, 0]) + list(widths[:, 1]))]
    if mode == "constant":
        value = np.asarray(node.attrs.get("constant_values", 0))
        if value.size != 1 and np.unique(value).size != 1:
            raise refuse(node, "different constant_values per side", "pad once per value")
        inputs.append(b.const(value.reshape(-1)[0], x.dtype))
    return [b.one("Pad", inputs, mode=modes[mode])]
