"""The whole-graph compiler resolves every op one way: its rule, the writer's own form, or a
kernel op of a fused segment — never two forms that must agree."""

from __future__ import annotations

import pytest

from kernel_ext.backends.codegen import kernel_form
from kernel_ext.backends.whole_graph import compiles, writer
from kernel_ext.backends.whole_graph_ops import RULES
from kernel_ext.ir import OpKind

#: ops whose rule claims only some nodes, and who has the rest: advanced indexes are a
#: rule's, basic ones the writer's; max/min over several axes a rule's, over one a kernel's
SHARED = {
    OpKind.GETITEM: [True, True, False],
    OpKind.SETITEM: [True, True, False],
    OpKind.MAX: [True, False, True],
    OpKind.MIN: [True, False, True],
}


def test_the_writer_emits_exactly_the_ops_it_checks() -> None:
    emitted = set(writer._WRITER_EMITS) | {OpKind.PLACEHOLDER, OpKind.CONSTANT}
    assert emitted == set(writer.WRITER_OPS)


@pytest.mark.parametrize("op", list(OpKind), ids=lambda op: op.value)
def test_an_op_has_at_most_one_whole_graph_form(op: OpKind) -> None:
    forms = [op in RULES, op in writer.WRITER_OPS, kernel_form(op, "cpu")]
    if op in SHARED:
        assert forms == SHARED[op]
    else:
        assert sum(forms) <= 1, forms
    assert compiles(op) == any(forms)
