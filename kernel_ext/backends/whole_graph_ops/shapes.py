"""Whole-graph rules of outer, nonzero and argwhere (the shape ops' rules live with their ops
in :mod:`kernel_ext.ops.shape`, ``ufunc.accumulate``'s in :mod:`kernel_ext.ops.reductions`).
"""

from __future__ import annotations


# ---------------------------------------------------------------------------------------------
# outer
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# nonzero / argwhere / ufunc.accumulate
# ---------------------------------------------------------------------------------------------
