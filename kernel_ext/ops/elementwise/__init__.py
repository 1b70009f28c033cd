"""Elementwise ops: NumPy's ufuncs (unary, binary, comparisons, bitwise, multi-output), where, cast
and clip.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`)."""
