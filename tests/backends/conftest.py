"""Backend tests compile kernels synchronously (a call never races its own compilation), so
a test sees exactly the executor it asks for; the background-compile tests opt out. Makes
``whole_graph_support`` (helpers shared by the whole-graph op tests) importable."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _synchronous_kernels(monkeypatch):
    import kernel_ext.backends as backends
    from kernel_ext.backends import fused

    monkeypatch.setattr(backends, "STRICT", True)
    old = fused.set_synchronous(True)
    yield
    fused.set_synchronous(old)
