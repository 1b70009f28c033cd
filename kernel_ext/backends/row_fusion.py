"""Row fusion for ``jit_compile=True``: row-wise work as one loop over rows, one row at a time.

Softmax, layer norm, log-softmax, row normalisation, a row's argmax: a graph whose every
value is either a row array ``(n, w)`` computed elementwise, a reduction of one along its last
axis (a *row scalar*, ``(n,)`` or ``(n, 1)``), or *row-free* (an argument of rank 0, ``(w,)``
or ``(1, w)``: ``g`` and ``b`` of a layer norm, broadcast over every row). Such a graph runs
as one loop over the rows (XLA's row fusion): for each row, its reductions become scalar
locals, and its elementwise stages inner loops over that row's few buffers of ``w`` elements,
which stay in L1. Nothing of size ``n * w`` is made but the outputs.

Every executor of such a graph gives the same bits (the fused executor that serves
``auto`` until tiering moves it here, the compiled function's fallback, the row tiles of
:func:`~.whole_graph.row_tiling`), and NumPy's within the documented float-sum bound:

* a row's float sum or mean adds the row as the fused kernels do (``_LANE_SUM``: float64
  lanes folded as a halving tree, so float32 rows sum in float64), a mean dividing the
  float64 total by ``w`` before it rounds to the dtype (``np.mean``'s ``true_divide(sum,
  intp(w))``). (With :data:`~.codegen.BITWISE_ONLY` no float reduction reaches the compiled
  function at all.)
* a row's max or min is NumPy's own ``maximum``/``minimum`` loop in its reduce form, from
  the row's first element, as NumPy's reductions without an identity start;
* ``exp``, ``log``, ``sqrt``, ``tanh``, ... (ops with ``kernel_loop``) call NumPy's own loop
  on the row's buffer (its SIMD code, same bits); ``+ - * /``, ``maximum``/``minimum`` and
  ``square`` are written inline, as the fused kernels write them;
* ``argmax``/``argmin`` are the first NaN, else the first extreme, as NumPy answers.

Row arguments must have unit-stride rows that do not overlap (NumPy's temporaries are then
C-ordered); other layouts and sizes other than the traced ones signal a rerun by the fused
executor. Graphs with anything else (other ops, dtypes other than one float dtype, a negated
operand LLVM may fold into another NaN sign, fast math) are not row-fused: they keep the row
tiles or the whole-graph segments.

The row loop is a function of its own in the generated module, ``graph_rows(lo, hi, ...)``
(rows ``[lo, hi)``, its checks and scratch buffers its own); the graph function allocates
the outputs and calls it on every row. A graph of at least
:data:`~.parallel.ROW_SPLIT_MIN_ELEMENTS` elements is served by
:class:`~.parallel.RowSplit` instead, which cuts the rows into one share per thread of the
worker pool (at most Numba's configured ``NUMBA_NUM_THREADS``) and runs the row function on
each: every row is still computed by one thread with the same code, so the bits are those
of one thread (Numba's ``parallel=True`` is not used: see :mod:`.parallel`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import numpy as np

from ..ir import Graph, Node, OpGroup, OpKind
from ..ir.params import (
    AxisParams,
    ConstantParams,
    IndexParams,
    MomentParams,
    QuantileParams,
    ReduceParams,
    UfuncMethodParams,
)
from .codegen import BLOCK, CHUNK_BLOCKS, loop_dtypes, lower
from .emit.literals import Unsupported, const_source, ctor, literal_value
from .emit.source import STEP, Source
from .static_shapes import static_shape
from .ufunc_loops import find_loop

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

#: Elementwise ops written inline (float operands, one dtype): template over operand texts.
_INLINE: dict[OpKind, Callable[[list[str]], str]] = {
    OpKind.ADD: lambda o: f"({o[0]} + {o[1]})",
    OpKind.SUBTRACT: lambda o: f"({o[0]} - {o[1]})",
    OpKind.MULTIPLY: lambda o: f"({o[0]} * {o[1]})",
    OpKind.DIVIDE: lambda o: f"({o[0]} / {o[1]})",
    OpKind.SQUARE: lambda o: f"({o[0]} * {o[0]})",
    # NaN of either side wins; a tie returns the second operand (NumPy's maximum/minimum)
    OpKind.MAXIMUM: lambda o: f"({o[0]} if ({o[0]} > {o[1]}) | ({o[0]} != {o[0]}) else {o[1]})",
    OpKind.MINIMUM: lambda o: f"({o[0]} if ({o[0]} < {o[1]}) | ({o[0]} != {o[0]}) else {o[1]})",
}

#: Row max/min: the NumPy loop called in its reduce form, from the row's first element (as
#: NumPy's reductions without an identity start) over the rest. Sums and means: _LANE_SUM.
_REDUCE_LOOPS: dict[OpKind, np.ufunc] = {OpKind.MAX: np.maximum, OpKind.MIN: np.minimum}
_SUMS = (OpKind.SUM, OpKind.MEAN)
_ARG_REDUCTIONS = {OpKind.ARGMAX: ">", OpKind.ARGMIN: "<"}

ROW, ROW_SCALAR, FREE = "row", "row scalar", "free"

#: The generated module's row function: ``graph_rows(lo, hi, graph's parameters...,
#: outputs...)`` computes rows ``[lo, hi)`` of the outputs (the graph function allocates
#: them and calls it on every row).
ROWS_FUNCTION = "graph_rows"
#: The module's description of a graph whose rows may be split over threads:
#: ``(rows, row length, ((output shape, dtype str), ...))``, or None.
SPLIT_NAME = "ROW_SPLIT"


class Writer(Protocol):
    """What row fusion needs of the whole-graph writer
    (:class:`~.whole_graph.writer.GraphWriter`)."""

    loop_args: list[tuple[int, int]]
    helpers: dict[str, str]
    module_parts: list[str]
    params: list[str]
    written_back: dict[int, int]

    def fresh(self, prefix: str = "t") -> str: ...

    def signal(self, out: Source, cond: str) -> None: ...


@dataclass
class RowPlan:
    """A row-fusable graph: its rows, row length, dtype and what each node is."""

    nrows: int
    width: int
    dtype: np.dtype
    kinds: dict[Node, str]
    #: row nodes kept in a row buffer (read by a reduction, a NumPy loop, or more than once)
    buffered: set[Node] = field(default_factory=set)


@dataclass(frozen=True)
class _Rows:
    """The rows of a row-fusable graph: their number, their length and their dtype."""

    nrows: int
    width: int
    dtype: np.dtype


#: The parameter classes of the ops of the reduction group (each has an ``axis``).
_ReductionParams = ReduceParams | MomentParams | QuantileParams | UfuncMethodParams


def _axis_last(node: Node, rank: int) -> bool:
    # (every reduction's maker gives its axis: no class default is read here)
    axis = cast("_ReductionParams", node.params).axis
    if isinstance(axis, tuple) and len(axis) == 1:
        axis = axis[0]
    return isinstance(axis, (int, np.integer)) and int(axis) % rank == rank - 1


def _negative(v: Any) -> bool:
    """A literal LLVM may fold a product or quotient with into a negation (``x * -1.0``)."""
    try:
        return bool(np.signbit(v))
    except TypeError:
        return True


def _static_avals(graph: Graph) -> bool:
    """Has every node of ``graph`` one array value of a fully known shape?"""
    for n in graph.nodes:
        shape = n.shape  # (None: no value, several, or unknown rank)
        if shape is None or None in shape:
            return False
    return True


def _row_argument(graph: Graph) -> Node | None:
    """The 2-d argument whose rows are those of the first output, or None."""
    out0 = static_shape(graph.outputs[0])
    return next(
        (
            n
            for n in graph.inputs
            if len(static_shape(n)) == 2 and out0 and static_shape(n)[0] == out0[0]
        ),
        None,
    )


def _classify(graph: Graph, rows: _Rows) -> tuple[dict[Node, str], dict[Node, list[Node]], bool]:
    """Every node's kind (:func:`_kind_of`, which raises for a node of none), every value's
    readers, and whether some node is a reduction."""
    kinds: dict[Node, str] = {}
    uses: dict[Node, list[Node]] = {}
    reduces = False
    for node in graph.nodes:
        for a in node.inputs:
            uses.setdefault(a, []).append(node)
        kinds[node] = _kind_of(node, kinds, rows)
        reduces |= node.op.group is OpGroup.REDUCTION
    return kinds, uses, reduces


def _outputs_are_rows(outs: list[Node], kinds: dict[Node, str]) -> bool:
    """Are the outputs distinct values computed per row (no argument, nothing row-free)?"""
    return len(set(outs)) == len(outs) and not any(
        kinds[o] == FREE or o.op is OpKind.PLACEHOLDER for o in outs
    )


def _needs_buffer(node: Node, users: list[Node]) -> bool:
    """Is the row value ``node`` kept in a row buffer (read by a reduction, a NumPy loop, or
    more than once, or computed by a NumPy loop)?"""
    return (
        _loop_op(node)
        or len(users) > 1
        or any(u.op.group is OpGroup.REDUCTION or _loop_op(u) for u in users)
    )


def plan_row_fusion(graph: Graph, fast_math: bool = False) -> RowPlan | None:
    """The :class:`RowPlan` of ``graph`` when it is row-wise work this module compiles (at
    least one reduction along the rows, static shapes, one float dtype), else None."""
    if fast_math or not graph.outputs or not _static_avals(graph):
        return None
    # the rows: those of every output, and of some 2-d argument
    first = _row_argument(graph)
    if first is None:
        return None
    nrows, width = static_shape(first)
    dt = np.dtype(first.dtype)
    if width == 0 or dt not in _FLOATS:
        return None
    try:
        kinds, uses, reduces = _classify(graph, _Rows(nrows, width, dt))
    except (Unsupported, KeyError, TypeError, ValueError):
        return None
    if not reduces or not _outputs_are_rows(graph.outputs, kinds):
        return None
    plan = RowPlan(nrows, width, dt, kinds)
    for node, users in uses.items():
        if kinds.get(node) != ROW or node.op is OpKind.PLACEHOLDER:
            continue
        if _needs_buffer(node, users):
            plan.buffered.add(node)
    return plan


def _loop_op(node: Node) -> bool:
    return node.op.group is OpGroup.ELEMENTWISE and node.op not in _INLINE


#: How a node of one op group (or, for ops outside those groups, of one op) is classified:
#: ``rule(node, its node operands, their kinds, the rows)`` gives ROW, ROW_SCALAR or FREE
#: or raises Unsupported.
_KindRule = Callable[[Node, list[Node], list[str], _Rows], str]


def _kind_of(node: Node, kinds: dict[Node, str], rows: _Rows) -> str:
    """ROW, ROW_SCALAR or FREE for ``node``, or Unsupported when it is none of them."""
    if node.op in (OpKind.PLACEHOLDER, OpKind.CONSTANT):
        return _argument_kind(node, rows)
    args = [a for a in node.args if isinstance(a, Node)]
    arg_kinds = [kinds[a] for a in args]
    rule = _KIND_BY_GROUP.get(node.op.group) or _KIND_BY_OP.get(node.op)
    if rule is None:
        raise Unsupported(f"op {node.op.value}")
    return rule(node, args, arg_kinds, rows)


def _argument_kind(node: Node, rows: _Rows) -> str:
    """A placeholder or constant: a row argument, or row-free (a scalar constant, an
    argument broadcast over every row)."""
    op, shape = node.op, static_shape(node)
    if op is OpKind.CONSTANT and (shape != () or np.dtype(node.dtype).kind not in "biuf"):
        raise Unsupported("a constant array")
    if shape == (rows.nrows, rows.width) and op is OpKind.PLACEHOLDER:
        if np.dtype(node.dtype) != rows.dtype:
            raise Unsupported("another dtype")
        return ROW
    if shape in ((), (rows.width,), (1, rows.width)) or int(np.prod(shape)) == 1:
        return FREE
    raise Unsupported("an argument of another shape")


def _check_elementwise_op(node: Node, dt: np.dtype) -> None:
    """Raise Unsupported unless ``node`` computes in the rows' dtype, inline or by a NumPy
    loop call, with no negative factor LLVM may fold into a negation."""
    op = node.op
    ins, out = loop_dtypes(node)
    if any(d != dt for d in ins) or out != dt or np.dtype(node.dtype) != dt:
        raise Unsupported("mixed dtypes")
    if op not in _INLINE:
        low = lower(node, "cpu")
        if low.call is None or len(node.args) != 1 or find_loop(*low.call) is None:
            raise Unsupported(f"{op.value} is not a NumPy loop call")
    elif op in (OpKind.MULTIPLY, OpKind.DIVIDE):
        _check_factors(node)


def _numpy_loop_call(node: Node) -> tuple[np.ufunc, tuple[np.dtype, ...]]:
    """The NumPy loop call of an op not written inline (the planner accepted it only as
    one: :func:`_check_elementwise_op`)."""
    return cast("tuple[np.ufunc, tuple[np.dtype, ...]]", lower(node, "cpu").call)


def _check_factors(node: Node) -> None:
    """Raise Unsupported when a product or quotient has a negative literal or constant."""
    for a in node.args:
        if not isinstance(a, Node) and _negative(a):
            raise Unsupported("a negative literal factor")
        if (
            isinstance(a, Node)
            and a.op is OpKind.CONSTANT
            and _negative(cast("ConstantParams", a.params).value)
        ):
            raise Unsupported("a negative constant factor")


def _elementwise_kind(node: Node, args: list[Node], arg_kinds: list[str], rows: _Rows) -> str:
    """An elementwise op: a row op when it reads a row, a row scalar op when it reads a row
    scalar (and row-free scalars), never row-free work."""
    _check_elementwise_op(node, rows.dtype)
    if ROW in arg_kinds:
        return _row_op_kind(node, args, arg_kinds, rows)
    if ROW_SCALAR in arg_kinds:
        return _row_scalar_op_kind(node, args, arg_kinds)
    raise Unsupported("row-free work")


def _row_op_kind(node: Node, args: list[Node], arg_kinds: list[str], rows: _Rows) -> str:
    """An elementwise op of a row: ROW when it has the rows' shape and its row scalars
    their column axis."""
    if node.shape != (rows.nrows, rows.width):
        raise Unsupported("a row op of another shape")
    for a, k in zip(args, arg_kinds):
        if k == ROW_SCALAR and a.shape != (rows.nrows, 1):
            raise Unsupported("a row scalar without its column axis")
    return ROW


def _row_scalar_op_kind(node: Node, args: list[Node], arg_kinds: list[str]) -> str:
    """An elementwise op of row scalars: ROW_SCALAR when they have its shape and every
    row-free operand is one element."""
    for a, k in zip(args, arg_kinds):
        if (k == ROW_SCALAR and a.shape != node.shape) or (
            k == FREE and int(np.prod(static_shape(a))) != 1
        ):
            raise Unsupported("a row scalar op of another shape")
    return ROW_SCALAR


def _reduction_kind(node: Node, args: list[Node], arg_kinds: list[str], rows: _Rows) -> str:
    """A reduction: ROW_SCALAR when it reduces one row along its last axis with a reduction
    this module writes, in the result dtype it writes."""
    op = node.op
    if (
        len(node.args) != 1
        or arg_kinds != [ROW]
        or not _axis_last(node, 2)
        or set(node.params) - {"axis", "keepdims"}
    ):
        raise Unsupported("not a reduction along the rows")
    if op in _ARG_REDUCTIONS:
        if np.dtype(node.dtype) != np.dtype(np.intp):
            raise Unsupported("argmax of another dtype")
    elif (op not in _REDUCE_LOOPS and op not in _SUMS) or np.dtype(node.dtype) != rows.dtype:
        raise Unsupported(f"reduction {op.value}")
    if node.shape not in ((rows.nrows,), (rows.nrows, 1)):
        raise Unsupported("a reduction of another shape")
    return ROW_SCALAR


def _column_kind(node: Node, args: list[Node], arg_kinds: list[str], rows: _Rows) -> str:
    """``s[:, None]`` or ``expand_dims(s, 1)`` of a row scalar ``s``: a row scalar with its
    column axis."""
    op = node.op
    if not (
        arg_kinds == [ROW_SCALAR]
        and len(node.args) == 1
        and node.args[0].aval.shape == (rows.nrows,)
        and node.shape == (rows.nrows, 1)
    ):
        raise Unsupported(f"op {op.value}")
    if op is OpKind.EXPAND_DIMS and int(cast("AxisParams", node.params).axis) not in (1, -1):
        raise Unsupported("expand_dims before the rows")
    if op is OpKind.GETITEM and tuple(cast("IndexParams", node.params).index) not in (
        (slice(None), None),
        (Ellipsis, None),
    ):
        raise Unsupported("an index other than [:, None]")
    return ROW_SCALAR


_KIND_BY_GROUP: dict[OpGroup, _KindRule] = {
    OpGroup.ELEMENTWISE: _elementwise_kind,
    OpGroup.REDUCTION: _reduction_kind,
}
_KIND_BY_OP: dict[OpKind, _KindRule] = {
    OpKind.GETITEM: _column_kind,
    OpKind.EXPAND_DIMS: _column_kind,
}


# NumPy's inner loop ``f`` called as a reduction calls it on one row: ``acc[0] op= x[first:]``
# (output and first input the accumulator, stride 0).
_REDUCE = """\
@_inline
def _row_reduce(f, d, x, first, acc, pp, st, dims):
    pp[0] = acc.ctypes.data
    pp[1] = x.ctypes.data + first * x.strides[0]
    pp[2] = acc.ctypes.data
    st[0] = 0
    st[1] = x.strides[0]
    st[2] = 0
    dims[0] = x.shape[0] - first
    _call_loop(f, pp.ctypes.data, dims.ctypes.data, st.ctypes.data, d)
    return acc[0]
"""

# A row's float sum as the fused kernels reduce a row (codegen's ``nd`` kernel): element
# ``blk + j`` of each block of BLOCK added to float64 lane ``j``, the lanes folded as a
# halving tree every CHUNK_BLOCKS blocks and at the end, the folds combined through a binary
# counter (a pairwise cascade), the total added to 0.0. The fused executor (``auto``) and the
# row tiles sum this way, so every executor of a row-wise graph gives the same bits.
_LANE_SUM = f"""\
@_inline
def _row_lanes(x, wl, cs):
    n = x.shape[0]
    if n <= {BLOCK}:
        # one block: the lanes hold 0.0 + x[j]; the first fold reads them from x
        w = 1
        while w < n:
            w *= 2
        if w == 1:
            return 0.0 + ((0.0 + np.float64(x[0])) + 0.0)
        w //= 2
        for l in range(n - w):
            wl[l] = (0.0 + np.float64(x[l])) + (0.0 + np.float64(x[l + w]))
        for l in range(n - w, w):
            wl[l] = 0.0 + np.float64(x[l])
        while w > 1:
            w //= 2
            for l in range(w):
                wl[l] = wl[l] + wl[l + w]
        return 0.0 + (wl[0] + 0.0)
    for l in range({BLOCK}):
        wl[l] = 0.0
    nb = 0
    nc = 0
    used = 0
    for blk in range(0, n, {BLOCK}):
        m = min({BLOCK}, n - blk)
        for j in range(m):
            wl[j] = wl[j] + np.float64(x[blk + j])
        nb += 1
        used = max(used, m)
        if nb == {CHUNK_BLOCKS} or blk + m >= n:
            w = 1
            while w < used:
                w *= 2
            while w > 1:
                w //= 2
                for l in range(min(w, used - w)):
                    wl[l] = wl[l] + wl[l + w]
            r = wl[0]
            for l in range(used):
                wl[l] = 0.0
            c = nc
            lvl = 0
            while c & 1:
                r = cs[lvl] + r
                lvl += 1
                c >>= 1
            cs[lvl] = r
            nc += 1
            nb = 0
            used = 0
    r = 0.0
    lvl = 0
    while nc:
        if nc & 1:
            r = cs[lvl] + r
        lvl += 1
        nc >>= 1
    return 0.0 + r
"""

# NumPy's unary inner loop ``f`` over a row: ``out[:] = f(x)``
_MAP = """\
@_inline
def _row_map(f, d, x, out, pp, st, dims):
    pp[0] = x.ctypes.data
    pp[1] = out.ctypes.data
    st[0] = x.strides[0]
    st[1] = out.strides[0]
    dims[0] = x.shape[0]
    _call_loop(f, pp.ctypes.data, dims.ctypes.data, st.ctypes.data, d)
"""

# argmax/argmin of one non-empty row: the first NaN if there is one, else the first extreme
_ARG = """\
@_inline
def _row_arg{name}(x):
    best = x[0]
    k = 0
    if best != best:
        return np.int64(0)
    for j in range(1, x.shape[0]):
        v = x[j]
        if v != v:
            return np.int64(j)
        if v {cmp} best:
            best = v
            k = j
    return np.int64(k)
"""


class _RowWriter:
    """Emits the row loop of one :class:`RowPlan` into the whole-graph function."""

    def __init__(
        self, plan: RowPlan, w: Writer, env: dict[Node, tuple[str, bool]], out: Source
    ) -> None:
        self.plan, self.w = plan, w
        self.outer = out  # the graph function's body
        self.env = env  # placeholders: (name, is a Numba scalar)
        self.px = w.fresh("rf")
        self.ct = ctor(plan.dtype)
        self.names: dict[Node, str] = {}  # row scalars and buffers, by node
        self.pending: list[Node] = []  # buffered inline row nodes not yet computed
        self.loops: dict[tuple, int] = {}
        self.done: set[Node] = set()  # buffered row nodes computed earlier in the row
        self.lane_buffers: set[str] = set()
        #: the row function's scratch: allocated once per call of it (per share of rows)
        self.preamble = Source(indent=STEP)
        w.helpers["_row_reduce"] = _REDUCE
        w.helpers["_row_map"] = _MAP
        for name in ("pp", "st", "dims"):
            dt = "np.uintp" if name == "pp" else "np.intp"
            self.preamble.line(f"{self.px}{name} = np.empty(3, {dt})")
        self.preamble.line(f"{self.px}acc = np.empty(1, {self.ct})")
        self.preamble.line(f"{self.px}one = np.empty(1, {self.ct})")
        self.scratch = f"{self.px}pp, {self.px}st, {self.px}dims"

    def loop(self, ufunc: np.ufunc, dtypes: tuple[np.dtype, ...]) -> str:
        key = (ufunc, dtypes)
        if key not in self.loops:
            found = find_loop(ufunc, dtypes)
            if found is None:
                raise Unsupported(f"no NumPy loop for {ufunc.__name__}")
            self.loops[key] = len(self.w.loop_args)
            self.w.loop_args.append(found)
        k = self.loops[key]
        return f"f{k}, d{k}"

    def const(self, value: Any) -> str:
        t = self.w.fresh("k")
        v = literal_value(value, self.plan.dtype)
        self.preamble.line(f"{t} = {const_source(v, self.plan.dtype)}")
        return t

    # -- the function -----------------------------------------------------------------------
    def write(self, graph: Graph) -> list[tuple[str, bool]]:
        """The graph function's part (the outputs allocated, the row function called on
        every row) into ``self.outer``, the row function itself into the module."""
        plan, w = self.plan, self.w
        width = plan.width
        n = f"{self.px}n"
        first = next(p for p in graph.inputs if plan.kinds[p] == ROW)
        rows = Source(indent=STEP)
        rows.line(f"{n} = {self.env[first][0]}.shape[0]")
        item = plan.dtype.itemsize
        for p in graph.inputs:
            name, scalar = self.env[p]
            if scalar:
                continue
            w.signal(rows, f"{name}.shape != {static_shape(p)!r}")
            if plan.kinds[p] == ROW and width > 1:
                # rows as NumPy's temporaries hold them (unit-stride, one after another);
                # other layouts rerun on the fused executor, which gives the same bits
                w.signal(
                    rows,
                    f"{n} > 0 and ({name}.strides[1] != {item} or "
                    f"({n} > 1 and {name}.strides[0] < {width * item}))",
                )
        outs: list[tuple[str, bool]] = []
        out_names: dict[Node, str] = {}
        self.outer.line(f"{n} = {self.env[first][0]}.shape[0]")
        for o in graph.outputs:
            t = w.fresh("o")
            rest = "".join(f"{d}, " for d in static_shape(o)[1:])
            self.outer.line(f"{t} = np.empty(({n}, {rest}), {ctor(np.dtype(o.dtype))})")
            out_names[o] = t
            outs.append((t, False))
        for node in graph.nodes:
            if node in plan.buffered and node not in out_names:
                b = w.fresh("rb")
                self.preamble.line(f"{b} = np.empty({width}, {self.ct})")
                self.names[node] = b
        body = Source(indent=STEP)
        with body.block("for i in range(lo, hi):") as row:
            self.write_row(graph, out_names, row)
        # the row function: rows [lo, hi) of the outputs, checks and scratch of its own,
        # so shares of the rows can run on several threads at once (RowSplit)
        params = list(w.params) + (["la"] if w.loop_args else []) + list(out_names.values())
        func = kernel_function(
            f"{ROWS_FUNCTION}(lo, hi, {', '.join(params)})",
            len(w.loop_args),
            rows.lines + self.preamble.lines + body.lines,
            "return 0",
        )
        w.module_parts.append("\n".join(func.lines))
        split = None
        if not w.written_back:  # (an output copied into its argument: the graph's own code)
            split = (
                plan.nrows,
                plan.width,
                tuple((tuple(static_shape(o)), np.dtype(o.dtype).str) for o in graph.outputs),
            )
        w.module_parts.append(f"{SPLIT_NAME} = {split!r}")
        self.outer.line(f"{ROWS_FUNCTION}(0, {n}, {', '.join(params)})")
        return outs

    def write_row(self, graph: Graph, out_names: dict[Node, str], out: Source) -> None:
        """The body of the loop over rows: row ``i`` of every row input and output, then
        the graph's nodes on that row."""
        plan, w = self.plan, self.w
        for p in graph.inputs:
            if plan.kinds[p] == ROW:
                v = w.fresh("row")
                out.line(f"{v} = {self.env[p][0]}[i]")
                self.names[p] = v
        for o, t in out_names.items():
            if plan.kinds[o] == ROW:
                v = f"{t}_row"
                out.line(f"{v} = {t}[i]")
                self.names[o] = v
        for node in graph.nodes:
            self.node(node, out)
        self.flush(out)
        for o, t in out_names.items():
            if plan.kinds[o] == ROW_SCALAR:
                at = "i" if len(static_shape(o)) == 1 else "i, 0"
                out.line(f"{t}[{at}] = {self.names[o]}")

    def node(self, node: Node, out: Source) -> None:
        kind, op = self.plan.kinds[node], node.op
        if op is OpKind.PLACEHOLDER or kind == FREE:
            return
        if kind == ROW:
            if _loop_op(node):
                self.flush(out)
                ufunc, dts = _numpy_loop_call(node)
                x = self.names[node.args[0]]
                out.line(
                    f"_row_map({self.loop(ufunc, dts)}, {x}, {self.names[node]}, {self.scratch})"
                )
            elif node in self.plan.buffered or node in self.names:
                self.pending.append(node)
            return
        # a row scalar
        if op.group is OpGroup.REDUCTION:
            self.flush(out)
            self.reduction(node, out)
        elif op in (OpKind.GETITEM, OpKind.EXPAND_DIMS):
            self.names[node] = self.names[node.args[0]]
        else:
            t = self.w.fresh("s")
            ops = [self.scalar_operand(a) for a in node.args]
            if op in _INLINE:
                out.line(f"{t} = {_INLINE[op](ops)}")
            else:
                ufunc, dts = _numpy_loop_call(node)
                one = f"{self.px}one"
                out.line(f"{one}[0] = {ops[0]}")
                out.line(f"_row_map({self.loop(ufunc, dts)}, {one}, {one}, {self.scratch})")
                out.line(f"{t} = {one}[0]")
            self.names[node] = t

    def reduction(self, node: Node, out: Source) -> None:
        x = self.names[node.args[0]]
        t = self.w.fresh("s")
        op = node.op
        if op in _ARG_REDUCTIONS:
            name = op.value[3:]
            self.w.helpers[f"_row_arg{name}"] = _ARG.format(name=name, cmp=_ARG_REDUCTIONS[op])
            out.line(f"{t} = _row_arg{name}({x})")
        elif op in _SUMS:
            self.lanes(x, t, out)
            if op is OpKind.SUM:  # (a mean divides the float64 total, below)
                out.line(f"{t} = {self.ct}({t})")
        else:
            acc = f"{self.px}acc"
            out.line(f"{acc}[0] = {x}[0]")
            loop = self.loop(_REDUCE_LOOPS[op], (self.plan.dtype,) * 3)
            out.line(f"{t} = _row_reduce({loop}, {x}, 1, {acc}, {self.scratch})")
        if op is OpKind.MEAN:
            # a float64 quotient rounded to the dtype: the fused kernels' mean, and np.mean's
            # (true_divide(sum, intp(w)))
            out.line(f"{t} = {self.ct}(np.float64({t}) / np.float64({self.plan.width}))")
        self.names[node] = t

    def lanes(self, x: str, t: str, out: Source) -> None:
        """A float sum or mean of row ``x`` into ``t`` as the fused kernels compute it
        (:data:`_LANE_SUM`): a float64 total, divided by the row length for a mean, rounded
        to the dtype."""
        self.w.helpers["_row_lanes"] = _LANE_SUM
        wl, cs = f"{self.px}wl", f"{self.px}cs"
        if wl not in self.lane_buffers:
            self.lane_buffers.add(wl)
            self.preamble.line(f"{wl} = np.empty({BLOCK}, np.float64)")
            self.preamble.line(f"{cs} = np.empty(64, np.float64)")
        out.line(f"{t} = _row_lanes({x}, {wl}, {cs})")

    def scalar_operand(self, a: Any) -> str:
        if not isinstance(a, Node):
            return self.const(a)
        if self.plan.kinds[a] == ROW_SCALAR:
            return self.names[a]
        return self.free(a, "0")

    def free(self, a: Node, j: str) -> str:
        """A row-free value at column ``j`` (a scalar, a size-1 or a ``(w,)``/``(1, w)``
        array)."""
        if a.op is OpKind.CONSTANT:
            if a not in self.names:
                value = cast("ConstantParams", a.params).value
                self.names[a] = self.const(np.asarray(value)[()])
            return self.names[a]
        name, scalar = self.env[a]
        if scalar:
            return name
        shape = static_shape(a)
        col = "0" if shape[-1] == 1 else j
        return f"{name}[{', '.join(['0'] * (len(shape) - 1) + [col])}]"

    # -- elementwise stages over the row ------------------------------------------------------
    def flush(self, out: Source) -> None:
        """One loop over the row computing every pending buffered node."""
        if not self.pending:
            return
        local: dict[Node, str] = {}
        with out.block(f"for j in range({self.plan.width}):") as body:
            for node in self.pending:
                t = self.w.fresh("v")
                body.line(f"{t} = {self.expr(node, local, top=True)}")
                body.line(f"{self.names[node]}[j] = {t}")
                local[node] = t
        self.done.update(self.pending)
        self.pending = []

    def expr(self, node: Any, local: dict[Node, str], top: bool = False) -> str:
        if not isinstance(node, Node):
            return self.const(node)
        if node in local:
            return local[node]
        kind = self.plan.kinds[node]
        if kind == ROW_SCALAR:
            return self.names[node]
        if kind == FREE:
            return self.free(node, "j")
        if node.op is OpKind.PLACEHOLDER or (not top and (node in self.done or _loop_op(node))):
            return f"{self.names[node]}[j]"
        return _INLINE[node.op]([self.expr(a, local) for a in node.args])


def kernel_function(signature: str, loops: int, body: list[str], last: str) -> Source:
    """A compiled function of the whole-graph module: ``@_kernel``, ``def {signature}:``,
    the addresses of its ``loops`` NumPy loops read from ``la`` (one argument for Numba's
    dispatcher to type, not two per loop), ``body`` (lines indented already) and ``last``."""
    func = Source()
    func.line("@_kernel")
    with func.block(f"def {signature}:") as frame:
        for k in range(loops):
            frame.line(f"f{k} = la[{2 * k}]")
            frame.line(f"d{k} = la[{2 * k + 1}]")
        func.lines.extend(body)
        frame.line(last)
    return func


def emit_row_fusion(
    plan: RowPlan, graph: Graph, writer: Writer, env: dict[Node, tuple[str, bool]], out: Source
) -> list[tuple[str, bool]]:
    """Write ``graph``'s row loop (``plan``) into the whole-graph function's body ``out``;
    ``env`` names each input (and whether it is a Numba scalar). Returns each output's name
    and whether it is a scalar (never: outputs are arrays)."""
    return _RowWriter(plan, writer, env, out).write(graph)


__all__ = ["ROWS_FUNCTION", "SPLIT_NAME", "RowPlan", "Writer", "emit_row_fusion", "plan_row_fusion"]
