"""Ops with no ONNX form, each refused with its reason (the op coverage table shows them).

The builder refuses an op missing from ``RULES`` too; listing them here keeps the reasons of
``docs/op_coverage.md`` complete.
"""

from __future__ import annotations

from kernel_ext.ir import OpKind
from kernel_ext.onnx.rules.common import RULES, K, refusal_rule

_OUTSIDE = (
    "compute this value outside the exported function and pass it in as an argument, or keep "
    "running it with kx.function"
)
_NOT_WRITTEN = "no translation written yet"
_NO_LAPACK = (
    "the ONNX standard has no matrix factorisation or solver op (onnxruntime's Inverse is a "
    "contrib op, outside the standard)"
)
_NOT_EXPORTED = {
    K.CUMPROD: "ONNX has CumSum only; a product scan would be a Loop, not written",
    K.NANCUMSUM: _NOT_WRITTEN,
    K.NANCUMPROD: "ONNX has CumSum only",
    K.INV: _NO_LAPACK,
    K.SOLVE: _NO_LAPACK,
    K.SVD: _NO_LAPACK,
    K.SLOGDET: _NO_LAPACK,
    K.CHOLESKY: _NO_LAPACK,
    K.QR: _NO_LAPACK,
    K.EIGH: _NO_LAPACK,
    K.EIGVALSH: _NO_LAPACK,
    K.LSTSQ: _NO_LAPACK,
    K.PINV: _NO_LAPACK,
    K.CORRELATE: f"{_NOT_WRITTEN} (ONNX's Conv sums in its own order, not NumPy's)",
    K.CONVOLVE: f"{_NOT_WRITTEN} (ONNX's Conv sums in its own order, not NumPy's)",
    K.MATVEC: _NOT_WRITTEN,
    K.VECMAT: _NOT_WRITTEN,
    K.FFT: "complex results: the exported models hold real and integer tensors only",
    K.REAL: "complex values: the exported models hold real and integer tensors only",
    K.IMAG: "complex values: the exported models hold real and integer tensors only",
    K.INSERT: _NOT_WRITTEN,
    K.PACKBITS: f"{_NOT_WRITTEN} (ONNX has no bit packing op)",
    K.UNPACKBITS: f"{_NOT_WRITTEN} (ONNX has no bit packing op)",
    K.BINCOUNT: f"{_NOT_WRITTEN} (its length depends on the data's maximum)",
    K.TRIM_ZEROS: f"{_NOT_WRITTEN} (its length depends on the data)",
    K.RAVEL_MULTI_INDEX: _NOT_WRITTEN,
    K.UNRAVEL_INDEX: _NOT_WRITTEN,
    K.UNIQUE: f"{_NOT_WRITTEN} (its length depends on the data)",
    K.ARGPARTITION: "NumPy's order within each side of the pivot is its introselect's; "
    "ONNX's TopK orders otherwise",
    K.PARTITION: "NumPy's order within each side of the pivot is its introselect's; "
    "ONNX's TopK orders otherwise",
    K.HISTOGRAM: _NOT_WRITTEN,
    K.INTERP: _NOT_WRITTEN,
    K.SEARCHSORTED: _NOT_WRITTEN,
    K.DIGITIZE: _NOT_WRITTEN,
    K.LEXSORT: _NOT_WRITTEN,
    K.ISIN: _NOT_WRITTEN,
    K.NANPROD: _NOT_WRITTEN,
    K.NANSTD: _NOT_WRITTEN,
    K.NANVAR: _NOT_WRITTEN,
    K.NANARGMAX: _NOT_WRITTEN,
    K.NANARGMIN: _NOT_WRITTEN,
    K.MEDIAN: f"{_NOT_WRITTEN} (a sort and NumPy's interpolation)",
    K.NANMEDIAN: f"{_NOT_WRITTEN} (a sort and NumPy's interpolation)",
    K.PERCENTILE: f"{_NOT_WRITTEN} (a sort and NumPy's interpolation methods)",
    K.NANPERCENTILE: f"{_NOT_WRITTEN} (a sort and NumPy's interpolation methods)",
    K.QUANTILE: f"{_NOT_WRITTEN} (a sort and NumPy's interpolation methods)",
    K.NANQUANTILE: f"{_NOT_WRITTEN} (a sort and NumPy's interpolation methods)",
    K.UFUNC_REDUCE: f"{_NOT_WRITTEN} (np.<ufunc>.reduce for the ufuncs that are not sum, "
    "prod, max or min)",
    K.UFUNC_REDUCEAT: _NOT_WRITTEN,
}


def register_refusals() -> None:
    """Refuse each op of the table with its reason (an op given both a rule and a refusal is
    refused by ``RULES.add``, whichever registers second)."""
    for kind, why in _NOT_EXPORTED.items():
        RULES.add(kind, refusal_rule(why, _OUTSIDE))


def refusal_reason(op: OpKind) -> str | None:
    """Why ``op`` has no ONNX form (every node refused), or None when it has a rule."""
    rule = RULES.get(op)
    if rule is None:
        return None if op is K.PLACEHOLDER else "no rule"
    return getattr(rule, "why", None)
