"""The Numba CUDA backend: fused segments as grid-stride CUDA kernels.

``backend="cuda"`` (and ``"auto"`` when a real GPU is present) compiles each fused segment
(:mod:`.codegen`, target ``"cuda"``) into one kernel: every thread walks the flattened domain
with a grid stride, computes the segment's whole op chain in registers and writes only the
segment's outputs; a reduction leaves one partial accumulator per thread, combined on the host
in float64 (or the integer/bool dtype). Inputs are copied to the device once per call and only
outputs come back. Transcendental functions use the device's math library (``math.exp``,
``math.tanh`` ... from libdevice), within a few ulp of NumPy rather than bitwise
(docs/ARCHITECTURE.md); everything else is exact as on the CPU.

CUDA comes from ``from numba import cuda`` (the built-in target of Numba 0.68, or the
``numba-cuda`` package, which takes the same import over when installed). A real GPU is
``cuda.is_available() and not config.ENABLE_CUDASIM``; with ``NUMBA_ENABLE_CUDASIM=1`` the
kernels run in Numba's CUDA simulator (Python, one thread per CUDA thread), which is how CI,
without a GPU, checks them: with tiny launches (:func:`launch_config`).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
from numba import config, cuda

from . import kernel_cache
from .codegen import KernelSource

SIMULATOR = bool(config.ENABLE_CUDASIM)


def _device_decorator(fn: Callable) -> Any:
    return cuda.jit(device=True, inline=True)(fn) if not SIMULATOR else cuda.jit(device=True)(fn)


device = _device_decorator
kernel = cuda.jit


def available() -> bool:
    """Can CUDA kernels run here (a real GPU, or the simulator)?"""
    try:
        return bool(cuda.is_available())
    except Exception:  # a broken driver
        return False


def real_gpu() -> bool:
    return available() and not SIMULATOR


def launch_config(n: int) -> tuple[int, int]:
    """``(blocks, threads per block)``: tiny in the simulator (each CUDA thread is a Python
    thread there), enough to fill a real GPU otherwise."""
    if SIMULATOR:
        return (1 if n <= 32 else 2), 32
    threads = 256
    return max(1, min(1024, -(-n // threads))), threads


def compile_variant(ksrc: KernelSource, variant: str, descr: tuple | None = None
                    ) -> tuple[object, bool]:
    """Import the kernel module (kernels compile at their first launch)."""
    module, _, on_disk = kernel_cache.load(ksrc.source)
    return module.k_cuda, on_disk


def run_segment(kern: Any, ksrc: KernelSource, shape: tuple, arrays: list[np.ndarray],
                scalars: list[Any], out_dtypes: list[np.dtype]) -> tuple[bool, list, Any]:
    """Launch a segment kernel over ``shape``: ``(bad, map outputs, reduction partials)``."""
    n = int(np.prod(shape)) if shape else 1
    blocks, threads = launch_config(n)
    total_threads = blocks * threads
    d_in = [cuda.to_device(np.ascontiguousarray(np.broadcast_to(a, shape))) for a in arrays]
    d_out = [cuda.device_array(shape if shape else (1,), dtype=dt) for dt in out_dtypes]
    # (a 0-d domain's outputs are 1-element arrays, indexed [0] by the kernel)
    args: list[Any] = [n] + list(shape) + d_in + list(scalars) + d_out
    acc = None
    if ksrc.reduction is not None:
        acc = cuda.device_array(total_threads, dtype=np.dtype(ksrc.reduction.acc_dtype))
        args.append(acc)
    flag = cuda.to_device(np.zeros(1, np.int32))
    args.append(flag)
    with warnings.catch_warnings():
        # the simulator computes with NumPy scalars, which warn where the device wraps
        warnings.simplefilter("ignore", RuntimeWarning)
        with np.errstate(all="ignore"):
            kern[blocks, threads](*args)
    bad = bool(flag.copy_to_host()[0])
    results = [d.copy_to_host() for d in d_out]
    partials = acc.copy_to_host() if acc is not None else None
    return bad, results, partials


__all__ = ["SIMULATOR", "available", "compile_variant", "device", "kernel", "launch_config",
           "real_gpu", "run_segment"]
