"""Automatic differentiation: VJP rules per op, the backward pass, tapes and optimizers.

Reverse mode over the graph IR. :mod:`.rules` holds the rule table (``VJP``, keyed by
:class:`~kernel_ext.ir.OpKind`), :mod:`.backward` the pass that applies it (recording the
backward ops into the current trace), :mod:`.tape` ``kx.GradientTape`` and
``kx.stop_gradient``, :mod:`.optimizers` ``kx.optimizers``. The function transforms
``kx.grad``/``kx.value_and_grad`` need ``kx.function`` for eager calls and live in the engine
(:mod:`kernel_ext.engine.transforms`). ``docs/gradients.md`` lists the op -> rule coverage.
"""

from . import array_rules, decompositions, eager, optimizers, while_gradients
from .backward import backward, inline_graph, rule_kinds, rule_table
from .rules import VJP, ZERO_GRADIENT
from .tape import GradientTape, eager_tapes, record_call, stop_gradient

__all__ = [
    "VJP",
    "ZERO_GRADIENT",
    "GradientTape",
    "array_rules",
    "backward",
    "decompositions",
    "eager",
    "eager_tapes",
    "inline_graph",
    "optimizers",
    "record_call",
    "rule_kinds",
    "rule_table",
    "stop_gradient",
    "while_gradients",
]
