"""diagflat as a select from an identity mask.

The indexing ops' rules (getitem, setitem, ufunc.at, nonzero, ...) are in
:mod:`kernel_ext.ops.indexing`.
"""

from __future__ import annotations

import numpy as np

from kernel_ext.ir import Node
from kernel_ext.onnx.builder import GraphBuilder
from kernel_ext.onnx.refusal import refuse
from kernel_ext.onnx.rules.common import (
    ANY_VALUE,
    K,
    handled_params,
    out_dtype,
    rule_for,
    wide,
)


@rule_for(K.DIAGFLAT)
def diagflat(b: GraphBuilder, node: Node) -> list[str]:
    """np.diagflat(v, k): the flattened values on the k-th diagonal of a square of zeros (a
    select from an identity mask, so inf and NaN stay off the other entries)."""
    handled_params(node, k=ANY_VALUE)
    v = node.args[0]
    size = v.aval.size
    if size is None:
        raise refuse(
            node, "np.diagflat of a value with a None dimension", "give the input a static shape"
        )
    k = int(node.attrs.get("k", 0))
    work = np.dtype(np.int32) if v.dtype == np.bool_ else wide(v.dtype)
    flat = b.one("Reshape", [b.operand(v, work), b.ints([1, -1])])
    mask = b.const(np.eye(size, dtype=np.bool_))
    square = b.one("Where", [mask, flat, b.const(0, work)])
    if k:
        # k > 0: k zero columns before and rows after; k < 0: rows before, columns after
        top, left = (0, k) if k > 0 else (-k, 0)
        bottom, right = (k, 0) if k > 0 else (0, -k)
        square = b.one("Pad", [square, b.ints([top, left, bottom, right])], mode="constant")
    return [b.cast(square, work, out_dtype(node))]
