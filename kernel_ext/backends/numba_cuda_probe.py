"""Is a real CUDA GPU present? Answered without importing Numba when there is no driver.

``backend="auto"`` asks this on every compile, so the common case (no NVIDIA driver) must be
cheap and must not load Numba: only when the driver library or device nodes exist is
``numba.cuda`` imported to ask ``cuda.is_available()`` — and the CUDA *simulator*
(``NUMBA_ENABLE_CUDASIM=1``) never counts as a GPU for ``auto``.
"""

from __future__ import annotations

import functools
import glob
import os


@functools.lru_cache(maxsize=1)
def driver_present() -> bool:
    """An NVIDIA driver: its device nodes or /proc entry (Linux), or its DLL (Windows).
    (Not ``ctypes.util.find_library``: on Linux it runs ``ldconfig``, tens of ms.)"""
    if os.name == "nt":
        # Windows spells it SystemRoot (its environment is case-insensitive; os.environ too)
        system = os.environ.get("SystemRoot", r"C:\Windows")  # noqa: SIM112
        return os.path.exists(os.path.join(system, "System32", "nvcuda.dll"))
    return bool(
        os.path.exists("/proc/driver/nvidia")
        or glob.glob("/dev/nvidia[0-9]*")
        or os.path.exists("/dev/dxg")
    )


@functools.lru_cache(maxsize=1)
def real_gpu_available() -> bool:
    """True when Numba can use a real CUDA device (the simulator does not count)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "") not in ("", "0") or not driver_present():
        return False
    try:
        from numba import config, cuda

        # (numba.config sets its options from the environment at import: no stubs for them)
        simulated = config.ENABLE_CUDASIM  # type: ignore[attr-defined]
        return bool(cuda.is_available() and not simulated)
    except Exception:  # a broken driver or toolkit: no GPU for us
        return False


__all__ = ["driver_present", "real_gpu_available"]
