"""Without ``%load_ext kernel_ext``, messages still name notebook cells, not temporary files.

Importing kernel_ext under IPython installs a default call-site formatter
(:func:`kernel_ext.jupyter.cells.cell_call_site`): the retracing warning, the retrace
explanation and AutoGraph's loop notes say ``cell [N], line L`` where IPython compiled the cell
under a generated file name. Run in a fresh interpreter, as a notebook kernel starts: IPython
first, then the cells.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, warnings
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
def run(code):
    result = shell.run_cell(code, store_history=True)
    if result.error_before_exec or result.error_in_exec:
        raise SystemExit(repr(result.error_before_exec or result.error_in_exec))
    return result
run("import numpy as np\nimport kernel_ext as kx")
defined = run("@kx.function(backend='numpy')\ndef scale(x, n):\n"
              "    for i in range(2):\n        x = x * n\n    return x")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    calls = run("for n in range(8):\n    scale(np.ones(2), n)")
from kernel_ext import errors
loaded = "kernel_ext" in getattr(shell.extension_manager, "loaded", set())
print(json.dumps({
    "defined": defined.execution_count, "calls": calls.execution_count,
    "warnings": [str(w.message) for w in caught if w.category is errors.RetracingWarning],
    "explanation": shell.user_ns["scale"].retraces[-1].explain(),
    "loops": list(shell.user_ns["scale"].concrete_functions[-1].loops),
    "loaded": loaded,
    "filename": shell.user_ns["scale"].python_function.__code__.co_filename}))
"""


def test_messages_name_cells_without_the_extension_loaded():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert not seen["loaded"]
    temporary = seen["filename"]
    assert temporary  # IPython's generated name for the defining cell
    calls, defined = seen["calls"], seen["defined"]
    assert seen["warnings"], "a function retraced 8 times in 8 calls warns"
    for text in [*seen["warnings"], seen["explanation"]]:
        assert f"cell [{calls}], line 2" in text, text
        assert temporary not in text and "ipykernel_" not in text
    # AutoGraph's note on the unrolled loop names the defining cell's line 3
    assert seen["loops"] and all(f"cell [{defined}], line 3" in t for t in seen["loops"])
    assert all(temporary not in t for t in seen["loops"])
