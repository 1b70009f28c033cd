"""The values of the generated function (``Value``) and the renderer of segment
calls whose arguments are its variables (``SegmentArgs``)."""

from __future__ import annotations

from ..segment_call import Arg, CallRenderer


class Value:
    """A graph value in the generated function: its name, whether it is a Numba scalar,
    whether it is a fresh C-contiguous array this function owns, whether its rows are
    unit-stride, and which buffers it may share memory with.

    ``roots`` names those buffers (an allocation is named after the variable it was first
    bound to; a view inherits its source's roots), so "is this loop-carried buffer still
    referenced?" is a set test. ``parts`` holds the roots of each element of a tuple value
    (the outputs of a ``cond`` or ``while``). The sets over-approximate: a value may share
    memory only with buffers in its roots, never with others.
    """

    __slots__ = ("fill", "fresh", "name", "parts", "roots", "scalar", "unit")

    def __init__(
        self,
        name: str,
        scalar: bool,
        fresh: bool,
        roots: frozenset[str] | None = None,
        parts: list[frozenset[str]] | None = None,
        unit: bool | None = None,
        fill: str | None = None,
    ) -> None:
        self.name, self.scalar, self.fresh = name, scalar, fresh
        #: a constant array of one repeated value: the expression making a new array of
        #: its contents (``np.zeros((n,), np.float64)``), which a private copy of it is
        #: made with (filling writes the memory once, copying also reads the constant)
        self.fill = fill
        if roots is None:
            roots = frozenset() if scalar else frozenset([name])
        self.roots, self.parts = roots, parts
        #: an array whose last axis is certainly unit-stride (a fresh array, a slice of one)
        self.unit = fresh and not scalar if unit is None else unit


class SegmentArgs(CallRenderer):
    """The whole-graph renderer of a segment call: every kernel argument is a variable of
    the generated function — the domain's sizes, the inputs' values (or views of them), the
    output buffers, the accumulator, the NumPy loops (``f<k>``/``d<k>``, unpacked from the
    ``la`` argument) and the block buffers allocated once per call of the function."""

    def __init__(self) -> None:
        self.inputs: dict[int, str] = {}
        self.outputs: dict[int, str] = {}
        self.dims: list[str] = []
        self.size = ""
        self.acc = ""
        self.loops: list[int] = []  # the function-wide index of each NumPy loop
        self.scratch: list[str] = []

    def argument(self, arg: Arg, variant: str) -> str:
        kind, i = arg.kind, arg.index
        if kind == "start":
            return "0"
        if kind == "stop":
            return self.size
        if kind == "dim":
            return self.dims[i]
        if kind in ("array", "scalar"):
            return self.inputs[i]
        if kind == "output":
            return self.outputs[i]
        if kind == "acc":
            return self.acc
        if kind == "loop":
            return f"f{self.loops[i]}"
        if kind == "loop_data":
            return f"d{self.loops[i]}"
        if kind == "scratch":
            return self.scratch[i]
        return super().argument(arg, variant)
