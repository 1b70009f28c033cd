"""Reductions and scans: sum, prod, mean, extrema, arg-extrema, moments, the nan family, order
statistics, ufunc reduce/reduceat/accumulate and cumulative sums and products.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`), one module per
sub-family:

* :mod:`.generic` — what every reduction shares: the abstract evaluation and the reference
  lowering, registered by a loop over ``OpKind`` (the modules below refine them);
* :mod:`.sums` — sum, prod, mean, any, all;
* :mod:`.extrema` — max, min, argmax, argmin;
* :mod:`.moments` — var, std;
* :mod:`.nan` — nansum, nanprod, nanmean, nanstd, nanvar, nanmax, nanmin, nanargmax,
  nanargmin;
* :mod:`.order_statistics` — median, percentile, quantile and their nan forms;
* :mod:`.scans` — cumsum, cumprod, nancumsum, nancumprod;
* :mod:`.ufunc_methods` — ``np.<ufunc>.reduce``, ``.reduceat``, ``.accumulate``;
* :mod:`.entry_points` — the handler factories of their NumPy functions (each op's
  ``implements`` line is in its section);
* :mod:`.common` — the helpers they share (no op).
"""

from __future__ import annotations

# The generic rules first: the modules after it refine them.
from . import generic  # isort: skip
from . import entry_points, extrema, moments, nan, order_statistics, scans, sums, ufunc_methods

__all__ = [
    "entry_points",
    "extrema",
    "generic",
    "moments",
    "nan",
    "order_statistics",
    "scans",
    "sums",
    "ufunc_methods",
]
