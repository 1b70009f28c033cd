"""Literals and dtypes of generated kernels: the supported dtypes, typed constants' source text,
and weak literals converted as NumPy converts them (the pieces every kernel generator shares).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

SUPPORTED_DTYPES = frozenset(
    np.dtype(t)
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float32,
        np.float64,
    )
)

#: The dtypes the generators name most often.
BOOL = np.dtype(np.bool_)
F64 = np.dtype(np.float64)


class Unsupported(Exception):
    """The node cannot be compiled by this backend (it runs through NumPy instead)."""


_NAMES: dict[Any, str] = {}


def dtname(dtype: Any) -> str:
    """``np.dtype(dtype).name``, memoised (the property is slow, and codegen asks often)."""
    name = _NAMES.get(dtype)
    if name is None:
        name = _NAMES[dtype] = np.dtype(dtype).name
    return name


def ctor(dtype: np.dtype) -> str:
    """The Numba-typed constructor of a dtype's scalars (``np.float32``)."""
    return "np.bool_" if dtype == BOOL else f"np.{dtname(dtype)}"


def dtype_kind(dtype: np.dtype) -> str:
    """A dtype's kind as the inline templates name it: b(ool) i(nt) u(nsigned) f(loat)."""
    return "b" if dtype == BOOL else dtype.kind


def literal_value(value: Any, dtype: np.dtype) -> Any:
    """A weak Python literal converted to ``dtype`` as NumPy converts it, or Unsupported
    when NumPy would refuse it at run time (an int literal out of the dtype's range)."""
    dtype = np.dtype(dtype)
    if isinstance(value, (bool, np.bool_)):
        return dtype.type(bool(value))
    if isinstance(value, (int, np.integer)):
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            if not info.min <= int(value) <= info.max:
                raise Unsupported(f"literal {value} does not fit {dtype}")
        elif dtype == BOOL:
            raise Unsupported("int literal in a bool loop")
        return dtype.type(value)
    if isinstance(value, (float, np.floating)):
        if dtype.kind != "f":
            raise Unsupported(f"float literal in a {dtype} loop")
        return dtype.type(value)
    raise Unsupported(f"literal of type {type(value).__name__}")


def literal_into(value: Any, dtype: np.dtype) -> Any:
    """``value`` (a Python or NumPy number) as NumPy stores it into an array of ``dtype``,
    or Unsupported where NumPy would warn or raise (an int out of range, a float into an
    int array, a complex)."""
    if isinstance(value, (complex, np.complexfloating)) or not isinstance(
        value, (bool, int, float, np.number, np.bool_)
    ):
        raise Unsupported(f"setitem of {type(value).__name__} {value!r}")
    box = np.empty((), dtype)
    try:
        # np.errstate, not warnings.catch_warnings: this runs on the compile thread too, and
        # catch_warnings swaps the process-wide filters (a warning raised meanwhile by the
        # main thread would be lost or turned into an error)
        with np.errstate(all="raise"):
            box[()] = value
    except (OverflowError, ValueError, TypeError, FloatingPointError) as e:
        raise Unsupported(f"setitem of {value!r} into {dtype} ({e})") from None
    return box[()]


@functools.cache
def default_nan(dtype: np.dtype) -> Any:
    """The NaN this CPU makes from an invalid operation (``inf - inf``) in ``dtype``, as
    NumPy's own loop computes it (``-nan``, sign bit set, on x86; ``+nan`` elsewhere)."""
    dtype = np.dtype(dtype)
    inf = np.full(4, np.inf, dtype)
    with np.errstate(invalid="ignore"):
        return np.subtract(inf, inf)[0]


def const_source(value: Any, dtype: np.dtype) -> str:
    """Source text of a typed constant equal to ``value`` (exact: floats via their repr, a
    NaN other than ``np.nan`` by its bits, so its sign and payload survive)."""
    dtype = np.dtype(dtype)
    value = dtype.type(value)
    if dtype == BOOL:
        return "True" if value else "False"
    if dtype.kind == "f":
        f = float(value)
        if math.isnan(f):
            uint = f"np.uint{dtype.itemsize * 8}"
            bits = int(np.asarray(value, dtype).view(uint[3:]))
            if bits == int(np.asarray(np.nan, dtype).view(uint[3:])):
                return f"{ctor(dtype)}(np.nan)"
            return f"np.array({bits}, {uint}).view({ctor(dtype)})[()]"
        if math.isinf(f):
            return f"{ctor(dtype)}({'-' if f < 0 else ''}np.inf)"
        return f"{ctor(dtype)}({f!r})"
    return f"{ctor(dtype)}({int(value)})"


def weak_dtype(value: Any) -> np.dtype:
    """The dtype a weak Python literal has as an operand (bool, int64 or float64)."""
    if isinstance(value, (bool, np.bool_)):
        return BOOL
    if isinstance(value, (int, np.integer)):
        return np.dtype(np.int64)
    return F64
