"""The kernel writer's common core: a segment's lowerings, the expression context inline
templates see (:class:`InlineContext`), constants, helpers and casts, and the module text
around the target's kernels (:class:`KernelWriter`, subclassed per target)."""

from __future__ import annotations

import hashlib
import math
from typing import Any, NamedTuple

import numpy as np

from ...ir import Node, OpKind
from ...passes.fusion import Segment
from .. import codegen
from .. import fast_math as fm
from ..emit.literals import BOOL, const_source, ctor, default_nan, dtname, weak_dtype
from ..emit.source import Source
from ..segment_call import Scratch, SegmentCall
from ..static_shapes import ranked_shape
from .helper_templates import helper_source
from .inline_templates import truth
from .lowering import Lowering, lower
from .reductions import reduction_plan


class InlineContext:
    """Emission context of one node's expression: operands, constants, helper calls, and
    ``out``, where the statements the expression needs first are written."""

    def __init__(
        self,
        kernel: KernelWriter,
        node: Node,
        operands: list[str],
        dtypes: list[np.dtype | None],
        out_dtype: np.dtype,
        out: Source,
    ) -> None:
        self.k = kernel
        self.node = node
        self.ops = operands
        self.dtypes = dtypes
        self.out_dtype = out_dtype
        self.out = out
        loop_dt = next((d for d in dtypes if d is not None), out_dtype)
        self.loop_dtype = loop_dt
        self.one: str = kernel.const(1, loop_dt)
        self.zero: str = kernel.const(0, loop_dt)

    def const(self, value: Any) -> str:
        return self.k.const(value, self.loop_dtype)

    def truth(self, k: int) -> str:
        dt = self.dtypes[k]
        if dt is None:
            dt = self.k.operand_dtype(self.node.args[k])
        return truth(self.ops[k], dt)

    def let(self, expr: str, dtype: np.dtype) -> str:
        name = self.k.fresh("c")
        self.out.line(f"{name} = {expr}")
        return name

    def cast_arg(self, k: int, dst: np.dtype) -> str:
        src = self.k.operand_dtype(self.node.args[k])
        in_range = self.node in self.k.in_range_casts
        return self.k.cast(self.ops[k], src, dst, self.out, in_range)

    def helper(self, kind: str, o: list[str]) -> str:
        name = self.k.helper(kind, self.loop_dtype)
        return f"{name}({', '.join(o)})"

    def float_op(self, op: str, o: list[str]) -> str:
        """``a <op> b`` on floats, with the NaN the CPU's instruction gives where LLVM may
        give another. LLVM treats a NaN result's sign and payload as unspecified, so:

        * where both operands may be constants to it (literals, ``where`` of literals, bool
          casts: ``select``s it folds arithmetic into, :meth:`KernelWriter.foldable`), an
          invalid operation (``0/0``, ``inf - inf``) may be folded into ``+nan`` where the
          CPU makes ``-nan`` (x86);
        * where an operand is a negation (``-x``, ``abs``, ``x * -1.0``; :meth:`KernelWriter
          .negated`), it rewrites ``(-a) + b`` into ``b - a``, and a NaN ``a`` comes back
          with the other sign.

        There the result is pinned to what the CPU computes: ``a``'s NaN if ``a`` is one,
        else ``b``'s, else the CPU's own new NaN (:func:`default_nan`). Kernels over loaded
        data (W3, W4) need neither and keep the plain operation."""
        plain = f"({o[0]} {op} {o[1]})"
        if not (self.k.foldable(self.node) or self.k.negated(self.node)):
            return plain
        r = self.let(plain, self.loop_dtype)
        nan = self.k.const(default_nan(self.loop_dtype), self.loop_dtype)
        return (
            f"({r} if {r} == {r} else ({o[0]} if {o[0]} != {o[0]} else "
            f"({o[1]} if {o[1]} != {o[1]} else {nan})))"
        )

    def flag(self, cond: str) -> None:
        """Raise the kernel's ``bad`` flag where ``cond`` holds (NumPy reruns the segment)."""
        self.k.check(cond, self.out)

    def int_power(self, o: list[str]) -> str:
        if self.loop_dtype.kind == "i":
            self.k.check(f"({o[1]} < 0)", self.out)
        return self.helper("ipow", o)

    def device_math(self, name: str, x: str) -> str:
        return f"{self.k.helper(name, self.loop_dtype)}({x})"

    def fast_math(self, fn: str, o: list[str]) -> str:
        """A call of ``fn``'s fast-math helper; where the approximation does not hold
        (:func:`.fast_math.guard`: a huge ``sin`` argument, a ``pow`` special case) the
        kernel raises ``bad`` and NumPy reruns the segment."""
        cond = fm.guard(fn, self.loop_dtype, o, self.const)
        if cond is not None:
            self.flag(cond)
        return f"{self.k.fast_helper(fn, self.loop_dtype)}({', '.join(o)})"


class KernelSource(NamedTuple):
    """A generated kernel module: its text, its content hash (the kernel's identity across
    processes), its target, and how its kernels are called (None for a whole-graph
    function, which has a signature of its own)."""

    source: str
    key: str
    target: str
    call: SegmentCall | None = None


class EmbeddedKernel(NamedTuple):
    """One kernel variant written for embedding in a whole-graph module: its function text,
    the module-level constants and helper functions it reads, and its call description
    (whose ``scratch`` lists the block buffers it takes as trailing parameters)."""

    text: str
    constants: str
    helpers: dict[str, str]
    call: SegmentCall


class KernelWriter:
    """Writes the kernels of one segment for one target."""

    def __init__(
        self, seg: Segment, target: str, prefix: str = "", fast_math: bool = False
    ) -> None:
        self.seg = seg
        self.target = target
        self.fast_math = fast_math
        self.prefix = prefix
        self.scratch: dict[str, tuple[Scratch, ...]] = {}
        self.rank = len(seg.domain)
        self.members = set(seg.nodes)
        self.helpers: dict[str, str] = {}
        self.consts: dict[tuple[str, str], str] = {}
        self.const_lines: list[str] = []
        self._fresh = 0
        self.lowerings: dict[Node, Lowering] = {
            n: lower(n, target, fast_math) for n in seg.elementwise
        }
        self.red = reduction_plan(seg.reduction) if seg.reduction is not None else None
        self.array_inputs = [i for i, n in enumerate(seg.inputs) if n.shape != ()]
        self.scalar_inputs = [i for i, n in enumerate(seg.inputs) if n.shape == ()]
        self.map_outputs = [i for i, n in enumerate(seg.outputs) if n is not seg.reduction]
        self.calls = [n for n in seg.elementwise if self.lowerings[n].call is not None]
        self._const_like: dict[Node, bool] = {}
        self._negation: dict[Node, bool] = {}
        #: float-to-integer casts whose operand the caller proved inside the integer's range
        #: (the whole-graph writer's :func:`..whole_graph.cast_ranges.exact_casts`)
        self.in_range_casts: frozenset[Node] = frozenset()

    def segment_call(self, variant: str | None = None) -> SegmentCall:
        """This segment's call description (with the block buffers written so far)."""
        seg = self.seg
        deps = _input_deps(seg)
        out_deps = []
        for o in seg.outputs:
            src = o.args[0] if o is seg.reduction else o
            out_deps.append(
                frozenset(deps.get(src, {seg.inputs.index(src)} if src in seg.inputs else set()))
            )
        return SegmentCall(
            self.rank,
            tuple(self.array_inputs),
            tuple(self.scalar_inputs),
            tuple(self.map_outputs),
            tuple(np.dtype(n.dtype) for n in seg.inputs),
            tuple(np.dtype(n.dtype) for n in seg.outputs),
            tuple(self.lowerings[n].call for n in self.calls),  # type: ignore[misc]
            self.red,
            tuple(out_deps),
            tuple(self.scratch.items()),
        )

    # -- small utilities ---------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self._fresh += 1
        return f"{prefix}{self._fresh}"

    def const(self, value: Any, dtype: np.dtype) -> str:
        src = const_source(value, dtype)
        key = (src, dtname(dtype))
        name = self.consts.get(key)
        if name is None:
            name = self.consts[key] = f"{self.prefix}K{len(self.consts)}"
            self.const_lines.append(f"{name} = {src}")
        return name

    def helper(self, kind: str, dtype: np.dtype) -> str:
        decorator = "@_device" if self.target == "cuda" else "@_inline"
        name, src = helper_source(kind, dtype, decorator)
        self.helpers[name] = src
        return name

    def fast_helper(self, fn: str, dtype: np.dtype) -> str:
        """Emit ``fn``'s fast-math helper for ``dtype`` (and what it calls); its name."""
        self.helpers.update(fm.helpers(fn, dtype, "@_inline"))
        return fm.helper_name(fn, dtype)

    def foldable(self, node: Node) -> bool:
        """May LLVM fold float arithmetic ``node`` at compile time? Only if every operand may
        be a constant in some branch of the code (:meth:`_constant_arm`); an operand loaded
        from an array or passed in never is, so kernels over data (W3, W4) are unaffected."""
        return all(
            self._constant_arm(a) for a in self.lowerings[node].operands(node.args) if a is not None
        )

    def negated(self, node: Node) -> bool:
        """Does a negation reach float arithmetic ``node`` inside the kernel (through any
        inline ops, not through a NumPy loop call's buffer)? LLVM moves ``fneg`` through
        arithmetic (``(-a) + b`` becomes ``b - a``), which changes the sign of a NaN."""
        args = self.lowerings[node].operands(node.args)
        return self._negation_literal(node, args) or any(
            self._negates(a) for a in args if isinstance(a, Node)
        )

    @staticmethod
    def _negation_literal(node: Node, args: list[Any]) -> bool:
        """``x * -1.0``, ``x / -1.0`` and ``-0.0 - x`` are ``fneg x`` to LLVM (a NaN ``x``
        comes back with its sign flipped; the CPU's instruction returns it as it is)."""

        def lit(a: Any) -> float | None:
            return float(a) if isinstance(a, (int, float)) and not isinstance(a, bool) else None

        if node.op is OpKind.MULTIPLY:
            return -1.0 in (lit(args[0]), lit(args[1]))
        if node.op is OpKind.DIVIDE:
            return lit(args[1]) == -1.0
        if node.op is OpKind.SUBTRACT:
            first = lit(args[0])
            return first == 0.0 and math.copysign(1.0, first) < 0
        return False

    def _negates(self, arg: Node) -> bool:
        if arg not in self.members:
            return False
        got = self._negation.get(arg)
        if got is None:
            low = self.lowerings[arg]
            args = [a for a in low.operands(arg.args) if a is not None]
            if low.call is not None or low.approx is not None:
                # a fast-math helper returns a NaN operand as it is, through a select LLVM
                # cannot turn into a subtraction: a barrier, as a loop call's buffer is
                got = False
            elif arg.op in (
                OpKind.NEGATIVE,
                OpKind.ABSOLUTE,
                OpKind.FABS,
                OpKind.SIGN,
            ) or self._negation_literal(arg, args):
                got = True
            else:
                got = any(self._negates(a) for a in args if isinstance(a, Node))
            self._negation[arg] = got
        return got

    def _constant_arm(self, arg: Any) -> bool:
        """Can ``arg``'s expression be a ``select`` with a constant arm (or a constant)?
        Literals are; a bool cast to a number is ``select(b, 1, 0)``; ``where``, ``sign``,
        ``heaviside``, ``clip``, ``maximum`` ... pick among their operands and constants."""
        if not isinstance(arg, Node):
            return True
        if arg.dtype == BOOL:
            return True
        if arg not in self.members:
            return False
        got = self._const_like.get(arg)
        if got is None:
            low = self.lowerings[arg]
            args = [a for a in low.operands(arg.args) if a is not None]
            if low.call is not None:
                got = False
            elif arg.op in (OpKind.ADD, OpKind.SUBTRACT, OpKind.MULTIPLY, OpKind.DIVIDE):
                got = all(self._constant_arm(a) for a in args)
            else:
                got = arg.op in (OpKind.SIGN, OpKind.HEAVISIDE) or any(
                    self._constant_arm(a) for a in args
                )
            self._const_like[arg] = got
        return got

    def check(self, cond: str, out: Source) -> None:
        """Write the statement raising the kernel's ``bad`` flag where ``cond`` holds."""
        out.line(f"bad = bad | {cond}")

    def operand_dtype(self, arg: Any) -> np.dtype:
        if isinstance(arg, Node):
            return np.dtype(arg.dtype)
        return weak_dtype(arg)

    def cast(
        self, expr: str, src: np.dtype, dst: np.dtype, out: Source, in_range: bool = False
    ) -> str:
        """``expr`` (of dtype ``src``) as ``dst``, exactly as NumPy's ``astype`` casts (the
        statements it needs first written to ``out``). ``in_range``: a float ``expr`` is
        known to be finite and to truncate into ``dst``'s range, so it needs no test."""
        src, dst = np.dtype(src), np.dtype(dst)
        if src == dst:
            return expr
        if dst == BOOL:
            return f"({expr} != 0)"
        if src.kind == "f" and dst.kind in "iu" and in_range:
            return f"{ctor(dst)}({expr})"
        if src.kind == "f" and dst.kind in "iu":
            # NaN, inf and out-of-range values have no defined integer: NumPy decides them.
            v = self.fresh("v")
            out.line(f"{v} = {expr}")
            if dst.kind == "i":
                lo, hi = -(2.0 ** (dst.itemsize * 8 - 1)) - 1, 2.0 ** (dst.itemsize * 8 - 1)
            else:
                lo, hi = -1.0, 2.0 ** (dst.itemsize * 8)
            lo_c = self.const(np.array(lo).astype(src), src)
            hi_c = self.const(np.array(hi).astype(src), src)
            self.check(f"(not (({v} > {lo_c}) & ({v} < {hi_c})))", out)
            safe = f"({v} if ({v} > {lo_c}) & ({v} < {hi_c}) else {self.const(0, src)})"
            return f"{ctor(dst)}({safe})"
        if src == BOOL:
            return f"({self.const(1, dst)} if {expr} else {self.const(0, dst)})"
        return f"{ctor(dst)}({expr})"

    def node_id(self, node: Node) -> int:
        """A member's position in the segment (the number in its local names)."""
        return self.seg.nodes.index(node)

    # -- module ------------------------------------------------------------------------------
    def kernels(self) -> list[str]:
        """The texts of the target's kernels (and what they import), in module order."""
        raise NotImplementedError

    def write(self) -> KernelSource:
        """The kernel module: header, constants, helpers and :meth:`kernels`."""
        body = self.kernels()
        header = [
            f"# kernel_ext generated kernel (codegen v{codegen.CODEGEN_VERSION}, "
            f"target {self.target})",
            f"# segment: {self.seg.describe()}",
            # The signature is part of the text (so of the cache key): two segments whose
            # code reads the same can still differ in their inputs' dtypes.
            "# inputs: "
            + ", ".join(f"{dtname(n.dtype)}/{len(ranked_shape(n))}" for n in self.seg.inputs),
            "# outputs: "
            + ", ".join(f"{dtname(n.dtype)}/{len(ranked_shape(n))}" for n in self.seg.outputs),
            "import math",
            "import numpy as np",
        ]
        if self.target == "cpu":
            header.append(
                "from kernel_ext.backends.numba_decorators import "
                "inline as _inline, kernel as _kernel, call_loop as _call_loop"
            )
        else:
            header.append(
                "from kernel_ext.backends.numba_cuda import device as _device, kernel as _kernel"
            )
        header.append(
            codegen.WRAPPING_IMPORT.format(
                module="numba_decorators" if self.target == "cpu" else "numba_cuda"
            )
        )
        parts = ["\n".join(header), "\n".join(self.const_lines)]
        parts += list(self.helpers.values())
        parts += body
        source = "\n\n".join(p for p in parts if p) + "\n"
        key = hashlib.sha256(source.encode()).hexdigest()[:24]
        return KernelSource(source, key, self.target, self.segment_call())


def _input_deps(seg: Segment) -> dict[Node, set[int]]:
    """For each member, the indices of the segment's array inputs it depends on."""
    deps: dict[Node, set[int]] = {}
    index = {n: i for i, n in enumerate(seg.inputs)}
    for n in seg.nodes:
        d: set[int] = set()
        for a in n.inputs:
            if a in deps:
                d |= deps[a]
            elif a in index and a.shape != ():
                d.add(index[a])
        deps[n] = d
    return deps
