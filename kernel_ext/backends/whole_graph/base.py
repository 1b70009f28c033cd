"""``WriterBase``: the state of the whole-graph writer and the few primitives every part
of it uses (fresh names, the fallback signal, loop references, output buffers)."""

from __future__ import annotations

from typing import Any

from ...ir import Graph, Node
from ...passes.fusion import Segment
from ..emit.source import STEP, Source
from ..index_ranges import index_ranges
from ..inplace import InplacePlan
from .cast_ranges import exact_casts
from .support import SIGNAL
from .values import Value


class WriterBase:
    """What the parts of :class:`.writer.GraphWriter` share: the graph being written, the
    generated lines and helpers, the buffers and the in-place plan."""

    def __init__(
        self,
        graph: Graph,
        fast_math: bool = False,
        written_back: dict[int, int] | None = None,
        args_in_place: bool = False,
    ) -> None:
        self.graph = graph
        #: bounded scalar integers (:mod:`.index_ranges`): indexes needing no range check
        self.ranges = index_ranges(graph)
        #: float-to-integer casts needing no test of their operand (:mod:`.cast_ranges`)
        self.exact_casts = exact_casts(graph)
        #: output index -> index of the array input whose argument that output is written
        #: back to (:func:`_written_back`); the function copies those in before it returns
        self.written_back = dict(written_back or {})
        #: Write those arguments in place (their C-contiguous form, the caller's own array
        #: in the C-contiguous variant) instead of into private copies written back at the
        #: end: right only for a function that never signals (:attr:`signals`), since the
        #: fallback must find the caller's arrays untouched (:meth:`.writer.GraphWriter.write`).
        self.args_in_place = args_in_place
        #: loop-body nodes written before their loop (:meth:`.control_flow.ControlFlow.
        #: _invariant_reads`), which the body then skips
        self.hoisted: set[Node] = set()
        #: fallback signals written so far (:meth:`signal`)
        self.signals = 0
        #: the function tests every array input's static shape first (a direct entry then
        #: tests only its arguments' class: :meth:`.writer.GraphWriter._check_shapes`)
        self.shapes_checked = False
        #: per graph output: ("ret", position in the returned tuple) or ("param", input
        #: index) for an output the function copied into its argument (not returned)
        self.out_slots: list[tuple[str, int]] = []
        #: positions in the returned tuple of arrays the function allocated (writable: the
        #: caller gets them as they are, where a returned constant or argument may be
        #: read-only and is copied)
        self.fresh_returns: set[int] = set()
        #: the function returns its one value itself, not a 1-tuple (:meth:`.writer.write`)
        self.returns_one = False
        self.fast_math = fast_math  # segment kernels with fast_math's approximations
        self.lines: list[str] = []
        self.module_parts: list[str] = []
        self.helpers: dict[str, str] = {}
        #: statements at the top of the function: scratch buffers and scalar constants,
        #: made once per call
        self.preamble = Source(indent=STEP)
        self.scratch_names: set[str] = set()
        self.params: list[str] = []  # generated function parameters, in order
        self.param_nodes: list[Node] = []  # the top-level placeholders they hold
        self.constants: list[Any] = []  # constant arrays passed as arguments
        self.filled_constants = 0  # constant arrays the function fills (cf0, cf1, ...)
        self.filled_lines: dict[str, str] = {}  # their names -> the preamble lines filling them
        self.loop_args: list[tuple[int, int]] = []
        self.out_bufs: dict[Node, str] = {}  # node -> the spare buffer it may write into
        self.produced: set[Node] = set()  # nodes written into a spare or a new buffer
        self.spares_taken: set[str] = set()  # the spares a producer may write into
        self._n = 0
        self._segments = 0
        self._kernel_texts: dict[str, str] = {}  # kernel text (prefix aside) -> its prefix
        #: Which setitem ops write in place and which loop slots enter as a copy
        #: (:mod:`.inplace`, decided on this writer's own schedule by :meth:`write`).
        self.plan = InplacePlan()
        self._schedules: dict[int, list[Node | Segment]] = {}
        #: per graph: value -> the condition of a check on its range (writer.range_checks)
        self._range_checks: dict[int, dict[Node, Node]] = {}
        #: setitem nodes whose value a segment already wrote into the result (its value)
        self.directed: dict[Node, Value] = {}
        #: graph outputs whose segment writes each row tile into the output (_emit_tiled)
        self.tile_outputs: dict[Node, Value] = {}
        self._loop_depth = 0  # graph loops around the code being written
        #: 1-D temporaries written into a prefix of a buffer kept for all iterations
        self.grow_bufs: dict[Node, str] = {}

    def fresh(self, prefix: str = "t") -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def loop_ref(self, idx: int) -> str:
        """The arguments naming NumPy loop ``idx`` (its address and data pointer)."""
        return f"f{idx}, d{idx}"

    def signal(self, out: Source, cond: str) -> None:
        """``if cond: raise`` the fallback signal (the call is rerun by the fused executor)."""
        self.signals += 1
        with out.block(f"if {cond}:") as body:
            body.line(f"raise FloatingPointError('{SIGNAL}')")

    def _out_buffer(
        self,
        node: Node,
        shape: str,
        size_test: str,
        dt: str,
        out: Source,
        t: str,
        take: str = "{sp}",
    ) -> None:
        """``t = np.empty(shape, dt)``, or the dead buffer a loop left for ``node``.

        Inside a ``while`` body, the node that computes a loop variable's next value may write
        into the buffer of that variable's value from two iterations ago (its *spare*, see
        :meth:`_emit_while`), when the run-time sizes agree (``size_test``; ``take`` views
        the spare as the buffer needed)."""
        grow = self.grow_bufs.get(node)
        if grow is not None:  # (1-D: ``shape`` is a size or a one-element tuple)
            size = shape[1:].split(",")[0] if shape.startswith("(") else shape
            with out.block(f"if {grow}.size < {size}:") as body:
                body.line(f"{grow} = np.empty({size}, {dt})")
            out.line(f"{t} = {grow}[:{size}]")
            return
        spare = self.out_bufs.get(node)
        if spare is None:
            out.line(f"{t} = np.empty({shape}, {dt})")
            return
        self.produced.add(node)
        self.spares_taken.add(spare)
        with out.block(f"if {size_test.format(sp=spare)}:") as body:
            body.line(f"{t} = {take.format(sp=spare)}")
        with out.block("else:") as body:
            body.line(f"{t} = np.empty({shape}, {dt})")
