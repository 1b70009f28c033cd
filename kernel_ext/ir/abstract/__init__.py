"""Abstract values (shape + dtype) and the per-op abstract-evaluation rules.

An :class:`AbstractValue` is what the tracer knows about a value before it exists: its dtype
(always concrete) and its shape, where a dimension may be ``None`` (unknown size) and the whole
shape may be ``None`` (unknown rank).

``ABSTRACT_EVAL[op](attrs, *args)`` computes a node's output from its inputs' abstract values
(Python scalar literals are passed as themselves: they are *weak* under NEP 50). The rules agree
with NumPy 2 because they ask NumPy: dtypes come from ``ufunc.resolve_dtypes``/``result_type``
or from running the op on tiny 1-element probes, shapes from NumPy's own broadcasting and
indexing rules (indexing is probed on zero-strided views, which cost no memory).

The values and the table live in :mod:`.core`, with the shape helpers every layer asks
(``getitem_shape``, ``reduced_shape``, ``reshape_shape``, ``einsum_shape``: one module per
family); each op's rule is registered by its definition in :mod:`kernel_ext.ops` when
``kernel_ext`` is imported (every op has one: ``tests/ir/test_registry.py``).
"""

from __future__ import annotations

from . import indexing, linalg, reductions, shape
from .core import (
    ABSTRACT_EVAL,
    AbstractValue,
    KnownShape,
    NodeAval,
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
    "NodeAval",
    "Rule",
    "Shape",
    "abstract_eval",
    "abstract_rule",
    "aval_of",
    "broadcast_shapes",
    "einsum_shape",
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
]
