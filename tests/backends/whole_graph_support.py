"""Shared helpers of the whole-graph op tests: one compiled function per signature, a call
that fails when the compiled function hands over to the fused executor, bitwise equality."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import kernel_ext as kx
from kernel_ext.backends.whole_graph import unsupported_reason

_CACHE: dict[Any, Any] = {}


def bits(x: Any) -> tuple:
    a = np.asarray(x)
    return a.dtype.str, a.shape, np.ascontiguousarray(a).tobytes()


def same(got: Any, want: Any) -> None:
    """Equal dtype, shape and bits (NaN payloads and the sign of zero included; a tuple of
    results element by element)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert (g.dtype, g.shape) == (w.dtype, w.shape), (g.dtype, w.dtype, g.shape, w.shape)
    assert bits(g) == bits(w), f"\ngot  {g!r}\nwant {w!r}"


def function_for(fn: Callable, *args: Any, static: bool = False) -> Any:
    """One ``kx.function(fn, jit_compile=True)`` per Python function and argument dtypes and
    ranks, every dimension None: one compiled function serves every shape (and hypothesis'
    reruns), as the compiled code reads the shapes at run time. ``static``: traced per
    shape instead (the tracer needs a length, as ``x[np.arange(6), y]`` does)."""
    key = (fn, static) + tuple((np.asarray(a).dtype.str, np.ndim(a)) for a in args)
    if key not in _CACHE:
        spec = [kx.TensorSpec((None,) * np.ndim(a), np.asarray(a).dtype) for a in args]
        _CACHE[key] = kx.function(fn, jit_compile=True, input_signature=None if static else spec)
    return _CACHE[key]


def compiled(fn: Callable, *args: Any, static: bool = False, copy_args: bool = True) -> Any:
    """``fn(*args)`` computed by the compiled whole-graph function: its graph is accepted,
    and a signal (a rerun in the fused executor) fails the test. ``copy_args``: arguments
    are copied, so writes into them do not leak between calls (a copy is C-contiguous:
    tests of layouts pass False)."""
    f = function_for(fn, *args, static=static)

    def args_of() -> list:
        return [np.copy(a) for a in args] if copy_args else list(args)

    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*cannot be compiled into one function")
        f(*args_of())  # the first call compiles (synchronously here)
        cf = f.get_concrete_function(*args)
        assert unsupported_reason(cf.graph) is None, unsupported_reason(cf.graph)
        scope = cf.executable.run.__globals__

        def no_fallback(*_: Any) -> Any:
            raise AssertionError(
                "the fused executor ran: the whole-graph function failed to "
                "compile or signalled a rerun in NumPy"
            )

        saved = scope["_fallback"]
        scope["_fallback"] = no_fallback
        try:
            return f(*args_of())
        finally:
            scope["_fallback"] = saved
