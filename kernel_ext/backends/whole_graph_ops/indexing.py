"""The Numba form of a loop's literal operands (``loop_literal``: the empty TensorArray stack
of a loop gradient), and the whole-graph rule of run-time checks.

The rules of the indexing ops (advanced getitem/setitem, ``tensor_array_write``, ``ufunc.at``,
``bincount``) are in :mod:`kernel_ext.ops.indexing`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir import Node, OpKind
from ..emit.literals import Unsupported, ctor, literal_value
from ..emit.source import Source
from .common import DTYPES, RULES, Rule, Writer

# ---------------------------------------------------------------------------------------------
# TensorArray stacks (loop gradients under jit_compile=True)
# ---------------------------------------------------------------------------------------------
# A loop's gradient stacks each iteration's state with ``tensor_array_write`` (the forward
# loop gains a count, starting at ``int64(0)``, and one stack per variable, starting as
# ``None``: ``autodiff/loops.py``); the reverse loop reads the rows back with ``getitem``.
# ``loop_literal`` gives such literal loop operands their Numba form (the empty stack: a
# 0-row array of the stack's rank, so every iteration carries one array type); the rule
# writing a row is ``tensor_array_write``'s (``ops/indexing/tensor_arrays.py``).


def loop_literal(value: Any, aval: Any) -> tuple[str, bool]:
    """The Numba source of a literal loop operand of abstract value ``aval`` (``None``: an
    empty stack) and whether it is a scalar; Unsupported for anything else."""
    dt = np.dtype(aval.dtype)
    if dt not in DTYPES or aval.shape is None:
        raise Unsupported(f"a loop operand {value!r} of {aval}")
    if value is None:
        if len(aval.shape) < 1:
            raise Unsupported("an empty stack of rank 0")
        return f"np.zeros({(0,) * len(aval.shape)!r}, {ctor(dt)})", False
    if aval.shape != () or not isinstance(value, (bool, int, float, np.number, np.bool_)):
        raise Unsupported(f"a loop operand {value!r}")
    return f"{ctor(dt)}({literal_value(value, dt)!r})", True


# ---------------------------------------------------------------------------------------------
# Run-time checks (``if bad: raise ...`` on a traced condition)
# ---------------------------------------------------------------------------------------------


def _check_check(node: Node) -> None:
    pred = node.args[0]
    if not isinstance(pred, Node) or pred.aval is None or pred.aval.shape != ():
        raise Unsupported(f"a run-time check on a condition that is not 0-d ({node.name})")


def _emit_check(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """A failed check signals: the fused executor reruns the call from the arguments, which
    the compiled function has not written yet, and raises the check's exception with its
    message formatted there (NumPy's values, Python's formatting)."""
    w.signal(out, args[0].name)
    out.line(f"{t} = 0")
    return "scalar"


RULES[OpKind.CHECK] = Rule(_check_check, _emit_check)
