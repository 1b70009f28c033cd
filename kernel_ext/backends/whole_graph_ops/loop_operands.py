"""The Numba form of a loop's literal operands (``loop_literal``).

A loop's gradient stacks each iteration's state with ``tensor_array_write`` (the forward loop
gains a count, starting at ``int64(0)``, and one stack per variable, starting as ``None``:
``autodiff/while_gradients.py``); the reverse loop reads the rows back with ``getitem``.
``loop_literal`` gives such literal loop operands their Numba form (the empty stack: a 0-row
array of the stack's rank, so every iteration carries one array type). The rules of the
indexing ops, ``tensor_array_write``'s among them, are in :mod:`kernel_ext.ops.indexing`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..emit.literals import Unsupported, ctor, literal_value
from .common import DTYPES


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
# ufunc.at / bincount
# ---------------------------------------------------------------------------------------------
