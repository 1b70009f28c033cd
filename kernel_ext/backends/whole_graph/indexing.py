"""Basic indexing in the whole-graph function: views for ``x[index]``, and
``x[index] = value`` in place, into a spare buffer or into a copy."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ...ir import Graph, Node, OpKind
from ...ir.abstract import DynamicIndex, KnownShape, getitem_shape
from ...ir.params import IndexParams
from ...passes.fusion import Segment
from ..emit.literals import Unsupported, const_source, ctor, literal_into
from ..emit.source import Source
from ..static_shapes import aval_of_node, ranked_shape, static_shape
from ..whole_graph_ops import RULES as _OP_RULES
from .base import WriterBase
from .values import Value


class BasicIndexing(WriterBase):
    """The basic-index half of :class:`.writer.GraphWriter`."""

    def _check_getitem(self, node: Node, first_dyn: int = 1) -> None:
        """Basic indexing only: static slices, integers, traced integer scalars, ``None``
        and ``...``; ``first_dyn`` is the argument position of the first traced index."""

        def traced_int(c: DynamicIndex) -> bool:
            arg = node.args[c.position - 1 + first_dyn]
            return (
                isinstance(arg, Node)
                and aval_of_node(arg).shape == ()
                and aval_of_node(arg).dtype.kind in "iu"
            )

        for c in cast("IndexParams", node.params).index:
            if isinstance(c, slice):
                # traced start/stop (``A[i, :j]`` in a loop): Numba slices with Python's
                # clamping, as NumPy does; a traced step stays out (its sign decides the
                # clamping and the region's bounds)
                if isinstance(c.step, DynamicIndex):
                    raise Unsupported("slice with a traced step")
                for p in (c.start, c.stop):
                    if isinstance(p, DynamicIndex) and not traced_int(p):
                        raise Unsupported("slice bound that is not an integer scalar")
            elif isinstance(c, DynamicIndex):
                if not traced_int(c):
                    raise Unsupported("indexing with an array")
            elif c is None or c is Ellipsis:
                pass
            elif not isinstance(c, (int, np.integer)):
                raise Unsupported(f"index component {c!r}")

    def _check_setitem(self, node: Node) -> None:
        """``x[index] = value`` with a basic index (no ``None``) into an array, the value cast
        as NumPy casts it only where Numba's cast is the same (``same_kind`` among bool,
        integer and float dtypes; a Python number NumPy converts without complaint)."""
        self._check_getitem(node, first_dyn=2)
        x, value = node.args[0], node.args[1]
        if any(c is None for c in cast("IndexParams", node.params).index):
            raise Unsupported("setitem with a None (np.newaxis) index component")
        if not isinstance(x, Node) or aval_of_node(x).shape in (None, ()):
            raise Unsupported("setitem into a 0-d value")
        dt = np.dtype(x.dtype)
        if dt.kind not in "biuf":
            raise Unsupported(f"setitem into {dt}")
        if isinstance(value, Node):
            vdt = np.dtype(value.dtype)
            if vdt.kind not in "biuf" or not np.can_cast(vdt, dt, "same_kind"):
                raise Unsupported(f"setitem of {vdt} into {dt} (an unsafe cast)")
            if aval_of_node(value).shape is None:
                raise Unsupported("setitem of a value of unknown rank")
            if aval_of_node(value).shape != () and is_element(node, len(ranked_shape(x))):
                raise Unsupported("setitem of an array into one element")
        else:
            literal_into(value, dt)

    def _emit_getitem(
        self,
        node: Node,
        args: list[Any],
        t: str,
        env: dict[Node, Value],
        out: Source,
    ) -> None:
        """``x[index]``: a view of ``x``, or one element of it (a Numba scalar)."""
        x = args[0]
        parts, _ = self._index(node, x, args, 1, out)
        out.line(f"{t} = {x.name}[{', '.join(parts) or ':'}]")
        aval = aval_of_node(node)
        if aval.shape == ():
            env[node] = Value(t, True, False, None)
            return
        env[node] = Value(t, False, False, x.roots, unit=x.unit and unit_rows(node))

    def _index(
        self, node: Node, x: Value, args: list[Any], first_dyn: int, out: Source
    ) -> tuple[list[str], list[tuple[str, str] | None]]:
        """A basic index as Numba source: its components, and per axis of ``x`` the run-time
        bounds ``(lo, hi)`` of what it selects (an integer, or a slice of step 1; None for a
        strided slice). An integer out of range is NumPy's IndexError: it signals a rerun
        there. ``first_dyn``: the argument position of the first traced index."""
        comps = cast("IndexParams", node.params).index
        shape = node.args[0].aval.shape
        rank = len(shape)
        used = sum(1 for c in comps if c is not None and c is not Ellipsis)
        parts: list[str] = []
        bounds: list[tuple[str, str] | None] = []
        axis = 0
        for c in comps:
            if c is None:
                parts.append("None")
                continue
            if c is Ellipsis:
                parts.append("...")
                for a in range(axis, axis + rank - used):
                    bounds.append(("0", f"{x.name}.shape[{a}]"))
                axis += rank - used
                continue
            n = f"{x.name}.shape[{axis}]"
            axis += 1
            if isinstance(c, slice):
                part, bound = self._slice_index(c, args, first_dyn, n)
            else:
                dim = shape[axis - 1] if shape is not None else None
                part, bound = self._integer_index(node, c, args, first_dyn, dim, n, out)
            parts.append(part)
            bounds.append(bound)
        for a in range(axis, rank):
            bounds.append(("0", f"{x.name}.shape[{a}]"))
        if parts == ["..."]:
            parts = [":"]  # Numba has no x[...] on its own; x[:] is the same view
        return parts, bounds

    @staticmethod
    def _slice_index(
        c: slice, args: list[Any], first_dyn: int, n: str
    ) -> tuple[str, tuple[str, str] | None]:
        """A slice component (``n``: the axis's length): its source, and its run-time bounds
        (None for a strided one)."""
        ends = [
            None
            if p is None
            else args[p.position - 1 + first_dyn].name
            if isinstance(p, DynamicIndex)
            else int(p)
            for p in (c.start, c.stop)
        ]
        part = (
            f"{'' if ends[0] is None else ends[0]}:"
            f"{'' if ends[1] is None else ends[1]}"
            f"{'' if c.step is None else ':' + str(c.step)}"
        )
        if c.step not in (None, 1):
            return part, None
        lo = "0" if ends[0] is None else _clamp(ends[0], n)
        hi = n if ends[1] is None else _clamp(ends[1], n)
        return part, (lo, f"max({hi}, {lo})")

    def _integer_index(
        self,
        node: Node,
        c: Any,
        args: list[Any],
        first_dyn: int,
        dim: int | None,
        n: str,
        out: Source,
    ) -> tuple[str, tuple[str, str]]:
        """An integer component (a literal or a traced one) of an axis of static length
        ``dim`` (``n``: its run-time length): its source and the bounds of the element."""
        if isinstance(c, DynamicIndex):
            i = args[c.position - 1 + first_dyn].name
            known = self.ranges.get(node.args[c.position - 1 + first_dyn])
            if known is not None and known[0] >= 0 and in_range(known, dim):
                # in range by the static shape (a counted loop's index): no check, as in
                # a hand-written loop over range(n) (and LLVM may vectorise the loop)
                return i, (i, f"{i} + 1")
            if in_range(known, dim):
                # in range, perhaps from the end (``r[k - i - 1]``, bounded from -dim):
                # no check; Numba wraps a negative index as NumPy does
                return i, (
                    f"({i} + {dim} if {i} < 0 else {i})",
                    f"({i} + {dim} + 1 if {i} < 0 else {i} + 1)",
                )
        else:
            i = str(int(c))
            if dim is not None and in_range((int(c), int(c)), dim):
                # in range by the static shape: no check, a non-negative literal (an
                # unrolled Python loop's x[i] is most of its lines otherwise)
                k = int(c) % dim
                return str(k), (str(k), str(k + 1))
        # an index out of range is an IndexError in NumPy: rerun there to raise it
        v = self.fresh("i")
        out.line(f"{v} = {i}")
        self.signal(out, f"{v} < -{n} or {v} >= {n}")
        return v, (f"({v} + {n} if {v} < 0 else {v})", f"({v} + {n} + 1 if {v} < 0 else {v} + 1)")

    # -- setitem --------------------------------------------------------------------------------
    def _direct_target(
        self, graph: Graph, seg: Segment, nxt: Any, env: dict[Node, Value]
    ) -> Node | None:
        """The ``setitem`` right after ``seg`` whose value ``seg`` may write straight into
        the written region (no temporary), or None.

        The value must be one of ``seg``'s map outputs read by nothing else, exactly the
        region's static shape and the base's dtype (no broadcast, no cast), and the base and
        traced indices already computed. Where the write would be in place, ``seg`` must not
        read the base's memory (a stencil reading ``u`` while ``u[1:-1, 1:-1]`` is written
        would read new values): it then writes into a fresh buffer instead when copying the
        rest of the base costs less than the region (:meth:`_setitem_mode`).
        """
        if (
            not isinstance(nxt, Node)
            or nxt.op is not OpKind.SETITEM
            or _OP_RULES[OpKind.SETITEM].claims(nxt)
        ):  # an advanced index: a scatter
            return None
        x, value = nxt.args[0], nxt.args[1]
        if (
            not isinstance(value, Node)
            or value not in seg.outputs
            or value is seg.reduction
            or len(seg.domain) == 0
            or None in seg.domain
        ):
            return None
        if (
            sum(a is value for n in graph.nodes for a in n.args) != 1
            or value in graph.outputs
            or x not in env
        ):
            return None
        if any(isinstance(a, Node) and a not in env for a in nxt.args[2:]):
            return None
        shape = x.aval.shape
        if None in shape or np.dtype(value.dtype) != np.dtype(x.dtype):
            return None
        dyn = [a.aval for a in nxt.args[2:]]
        if getitem_shape(shape, cast("IndexParams", nxt.params).index, dyn) != tuple(seg.domain):
            return None
        if self._setitem_mode(nxt, env, seg) is None:
            return None
        return nxt

    def _setitem_mode(
        self, node: Node, env: dict[Node, Value], seg: Segment | None = None
    ) -> str | None:
        """How ``node`` writes: ``"inplace"`` (into its base, which the plan found owned and
        dead), ``"rest"`` (into a fresh buffer — a dead buffer a loop left, see
        :meth:`_emit_while` — with everything outside the region copied from the base), or
        ``"copy"`` (into a fresh copy of the whole base). With ``seg`` (its value's segment,
        writing into the region directly) None where no mode allows that."""
        base = env[node.args[0]]
        rest = self._rest_cost(node)
        if node in self.plan.writes:
            if seg is None or not any(
                env[i].roots & base.roots for i in seg.inputs if not env[i].scalar
            ):
                return "inplace"
            # the segment reads the base: write into a fresh buffer when the rest of the
            # base is smaller than the region (a stencil's border), else via a temporary
            return "rest" if rest is not None and rest[0] <= rest[1] else None
        return "copy" if rest is None else "rest"

    def _rest_cost(self, node: Node) -> tuple[int, int] | None:
        """(elements outside the region, elements in it) by the static shapes, or None when
        the rest cannot be copied as boxes (a strided slice) or the sizes are unknown."""
        comps = cast("IndexParams", node.params).index
        x = node.args[0]
        shape = x.aval.shape
        if None in shape or any(isinstance(c, slice) and c.step not in (None, 1) for c in comps):
            return None
        dyn = [a.aval for a in node.args[2:]]
        region = getitem_shape(shape, comps, dyn)
        if region is None or None in region:
            return None
        total = int(np.prod(static_shape(x)))  # (no dim is None: checked above)
        inside = int(np.prod(cast("KnownShape", region)))
        return total - inside, inside

    def _setitem_target(
        self, node: Node, mode: str, env: dict[Node, Value], out: Source
    ) -> tuple[Value, str, list[str]]:
        """The buffer ``node`` writes into (``mode`` of :meth:`_setitem_mode`), ready but
        for the region: returns it, the region's view variable and the index parts."""
        x = env[node.args[0]]
        args = [env.get(a) if isinstance(a, Node) else a for a in node.args]
        parts, bounds = self._index(node, x, args, 2, out)
        idx = ", ".join(parts) or ":"
        if mode == "inplace":
            dest = Value(x.name, False, x.fresh, x.roots)
        else:
            t = self.fresh()
            dt = ctor(np.dtype(node.dtype))
            rank = len(ranked_shape(node))
            shape = "(" + "".join(f"{x.name}.shape[{a}], " for a in range(rank)) + ")"
            test = " and ".join(f"{{sp}}.shape[{a}] == {x.name}.shape[{a}]" for a in range(rank))
            dest = Value(t, False, True)
            if x.fill is not None:  # a constant of one value: a new array of it
                out.line(f"{t} = {x.fill}")
            else:
                self._out_buffer(node, shape, test, dt, out, t)
                if mode == "copy" or any(b is None for b in bounds):
                    out.line(self.assign(t, x.name, rank, rank))
                else:
                    self._copy_rest(t, x.name, bounds, out)  # type: ignore[arg-type]
        view = ""
        if not is_element(node, len(ranked_shape(node))):
            view = self.fresh("w")
            out.line(f"{view} = {dest.name}[{idx}]")
        return dest, view, parts

    def assign(self, dest: str, src: str, rank: int, src_rank: int) -> str:
        """The statement ``dest[...] = src`` for arrays of ranks ``rank`` and ``src_rank`` (at
        most ``rank``; its axes broadcast against ``dest``'s last ones, shapes already
        checked), as a call of a loop helper: Numba's own array-to-array assignment
        compiles its broadcasting machinery for every type pair, 2-4 s each, which made
        most of a loop kernel's first call."""
        name = f"_assign{rank}_{src_rank}"
        if name not in self.helpers:
            self.helpers[name] = _assign_source(name, rank, src_rank)
        return f"{name}({dest}, {src})"

    def _copy_rest(self, dest: str, src: str, bounds: list[tuple[str, str]], out: Source) -> None:
        """Copy ``src`` into ``dest`` outside the box ``bounds``: per axis ``d``, the slabs
        before and after the box along ``d`` within the box along the axes before it."""
        names = []
        for lo, hi in bounds:
            a, b = self.fresh("lo"), self.fresh("hi")
            out.line(f"{a} = {lo}")
            out.line(f"{b} = {hi}")
            names.append((a, b))
        rank = len(bounds)
        for d in range(rank):
            inside = [f"{a}:{b}" for a, b in names[:d]]
            rest = [":"] * (rank - d - 1)
            for part in (f":{names[d][0]}", f"{names[d][1]}:"):
                idx = ", ".join(inside + [part] + rest)
                copy = self.assign(f"{dest}[{idx}]", f"{src}[{idx}]", rank, rank)
                out.line(copy)

    def _emit_setitem(
        self,
        node: Node,
        args: list[Any],
        t: str,
        env: dict[Node, Value],
        out: Source,
    ) -> None:
        """``x[index] = value`` as NumPy does it: the value cast to ``x``'s dtype and
        broadcast to the region (a shape that does not broadcast signals NumPy's error)."""
        done = self.directed.pop(node, None)
        if done is not None:  # the value's segment wrote it (emit_segment)
            env[node] = done
            return
        mode = self._setitem_mode(node, env)
        assert mode is not None
        dest, view, parts = self._setitem_target(node, mode, env, out)
        x = node.args[0]
        dt = np.dtype(x.dtype)
        value = node.args[1]
        element = is_element(node, len(x.aval.shape))
        vr = rr = 0
        if not isinstance(value, Node):
            src = const_source(literal_into(value, dt), dt)
        elif env[value].scalar:
            src = env[value].name
            if np.dtype(value.dtype) != dt:
                src = f"{ctor(dt)}({src})"
        else:
            v = env[value]
            src = v.name
            if v.roots & dest.roots:  # NumPy reads the value before it writes (overlap)
                c = self.fresh("k")
                out.line(f"{c} = {src}.copy()")
                src = c
            vr = len(ranked_shape(value))
            rr = len(
                getitem_shape(
                    x.aval.shape,
                    cast("IndexParams", node.params).index,  # type: ignore[arg-type]
                    [a.aval for a in node.args[2:]],
                )
            )
            for k in range(1, vr + 1):
                self.signal(
                    out,
                    f"{src}.shape[{vr - k}] != 1 and "
                    f"{src}.shape[{vr - k}] != {view}.shape[{rr - k}]",
                )
            if np.dtype(value.dtype) != dt:
                c = self.fresh("k")
                out.line(f"{c} = {src}.astype({ctor(dt)})")
                src = c
        if element:  # (an ``...`` there spans no axis)
            out.line(f"{dest.name}[{', '.join(p for p in parts if p != '...')}] = {src}")
        elif isinstance(value, Node) and not env[value].scalar and vr <= rr:
            out.line(self.assign(view, src, rr, vr))
        else:
            out.line(f"{view}[:] = {src}")
        env[node] = dest

    # -- argmin/argmax, ufunc.at, bincount -------------------------------------------------


def _assign_source(name: str, rank: int, src_rank: int) -> str:
    """A loop helper ``name(d, s)``: ``d[...] = s`` for ``s`` broadcast to ``d``'s shape
    (:meth:`GraphWriter.assign`); a 0-d ``d`` takes the element of ``s``."""
    out = Source()
    out.line("@_kernel")
    with out.block(f"def {name}(d, s):") as body:
        lead = rank - src_rank
        for k in range(src_rank):  # stride 0 along a broadcast axis of length 1
            body.line(f"b{k} = 0 if s.shape[{k}] == 1 and d.shape[{lead + k}] != 1 else 1")
        for a in range(rank):
            body.line(f"for i{a} in range(d.shape[{a}]):")
            body = body.nested()
        dst = ", ".join(f"i{a}" for a in range(rank)) or "()"
        src = ", ".join(f"i{lead + k} * b{k}" for k in range(src_rank)) or "()"
        body.line(f"d[{dst}] = s[{src}]")
    return "\n".join(out.lines)


def in_range(known: tuple[float, float] | None, dim: int | None) -> bool:
    """Does every integer of the interval ``known`` (None: unknown) index an axis of static
    length ``dim`` (None: unknown) without leaving it, from the end included? Such an index
    needs no check: Numba wraps a negative one as NumPy does."""
    return known is not None and dim is not None and -dim <= known[0] and known[1] < dim


def _clamp(bound: int | str, n: str) -> str:
    """Source of a slice bound (a literal, or the name of a traced integer) clamped into
    ``[0, n]`` as Python's slicing does."""
    if isinstance(bound, str):
        return f"(max({n} + {bound}, 0) if {bound} < 0 else min({bound}, {n}))"
    return f"max({n} + ({bound}), 0)" if bound < 0 else f"min({bound}, {n})"


def unit_rows(node: Node) -> bool:
    """Does ``x[index]`` (``node``, a getitem or setitem) keep the last axis of ``x`` as its
    own last axis, sliced with step 1 (so a unit-stride row of ``x`` stays one)?"""
    comps = cast("IndexParams", node.params).index
    rank = len(node.args[0].aval.shape)
    axes = sum(1 for c in comps if c is not None and c is not Ellipsis)
    if rank == 0:
        return False
    if Ellipsis not in comps and axes < rank:
        return True  # the last axis is an implicit ``:`` after every component
    for c in reversed(comps):
        if c is None:
            return False  # a new axis (stride 0) comes last
        if c is Ellipsis:
            return axes < rank  # ``...`` spans the last axis, whole
        return isinstance(c, slice) and c.step in (None, 1)
    return False


def is_element(node: Node, rank: int) -> bool:
    """Does ``node``'s index pick one element (an integer for every axis)?"""
    comps = [c for c in cast("IndexParams", node.params).index if c is not Ellipsis]
    return len(comps) == rank and all(isinstance(c, (int, np.integer, DynamicIndex)) for c in comps)
