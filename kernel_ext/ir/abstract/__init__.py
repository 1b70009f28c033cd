"""Abstract values (shape + dtype) and the per-op abstract-evaluation rules.

An :class:`AbstractValue` is what the tracer knows about a value before it exists: its dtype
(always concrete) and its shape, where a dimension may be ``None`` (unknown size) and the whole
shape may be ``None`` (unknown rank).

``ABSTRACT_EVAL[op](attrs, *args)`` computes a node's output from its inputs' abstract values
(Python scalar literals are passed as themselves: they are *weak* under NEP 50). The rules agree
with NumPy 2 because they ask NumPy: dtypes come from ``ufunc.resolve_dtypes``/``result_type``
or from running the op on tiny 1-element probes, shapes from NumPy's own broadcasting and
indexing rules (indexing is probed on zero-strided views, which cost no memory).

The values, shape helpers and table live in :mod:`.core`; the rules, one module per op family,
register themselves there with ``abstract_rule`` when this package is imported.
"""

from __future__ import annotations

from . import elementwise, indexing, linalg, reductions, shape, sorting
from .core import (
    ABSTRACT_EVAL,
    AbstractValue,
    KnownShape,
    Rule,
    Shape,
    abstract_eval,
    abstract_rule,
    aval_of,
    broadcast_shapes,
    format_aval,
    format_shape,
    normalize_axes,
    normalize_axis,
    probe_dtype,
    result_type,
)
from .indexing import DynamicIndex, getitem_shape
from .linalg import einsum_shape
from .reductions import reduced_shape
from .shape import reshape_shape

__all__ = [
    "ABSTRACT_EVAL",
    "AbstractValue",
    "DynamicIndex",
    "KnownShape",
    "Rule",
    "Shape",
    "abstract_eval",
    "abstract_rule",
    "aval_of",
    "broadcast_shapes",
    "einsum_shape",
    "elementwise",
    "format_aval",
    "format_shape",
    "getitem_shape",
    "indexing",
    "linalg",
    "normalize_axes",
    "normalize_axis",
    "probe_dtype",
    "reduced_shape",
    "reductions",
    "reshape_shape",
    "result_type",
    "shape",
    "sorting",
]
