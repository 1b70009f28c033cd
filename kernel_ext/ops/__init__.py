"""Every op's definition: all that any layer knows of one op, side by side, grouped by family.

An op is declared once in :mod:`kernel_ext.ir.ops` (``OpKind``: its name, group and static
facts). Its behaviour in each layer is registered here, the way JAX's ``lax.py`` registers a
primitive's abstract evaluation, derivative and lowerings next to each other: one module per
family of ops, each op's rules adjacent, each entered into the table of the layer that reads
it (the tables and the shared helpers stay in their layers, as JAX's ``mlir`` keeps the
lowering toolkit that ``lax`` calls):

==============================  ===========================================================
table                           what an entry says
==============================  ===========================================================
``ir.abstract.ABSTRACT_EVAL``   shape and dtype of the result (trace time)
``ir.interpreter.LOWER``        NumPy semantics: the reference the executors are held to
``passes.simplify.RULES``       algebraic simplifications that keep NumPy's bits
``autodiff.rules.VJP``          the vector-Jacobian product (``NOTES``: what it does beyond
                                the textbook derivative)
``backends.codegen`` tables     the fused Numba kernel's inline template (CPU and CUDA)
``backends.whole_graph_ops``    the whole-graph compiler's check and emitter
``onnx.rules.RULES``            the ONNX translation
==============================  ===========================================================

This package sits above every layer it registers into (``jupyter | ops`` in the import
contracts) and is imported by ``kernel_ext/__init__.py``, so every table is complete before
any graph is built. No module reads a table at import time: a set derived from one is
computed when it is first needed.

An op's NumPy entry points (the ``__array_function__`` handlers, and ufunc methods, that
record that one op) come first in its section, registered into the tracer's table with
``trace.numpy_api.common.implements``.

What stays in a layer, and why: the NumPy functions that record several ops or none of their
own (``trace.numpy_api``: compositions, such as ``np.round`` or ``np.flatnonzero``, and the
handlers compositions call), the reasons an executor gives for the
ops it has no form for (beside that executor's op-level answer, read by
``docs/op_coverage.md``), the Dask executor's choice of ops (by what ``dask.array``
implements, known only once Dask is imported), and forms internal to one executor's scheduling
(row fusion, tiling, fast math, the NumPy executor's host emitters).
"""

from __future__ import annotations

from .families import FAMILIES

# Families register on import; the order only decides which module's error names a clash.
from . import structure  # isort: skip
from . import elementwise  # isort: skip
from . import reductions  # isort: skip
from . import shape  # isort: skip
from . import indexing  # isort: skip
from . import linalg  # isort: skip
from . import sorting  # isort: skip

__all__ = [
    "FAMILIES",
    "elementwise",
    "indexing",
    "linalg",
    "reductions",
    "shape",
    "sorting",
    "structure",
]
