"""Shape ops and creation: reshape, transpose, expand_dims, squeeze, broadcast_to, concatenate,
stack, flip, copy, dim, pad, diagflat, insert, real, imag, packbits, unpackbits and arange.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`)."""
