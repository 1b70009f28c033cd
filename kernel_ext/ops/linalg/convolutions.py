"""Convolutions: correlate and convolve, every layer's rules.

Each op's NumPy entry point, abstract evaluation, reference lowering, VJP and whole-graph rule,
side by side (see :mod:`kernel_ext.ops`); ONNX refuses both (``onnx/rules/refusals.py``: its
Conv sums in its own order).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.array_rules import static_shape
from ...autodiff.decompositions import composed
from ...autodiff.rules import NOTES, VJP, Cotangent, Primal
from ...backends.emit.literals import Unsupported
from ...backends.emit.source import Source
from ...backends.static_shapes import ranked_shape
from ...backends.ufunc_loops import find_loop
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...backends.whole_graph_ops.common import (
    Rule,
    Writer,
    array_arg,
    loop_scratch,
    only_params,
    result_dtype,
    ufunc_loop,
)
from ...backends.whole_graph_ops.linalg import MM_FLOAT
from ...ir import Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL, AbstractValue
from ...ir.abstract import Rule as AbstractRule
from ...ir.abstract.core import probe_dtype, shape_of
from ...ir.interpreter import LOWER
from ...ir.params import ConvolveParams
from ...trace.context import bind
from ...trace.numpy_api.common import implements

K = OpKind


# --- correlate, convolve ---


@implements(np.correlate)
def _correlate(a: Any, v: Any, mode: str = "valid") -> Any:
    return bind(OpKind.CORRELATE, (a, v), {"mode": mode})


@implements(np.convolve)
def _convolve(a: Any, v: Any, mode: str = "full") -> Any:
    return bind(OpKind.CONVOLVE, (a, v), {"mode": mode})


def _correlate_rule(fn: Callable[..., Any]) -> AbstractRule:
    """``np.correlate``/``np.convolve`` of two non-empty 1-D arrays: ``valid`` keeps
    ``max - min + 1`` values, ``same`` ``max``, ``full`` ``n + m - 1``."""

    def rule(params: ConvolveParams, a: Any, v: Any) -> AbstractValue:
        mode = params.mode
        dtype = probe_dtype(lambda x, y: fn(x, y, mode), a, v)
        n, m = (shape_of(a) or (1,))[0], (shape_of(v) or (1,))[0]
        for what, d in (("a", n), ("v", m)):
            if d == 0:
                raise ValueError(f"{what} cannot be empty")
        if n is None or m is None:
            return AbstractValue((None,), dtype)
        sizes = {"valid": max(n, m) - min(n, m) + 1, "same": max(n, m), "full": n + m - 1}
        return AbstractValue((sizes[mode],), dtype)

    return rule


ABSTRACT_EVAL.add(K.CORRELATE, _correlate_rule(np.correlate))
ABSTRACT_EVAL.add(K.CONVOLVE, _correlate_rule(np.convolve))


@LOWER.register(K.CORRELATE, K.CONVOLVE)
def _lower_correlate(node: Node) -> Callable[..., Any]:
    params = cast("ConvolveParams", node.params)
    fn = np.correlate if node.op is OpKind.CORRELATE else np.convolve
    mode: Any = params.mode  # (NumPy's stubs take a literal; NumPy checks the value)
    return lambda a, v: fn(a, v, mode)


def _full_correlation(a: Any, v: Any) -> Any:
    """``c[k] = sum_j a[k - (m - 1) + j] v[j]`` for ``k`` in ``0 .. n + m - 2``: a gather of
    the zero-padded ``a`` into an ``(n + m - 1, m)`` Toeplitz matrix, times ``v``."""
    (n,), (m,) = a.shape, v.shape
    padded = np.concatenate([np.zeros(m - 1, a.dtype), a, np.zeros(m - 1, a.dtype)])
    windows = padded[np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]]
    return np.matmul(windows, v)


@VJP.register(K.CORRELATE, K.CONVOLVE)
def _correlate_vjp(p: Primal, g: Any) -> list[Cotangent]:
    """By composition: the full correlation as a Toeplitz product (convolution: of the
    reversed ``v``), then NumPy's window of it for ``valid``/``same``."""
    params = cast("ConvolveParams", p.params)
    a, v = p.args
    (n,), (m,) = static_shape(a, "np.correlate"), static_shape(v, "np.correlate")
    mode = params.mode
    convolve = p.node.op is K.CONVOLVE
    k = min(n, m)
    length = {"valid": max(n, m) - k + 1, "same": max(n, m), "full": n + m - 1}[mode]
    start = {"valid": k - 1, "full": 0, "same": (k - 1) // 2 if convolve or n >= m else k // 2}[
        mode
    ]

    def fn(a: Any, v: Any) -> Any:
        full = _full_correlation(a, np.flip(v) if convolve else v)
        return full[start : start + length]

    return composed(p, g, fn)


NOTES.add(K.CORRELATE, "composition: a Toeplitz product")
NOTES.add(K.CONVOLVE, "composition: a Toeplitz product")


# NumPy's ``_pyarray_correlate`` (``multiarraymodule.c``) of C-contiguous ``d`` and ``k``
# (``len(d) >= len(k)``) step for step. The partial overlaps at both ends are each one call
# of the dtype's dot function, which NumPy's matmul loop makes for a (1, n) @ (n, 1) product
# with the same strides (``_mm_float``: the same BLAS ``dot``, the same bits). The full
# overlaps are NumPy's ``small_correlate`` for kernels of at most 11 values — a sum from 0
# in kernel order, in the dtype — and dot calls for longer kernels. A function of its own,
# not inlined: compiled once per dtype however many convolutions a graph makes.
_CORRELATE = """\
@_inline
def _dot1(d, i1, k, i2, out, o, n, f, dd, pp, dims, st):
    _mm_float(d[i1:i1 + n][None, None, :], k[i2:i2 + n][None, :, None],
              out[o:o + 1][None, :, None], f, dd, pp, dims, st, 0, 0, 0, 0, 0, 0)


@_kernel
def _correlate(d, k, mode, f, dd, pp, dims, st):
    n1 = d.shape[0]
    n2 = k.shape[0]
    if mode == 0:
        length = n1 - n2 + 1
        n_left = 0
        n_right = 0
    elif mode == 1:
        length = n1
        n_left = n2 // 2
        n_right = n2 - n_left - 1
    else:
        length = n1 + n2 - 1
        n_left = n2 - 1
        n_right = n2 - 1
    out = np.empty(length, d.dtype)
    i1 = 0
    i2 = n_left
    n = n2 - n_left
    o = 0
    for i in range(n_left):
        _dot1(d, i1, k, i2, out, o, n, f, dd, pp, dims, st)
        n += 1
        i2 -= 1
        o += 1
    nd = n1 - n2 + 1
    if n <= 11:
        for i in range(nd):
            s = d.dtype.type(0)
            for j in range(n):
                s += d[i + j] * k[j]
            out[o + i] = s
    else:
        for i in range(nd):
            _dot1(d, i, k, 0, out, o + i, n, f, dd, pp, dims, st)
    i1 = nd
    o += nd
    for i in range(n_right):
        n -= 1
        _dot1(d, i1, k, 0, out, o, n, f, dd, pp, dims, st)
        i1 += 1
        o += 1
    return out
"""

_CORRELATE_MODES = {"valid": 0, "same": 1, "full": 2}


def _check_correlate(node: Node) -> tuple[np.dtype, int]:
    params = cast("ConvolveParams", node.params)
    only_params(node, {"mode"})
    a, v = array_arg(node, 0, "an array"), array_arg(node, 1, "a kernel")
    dt = result_dtype(node)
    if dt.kind != "f" or np.dtype(a.dtype) != dt or np.dtype(v.dtype) != dt:
        raise Unsupported(
            f"{node.op.value} of {a.dtype} and {v.dtype} (one float dtype: "
            "NumPy's integer dot and small_correlate differ)"
        )
    if len(ranked_shape(a)) != 1 or len(ranked_shape(v)) != 1:
        raise Unsupported(f"{node.op.value} of arrays other than 1-D")
    mode = params.mode
    if mode not in _CORRELATE_MODES:
        raise Unsupported(f"{node.op.value} mode {mode!r}")
    if find_loop(np.matmul, (dt,) * 3) is None:
        raise Unsupported(f"no NumPy matmul loop for {dt}")
    return dt, _CORRELATE_MODES[mode]


def _emit_correlate(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    """``np.convolve``: the longer array correlated with the shorter one reversed (NumPy's
    composition); ``np.correlate``: the arrays as given, swapped when the first is shorter
    and the result then reversed (NumPy's ``correlate2``). An empty array signals NumPy's
    ValueError."""
    dt, mode = _check_correlate(node)
    a, v = w.fresh("cv"), w.fresh("cv")
    out.line(f"{a} = np.ascontiguousarray({args[0].name})")
    out.line(f"{v} = np.ascontiguousarray({args[1].name})")
    w.signal(out, f"{a}.shape[0] == 0 or {v}.shape[0] == 0")
    w.helpers["_mm_float"] = MM_FLOAT
    w.helpers["_correlate"] = _CORRELATE
    loop = f"{ufunc_loop(w, np.matmul, (dt,) * 3)}, {loop_scratch(w)}"
    if node.op is OpKind.CONVOLVE:
        longer = f"_correlate({a}, np.ascontiguousarray({v}[::-1]), {mode}, {loop})"
        shorter = f"_correlate({v}, np.ascontiguousarray({a}[::-1]), {mode}, {loop})"
    else:
        longer = f"_correlate({a}, {v}, {mode}, {loop})"
        shorter = f"np.ascontiguousarray(_correlate({v}, {a}, {mode}, {loop})[::-1])"
    with out.block(f"if {a}.shape[0] >= {v}.shape[0]:") as body:
        body.line(f"{t} = {longer}")
    with out.block("else:") as body:
        body.line(f"{t} = {shorter}")
    return "fresh"


WHOLE_GRAPH.add(K.CONVOLVE, Rule(lambda n: _check_correlate(n) and None, _emit_correlate))
WHOLE_GRAPH.add(K.CORRELATE, Rule(lambda n: _check_correlate(n) and None, _emit_correlate))
