"""Linear algebra and FFT: matmul, dot, outer, vdot, vecdot, matvec, vecmat, einsum, correlate,
convolve, the factorisations and solvers, and fft.

Each op's rules for every layer, side by side (see :mod:`kernel_ext.ops`)."""
