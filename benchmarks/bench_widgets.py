"""Widget overhead: how much a live monitor slows a loop of 100,000 calls (target ≤ 5%).

    python benchmarks/bench_widgets.py            # in-process rows + a real kernel
    python benchmarks/bench_widgets.py --quick    # in-process rows only

Two settings, each timing the same loop with and without a live ``kx.jupyter.monitor``:

* **in-process**: the monitor's poll thread runs as in a kernel (every 0.25 s), its widget
  messages go to a comm that serialises them to JSON (what a kernel's session does before
  sending), so the cost of rendering and serialising updates is counted;
* **real kernel** (full run only): an ipykernel started with ``jupyter_client`` runs the loop
  in cells, with and without a displayed monitor, messages going out on IOPub for real.

The A/B difference of two timings is at the mercy of a shared machine's noise, so each
setting also reports the monitor's own work during the loop (the wall time of its refreshes,
during which it holds the GIL): that figure bounds what the monitor can cost the loop.
Off and on runs alternate, each is preceded by a garbage collection and runs with the
collector off (as ``timeit`` does), and each figure is the minimum over repeats, so machine
noise (2 shared cores) does not pile onto one side. Two functions: a tiny cache hit (``a + b`` on 2
floats, ~1–2 µs a call: the worst case, widget work is largest relative to the loop) and a
realistic one (``tanh`` on 1,000 floats).
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import kernel_ext as kx

Row = tuple[str, str, str, str]
N_CALLS = 100_000
TARGET = "≤ 5% slower"


def _workloads() -> list[tuple[str, Any, tuple]]:
    tiny = kx.function(lambda a, b: a + b)
    medium = kx.function(lambda x: np.tanh(x) * 2.0)
    return [
        ("a+b, 2 floats", tiny, (np.ones(2), np.ones(2))),
        ("tanh(x)*2, 1,000 floats", medium, (np.ones(1000),)),
    ]


def _loop(fn: Callable, args: tuple, n: int) -> float:
    # As timeit does: collect first, no collection inside the timed loop (a full collection
    # of a kernel's heap costs tens of ms and would land on whichever side it pleases).
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        return time.perf_counter() - t0
    finally:
        gc.enable()


class _JSONComm:
    """Stands in for a kernel's comm: every widget message is serialised to JSON."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        import comm

        self._inner = comm.DummyComm(*args, **kwargs)
        self.messages = 0
        self.bytes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
        self.messages += 1
        self.bytes += len(json.dumps({"data": data, "metadata": metadata}, default=str))


def _timed_monitor_class() -> type:
    """A Monitor that adds up the wall time of its refreshes: the work the monitor puts on
    the loop (it holds the GIL while it renders), measured directly rather than as the
    small difference of two noisy timings."""
    from kernel_ext.jupyter.monitor import Monitor

    class TimedMonitor(Monitor):
        spent = 0.0

        def refresh(self, full: bool = False) -> bool:
            t0 = time.perf_counter()
            try:
                return super().refresh(full)
            finally:
                type(self).spent += time.perf_counter() - t0

    return TimedMonitor


def in_process(quick: bool) -> list[Row]:
    import comm

    made: list[_JSONComm] = []

    def create_comm(*args: Any, **kwargs: Any) -> _JSONComm:
        c = _JSONComm(*args, **kwargs)
        made.append(c)
        return c

    repeat = 3 if quick else 7
    rows: list[Row] = []
    original = comm.create_comm
    comm.create_comm = create_comm
    try:
        for label, fn, args in _workloads():
            fn(*args)
            off, on = [], []
            refreshes, work = 0, 0.0
            timed = _timed_monitor_class()
            for _ in range(repeat):
                off.append(_loop(fn, args, N_CALLS))
                m = timed(fn)  # polls every 0.25 s on its thread, like in a kernel
                try:
                    before, timed.spent = m.refreshes, 0.0
                    on.append(_loop(fn, args, N_CALLS))
                    refreshes += m.refreshes - before
                    work = max(work, timed.spent)
                finally:
                    m.close()
            base, with_monitor = min(off), min(on)
            rows.append(
                (f"M1 {N_CALLS:,} calls of {label}: no monitor", f"{base * 1e3:.1f} ms", "", "")
            )
            rows.append(
                (
                    f"M1 same with a live monitor (in-process, JSON comm; "
                    f"{refreshes / repeat:.1f} updates/run)",
                    f"{with_monitor * 1e3:.1f} ms",
                    f"{(with_monitor / base - 1) * 100:+.1f}%",
                    TARGET,
                )
            )
            rows.append(
                (
                    "M1 monitor work during that loop (refresh + render + JSON, GIL held)",
                    f"{work * 1e3:.2f} ms",
                    f"{work / base * 100:.2f}% of the loop",
                    TARGET,
                )
            )
    finally:
        comm.create_comm = original
    return rows


_KERNEL_SETUP = """
import gc, json, time, numpy as np, kernel_ext as kx
from IPython.display import display
%load_ext kernel_ext
tiny = kx.function(lambda a, b: a + b)
medium = kx.function(lambda x: np.tanh(x) * 2.0)
work = {"a+b, 2 floats": (tiny, (np.ones(2), np.ones(2))),
        "tanh(x)*2, 1,000 floats": (medium, (np.ones(1000),))}
from kernel_ext.jupyter.monitor import Monitor
class TimedMonitor(Monitor):
    spent = 0.0
    def refresh(self, full=False):
        t0 = time.perf_counter()
        try:
            return super().refresh(full)
        finally:
            type(self).spent += time.perf_counter() - t0
def loop(label, n):
    fn, args = work[label]
    fn(*args)
    gc.collect()
    gc.disable()
    try:
        spent = TimedMonitor.spent
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        return json.dumps([time.perf_counter() - t0, TimedMonitor.spent - spent])
    finally:
        gc.enable()
"""


def real_kernel(repeat: int = 7) -> list[Row]:
    """The loop in a real ipykernel: cells with and without a displayed monitor."""
    try:
        from jupyter_client.manager import start_new_kernel
    except ImportError:
        return []
    km, kc = start_new_kernel(kernel_name="python3")
    try:

        def run(code: str) -> str:
            out: list[str] = []

            def hook(msg: dict) -> None:
                if msg["msg_type"] == "stream":
                    out.append(msg["content"]["text"])
                elif msg["msg_type"] == "error":
                    raise RuntimeError("\n".join(msg["content"]["traceback"]))

            kc.execute_interactive(code, output_hook=hook, timeout=300)
            return "".join(out)

        run(_KERNEL_SETUP)
        rows: list[Row] = []
        for label in ("a+b, 2 floats", "tanh(x)*2, 1,000 floats"):
            off, on, spent = [], [], []
            for _ in range(repeat):
                off.append(json.loads(run(f"print(loop({label!r}, {N_CALLS}))"))[0])
                run(f"m = TimedMonitor(work[{label!r}][0]); display(m)")
                t, w = json.loads(run(f"print(loop({label!r}, {N_CALLS}))"))
                on.append(t)
                spent.append(w)
                run("m.close()")
            base, with_monitor = min(off), min(on)
            work = max(spent)
            rows.append(
                (
                    f"M2 {N_CALLS:,} calls of {label} in a real kernel: no monitor",
                    f"{base * 1e3:.1f} ms",
                    "",
                    "",
                )
            )
            rows.append(
                (
                    "M2 same with a displayed live monitor (IOPub messages)",
                    f"{with_monitor * 1e3:.1f} ms",
                    f"{(with_monitor / base - 1) * 100:+.1f}%",
                    TARGET,
                )
            )
            rows.append(
                (
                    "M2 monitor work during that loop (refresh + render + send)",
                    f"{work * 1e3:.2f} ms",
                    f"{work / base * 100:.2f}% of the loop",
                    TARGET,
                )
            )
        return rows
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def rows(quick: bool) -> list[Row]:
    """The widget rows: ``(benchmark, time, ratio, target)``."""
    out = in_process(quick)
    if not quick:
        out += real_kernel()
    return out


def main() -> None:
    from table import main as run_suite

    run_suite(rows, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
