"""NumPy functions on traced values: the ``__array_function__`` handler table.

``HANDLERS[np.func]`` records ``np.func`` applied to traced values. Most map onto one graph op;
a few are compositions of ops, exactly as NumPy itself composes them (``np.round`` is
multiply-rint-divide, ``np.isclose`` is a comparison of differences). Anything not listed raises
:class:`~kernel_ext.errors.UnsupportedOpError` naming the function.

Compositions live here, by op family, one module each, with the handlers that record several
ops; each op's own entry points (the handler recording just that op) live in its definition in
:mod:`kernel_ext.ops`, which fills the rest of the table when ``kernel_ext`` imports it. Every
handler registers with the one decorator of :mod:`.common` (``implements``, or ``composition``
for handlers written as NumPy's own Python code on traced values).
"""

from __future__ import annotations

from ..tensor import HANDLERS
from . import (
    elementwise,
    fft,
    indexing,
    linalg,
    polynomials,
    reductions,
    scans,
    shape,
    sorting,
    statistics,
    ufuncs,
    writes,
)
from .common import composition, implements
from .shape import APPLY_ALONG_AXIS_SLICES
from .writes import OverwritingCall, UfuncIntoCopy

__all__ = [
    "APPLY_ALONG_AXIS_SLICES",
    "HANDLERS",
    "OverwritingCall",
    "UfuncIntoCopy",
    "composition",
    "elementwise",
    "fft",
    "implements",
    "indexing",
    "linalg",
    "polynomials",
    "reductions",
    "scans",
    "shape",
    "sorting",
    "statistics",
    "supported_numpy_functions",
    "ufuncs",
    "writes",
]


def supported_numpy_functions() -> list[str]:
    """Names of the NumPy functions (beyond ufuncs and operators) traced into graphs."""
    return sorted({f"{getattr(f, '__module__', 'numpy')}.{f.__name__}" for f in HANDLERS})
