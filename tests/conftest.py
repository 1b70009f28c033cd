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
