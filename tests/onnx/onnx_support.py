"""Shared by the ONNX tests: export a function, run it in onnxruntime, compare with NumPy.

``TOLERANCE`` is the documented bound per op family (docs/onnx.md): onnxruntime computes
transcendental functions and sums with its own kernels, so those families are compared within
a relative bound scaled by the largest magnitude; everything else (integer and boolean
results, shape and indexing ops, casts, comparisons, and the correctly rounded float
arithmetic + - * / sqrt) must match NumPy bit for bit.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

# kernel_ext before onnx: onnx imports ml_dtypes, whose float8 scalar types, registered with
# NumPy first, break kernel_ext's import (autograph/py_builtins.py reads every NumPy type)
import kernel_ext as kx

if os.environ.get("CI") == "true":  # CI installs the test extra: a missing package fails
    import onnx
    import onnxruntime as ort
else:  # (onnx.checker: without onnx, "onnx" would name this test folder, a namespace)
    pytest.importorskip("onnx.checker")
    import onnx

    ort = pytest.importorskip("onnxruntime")


__all__ = [
    "TOLERANCE",
    "Exported",
    "assert_matches",
    "check",
    "flat",
    "onnx",
    "ort",
    "session",
    "spec",
    "values",
]

#: family -> {dtype: relative tolerance}; absent: exact. The bound is
#: ``|got - want| <= rtol * max(1, max|want|)`` elementwise (NaN matches NaN).
TOLERANCE: dict[str, dict[np.dtype, float]] = {
    "exact": {},
    "transcendental": {np.dtype(np.float32): 4e-6, np.dtype(np.float64): 1e-14},
    "reduction": {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-13},
    "linalg": {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-13},
    # whole programs chain many ops (errors compound through exp, division, sqrt)
    "program": {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-10},
}


def session(model: Any) -> Any:
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only (its optimizer's notes are not failures)
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


class Exported:
    """One concrete function of ``fn`` for ``specs``, exported and loaded in onnxruntime."""

    def __init__(self, fn: Callable[..., Any], *specs: Any, opset: int | None = None) -> None:
        self.function = kx.function(fn, backend="numpy")
        self.fn = fn
        self.cf = self.function.get_concrete_function(*specs)
        self.model = kx.onnx.export(self.cf, opset=opset)
        self.session = session(self.model)

    def run(self, *args: Any) -> list[np.ndarray]:
        return self.session.run(None, kx.onnx.input_feed(self.cf, *args))


def flat(value: Any) -> list[np.ndarray]:
    """The arrays of a returned tuple (a single value: one), as arrays."""
    items = value if isinstance(value, tuple) else (value,)
    return [np.asarray(v) for v in items]


def assert_matches(got: np.ndarray, want: np.ndarray, family: str, where: str = "") -> None:
    """``got`` (onnxruntime) equals ``want`` (NumPy): dtype and shape exactly, values within
    the family's tolerance (exact for every non-float result)."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} != NumPy's {want.dtype}"
    assert got.shape == want.shape, f"{where}: shape {got.shape} != NumPy's {want.shape}"
    rtol = TOLERANCE[family].get(want.dtype)
    if rtol is None or want.dtype.kind != "f":
        same = np.array_equal(got, want, equal_nan=want.dtype.kind == "f")
        assert same, f"{where}: not bitwise NumPy's\n got {got!r}\nwant {want!r}"
        return
    finite = np.abs(want[np.isfinite(want)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{where}: NaNs differ"
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf
        ok = np.isnan(want) | (got == want) | (np.abs(got - want) <= rtol * scale)
    assert ok.all(), f"{where}: beyond rtol {rtol} x {scale}\n got {got[~ok]!r}\nwant {want[~ok]!r}"


def check(
    fn: Callable[..., Any],
    specs: Sequence[Any],
    calls: Sequence[Sequence[Any]],
    family: str = "exact",
) -> Exported:
    """Export ``fn`` for ``specs`` and compare onnxruntime with eager NumPy on each call's
    arguments (different sizes for ``None`` dims)."""
    exported = Exported(fn, *specs)
    for args in calls:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's all-NaN slice notes
            want = flat(fn(*args))
        got = exported.run(*args)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_matches(
                g, w, family, f"{fn.__name__} output {i} for shapes {[np.shape(a) for a in args]}"
            )
    return exported


def spec(shape: Any, dtype: Any) -> Any:
    return kx.TensorSpec(shape, dtype)


def values(shape: tuple, dtype: Any, seed: int = 0, special: bool = True) -> np.ndarray:
    """Test values of ``dtype``: negative, zero and positive ones (floats also NaN, inf and
    -0.0 when ``special``)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(-20 if dtype.kind == "i" else 0, 21, shape).astype(dtype)
    out = (rng.standard_normal(shape) * 3).astype(dtype)
    if special and out.size >= 6:
        flat_ = out.reshape(-1)
        flat_[:4] = [np.nan, np.inf, -0.0, 0.0]
    return out
