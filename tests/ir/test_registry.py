"""The op tables: one registration per op, refinements said as such."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_ext.autodiff.rules import VJP
from kernel_ext.ir import LOWER, OpKind
from kernel_ext.ir.abstract import ABSTRACT_EVAL
from kernel_ext.ir.registry import OpTable
from kernel_ext.onnx.rules import RULES as ONNX_RULES


def test_register_enters_the_function_for_each_op_and_returns_it() -> None:
    table: OpTable[object] = OpTable("test table")

    @table.register(OpKind.SIN, OpKind.COS)
    def rule() -> None: ...

    assert table[OpKind.SIN] is rule and table[OpKind.COS] is rule
    assert callable(rule)
    assert table.missing([OpKind.SIN, OpKind.TAN, OpKind.COS]) == [OpKind.TAN]


def test_a_second_registration_for_an_op_is_refused_naming_both() -> None:
    table: OpTable[object] = OpTable("test table")

    @table.register(OpKind.SIN)
    def first() -> None: ...

    with pytest.raises(ValueError, match=r"test table: op 'sin' is registered twice") as e:

        @table.register(OpKind.SIN)
        def second() -> None: ...

    assert "first" in str(e.value) and "second" in str(e.value)
    assert table[OpKind.SIN] is first  # the table keeps the first


def test_an_entry_remembers_the_module_that_registered_it() -> None:
    table: OpTable[int] = OpTable("test table")
    table.add(OpKind.SIN, 1)

    @table.register(OpKind.COS)
    def rule() -> int: ...

    table[OpKind.TAN] = 3  # a plain assignment is no registration: no origin
    assert table.origin == {OpKind.SIN: __name__, OpKind.COS: __name__}
    table.replace(OpKind.SIN, 2)
    assert table.origin[OpKind.SIN] == __name__


def test_replace_refines_an_existing_entry_only() -> None:
    table: OpTable[int] = OpTable("test table")
    table.add(OpKind.SIN, 1)
    table.replace(OpKind.SIN, 2)
    assert table[OpKind.SIN] == 2
    with pytest.raises(KeyError, match="'cos' has no entry to replace"):
        table.replace(OpKind.COS, 3)


@pytest.mark.parametrize(
    ("table", "complete"),
    [(ABSTRACT_EVAL, True), (LOWER, False), (VJP, False), (ONNX_RULES, False)],
    ids=["abstract", "lowering", "vjp", "onnx"],
)
def test_the_packages_op_tables_are_op_tables(table: OpTable, complete: bool) -> None:
    # every layer's op knowledge is filled through the one registry; abstract evaluation
    # covers every op (the others state their gaps in docs/op_coverage.md)
    assert isinstance(table, OpTable)
    assert all(isinstance(k, OpKind) for k in table)
    if complete:
        assert table.missing() == []


def test_the_tracers_numpy_handlers_are_a_registry_keyed_by_function() -> None:
    from kernel_ext.ir.registry import Registry
    from kernel_ext.trace import HANDLERS

    assert isinstance(HANDLERS, Registry)
    with pytest.raises(ValueError, match=r"'sum' is registered twice"):
        HANDLERS.add(np.sum, lambda *a: None)
    assert HANDLERS[np.sum].__name__ != "<lambda>"  # the first stays
