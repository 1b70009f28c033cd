"""The whole-graph compiler's advanced indexing: ``getitem`` as a gather and ``setitem`` as a
scatter, with integer arrays (any rank, constant or traced, broadcast) or bool masks.

The machinery of the whole-graph rule :mod:`.subscripts` registers for both ops (a basic
index is the writer's own: ``backends/whole_graph/indexing.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ...backends.emit.literals import Unsupported, const_source, ctor, literal_into
from ...backends.emit.source import Source
from ...backends.static_shapes import aval_of_node, ranked_shape
from ...backends.whole_graph_ops.common import (
    DTYPES,
    Writer,
    alloc_result,
    array_arg,
    emit_nonzero,
    shape_tuple,
)
from ...ir import AbstractValue, Node, OpKind
from ...ir.abstract import DynamicIndex
from ...ir.params import IndexParams


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
            isinstance(arg, Node) and isinstance(arg.aval, AbstractValue) and arg.aval.shape != ()
        )
    return False


def claims_fancy(node: Node) -> bool:
    """An index with an integer or bool array component (basic ones stay with whole_graph)."""
    params = cast("IndexParams", node.params)
    return any(_is_array_component(node, c) for c in params.index)


def _fancy_plan(node: Node) -> list[_Part]:
    """The index as one :class:`_Part` per component, ``...`` expanded to full slices and
    full slices added for the axes it leaves out; Unsupported for what is not covered
    (``None``, 0-d bool or array components, uint64 indices, traced slice bounds)."""
    params = cast("IndexParams", node.params)
    x = array_arg(node, 0, "an array")
    rank = len(ranked_shape(x))
    parts: list[_Part | None] = []
    for c in params.index:
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
        if value.shape is None:  # (no value, several, or of unknown rank)
            raise Unsupported("setitem of a value of unknown rank")
        vdt = np.dtype(value.dtype)
        if vdt not in DTYPES or not np.can_cast(vdt, dt, "same_kind"):
            raise Unsupported(f"setitem of {vdt} into {dt} (an unsafe cast)")
    else:
        literal_into(value, dt)


def check_fancy(node: Node) -> None:
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


def _emit_fancy_index(w: Writer, node: Node, args: list[Any], x: str, out: Source) -> _FancyIndex:
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


def emit_gather(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
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


def emit_scatter(w: Writer, node: Node, args: list[Any], t: str, out: Source) -> str:
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
