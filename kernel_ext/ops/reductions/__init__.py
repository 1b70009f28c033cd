"""Reductions and scans: sum, prod, mean, extrema, arg-extrema, moments, the nan family, order
statistics, ufunc reduce/reduceat/accumulate and cumulative sums and products.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`)."""
