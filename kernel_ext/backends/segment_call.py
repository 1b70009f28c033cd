"""The description of one fused segment's kernel call, which every host-side renderer consumes.

:mod:`.codegen` writes a segment's kernels and, with them, one :class:`SegmentCall`: which
segment inputs are passed as arrays and which as scalars, which outputs the kernel writes,
the NumPy loops it calls, its reduction, the block buffers it allocates, and — per *variant*
— the order of its parameters. Nothing in it depends on sizes, so one description serves
every trace that shares the kernel text.

Three renderers turn the description into host code; they share :class:`CallRenderer`, which
walks :meth:`SegmentCall.args` and asks the renderer for one expression per argument (as
tinygrad's renderers share a base and differ only in how each piece is spelled):

* the CPU runner (:class:`~kernel_ext.backends.runners.CpuRunnerWriter`): generated Python
  calling ``k_flat``/``k_nd`` from the fused executor;
* the CUDA runner (:class:`~kernel_ext.backends.runners.CudaRunnerWriter`): generated Python
  whose packing function orders the device buffers for the ``k_cuda`` launch;
* the whole-graph emitter (:mod:`.whole_graph`): the kernel embedded in one Numba function,
  its block buffers passed in (:meth:`SegmentCall.args` with ``scratch=True``).

The rules every renderer applies to a call:

* **domain** — NumPy broadcasting of the array inputs' shapes (:attr:`SegmentCall.array_inputs`);
  shapes that do not broadcast, or an output that depends on fewer inputs than the domain
  and would come out smaller (:attr:`SegmentCall.output_deps`), run through NumPy;
* **variants** — ``flat`` (contiguous 1-D views of same-shape inputs, a range the caller may
  split over threads) exists when :attr:`SegmentCall.has_flat` (no reduction, or one over every
  axis); ``nd`` (strided, broadcast views) serves every rank ≥ 1; ``cuda`` is one grid-stride
  launch;
* **fallback** — an empty domain of a reduction (:attr:`SegmentCall.empty_falls_back`: NumPy
  answers with an error, a NaN or a warning) and a kernel's ``bad`` flag (a value only NumPy
  defines) rerun the segment through NumPy;
* **reduction finish** — the accumulator becomes NumPy's result by the plan's rule
  (:class:`~kernel_ext.backends.codegen.ReductionPlan`: ``count`` for a mean, the
  ``accumulator_shape``, ``result_dims`` without keepdims, the ``out_dtype``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from .codegen import ReductionPlan

#: The kernel variants a segment call has (``flat`` and ``nd`` on the CPU, ``cuda``).
VARIANTS = ("flat", "nd", "cuda")


# The records below are NamedTuples rather than frozen dataclasses: a frozen dataclass costs
# ~0.6 ms to create (six generated methods), paid on every process's first traced call.
class Arg(NamedTuple):
    """One parameter of a kernel variant: what it holds and the kernel's name for it.

    ``kind`` is one of ``start``/``stop`` (the flat range), ``total`` (the CUDA element
    count), ``dim`` (size of domain axis ``index``), ``array``/``scalar`` (segment input
    ``index``), ``output`` (segment output ``index``), ``acc`` (the reduction's accumulator),
    ``loop``/``loop_data`` (address and data pointer of NumPy loop ``index``), ``flag`` (the
    CUDA ``bad`` flag) or ``scratch`` (block buffer ``index`` of the variant).
    """

    kind: str
    # (a field named like tuple.index, shadowing the method on purpose)
    index: int  # type: ignore[assignment]
    param: str


class Scratch(NamedTuple):
    """A block buffer of a CPU kernel: allocated by the kernel on each call, or — embedded in
    a whole-graph function — passed in, allocated once for all loop iterations."""

    name: str
    size: str  # source text of the size (a constant or a shape tuple)
    dtype: str  # source text of the dtype (``np.float32``)

    def allocation(self) -> str:
        return f"np.empty({self.size}, {self.dtype})"


class SegmentCall(NamedTuple):
    """How one fused segment's kernels are called (see the module docstring)."""

    rank: int
    array_inputs: tuple[int, ...]  # indices into segment.inputs passed as arrays
    scalar_inputs: tuple[int, ...]  # ... passed as scalars (0-d values)
    map_outputs: tuple[int, ...]  # indices into segment.outputs written elementwise
    input_dtypes: tuple[np.dtype, ...]
    output_dtypes: tuple[np.dtype, ...]
    #: The NumPy loops a CPU kernel calls: ``(ufunc, loop dtypes)``, each passed as an
    #: address and a data pointer (``loop``/``loop_data`` arguments).
    loops: tuple[tuple[np.ufunc, tuple[np.dtype, ...]], ...]
    reduction: ReductionPlan | None
    #: Per segment output: the array inputs its value depends on (the domain rule).
    output_deps: tuple[frozenset[int], ...]
    #: Per CPU variant: its block buffers, in the order they are passed when embedded.
    scratch: tuple[tuple[str, tuple[Scratch, ...]], ...] = ()

    @property
    def has_flat(self) -> bool:
        """Is there a contiguous ``flat`` variant (no reduction, or one over every axis)?"""
        return self.reduction is None or self.reduction.axis is None

    @property
    def empty_falls_back(self) -> bool:
        """Does an empty domain run through NumPy (a reduction: NumPy's error, NaN, warning)?"""
        return self.reduction is not None

    def scratch_of(self, variant: str) -> tuple[Scratch, ...]:
        return dict(self.scratch).get(variant, ())

    def args(self, variant: str, scratch: bool = False) -> tuple[Arg, ...]:
        """The parameters of ``variant`` in order; with ``scratch`` its block buffers last
        (the embedded form a whole-graph function calls)."""
        args = _args(
            self.rank,
            self.array_inputs,
            self.scalar_inputs,
            self.map_outputs,
            len(self.loops),
            self.reduction is not None,
            variant,
        )
        if scratch:
            args += tuple(Arg("scratch", j, s.name) for j, s in enumerate(self.scratch_of(variant)))
        return args

    def params(self, variant: str, scratch: bool = False) -> list[str]:
        """The kernel's parameter names of ``variant`` (its ``def`` line)."""
        return [a.param for a in self.args(variant, scratch)]


@functools.lru_cache(maxsize=4096)
def _args(
    rank: int,
    arrays: tuple[int, ...],
    scalars: tuple[int, ...],
    outputs: tuple[int, ...],
    n_loops: int,
    reduces: bool,
    variant: str,
) -> tuple[Arg, ...]:
    if variant not in VARIANTS:
        raise ValueError(f"unknown kernel variant {variant!r}")
    head: list[Arg] = []
    if variant == "flat":
        head = [Arg("start", 0, "start"), Arg("stop", 0, "stop")]
    elif variant == "cuda":
        head = [Arg("total", 0, "total")]
    if variant != "flat":
        head += [Arg("dim", d, f"n{d}") for d in range(rank)]
    body = (
        [Arg("array", i, f"in{i}") for i in arrays]
        + [Arg("scalar", i, f"s{i}") for i in scalars]
        + [Arg("output", i, f"out{i}") for i in outputs]
    )
    if reduces and variant != "flat":  # (a flat kernel returns its accumulator)
        body.append(Arg("acc", 0, "acc"))
    if variant == "cuda":
        body.append(Arg("flag", 0, "flag"))
    else:
        for k in range(n_loops):
            body += [Arg("loop", k, f"f{k}"), Arg("loop_data", k, f"d{k}")]
    return tuple(head + body)


class CallRenderer:
    """The base of the renderers of a :class:`SegmentCall`: the description fixes which
    arguments a kernel variant takes and in which order; a renderer only says how each one
    is spelled in the code it writes (:meth:`argument`)."""

    def arguments(self, call: SegmentCall, variant: str, scratch: bool = False) -> list[str]:
        """One expression per parameter of ``variant``, in the kernel's order."""
        return [self.argument(arg, variant) for arg in call.args(variant, scratch)]

    def argument(self, arg: Arg, variant: str) -> str:
        """The expression passed for ``arg``."""
        raise NotImplementedError(f"{type(self).__name__} does not pass {arg.kind!r}")


def describe(call: SegmentCall, variant: str) -> list[tuple[str, int]]:
    """``(kind, index)`` of each argument of ``variant``: what a test compares between the
    renderers."""
    return [(a.kind, a.index) for a in call.args(variant)]


__all__ = ["VARIANTS", "Arg", "CallRenderer", "Scratch", "SegmentCall", "describe"]
