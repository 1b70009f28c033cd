"""Linear algebra and FFT: matmul, dot, outer, vdot, vecdot, matvec, vecmat, einsum, correlate,
convolve, the factorisations and solvers, and fft.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`), one module per
sub-family:

* :mod:`.products`: matmul, dot, outer, vdot, vecdot, matvec, vecmat, einsum;
* :mod:`.convolutions`: correlate, convolve;
* :mod:`.factorisations`: inv, det, solve, slogdet, svd, cholesky, qr, eigh, eigvalsh, lstsq,
  pinv;
* :mod:`.fft`: fft (every ``np.fft`` transform).
"""

from __future__ import annotations

# Each module registers its rules on import (factorisations uses a helper of products).
from . import products  # isort: skip
from . import convolutions, factorisations, fft

__all__ = ["convolutions", "factorisations", "fft", "products"]
