"""Sorting and sets: sort, argsort, argpartition, partition, lexsort, unique, isin, searchsorted,
digitize, histogram and interp.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`)."""
