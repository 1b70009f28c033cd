"""Indexing: getitem, setitem, tensor-array writes, bincount, nonzero, argwhere, compress,
trim_zeros, ufunc.at, ravel_multi_index and unravel_index.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`)."""
