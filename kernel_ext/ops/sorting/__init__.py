"""Sorting and sets: sort, argsort, argpartition, partition, lexsort, unique, isin, searchsorted,
digitize, histogram and interp.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`), in three modules:

* :mod:`.sort` — sort, argsort, partition, argpartition, lexsort;
* :mod:`.sets` — unique, isin;
* :mod:`.bins` — searchsorted, digitize, histogram, interp (its whole-graph binary search
  shares NumPy's sort order with :mod:`.sort`).
"""

from __future__ import annotations

from . import bins, sets, sort

__all__ = ["bins", "sets", "sort"]
