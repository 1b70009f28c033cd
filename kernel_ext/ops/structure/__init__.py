"""Sources, state, control flow and opaque calls: placeholders, constants, variables, prints,
random draws, checks, cond, while, get_output and numpy_call.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`), one module per
sub-family:

* :mod:`.sources` — ``placeholder``, ``constant``;
* :mod:`.state` — ``read_variable``, ``assign_variable``, ``assign_add_variable``,
  ``assign_sub_variable``, ``print``, ``check``;
* :mod:`.opaque_calls` — ``numpy_call``, ``random_call``;
* :mod:`.control_flow` — ``cond``, ``while``, ``get_output``.
"""

from __future__ import annotations

from . import control_flow, opaque_calls, sources, state

__all__ = ["control_flow", "opaque_calls", "sources", "state"]
