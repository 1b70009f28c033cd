"""The CUDA backend, checked in Numba's CUDA simulator in a process of its own.

Numba reads ``NUMBA_ENABLE_CUDASIM`` when it is imported, and the rest of the suite has
imported it long before this test runs, so the CUDA cases (``cuda_sim_cases.py``) run in a
fresh pytest process with the simulator on.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import kernel_ext as kx


def test_cuda_kernels_in_the_simulator():
    here = Path(__file__).parent
    env = dict(
        os.environ, NUMBA_ENABLE_CUDASIM="1", KERNEL_EXT_STRICT="1", KERNEL_EXT_SYNC_COMPILE="1"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-x",
            str(here / "cuda_sim_cases.py"),
        ],
        cwd=here.parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout


def test_backend_cuda_without_a_gpu_names_the_fix(monkeypatch):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    from kernel_ext.backends import numba_cuda_probe

    if numba_cuda_probe.real_gpu_available():
        pytest.skip("a real GPU is present")
    with pytest.raises(ValueError, match="NUMBA_ENABLE_CUDASIM"):
        kx.function(lambda x: x + 1, backend="cuda")
