"""The CUDA kernel of a fused segment: one grid-stride loop over the flattened domain
(:class:`CudaKernelWriter`)."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ...ir import Node, OpKind
from ..emit.literals import ctor, literal_value
from ..emit.source import Source
from .inline_templates import truth
from .lowering import InlineTemplate
from .writer import InlineContext, KernelWriter


class CudaKernelWriter(KernelWriter):
    """Writes the CUDA kernel of one segment."""

    # -- CUDA ------------------------------------------------------------------------------
    def kernels(self) -> list[str]:
        """One grid-stride kernel over the flattened domain (N-d index unravelled), writing
        map outputs and, for a reduction, one partial accumulator per thread. Inputs keep their
        own sizes (broadcast dims read at index 0): only their data goes to the device."""
        args = self.segment_call().params("cuda")
        red = self.red
        out = Source()
        out.line("@_kernel")
        with out.block(f"def k_cuda({', '.join(args)}):") as fn:
            fn.extend(["bad = False", "start = cuda.grid(1)", "step = cuda.gridsize(1)"])
            if red is not None:
                fn.line(f"r = {self.const(red.identity, red.acc_dtype)}")
            with fn.block("for flat in range(start, total, step):") as body:
                body.line("rest = flat")
                for d in range(self.rank - 1, -1, -1):
                    body.line(f"i{d} = rest % n{d}")
                    body.line(f"rest = rest // n{d}")
                self._write_elements(body)
            if red is not None:
                fn.line("acc[start] = r")
            with fn.block("if bad:") as flagged:
                flagged.line("flag[0] = 1")
        return ["from numba import cuda", "\n".join(out.lines)]

    def _write_elements(self, out: Source) -> None:
        """The grid-stride loop's body after the index: each member computed for element
        ``(i0, ...)``, the map outputs stored, the reduced value folded into ``r``."""
        red = self.red
        idx = ", ".join(f"i{d}" for d in range(self.rank)) or "0"
        names: dict[Any, str] = {}

        def value(arg: Any, dtype: np.dtype | None) -> str:
            if not isinstance(arg, Node):
                return self.const(literal_value(arg, dtype), dtype)  # type: ignore[arg-type]
            if arg in names:
                return names[arg]
            i = self.seg.inputs.index(arg)
            if arg.shape == ():
                name = f"s{i}"
            else:
                # Inputs arrive with the domain's rank but their own sizes (1 where they
                # broadcast): min() pins a broadcast dim to 0 without a branch.
                name = f"x{i}"
                at = ", ".join(f"min(i{d}, in{i}.shape[{d}] - 1)" for d in range(self.rank))
                out.line(f"{name} = in{i}[{at or '0'}]")
            names[arg] = name
            return name

        for n in self.seg.elementwise:
            low = self.lowerings[n]
            operands = []
            for arg, dt in zip(low.operands(n.args), low.operand_dtypes):
                if arg is None:
                    operands.append("None")
                elif dt is None:
                    operands.append(value(arg, self.operand_dtype(arg)))
                else:
                    expr = value(arg, dt)
                    if isinstance(arg, Node):
                        expr = self.cast(expr, np.dtype(arg.dtype), dt, out)
                    operands.append(expr)
            b = InlineContext(self, n, operands, low.operand_dtypes, low.out_dtype, out)
            t = f"t{self.node_id(n)}"
            inline = cast("InlineTemplate", low.inline)  # (CUDA computes every op inline)
            out.line(f"{t} = {ctor(low.out_dtype)}({inline(operands, b)})")
            if np.dtype(n.dtype) != low.out_dtype:
                converted = self.cast(t, low.out_dtype, np.dtype(n.dtype), out)
                out.line(f"{t}c = {converted}")
                t = f"{t}c"
            names[n] = t
        for i in self.map_outputs:
            out.line(f"out{i}[{idx}] = {value(self.seg.outputs[i], None)}")
        if red is not None:
            x = self.seg.reduction.args[0]  # type: ignore[union-attr]
            v = value(x, None)
            v = self.cast(v, np.dtype(x.aval.dtype), red.value_dtype, out)
            if red.op in (OpKind.ANY, OpKind.ALL):
                v = truth(v, red.value_dtype)
            else:
                v = self.cast(v, red.value_dtype, red.acc_dtype, out)
            out.line(f"v = {v}")
            out.line(f"r = {red.combine('r', 'v')}")
