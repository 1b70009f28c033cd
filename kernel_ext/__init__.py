"""jupyterlab-tffunction: TensorFlow's ``tf.function`` for NumPy, inside JupyterLab.

``import kernel_ext as kx``; decorate NumPy code with ``@kx.function``. Importing this package
loads NumPy only: Numba, IPython and ipywidgets are imported lazily, when a backend or the
notebook extension needs them.
"""

from __future__ import annotations

import sys as _sys
from types import SimpleNamespace

from . import autograph, errors
from .autodiff import GradientTape, optimizers, stop_gradient
from .engine import ConcreteFunction, Function, function
from .engine.config import functions_run_eagerly, run_functions_eagerly, verify, verifying
from .engine.transforms import grad, value_and_grad
from .ir import Graph
from .trace import TensorSpec, TraceType, Variable, supported_numpy_functions  # noqa: A001
from .trace import kx_print as print
from .trace.control_flow import cond, while_loop
from .trace.iteration import TensorArray
from .trace.iteration import kx_range as range  # noqa: A004

# Last: every op's rules, registered into the tables of the layers imported above.
from . import ops  # isort: skip  # noqa: F401

__version__ = "0.1.0"

if "IPython" in _sys.modules:  # a notebook or console: messages name cells, not temp files
    from .engine.explain import set_default_call_site_formatter as _set_default
    from .jupyter.cells import cell_call_site as _cell_call_site

    _set_default(_cell_call_site)

config = SimpleNamespace(
    run_functions_eagerly=run_functions_eagerly,
    functions_run_eagerly=functions_run_eagerly,
    verify=verify,
    verifying=verifying,
)

__all__ = [
    "ConcreteFunction",
    "Function",
    "GradientTape",
    "Graph",
    "TensorArray",
    "TensorSpec",
    "TraceType",
    "Variable",
    "autograph",
    "cond",
    "config",
    "errors",
    "function",
    "grad",
    "optimizers",
    "print",
    "range",
    "stop_gradient",
    "supported_numpy_functions",
    "value_and_grad",
    "while_loop",
]


def __getattr__(name: str) -> object:
    """``kx.jupyter``, ``kx.saved_model`` and ``kx.onnx`` on first use (``jupyter`` imports
    IPython and ipywidgets, so never eagerly; the op definitions import ``onnx``'s rules, and
    its exporter loads ``saved_model`` and the optional onnx extra on first use)."""
    if name in ("jupyter", "saved_model", "onnx"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'kernel_ext' has no attribute {name!r}")


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext kernel_ext``: register the magics and the sidebar comm."""
    from .jupyter import load_ipython_extension as load

    load(ipython)
