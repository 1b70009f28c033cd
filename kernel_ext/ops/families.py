"""Which family package of :mod:`kernel_ext.ops` defines the ops of each group."""

from __future__ import annotations

from ..ir import OpGroup

#: The family module that defines each group's ops (``tests/ops`` checks that every rule of
#: an op is registered from its family's package).
FAMILIES: dict[OpGroup, str] = {
    OpGroup.SOURCE: "structure",
    OpGroup.STATEFUL: "structure",
    OpGroup.OPAQUE: "structure",
    OpGroup.CONTROL_FLOW: "structure",
    OpGroup.STRUCTURAL: "structure",
    OpGroup.ELEMENTWISE: "elementwise",
    OpGroup.REDUCTION: "reductions",
    OpGroup.SCAN: "reductions",
    OpGroup.SHAPE: "shape",
    OpGroup.CREATION: "shape",
    OpGroup.INDEXING: "indexing",
    OpGroup.LINALG: "linalg",
    OpGroup.SORTING: "sorting",
}
