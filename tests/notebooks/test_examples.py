"""Every example notebook runs top to bottom in a real kernel, and shows what it promises."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from markers import quick_only
from nbclient import NotebookClient

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.ipynb"))
WIDGET = "application/vnd.jupyter.widget-view+json"


def test_there_are_examples():
    assert EXAMPLES


def _outputs(nb) -> list[dict]:
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def _text(nb) -> str:
    parts = []
    for o in _outputs(nb):
        parts.append(o.get("text", ""))
        parts.append(o.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def _check_graphs(nb, text: str) -> None:
    lines = [line for o in _outputs(nb) for line in o.get("text", "").splitlines()]
    assert sum(line.startswith("tracing with") for line in lines) == 2
    assert sum(line.startswith("running with x =") for line in lines) == 3


def _check_retracing(nb, text: str) -> None:
    assert "Tracing with num_steps = 10" in text and "Tracing with num_steps = 20" in text
    assert text.count("Tracing dynamic_resize") == 3
    assert "trace #2 (shape) at cell [" in text
    assert '--input-signature "x: float32[1, None, None, 3], new_height: int32[]"' in text
    assert "`SCALE` was 2.0 at trace #1, is now 100.0; the graph still uses 2.0" in text
    assert "StrictRetraceError" in text and "trace #2 retraced (shape)" in text
    assert "Tracing stable_resize" in text and text.count("Tracing stable_resize") == 1
    assert "/tmp/" not in text  # call sites name cells, never the kernel's temporary files
    html = [
        o["data"]["text/html"]
        for o in _outputs(nb)
        if "text/html" in o.get("data", {}) and "kx-report" in o["data"]["text/html"]
    ]
    assert html and "to avoid all of these retraces" in html[0]


def _check_autograph(nb, text: str) -> None:
    assert "'cond'" in text or "OpKind.COND" in text
    assert "ag__" in text  # the converted code


def _check_fused(nb, text: str) -> None:
    assert "'ready'" in text and "NumPy" in text and "fused" in text


def _check_cell_functions(nb, text: str) -> None:
    assert text.count("tracing step\n") == 2  # first run + the new batch size
    assert text.count("tracing step (edited") == 1  # the edit traced once for all sizes
    assert "edited (replaces the version from cell [" in text


def _check_gradients(nb, text: str) -> None:
    assert "loss decreased: True" in text and "traces: 1" in text
    ops, backward = (
        int(n) for n in re.search(r"(\d+) ops, (\d+) of them made by the backward", text).groups()
    )
    assert 0 < backward < ops and "backward: " in text  # the marks are found in the graph
    assert "300 more steps in one call" in text
    # the training step's monitor tells the backward pass's ops apart
    html = [
        o["data"]["text/html"]
        for o in _outputs(nb)
        if "kx-monitor" in o.get("data", {}).get("text/html", "")
    ]
    assert any("backward (gradient) op" in h for h in html)


def _check_dask(nb, text: str) -> None:
    assert "dashboard: http://127.0.0.1:" in text
    assert "GB for the four inputs" in text
    ours, theirs = (
        int(n) for n in re.search(r"kx.function (\d+), dask.array (\d+)", text).groups()
    )
    # one fused task per chunk, not one per op (+ Dask's tree reduction of the partials)
    assert 4 * ours <= theirs
    assert "float32 " in text and "equal to NumPy within the documented summation bound" in text
    # the monitor names the backend with the graph's task count, and links the dashboard
    html = [
        o["data"]["text/html"]
        for o in _outputs(nb)
        if "kx-monitor" in o.get("data", {}).get("text/html", "")
    ]
    assert any("dask · " in h and " tasks" in h and 'class="kx-dashboard"' in h for h in html)


def _check_export(nb, text: str) -> None:
    assert "model: wrote a saved model to saved/logreg" in text
    assert "fresh process predictions equal: True" in text
    assert "training continues with the same numbers: True" in text
    assert "standalone NumPy file equals NumPy: True" in text
    assert "ONNX close to NumPy: True" in text or "ONNX exporter not installed" in text


CHECKS: dict[str, Callable] = {
    "01_": _check_graphs,
    "02_": _check_retracing,
    "03_": _check_autograph,
    "04_": _check_fused,
    "05_": _check_cell_functions,
    "06_": _check_gradients,
    "07_": _check_dask,
    "08_": _check_export,
}


@pytest.mark.parametrize(
    "path",
    # The quick subset runs the notebooks that start and finish in about a second (tracing,
    # cell functions, export); those that wait on compiled kernels or a Dask cluster run in
    # the full suite.
    quick_only(EXAMPLES, [p for p in EXAMPLES if p.name.startswith(("01_", "05_", "08_"))]),
    ids=lambda p: p.name,
)
def test_example_notebook_runs(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [o for o in _outputs(nb) if o.get("output_type") == "error"]
    assert not errors
    text = _text(nb)
    check = next((c for prefix, c in CHECKS.items() if path.name.startswith(prefix)), None)
    if check is not None:
        check(nb, text)
    # A monitor is a live widget plus a static HTML/SVG snapshot for saved notebooks; the
    # monitor of an earlier run of a function that a later cell monitors is left frozen as
    # its snapshot alone (monitor.freeze), and the latest of each stays live.
    monitors = [
        o.get("data", {})
        for o in _outputs(nb)
        if "kx-monitor" in o.get("data", {}).get("text/html", "")
    ]
    for data in monitors:
        assert "<script" not in data["text/html"]
        assert "static snapshot" in data["text/html"]
        assert WIDGET in data or data["text/plain"].startswith("<kx monitor of ")
    assert not monitors or WIDGET in monitors[-1]
