"""Captured-value snapshots: the globals and closure values a trace froze, and which changed.

A graph freezes the plain data its Python body read (``SCALE = 2.0`` at module level becomes a
constant). Each trace records a :class:`CapturedValue` per such value with a fingerprint, so
:func:`stale_captures` can say later that a global changed after the graph froze it — a
result that silently differs from eager NumPy otherwise.
"""

from __future__ import annotations

import dis
import functools
import types
import zlib
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class CapturedValue:
    """A global or closure value the traced body read, as it was at trace time."""

    name: str  # "SCALE", or "helper.SCALE" when read by a called helper
    kind: str  # "global" or "closure"
    text: str  # short description of the value at trace time
    fingerprint: Hashable  # equal fingerprints: the value did not change
    source: Any = field(compare=False, repr=False, default=None)  # globals dict or cell
    key: str = ""  # the name to look up in ``source``

    def current(self) -> tuple[bool, Any]:
        """``(exists, value)`` now."""
        if self.kind == "closure":
            try:
                return True, self.source.cell_contents
            except ValueError:
                return False, None
        if isinstance(self.source, dict) and self.key in self.source:
            return True, self.source[self.key]
        return False, None


_HASH_LIMIT_BYTES = 1 << 20  # arrays above this are fingerprinted by a strided sample
_SAMPLE_BYTES = 1 << 18  # ... of about this size
_MAX_ITEMS = 64  # containers larger than this are not tracked
_HELPER_DEPTH = 3  # follow user helper functions this deep


@dataclass(frozen=True)
class StaleCapture:
    """A captured value that changed after a trace froze it."""

    name: str
    kind: str
    traces: tuple[int, ...]  # the traces that used the old value
    old: str
    new: str  # "undefined" when the name is gone

    def sentence(self, function_name: str = "") -> str:
        which = ", ".join(f"#{t}" for t in self.traces)
        plural = "s" if len(self.traces) > 1 else ""
        now = "is now undefined" if self.new == "undefined" else f"is now {self.new}"
        return (
            f"`{self.name}` was {self.old} at trace{plural} {which}, {now}; the graph "
            f"still uses {self.old}"
        )


def snapshot_captures(python_function: Any) -> tuple[CapturedValue, ...]:
    """The data globals and closure values ``python_function`` (and helpers it calls) reads.

    Only plain data is tracked (numbers, strings, NumPy arrays and scalars, small containers of
    those): modules, functions, classes and ``kx.Variable`` s are not frozen by a trace.
    """
    out: dict[str, CapturedValue] = {}
    _snapshot(python_function, "", out, set(), 0)
    return tuple(out.values())


def _snapshot(
    fn: Any, prefix: str, out: dict[str, CapturedValue], seen: set[int], depth: int
) -> None:
    fn = getattr(fn, "python_function", fn)  # a kx.Function called inside: its Python body
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType) or id(code) in seen:
        return
    seen.add(id(code))
    global_names, free_names = _names_read(code)
    namespace = getattr(fn, "__globals__", {})
    for name in global_names:
        if name not in namespace:
            continue
        value = namespace[name]
        if _is_helper(value, namespace) and depth < _HELPER_DEPTH:
            _snapshot(value, f"{prefix}{name}.", out, seen, depth + 1)
            continue
        _add(out, prefix + name, "global", value, namespace, name)
    cells = dict(zip(code.co_freevars, getattr(fn, "__closure__", None) or ()))
    for name in free_names:
        cell = cells.get(name)
        if cell is None:
            continue
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        if _is_helper(value, namespace) and depth < _HELPER_DEPTH:
            _snapshot(value, f"{prefix}{name}.", out, seen, depth + 1)
            continue
        _add(out, prefix + name, "closure", value, cell, name)


@functools.lru_cache(maxsize=512)
def _names_read(code: types.CodeType) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Global and free-variable names loaded by ``code`` (nested code objects included)."""
    globals_: dict[str, None] = {}
    free: dict[str, None] = {}
    stack = [code]
    while stack:
        c = stack.pop()
        for ins in dis.get_instructions(c):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                globals_[ins.argval] = None
            elif (
                ins.opname in ("LOAD_DEREF", "LOAD_CLASSDEREF")
                and c is code
                and ins.argval in code.co_freevars
            ):
                free[ins.argval] = None
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return tuple(globals_), tuple(free)


def _is_helper(value: Any, namespace: dict) -> bool:
    """A user-defined Python function of the same namespace (its globals are ours too)."""
    value = getattr(value, "python_function", value)
    return isinstance(value, types.FunctionType) and value.__globals__ is namespace


def _add(
    out: dict[str, CapturedValue], name: str, kind: str, value: Any, source: Any, key: str
) -> None:
    fp = fingerprint(value)
    if fp is not None and name not in out:
        out[name] = CapturedValue(name, kind, short_text(value), fp, source, key)


def fingerprint(value: Any, depth: int = 0) -> Hashable | None:
    """A hashable summary that changes when the value does; None for untracked values."""
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return (type(value).__name__, value)
    if isinstance(value, (float, complex)):
        return (type(value).__name__, repr(value))  # repr: NaN equals itself
    if isinstance(value, np.generic):
        if value.dtype.kind in "OV":
            return None
        return ("np", value.dtype.str, value.tobytes())
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OV":
            return None
        data = value
        if value.nbytes > _HASH_LIMIT_BYTES:
            # Large arrays: hash an evenly strided sample plus identity, so a trace never pays
            # more than ~1 ms per captured array. A rebinding is always seen; an in-place
            # change is seen when it touches a sampled element.
            step = -(-value.size * value.itemsize // _SAMPLE_BYTES)
            data = value.reshape(-1)[::step]
        # CRC-32: only change detection is needed, and it runs at ~3 GB/s (blake2b: ~0.5).
        digest = zlib.crc32(np.ascontiguousarray(data).data)
        kind = "array" if data is value else ("array-sample", id(value))
        return (kind, value.dtype.str, value.shape, digest)
    if depth < 2 and isinstance(value, (tuple, list)) and len(value) <= _MAX_ITEMS:
        items = tuple(fingerprint(v, depth + 1) for v in value)
        return None if None in items else (type(value).__name__, items)
    if depth < 2 and isinstance(value, dict) and len(value) <= _MAX_ITEMS:
        try:
            pairs: tuple[tuple[str, Any], ...] = tuple(
                sorted((repr(k), fingerprint(v, depth + 1)) for k, v in value.items())
            )
        except TypeError:
            return None
        return None if any(v is None for _, v in pairs) else ("dict", pairs)
    return None


def short_text(value: Any, limit: int = 60) -> str:
    """A short, one-line description of a value for explanations."""
    if isinstance(value, np.ndarray):
        body = np.array2string(value, threshold=6, edgeitems=2, separator=", ")
        text = f"array {value.dtype.name}{list(value.shape)} {' '.join(body.split())}"
    else:
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def stale_captures(function: Any) -> list[StaleCapture]:
    """Captured globals/closure values of ``function``'s live traces that changed since."""
    by_value: dict[tuple[str, Hashable], list[int]] = {}
    first: dict[tuple[str, Hashable], CapturedValue] = {}
    live = {cf.record.index for cf in getattr(function, "concrete_functions", ())}
    for record in getattr(function, "retraces", ()):
        if live and record.index not in live:
            continue
        for cap in record.captured:
            exists, value = cap.current()
            if exists and fingerprint(value) == cap.fingerprint:
                continue
            key = (cap.name, cap.fingerprint)
            by_value.setdefault(key, []).append(record.index)
            first.setdefault(key, cap)
    out = []
    for key, traces in by_value.items():
        cap = first[key]
        exists, value = cap.current()
        out.append(
            StaleCapture(
                cap.name,
                cap.kind,
                tuple(traces),
                cap.text,
                short_text(value) if exists else "undefined",
            )
        )
    return out
