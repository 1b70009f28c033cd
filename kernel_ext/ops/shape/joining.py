"""Joining and padding: concatenate, stack, pad, insert and diagflat.

Each op's NumPy entry point, abstract evaluation, reference lowering, VJP, whole-graph rule
and ONNX rule, in that order (see :mod:`kernel_ext.ops`). ``insert`` has no ONNX form (its
reason stays in ``onnx.rules.refusals``); ``np.diagflat`` stays in ``trace.numpy_api.shape``,
where ``np.diag`` (a composition) calls it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ...autodiff.array_rules import static_shape, sum_into
from ...autodiff.decompositions import composed
from ...autodiff.rules import NOTES, Cotangent, Primal
from ...autodiff.rules import VJP as GRADIENT
from ...backends.emit.literals import Unsupported, const_source, ctor
from ...backends.emit.source import Source
from ...backends.static_shapes import aval_of_node, ranked_shape
from ...backends.whole_graph_ops.common import RULES as WHOLE_GRAPH
from ...backends.whole_graph_ops.common import (
    Rule,
    Writer,
    alloc_result,
    array_arg,
    checked_axis,
    index_at_axis,
    only_params,
    result_dtype,
)
from ...ir import AbstractValue, Node, OpKind
from ...ir.abstract import ABSTRACT_EVAL, Shape, normalize_axis
from ...ir.abstract.core import known_rank, result_type, shape_of
from ...ir.interpreter import LOWER
from ...ir.params import DiagflatParams, InsertParams, JoinParams, PadParams
from ...onnx.builder import GraphBuilder
from ...onnx.refusal import refuse
from ...onnx.rules.common import ANY_VALUE, handled_params, out_dtype, rank, wide
from ...onnx.rules.common import RULES as ONNX
from ...trace import Tensor
from ...trace.context import bind
from ...trace.numpy_api.common import declare, implements, is_traced, static_attr
from ...trace.numpy_api.shape import concatenate_attrs
from ...trace.opaque import numpy_call
from ...trace.signatures import ALL
from .views import numpy_copy

K = OpKind


def _add_dims(*dims: int | None) -> int | None:
    return None if any(d is None for d in dims) else sum(dims)  # type: ignore[arg-type]


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


# --- concatenate ---


@implements(np.concatenate)
def _numpy_concatenate(arrays: Any, axis: Any = 0, *, dtype: Any = None) -> Any:
    return bind(OpKind.CONCATENATE, tuple(arrays), concatenate_attrs(axis, dtype))


@ABSTRACT_EVAL.register(K.CONCATENATE)
def _concatenate(params: JoinParams, *xs: AbstractValue) -> AbstractValue:
    dtype = result_type(*[np.empty(0, x.dtype) for x in xs]) if xs else np.dtype(float)
    if params.dtype is not None:  # (given only when not None: concatenate_attrs)
        dtype = np.dtype(params.dtype)
    axis = params.axis
    if any(x.shape is None for x in xs):
        return AbstractValue(None, dtype)
    if axis is None:
        sizes = [x.size for x in xs]
        return AbstractValue((None if None in sizes else sum(cast("list[int]", sizes)),), dtype)
    shapes = cast("list[Shape]", [x.shape for x in xs])  # every one known (checked above)
    ndim = len(shapes[0])
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    if any(len(s) != ndim for s in shapes):
        raise ValueError(
            "all the input array dimensions except for the concatenation axis must "
            "match exactly, but the arrays have different numbers of dimensions"
        )
    ax = normalize_axis(axis, ndim)
    out: list[int | None] = []
    for i in range(ndim):
        dims = [s[i] for s in shapes]
        if i == ax:
            out.append(None if None in dims else sum(cast("list[int]", dims)))
        else:
            known = {d for d in dims if d is not None}
            if len(known) > 1:
                raise ValueError(
                    "all the input array dimensions except for the concatenation "
                    f"axis must match exactly, but along dimension {i} they differ"
                )
            out.append(known.pop() if known else None)
    return AbstractValue(tuple(out), dtype)


@LOWER.register(K.CONCATENATE)
def _lower_concatenate(node: Node) -> Callable[..., Any]:
    kw = node.params.kwargs()
    return lambda *xs: np.concatenate(xs, **kw)


@GRADIENT.register(K.CONCATENATE)
def _concatenate_vjp(p: Primal, g: Any) -> list[Cotangent]:
    axis = cast("JoinParams", p.params).axis
    flat = axis is None
    gg = np.reshape(g, (-1,)) if flat else g
    ax = 0 if flat else axis % len(g.shape)
    cts: list[Cotangent] = []
    start = 0
    for x in p.args:
        n = (
            (x.size if flat else cast("tuple[Any, ...]", x.shape)[ax])
            if isinstance(x, Tensor)
            else np.size(x)
        )
        if n is None:
            raise NotImplementedError(
                "the gradient of concatenate needs the static sizes of its operands along the axis"
            )

        def part(x: Any = x, lo: int = start, hi: int = start + n) -> Any:
            piece = gg[(slice(None),) * ax + (slice(lo, hi),)]
            return np.reshape(piece, x.shape) if flat else piece

        cts.append(part if isinstance(x, Tensor) else None)
        start += n
    return cts


NOTES.add(K.CONCATENATE, "static sizes along the axis")


def _check_concatenate(node: Node) -> None:
    only_params(node, {"axis"})
    xs, _ = _joined(node)
    rank = len(ranked_shape(xs[0]))
    axis = cast("JoinParams", node.params).axis
    if axis is not None:
        if rank == 0:
            raise Unsupported("concatenate of 0-d values")
        checked_axis(axis, rank, "concatenate")


def _emit_concatenate(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    xs, dt = _joined(node)
    names = [a.name for a in args]
    axis = cast("JoinParams", node.params).axis
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
        v = w.fresh("part")  # (``c<k>`` names the function's constant arguments)
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


WHOLE_GRAPH.add(K.CONCATENATE, Rule(_check_concatenate, _emit_concatenate))


@ONNX.register(K.CONCATENATE)
def concatenate(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, axis=ANY_VALUE, dtype=ANY_VALUE, casting=ANY_VALUE)
    out = out_dtype(node)
    names = [b.operand(a, out) for a in node.args]
    axis = cast("JoinParams", node.params).axis
    if axis is None:
        names, axis = [b.one("Reshape", [n, b.ints([-1])]) for n in names], 0
    return [b.one("Concat", names, axis=int(axis) % rank(node))]


# --- stack ---


@implements(np.stack)
def _numpy_stack(arrays: Any, axis: int = 0) -> Any:
    return bind(OpKind.STACK, tuple(arrays), {"axis": int(axis)})


@ABSTRACT_EVAL.register(K.STACK)
def _stack(params: JoinParams, *xs: AbstractValue) -> AbstractValue:
    dtype = result_type(*[np.empty(0, x.dtype) for x in xs])
    if any(x.shape is None for x in xs):
        return AbstractValue(None, dtype)
    # every shape is known here (checked above)
    shapes = cast("set[Shape]", {x.shape for x in xs})
    merged = cast("Shape", xs[0].shape)
    if len(shapes) > 1:
        if len({len(s) for s in shapes}) > 1:
            raise ValueError("all input arrays must have the same shape")
        merged = tuple(
            (
                lambda ds: (
                    None
                    if None in ds and len(ds - {None}) <= 1
                    else (ds.pop() if len(ds) == 1 else _raise_stack())
                )
            )({s[i] for s in shapes})
            for i in range(len(merged))
        )
    axis = normalize_axis(params.axis, len(merged) + 1)
    out = list(merged)
    out.insert(axis, len(xs))
    return AbstractValue(tuple(out), dtype)


def _raise_stack() -> None:
    raise ValueError("all input arrays must have the same shape")


@LOWER.register(K.STACK)
def _lower_stack(node: Node) -> Callable[..., Any]:
    axis = cast("JoinParams", node.params).axis
    return lambda *xs: np.stack(xs, axis=axis)


@GRADIENT.register(K.STACK)
def _stack_vjp(p: Primal, g: Any) -> list[Cotangent]:
    axis = cast("JoinParams", p.params).axis % len(g.shape)
    return [
        (lambda i=i: g[(slice(None),) * axis + (i,)]) if isinstance(x, Tensor) else None
        for i, x in enumerate(p.args)
    ]


def _check_stack(node: Node) -> None:
    only_params(node, {"axis"})
    xs, _ = _joined(node)
    checked_axis(cast("JoinParams", node.params).axis, len(ranked_shape(xs[0])) + 1, "stack")


def _emit_stack(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
    xs, dt = _joined(node)
    rank = len(ranked_shape(xs[0]))
    k = int(cast("JoinParams", node.params).axis) % (rank + 1)
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


WHOLE_GRAPH.add(K.STACK, Rule(_check_stack, _emit_stack))


@ONNX.register(K.STACK)
def stack(b: GraphBuilder, node: Node) -> list[str]:
    handled_params(node, axis=ANY_VALUE, dtype=ANY_VALUE, casting=ANY_VALUE)
    out = out_dtype(node)
    axis = int(cast("JoinParams", node.params).axis) % rank(node)
    names = [b.one("Unsqueeze", [b.operand(a, out), b.ints([axis])]) for a in node.args]
    return [b.one("Concat", names, axis=axis)]


# --- pad ---


@implements(np.pad)
@declare.parameters("array", "pad_width", "mode", ALL)
def _numpy_pad(array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> Any:
    if callable(mode) or is_traced(pad_width) or is_traced(kwargs) or array.shape is None:
        return numpy_call(np.pad, (array, pad_width), {"mode": mode, **kwargs})
    widths = np.asarray(pad_width)
    if widths.dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    pairs = np.broadcast_to(widths, (array.ndim, 2))
    if (pairs < 0).any():
        raise ValueError("index can't contain negative values")
    # NumPy's own check of the mode and its keywords, on a 1-element array padded by 0
    np.pad(np.zeros((1,) * array.ndim, array.dtype), 0, mode, **kwargs)
    if array.ndim == 0:
        return numpy_copy(array)  # no axis to pad: NumPy returns a copy
    attrs = {"pad_width": static_attr(pairs), "mode": mode}
    attrs.update((k, static_attr(v)) for k, v in kwargs.items())
    return bind(OpKind.PAD, (array,), attrs)


@ABSTRACT_EVAL.register(K.PAD)
def _pad(params: PadParams, x: AbstractValue) -> AbstractValue:
    shape = known_rank(x, "pad")
    widths, mode = params.pad_width, params.mode
    for axis, (d, (before, after)) in enumerate(zip(shape, widths)):
        if d == 0 and (before or after) and mode not in ("constant", "empty"):
            raise ValueError(
                f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'"
            )
    return AbstractValue(tuple(_add_dims(d, b, a) for d, (b, a) in zip(shape, widths)), x.dtype)


@LOWER.register(K.PAD)
def _lower_pad(node: Node) -> Callable[..., Any]:
    params = cast("PadParams", node.params)
    kw = params.kwargs("pad_width")
    # one (before, after) pair per axis; an int array even for a 0-d input (no pairs)
    widths = np.asarray(params.pad_width, dtype=np.intp).reshape(-1, 2)
    return lambda x: np.pad(x, widths, **kw)


_COPY_MODES = ("edge", "wrap", "reflect", "symmetric")


def _axis_pairs(value: Any, ndim: int) -> np.ndarray:
    """A pad option (``stat_length``, ``end_values``, ...) as one (before, after) pair per axis,
    as ``np.pad`` reads it."""
    return np.broadcast_to(np.asarray(value, dtype=object), (ndim, 2))


@GRADIENT.register(K.PAD)
def _pad_vjp(p: Primal, g: Any) -> list[Cotangent]:
    """Every mode. ``constant``: the middle of ``g``. The copying modes (``edge``, ``wrap``,
    ``reflect``/``symmetric`` even): each element gets the sum of the output positions that
    copy it (the pad of an iota array names them; a bincount sums). The other linear modes
    (``linear_ramp``, ``mean``, odd reflections): NumPy pads one axis after the other with a
    fixed linear map along that axis, so the cotangent applies each map's transpose (found by
    padding an identity matrix). ``maximum``/``minimum``/``median``: by composition (ties: the
    first occurrence; median: the middle element(s) of a stable sort)."""
    x = p.args[0]
    params = cast("PadParams", p.params)
    widths = [tuple(w) for w in params.pad_width]
    mode: Any = params.mode  # (np.pad's stubs name each mode as a Literal)
    options = params.kwargs("pad_width", "mode")
    if mode in ("constant", "empty"):
        return [
            lambda: g[tuple(slice(before, -after if after else None) for before, after in widths)]
        ]
    shape = x.shape
    if None in shape:
        raise NotImplementedError(f"the gradient of np.pad(mode={mode!r}) needs static shapes")
    odd = options.get("reflect_type", "even") == "odd"
    if mode in _COPY_MODES and not odd:

        def gather() -> Any:
            size = math.prod(shape)
            iota = np.pad(np.arange(size).reshape(shape), widths, mode)
            sums = np.bincount(
                np.reshape(iota, (-1,)), weights=np.reshape(g, (-1,)), minlength=size
            )
            return np.reshape(sums, shape).astype(g.dtype)

        return [gather]
    if mode in ("maximum", "minimum", "median"):
        return composed(
            p, g, lambda a: _pad_by_statistic(a, widths, mode, options.get("stat_length"))
        )

    def linear() -> Any:
        ct = g
        ndim = len(shape)
        for axis in range(ndim):
            n = shape[axis]
            step = (widths[axis], (0, 0))
            kw: dict[str, Any] = {}
            for key, value in options.items():
                if key == "reflect_type" or value is None:
                    kw[key] = value
                else:  # this axis's pair; any valid pair for the unpadded second axis
                    kw[key] = (
                        tuple(_axis_pairs(value, ndim)[axis]),
                        (1, 1) if key == "stat_length" else (0, 0),
                    )
            w = np.pad(np.eye(n), step, mode, **kw) - np.pad(np.zeros((n, n)), step, mode, **kw)
            moved = np.moveaxis(ct, axis, -1)
            ct = np.moveaxis(np.matmul(moved, w.astype(g.dtype)), -1, axis)
        return ct

    return [linear]


def _pad_by_statistic(a: Any, widths: list[Any], mode: str, stat_length: Any) -> Any:
    """``np.pad(a, widths, mode)`` for ``maximum``/``minimum``/``median`` as NumPy computes it:
    axis after axis, each side filled with the statistic of the ``stat_length`` elements
    nearest to it (all of them by default), the axes padded before included."""
    stat = cast(
        Callable[..., Any], {"maximum": np.max, "minimum": np.min, "median": np.median}[mode]
    )
    lengths = _axis_pairs(stat_length, a.ndim) if stat_length is not None else None
    for axis, (before, after) in enumerate(widths):
        n = a.shape[axis]
        parts: list[Any] = []
        for side, width in ((0, before), (1, after)):
            if not width:
                parts.append(None)
                continue
            length = (
                n
                if lengths is None or lengths[axis][side] is None
                else min(int(lengths[axis][side]), n)
            )
            window = slice(0, length) if side == 0 else slice(n - length, n)
            chunk = a[(slice(None),) * axis + (window,)]
            value = stat(chunk, axis=axis, keepdims=True)
            target = list(a.shape)
            target[axis] = width
            parts.append(np.broadcast_to(value, tuple(target)))
        pieces = [q for q in (parts[0], a, parts[1]) if q is not None]
        a = np.concatenate(pieces, axis=axis) if len(pieces) > 1 else a
    return a


NOTES.add(
    K.PAD,
    "every mode: copies summed back, linear modes by their transposes, "
    "maximum/minimum/median by composition",
)


def _check_pad(node: Node) -> tuple[Node, list[tuple[int, int]], str | None]:
    """The padded array, its (before, after) widths per axis and the constant's source
    (None for ``mode='edge'``)."""
    only_params(node, {"pad_width", "mode", "constant_values"})
    params = cast("PadParams", node.params)
    x = array_arg(node, 0, "an array")
    dt = np.dtype(x.dtype)
    if np.dtype(node.dtype) != dt:
        raise Unsupported("pad changing the dtype")
    rank = len(ranked_shape(x))
    if rank == 0:
        raise Unsupported("pad of a 0-d value")
    try:
        widths = np.broadcast_to(
            np.asarray(params.pad_width, dtype=np.intp).reshape(-1, 2)
            if np.ndim(params.pad_width)
            else np.asarray(params.pad_width),
            (rank, 2),
        )
    except (TypeError, ValueError):
        raise Unsupported(f"pad_width {params.pad_width!r}") from None
    pairs = [(int(a), int(b)) for a, b in widths]
    if any(a < 0 or b < 0 for a, b in pairs):
        raise Unsupported("negative pad widths")
    mode = params.mode
    if mode == "edge":
        if "constant_values" in params:  # (given at all: NumPy refuses it for 'edge')
            raise Unsupported("pad mode 'edge' with constant_values")
        return x, pairs, None
    if mode != "constant":
        raise Unsupported(f"pad mode {mode!r} (constant and edge only)")
    # 0, NumPy's default, where not given (the field reads MISSING then)
    cv = params.constant_values if "constant_values" in params else 0
    if np.ndim(cv) != 0:
        raise Unsupported("pad with per-axis constant_values")
    try:
        with np.errstate(all="raise"):
            value = np.pad(np.zeros(1, dt), 1, constant_values=cv)[0]  # NumPy's own cast
    except Exception:  # an int constant beyond the dtype, a NaN into an int...
        raise Unsupported(f"pad constant {cv!r} into {dt}") from None
    return x, pairs, const_source(value, dt)


def _emit_pad(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
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


WHOLE_GRAPH.add(K.PAD, Rule(lambda n: _check_pad(n) and None, _emit_pad))


@ONNX.register(K.PAD)
def pad(b: GraphBuilder, node: Node) -> list[str]:
    """np.pad in the modes ONNX's Pad shares with NumPy: constant (one value), edge,
    reflect (without repeating the edge, as NumPy's), wrap (opset 19)."""
    handled_params(node, pad_width=ANY_VALUE, mode=ANY_VALUE, constant_values=ANY_VALUE)
    x = node.args[0]
    params = cast("PadParams", node.params)
    mode = params.mode
    widths = np.asarray(params.pad_width, dtype=np.int64).reshape(-1, 2)
    modes = {"constant": "constant", "edge": "edge", "reflect": "reflect"}
    if b.model.opset >= 19:
        modes["wrap"] = "wrap"
    if mode not in modes:
        raise refuse(
            node,
            f"np.pad mode {mode!r} has no ONNX Pad mode"
            + (" before opset 19" if mode == "wrap" else ""),
            "pad with mode 'constant', 'edge' or 'reflect' (or 'wrap' with opset=19 or later)",
        )
    if mode in ("reflect", "wrap") and any(
        d is None or w.max() >= d for d, w in zip(x.aval.shape, widths)
    ):
        raise refuse(
            node,
            f"a {mode} pad wider than its axis (or of a None dim) repeats in NumPy",
            "pad by less than the axis length",
        )
    inputs = [b.value(x), b.ints(list(widths[:, 0]) + list(widths[:, 1]))]
    if mode == "constant":
        # 0, NumPy's default, where not given (the field reads MISSING then)
        value = np.asarray(params.constant_values if "constant_values" in params else 0)
        if value.size != 1 and np.unique(value).size != 1:
            raise refuse(node, "different constant_values per side", "pad once per value")
        inputs.append(b.const(value.reshape(-1)[0], x.dtype))
    return [b.one("Pad", inputs, mode=modes[mode])]


# --- insert ---
# No ONNX form (``onnx.rules.refusals``).


@implements(np.insert)
def _numpy_insert(arr: Any, obj: Any, values: Any, axis: Any = None) -> Any:
    if is_traced(obj):
        return numpy_call(np.insert, (arr, obj, values), {"axis": axis})
    if not isinstance(obj, slice):
        index = np.asarray(obj)
        if index.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or scalar")
        obj = index.item() if index.ndim == 0 else static_attr(index)
    return bind(
        OpKind.INSERT, (arr, values), {"obj": obj, "axis": None if axis is None else int(axis)}
    )


@ABSTRACT_EVAL.register(K.INSERT)
def _insert(params: InsertParams, arr: AbstractValue, values: Any) -> AbstractValue:
    """NumPy's ``insert``: one index (a scalar, or a one-element sequence or slice) inserts
    ``values`` as a block (its first or ``axis`` dim after padding it to ``arr``'s rank); more
    indices insert one slice each."""
    shape, axis, obj = known_rank(arr, "insert"), params.axis, params.obj
    if axis is None:
        shape, axis = (arr.size,), 0
    else:
        axis = normalize_axis(axis, len(shape))
    n = shape[axis]
    if isinstance(obj, slice):
        count = None if n is None else len(range(*obj.indices(n)))
    else:
        index = np.asarray(obj)
        count = int(np.count_nonzero(index)) if index.dtype == np.bool_ else index.size
    if count == 1 or (count is None and isinstance(obj, slice)):
        vshape = shape_of(values)
        if vshape is None or count is None:
            numnew = None
        else:
            vshape = (1,) * (len(shape) - len(vshape)) + tuple(vshape)
            scalar = not isinstance(obj, (slice, tuple)) and np.ndim(obj) == 0
            numnew = vshape[0] if scalar else vshape[axis]
    else:
        numnew = count
    out = list(shape)
    out[axis] = _add_dims(n, numnew)
    return AbstractValue(tuple(out), arr.dtype)


@LOWER.register(K.INSERT)
def _lower_insert(node: Node) -> Callable[..., Any]:
    params = cast("InsertParams", node.params)
    obj, axis = params.obj, params.axis
    if isinstance(obj, tuple):
        obj = list(obj)  # a sequence of indices, as written (np.insert reads lists and arrays)
    return lambda arr, values: np.insert(arr, obj, values, axis=axis)


def _insert_positions(obj: Any, axis: Any, arr_iota: np.ndarray, values: Any) -> np.ndarray:
    obj = list(obj) if isinstance(obj, tuple) else obj
    return np.insert(arr_iota, obj, values, axis=axis)


@GRADIENT.register(K.INSERT)
def _insert_vjp(p: Primal, g: Any) -> list[Cotangent]:
    """Each output element comes from ``arr`` or from ``values`` (broadcast): NumPy's insert
    of iota arrays names its source."""
    arr, values = p.args
    params = cast("InsertParams", p.params)
    obj, axis = params.obj, params.axis
    ashape = static_shape(arr, "np.insert")
    vshape = static_shape(values, "np.insert")
    asize, vsize = math.prod(ashape), math.prod(vshape)

    def darr() -> Any:
        where = _insert_positions(obj, axis, np.arange(asize).reshape(ashape), np.full(vshape, -1))
        return sum_into(where, g, asize, ashape)

    def dvalues() -> Any:
        where = _insert_positions(obj, axis, np.full(ashape, -1), np.arange(vsize).reshape(vshape))
        return sum_into(where, g, vsize, vshape)

    return [
        darr if isinstance(arr, Tensor) else None,
        dvalues if isinstance(values, Tensor) else None,
    ]


NOTES.add(K.INSERT, "sources named by np.insert of iota arrays")


# --- diagflat ---


@ABSTRACT_EVAL.register(K.DIAGFLAT)
def _diagflat(params: DiagflatParams, v: AbstractValue) -> AbstractValue:
    n = _add_dims(v.size, abs(params.k))
    return AbstractValue((n, n), v.dtype)


@LOWER.register(K.DIAGFLAT)
def _lower_diagflat(node: Node) -> Callable[..., Any]:
    return functools.partial(np.diagflat, k=cast("DiagflatParams", node.params).k)


@GRADIENT.register(K.DIAGFLAT)
def _diagflat_vjp(p: Primal, g: Any) -> list[Cotangent]:
    v = p.args[0]
    shape = static_shape(v, "np.diagflat")
    offset = cast("DiagflatParams", p.params).k
    size = math.prod(shape)
    rows = np.arange(size) + max(-offset, 0)
    cols = np.arange(size) + max(offset, 0)
    return [lambda: np.reshape(g[rows, cols], shape)]


NOTES.add(K.DIAGFLAT, "a gather of the diagonal")


@ONNX.register(K.DIAGFLAT)
def diagflat(b: GraphBuilder, node: Node) -> list[str]:
    """np.diagflat(v, k): the flattened values on the k-th diagonal of a square of zeros (a
    select from an identity mask, so inf and NaN stay off the other entries)."""
    handled_params(node, k=ANY_VALUE)
    v = node.args[0]
    size = v.aval.size
    if size is None:
        raise refuse(
            node, "np.diagflat of a value with a None dimension", "give the input a static shape"
        )
    k = int(cast("DiagflatParams", node.params).k)
    work = np.dtype(np.int32) if v.dtype == np.bool_ else wide(v.dtype)
    flat = b.one("Reshape", [b.operand(v, work), b.ints([1, -1])])
    mask = b.const(np.eye(size, dtype=np.bool_))
    square = b.one("Where", [mask, flat, b.const(0, work)])
    if k:
        # k > 0: k zero columns before and rows after; k < 0: rows before, columns after
        top, left = (0, k) if k > 0 else (-k, 0)
        bottom, right = (k, 0) if k > 0 else (0, -k)
        square = b.one("Pad", [square, b.ints([top, left, bottom, right])], mode="constant")
    return [b.cast(square, work, out_dtype(node))]
