"""Whole-graph rules of advanced indexing (gathers and scatters), the TensorArray stacks of
loop gradients, ``ufunc.at`` and ``bincount``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ...ir import Node, OpKind
from ...ir.abstract import DynamicIndex
from ..emit.literals import Unsupported, const_source, ctor, literal_into, literal_value
from ..emit.source import Source
from ..static_shapes import aval_of_node, ranked_shape
from .common import (
    DTYPES,
    RULES,
    Rule,
    Writer,
    alloc_result,
    array_arg,
    emit_nonzero,
    only_params,
    shape_tuple,
)

# ---------------------------------------------------------------------------------------------
# Advanced indexing: getitem (a gather) and setitem (a scatter) with integer or bool arrays
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Part:
    """One component of an advanced index: ``kind`` is ``"slice"``, ``"int"`` (a Python or
    traced integer), ``"array"`` (an integer array, constant or traced) or ``"mask"`` (a bool
    array); ``value`` the slice, int, constant array or :class:`DynamicIndex`; ``dims`` how
    many axes of the indexed array it consumes (a mask: its rank)."""

    kind: str
    value: Any
    dims: int


def _dyn_arg(node: Node, c: DynamicIndex) -> Any:
    """The argument a traced index component names (a setitem's come after its value)."""
    return node.args[c.position + (1 if node.op is OpKind.SETITEM else 0)]


def _is_array_component(node: Node, c: Any) -> bool:
    if isinstance(c, np.ndarray):
        return True
    if isinstance(c, DynamicIndex):
        arg = _dyn_arg(node, c)
        return (
            isinstance(arg, Node)
            and arg.aval is not None
            and not isinstance(arg.aval, tuple)
            and arg.aval.shape != ()
        )
    return False


def _claims_fancy(node: Node) -> bool:
    """An index with an integer or bool array component (basic ones stay with whole_graph)."""
    return any(_is_array_component(node, c) for c in node.attrs["index"])


def _fancy_plan(node: Node) -> list[_Part]:
    """The index as one :class:`_Part` per component, ``...`` expanded to full slices and
    full slices added for the axes it leaves out; Unsupported for what is not covered
    (``None``, 0-d bool or array components, uint64 indices, traced slice bounds)."""
    x = array_arg(node, 0, "an array")
    rank = len(ranked_shape(x))
    parts: list[_Part | None] = []
    for c in node.attrs["index"]:
        if c is None:
            raise Unsupported("array indexing with a None (np.newaxis) component")
        if c is Ellipsis:
            if None in parts:
                raise Unsupported("an index with several Ellipsis")
            parts.append(None)
        elif isinstance(c, slice):
            if any(isinstance(p, DynamicIndex) for p in (c.start, c.stop, c.step)):
                raise Unsupported("slice with traced bounds")
            parts.append(_Part("slice", c, 1))
        elif isinstance(c, np.ndarray):
            if c.ndim == 0 or c.dtype == np.uint64 or c.dtype.kind not in "biu":
                raise Unsupported(f"index array of {c.dtype} and rank {c.ndim}")
            parts.append(_Part("mask", c, c.ndim) if c.dtype.kind == "b" else _Part("array", c, 1))
        elif isinstance(c, DynamicIndex):
            arg = _dyn_arg(node, c)
            shape = aval_of_node(arg).shape if isinstance(arg, Node) else None
            if shape is None:
                raise Unsupported("indexing with a value of unknown rank")
            dt = np.dtype(arg.dtype)
            if dt.kind == "b" and shape != ():
                parts.append(_Part("mask", c, len(shape)))
            elif dt.kind in "iu" and dt != np.uint64:
                parts.append(_Part("int" if shape == () else "array", c, 1))
            else:
                raise Unsupported(f"indexing with an array of {dt} and rank {len(shape)}")
        elif isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_)):
            parts.append(_Part("int", int(c), 1))
        else:
            raise Unsupported(f"index component {c!r}")
    used = sum(p.dims for p in parts if p is not None)
    if used > rank:
        raise Unsupported("too many indices")
    full = _Part("slice", slice(None), 1)
    if None in parts:
        at = parts.index(None)
        parts[at : at + 1] = [full] * (rank - used)
        return cast("list[_Part]", parts)  # (the one Ellipsis replaced)
    return cast("list[_Part]", parts) + [full] * (rank - used)  # (no Ellipsis: no None)


def _check_fancy_value(node: Node) -> None:
    """A setitem's value: cast into the array's dtype only where Numba's cast is NumPy's
    (``same_kind`` among bool, integer and float dtypes; a literal NumPy stores silently)."""
    dt = np.dtype(node.args[0].dtype)
    value = node.args[1]
    if isinstance(value, Node):
        if value.aval is None or isinstance(value.aval, tuple) or value.aval.shape is None:
            raise Unsupported("setitem of a value of unknown rank")
        vdt = np.dtype(value.dtype)
        if vdt not in DTYPES or not np.can_cast(vdt, dt, "same_kind"):
            raise Unsupported(f"setitem of {vdt} into {dt} (an unsafe cast)")
    else:
        literal_into(value, dt)


def _check_fancy(node: Node) -> None:
    parts = _fancy_plan(node)
    if node.op is OpKind.SETITEM:
        _check_fancy_value(node)
        value = node.args[1]
        if isinstance(value, Node) and aval_of_node(value).shape != ():
            rank = sum(p.dims for p in parts if p.kind == "slice")
            ranks = [
                p.value.ndim
                if isinstance(p.value, np.ndarray)
                else len(_dyn_arg(node, p.value).aval.shape)
                for p in parts
                if p.kind == "array"
            ] + [1 for p in parts if p.kind == "mask"]
            if len(ranked_shape(value)) > rank + max(ranks, default=0):
                raise Unsupported("setitem of a value of more dimensions than the region")


@dataclass
class _FancyIndex:
    """The generated names of an advanced index (:func:`_emit_fancy_index`)."""

    basic: str  # the slices as source, ":" on every advanced axis
    view: str  # x[basic]
    sources: list[tuple[str, int]]  # per advanced axis: its index variable and its rank
    slots: list[int]  # the axis of ``view`` each one indexes
    naxes: int  # the rank of ``view``
    dims: list[str]  # the region's shape (NumPy's getitem result)
    bdims: list[str]  # the broadcast shape of the index arrays
    bpos: int  # where those axes sit in ``dims``

    def element(self, s: int, bvars: list[str]) -> str:
        """Source of index array ``s``'s element at the broadcast position ``bvars``."""
        name, r = self.sources[s]
        if r == 0:
            return name
        at = ", ".join(
            f"{bvars[len(bvars) - r + i]} if {name}.shape[{i}] != 1 else 0" for i in range(r)
        )
        return f"{name}[{at}]"


def _emit_fancy_index(w: Writer, node: Node, args: list, x: str, out: Source) -> _FancyIndex:
    """The index checked before anything is read or written: every index of the broadcast
    index shape is wrapped and checked in a first pass, so NumPy's IndexErrors (an index out
    of range, index shapes that do not broadcast, a mask of the wrong shape) signal before
    an in-place write starts; as in NumPy, an empty broadcast shape checks nothing. The
    read or write pass (:func:`_fancy_loop`) then computes each index again: cheaper than
    storing them (a buffer of the index count costs its page faults)."""
    parts = _fancy_plan(node)
    shift = 1 if node.op is OpKind.SETITEM else 0
    basic = []
    for p in parts:
        if p.kind == "slice":
            c = p.value
            basic.append(
                f"{'' if c.start is None else c.start}:"
                f"{'' if c.stop is None else c.stop}"
                f"{'' if c.step is None else ':' + str(c.step)}"
            )
        else:
            basic += [":"] * p.dims
    v = w.fresh("v")
    out.line(f"{v} = {x}[{', '.join(basic)}]")
    sources: list[tuple[str, int]] = []
    slots: list[int] = []
    advanced: list[int] = []
    d = 0
    for i, p in enumerate(parts):
        if p.kind == "slice":
            d += 1
            continue
        advanced.append(i)
        if p.kind == "int":
            src = str(p.value) if isinstance(p.value, int) else args[p.value.position + shift].name
            sources.append((src, 0))
            slots.append(d)
            d += 1
            continue
        if isinstance(p.value, np.ndarray):
            name = f"c{len(w.constants)}"
            w.constants.append(
                np.ascontiguousarray(p.value, dtype=np.bool_ if p.kind == "mask" else np.int64)
            )
            rank = p.value.ndim
        else:
            name = args[p.value.position + shift].name
            rank = len(_dyn_arg(node, p.value).aval.shape)
        if p.kind == "array":
            sources.append((name, rank))
            slots.append(d)
            d += 1
            continue
        # a bool mask is its nonzero(): one index array per axis it spans (NumPy's rule)
        m = w.fresh("m")
        out.line(f"{m} = np.ascontiguousarray({name})")
        for q in range(p.dims):  # NumPy: "boolean index did not match indexed array"
            w.signal(out, f"{m}.shape[{q}] != {v}.shape[{d + q}]")
        for q, a in enumerate(emit_nonzero(w, m, p.dims, out)):
            sources.append((a, 1))
            slots.append(d + q)
        d += p.dims
    rb = max(r for _, r in sources)
    bdims = []
    for q in range(rb):  # the broadcast shape of the index arrays
        b = w.fresh("b")
        out.line(f"{b} = 1")
        for name, r in sources:
            i = q - (rb - r)
            if i >= 0:
                with out.block(f"if {name}.shape[{i}] != 1:") as body:
                    w.signal(body, f"{b} != 1 and {b} != {name}.shape[{i}]")
                    body.line(f"{b} = {name}.shape[{i}]")
        bdims.append(b)
    rest = [a for a in range(d) if a not in slots]
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1))
    bpos = sum(1 for p in parts[: advanced[0]] if p.kind == "slice") if adjacent else 0
    dims = [f"{v}.shape[{a}]" for a in rest]
    dims[bpos:bpos] = bdims
    fx = _FancyIndex(", ".join(basic), v, sources, slots, d, dims, bdims, bpos)
    inner, bvars = _broadcast_loops(w, bdims, out)
    for s in range(len(sources)):
        size = f"{v}.shape[{slots[s]}]"
        k = w.fresh("k")
        inner.line(f"{k} = np.int64({fx.element(s, bvars)})")
        w.signal(inner, f"{k} < -{size} or {k} >= {size}")
    return fx


def _broadcast_loops(w: Writer, bdims: list[str], out: Source) -> tuple[Source, list[str]]:
    """Nested ``for`` loops over the broadcast index shape (C order): the body and
    the loop variables."""
    bvars = []
    body = out
    for b in bdims:
        q = w.fresh("q")
        body.line(f"for {q} in range({b}):")
        body = body.nested()
        bvars.append(q)
    return body, bvars


def _fancy_loop(w: Writer, fx: _FancyIndex, out: Source) -> tuple[Source, list[str], list[str]]:
    """The loops of the read or write pass: the body, the loop variables and, per
    axis of ``fx.view``, ":" or its (checked, wrapped) index variable."""
    inner, bvars = _broadcast_loops(w, fx.bdims, out)
    picks = [":"] * fx.naxes
    for s, a in enumerate(fx.slots):
        k = w.fresh("k")
        inner.line(f"{k} = np.int64({fx.element(s, bvars)})")
        with inner.block(f"if {k} < 0:") as body:
            body.line(f"{k} += {fx.view}.shape[{a}]")
        picks[a] = k
    return inner, bvars, picks


def _emit_gather(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """``x[index]`` with advanced components, as NumPy reads it: the broadcast index shape
    walked in C order, one copy of the rest of ``x`` per index tuple."""
    fx = _emit_fancy_index(w, node, args, args[0].name, out)
    alloc_result(w, node, fx.dims, ctor(np.dtype(node.dtype)), out, t)
    inner, bvars, picks = _fancy_loop(w, fx, out)
    dst = [":"] * len(fx.dims)
    dst[fx.bpos : fx.bpos + len(bvars)] = bvars
    inner.line(f"{t}[{', '.join(dst)}] = {fx.view}[{', '.join(picks)}]")
    return "fresh"


class _Named:
    """A stand-in for a writer value: only its name is read here."""

    def __init__(self, name: str) -> None:
        self.name = name


def _emit_scatter(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """``x[index] = value`` with advanced components, as NumPy writes it: the value cast
    and broadcast to the region, written index tuple after index tuple in C order (a
    repeated index keeps the last write). In place where the in-place plan lets this write
    reuse ``x``'s buffer, else into a copy. Every check (index, value shape) runs first;
    index arrays and a value that share the buffer written in place are copied first
    (NumPy reads both before it writes)."""
    x = args[0]
    dt = np.dtype(node.args[0].dtype)
    dts = ctor(dt)
    inplace = node in w.plan.writes
    args = list(args)
    if inplace:
        for i in range(2, len(args)):
            a = args[i]
            if isinstance(node.args[i], Node) and not a.scalar and a.roots & x.roots:
                c = w.fresh("ix")
                out.line(f"{c} = {a.name}.copy()")
                args[i] = _Named(c)
    fx = _emit_fancy_index(w, node, args, x.name, out)
    value = node.args[1]
    rr = len(fx.dims)
    if not isinstance(value, Node):
        src = const_source(literal_into(value, dt), dt)
    elif args[1].scalar:
        src = args[1].name if np.dtype(value.dtype) == dt else f"{dts}({args[1].name})"
    else:
        val = args[1].name
        vr = len(ranked_shape(value))
        for k in range(1, vr + 1):  # NumPy's ValueError: the value must broadcast
            w.signal(
                out,
                f"{val}.shape[{vr - k}] != 1 and {val}.shape[{vr - k}] != {fx.dims[rr - k]}",
            )
        c = w.fresh("val")
        if np.dtype(value.dtype) != dt:
            out.line(f"{c} = {val}.astype({dts})")
        elif inplace and args[1].roots & x.roots:
            out.line(f"{c} = {val}.copy()")
        else:
            out.line(f"{c} = {val}")
        src = w.fresh("val")
        out.line(f"{src} = np.broadcast_to({c}, {shape_tuple(fx.dims)})")
    if inplace:
        out.line(f"{t} = {x.name}")
    else:
        dims = [f"{x.name}.shape[{d}]" for d in range(len(ranked_shape(node)))]
        alloc_result(w, node, dims, dts, out, t)
        out.line(f"{t}[...] = {x.name}")
    dv = w.fresh("v")
    out.line(f"{dv} = {t}[{fx.basic}]")
    inner, bvars, picks = _fancy_loop(w, fx, out)
    if isinstance(value, Node) and not args[1].scalar:
        at = [":"] * rr
        at[fx.bpos : fx.bpos + len(bvars)] = bvars
        src = f"{src}[{', '.join(at)}]"
    inner.line(f"{dv}[{', '.join(picks)}] = {src}")
    return "view" if inplace else "fresh"


RULES[OpKind.GETITEM] = Rule(_check_fancy, _emit_gather, _claims_fancy)
RULES[OpKind.SETITEM] = Rule(_check_fancy, _emit_scatter, _claims_fancy)


# ---------------------------------------------------------------------------------------------
# TensorArray stacks (loop gradients under jit_compile=True)
# ---------------------------------------------------------------------------------------------
# A loop's gradient stacks each iteration's state with ``tensor_array_write`` (the forward
# loop gains a count, starting at ``int64(0)``, and one stack per variable, starting as
# ``None``: ``autodiff/loops.py``); the reverse loop reads the rows back with ``getitem``.
# ``loop_literal`` gives such literal loop operands their Numba form (the empty stack: a
# 0-row array of the stack's rank, so every iteration carries one array type), and the rule
# below writes a row exactly as ``ir.interpreter.tensor_array_write`` does: rows allocated
# (zeros) at the first write, grown geometrically when dynamic, into the buffer itself where
# the in-place plan (``backends/inplace.py``) found it private and dead, else into a copy.
# A negative or out-of-range index and a row of another shape signal: the fused executor
# reruns the call and raises NumPy's error.


def loop_literal(value: Any, aval: Any) -> tuple[str, bool]:
    """The Numba source of a literal loop operand of abstract value ``aval`` (``None``: an
    empty stack) and whether it is a scalar; Unsupported for anything else."""
    dt = np.dtype(aval.dtype)
    if dt not in DTYPES or aval.shape is None:
        raise Unsupported(f"a loop operand {value!r} of {aval}")
    if value is None:
        if len(aval.shape) < 1:
            raise Unsupported("an empty stack of rank 0")
        return f"np.zeros({(0,) * len(aval.shape)!r}, {ctor(dt)})", False
    if aval.shape != () or not isinstance(value, (bool, int, float, np.number, np.bool_)):
        raise Unsupported(f"a loop operand {value!r}")
    return f"{ctor(dt)}({literal_value(value, dt)!r})", True


def _check_tensor_array_write(node: Node) -> None:
    only_params(node, {"dtype", "size", "dynamic_size"})
    buffer, index, value = node.args
    dt = np.dtype(node.attrs["dtype"])
    if dt not in DTYPES:
        raise Unsupported(f"a TensorArray of {dt}")
    if buffer is not None and (
        not isinstance(buffer, Node)
        or aval_of_node(buffer).shape is None
        or np.dtype(buffer.dtype) != dt
    ):
        raise Unsupported("tensor_array_write into a buffer that is not a stack")
    if isinstance(index, Node):
        if aval_of_node(index).shape != () or np.dtype(index.dtype).kind not in "iu":
            raise Unsupported("tensor_array_write at a non-integer index")
    elif not isinstance(index, (int, np.integer)) or isinstance(index, bool):
        raise Unsupported(f"tensor_array_write at {index!r}")
    if (
        not isinstance(value, Node)
        or aval_of_node(value).shape is None
        or None in ranked_shape(value)
        or np.dtype(value.dtype) not in DTYPES
    ):
        raise Unsupported("tensor_array_write of a value of unknown shape")
    if not np.can_cast(aval_of_node(value).dtype, dt, casting="same_kind"):
        raise Unsupported(f"tensor_array_write of {value.dtype} into {dt}")  # NumPy's error
    if aval_of_node(node).shape is None or len(ranked_shape(node)) != len(ranked_shape(value)) + 1:
        raise Unsupported("tensor_array_write of a stack of another rank")


def _emit_tensor_array_write(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    buffer, index, value = args
    dt = np.dtype(node.attrs["dtype"])
    size, dynamic = int(node.attrs["size"]), bool(node.attrs["dynamic_size"])
    vshape = node.args[2].aval.shape
    rank = len(vshape)
    i = w.fresh("i")
    out.line(f"{i} = np.int64({index if not hasattr(index, 'name') else index.name})")
    w.signal(out, f"{i} < 0")
    row = "".join(f", {value.name}.shape[{d}]" for d in range(rank)) if not value.scalar else ""
    zeros = f"np.zeros((max({size}, {i} + 1){row},), {ctor(dt)})"
    grown = f"np.zeros((max({i} + 1, 2 * {{rows}}){row},), {ctor(dt)})"
    in_place = node in w.plan.writes
    if buffer is None:
        if not dynamic:
            w.signal(out, f"{i} >= {size}")
        out.line(f"{t} = {zeros}")
    else:
        b, rows = buffer.name, w.fresh("rows")
        out.line(f"{rows} = {b}.shape[0]")
        with out.block(f"if {rows} == 0:") as empty:
            if not dynamic:
                w.signal(empty, f"{i} >= {size}")
            empty.line(f"{t} = {zeros}")
        with out.block("else:") as stacked:
            for d in range(rank):  # every row has one shape (NumPy raises ValueError)
                w.signal(stacked, f"{b}.shape[{d + 1}] != {value.name}.shape[{d}]")
            with stacked.block(f"if {i} >= {rows}:") as grow:
                if not dynamic:
                    w.signal(grow, "True")
                grow.line(f"{t} = {grown.format(rows=rows)}")
                grow.line(f"{t}[:{rows}] = {b}")
            with stacked.block("else:") as keep:
                keep.line(f"{t} = {b if in_place else b + '.copy()'}")
    src = value.name
    if np.dtype(node.args[2].dtype) != dt:
        src = f"{ctor(dt)}({src})" if value.scalar else f"{src}.astype({ctor(dt)})"
    out.line(f"{t}[{i}] = {src}")
    # (written in place, the stack is still the loop's own buffer: nothing else reads the
    # old one, which the in-place plan checked, so it is carried without a copy)
    return "fresh"


RULES[OpKind.TENSOR_ARRAY_WRITE] = Rule(_check_tensor_array_write, _emit_tensor_array_write)


# ---------------------------------------------------------------------------------------------
# ufunc.at / bincount
# ---------------------------------------------------------------------------------------------

#: ufunc.at's ufuncs this compiler writes (their loops are one wrapping or float operation)
_AT_UFUNCS = (np.add, np.subtract, np.multiply)


def _check_ufunc_at(node: Node) -> None:
    """``ufunc.at(a, idx, b)``: one 1-D integer index array into the first axis of a 1-D or
    2-D array, and values of ``a``'s dtype, one per index (or one for all)."""
    ufunc, index = node.attrs["ufunc"], node.attrs["index"]
    a, b = node.args[0], node.args[1]
    if ufunc not in _AT_UFUNCS:
        raise Unsupported(f"{getattr(ufunc, '__name__', ufunc)}.at")
    if (
        not isinstance(a, Node)
        or aval_of_node(a).shape is None
        or len(ranked_shape(a)) not in (1, 2)
        or np.dtype(a.dtype).kind not in "iuf"
    ):
        raise Unsupported(f"{ufunc.__name__}.at into {getattr(a, 'aval', a)}")
    if len(index) != 1 or not isinstance(index[0], DynamicIndex) or len(node.args) != 3:
        raise Unsupported(f"{ufunc.__name__}.at with index {index!r}")
    idx = node.args[2]
    if (
        not isinstance(idx, Node)
        or aval_of_node(idx).shape is None
        or len(ranked_shape(idx)) != 1
        or np.dtype(idx.dtype).kind not in "iu"
        or np.dtype(idx.dtype) == np.uint64
    ):
        raise Unsupported(f"{ufunc.__name__}.at with index {getattr(idx, 'aval', idx)}")
    if (
        not isinstance(b, Node)
        or np.dtype(b.dtype) != np.dtype(a.dtype)
        or aval_of_node(b).shape is None
        or (aval_of_node(b).shape != () and len(ranked_shape(b)) != len(ranked_shape(a)))
    ):
        raise Unsupported(
            f"{ufunc.__name__}.at of {getattr(b, 'aval', b)!s} into "
            f"{a.aval} (values of another dtype or shape)"
        )


def _ufunc_at_source(name: str, op: str, rank: int, scalar: bool) -> str:
    """A helper applying ``out[idx[k]] = op(out[idx[k]], vals[k])`` for each ``k`` in order;
    returns False (nothing more written) at an index out of range."""
    v = "vals" if scalar else "vals[k]"
    helper = Source()
    helper.line("@_inline")
    with helper.block(f"def {name}(out, idx, vals):") as body:
        body.line("n = out.shape[0]")
        with body.block("for k in range(idx.shape[0]):") as each:
            each.line("i = np.int64(idx[k])")
            with each.block("if i < 0:") as negative:
                negative.line("i += n")
            with each.block("if i < 0 or i >= n:") as outside:
                outside.line("return False")
            if rank == 1:
                each.line(f"out[i] = {op.format(a='out[i]', b=v)}")
            else:
                with each.block("for j in range(out.shape[1]):") as row:
                    vj = "vals" if scalar else "vals[k, j]"
                    row.line(f"out[i, j] = {op.format(a='out[i, j]', b=vj)}")
        body.line("return True")
    return helper.text()


def _emit_ufunc_at(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    """``np.add.at(a, idx, b)`` (subtract, multiply): unbuffered, in index order, into a
    copy of ``a`` — NumPy's order, so float results are NumPy's bits. An index out of
    range, or values of another shape, signal NumPy's error."""
    base, values, idx = args[0], args[1], args[2]
    ufunc = node.attrs["ufunc"]
    dt = np.dtype(node.dtype)
    wrap = dt.kind in "iu"
    op = {
        np.add: ("_wadd({a}, {b})", "({a} + {b})"),
        np.subtract: ("_wsub({a}, {b})", "({a} - {b})"),
        np.multiply: ("_wmul({a}, {b})", "({a} * {b})"),
    }[ufunc][0 if wrap else 1]
    rank = len(ranked_shape(node))
    scalar = values.scalar
    name = f"_at_{ufunc.__name__}_{rank}{'s' if scalar else ''}"
    w.helpers[name] = _ufunc_at_source(name, op, rank, scalar)
    out.line(f"{t} = {base.name}.copy()")
    if not scalar:
        w.signal(
            out,
            f"{values.name}.shape[0] != {idx.name}.shape[0]"
            + "".join(f" or {values.name}.shape[{a}] != {t}.shape[{a}]" for a in range(1, rank)),
        )
    w.signal(out, f"not {name}({t}, {idx.name}, {values.name})")
    return "fresh"


RULES[OpKind.UFUNC_AT] = Rule(_check_ufunc_at, _emit_ufunc_at)


def _check_bincount(node: Node) -> None:
    x, weights = node.args[0], node.args[1]
    minlength = node.attrs.get("minlength", 0)
    if weights is not None or set(node.attrs) - {"minlength"}:
        raise Unsupported("bincount with weights")
    if not isinstance(minlength, (int, np.integer)) or minlength < 0:
        raise Unsupported(f"bincount with minlength={minlength!r}")
    if (
        not isinstance(x, Node)
        or aval_of_node(x).shape is None
        or len(ranked_shape(x)) != 1
        or np.dtype(x.dtype).kind not in "biu"
        or np.dtype(x.dtype) == np.uint64
    ):
        raise Unsupported(f"bincount of {getattr(x, 'aval', x)}")


# np.bincount(x, minlength=m) of non-negative integers (a negative one: NumPy's ValueError)
_BINCOUNT = """\
@_inline
def _bincount(x, minlength):
    top = -1
    for i in range(x.shape[0]):
        v = np.int64(x[i])
        if v < 0:
            return False, np.zeros(0, np.int64)
        if v > top:
            top = v
    out = np.zeros(max(top + 1, minlength), np.int64)
    for i in range(x.shape[0]):
        out[np.int64(x[i])] += 1
    return True, out
"""


def _emit_bincount(w: Writer, node: Node, args: list, t: str, out: Source) -> str:
    w.helpers["_bincount"] = _BINCOUNT
    minlength = int(node.attrs.get("minlength", 0))
    out.line(f"{t}_ok, {t} = _bincount({args[0].name}, {minlength})")
    w.signal(out, f"not {t}_ok")  # a negative value: NumPy's error
    return "fresh"


RULES[OpKind.BINCOUNT] = Rule(_check_bincount, _emit_bincount)
