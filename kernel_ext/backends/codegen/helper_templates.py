"""Helper functions emitted into kernel modules: integer division, remainder, power and
shifts with NumPy's semantics, and guarded CUDA device math (source templates per dtype)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..emit.literals import ctor, dtname

_HELPERS = {
    # NumPy integer floor_divide: x // 0 == 0, MIN // -1 == MIN (wraps), else floor division.
    "fdiv": """\
def {name}(a, b):
    if b == 0:
        return {C}(0)
    if {signed} and b == -1:
        return {C}(-a)
    return {C}(a // b)
""",
    # NumPy integer remainder (Python's sign rule): x % 0 == 0, x % -1 == 0.
    "mod": """\
def {name}(a, b):
    if b == 0:
        return {C}(0)
    if {signed} and b == -1:
        return {C}(0)
    return {C}(a % b)
""",
    # NumPy integer fmod (C's sign rule): x fmod 0 == 0.
    "fmod": """\
def {name}(a, b):
    if b == 0:
        return {C}(0)
    if {signed} and b == -1:
        return {C}(0)
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r = r - b
    return {C}(r)
""",
    # NumPy integer power by squaring, wrapping in the dtype (the caller rejects b < 0).
    "ipow": """\
def {name}(a, b):
    if b <= 0:
        return {C}(1)
    r = {W}(a) if b & 1 else {W}(1)
    x = {W}(a)
    e = b >> 1
    while e > 0:
        x = _wmul(x, x)
        if e & 1:
            r = _wmul(r, x)
        e = e >> 1
    return {C}(r)
""",
    # NumPy shifts: a shift by the width or more (or by a negative amount) gives 0 / -1.
    "shl": """\
def {name}(a, b):
    if b < 0 or b >= {bits}:
        return {C}(0)
    return {C}({W}(a) << {W}(b))
""",
    "shr": """\
def {name}(a, b):
    if b < 0 or b >= {bits}:
        return {C}(-1) if a < 0 else {C}(0)
    return {C}({W}(a) >> {W}(b))
""",
    # CUDA device math, guarded so the simulator (Python's math) sees no domain errors.
    "_dexp": """\
def {name}(x):
    if x != x:
        return x
    if x > {hi}:
        return {C}(np.inf)
    if x < {lo}:
        return {C}(0)
    return {C}(math.exp(x))
""",
    "_dlog": """\
def {name}(x):
    if x != x or x < 0:
        return {C}(np.nan)
    if x == 0:
        return {C}(-np.inf)
    if x == np.inf:
        return x
    return {C}(math.log(x))
""",
    "_dtanh": """\
def {name}(x):
    if x != x:
        return x
    return {C}(math.tanh(x))
""",
    "_dsqrt": """\
def {name}(x):
    if x != x or x < 0:
        return {C}(np.nan)
    if x == np.inf:
        return x
    return {C}(math.sqrt(x))
""",
}


def helper_source(kind: str, dtype: np.dtype, decorator: str) -> tuple[str, str]:
    name = f"_{kind.strip('_')}_{dtname(dtype)}"
    dtype = np.dtype(dtype)
    fields: dict[str, Any] = {"name": name, "C": ctor(dtype)}
    if dtype.kind in "iu":
        fields["signed"] = dtype.kind == "i"
        fields["bits"] = dtype.itemsize * 8
        fields["W"] = "np.int64" if dtype.kind == "i" else "np.uint64"
    if dtype.kind == "f":
        fields["hi"] = "88.72283935546875" if dtype.itemsize == 4 else "709.782712893384"
        fields["lo"] = "-103.97208404541016" if dtype.itemsize == 4 else "-745.1332191019412"
    return name, decorator + "\n" + _HELPERS[kind].format(**fields)
