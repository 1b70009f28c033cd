"""The Numba CUDA backend: fused segments as grid-stride CUDA kernels.

``backend="cuda"`` (and ``"auto"`` when a real GPU is present) compiles each fused segment
(:mod:`.codegen`, target ``"cuda"``) into one kernel: every thread walks the flattened domain
with a grid stride, computes the segment's whole op chain in registers and writes only the
segment's outputs; a reduction leaves one partial accumulator per thread, combined on the host
in float64 (or the integer/bool dtype). A segment's inputs go to the device when it launches;
an output only other CUDA segments read stays there as a device array (the fused executor
decides, ``keep``), so intermediates between segments never travel; a graph input goes over
once per call (:class:`call_scope`), and only what host code or the caller reads comes back.
Transcendental functions use the device's math library (``math.exp``, ``math.tanh`` ... from
libdevice), within a few ulp of NumPy rather than bitwise (docs/ARCHITECTURE.md); everything
else is exact as on the CPU.

CUDA comes from ``from numba import cuda`` (the built-in target of Numba 0.68, or the
``numba-cuda`` package, which takes the same import over when installed). A real GPU is
``cuda.is_available() and not config.ENABLE_CUDASIM``; with ``NUMBA_ENABLE_CUDASIM=1`` the
kernels run in Numba's CUDA simulator (Python, one thread per CUDA thread), which is how CI,
without a GPU, checks them: with tiny launches (:func:`launch_config`).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import config, cuda

from . import kernel_cache
from .codegen import KernelSource

# (numba.config sets its options from the environment at import: no stubs for them)
SIMULATOR = bool(config.ENABLE_CUDASIM)  # type: ignore[attr-defined]


def _device_decorator(fn: Callable) -> Any:
    return cuda.jit(device=True, inline=True)(fn) if not SIMULATOR else cuda.jit(device=True)(fn)


device = _device_decorator
kernel = cuda.jit

# Integer add/sub/mul that wrap as NumPy's (see numba_decorators: Numba's own operators carry
# LLVM's ``nsw`` flag on signed integers, and NVVM optimises on it as LLVM does on the CPU).
if SIMULATOR:
    # The simulator runs kernels as Python on NumPy scalars, whose arithmetic wraps already.
    def wrapping_add(a: Any, b: Any) -> Any:
        return a + b

    def wrapping_sub(a: Any, b: Any) -> Any:
        return a - b

    def wrapping_mul(a: Any, b: Any) -> Any:
        return a * b
else:  # pragma: no cover - needs a real GPU
    from numba.cuda.extending import intrinsic as _cuda_intrinsic

    from .numba_decorators import WRAPPING_DOCS, wrapping_intrinsic

    wrapping_add = wrapping_intrinsic("add", WRAPPING_DOCS["add"], _cuda_intrinsic)
    wrapping_sub = wrapping_intrinsic("sub", WRAPPING_DOCS["sub"], _cuda_intrinsic)
    wrapping_mul = wrapping_intrinsic("mul", WRAPPING_DOCS["mul"], _cuda_intrinsic)


def launch_config(n: int) -> tuple[int, int]:
    """``(blocks, threads per block)``: tiny in the simulator (each CUDA thread is a Python
    thread there), enough to fill a real GPU otherwise."""
    if SIMULATOR:
        return (1 if n <= 32 else 2), 32
    threads = 256
    return max(1, min(1024, -(-n // threads))), threads


def compile_variant(
    ksrc: KernelSource, variant: str, descr: tuple | None = None
) -> tuple[object, bool]:
    """Import the kernel module (kernels compile at their first launch)."""
    module, _, on_disk = kernel_cache.load(ksrc.source)
    return module.k_cuda, on_disk


def on_device(value: Any) -> bool:
    """Is ``value`` a device array (a real one, or the simulator's)?"""
    return hasattr(value, "copy_to_host")


class call_scope:
    """The duration of one executor call: each of the graph's input arrays goes to the device
    once, however many kernels read it.

    The copies are remembered by the input's ``id`` for this call only, with the input itself
    held, so the id cannot be reused meanwhile; inputs are never written during a call (graphs
    are functional). Other values are not remembered: a NumPy fallback may reuse a dead
    temporary's buffer for a new value. Per thread, and nestable.
    """

    def __init__(self, params: tuple) -> None:
        self.inputs = {id(p): p for p in params if isinstance(p, np.ndarray)}
        self.copies: dict[tuple[int, int], Any] = {}

    def __enter__(self) -> call_scope:
        self.outer = getattr(_SCOPE, "current", None)
        _SCOPE.current = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _SCOPE.current = self.outer
        self.copies.clear()


_SCOPE = threading.local()


def _send(a: Any, rank: int) -> Any:
    """``a`` on the device with ``rank`` dims: its own sizes, leading 1s added (the kernel
    reads a size-1 dim at index 0, so broadcasting costs no copies of the data)."""
    a = np.asarray(a)
    return cuda.to_device(np.ascontiguousarray(a.reshape((1,) * (rank - a.ndim) + a.shape)))


def _input(a: Any, shape: tuple) -> Any:
    """A kernel input on the device, with the domain's rank: a device array the kernel can
    read in place (an earlier segment's output) as it is, anything else copied there (a graph
    input only once per call: :class:`call_scope`)."""
    if on_device(a):
        if len(a.shape) == len(shape) and all(s in (1, d) for s, d in zip(a.shape, shape)):
            return a  # read in place, broadcast dims at index 0
        a = a.copy_to_host()
    rank = len(shape)
    scope = getattr(_SCOPE, "current", None)
    if scope is not None and scope.inputs.get(id(a)) is a:
        key = (id(a), rank)
        copy = scope.copies.get(key)
        if copy is None:
            copy = scope.copies[key] = _send(a, rank)
        return copy
    return _send(a, rank)


def run_segment(
    kern: Any,
    pack: Callable[..., tuple],
    shape: tuple,
    arrays: list[Any],
    scalars: list[Any],
    out_dtypes: list[np.dtype],
    acc_dtype: np.dtype | None,
    keep: tuple[bool, ...] = (),
) -> tuple[bool, list, Any]:
    """Launch a segment kernel over ``shape``: ``(bad, map outputs, reduction partials)``.

    ``pack(total, dims, ins, scalars, outs, acc, flag)`` orders the device buffers as the
    kernel's parameters (the runner writes it from the segment's call description). Inputs
    may be device arrays already (intermediates of earlier segments); map output ``i`` stays
    on the device when ``keep[i]`` (only CUDA segments read it), and is copied back otherwise.
    """
    n = int(np.prod(shape)) if shape else 1
    blocks, threads = launch_config(n)
    total_threads = blocks * threads
    d_in = [_input(a, shape) for a in arrays]
    # (a 0-d domain's outputs are 1-element arrays, indexed [0] by the kernel)
    d_out = [cuda.device_array(shape if shape else (1,), dtype=dt) for dt in out_dtypes]
    acc = None
    if acc_dtype is not None:  # one partial accumulator per thread
        acc = cuda.device_array(total_threads, dtype=acc_dtype)
    flag = cuda.to_device(np.zeros(1, np.int32))
    args = pack(n, shape, d_in, scalars, d_out, acc, flag)
    with warnings.catch_warnings():
        # the simulator computes with NumPy scalars, which warn where the device wraps
        warnings.simplefilter("ignore", RuntimeWarning)
        with np.errstate(all="ignore"):
            kern[blocks, threads](*args)
    bad = bool(flag.copy_to_host()[0])
    if bad:  # the NumPy fallback reruns the segment: nothing else is needed
        return True, [], None
    results = [d if i < len(keep) and keep[i] else d.copy_to_host() for i, d in enumerate(d_out)]
    partials = acc.copy_to_host() if acc is not None else None
    return bad, results, partials


__all__ = [
    "SIMULATOR",
    "call_scope",
    "compile_variant",
    "device",
    "kernel",
    "launch_config",
    "on_device",
    "run_segment",
    "wrapping_add",
    "wrapping_mul",
    "wrapping_sub",
]
