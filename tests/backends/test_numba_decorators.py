"""What importing the Numba decorators sets up for the process: Numba's error messages
leave ``sys.stdout`` alone (kernels compile on a background thread while Jupyter and pytest
swap the streams)."""

from __future__ import annotations

import io
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("colorama")  # Numba only swaps streams through colorama


def test_a_numba_error_message_built_across_a_stream_swap_keeps_the_new_stream(monkeypatch):
    import numba.core.errors

    from kernel_ext.backends import numba_decorators  # noqa: F401 -- what it sets up

    before, after = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", before)
    shell = numba.core.errors.ColorShell()  # what each error message of Numba's enters
    shell.__enter__()
    sys.stdout = after  # a new cell starts (ipykernel), a test's capsys starts (pytest)
    shell.__exit__(None, None, None)
    assert sys.stdout is after


def test_kx_print_reaches_the_stream_of_its_call_while_numba_builds_errors_elsewhere(
    monkeypatch,
):
    import numba.core.errors

    import kernel_ext as kx
    from kernel_ext.backends import numba_decorators  # noqa: F401 -- what it sets up

    @kx.function(backend="numpy")
    def f(x):
        kx.print("sum", np.sum(x))
        return np.sin(x) + np.cos(x) * 2.0

    stop = threading.Event()

    def errors_meanwhile():
        # Numba building error messages on another thread, as its compiler does while it
        # compiles a kernel in the background
        while not stop.is_set():
            numba.core.errors.TypingError("probe")

    worker = threading.Thread(target=errors_meanwhile, daemon=True)
    worker.start()
    try:
        for k in range(300):
            stream = io.StringIO()
            monkeypatch.setattr(sys, "stdout", stream)
            f(np.full(3, float(k)))
            assert stream.getvalue() == f"sum {3.0 * k}\n"
    finally:
        stop.set()
        worker.join()
