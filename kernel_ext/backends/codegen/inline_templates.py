"""The fused kernel's tables of elementwise forms: per op and loop kind, the inline expression
that computes it with NumPy's exact semantics (``INLINE``, which :func:`.lowering.lower` and
reductions' accumulators read), the device math of a float function (``CUDA_MATH``), and the
helpers that write templates. The entries are registered with each op in
:mod:`kernel_ext.ops.elementwise`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ...ir.registry import OpTable
from ..emit.literals import BOOL

if TYPE_CHECKING:
    from .writer import InlineContext

#: ``(loop kinds, template)``: the template writes the op's expression for a loop whose kind
#: (b(ool) i(nt) u(nsigned) f(loat)) is one of ``kinds``.
KindTemplate = tuple[str, Callable[..., str]]


def by_kind(kinds: str, fn: Callable[..., str]) -> KindTemplate:
    """The template ``fn`` for loops of the kinds in ``kinds``."""
    return kinds, fn


def truth(expr: str, dtype: np.dtype) -> str:
    """``expr`` (of ``dtype``) as a bool: itself for a bool, ``expr != 0`` otherwise."""
    return expr if dtype == BOOL else f"({expr} != 0)"


def compare(op: str) -> Callable[..., str]:
    """The template of a comparison by the Python operator ``op``."""
    return lambda o, b: f"({o[0]} {op} {o[1]})"


def pick(cmp: str, nan_from: int | None) -> Callable[..., str]:
    """``a if a <cmp> b else b``; with ``nan_from`` the NaN of that operand wins the pick
    (maximum/minimum propagate a NaN of either side via ``a != a``; fmax/fmin prefer the
    non-NaN operand, so only ``b``'s NaN makes them pick ``a``).

    The comparison decides which operand a tie returns, which matters for ``-0.0 == 0.0``:
    NumPy's ``maximum``/``minimum`` return ``b`` on a tie (``maximum(-0.0, 0.0)`` is
    ``+0.0``, ``maximum(0.0, -0.0)`` is ``-0.0``), so they compare strictly. NumPy's
    ``fmax``/``fmin`` answer a tie of zeros differently in its SIMD lanes and its scalar
    tail; they keep ``a``."""

    def template(o: list[str], b: InlineContext) -> str:
        if nan_from is None:
            return f"({o[0]} if {o[0]} {cmp} {o[1]} else {o[1]})"
        nan = o[nan_from]
        return f"({o[0]} if ({o[0]} {cmp} {o[1]}) | ({nan} != {nan}) else {o[1]})"

    return template


#: Float ops with ``op.kernel_loop`` call NumPy's loop on the CPU (bitwise equal); CUDA has
#: device math for a few of them (math.* exists on the device and in the simulator): op -> the
#: device function's name.
CUDA_MATH: OpTable[str] = OpTable("fused-kernel device math")

#: (op, loop kind) -> inline template, tried in order; an op without a template for a loop's
#: kind calls NumPy's loop (or runs between the kernels).
INLINE: OpTable[list[KindTemplate]] = OpTable("fused-kernel inline template")
