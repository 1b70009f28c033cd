"""CPU kernels of a fused segment: ``k_flat`` and ``k_nd`` walk the domain in blocks, one
vectorisable loop per stage, NumPy loop calls between stages, reductions through lanes folded
pairwise (:class:`CpuKernelWriter`)."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ...ir import Node, OpKind
from ...passes.fusion import Segment
from .. import codegen
from ..emit.literals import ctor, literal_value
from ..emit.source import Source
from ..segment_call import Scratch
from .inline_templates import truth
from .lowering import Lowering
from .writer import EmbeddedKernel, InlineContext, KernelWriter


class CpuKernelWriter(KernelWriter):
    """Writes the CPU kernels of one segment."""

    def __init__(
        self, seg: Segment, target: str = "cpu", prefix: str = "", fast_math: bool = False
    ) -> None:
        super().__init__(seg, target, prefix, fast_math)
        #: Kernel parameters (``in<i>``/``out<i>``) whose rows the caller guarantees to be
        #: unit-stride views (:meth:`.generation.KernelEmbedding.kernel`)
        self.unit_rows: frozenset[str] = frozenset()
        #: Does the ``nd`` kernel being written make its input rows contiguous itself
        #: (the runner's kernels; a whole-graph caller states ``unit_rows`` instead)?
        self._own_rows = False
        #: The block buffers of the kernel being written, in the order its body uses them
        self._buffers: list[Scratch] = []
        self._plan_stages()

    # -- stages ------------------------------------------------------------------------------
    def _plan_stages(self) -> None:
        """Stage of each member: the max of its operands' stages; a NumPy loop call's result
        is available one stage after its operands."""
        stage: dict[Node, int] = {}
        avail: dict[Node, int] = {}
        for n in self.seg.elementwise:
            s = max((avail.get(a, 0) for a in n.inputs), default=0)
            stage[n] = s
            avail[n] = s + 1 if self.lowerings[n].call is not None else s
        self.stage = stage
        self.avail = avail
        last = max(avail.values(), default=0)
        if self.seg.reduction is not None:
            x = self.seg.reduction.args[0]
            last = max(last, avail.get(x, 0))
        self.n_stages = last + 1
        # values needed in a later stage than where they are computed go through a buffer
        self.buffered: set[Node] = set()
        users_stage: dict[Node, int] = {}
        for n in self.seg.elementwise:
            for a in n.inputs:
                if a in self.members:
                    users_stage[a] = max(users_stage.get(a, 0), stage[n])
        for a, s in users_stage.items():
            if self.lowerings[a].call is None and s > stage[a]:
                self.buffered.add(a)

    def embedded(self, variant: str, name: str, decorator: str) -> EmbeddedKernel:
        """One CPU variant for a whole-graph module (block buffers passed in)."""
        text = self.cpu_kernel(variant, name, decorator, embedded=True)
        return EmbeddedKernel(
            text, "\n".join(self.const_lines), dict(self.helpers), self.segment_call()
        )

    # -- kernels ---------------------------------------------------------------------------
    def kernels(self) -> list[str]:
        """``k_flat``, and ``k_nd`` for a domain of rank 1 or more."""
        kernels = [self.cpu_kernel("flat", "k_flat")]
        if self.rank >= 1:
            kernels.append(self.cpu_kernel("nd", "k_nd"))
        return kernels

    def cpu_kernel(
        self, variant: str, name: str, decorator: str = "@_kernel", embedded: bool = False
    ) -> str:
        """The text of one CPU kernel variant (``"flat"`` or ``"nd"``), its parameters in
        :meth:`SegmentCall.args` order. ``embedded``: its block buffers become trailing
        parameters instead of being allocated per call (a whole-graph function allocates
        them once for all its loop iterations)."""
        self._own_rows = not embedded
        self._buffers = []
        # the block buffers are known once the body is written; their allocations go first
        body = Source().nested()
        self._write_kernel_body(variant == "nd", body)
        scratch = tuple(self._buffers)
        self.scratch[variant] = scratch
        params = self.segment_call(variant).params(variant, scratch=embedded)
        out = Source()
        out.line(decorator)
        with out.block(f"def {name}({', '.join(params)}):") as fn:
            fn.line("bad = False")
            if not embedded:  # allocated once per call, before any loop
                for x in scratch:
                    fn.line(f"{x.name} = {x.allocation()}")
        out.lines += body.lines
        return "\n".join(out.lines)

    def _write_kernel_body(self, nd: bool, out: Source) -> None:
        """Write the body of a CPU kernel; its block buffers go to :attr:`_buffers`."""
        red = self.red
        # Reductions folded through lanes (_lane_fold): the flat kernel's, and an N-d
        # kernel's over all axes or over the last axis (one group per row); a reduction over
        # another axis accumulates into the acc row of each block instead (as NumPy does).
        lanes = red is not None and (not nd or self._nd_scalar_reduce())
        per_row = bool(lanes and nd and red is not None and red.axis is not None)
        last = f"n{self.rank - 1}" if nd else "stop - start"
        self._add_block_buffers()
        for k, n in enumerate(self.calls):
            self._loop_call_vectors(k, n, out)
        if lanes:
            self._lane_setup(last, per_row, out)
        row = self._block_loop(nd, per_row, last, out)
        block = row.nested()
        self._block_views(nd, block, lanes)
        for s in range(self.n_stages):
            with block.block("for j in range(m):") as body:
                written = len(body)
                self._stage_body(s, body, nd)
                if len(body) == written:
                    body.line("pass")
            for k, n in enumerate(self.calls):
                if self.stage[n] == s:
                    self._loop_call(k, n, block)
        if lanes:
            end = row if per_row else out
            self._lane_finish(block, end)
            if nd:
                self._store_lane_total(end)
        out.line("return bad, r" if lanes and not nd else "return bad")

    def _add_block_buffers(self) -> None:
        """The buffers of values a later stage reads, and the argument vectors of the NumPy
        loop calls (one row of pointers and strides per call)."""
        for n in sorted(self.buffered, key=self.seg.nodes.index):
            buf = Scratch(f"buf_{self.node_id(n)}", str(codegen.BLOCK), ctor(np.dtype(n.dtype)))
            self._buffers.append(buf)
        if self.calls:
            self._buffers.append(Scratch("pp", f"({len(self.calls)}, 4)", "np.uintp"))
            self._buffers.append(Scratch("st", f"({len(self.calls)}, 4)", "np.intp"))
            self._buffers.append(Scratch("dims", "1", "np.intp"))

    def _loop_call_vectors(self, k: int, n: Node, out: Source) -> None:
        """The operand and result buffers of NumPy loop call ``k`` (of node ``n``), with
        their pointers and strides set once per kernel call."""
        ufunc, loop = self.lowerings[n].call  # type: ignore[misc]
        nin = ufunc.nin
        for j, a in enumerate(n.args):
            if self._passthrough(n, j) is not None:
                continue  # the loop reads the input's block view in place (per block)
            size = codegen.BLOCK if self._is_block_operand(a) else 1
            self._buffers.append(Scratch(f"ci{k}_{j}", str(size), ctor(loop[j])))
            out.line(f"pp[{k}, {j}] = ci{k}_{j}.ctypes.data")
            step = loop[j].itemsize if self._is_block_operand(a) else 0
            out.line(f"st[{k}, {j}] = {step}")
        if self._direct_output(n) is None:
            self._buffers.append(Scratch(f"co{k}", str(codegen.BLOCK), ctor(loop[nin])))
            out.line(f"pp[{k}, {nin}] = co{k}.ctypes.data")
            out.line(f"st[{k}, {nin}] = {loop[nin].itemsize}")

    def _lane_setup(self, last: str, per_row: bool, out: Source) -> None:
        """The lanes and the cascade of a reduction folded through lanes, and (unless each
        row starts its own) the block and chunk counters."""
        red = self.red
        assert red is not None
        # lanes a call never reaches are never read: only the first ones start at the
        # identity (a call on 5 elements does not initialise 1024)
        self._buffers.append(Scratch("wl", str(codegen.BLOCK), ctor(red.acc_dtype)))
        self._buffers.append(Scratch("cs", "64", ctor(red.acc_dtype)))
        with out.block(f"for l in range(min({codegen.BLOCK}, {last})):") as body:
            body.line(f"wl[l] = {self.const(red.identity, red.acc_dtype)}")
        if not per_row:
            out.extend(["nb = 0", "nc = 0", "used = 0"])

    def _block_loop(self, nd: bool, per_row: bool, last: str, out: Source) -> Source:
        """Write the loops down to the block loop over the last dimension (``blk``, ``m``
        elements); the view of a row's statements (the block loop's own depth: the block's
        statements are one level in)."""
        if not nd:
            with out.block(f"for blk in range(start, stop, {codegen.BLOCK}):") as block:
                block.line(f"m = min({codegen.BLOCK}, stop - blk)")
            return out
        row = out
        for d in range(self.rank - 1):
            row.line(f"for i{d} in range(n{d}):")
            row = row.nested()
        if per_row:
            row.extend(["nb = 0", "nc = 0", "used = 0"])
        with row.block(f"for blk in range(0, {last}, {codegen.BLOCK}):") as block:
            block.line(f"m = min({codegen.BLOCK}, {last} - blk)")
        return row

    def _block_views(self, nd: bool, out: Source, lanes: bool) -> None:
        """The block's views of the inputs, the map outputs and (an N-d reduction over an
        axis other than the last) the accumulator row."""
        # Block views, indexed by the non-negative loop variable j: indexing the whole array
        # with ``blk + j`` makes Numba handle negative indices and defeats vectorisation.
        lead = "".join(f"i{d}, " for d in range(self.rank - 1)) if nd else ""
        # A row of a strided N-d view (``u[1:-1, 1:-1]``) is typed as a strided array, whose
        # loads LLVM does not vectorise; where the caller guarantees unit-stride rows,
        # ``np.ascontiguousarray`` retypes the row as contiguous without a copy (W11's stencil
        # ran 2.2x faster).
        for i in self.array_inputs:
            if nd and self._own_rows:
                self._contiguous_row(i, lead, out)
                continue
            out.line(f"b{i} = {self._row(f'in{i}', f'{lead}blk:blk + m', nd)}")
        for i in self.map_outputs:
            out.line(f"bo{i} = {self._row(f'out{i}', f'{lead}blk:blk + m', nd)}")
        red = self.red
        if red is not None and not lanes:
            idx = [f"i{d}" for d in range(self.rank - 1)] + ["blk:blk + m"]
            idx[red.axis] = "0"  # type: ignore[index]
            out.line(f"bacc = acc[{', '.join(idx)}]")

    def _lane_finish(self, out: Source, end: Source) -> None:
        """After each block (``out``): count it, fold the lanes every :data:`.CHUNK_BLOCKS`
        blocks; at ``end`` (the kernel's, or each row's) fold what is left and total the
        cascade (``r``)."""
        out.extend(["nb += 1", "used = max(used, m)"])
        with out.block(f"if nb == {codegen.CHUNK_BLOCKS}:") as body:
            self._lane_fold(body)
        with end.block("if used > 0:") as body:
            self._lane_fold(body)
        self._cascade_total(end)

    def _store_lane_total(self, out: Source) -> None:
        """An N-d kernel's lane total ``r`` combined into its element of ``acc``."""
        red = self.red
        assert red is not None
        idx = ", ".join(
            ["0" if d == red.axis or red.axis is None else f"i{d}" for d in range(self.rank - 1)]
            + ["0"]
        )
        out.extend([f"a = acc[{idx}]", "v = r", f"acc[{idx}] = {red.combine('a', 'v')}"])

    def scalar_kernel(self, name: str, decorator: str = "@_inline") -> str | None:
        """A 0-d segment as a function of scalars returning ``(bad, out0, out1, ...)``: no
        block loop, no one-element output buffers, so a graph loop's index arithmetic and
        tests stay in registers (the block kernel stores every result into a heap buffer
        and reads it back). None where the segment needs buffers: a NumPy loop call or a
        reduction."""
        if (
            self.rank != 0
            or self.calls
            or self.red is not None
            or self.scalar_inputs != list(range(len(self.seg.inputs)))
        ):
            return None
        params = ", ".join(f"s{i}" for i in range(len(self.seg.inputs)))
        outs = "".join(f", o{i}" for i in self.map_outputs)
        out = Source()
        out.line(decorator)
        with out.block(f"def {name}({params}):") as fn:
            fn.line("bad = False")
            self._stage_body(0, fn, nd=False, scalar_outputs=True)
            fn.line(f"return (bad{outs})")
        return "\n".join(out.lines)

    def _row(self, param: str, index: str, nd: bool) -> str:
        """``param[index]`` (a block of one row), retyped as a contiguous array where the
        caller guarantees unit-stride rows (``np.ascontiguousarray`` of such a block is a
        view in Numba, typed C-contiguous)."""
        if nd and param in self.unit_rows:
            return f"np.ascontiguousarray({param}[{index}])"
        return f"{param}[{index}]"

    def _contiguous_row(self, i: int, lead: str, out: Source) -> None:
        """``b<i>``, the block of input ``i``'s row typed as a contiguous array: the row
        itself where it has unit stride (any C-ordered input, and one broadcast along a
        leading axis, as a bias row is), else a copy into a block buffer (a column
        broadcast along the row, a strided view).

        The ``nd`` kernel's inputs are typed as any-layout arrays, whose loads LLVM does not
        vectorise: W8's ``where(mask, g, 0)`` + column sum took 63 µs at 256x256 float32
        with strided rows and 16 µs with contiguous ones (NumPy: 36 µs)."""
        dtype = np.dtype(self.seg.inputs[i].dtype)
        row, copy = f"rw{i}", f"rc{i}"
        self._buffers.append(Scratch(copy, str(codegen.BLOCK), ctor(dtype)))
        out.line(f"{row} = in{i}[{lead}blk:blk + m]")
        with out.block(f"if {row}.strides[0] == {dtype.itemsize}:") as body:
            body.line(f"b{i} = np.ascontiguousarray({row})")
        with out.block("else:") as body:
            with body.block("for j in range(m):") as loop:
                loop.line(f"{copy}[j] = {row}[j]")
            body.line(f"b{i} = {copy}[:m]")

    def _lane_fold(self, out: Source) -> None:
        """Fold a reduction's lanes into one value and push it on a pairwise cascade (every
        :data:`CHUNK_BLOCKS` blocks, and at the end of the reduced range).

        The stage loop folds element ``blk + j`` into lane ``wl[j]``: an elementwise update
        with no loop-carried dependency, which LLVM vectorises without reassociating
        anything (16 lanes in registers, the previous scheme, compiled to 16 scalar
        ``vaddsd``: 0.7 ns/element in cache against 0.4 now; W4 on one thread went from 11.8
        to 8.0 ms, the memory floor). A lane sums at most CHUNK_BLOCKS values; the lanes
        fold as a binary tree over the width actually used (``used``), and the chunk totals
        combine through a binary counter (``cs[level]``): pairwise summation of chunks. No
        value passes through more than CHUNK_BLOCKS + log2(BLOCK) + log2(chunks) additions,
        about NumPy's own pairwise depth, so float64 sums stay within the documented bound
        at any length (one running sum per lane would not: its error grows with n)."""
        red = self.red
        assert red is not None
        ident = self.const(red.identity, red.acc_dtype)
        out.line("w = 1")
        with out.block("while w < used:") as body:
            body.line("w *= 2")
        with out.block("while w > 1:") as body:
            body.line("w //= 2")
            with body.block("for l in range(min(w, used - w)):") as pair:
                pair.extend(["a = wl[l]", "v = wl[l + w]", f"wl[l] = {red.combine('a', 'v')}"])
        out.line("r = wl[0]")
        with out.block("for l in range(used):") as body:
            body.line(f"wl[l] = {ident}")
        out.extend(["c = nc", "lvl = 0"])
        with out.block("while c & 1:") as body:
            body.extend(["a = cs[lvl]", "v = r", f"r = {red.combine('a', 'v')}"])
            body.extend(["lvl += 1", "c >>= 1"])
        out.extend(["cs[lvl] = r", "nc += 1", "nb = 0", "used = 0"])

    def _cascade_total(self, out: Source) -> None:
        """``r``: the cascade's chunk totals combined (the identity when there were none)."""
        red = self.red
        assert red is not None
        out.extend([f"r = {self.const(red.identity, red.acc_dtype)}", "lvl = 0"])
        with out.block("while nc:") as body:
            with body.block("if nc & 1:") as odd:
                odd.extend(["a = cs[lvl]", "v = r", f"r = {red.combine('a', 'v')}"])
            body.extend(["lvl += 1", "nc >>= 1"])

    def _direct_output(self, node: Node) -> int | None:
        """The map output a NumPy loop call can write in place (its own result, in the
        output's dtype): its block view is the loop's output, saving a copy pass."""
        if node not in self.seg.outputs or node is self.seg.reduction:
            return None
        low = self.lowerings[node]
        if low.call is None or low.out_dtype != np.dtype(node.dtype):
            return None
        return self.seg.outputs.index(node)

    def _passthrough(self, node: Node, j: int) -> int | None:
        """The array-input index whose block view a NumPy loop call can read directly (no
        copy) for operand ``j``: an input array already of the loop's dtype."""
        arg = node.args[j]
        low = self.lowerings[node]
        if (
            isinstance(arg, Node)
            and arg not in self.members
            and arg.shape != ()
            and np.dtype(arg.dtype) == low.operand_dtypes[j]
        ):
            return self.seg.inputs.index(arg)
        return None

    def _is_block_operand(self, arg: Any) -> bool:
        """Is ``arg`` one value per element (a member, or an array input)? Literals and 0-d
        inputs are one value for the whole kernel (passed to a NumPy loop with stride 0)."""
        return isinstance(arg, Node) and (arg in self.members or arg.shape != ())

    def _nd_scalar_reduce(self) -> bool:
        """Does an N-d reduction fold through lanes (all axes, or the last axis, are reduced)?"""
        red = self.red
        return red is not None and (red.axis is None or red.axis == self.rank - 1)

    def _stage_body(self, s: int, out: Source, nd: bool, scalar_outputs: bool = False) -> None:
        """Write the statements computing stage ``s`` for element ``j``; ``scalar_outputs``:
        outputs assigned to locals ``o<i>`` instead of stored into their blocks (a 0-d
        kernel)."""
        names: dict[Any, str] = {}

        def value(arg: Any, dtype: np.dtype | None) -> str:
            """Expression of ``arg`` in this stage (loads emitted on first use)."""
            if not isinstance(arg, Node):
                return self.const(literal_value(arg, dtype), dtype)  # type: ignore[arg-type]
            if arg in names:
                return names[arg]
            if arg in self.members:
                low = self.lowerings[arg]
                if low.call is not None:
                    k = self.calls.index(arg)
                    name = f"r{self.node_id(arg)}_{s}"
                    direct = self._direct_output(arg)
                    src = f"bo{direct}" if direct is not None else f"co{k}"
                    out.line(f"{name} = {src}[j]")
                    if np.dtype(arg.dtype) != low.out_dtype:
                        name = self._finish(name, low.out_dtype, arg, out, s)
                elif self.stage[arg] < s:
                    name = f"r{self.node_id(arg)}_{s}"
                    out.line(f"{name} = buf_{self.node_id(arg)}[j]")
                else:
                    raise AssertionError("operand computed later than its user")
            else:
                i = self.seg.inputs.index(arg)
                if arg.shape == ():
                    name = f"s{i}"
                else:
                    name = f"x{i}_{s}"
                    out.line(f"{name} = b{i}[j]")
            names[arg] = name
            return name

        for n in self.seg.elementwise:
            if self.stage[n] != s:
                continue
            low = self.lowerings[n]
            operands = []
            for arg, dt in zip(low.operands(n.args), low.operand_dtypes):
                if arg is None:
                    operands.append("None")
                    continue
                if dt is None:  # cast/where condition: the operand as it is
                    operands.append(value(arg, self.operand_dtype(arg)))
                    continue
                expr = value(arg, dt)
                if isinstance(arg, Node):
                    expr = self.cast(expr, np.dtype(arg.dtype), dt, out)
                operands.append(expr)
            if low.call is not None:
                k = self.calls.index(n)
                for j, (arg, expr) in enumerate(zip(n.args, operands)):
                    if self._is_block_operand(arg) and self._passthrough(n, j) is None:
                        out.line(f"ci{k}_{j}[j] = {expr}")
                continue
            context = InlineContext(self, n, operands, low.operand_dtypes, low.out_dtype, out)
            expr = low.inline(operands, context)  # type: ignore[misc]
            t = f"t{self.node_id(n)}"
            if _keeps_type(low):
                out.line(f"{t} = {expr}")
            else:
                out.line(f"{t} = {ctor(low.out_dtype)}({expr})")
            if np.dtype(n.dtype) != low.out_dtype:
                t = self._finish(t, low.out_dtype, n, out, s)
            names[n] = t
            if n in self.buffered:
                out.line(f"buf_{self.node_id(n)}[j] = {t}")
        # outputs and the reduced value, once their values exist in this stage
        for i in self.map_outputs:
            n = self.seg.outputs[i]
            if self.avail[n] == s and (n not in self.lowerings or self._direct_output(n) is None):
                if scalar_outputs:
                    out.line(f"o{i} = {value(n, None)}")
                else:
                    out.line(f"bo{i}[j] = {value(n, None)}")
        red = self.red
        if red is not None:
            x = self.seg.reduction.args[0]  # type: ignore[union-attr]
            x_stage = self.avail.get(x, 0) if x in self.members else 0
            if x_stage == s:
                v = value(x, None)
                v = self.cast(v, np.dtype(x.aval.dtype), red.value_dtype, out)
                if red.op in (OpKind.ANY, OpKind.ALL):
                    v = truth(v, red.value_dtype)
                elif not (nd and red.sequential_axis):
                    # (row by row, ``a + v`` adds in the accumulator's own dtype: the
                    # kernel is compiled for a value_dtype and an acc_dtype accumulator)
                    v = self.cast(v, red.value_dtype, red.acc_dtype, out)
                acc = "bacc" if nd and not self._nd_scalar_reduce() else "wl"
                out.extend([f"a = {acc}[j]", f"v = {v}", f"{acc}[j] = {red.combine('a', 'v')}"])

    def _finish(self, name: str, have: np.dtype, node: Node, out: Source, s: int) -> str:
        """``name`` (of dtype ``have``) cast to ``node``'s dtype, as a local of stage ``s``."""
        cast_expr = self.cast(name, have, np.dtype(node.dtype), out)
        t = f"u{self.node_id(node)}_{s}"
        out.line(f"{t} = {cast_expr}")
        return t

    def _loop_call(self, k: int, n: Node, out: Source) -> None:
        """Write NumPy loop call ``k`` (of node ``n``) on the block: its 0-d operands, the
        pointers and strides of the views it reads and writes in place, and the call."""
        low = self.lowerings[n]
        for j, arg in enumerate(n.args):
            if not self._is_block_operand(arg):
                # a literal or 0-d operand: one element, stride 0 (as NumPy broadcasts it)
                # (a NumPy loop call casts every operand: each has a dtype)
                dt = cast("np.dtype", low.operand_dtypes[j])
                if isinstance(arg, Node):
                    i = self.seg.inputs.index(arg)
                    src = self.cast(f"s{i}", np.dtype(arg.dtype), dt, out)
                else:
                    src = self.const(literal_value(arg, dt), dt)
                out.line(f"ci{k}_{j}[0] = {src}")
        for j in range(len(n.args)):
            passed = self._passthrough(n, j)
            if passed is not None:
                out.line(f"pp[{k}, {j}] = b{passed}.ctypes.data")
                out.line(f"st[{k}, {j}] = b{passed}.strides[0]")
        direct = self._direct_output(n)
        if direct is not None:
            nin = len(n.args)
            out.line(f"pp[{k}, {nin}] = bo{direct}.ctypes.data")
            out.line(f"st[{k}, {nin}] = bo{direct}.strides[0]")
        out.line("dims[0] = m")
        out.line(
            f"_call_loop(f{k}, pp[{k}].ctypes.data, dims.ctypes.data, st[{k}].ctypes.data, d{k})"
        )


def _keeps_type(low: Lowering) -> bool:
    """Does Numba's typing of the inline expression already give the loop's output dtype?

    Float and bool arithmetic on same-dtype operands stays in that dtype, as does int64;
    smaller integers are widened by Numba and need the explicit cast back (which also wraps
    them exactly as NumPy's fixed-width arithmetic does)."""
    out = low.out_dtype
    ins = {d for d in low.operand_dtypes if d is not None}
    if out.kind == "b":
        return True
    return (out.kind == "f" and ins <= {out}) or (out == np.dtype(np.int64) and ins <= {out})
