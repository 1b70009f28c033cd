"""Every reduction (OpGroup.REDUCTION): the abstract evaluation and the reference lowering the
group shares, registered by a loop over ``OpKind``; the modules of the family refine or add
to them op by op."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ...ir import Node, OpGroup, OpKind
from ...ir.abstract import ABSTRACT_EVAL
from ...ir.interpreter import LOWER
from .common import reduction_rule

# --- every reduction ---

#: Reductions whose rule adds NumPy's empty-input errors to the generic one (``nan.py``)
NAN_EXTREMA = (OpKind.NANMAX, OpKind.NANMIN, OpKind.NANARGMAX, OpKind.NANARGMIN)
#: Reductions with a ``q`` operand: a rule of their own (``order_statistics.py``)
QUANTILES = (OpKind.PERCENTILE, OpKind.NANPERCENTILE, OpKind.QUANTILE, OpKind.NANQUANTILE)
#: Reductions that are ufunc methods: rules of their own (``ufunc_methods.py``)
UFUNC_METHOD_REDUCTIONS = (OpKind.UFUNC_REDUCE, OpKind.UFUNC_REDUCEAT)

for _kind in OpKind:
    if (
        _kind.group is OpGroup.REDUCTION
        and _kind not in NAN_EXTREMA + QUANTILES + UFUNC_METHOD_REDUCTIONS
    ):
        ABSTRACT_EVAL.add(_kind, reduction_rule(_kind))


def _reduce_lowering(node: Node) -> Callable[..., Any]:
    return functools.partial(node.op.numpy_function, **node.params.kwargs())


for _kind in OpKind:
    if _kind.group is OpGroup.REDUCTION and _kind not in UFUNC_METHOD_REDUCTIONS:
        LOWER.add(_kind, _reduce_lowering)
