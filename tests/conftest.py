"""Shared test setup: makes ``tests/`` importable for helper modules (e.g. ``programs``).

Tiered ``auto`` (``kernel_ext.backends.tiering``) is off by default here: a test that calls a
pure function 32 times would otherwise compile its whole graph with Numba as a side effect
(seconds each, in synchronous mode). ``tests/backends/test_tiering.py`` turns it on.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import kernel_ext.backends as _backends

_backends.TIERING = False


import pytest  # noqa: E402


@pytest.fixture
def settled_warnings():
    """Wait for the background kernel compiles earlier tests started before a test that
    asserts a warning. Python's warnings state is process-wide (before 3.14), and Numba's
    compiler enters ``warnings.catch_warnings`` on the compile thread: a compile that ends
    inside ``pytest.warns`` restores the filters it saved and ``pytest.warns`` records nothing
    (the warning is shown, outside the block). See docs/backends.md, "Warnings"."""
    from kernel_ext.backends.compiler import wait_for_kernels

    assert wait_for_kernels(timeout=300), "background compiles still running after 300 s"
