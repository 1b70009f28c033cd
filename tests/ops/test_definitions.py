"""One definition per op: every rule of an op, in every layer's table, is registered by its
family's package in ``kernel_ext.ops``, and no layer below reaches up to it."""

from __future__ import annotations

import importlib
from collections import Counter

import pytest

from kernel_ext.ir import OpKind
from kernel_ext.ir.registry import OpTable
from kernel_ext.ops import FAMILIES

#: Every table of op knowledge that the op definitions fill: (module, attribute).
TABLES = [
    ("kernel_ext.ir.abstract", "ABSTRACT_EVAL"),
    ("kernel_ext.ir.interpreter", "LOWER"),
    ("kernel_ext.passes.simplify", "RULES"),
    ("kernel_ext.autodiff.rules", "VJP"),
    ("kernel_ext.autodiff.rules", "NOTES"),
    ("kernel_ext.backends.codegen.inline_templates", "INLINE"),
    ("kernel_ext.backends.codegen.inline_templates", "CUDA_MATH"),
    ("kernel_ext.backends.codegen.lowering", "NON_UFUNC_LOWERINGS"),
    ("kernel_ext.backends.codegen.reductions", "REDUCTION_PLANS"),
    ("kernel_ext.backends.whole_graph_ops.common", "RULES"),
    ("kernel_ext.onnx.rules.common", "RULES"),
]

#: Registrations a layer makes itself, for ops it answers the same way whatever they are:
#: the zero gradient of piecewise-constant and integer ops (``ZERO_GRADIENT``) and the ONNX
#: refusals (the reasons sit with the exporter, as every executor's fallback reasons do).
LAYER_REGISTRATIONS = {
    ("gradient (VJP)", "kernel_ext.autodiff.rules"),
    ("ONNX translation", "kernel_ext.onnx.rules.refusals"),
}


def _table(module: str, name: str) -> OpTable:
    table = getattr(importlib.import_module(module), name)
    assert isinstance(table, OpTable), f"{module}.{name} is a {type(table).__name__}"
    return table


@pytest.mark.parametrize(("module", "name"), TABLES, ids=[f"{m}.{n}" for m, n in TABLES])
def test_every_rule_is_registered_by_its_family_definition(module: str, name: str) -> None:
    table = _table(module, name)
    assert table, f"{table.name} is empty: kernel_ext.ops registered nothing"
    misplaced = []
    for op in table:
        origin = table.origin.get(op, "<assigned, not registered>")
        package = f"kernel_ext.ops.{FAMILIES[op.group]}"
        if origin == package or origin.startswith(package + "."):
            continue
        if (table.name, origin) not in LAYER_REGISTRATIONS:
            misplaced.append(f"{op.value} from {origin} (expected {package})")
    assert not misplaced, f"{table.name}: " + "; ".join(misplaced)


def test_every_group_has_a_family_package() -> None:
    groups = {op.group for op in OpKind}
    assert groups <= set(FAMILIES)
    for family in set(FAMILIES.values()):
        importlib.import_module(f"kernel_ext.ops.{family}")


def test_each_family_package_defines_only_its_own_ops() -> None:
    # the converse view of the first test: what each package registers, all tables together
    by_package: Counter[tuple[str, str]] = Counter()
    for module, name in TABLES:
        table = _table(module, name)
        for op, origin in table.origin.items():
            if origin.startswith("kernel_ext.ops."):
                family = origin.split(".")[2]
                by_package[(family, FAMILIES[op.group])] += 1
    strays = {k: n for k, n in by_package.items() if k[0] != k[1]}
    assert not strays, strays
    assert {family for family, _ in by_package} == set(FAMILIES.values())
