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
        body = self._cpu_kernel_lines(variant == "nd")
        scratch = tuple(x for x in body if isinstance(x, Scratch))
        self.scratch[variant] = scratch
        params = self.segment_call(variant).params(variant, scratch=embedded)
        lines = [decorator, f"def {name}({', '.join(params)}):", "    bad = False"]
        if not embedded:  # allocated once per call, before any loop
            lines += [f"    {x.name} = {x.allocation()}" for x in scratch]
        lines += [x for x in body if not isinstance(x, Scratch)]
        return "\n".join(lines)

    def _cpu_kernel_lines(self, nd: bool) -> list[str | Scratch]:
        """The body of a CPU kernel; its block buffers appear as :class:`Scratch` entries."""
        red = self.red
        # Reductions folded through lanes (_lane_fold): the flat kernel's, and an N-d
        # kernel's over all axes or over the last axis (one group per row); a reduction over
        # another axis accumulates into the acc row of each block instead (as NumPy does).
        lanes = red is not None and (not nd or self._nd_scalar_reduce())
        per_row = bool(lanes and nd and red is not None and red.axis is not None)
        last = f"n{self.rank - 1}" if nd else "stop - start"
        lines = self._block_buffers()
        for k, n in enumerate(self.calls):
            lines += self._loop_call_vectors(k, n)
        if lanes:
            lines += self._lane_setup(last, per_row)
        row_indent, head = self._block_loop(nd, per_row, last)
        lines += head
        indent = row_indent + "    "
        lines += self._block_views(nd, indent, lanes)
        for s in range(self.n_stages):
            lines.append(f"{indent}for j in range(m):")
            lines.extend(self._stage_body(s, indent + "    ", nd) or [f"{indent}    pass"])
            for k, n in enumerate(self.calls):
                if self.stage[n] == s:
                    lines.extend(self._call_lines(k, n, indent))
        if lanes:
            end = row_indent if per_row else "    "
            lines += self._lane_finish(indent, end)
            if nd:
                lines += self._store_lane_total(end)
        lines.append("    return bad, r" if lanes and not nd else "    return bad")
        return lines

    def _block_buffers(self) -> list[str | Scratch]:
        """The buffers of values a later stage reads, and the argument vectors of the NumPy
        loop calls (one row of pointers and strides per call)."""
        lines: list[str | Scratch] = []
        for n in sorted(self.buffered, key=self.seg.nodes.index):
            buf = Scratch(f"buf_{self.node_id(n)}", str(codegen.BLOCK), ctor(np.dtype(n.dtype)))
            lines.append(buf)
        if self.calls:
            lines.append(Scratch("pp", f"({len(self.calls)}, 4)", "np.uintp"))
            lines.append(Scratch("st", f"({len(self.calls)}, 4)", "np.intp"))
            lines.append(Scratch("dims", "1", "np.intp"))
        return lines

    def _loop_call_vectors(self, k: int, n: Node) -> list[str | Scratch]:
        """The operand and result buffers of NumPy loop call ``k`` (of node ``n``), with
        their pointers and strides set once per kernel call."""
        lines: list[str | Scratch] = []
        ufunc, loop = self.lowerings[n].call  # type: ignore[misc]
        nin = ufunc.nin
        for j, a in enumerate(n.args):
            if self._passthrough(n, j) is not None:
                continue  # the loop reads the input's block view in place (per block)
            size = codegen.BLOCK if self._is_block_operand(a) else 1
            lines.append(Scratch(f"ci{k}_{j}", str(size), ctor(loop[j])))
            lines.append(f"    pp[{k}, {j}] = ci{k}_{j}.ctypes.data")
            step = loop[j].itemsize if self._is_block_operand(a) else 0
            lines.append(f"    st[{k}, {j}] = {step}")
        if self._direct_output(n) is None:
            lines.append(Scratch(f"co{k}", str(codegen.BLOCK), ctor(loop[nin])))
            lines.append(f"    pp[{k}, {nin}] = co{k}.ctypes.data")
            lines.append(f"    st[{k}, {nin}] = {loop[nin].itemsize}")
        return lines

    def _lane_setup(self, last: str, per_row: bool) -> list[str | Scratch]:
        """The lanes and the cascade of a reduction folded through lanes, and (unless each
        row starts its own) the block and chunk counters."""
        red = self.red
        assert red is not None
        # lanes a call never reaches are never read: only the first ones start at the
        # identity (a call on 5 elements does not initialise 1024)
        lines: list[str | Scratch] = [
            Scratch("wl", str(codegen.BLOCK), ctor(red.acc_dtype)),
            Scratch("cs", "64", ctor(red.acc_dtype)),
            f"    for l in range(min({codegen.BLOCK}, {last})):",
            f"        wl[l] = {self.const(red.identity, red.acc_dtype)}",
        ]
        if not per_row:
            lines += ["    nb = 0", "    nc = 0", "    used = 0"]
        return lines

    def _block_loop(self, nd: bool, per_row: bool, last: str) -> tuple[str, list[str | Scratch]]:
        """The loops down to the block loop over the last dimension (``blk``, ``m``
        elements): the indent of a row's statements, and the loop lines."""
        indent = "    "
        lines: list[str | Scratch] = []
        if not nd:
            lines.append(f"{indent}for blk in range(start, stop, {codegen.BLOCK}):")
            lines.append(f"{indent}    m = min({codegen.BLOCK}, stop - blk)")
            return indent, lines
        for d in range(self.rank - 1):
            lines.append(f"{indent}for i{d} in range(n{d}):")
            indent += "    "
        if per_row:
            lines += [f"{indent}nb = 0", f"{indent}nc = 0", f"{indent}used = 0"]
        lines.append(f"{indent}for blk in range(0, {last}, {codegen.BLOCK}):")
        lines.append(f"{indent}    m = min({codegen.BLOCK}, {last} - blk)")
        return indent, lines

    def _block_views(self, nd: bool, indent: str, lanes: bool) -> list[str | Scratch]:
        """The block's views of the inputs, the map outputs and (an N-d reduction over an
        axis other than the last) the accumulator row."""
        lines: list[str | Scratch] = []
        # Block views, indexed by the non-negative loop variable j: indexing the whole array
        # with ``blk + j`` makes Numba handle negative indices and defeats vectorisation.
        lead = "".join(f"i{d}, " for d in range(self.rank - 1)) if nd else ""
        # A row of a strided N-d view (``u[1:-1, 1:-1]``) is typed as a strided array, whose
        # loads LLVM does not vectorise; where the caller guarantees unit-stride rows,
        # ``np.ascontiguousarray`` retypes the row as contiguous without a copy (W11's stencil
        # ran 2.2x faster).
        for i in self.array_inputs:
            if nd and self._own_rows:
                lines += self._contiguous_row(i, lead, indent)
                continue
            lines.append(f"{indent}b{i} = {self._row(f'in{i}', f'{lead}blk:blk + m', nd)}")
        for i in self.map_outputs:
            lines.append(f"{indent}bo{i} = {self._row(f'out{i}', f'{lead}blk:blk + m', nd)}")
        red = self.red
        if red is not None and not lanes:
            idx = [f"i{d}" for d in range(self.rank - 1)] + ["blk:blk + m"]
            idx[red.axis] = "0"  # type: ignore[index]
            lines.append(f"{indent}bacc = acc[{', '.join(idx)}]")
        return lines

    def _lane_finish(self, indent: str, end: str) -> list[str]:
        """After each block: count it, fold the lanes every :data:`.CHUNK_BLOCKS` blocks; at
        ``end`` (the kernel's, or each row's) fold what is left and total the cascade (``r``)."""
        lines = [
            f"{indent}nb += 1",
            f"{indent}used = max(used, m)",
            f"{indent}if nb == {codegen.CHUNK_BLOCKS}:",
        ]
        lines += self._lane_fold(indent + "    ")
        lines.append(f"{end}if used > 0:")
        lines += self._lane_fold(end + "    ")
        lines += self._cascade_total(end)
        return lines

    def _store_lane_total(self, end: str) -> list[str]:
        """An N-d kernel's lane total ``r`` combined into its element of ``acc``."""
        red = self.red
        assert red is not None
        idx = ", ".join(
            ["0" if d == red.axis or red.axis is None else f"i{d}" for d in range(self.rank - 1)]
            + ["0"]
        )
        return [
            f"{end}a = acc[{idx}]",
            f"{end}v = r",
            f"{end}acc[{idx}] = {red.combine('a', 'v')}",
        ]

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
        body = self._stage_body(0, "    ", nd=False, scalar_outputs=True)
        params = ", ".join(f"s{i}" for i in range(len(self.seg.inputs)))
        outs = "".join(f", o{i}" for i in self.map_outputs)
        return "\n".join(
            [
                decorator,
                f"def {name}({params}):",
                "    bad = False",
                *body,
                f"    return (bad{outs})",
            ]
        )

    def _row(self, param: str, index: str, nd: bool) -> str:
        """``param[index]`` (a block of one row), retyped as a contiguous array where the
        caller guarantees unit-stride rows (``np.ascontiguousarray`` of such a block is a
        view in Numba, typed C-contiguous)."""
        if nd and param in self.unit_rows:
            return f"np.ascontiguousarray({param}[{index}])"
        return f"{param}[{index}]"

    def _contiguous_row(self, i: int, lead: str, indent: str) -> list[str | Scratch]:
        """``b<i>``, the block of input ``i``'s row typed as a contiguous array: the row
        itself where it has unit stride (any C-ordered input, and one broadcast along a
        leading axis, as a bias row is), else a copy into a block buffer (a column
        broadcast along the row, a strided view).

        The ``nd`` kernel's inputs are typed as any-layout arrays, whose loads LLVM does not
        vectorise: W8's ``where(mask, g, 0)`` + column sum took 63 µs at 256x256 float32
        with strided rows and 16 µs with contiguous ones (NumPy: 36 µs)."""
        dtype = np.dtype(self.seg.inputs[i].dtype)
        row, copy = f"rw{i}", f"rc{i}"
        return [
            Scratch(copy, str(codegen.BLOCK), ctor(dtype)),
            f"{indent}{row} = in{i}[{lead}blk:blk + m]",
            f"{indent}if {row}.strides[0] == {dtype.itemsize}:",
            f"{indent}    b{i} = np.ascontiguousarray({row})",
            f"{indent}else:",
            f"{indent}    for j in range(m):",
            f"{indent}        {copy}[j] = {row}[j]",
            f"{indent}    b{i} = {copy}[:m]",
        ]

    def _lane_fold(self, indent: str) -> list[str]:
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
        i2 = indent
        return [
            f"{i2}w = 1",
            f"{i2}while w < used:",
            f"{i2}    w *= 2",
            f"{i2}while w > 1:",
            f"{i2}    w //= 2",
            f"{i2}    for l in range(min(w, used - w)):",
            f"{i2}        a = wl[l]",
            f"{i2}        v = wl[l + w]",
            f"{i2}        wl[l] = {red.combine('a', 'v')}",
            f"{i2}r = wl[0]",
            f"{i2}for l in range(used):",
            f"{i2}    wl[l] = {ident}",
            f"{i2}c = nc",
            f"{i2}lvl = 0",
            f"{i2}while c & 1:",
            f"{i2}    a = cs[lvl]",
            f"{i2}    v = r",
            f"{i2}    r = {red.combine('a', 'v')}",
            f"{i2}    lvl += 1",
            f"{i2}    c >>= 1",
            f"{i2}cs[lvl] = r",
            f"{i2}nc += 1",
            f"{i2}nb = 0",
            f"{i2}used = 0",
        ]

    def _cascade_total(self, indent: str) -> list[str]:
        """``r``: the cascade's chunk totals combined (the identity when there were none)."""
        red = self.red
        assert red is not None
        return [
            f"{indent}r = {self.const(red.identity, red.acc_dtype)}",
            f"{indent}lvl = 0",
            f"{indent}while nc:",
            f"{indent}    if nc & 1:",
            f"{indent}        a = cs[lvl]",
            f"{indent}        v = r",
            f"{indent}        r = {red.combine('a', 'v')}",
            f"{indent}    lvl += 1",
            f"{indent}    nc >>= 1",
        ]

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

    def _stage_body(self, s: int, indent: str, nd: bool, scalar_outputs: bool = False) -> list[str]:
        """Statements computing stage ``s`` for element ``j``; ``scalar_outputs``: outputs
        assigned to locals ``o<i>`` instead of stored into their blocks (a 0-d kernel)."""
        lines: list[str] = []
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
                    out = self._direct_output(arg)
                    src = f"bo{out}" if out is not None else f"co{k}"
                    lines.append(f"{indent}{name} = {src}[j]")
                    if np.dtype(arg.dtype) != low.out_dtype:
                        name = self._finish(name, low.out_dtype, arg, lines, indent, s)
                elif self.stage[arg] < s:
                    name = f"r{self.node_id(arg)}_{s}"
                    lines.append(f"{indent}{name} = buf_{self.node_id(arg)}[j]")
                else:
                    raise AssertionError("operand computed later than its user")
            else:
                i = self.seg.inputs.index(arg)
                if arg.shape == ():
                    name = f"s{i}"
                else:
                    name = f"x{i}_{s}"
                    lines.append(f"{indent}{name} = b{i}[j]")
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
                    expr = self.cast(expr, np.dtype(arg.dtype), dt, lines, indent)
                operands.append(expr)
            if low.call is not None:
                k = self.calls.index(n)
                for j, (arg, expr) in enumerate(zip(n.args, operands)):
                    if self._is_block_operand(arg) and self._passthrough(n, j) is None:
                        lines.append(f"{indent}ci{k}_{j}[j] = {expr}")
                continue
            body = InlineContext(
                self, n, operands, low.operand_dtypes, low.out_dtype, lines, indent
            )
            expr = low.inline(operands, body)  # type: ignore[misc]
            t = f"t{self.node_id(n)}"
            if _keeps_type(low):
                lines.append(f"{indent}{t} = {expr}")
            else:
                lines.append(f"{indent}{t} = {ctor(low.out_dtype)}({expr})")
            if np.dtype(n.dtype) != low.out_dtype:
                t = self._finish(t, low.out_dtype, n, lines, indent, s)
            names[n] = t
            if n in self.buffered:
                lines.append(f"{indent}buf_{self.node_id(n)}[j] = {t}")
        # outputs and the reduced value, once their values exist in this stage
        for i in self.map_outputs:
            n = self.seg.outputs[i]
            if self.avail[n] == s and (n not in self.lowerings or self._direct_output(n) is None):
                if scalar_outputs:
                    lines.append(f"{indent}o{i} = {value(n, None)}")
                else:
                    lines.append(f"{indent}bo{i}[j] = {value(n, None)}")
        red = self.red
        if red is not None:
            x = self.seg.reduction.args[0]  # type: ignore[union-attr]
            x_stage = self.avail.get(x, 0) if x in self.members else 0
            if x_stage == s:
                v = value(x, None)
                v = self.cast(v, np.dtype(x.aval.dtype), red.value_dtype, lines, indent)
                if red.op in (OpKind.ANY, OpKind.ALL):
                    v = truth(v, red.value_dtype)
                elif not (nd and red.sequential_axis):
                    # (row by row, ``a + v`` adds in the accumulator's own dtype: the
                    # kernel is compiled for a value_dtype and an acc_dtype accumulator)
                    v = self.cast(v, red.value_dtype, red.acc_dtype, lines, indent)
                if nd and not self._nd_scalar_reduce():
                    lines.append(f"{indent}a = bacc[j]")
                    lines.append(f"{indent}v = {v}")
                    lines.append(f"{indent}bacc[j] = {red.combine('a', 'v')}")
                else:
                    lines.append(f"{indent}a = wl[j]")
                    lines.append(f"{indent}v = {v}")
                    lines.append(f"{indent}wl[j] = {red.combine('a', 'v')}")
        return lines

    def _finish(
        self, name: str, have: np.dtype, node: Node, lines: list[str], indent: str, s: int
    ) -> str:
        out = self.cast(name, have, np.dtype(node.dtype), lines, indent)
        t = f"u{self.node_id(node)}_{s}"
        lines.append(f"{indent}{t} = {out}")
        return t

    def _call_lines(self, k: int, n: Node, indent: str) -> list[str]:
        low = self.lowerings[n]
        lines: list[str] = []
        for j, arg in enumerate(n.args):
            if not self._is_block_operand(arg):
                # a literal or 0-d operand: one element, stride 0 (as NumPy broadcasts it)
                # (a NumPy loop call casts every operand: each has a dtype)
                dt = cast("np.dtype", low.operand_dtypes[j])
                if isinstance(arg, Node):
                    i = self.seg.inputs.index(arg)
                    src = self.cast(f"s{i}", np.dtype(arg.dtype), dt, lines, indent)
                else:
                    src = self.const(literal_value(arg, dt), dt)
                lines.append(f"{indent}ci{k}_{j}[0] = {src}")
        for j in range(len(n.args)):
            passed = self._passthrough(n, j)
            if passed is not None:
                lines.append(f"{indent}pp[{k}, {j}] = b{passed}.ctypes.data")
                lines.append(f"{indent}st[{k}, {j}] = b{passed}.strides[0]")
        out = self._direct_output(n)
        if out is not None:
            nin = len(n.args)
            lines.append(f"{indent}pp[{k}, {nin}] = bo{out}.ctypes.data")
            lines.append(f"{indent}st[{k}, {nin}] = bo{out}.strides[0]")
        lines.append(f"{indent}dims[0] = m")
        lines.append(
            f"{indent}_call_loop(f{k}, pp[{k}].ctypes.data, dims.ctypes.data, "
            f"st[{k}].ctypes.data, d{k})"
        )
        return lines


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
