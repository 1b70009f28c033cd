"""The op table: one rule per IR op kind, each writing that op's ONNX form.

``RULES[op](builder, node)`` appends the ONNX nodes computing ``node`` and returns the names
of its values. Each rule keeps NumPy's meaning explicit: operands are cast to the dtypes of
the loop NumPy itself picks (``ufunc.resolve_dtypes``, NEP 50 weak scalars included), NaN
propagation and integer division by zero are spelled out where ONNX differs, and every form
ONNX cannot express faithfully is refused (:func:`kernel_ext.onnx.refusal.refuse`) instead
of approximated. An op missing from ``RULES`` is refused by the builder.

Each op's rule is registered with its other rules in :mod:`kernel_ext.ops`; this package holds
the table and what every rule shares (``common``), and the refusals of the ops with no form
(``refusals``).
"""

from __future__ import annotations

from kernel_ext.onnx.rules.common import RULES
from kernel_ext.onnx.rules.refusals import refusal_reason, register_refusals

register_refusals()

__all__ = ["RULES", "refusal_reason"]
