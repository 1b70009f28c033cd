"""How the whole-graph writer emits a fused segment: a kernel call, an inlined
scalar body, a row-fused loop or NumPy's own sum."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ...ir import Node, OpKind
from ...ir.params import ReduceParams
from ...passes.fusion import Segment
from ..codegen import KernelEmbedding, ReductionPlan
from ..emit.literals import const_source, ctor
from ..emit.source import Source
from ..segment_call import SegmentCall
from ..static_shapes import aval_of_node, ranked_shape
from ..ufunc_loops import find_loop
from .base import WriterBase
from .indexing import unit_rows
from .support import INLINE_MAX_ARGS
from .values import SegmentArgs, Value


class SegmentEmission(WriterBase):
    """The segment half of :class:`.writer.GraphWriter`."""

    if TYPE_CHECKING:  # the other halves' methods this one calls (GraphWriter has them all)

        def _call_kernel(self, out: Source, px: str, call: str, reduces: bool) -> None: ...

        def _setitem_mode(
            self, node: Node, env: dict[Node, Value], seg: Segment | None = None
        ) -> str | None: ...

        def _setitem_target(
            self, node: Node, mode: str, env: dict[Node, Value], out: Source
        ) -> tuple[Value, str, list[str]]: ...

    def emit_segment(
        self,
        seg: Segment,
        env: dict[Node, Value],
        out: Source,
        direct: Node | None = None,
    ) -> None:
        """A fused segment: its kernel embedded in the module (block buffers allocated once
        per function call), called with the domain broadcast from the run-time shapes.

        ``direct``: a ``setitem`` whose value the segment writes straight into the region
        of the setitem's result (:meth:`_direct_target`), which :meth:`_emit_setitem` then
        only names."""
        split = self._split_sum(seg) if self._loop_depth else None
        if split is not None:
            self._emit_summed_part(seg, split, env, out, direct)
            seg = split[1]
        k = self._segments
        self._segments += 1
        px = f"s{k}_"
        if self._emit_numpy_sum(seg, env, out, px):
            return
        embedding = KernelEmbedding(seg, px, self.fast_math, self.exact_casts)
        rank = embedding.call.rank
        if rank == 0 and self._emit_scalar_segment(seg, embedding, env, out, px):
            return
        ins = [env[n] for n in seg.inputs]
        tiled = {
            i: self.tile_outputs[o]
            for i, o in enumerate(seg.outputs)
            if o in self.tile_outputs and i in embedding.call.map_outputs
        }
        flat = self._flat_variant(seg, embedding.call, direct, tiled)
        variant = "flat" if flat else "nd"
        kname = f"{px}{variant}"
        unit = set() if flat else self._unit_params(seg, embedding.call, ins, direct, tiled)
        kernel = self._embed(embedding, variant, kname, rank, frozenset(unit))
        call = kernel.call
        self.helpers.update(kernel.helpers)
        kname = self._module_kernel(kernel.constants, kernel.text, px, kname)
        args = self._segment_args(call, ins, variant, px)
        if flat and rank > 0:
            self._emit_flat(seg, call, px, kname, args, env, out)
        elif rank == 0:
            self._emit_one_element(seg, call, px, kname, args, env, out)
        else:
            self._emit_nd(seg, call, px, kname, args, ins, tiled, direct, env, out)

    def _emit_summed_part(
        self,
        seg: Segment,
        split: tuple[Segment, Segment],
        env: dict[Node, Value],
        out: Source,
        direct: Node | None,
    ) -> None:
        """The part of ``seg`` before its split-off sum (:meth:`_split_sum`)."""
        x = split[1].inputs[0]
        if x not in seg.outputs and len(ranked_shape(x)) == 1:
            # the temporary only feeds the sum: one buffer for all iterations, grown
            # when a longer one is needed (a triangular loop's slices grow by one)
            buf = self.fresh("sum_tmp")
            self.preamble.line(f"{buf} = np.empty(0, {ctor(np.dtype(x.dtype))})")
            self.grow_bufs[x] = buf
        self.emit_segment(split[0], env, out, direct)

    @staticmethod
    def _flat_variant(
        seg: Segment, call: SegmentCall, direct: Node | None, tiled: dict[int, Value]
    ) -> bool:
        """The contiguous kernel serves segments whose array inputs all span the domain (no
        broadcasting) and reduce over every axis: 1-D views, vectorised loops, lanes."""
        return call.rank == 0 or (
            call.has_flat
            and bool(call.array_inputs)
            and direct is None
            and not tiled
            and all(aval_of_node(seg.inputs[i]).shape == seg.domain for i in call.array_inputs)
        )

    @staticmethod
    def _unit_params(
        seg: Segment,
        call: SegmentCall,
        ins: list[Value],
        direct: Node | None,
        tiled: dict[int, Value],
    ) -> set[str]:
        """The n-d kernel's array parameters whose rows are certainly unit-stride."""
        unit = {
            f"in{i}"
            for i in call.array_inputs
            if ins[i].unit
            and aval_of_node(seg.inputs[i]).shape == seg.domain
            and None not in seg.domain
        }
        if direct is not None and unit_rows(direct):
            unit |= {f"out{i}" for i in call.map_outputs if seg.outputs[i] is direct.args[1]}
        unit |= {f"out{i}" for i in tiled}  # rows of a C-contiguous output
        return unit

    @staticmethod
    def _embed(
        embedding: KernelEmbedding, variant: str, kname: str, rank: int, unit: frozenset[str]
    ) -> Any:
        """The segment's kernel; a 0-d segment's is inlined into the function (its
        one-element loops and buffers then fold into scalar code)."""
        kernel = embedding.kernel(variant, kname, "@_inline" if rank == 0 else "@_kernel", unit)
        if rank == 0 and kernel.text.split("):", 1)[0].count(",") >= INLINE_MAX_ARGS:
            # CPython passes more arguments as one tuple (*args), which Numba cannot inline
            kernel = embedding.kernel(variant, kname, "@_kernel", unit)
        return kernel

    def _segment_args(
        self, call: SegmentCall, ins: list[Value], variant: str, px: str
    ) -> SegmentArgs:
        """The call's arguments: input values, block buffers allocated once per function
        call, and NumPy loops."""
        args = SegmentArgs()
        args.inputs = {i: v.name for i, v in enumerate(ins)}
        for buf in call.scratch_of(variant):
            var = f"{px}{buf.name}"
            self.preamble.line(f"{var} = {buf.allocation()}")
            args.scratch.append(var)
        for ufunc, loop in call.loops:
            found = find_loop(ufunc, loop)
            assert found is not None
            args.loops.append(len(self.loop_args))
            self.loop_args.append(found)
        return args

    def _emit_one_element(
        self,
        seg: Segment,
        call: SegmentCall,
        px: str,
        kname: str,
        args: SegmentArgs,
        env: dict[Node, Value],
        out: Source,
    ) -> None:
        """A 0-d segment's call of its one-element kernel."""
        red = call.reduction
        for i in call.map_outputs:
            # One-element output buffers shared by every 0-d segment (each result is
            # read right after its call): an unrolled loop of 20 tests allocated 60.
            dt = np.dtype(call.output_dtypes[i])
            buf = f"z{i}_{dt.name}"
            if buf not in self.scratch_names:
                self.scratch_names.add(buf)
                self.preamble.line(f"{buf} = np.empty(1, {ctor(dt)})")
            args.outputs[i] = buf
        args.size = "1"
        text = f"{kname}({', '.join(args.arguments(call, 'flat', scratch=True))})"
        self._call_kernel(out, px, text, red is not None)
        for i in call.map_outputs:
            t = self.fresh()
            out.line(f"{t} = {args.outputs[i]}[0]")
            env[seg.outputs[i]] = Value(t, True, False)
        if red is not None:
            self._finish_total(seg, red, f"{px}acc", "1.0", 0, env, out)

    def _emit_domain(
        self,
        seg: Segment,
        call: SegmentCall,
        ins: list[Value],
        px: str,
        out: Source,
    ) -> list[str]:
        """The domain's run-time sizes: NumPy broadcasting of the array inputs' shapes (a
        shape that does not broadcast signals NumPy's error)."""
        dims = [f"{px}n{d}" for d in range(call.rank)]
        for d in dims:
            out.line(f"{d} = 1")
        for i in call.array_inputs:
            a = ins[i]
            r = len(ranked_shape(seg.inputs[i]))
            for ax in range(r):
                d = dims[call.rank - r + ax]
                v = self.fresh("e")
                out.line(f"{v} = {a.name}.shape[{ax}]")
                with out.block(f"if {v} != 1:") as body:
                    self.signal(body, f"{d} != 1 and {d} != {v}")
                    body.line(f"{d} = {v}")
        return dims

    def _emit_nd(
        self,
        seg: Segment,
        call: SegmentCall,
        px: str,
        kname: str,
        args: SegmentArgs,
        ins: list[Value],
        tiled: dict[int, Value],
        direct: Node | None,
        env: dict[Node, Value],
        out: Source,
    ) -> None:
        """The n-d kernel's call over the broadcast domain, into buffers, tiles of an
        output, or the region a ``setitem`` writes (``direct``)."""
        red = call.reduction
        dims = self._emit_domain(seg, call, ins, px, out)
        shape = "(" + "".join(f"{d}, " for d in dims) + ")"
        if call.empty_falls_back:  # NumPy's empty reductions: an error, a NaN, a warning
            self.signal(out, " * ".join(dims) + " == 0")
        args.dims = dims
        static = None not in seg.domain
        for i in call.array_inputs:
            if aval_of_node(seg.inputs[i]).shape == seg.domain and static:
                continue  # already the domain's shape: no view needed
            v = self.fresh("b")
            out.line(f"{v} = np.broadcast_to({ins[i].name}, {shape})")
            args.inputs[i] = v
        region = None
        if direct is not None:
            mode = self._setitem_mode(direct, env, seg)
            assert mode is not None
            dest, view, _ = self._setitem_target(direct, mode, env, out)
            self.directed[direct] = dest
            region = (dest, view)
        for i in call.map_outputs:
            args.outputs[i] = self._nd_output(seg, call, i, shape, tiled, direct, region, env, out)
        if red is not None:
            keep = "(" + "".join(f"{d}, " for d in red.accumulator_shape(dims)) + ")"
            args.acc = self.fresh("acc")
            out.line(
                f"{args.acc} = np.full({keep}, "
                f"{const_source(red.identity, red.acc_dtype)}, "
                f"{ctor(red.acc_dtype)})"
            )
        self.signal(out, f"{kname}({', '.join(args.arguments(call, 'nd', True))})")
        if red is not None:
            self._finish_reduction(seg, red, args.acc, dims, env, out)

    def _nd_output(
        self,
        seg: Segment,
        call: SegmentCall,
        i: int,
        shape: str,
        tiled: dict[int, Value],
        direct: Node | None,
        region: tuple[Value, str] | None,
        env: dict[Node, Value],
        out: Source,
    ) -> str:
        """Where map output ``i`` is written, bound in ``env``: the setitem's region, a tile
        of a graph output, or a buffer (a spare a loop left, or a new one)."""
        out_node = seg.outputs[i]
        if region is not None and direct is not None and out_node is direct.args[1]:
            dest, view = region
            env[out_node] = Value(view, False, False, dest.roots)
            return view
        if i in tiled:
            tile = tiled[i]
            view = f"{tile.name}_tile"
            out.line(f"{view} = {tile.name}[r0:r1]")
            self.signal(out, f"{view}.shape != {shape}")
            env[out_node] = Value(view, False, False, tile.roots, unit=True)
            return view
        t = self.fresh()
        self._out_buffer(
            out_node,
            shape,
            f"{{sp}}.shape == {shape}",
            ctor(call.output_dtypes[i]),
            out,
            t,
        )
        env[out_node] = Value(t, False, True)
        return t

    def _emit_scalar_segment(
        self,
        seg: Segment,
        embedding: KernelEmbedding,
        env: dict[Node, Value],
        out: Source,
        px: str,
    ) -> bool:
        """A 0-d segment (a loop's index arithmetic, its test, ``A[i, j] * 0.1``) as one call
        of a function of scalars: ``bad, t1, t2 = s4_scalar(i, n)``. Numba inlines it and
        the values stay in registers; the block kernel's one-element loop stored each
        result into a heap buffer and read it back, which made an inner loop of a few
        scalar ops 4-10x slower than a hand ``@njit`` loop. False where the segment needs
        buffers (a NumPy loop call, a reduction)."""
        ins = [env[n] for n in seg.inputs]
        if not all(v.scalar for v in ins):
            return False
        deco = "@_inline" if len(ins) < INLINE_MAX_ARGS else "@_kernel"
        kernel = embedding.scalar_kernel(f"{px}scalar", deco)
        if kernel is None:
            return False
        self.helpers.update(kernel.helpers)
        outs = []
        for i in kernel.call.map_outputs:
            t = self.fresh()
            outs.append(t)
            env[seg.outputs[i]] = Value(t, True, False)
        bad = f"{px}bad"
        checks = "bad = bad |" in kernel.text  # a check NumPy decides (a NaN cast to int)
        body = _inline_scalar_body(
            kernel.text, [v.name for v in ins], dict(zip(kernel.call.map_outputs, outs)), px
        )
        if body is not None:
            # the statements themselves, in the loop: nothing for Numba to inline (IR
            # inlining of many small functions cost seconds of compilation)
            if kernel.constants:
                self.module_parts.append(kernel.constants)
            if checks:
                out.line(f"{bad} = False")
            out.extend(body)
        else:
            kname = self._module_kernel(kernel.constants, kernel.text, px, f"{px}scalar")
            out.line(
                f"{bad}{''.join(', ' + o for o in outs)} = "
                f"{kname}({', '.join(v.name for v in ins)})"
            )
        if checks:
            self.signal(out, bad)
        return True

    def _module_kernel(self, constants: str, text: str, px: str, kname: str) -> str:
        """Add a segment's kernel to the module and return the name to call it by: the
        name of an earlier kernel of the same text (its prefix aside), when there is one.

        An unrolled Python loop repeats the same segments at every iteration; each kernel
        is a function LLVM compiles, so 49 copies of one sum took minutes where one
        takes a second."""
        canon = re.sub(rf"\b{px}", "sX_", constants + "\n" + text)
        first = self._kernel_texts.get(canon)
        if first is not None:
            return first + kname[len(px) :]
        self._kernel_texts[canon] = px
        self.module_parts.append(constants)
        self.module_parts.append(text)
        return kname

    def _split_sum(self, seg: Segment) -> tuple[Segment, Segment] | None:
        """``np.sum(a * b)`` in a loop body as NumPy computes it: the elementwise part into
        a temporary (a map segment), then NumPy's own pairwise ``add`` reduction of it
        (:meth:`_emit_numpy_sum`), bitwise. Fused, the kernel would sum through its lanes,
        in another order (the documented bound); a loop body's vectors are short, so the
        temporary costs little. None where the sum is not such a float sum."""
        red = seg.reduction
        if red is None or not seg.elementwise or red.op.accumulator is not np.add:
            return None
        x = red.args[0]
        dt = np.dtype(red.dtype)
        if (
            not isinstance(x, Node)
            or x not in seg.elementwise
            or aval_of_node(x).shape in (None, ())
            or np.dtype(x.dtype) != dt
            or dt not in (np.dtype(np.float32), np.dtype(np.float64))
        ):
            return None
        rank = len(ranked_shape(x))
        axis = cast("ReduceParams", red.params).axis
        if axis is not None:
            axes = {int(a) % rank for a in (axis if isinstance(axis, tuple) else (axis,))}
            if axes != set(range(rank)):
                return None
        members = seg.elementwise
        outputs = [o for o in seg.outputs if o is not red]
        if x not in outputs:
            outputs.append(x)
        inputs = [i for i in seg.inputs if any(i in n.inputs for n in members)]
        return (
            Segment(members, inputs, outputs, seg.domain, None, seg.index),
            Segment([red], [x], [red], seg.domain, red, seg.index),
        )

    def _emit_numpy_sum(self, seg: Segment, env: dict[Node, Value], out: Source, px: str) -> bool:
        """A segment that is only the float sum (or mean) of an array over all axes: NumPy's
        own ``add`` loop in its reduce form (it sums pairwise, in the array's dtype).

        ``np.sum`` of a contiguous (or 1-D) array makes this very call on the whole array, so
        the result is NumPy's to the bit, at NumPy's speed: 2.8x faster than the float64
        lanes at 1M float32 elements, where W5b sums once per iteration. A non-contiguous
        N-d array is summed from a C-ordered copy: pairwise as well, within the documented
        bound of NumPy's order. Returns False for every other segment.
        """
        red = seg.reduction
        if red is None or seg.elementwise or red.op.accumulator is not np.add:
            return False
        x = red.args[0]
        dt = np.dtype(red.dtype)
        if (
            not isinstance(x, Node)
            or x not in env
            or aval_of_node(x).shape in (None, ())
            or np.dtype(x.dtype) != dt
            or dt not in (np.dtype(np.float32), np.dtype(np.float64))
        ):
            return False
        rank = len(ranked_shape(x))
        axis = cast("ReduceParams", red.params).axis
        if axis is not None:
            axes = {int(a) % rank for a in (axis if isinstance(axis, tuple) else (axis,))}
            if axes != set(range(rank)):
                return False
        found = find_loop(np.add, (dt,) * 3)
        if found is None:
            return False
        idx = len(self.loop_args)
        self.loop_args.append(found)
        self.helpers["_sum_loop"] = _SUM_LOOP
        scratch = []
        for name, size, sdt in (
            ("pp", 3, "np.uintp"),
            ("st", 3, "np.intp"),
            ("dims", 1, "np.intp"),
            ("acc", 1, ctor(dt)),
        ):
            self.preamble.line(f"{px}{name} = np.empty({size}, {sdt})")
            scratch.append(px + name)
        src = env[x].name
        if rank > 1:
            v = self.fresh("r")
            out.line(f"{v} = {src}.ravel()")
            src = v
        t = self.fresh()
        out.line(f"{t} = _sum_loop({src}, f{idx}, d{idx}, {', '.join(scratch)})")
        if red.op is OpKind.MEAN:
            # NumPy's empty mean is a NaN with a warning; otherwise sum / count in the dtype
            self.signal(out, f"{src}.size == 0")
            out.line(f"{t} = {t} / {ctor(dt)}({src}.size)")
        if cast("ReduceParams", red.params).keepdims:
            out.line(f"{t} = np.full({(1,) * rank!r}, {t})")
            env[red] = Value(t, False, True)
        else:
            env[red] = Value(t, True, False)
        return True

    def _emit_flat(
        self,
        seg: Segment,
        call: SegmentCall,
        px: str,
        kname: str,
        args: SegmentArgs,
        env: dict[Node, Value],
        out: Source,
    ) -> None:
        red = call.reduction
        first = args.inputs[call.array_inputs[0]]
        for i in call.array_inputs[1:]:
            self.signal(out, f"{args.inputs[i]}.shape != {first}.shape")
        n = f"{px}size"
        out.line(f"{n} = {first}.size")
        if call.empty_falls_back:
            self.signal(out, f"{n} == 0")
        rank = call.rank
        if rank > 1:  # 1-D as it is: a 1-D view (a reshape) costs more than 5 elements do
            for i in call.array_inputs:
                v = self.fresh("r")
                out.line(f"{v} = {args.inputs[i]}.ravel()")
                args.inputs[i] = v
        for i in call.map_outputs:
            t = self.fresh()
            dt = ctor(call.output_dtypes[i])
            self._out_buffer(
                seg.outputs[i],
                n,
                f"{{sp}}.size == {n}",
                dt,
                out,
                t,
                "{sp}" if rank == 1 else f"{{sp}}.reshape({n})",
            )
            args.outputs[i] = t
        args.size = n
        text = f"{kname}({', '.join(args.arguments(call, 'flat', scratch=True))})"
        self._call_kernel(out, px, text, red is not None)
        for i in call.map_outputs:
            t = args.outputs[i]
            if rank > 1:
                out.line(f"{t} = {t}.reshape({first}.shape)")
            env[seg.outputs[i]] = Value(t, False, True)
        if red is not None:
            self._finish_total(seg, red, f"{px}acc", n, rank, env, out)

    def _finish_total(
        self,
        seg: Segment,
        red: ReductionPlan,
        acc: str,
        count: str,
        rank: int,
        env: dict[Node, Value],
        out: Source,
    ) -> None:
        """A reduction over every axis, returned by the kernel as one accumulator: NumPy's
        result from it (a mean divided by ``count``; keepdims as a 1-filled shape)."""
        if red.mean:
            acc = f"({acc} / {count})"
        t = self.fresh()
        out.line(f"{t} = {ctor(red.out_dtype)}({acc})")
        if red.keepdims and rank > 0:
            out.line(f"{t} = np.full({(1,) * rank!r}, {t})")
            env[seg.reduction] = Value(t, False, True)  # type: ignore[index]
        else:
            env[seg.reduction] = Value(t, True, False)  # type: ignore[index]

    def _finish_reduction(
        self,
        seg: Segment,
        red: ReductionPlan,
        acc: str,
        dims: list[str],
        env: dict[Node, Value],
        out: Source,
    ) -> None:
        """An N-d kernel's accumulator array (keepdims shape) as NumPy's result."""
        out_dt = ctor(red.out_dtype)
        if red.mean:
            out.line(f"{acc} = {acc} / ({red.count(dims)})")
        t = self.fresh()
        if red.axis is None and not red.keepdims:
            out.line(f"{t} = {out_dt}({acc}.ravel()[0])")
            env[seg.reduction] = Value(t, True, False)  # type: ignore[index]
            return
        out.line(f"{t} = {acc}.astype({out_dt})")
        if not red.keepdims:
            shape = "(" + "".join(f"{d}, " for d in red.result_dims(dims)) + ")"
            out.line(f"{t} = {t}.reshape({shape})")
        env[seg.reduction] = Value(t, False, True)  # type: ignore[index]

    # -- other ops ----------------------------------------------------------------------------


#: The local names of a scalar kernel (codegen's ``s<i>`` inputs, ``o<i>`` outputs, ``t``/``c``
#: /``v``/``u`` temporaries and the ``bad`` flag): renamed when its body is inlined.
_SCALAR_LOCAL = re.compile(r"\b(bad|[stcvuo]\d+(?:_\d+)?)\b")


def _inline_scalar_body(
    text: str, inputs: list[str], outputs: dict[int, str], px: str
) -> list[str] | None:
    """The statements of scalar kernel ``text`` (``def name(s0, ...): bad = False; ...;
    return (bad, o0, ...)``) as lines of the calling function: inputs renamed to the
    caller's values, outputs to ``outputs``, temporaries and ``bad`` prefixed with ``px``.
    None when a local of the kernel is not a name this renaming knows (then it is called)."""
    tree = ast.parse(text)
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    local = {a.arg for a in fn.args.args} | {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    if any(_SCALAR_LOCAL.fullmatch(name) is None for name in local):
        return None
    lines = text.split("\n")
    start = next(k for k, line in enumerate(lines) if line.startswith("def ")) + 2
    body = lines[start:-1]  # after "bad = False", before the return

    def rename(m: re.Match) -> str:
        name = m.group(1)
        if name in local and name[0] == "s" and name[1:].isdigit():
            return inputs[int(name[1:])]
        if name in local and name[0] == "o" and name[1:].isdigit():
            return outputs[int(name[1:])]
        return px + name if name in local else name

    return [_SCALAR_LOCAL.sub(rename, line[4:]) for line in body]


# NumPy's float add loop called the way a reduction calls it (output = first input, both
# with stride 0): it adds the pairwise sum of the n elements, in index order (a reversed
# array too, as np.sum does), to the output, which starts from +0.0 as NumPy's does.
_SUM_LOOP = """\
@_inline
def _sum_loop(x, f, d, pp, st, dims, acc):
    acc[0] = 0
    pp[0] = acc.ctypes.data
    pp[1] = x.ctypes.data
    pp[2] = acc.ctypes.data
    st[0] = 0
    st[1] = x.strides[0]
    st[2] = 0
    dims[0] = x.shape[0]
    _call_loop(f, pp.ctypes.data, dims.ctypes.data, st.ctypes.data, d)
    return acc[0]
"""
