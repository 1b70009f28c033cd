"""What the backends' code generators share: names and scopes (``names``), the returned
structure and its run-time helpers (``outputs``), the host emitter of straight-line Python
(``host``), typed literals and dtypes (``literals``), and the lines of a generated function at
their indentation (``source``).

The NumPy executor (:mod:`..numpy_backend`), the fused executor's host function
(:mod:`..fused`), the kernel runners (:mod:`..runners`), the fused-kernel generator
(:mod:`..codegen`), the whole-graph compiler (:mod:`..whole_graph`) and the Dask backend all
write their source through these pieces.
"""

from .host import Emitter
from .names import Namer, Scope
from .outputs import access_expr, output_expr, written_back_inputs
from .source import Source

__all__ = [
    "Emitter",
    "Namer",
    "Scope",
    "Source",
    "access_expr",
    "output_expr",
    "written_back_inputs",
]
