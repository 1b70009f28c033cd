"""NumPy's own inner loops, located by address so generated kernels can call them.

A fused kernel computes cheap ops (``+``, ``*``, compares, casts, ``where``) inline, but leaves
transcendental functions (``tanh``, ``exp``, ``log``, ``power``, ...) to the very loop NumPy
runs for them: the ``PyUFuncGenericFunction`` NumPy selected for this CPU at import (its
AVX-512/AVX2 SIMD code, or libm where NumPy uses libm). Called on cache-sized blocks of the
kernel's data, it gives results *bitwise identical* to NumPy at NumPy's SIMD speed, where
Numba's scalar libm calls are up to 50x slower and an inline polynomial would differ by ulps.

The addresses come from the public ``PyUFuncObject`` struct (``ufuncobject.h``): after
``PyObject_HEAD`` and four ints come ``functions``, ``data``, ``ntypes``, ``name`` and
``types``. Every read is verified (the name, ``ntypes`` and the type-char table must match
what the ufunc reports), so a NumPy with another layout is detected and the feature switches
off instead of calling a wrong pointer.
"""

from __future__ import annotations

import ctypes
import functools
import struct
import sys

import numpy as np

_PTR = ctypes.sizeof(ctypes.c_void_p)
# PyObject_HEAD is two pointers on a standard (non-debug, GIL) build of CPython.
_HEAD = 2 * _PTR
_OFF_NARGS = _HEAD + 8
_OFF_FUNCTIONS = _HEAD + 16
_OFF_DATA = _OFF_FUNCTIONS + _PTR
_OFF_NTYPES = _OFF_DATA + _PTR
_OFF_NAME = _OFF_NTYPES + 8
_OFF_TYPES = _OFF_NAME + _PTR


def _read(address: int, ctype: type) -> int:
    return ctype.from_address(address).value or 0  # type: ignore[attr-defined]


@functools.cache
def _table(ufunc: np.ufunc) -> tuple[tuple[tuple[int, ...], int, int], ...] | None:
    """``((type numbers...), loop address, data address)`` for each legacy loop, or None
    when the struct cannot be read safely."""
    if _PTR != 8 or sys.byteorder != "little" or hasattr(sys, "gettotalrefcount"):
        return None
    if getattr(sys, "_is_gil_enabled", lambda: True)() is False:
        return None  # free-threaded builds have a different PyObject_HEAD
    base = id(ufunc)
    try:
        nargs = _read(base + _OFF_NARGS, ctypes.c_int)
        ntypes = _read(base + _OFF_NTYPES, ctypes.c_int)
        name_ptr = _read(base + _OFF_NAME, ctypes.c_void_p)
        types_ptr = _read(base + _OFF_TYPES, ctypes.c_void_p)
        functions = _read(base + _OFF_FUNCTIONS, ctypes.c_void_p)
        data = _read(base + _OFF_DATA, ctypes.c_void_p)
        if (
            nargs != ufunc.nargs
            or ntypes != ufunc.ntypes
            or not name_ptr
            or not types_ptr
            or not functions
        ):
            return None
        if ctypes.string_at(name_ptr) != ufunc.__name__.encode():
            return None
        chars = ctypes.string_at(types_ptr, ntypes * nargs)
    except (ValueError, OSError):  # pragma: no cover - unreadable memory
        return None
    expected = [t.replace("->", "") for t in ufunc.types]
    rows = []
    for i in range(ntypes):
        nums = tuple(chars[i * nargs : (i + 1) * nargs])
        letters = "".join(_CHARS.get(n, "?!") for n in nums)
        if letters != expected[i] and "?!" not in letters:
            return None  # the table does not say what ufunc.types says: wrong layout
        loop = struct.unpack("<Q", ctypes.string_at(functions + i * _PTR, _PTR))[0]
        extra = struct.unpack("<Q", ctypes.string_at(data + i * _PTR, _PTR))[0] if data else 0
        rows.append((nums, loop, extra))
    return tuple(rows)


# type number -> type char, for the builtin types ufunc.types spells ("?bBhHiIlLqQefdg...")
_CHARS: dict[int, str] = {
    np.dtype(c).num: np.dtype(c).char for c in np.typecodes["All"] + "?O" if c not in "MmUSVa"
}


def find_loop(ufunc: np.ufunc, dtypes: tuple[np.dtype, ...]) -> tuple[int, int] | None:
    """``(loop address, data pointer)`` of ``ufunc``'s inner loop for exactly ``dtypes``
    (inputs then outputs), or None when there is none or the table cannot be read."""
    table = _table(ufunc)
    if table is None:
        return None
    want = tuple(np.dtype(d).num for d in dtypes)
    for nums, loop, data in table:
        if nums == want and loop:
            return loop, data
    return None


def available() -> bool:
    """Can this NumPy's inner loops be located (checked on ``np.tanh``)?"""
    return find_loop(np.tanh, (np.dtype(np.float32), np.dtype(np.float32))) is not None


__all__ = ["available", "find_loop"]
