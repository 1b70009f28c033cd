"""Segment runners: the generated host code around one fused segment's kernel call.

A runner is generated Python, one per planned segment of the fused executor
(:mod:`.fused`)::

    v_out, v_total, = _seg0(v_x, v_a, v_b)

It works out the iteration domain (NumPy broadcasting of the array inputs' shapes), allocates
the outputs (or reuses its previous large output once the caller has dropped it:
:func:`take_output`), calls the segment's kernel — on the CPU the contiguous ``k_flat``
(split over threads for large arrays) or the strided, broadcasting ``k_nd``; on CUDA one
grid-stride launch — and finishes reductions. Until a kernel is compiled, for sizes below the
cost model's break-even, for empty reductions, or when a kernel flags a value only NumPy
defines (a NaN cast to int), the runner calls the segment's *fallback*: the same ops through
NumPy, so results and errors are NumPy's own.
"""

from __future__ import annotations

import math
import sys
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..ir import Node, OpKind
from .emit import Emitter, Namer, Scope, Source
from .parallel import run_parallel
from .segment_call import Arg, CallRenderer, SegmentCall
from .static_shapes import ranked_shape
from .ufunc_loops import find_loop

if TYPE_CHECKING:
    from .fused import SegmentPlan

#: A flat kernel's output of at least this many bytes is recycled (:func:`take_output`).
#: Measured on the dev machine: a fresh 40 MB array costs 7-8 ms of CPU in page faults and
#: zeroing when the kernel first writes it (``np.empty`` + fill 12-14 ms, filling a reused
#: one 5-6 ms), a third of W3's kernel time. Smaller arrays come from malloc's free lists,
#: already faulted in (glibc maps only allocations above its 32 MB ceiling afresh each time).
RECYCLE_BYTES = 4 << 20


def take_output(slot: list, n: int, dtype: np.dtype) -> np.ndarray:
    """A 1-D output of ``n`` elements: the runner's previous output if nothing else refers
    to it any more, else a new ``np.empty``.

    ``slot`` holds the runner's last large output (:func:`keep_output`). Its array is reused
    only when the reference count proves that nobody else can see it: the caller dropped the
    result, and no view, memoryview or weak reference of it exists (a view holds its base).
    ``list.pop`` hands the array to one thread only, so concurrent calls never share it.
    """
    try:
        old = slot.pop()
    except IndexError:
        return np.empty(n, dtype)
    # references: ``old`` and getrefcount's argument
    if (
        sys.getrefcount(old) == 2
        and not weakref.getweakrefcount(old)
        and old.shape == (n,)
        and old.dtype == dtype
    ):
        return old
    return np.empty(n, dtype)


def keep_output(slot: list, out: np.ndarray) -> None:
    """Remember ``out`` (being returned) for :func:`take_output` on the next call. The slot
    keeps one array: what a runner retains between calls is its last large output."""
    slot[:] = (out,)


class _RunnerWriter(CallRenderer):
    """What the CPU and CUDA runners share: the NumPy fallback of a segment and the names
    of the runner's parameters; the subclasses render the kernel call itself. The functions
    are written to :attr:`out`, one after another."""

    def __init__(self, plan: SegmentPlan, idx: int, namer: Namer, hot: int = 0) -> None:
        self.plan = plan
        self.hot = hot
        self.seg = plan.segment
        self.call: SegmentCall = plan.ksrc.call  # type: ignore[assignment]
        self.idx = idx
        self.namer = namer
        self.out = Source()
        self.params = [f"v{i}" for i in range(len(self.seg.inputs))]

    def bind(self, value: Any, prefix: str) -> str:
        return self.namer.bind(value, prefix)

    def fallback(self) -> str:
        """``_fbN(v0, ...)``: the segment's ops through NumPy (exact reference semantics)."""
        seg = self.seg
        name = f"_fb{self.idx}"
        params = self.params
        emitter = Emitter(self.namer)
        scope = Scope(f"f{self.idx}_", dict(zip(seg.inputs, params)))
        self.out.line(f"def {name}({', '.join(params)}):")
        body = self.out.nested()
        # NumPy's own temporary elision, done explicitly: an op whose operand is a temporary
        # of its shape and dtype that nothing reads later writes into it (out=), and dead
        # temporaries are freed at once. Same loops, same values; far fewer page faults.
        last_use = {a: i for i, n in enumerate(seg.nodes) for a in n.inputs}
        keep = set(seg.outputs) | set(seg.inputs)
        static = None not in seg.domain and len(seg.domain) > 0
        for i, n in enumerate(seg.nodes):
            dead = [a for a in dict.fromkeys(n.inputs) if a not in keep and last_use.get(a) == i]
            ufunc = n.op.ufunc
            reuse = next(
                (
                    a
                    for a in dead
                    if static
                    and ufunc is not None
                    and not n.params
                    and a.shape == n.shape
                    and a.dtype == n.dtype
                    and ufunc.nout == 1
                ),
                None,
            )
            if reuse is not None:
                fn = self.bind(ufunc, "_uf")
                args = [scope.var(a) if isinstance(a, Node) else emitter.literal(a) for a in n.args]
                body.line(f"{scope.var(n)} = {fn}({', '.join(args)}, out={scope.var(reuse)})")
            else:
                emitter.emit_node(n, scope, body)
            gone = [scope.var(a) for a in dead if a is not reuse]
            if gone:
                body.line(f"del {', '.join(gone)}")
        outs = "".join(scope.var(o) + ", " for o in seg.outputs)
        body.line(f"return ({outs})")
        return name

    def runner(self) -> str:
        """Write the fallback and the runner; returns the runner's name."""
        raise NotImplementedError

    def _need_kernel(self, out: Source, var: str, variant: str, handle: str, call_fb: str) -> None:
        """``var``: the handle's compiled ``variant``, requested now if it is not yet (NumPy's
        call until it is)."""
        out.line(f"{var} = {handle}.{variant}")
        with out.block(f"if {var} is None:") as body:
            body.line(f"{var} = {handle}.need('{variant}', n, {self.hot})")
            with body.block(f"if {var} is None:") as missing:
                missing.line(call_fb)


class CudaRunnerWriter(_RunnerWriter):
    """A CUDA segment: shapes on the host, one launch, partial sums combined here.

    Inputs may be device arrays (earlier segments' outputs kept there); the outputs in
    ``device_outputs`` stay on the device. The NumPy fallback gets host arrays. The launch
    (:func:`kernel_ext.backends.numba_cuda.run_segment`) makes the device buffers; the
    runner's packing function ``_packN`` puts them in ``k_cuda``'s parameter order.
    """

    def __init__(
        self,
        plan: SegmentPlan,
        idx: int,
        namer: Namer,
        hot: int = 0,
        device_outputs: frozenset[int] = frozenset(),
    ) -> None:
        super().__init__(plan, idx, namer, hot)
        self.device_outputs = device_outputs  # outputs (by index) left on the device

    def argument(self, arg: Arg, variant: str) -> str:
        call = self.call
        if arg.kind == "total":
            return "total"
        if arg.kind == "dim":
            return f"dims[{arg.index}]"
        if arg.kind == "array":
            return f"ins[{call.array_inputs.index(arg.index)}]"
        if arg.kind == "scalar":
            return f"scalars[{call.scalar_inputs.index(arg.index)}]"
        if arg.kind == "output":
            return f"outs[{call.map_outputs.index(arg.index)}]"
        if arg.kind in ("acc", "flag"):
            return arg.kind
        return super().argument(arg, variant)

    def packer(self) -> str:
        """``_packN(total, dims, ins, scalars, outs, acc, flag)``: the launch's arguments in
        the kernel's order (:meth:`SegmentCall.args`)."""
        name = f"_pack{self.idx}"
        args = self.arguments(self.call, "cuda")
        with self.out.block(f"def {name}(total, dims, ins, scalars, outs, acc, flag):") as body:
            body.line(f"return ({''.join(a + ', ' for a in args)})")
        return name

    def runner(self) -> str:
        seg, call = self.seg, self.call
        fb = self.fallback()
        pack = self.packer()
        handle = self.bind(self.plan.handle, "_K")
        name = f"_seg{self.idx}"
        params = self.params
        call_fb = f"return {fb}({', '.join(f'_host({p})' for p in params)})"
        arrays = [f"v{i}" for i in call.array_inputs]
        self.out.line(f"def {name}({', '.join(params)}):")
        out = self.out.nested()
        with out.block("try:") as body:
            shapes = ", ".join(f"{a}.shape" for a in arrays)
            body.line(f"shp = _bshape({shapes})" if arrays else "shp = ()")
        with out.block("except ValueError:") as body:
            body.line(call_fb)
        out.line("n = 1")
        with out.block("for d in shp:") as body:
            body.line("n *= d")
        red = call.reduction
        if call.empty_falls_back:
            with out.block("if n == 0:") as body:
                body.line(call_fb)
        self._need_kernel(out, "kc", "cuda", handle, call_fb)
        kdt = self.bind([call.output_dtypes[i] for i in call.map_outputs], "_dts")
        acc_dt = self.bind(None if red is None else np.dtype(red.acc_dtype), "_adt")
        scal = ", ".join(f"v{i}[()]" for i in call.scalar_inputs)
        rank = call.rank
        keep = tuple(rank > 0 and i in self.device_outputs for i in call.map_outputs)
        out.line(
            f"bad, outs, parts = _cuda_run(kc, {pack}, shp, [{', '.join(arrays)}], "
            f"[{scal}], {kdt}, {acc_dt}, {keep!r})"
        )
        with out.block("if bad:") as body:
            body.line(call_fb)
        results = []
        j = 0
        for o in seg.outputs:
            if o is seg.reduction:
                comb = self.bind(_partial_combiner(red), "_comb")
                fin = self.bind(_flat_finisher(red, rank), "_fin")
                results.append(f"{fin}({comb}([(False, p) for p in parts])[1], n)")
            else:
                results.append(f"outs[{j}][0]" if rank == 0 else f"outs[{j}]")
                j += 1
        out.line(f"return ({''.join(r + ', ' for r in results)})")
        return name


class CpuRunnerWriter(_RunnerWriter):
    """A CPU segment: the domain from the inputs' shapes, the contiguous ``k_flat`` (split
    over the pool's threads for large arrays) when every input spans the domain
    C-contiguously, the broadcasting ``k_nd`` otherwise, reductions finished here."""

    def __init__(self, plan: SegmentPlan, idx: int, namer: Namer, hot: int = 0) -> None:
        super().__init__(plan, idx, namer, hot)
        self.slots: dict[int, tuple[str, int]] = {}  # recycled output -> (slot, min size)
        self.loop_names: dict[tuple[str, int], str] = {}

    def argument(self, arg: Arg, variant: str) -> str:
        kind, i = arg.kind, arg.index
        if kind == "start":
            return "0"
        if kind == "stop":
            return "n"
        if kind == "dim":
            return f"shp[{i}]"
        if kind == "array":
            return f"v{i}.ravel()" if variant == "flat" else f"_broadcast_view(v{i}, shp)"
        if kind == "scalar":
            return f"v{i}[()]"
        if kind == "output":
            return f"o{i}"
        if kind == "acc":
            return "acc"
        if kind in ("loop", "loop_data"):
            # NumPy loop addresses, found in this process (the kernel text holds none)
            name = self.loop_names.get((kind, i))
            if name is None:
                found = find_loop(*self.call.loops[i])
                assert found is not None
                value = np.uintp(found[0] if kind == "loop" else found[1])
                name = self.bind(value, "_fp" if kind == "loop" else "_dp")
                self.loop_names[(kind, i)] = name
            return name
        return super().argument(arg, variant)

    def runner(self) -> str:
        seg, call = self.seg, self.call
        fb = self.fallback()
        handle = self.bind(self.plan.handle, "_K")
        params = self.params
        call_fb = f"return {fb}({', '.join(params)})"
        rank = call.rank
        arrays = call.array_inputs
        static = all(d is not None for d in seg.domain)
        name = f"_seg{self.idx}"
        self.out.line(f"def {name}({', '.join(params)}):")
        out = self.out.nested()
        # -- the iteration domain ---------------------------------------------------------
        if static:
            # bound, not spelled out: a retrace with other sizes then generates the same
            # source text, whose compiled code is reused (fused._CODE)
            out.line(f"shp = {self.bind(tuple(seg.domain), '_shp')}")
            out.line(f"n = {self.bind(math.prod(seg.domain), '_size')}")
        else:
            self._dynamic_domain(out, call_fb)
        dec = self.plan.decision
        if dec.min_size > 1 and not static:
            with out.block(f"if n < {dec.min_size}:") as body:
                body.line(call_fb)
        if call.empty_falls_back:
            with out.block("if n == 0:") as body:
                body.line(call_fb)
        # -- the contiguous path -----------------------------------------------------------
        flat_ok = call.has_flat
        conds = []
        for i in arrays:
            a = seg.inputs[i]
            if static and a.shape != seg.domain:
                flat_ok = False
            if not static and len(ranked_shape(a)) != rank:
                flat_ok = False
            if not (static and a.shape == seg.domain):
                conds.append(f"v{i}.shape == shp")
            conds.append(f"v{i}.flags.c_contiguous")
        if flat_ok:
            if not conds:
                self._flat_branch(out, handle, call_fb)
                return name
            with out.block(f"if {' and '.join(conds)}:") as body:
                self._flat_branch(body, handle, call_fb)
        if rank == 0:
            out.line(call_fb)
            return name
        self._nd_branch(out, handle, call_fb)
        return name

    def _dynamic_domain(self, out: Source, call_fb: str) -> None:
        """``shp`` and ``n``, the domain of a segment whose sizes are known only at run
        time: the inputs' shapes broadcast (NumPy's call where they do not)."""
        seg, call = self.seg, self.call
        rank = call.rank
        arrays = call.array_inputs
        first = next(i for i in arrays if len(ranked_shape(seg.inputs[i])) == rank)
        others = [i for i in arrays if i != first]
        out.line(f"shp = v{first}.shape")
        if others:
            cond = " or ".join(f"v{i}.shape != shp" for i in others)
            shapes = ", ".join(f"v{i}.shape" for i in [first] + others)
            with out.block(f"if {cond}:") as body:
                with body.block("try:") as attempt:
                    attempt.line(f"shp = _bshape({shapes})")
                with body.block("except ValueError:") as failed:
                    failed.line(call_fb)
                # A member computed from fewer inputs may be smaller than the domain when
                # dims are unknown (a 1 broadcast against n): NumPy then gives it its own
                # shape, so such calls run through NumPy.
                full = set(arrays)
                for d in call.output_deps:
                    if d != full and d:
                        sh = ", ".join(f"v{i}.shape" for i in sorted(d))
                        with body.block(f"if _bshape({sh}) != shp:") as smaller:
                            smaller.line(call_fb)
        out.line("n = " + (" * ".join(f"shp[{d}]" for d in range(rank)) or "1"))

    def _outputs(self, out: Source, shape_expr: str, recycle: bool = False) -> None:
        """Allocate the map outputs; ``recycle`` (the flat path): large ones reuse the
        runner's previous output when the caller has dropped it (:func:`take_output`)."""
        for i in self.call.map_outputs:
            dtype = self.call.output_dtypes[i]
            dt = self.bind(dtype, "_dt")
            if recycle:
                slot = self.bind([], "_slot")
                big = -(-RECYCLE_BYTES // dtype.itemsize)
                out.line(f"o{i} = _take({slot}, n, {dt}) if n >= {big} else _empty(n, {dt})")
                self.slots[i] = (slot, big)
            else:
                out.line(f"o{i} = _empty({shape_expr}, {dt})")

    def _flat_branch(self, out: Source, handle: str, call_fb: str) -> None:
        seg, call = self.seg, self.call
        self._need_kernel(out, "kf", "flat", handle, call_fb)
        self._outputs(out, "n", recycle=True)
        start, stop, *args = self.arguments(call, "flat")
        argtext = ", ".join(args)
        par = self.plan.decision.parallel_size
        red = call.reduction
        with out.block(f"if n >= {par}:") as body:
            body.line(f"parts = _run_parallel(kf, {stop}, ({argtext}{',' if args else ''}))")
            if red is None:
                body.line("bad = any(parts)")
            else:
                comb = self.bind(_partial_combiner(red), "_comb")
                body.line(f"bad, acc = {comb}(parts)")
        with out.block("else:") as body:
            lhs = "bad" if red is None else "bad, acc"
            body.line(f"{lhs} = kf({start}, {stop}{', ' if args else ''}{argtext})")
        with out.block("if bad:") as body:
            body.line(call_fb)
        for i, (slot, big) in self.slots.items():
            with out.block(f"if n >= {big}:") as body:
                body.line(f"_keep({slot}, o{i})")
        rank = call.rank
        results = []
        for i, o in enumerate(seg.outputs):
            if o is seg.reduction:
                fin = self.bind(_flat_finisher(red, rank), "_fin")
                results.append(f"{fin}(acc, n)")
            elif rank == 0:
                results.append(f"o{i}[0]")
            elif rank == 1:
                results.append(f"o{i}")
            else:
                results.append(f"o{i}.reshape(shp)")
        out.line(f"return ({''.join(r + ', ' for r in results)})")

    def _nd_branch(self, out: Source, handle: str, call_fb: str) -> None:
        seg, call = self.seg, self.call
        rank = call.rank
        self._need_kernel(out, "kn", "nd", handle, call_fb)
        self._outputs(out, "shp")
        red = call.reduction
        if red is not None:
            ident = self.bind(np.dtype(red.acc_dtype).type(red.identity), "_id")
            dt = self.bind(np.dtype(red.acc_dtype), "_dt")
            keep = red.accumulator_shape([f"shp[{d}]" for d in range(rank)])
            shape = ", ".join(keep) + ("," if len(keep) == 1 else "")
            if red.seq_dtype is not None:
                # NumPy adds the rows one after another in the result's dtype when the array
                # it reduces is C-ordered (it is when every input it depends on is
                # C-contiguous: its
                # temporaries follow their inputs' layout) and the reduced axis is not
                # innermost once size-1 axes are dropped; it sums pairwise otherwise. The
                # kernel then accumulates in that dtype, NumPy's bits; else in acc_dtype.
                seq_ident = self.bind(np.dtype(red.seq_dtype).type(red.identity), "_id")
                seq_dt = self.bind(np.dtype(red.seq_dtype), "_dt")
                deps = call.output_deps[seg.outputs.index(cast("Node", seg.reduction))]
                conds = [f"v{i}.flags.c_contiguous" for i in sorted(deps)]
                # (a seq_dtype is set only for a reduction along one axis)
                axis = cast("int", red.axis)
                inner = " * ".join(f"shp[{d}]" for d in range(axis + 1, rank))
                conds.append(f"{inner} > 1")
                with out.block(f"if {' and '.join(conds)}:") as body:
                    body.line(f"acc = _full(({shape}), {seq_ident}, {seq_dt})")
                with out.block("else:") as body:
                    body.line(f"acc = _full(({shape}), {ident}, {dt})")
            else:
                out.line(f"acc = _full(({shape}), {ident}, {dt})")
        args = self.arguments(call, "nd")
        with out.block(f"if kn({', '.join(args)}):") as body:
            body.line(call_fb)
        results = []
        for i, o in enumerate(seg.outputs):
            if o is seg.reduction:
                fin = self.bind(_nd_finisher(red), "_fin")
                results.append(f"{fin}(acc, shp)")
            else:
                results.append(f"o{i}")
        out.line(f"return ({''.join(r + ', ' for r in results)})")


def _partial_combiner(red: Any) -> Callable[[list], tuple]:
    """Combine per-thread ``(bad, acc)`` results of a flat reduction."""
    acc_dt = np.dtype(red.acc_dtype)
    fold = red.op.accumulator.reduce

    def combine(parts: list) -> tuple:
        bad = any(p[0] for p in parts)
        accs = np.array([p[1] for p in parts], dtype=acc_dt)
        return bad, fold(accs)

    return combine


def _flat_finisher(red: Any, rank: int) -> Callable[[Any, int], Any]:
    """Turn a flat reduction's accumulator into NumPy's result (dtype, mean, keepdims)."""
    acc_dt, out_dt = np.dtype(red.acc_dtype), np.dtype(red.out_dtype)
    keep = (1,) * rank if red.keepdims else None
    mean = red.op is OpKind.MEAN

    def finish(acc: Any, n: int) -> Any:
        if mean:
            value = np.array(float(acc) / n).astype(out_dt)
        else:
            value = np.array(acc, dtype=acc_dt).astype(out_dt)
        return value.reshape(keep) if keep is not None else value[()]

    return finish


def _nd_finisher(red: Any) -> Callable[[np.ndarray, tuple], Any]:
    """Turn an N-d reduction's accumulator array (keepdims shape) into NumPy's result."""
    out_dt = np.dtype(red.out_dtype)
    axis, keepdims, mean = red.axis, red.keepdims, red.op is OpKind.MEAN

    def finish(acc: np.ndarray, shp: tuple) -> Any:
        if mean:
            # NumPy divides by the count as an intp: a float32 sum is divided in float64
            # and rounded once to float32, which this does too
            count = math.prod(shp) if axis is None else shp[axis]
            acc = acc / np.intp(count)
        res = acc.astype(out_dt)
        if keepdims:
            return res
        if axis is None:
            return res.reshape(())[()]
        res = res.reshape(shp[:axis] + shp[axis + 1 :])
        return res[()] if res.ndim == 0 else res

    return finish


def _cuda_run(*args: Any) -> Any:
    """Launch a CUDA segment kernel (imports the CUDA backend, hence Numba, on first use)."""
    from .numba_cuda import run_segment

    return run_segment(*args)


def _to_host(v: Any) -> Any:
    """A CUDA device array copied to the host; anything else unchanged (no CUDA import)."""
    return v.copy_to_host() if hasattr(v, "copy_to_host") else v


def _broadcast_view(v: np.ndarray, shp: tuple) -> np.ndarray:
    """``v`` as a (read-only) view of shape ``shp``; ``v`` itself when it has that shape."""
    return v if v.shape == shp else np.broadcast_to(v, shp)


#: The globals every runner's generated code refers to (the executor's namer starts with them).
RUNTIME: dict[str, Any] = {
    "_empty": np.empty,
    "_full": np.full,
    "_bshape": np.broadcast_shapes,
    "_broadcast_view": _broadcast_view,
    "_cuda_run": _cuda_run,
    "_host": _to_host,
    "_run_parallel": run_parallel,
    "_take": take_output,
    "_keep": keep_output,
}


__all__ = [
    "RECYCLE_BYTES",
    "RUNTIME",
    "CpuRunnerWriter",
    "CudaRunnerWriter",
    "keep_output",
    "take_output",
]
