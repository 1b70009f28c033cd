"""Whole-graph rules of the reductions and scans: cumsum/cumprod, var/std/nanmean with NumPy's
own sums, max/min over several axes, and the order statistics (median, percentile,
quantile).
"""

from __future__ import annotations

import numpy as np

from ...ir import Node, OpKind
from ..emit.literals import Unsupported, const_source, ctor, literal_value
from ..emit.source import Source
from ..static_shapes import aval_of_node, ranked_shape
from .common import (
    ACCUMULATE,
    DTYPES,
    LOOP3,
    MIXED_ZEROS,
    RULES,
    Rule,
    Writer,
    alloc_result,
    array_arg,
    checked_axis,
    lanes_along,
    loop_scratch,
    need_ufunc_loop,
    only_params,
    result_dtype,
    shape_tuple,
    ufunc_loop,
)

# ---------------------------------------------------------------------------------------------
# cumsum / cumprod
# ---------------------------------------------------------------------------------------------


def _check_scan(node: Node) -> tuple[Node, np.dtype, int | None]:
    only_params(node, {"axis", "dtype"})
    x = array_arg(node, 0, "a value")
    dt = result_dtype(node)
    if not np.can_cast(aval_of_node(x).dtype, dt, "safe"):
        raise Unsupported(f"{node.op.value} of {x.dtype} into {dt}")
    need_ufunc_loop(np.add if node.op is OpKind.CUMSUM else np.multiply, dt)
    axis = node.attrs.get("axis")
    rank = len(ranked_shape(x))
    if axis is not None:
        if rank == 0:
            raise Unsupported(f"{node.op.value} of a 0-d value along an axis")
        axis = checked_axis(axis, rank, node.op.value)
    elif rank == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    return x, dt, axis


def _emit_scan(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    x_node, dt, axis = _check_scan(node)
    rank = len(ranked_shape(x_node))
    dts = ctor(dt)
    x = w.fresh("x")
    # The lanes are independent: a C-ordered copy (or a cast) changes no result bit.
    cast = "" if np.dtype(x_node.dtype) == dt else f".astype({dts})"
    out.line(f"{x} = np.ascontiguousarray({args[0].name}{cast})")
    if axis is None:
        out.line(f"{x} = {x}.ravel()")
        rank, dims = 1, [f"{x}.size"]
    else:
        dims = [f"{x}.shape[{d}]" for d in range(rank)]
    alloc_result(w, node, dims, dts, out, t)
    outer, n, inner = lanes_along(x, rank, axis if axis is not None else 0)
    shape3 = f"({outer}, {n}, {inner})"
    w.helpers["_loop3"] = LOOP3
    w.helpers["_accumulate"] = ACCUMULATE
    ufunc = np.add if node.op is OpKind.CUMSUM else np.multiply
    out.line(
        f"_accumulate({x}.reshape({shape3}), {t}.reshape({shape3}), "
        f"{ufunc_loop(w, ufunc, (dt,) * 3)}, {loop_scratch(w)})"
    )
    return "fresh"


RULES[OpKind.CUMSUM] = Rule(lambda n: _check_scan(n) and None, _emit_scan)
RULES[OpKind.CUMPROD] = Rule(lambda n: _check_scan(n) and None, _emit_scan)


# ---------------------------------------------------------------------------------------------
# var / std / nanmean: NumPy's algorithm, its sums made by NumPy's add loop
# ---------------------------------------------------------------------------------------------

# ``acc += sum of x3 along axis 1`` as NumPy's reduction calls its add loop on a C-contiguous
# array: with nothing after the axis (``inner == 1``) the loop's reduce form (output stride
# 0: a pairwise sum per lane), else the binary form once per step along the axis (each
# output element summed in order). ``acc`` starts at +0.0, as NumPy's does.
_SUM_AXIS = """\
@_inline
def _sum_axis(x3, acc, f, d, pp, dims, st):
    outer, n, inner = x3.shape
    if inner == 1:
        for a in range(outer):
            p = acc[a].ctypes.data
            _loop3(f, d, pp, dims, st, p, x3[a].ctypes.data, p, n, 0, x3.strides[1], 0)
    else:
        for a in range(outer):
            p = acc[a].ctypes.data
            for i in range(n):
                _loop3(f, d, pp, dims, st, p, x3[a, i].ctypes.data, p, inner,
                       acc.strides[1], x3.strides[2], acc.strides[1])
"""


def _reduce_axis(node: Node, rank: int) -> int | None:
    """The one axis of a var/std/nanmean (None: all of them), or Unsupported."""
    axis = node.attrs.get("axis")
    if isinstance(axis, (tuple, list)):
        if len(axis) != 1:
            if sorted(checked_axis(a, rank, node.op.value) for a in axis) == list(range(rank)):
                return None
            raise Unsupported(f"{node.op.value} over several axes")
        axis = axis[0]
    if axis is None or rank <= 1:
        if axis is not None:
            checked_axis(axis, max(rank, 1), node.op.value)
        return None
    return checked_axis(axis, rank, node.op.value)


def _check_moments(node: Node) -> tuple[Node, np.dtype, int | None]:
    allowed = (
        {"axis", "keepdims", "ddof"} if node.op is not OpKind.NANMEAN else {"axis", "keepdims"}
    )
    only_params(node, allowed)
    x = array_arg(node, 0, "a value")
    dt = result_dtype(node)
    if np.dtype(x.dtype) != dt or dt.kind != "f":
        # integer inputs are summed through NumPy's cast buffers, in chunks: not modelled
        raise Unsupported(f"{node.op.value} of {x.dtype} (float32/float64 only)")
    ddof = node.attrs.get("ddof", 0)
    if not isinstance(ddof, (int, np.integer)) or isinstance(ddof, bool):
        raise Unsupported(f"{node.op.value} with ddof={ddof!r} (an int only)")
    if len(ranked_shape(x)) == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    need_ufunc_loop(np.add, dt)
    return x, dt, _reduce_axis(node, len(ranked_shape(x)))


def _moment_input(
    w: Writer, x: str, rank: int, axis: int | None, out: Source
) -> tuple[str, str, str, str]:
    """``x`` as a C-contiguous ``(outer, n, inner)`` view, its lane expressions. An input
    that is not C-contiguous signals: NumPy would sum it in another order."""
    if rank == 1:  # a 1-D array of any positive stride is summed as it is
        w.signal(out, f"{x}.strides[0] < 0")
        v = w.fresh("x")
        out.line(f"{v} = {x}[None, :, None]")
        return v, "1", f"{x}.shape[0]", "1"
    w.signal(out, f"not {x}.flags.c_contiguous")
    c = w.fresh("x")
    out.line(f"{c} = np.ascontiguousarray({x})")  # a C view, typed as one
    outer, n, inner = lanes_along(c, rank, axis)
    v = w.fresh("x")
    out.line(f"{v} = {c}.reshape(({outer}, {n}, {inner}))")
    return v, outer, n, inner


def _finish(
    w: Writer,
    node: Node,
    value: str,
    rank: int,
    axis: int | None,
    x: str,
    t: str,
    out: Source,
) -> str:
    """The ``(outer, inner)`` result ``value`` in NumPy's shape (keepdims or not)."""
    keep = bool(node.attrs.get("keepdims"))
    if axis is None and not keep:
        out.line(f"{t} = {value}[0, 0]")
        return "scalar"
    if axis is None:
        dims = ["1"] * rank
    else:
        dims = [f"{x}.shape[{d}]" if d != axis else "1" for d in range(rank)]
        if not keep:
            del dims[axis]
    out.line(f"{t} = {value}.reshape({shape_tuple(dims)})")
    return "fresh"


def _emit_moment(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """``numpy/_core/_methods.py``'s ``_var`` (and ``_std``) step by step: the mean (a sum,
    divided as ``true_divide(sum, intp count)`` divides: in float64, then cast), the squared
    deviations, their sum divided by ``max(count - ddof, 0)``; a count at most ``ddof``
    (NumPy's warning, an inf or NaN) or an empty input signals."""
    x_node, dt, axis = _check_moments(node)
    rank = len(ranked_shape(x_node))
    dts = ctor(dt)
    x = args[0].name
    x3, outer, n, inner = _moment_input(w, x, rank, axis, out)
    ddof = int(node.attrs.get("ddof", 0))
    w.signal(out, f"{n} - {ddof} <= 0")
    w.helpers["_loop3"] = LOOP3
    w.helpers["_sum_axis"] = _SUM_AXIS
    loop = f"{ufunc_loop(w, np.add, (dt,) * 3)}, {loop_scratch(w)}"
    mean, dev, acc = w.fresh("mean"), w.fresh("dev"), w.fresh("acc")
    out.line(f"{mean} = np.zeros(({outer}, {inner}), {dts})")
    out.line(f"_sum_axis({x3}, {mean}, {loop})")
    out.line(f"{mean} = (({mean}.astype(np.float64)) / np.float64({n})).astype({dts})")
    out.line(f"{dev} = {x3} - {mean}.reshape(({outer}, 1, {inner}))")
    out.line(f"{dev} = {dev} * {dev}")
    out.line(f"{acc} = np.zeros(({outer}, {inner}), {dts})")
    out.line(f"_sum_axis({dev}, {acc}, {loop})")
    out.line(f"{acc} = ({acc}.astype(np.float64) / np.float64({n} - {ddof})).astype({dts})")
    if node.op is OpKind.STD:
        out.line(f"{acc} = np.sqrt({acc})")
    return _finish(w, node, acc, rank, axis, x, t, out)


def _emit_nanmean(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """``np.nanmean`` as NumPy computes it: a copy with NaNs replaced by +0.0, its sum
    divided (in float64, then cast) by the count of the others; a lane of NaNs only
    (NumPy's "Mean of empty slice" warning) or an empty input signals."""
    x_node, dt, axis = _check_moments(node)
    rank = len(ranked_shape(x_node))
    dts = ctor(dt)
    x3, outer, n, inner = _moment_input(w, args[0].name, rank, axis, out)
    w.signal(out, f"{n} == 0")
    w.helpers["_loop3"] = LOOP3
    w.helpers["_sum_axis"] = _SUM_AXIS
    arr, cnt, acc = w.fresh("arr"), w.fresh("cnt"), w.fresh("acc")
    out.line(f"{arr} = np.where(np.isnan({x3}), {dts}(0), {x3})")
    out.line(f"{cnt} = np.sum(~np.isnan({x3}), axis=1)")
    w.signal(out, f"np.any({cnt} == 0)")
    out.line(f"{acc} = np.zeros(({outer}, {inner}), {dts})")
    out.line(f"_sum_axis({arr}, {acc}, {ufunc_loop(w, np.add, (dt,) * 3)}, {loop_scratch(w)})")
    out.line(f"{acc} = ({acc}.astype(np.float64) / {cnt}.astype(np.float64)).astype({dts})")
    return _finish(w, node, acc, rank, axis, args[0].name, t, out)


RULES[OpKind.VAR] = Rule(lambda n: _check_moments(n) and None, _emit_moment)
RULES[OpKind.STD] = Rule(lambda n: _check_moments(n) and None, _emit_moment)
RULES[OpKind.NANMEAN] = Rule(lambda n: _check_moments(n) and None, _emit_nanmean)


# ---------------------------------------------------------------------------------------------
# max / min over several axes
# ---------------------------------------------------------------------------------------------

# The extreme of each row, in any order: it is unique (so NumPy's) unless a NaN is among
# the values (which NaN NumPy returns depends on its order and SIMD width) or the extreme is
# a zero with both signs present (NumPy keeps one by its order): those rows signal.
_EXTREME_ROWS = """\
@_inline
def _extreme_rows(y2, out, is_max, has_init, init):
    for r in range(y2.shape[0]):
        row = y2[r]
        m = init if has_init else row[0]
        if m != m:
            return True
        for v in row:
            if v != v:
                return True
            if (v > m) if is_max else (v < m):
                m = v
        if m == 0:
            neg = has_init and init == 0 and np.signbit(init)
            pos = has_init and init == 0 and not np.signbit(init)
            for v in row:
                if v == 0:
                    if np.signbit(v):
                        neg = True
                    else:
                        pos = True
            if neg and pos:
                return True
        out[r] = m
    return False
"""


def _several_axes(node: Node) -> bool:
    """A max/min over an axis tuple of two or more axes, not all of them (the fused
    reductions cover the others)."""
    x, axis = node.args[0], node.attrs.get("axis")
    if (
        not isinstance(x, Node)
        or aval_of_node(x).shape is None
        or not isinstance(axis, tuple)
        or len(axis) < 2
    ):
        return False
    rank = len(ranked_shape(x))
    try:
        return sorted({int(a) % rank for a in axis}) != list(range(rank))
    except (TypeError, ZeroDivisionError):
        return True


def _check_extreme(node: Node) -> tuple[Node, list[int], str | None]:
    """The reduced array, its reduced axes (sorted) and the ``initial`` value's source."""
    ufunc = node.op is OpKind.UFUNC_REDUCE
    only_params(node, {"axis", "keepdims"} | ({"ufunc", "initial"} if ufunc else set()))
    x = array_arg(node, 0, "a value")
    dt = np.dtype(x.dtype)
    if np.dtype(node.dtype) != dt:
        raise Unsupported(f"{node.op.value} changing the dtype")
    rank = len(ranked_shape(x))
    axis = node.attrs.get("axis", 0 if ufunc else None)
    axis = (
        tuple(range(rank))
        if axis is None
        else tuple(axis)
        if isinstance(axis, (tuple, list))
        else (axis,)
    )
    axes = sorted({checked_axis(a, rank, node.op.value) for a in axis})
    if len(axes) != len(axis):
        raise Unsupported(f"{node.op.value} with a repeated axis")
    init = node.attrs.get("initial") if ufunc else None
    if init is None:
        return x, axes, None
    return x, axes, const_source(literal_value(init, dt), dt)


def _claims_ufunc_reduce(node: Node) -> bool:
    return node.attrs.get("ufunc") in (np.maximum, np.minimum)


def _emit_extreme(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    x_node, axes, init = _check_extreme(node)
    rank = len(ranked_shape(x_node))
    x = args[0].name
    dts = ctor(np.dtype(node.dtype))
    kept = [d for d in range(rank) if d not in axes]
    perm = kept + axes
    y = w.fresh("y")
    src = x if perm == list(range(rank)) else f"np.transpose({x}, {tuple(perm)!r})"
    out.line(f"{y} = np.ascontiguousarray({src})")
    rows = " * ".join(f"{x}.shape[{d}]" for d in kept) or "1"
    size = " * ".join(f"{x}.shape[{d}]" for d in axes) or "1"
    if init is None:  # NumPy: a zero-size reduction without an initial value is an error
        w.signal(out, f"{size} == 0")
    y2, o = w.fresh("y"), w.fresh("o")
    out.line(f"{y2} = {y}.reshape(({rows}, {size}))")
    out.line(f"{o} = np.empty({rows}, {dts})")
    w.helpers["_extreme_rows"] = _EXTREME_ROWS
    is_max = node.op is OpKind.MAX or node.attrs.get("ufunc") is np.maximum
    w.signal(
        out,
        f"_extreme_rows({y2}, {o}, {is_max}, {init is not None}, "
        f"{init if init is not None else f'{dts}(0)'})",
    )
    keep = bool(node.attrs.get("keepdims"))
    dims = [("1" if d in axes else f"{x}.shape[{d}]") for d in range(rank) if keep or d not in axes]
    if not dims:
        out.line(f"{t} = {o}[0]")
        return "scalar"
    out.line(f"{t} = {o}.reshape({shape_tuple(dims)})")
    return "fresh"


RULES[OpKind.MAX] = Rule(lambda n: _check_extreme(n) and None, _emit_extreme, _several_axes)
RULES[OpKind.MIN] = Rule(lambda n: _check_extreme(n) and None, _emit_extreme, _several_axes)
RULES[OpKind.UFUNC_REDUCE] = Rule(
    lambda n: _check_extreme(n) and None, _emit_extreme, _claims_ufunc_reduce
)


# ---------------------------------------------------------------------------------------------
# median / percentile / quantile (the default linear method)
# ---------------------------------------------------------------------------------------------


# ``np.median``: NumPy's ``mean`` of the one or two middle values — their sum in the sum's
# dtype (the input's for floats, float64 for integers) as NumPy's add reduction makes it
# (from +0.0: ``0.0 + (a + b)``, so a zero median is +0.0 whichever zeros were picked),
# divided in float64 by the intp count, cast to the result's dtype.
_MEDIAN_ROWS = """\
@_inline
def _median_rows_{c}(y2, out):
    n = y2.shape[1]
    for r in range(y2.shape[0]):
        s = np.sort(y2[r])
        if s[n - 1] != s[n - 1]:
            return True
        if n % 2 == 1:
            total = {acc}(0) + {acc}(s[n // 2])
            count = np.float64(1)
        else:
            total = {acc}(0) + ({acc}(s[n // 2 - 1]) + {acc}(s[n // 2]))
            count = np.float64(2)
        out[r] = {out}(np.float64(total) / count)
    return False
"""

# ``np.quantile(..., method="linear")`` of float64 lanes: NumPy's ``_quantile`` — the
# virtual index ``(n - 1) * q``, its neighbours (both the last value at or above ``n - 1``),
# ``gamma = index - previous`` and ``_lerp``: ``a + (b - a) * gamma``, or
# ``b - (b - a) * (1 - gamma)`` where ``gamma >= 0.5``.
_QUANTILE_ROWS = """\
@_inline
def _quantile_rows(y2, q, out):
    n = y2.shape[1]
    for r in range(y2.shape[0]):
        s = np.sort(y2[r])
        if s[n - 1] != s[n - 1]:
            return True
        mixed = _mixed_zeros(s)
        for i in range(q.shape[0]):
            vi = np.float64(n - 1) * q[i]
            if vi >= n - 1:
                p = n - 1
                g = vi - np.float64(-1)
                nx = n - 1
            elif vi < 0:
                p = 0
                g = vi
                nx = 0
            else:
                p = int(np.floor(vi))
                g = vi - np.float64(p)
                nx = p + 1
            a = s[p]
            b = s[nx]
            if mixed and (a == 0 or b == 0):
                return True
            d = b - a
            v = a + d * g
            if g >= 0.5:
                v = b - d * (1.0 - g)
            out[i, r] = v
    return False
"""


def _check_order_stat(node: Node) -> tuple[Node, int | None, np.ndarray | None]:
    """The reduced array, its axis (None: all) and the quantiles as fractions (float64;
    None for ``median``), or Unsupported."""
    x = array_arg(node, 0, "a value")
    rank = len(ranked_shape(x))
    if node.op is OpKind.MEDIAN:
        only_params(node, {"axis", "keepdims"})
        q = None
        if np.dtype(x.dtype).kind not in "iuf":
            raise Unsupported(f"median of {x.dtype}")
    else:
        only_params(node, {"axis", "keepdims", "q"})
        if np.dtype(x.dtype) != np.float64:
            raise Unsupported(
                f"{node.op.value} of {x.dtype} (float64 only: NumPy's "
                "promotion of the weights differs for others)"
            )
        raw = np.asarray(node.attrs["q"])
        if raw.dtype.kind not in "iuf" or raw.ndim > 1:
            raise Unsupported(f"{node.op.value} with q of {raw.dtype} and rank {raw.ndim}")
        if node.op is OpKind.PERCENTILE:
            q = np.true_divide(raw, 100)  # NumPy's own conversion
        elif raw.dtype.kind != "f":
            raise Unsupported("quantile with integer q (NumPy takes, not interpolates)")
        else:
            q = raw
        q = np.asarray(q, np.float64)
        if np.isnan(q).any() or (q < 0).any() or (q > 1).any():
            raise Unsupported(f"{node.op.value} q out of range (NumPy's ValueError)")
    if np.dtype(node.dtype) not in DTYPES:
        raise Unsupported(f"{node.op.value} to {node.dtype}")
    if rank == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    axis = node.attrs.get("axis")
    if isinstance(axis, (tuple, list)):
        if len(axis) != 1:
            raise Unsupported(f"{node.op.value} over several axes")
        axis = axis[0]
    return x, None if axis is None else checked_axis(axis, rank, node.op.value), q


def _emit_order_stat(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """Lanes along the axis (moved last, C-ordered), each sorted, then NumPy's formula; an
    empty lane (NumPy's warning and NaN) signals, as do the cases of :data:`MIXED_ZEROS`."""
    x_node, axis, q = _check_order_stat(node)
    rank = len(ranked_shape(x_node))
    x = args[0].name
    dt = np.dtype(x_node.dtype)
    out_dt = np.dtype(node.dtype)
    if axis is None:
        src, kept = f"{x}.ravel()", []
        y = w.fresh("y")
        out.line(f"{y} = np.ascontiguousarray({x}).ravel()")
        lanes, n = "1", f"{y}.shape[0]"
    else:
        kept = [d for d in range(rank) if d != axis]
        perm = kept + [axis]
        src = x if perm == list(range(rank)) else f"np.transpose({x}, {tuple(perm)!r})"
        y = w.fresh("y")
        out.line(f"{y} = np.ascontiguousarray({src})")
        lanes = " * ".join(f"{x}.shape[{d}]" for d in kept) or "1"
        n = f"{x}.shape[{axis}]"
    w.signal(out, f"{n} == 0")
    y2, o = w.fresh("y"), w.fresh("o")
    out.line(f"{y2} = {y}.reshape(({lanes}, {n}))")
    w.helpers["_mixed_zeros"] = MIXED_ZEROS
    if q is None:
        acc = ctor(dt) if dt.kind == "f" else "np.float64"
        name = f"_median_rows_{dt.char}"
        w.helpers[name] = _MEDIAN_ROWS.format(c=dt.char, acc=acc, out=ctor(out_dt))
        out.line(f"{o} = np.empty({lanes}, {ctor(out_dt)})")
        w.signal(out, f"{name}({y2}, {o})")
        qdims: list[str] = []
    else:
        qc = f"c{len(w.constants)}"
        w.constants.append(np.ascontiguousarray(q.ravel()))
        w.helpers["_quantile_rows"] = _QUANTILE_ROWS
        out.line(f"{o} = np.empty(({q.size}, {lanes}), np.float64)")
        w.signal(out, f"_quantile_rows({y2}, {qc}, {o})")
        qdims = [str(s) for s in q.shape]
    keep = bool(node.attrs.get("keepdims"))
    dims = qdims + [
        ("1" if d == axis or axis is None else f"{x}.shape[{d}]")
        for d in range(rank)
        if keep or (axis is not None and d != axis)
    ]
    if not dims:
        out.line(f"{t} = {o}.ravel()[0]")
        return "scalar"
    out.line(f"{t} = {o}.reshape({shape_tuple(dims)})")
    return "fresh"


for _kind in (OpKind.MEDIAN, OpKind.PERCENTILE, OpKind.QUANTILE):
    RULES[_kind] = Rule(lambda n: _check_order_stat(n) and None, _emit_order_stat)


# ---------------------------------------------------------------------------------------------
# argmin / argmax
# ---------------------------------------------------------------------------------------------


def _check_arg_reduce(node: Node) -> None:
    x = node.args[0]
    if (
        not isinstance(x, Node)
        or aval_of_node(x).shape is None
        or np.dtype(x.dtype).kind not in "biuf"
    ):
        raise Unsupported(f"{node.op.value} of {getattr(x, 'aval', x)}")
    if set(node.attrs) - {"axis", "keepdims"}:
        raise Unsupported(f"{node.op.value} with {sorted(node.attrs)}")
    axis = node.attrs.get("axis")
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise Unsupported(f"{node.op.value} over axes {axis!r}")


# argmin/argmax of one non-empty row: NumPy's answer is the first NaN if there is one, else
# the first extreme (ties keep the earliest: strict comparison).
_ARG_REDUCE = """\
@_inline
def {name}1(row):
    best = row[0]
    k = 0
    if best == best:
        for j in range(1, row.shape[0]):
            v = row[j]
            if v != v:
                k = j
                break
            if v {cmp} best:
                best = v
                k = j
    return k
"""


def _emit_arg_reduce(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """``np.argmin``/``np.argmax``: the first extreme, or the first NaN (NumPy's rule),
    along one axis (moved last) or over the flattened array."""
    x = args[0]
    name = f"_{node.op.value}"
    w.helpers[name + "1"] = _ARG_REDUCE.format(
        name=name, cmp="<" if node.op is OpKind.ARGMIN else ">"
    )
    axis, keepdims = node.attrs.get("axis"), node.attrs.get("keepdims", False)
    rank = len(node.args[0].aval.shape)
    if x.scalar:  # a 0-d value: NumPy's answer is 0
        out.line(f"{t} = np.int64(0)")
        return "scalar"
    if axis is None or rank == 1:
        flat = w.fresh("r")
        out.line(f"{flat} = np.ascontiguousarray({x.name}).ravel()")
        w.signal(out, f"{flat}.size == 0")  # NumPy's empty-sequence error
        out.line(f"{t} = np.int64({name}1({flat}))")
        if not keepdims:
            return "scalar"
        out.line(f"{t} = np.full({(1,) * rank!r}, {t})")
        return "fresh"
    ax = int(axis) % rank
    perm = tuple(a for a in range(rank) if a != ax) + (ax,)
    v = w.fresh("v")
    out.line(f"{v} = np.transpose({x.name}, {perm!r})")
    w.signal(out, f"{v}.shape[{rank - 1}] == 0")
    shape = "(" + "".join(f"{v}.shape[{a}], " for a in range(rank - 1)) + ")"
    out.line(f"{t} = np.empty({shape}, np.int64)")
    with out.block(f"for _ix in np.ndindex({t}.shape):") as body:
        body.line(f"{t}[_ix] = {name}1({v}[_ix])")
    if keepdims:
        out.line(f"{t} = np.expand_dims({t}, {ax})")
    return "fresh"


RULES[OpKind.ARGMIN] = Rule(_check_arg_reduce, _emit_arg_reduce)
RULES[OpKind.ARGMAX] = Rule(_check_arg_reduce, _emit_arg_reduce)
