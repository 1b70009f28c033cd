"""Shape ops and creation: reshape, transpose, expand_dims, squeeze, broadcast_to, concatenate,
stack, flip, copy, dim, pad, diagflat, insert, real, imag, packbits, unpackbits and arange.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`), one module per
sub-family:

- :mod:`.views`: views and layout (reshape, transpose, expand_dims, squeeze, broadcast_to,
  flip, copy, real, imag);
- :mod:`.joining`: joining and padding (concatenate, stack, pad, insert, diagflat);
- :mod:`.bits`: packbits, unpackbits;
- :mod:`.creation`: arange, dim.
"""

from __future__ import annotations

from . import bits, creation, joining, views

__all__ = ["bits", "creation", "joining", "views"]
