"""Shared fixtures for the seed-conformance tests (tests/conformance/test_seed_*.py).

Every test in this folder translates one example of the seed documents in ``shared/seeds/``
(TensorFlow's tf.function guides and two articles) into NumPy + ``kernel_ext``.
"""

from __future__ import annotations

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "autograph: seed behaviours that need AutoGraph")


@pytest.fixture(autouse=True)
def _graph_mode_after_each_test():
    """A test that switches ``run_functions_eagerly`` on must not leak it into the next test."""
    yield
    try:
        import kernel_ext as kx
    except ImportError:  # the test itself already failed on the import
        return
    kx.config.run_functions_eagerly(False)
