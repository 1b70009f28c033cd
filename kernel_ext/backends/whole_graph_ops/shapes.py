"""Whole-graph rules of the shape ops: stack, concatenate, expand_dims, flip, pad, nonzero,
argwhere, squeeze and ufunc.accumulate.
"""

from __future__ import annotations

import numpy as np

from ...ir import Node, OpKind
from ..emit.literals import Unsupported, const_source, ctor
from ..emit.source import Source
from ..static_shapes import aval_of_node, ranked_shape
from ..ufunc_loops import find_loop
from .common import (
    ACCUMULATE,
    LOOP3,
    RULES,
    Rule,
    Writer,
    alloc_result,
    array_arg,
    checked_axis,
    emit_nonzero,
    index_at_axis,
    lanes_along,
    loop_scratch,
    only_params,
    result_dtype,
    shape_tuple,
    ufunc_loop,
)

# ---------------------------------------------------------------------------------------------
# stack / concatenate / expand_dims / flip
# ---------------------------------------------------------------------------------------------


def _joined(node: Node) -> tuple[list[Node], np.dtype]:
    """The arrays ``stack``/``concatenate`` join, each cast safely to the result dtype."""
    dt = result_dtype(node)
    xs = [array_arg(node, i, "an operand") for i in range(len(node.args))]
    if not xs:
        raise Unsupported(f"{node.op.value} of nothing")
    for x in xs:
        if not np.can_cast(aval_of_node(x).dtype, dt, "safe"):
            raise Unsupported(f"{node.op.value} of {x.dtype} into {dt}")
    ranks = {len(ranked_shape(x)) for x in xs}
    if len(ranks) != 1:
        raise Unsupported(f"{node.op.value} of different ranks")
    return xs, dt


def _check_concatenate(node: Node) -> None:
    only_params(node, {"axis"})
    xs, _ = _joined(node)
    rank = len(ranked_shape(xs[0]))
    axis = node.attrs.get("axis", 0)
    if axis is not None:
        if rank == 0:
            raise Unsupported("concatenate of 0-d values")
        checked_axis(axis, rank, "concatenate")


def _emit_concatenate(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    xs, dt = _joined(node)
    names = [a.name for a in args]
    axis = node.attrs.get("axis", 0)
    if axis is None:  # the arrays flattened in C order, one after the other
        names = [f"{n}.ravel()" for n in names]
        rank, k = 1, 0
    else:
        rank = len(ranked_shape(xs[0]))
        k = int(axis) % rank
        first = names[0]
        for n in names[1:]:  # NumPy's ValueError: the other dimensions must agree
            for d in range(rank):
                if d != k:
                    w.signal(out, f"{n}.shape[{d}] != {first}.shape[{d}]")
    parts = []
    for n in names:
        v = w.fresh("c")
        out.line(f"{v} = {n}")
        parts.append(v)
    total = " + ".join(f"{v}.shape[{k}]" for v in parts)
    dims = [f"{parts[0]}.shape[{d}]" if d != k else f"({total})" for d in range(rank)]
    alloc_result(w, node, dims, ctor(dt), out, t)
    off = "0"
    for v in parts:
        end = w.fresh("e")
        out.line(f"{end} = {off} + {v}.shape[{k}]")
        out.line(f"{t}[{index_at_axis(rank, k, f'{off}:{end}')}] = {v}")
        off = end
    return "fresh"


def _check_stack(node: Node) -> None:
    only_params(node, {"axis"})
    xs, _ = _joined(node)
    checked_axis(node.attrs.get("axis", 0), len(ranked_shape(xs[0])) + 1, "stack")


def _emit_stack(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    xs, dt = _joined(node)
    rank = len(ranked_shape(xs[0]))
    k = int(node.attrs.get("axis", 0)) % (rank + 1)
    first = args[0].name
    for a in args[1:]:  # NumPy's ValueError: all input arrays must have the same shape
        for d in range(rank):
            w.signal(out, f"{a.name}.shape[{d}] != {first}.shape[{d}]")
    dims = [f"{first}.shape[{d}]" for d in range(rank)]
    dims.insert(k, str(len(args)))
    alloc_result(w, node, dims, ctor(dt), out, t)
    for i, a in enumerate(args):
        out.line(f"{t}[{index_at_axis(rank + 1, k, str(i))}] = {a.name}")
    return "fresh"


def _expand_axes(node: Node) -> list[int]:
    x = array_arg(node, 0, "a value")
    axis = node.attrs["axis"]
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out_rank = len(ranked_shape(x)) + len(axes)
    if len(ranked_shape(x)) == 0:
        raise Unsupported("expand_dims of a 0-d value")
    norm = sorted(checked_axis(a, out_rank, "expand_dims") for a in axes)
    if len(set(norm)) != len(norm):
        raise Unsupported("expand_dims with a repeated axis")
    return norm


def _emit_expand_dims(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    axes = _expand_axes(node)
    rank = len(node.args[0].aval.shape) + len(axes)
    index = ", ".join("None" if a in axes else ":" for a in range(rank))
    out.line(f"{t} = {args[0].name}[{index}]")
    return "view"


def _flip_axes(node: Node) -> set[int]:
    x = array_arg(node, 0, "a value")
    rank = len(ranked_shape(x))
    if rank == 0:
        raise Unsupported("flip of a 0-d value")
    axis = node.attrs.get("axis")
    if axis is None:
        return set(range(rank))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    return {checked_axis(a, rank, "flip") for a in axes}


def _emit_flip(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    axes = _flip_axes(node)
    rank = len(node.args[0].aval.shape)
    index = ", ".join("::-1" if a in axes else ":" for a in range(rank))
    out.line(f"{t} = {args[0].name}[{index}]")
    return "view"


RULES[OpKind.CONCATENATE] = Rule(_check_concatenate, _emit_concatenate)
RULES[OpKind.STACK] = Rule(_check_stack, _emit_stack)
RULES[OpKind.FLIP] = Rule(lambda n: _flip_axes(n) and None, _emit_flip)


def _check_expand_dims(node: Node) -> None:
    if not isinstance(node.attrs["axis"], int):
        _expand_axes(node)


def _emit_any_expand_dims(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    if not isinstance(node.attrs["axis"], int):
        return _emit_expand_dims(w, node, args, t, out)
    out.line(f"{t} = np.expand_dims({args[0].name}, {int(node.attrs['axis'])})")
    return _view_kind(node)


RULES[OpKind.EXPAND_DIMS] = Rule(_check_expand_dims, _emit_any_expand_dims)


# reshape / transpose / broadcast_to / copy: Numba's own array methods


def _view_kind(node: Node) -> str:
    """What a view op's result is: a 0-d result is a Numba scalar, the rest views."""
    aval = node.aval
    return "scalar" if aval is not None and aval.shape == () else "view"


def _no_check(node: Node) -> None:
    """Numba's method takes every operand NumPy's does here (shapes checked at tracing)."""


def _emit_reshape(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    shape = tuple(node.attrs["shape"])
    x = args[0].name
    if shape == ():
        out.line(f"{t} = np.ascontiguousarray({x}).ravel()[0]")
        return "scalar"
    out.line(f"{t} = np.ascontiguousarray({x}).reshape({shape!r})")
    return "unit_view"  # a reshape of a contiguous array: its rows are unit-stride


def _emit_transpose(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    axes = node.attrs.get("axes")
    axes = tuple(range(len(node.args[0].aval.shape)))[::-1] if axes is None else tuple(axes)
    out.line(f"{t} = np.transpose({args[0].name}, {axes!r})")
    return _view_kind(node)


def _emit_broadcast_to(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    shape = tuple(node.attrs["shape"])
    out.line(f"{t} = np.broadcast_to({args[0].name}, {shape!r})")
    return _view_kind(node)


def _emit_copy(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    x = args[0]
    if x.scalar:
        out.line(f"{t} = {x.name}")
        return "scalar"
    out.line(f"{t} = {x.name}.copy()")
    return "fresh"


RULES[OpKind.RESHAPE] = Rule(_no_check, _emit_reshape)
RULES[OpKind.TRANSPOSE] = Rule(_no_check, _emit_transpose)
RULES[OpKind.BROADCAST_TO] = Rule(_no_check, _emit_broadcast_to)
RULES[OpKind.COPY] = Rule(_no_check, _emit_copy)


# ---------------------------------------------------------------------------------------------
# pad (constant and edge)
# ---------------------------------------------------------------------------------------------


def _check_pad(node: Node) -> tuple[Node, list[tuple[int, int]], str | None]:
    """The padded array, its (before, after) widths per axis and the constant's source
    (None for ``mode='edge'``)."""
    only_params(node, {"pad_width", "mode", "constant_values"})
    x = array_arg(node, 0, "an array")
    dt = np.dtype(x.dtype)
    if np.dtype(node.dtype) != dt:
        raise Unsupported("pad changing the dtype")
    rank = len(ranked_shape(x))
    if rank == 0:
        raise Unsupported("pad of a 0-d value")
    try:
        widths = np.broadcast_to(
            np.asarray(node.attrs["pad_width"], dtype=np.intp).reshape(-1, 2)
            if np.ndim(node.attrs["pad_width"])
            else np.asarray(node.attrs["pad_width"]),
            (rank, 2),
        )
    except (TypeError, ValueError):
        raise Unsupported(f"pad_width {node.attrs['pad_width']!r}") from None
    pairs = [(int(a), int(b)) for a, b in widths]
    if any(a < 0 or b < 0 for a, b in pairs):
        raise Unsupported("negative pad widths")
    mode = node.attrs.get("mode", "constant")
    if mode == "edge":
        if node.attrs.get("constant_values") is not None:
            raise Unsupported("pad mode 'edge' with constant_values")
        return x, pairs, None
    if mode != "constant":
        raise Unsupported(f"pad mode {mode!r} (constant and edge only)")
    cv = node.attrs.get("constant_values", 0)
    if np.ndim(cv) != 0:
        raise Unsupported("pad with per-axis constant_values")
    try:
        with np.errstate(all="raise"):
            value = np.pad(np.zeros(1, dt), 1, constant_values=cv)[0]  # NumPy's own cast
    except Exception:  # an int constant beyond the dtype, a NaN into an int...
        raise Unsupported(f"pad constant {cv!r} into {dt}") from None
    return x, pairs, const_source(value, dt)


def _emit_pad(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """The array copied into the middle of the result; ``constant``: the rest filled with
    NumPy's cast of the constant; ``edge``: axis by axis, each pad copies the hyperplane at
    the edge (corners then hold the nearest edge value, as in NumPy)."""
    x_node, pairs, const = _check_pad(node)
    rank = len(pairs)
    x = args[0].name
    dts = ctor(np.dtype(x_node.dtype))
    dims = [f"{x}.shape[{d}] + {a + b}" for d, (a, b) in enumerate(pairs)]
    alloc_result(w, node, dims, dts, out, t)
    if const is not None:
        out.line(f"{t}[...] = {const}")
    else:  # NumPy: "can't extend empty axis" where an empty axis is padded
        for d, (a, b) in enumerate(pairs):
            if a or b:
                w.signal(out, f"{x}.shape[{d}] == 0")
    middle = ", ".join(f"{a}:{a} + {x}.shape[{d}]" for d, (a, b) in enumerate(pairs))
    out.line(f"{t}[{middle}] = {x}")
    if const is None:
        for d, (a, b) in enumerate(pairs):
            size = f"{x}.shape[{d}]"
            if a:
                q = w.fresh("q")
                to, edge = index_at_axis(rank, d, q), index_at_axis(rank, d, str(a))
                with out.block(f"for {q} in range({a}):") as body:
                    body.line(f"{t}[{to}] = {t}[{edge}]")
            if b:
                q = w.fresh("q")
                with out.block(f"for {q} in range({b}):") as body:
                    body.line(
                        f"{t}[{index_at_axis(rank, d, f'{a} + {size} + {q}')}] = "
                        f"{t}[{index_at_axis(rank, d, f'{a} + {size} - 1')}]"
                    )
    return "fresh"


RULES[OpKind.PAD] = Rule(lambda n: _check_pad(n) and None, _emit_pad)


# ---------------------------------------------------------------------------------------------
# nonzero / argwhere / squeeze / ufunc.accumulate
# ---------------------------------------------------------------------------------------------


def _check_nonzero(node: Node) -> int:
    only_params(node, set())
    x = array_arg(node, 0, "an array")
    rank = len(ranked_shape(x))
    if rank == 0:
        raise Unsupported(f"{node.op.value} of a 0-d value")
    return rank


def _emit_nonzero_op(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """``np.nonzero``: the flat positions of the true (non-zero: NaN included, ``-0.0`` not)
    elements in C order, unravelled per axis; ``np.argwhere``: the same, one row each."""
    rank = _check_nonzero(node)
    m = w.fresh("m")
    out.line(f"{m} = np.ascontiguousarray({args[0].name})")
    axes = emit_nonzero(w, m, rank, out)
    if node.op is OpKind.NONZERO:
        out.line(f"{t} = {shape_tuple(axes)}")
        return "fresh"
    out.line(f"{t} = np.empty(({axes[0]}.shape[0], {rank}), np.int64)")
    for q, a in enumerate(axes):
        out.line(f"{t}[:, {q}] = {a}")
    return "fresh"


RULES[OpKind.NONZERO] = Rule(lambda n: _check_nonzero(n) and None, _emit_nonzero_op)
RULES[OpKind.ARGWHERE] = Rule(lambda n: _check_nonzero(n) and None, _emit_nonzero_op)


def _check_squeeze(node: Node) -> list[int]:
    """The axes ``squeeze`` removes: the given ones, or (``axis=None``) those of static
    size 1; an axis of unknown size the graph keeps must not be 1 at run time (checked)."""
    only_params(node, {"axis"})
    x = array_arg(node, 0, "an array")
    shape = ranked_shape(x)
    axis = node.attrs.get("axis")
    if axis is None:
        return [d for d, n in enumerate(shape) if n == 1]
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    norm = sorted({checked_axis(a, len(shape), "squeeze") for a in axes})
    if len(norm) != len(axes):
        raise Unsupported("squeeze with a repeated axis")
    return norm


def _emit_squeeze(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """A view with index 0 at each squeezed axis. NumPy's ValueError (a given axis not of
    size 1), or an unknown size the graph keeps that is 1 (NumPy would drop it), signal."""
    axes = _check_squeeze(node)
    shape = node.args[0].aval.shape
    x = args[0].name
    for d, n in enumerate(shape):
        if d in axes and n != 1:
            w.signal(out, f"{x}.shape[{d}] != 1")
        elif node.attrs.get("axis") is None and n is None:
            w.signal(out, f"{x}.shape[{d}] == 1")
    if len(axes) == len(shape):
        out.line(f"{t} = {x}[{', '.join('0' for _ in shape)}]")
        return "scalar"
    index = ", ".join("0" if d in axes else ":" for d in range(len(shape)))
    out.line(f"{t} = {x}[{index}]")
    return "view"


RULES[OpKind.SQUEEZE] = Rule(lambda n: _check_squeeze(n) and None, _emit_squeeze)


def _check_accumulate(node: Node) -> tuple[Node, np.dtype, int, np.ufunc]:
    only_params(node, {"axis", "ufunc"})
    ufunc = node.attrs["ufunc"]
    x = array_arg(node, 0, "a value")
    dt = result_dtype(node)
    if not isinstance(ufunc, np.ufunc) or ufunc.nin != 2 or ufunc.nout != 1:
        raise Unsupported(f"accumulate of {ufunc!r}")
    if np.dtype(x.dtype) != dt:
        raise Unsupported(f"{ufunc.__name__}.accumulate of {x.dtype} into {dt}")
    if find_loop(ufunc, (dt,) * 3) is None:
        raise Unsupported(f"no NumPy {ufunc.__name__} loop for {dt}")
    rank = len(ranked_shape(x))
    if rank == 0:
        raise Unsupported("accumulate of a 0-d value")
    return x, dt, checked_axis(node.attrs.get("axis", 0), rank, "accumulate"), ufunc


def _emit_accumulate(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """``ufunc.accumulate`` as :func:`_emit_scan` computes ``cumsum``: NumPy's own loop of
    the ufunc for the dtype, called with its output one step behind its first input."""
    x_node, dt, axis, ufunc = _check_accumulate(node)
    rank = len(ranked_shape(x_node))
    dts = ctor(dt)
    x = w.fresh("x")
    out.line(f"{x} = np.ascontiguousarray({args[0].name})")
    alloc_result(w, node, [f"{x}.shape[{d}]" for d in range(rank)], dts, out, t)
    outer, n, inner = lanes_along(x, rank, axis)
    shape3 = f"({outer}, {n}, {inner})"
    w.helpers["_loop3"] = LOOP3
    w.helpers["_accumulate"] = ACCUMULATE
    out.line(
        f"_accumulate({x}.reshape({shape3}), {t}.reshape({shape3}), "
        f"{ufunc_loop(w, ufunc, (dt,) * 3)}, {loop_scratch(w)})"
    )
    return "fresh"


RULES[OpKind.UFUNC_ACCUMULATE] = Rule(lambda n: _check_accumulate(n) and None, _emit_accumulate)
