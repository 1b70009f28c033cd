"""Kernel source generation: one self-contained Numba module per fused segment.

This module is pure text generation (it never imports Numba). For a segment found by
:func:`kernel_ext.passes.fusion.partition` it writes the Python source of a module holding
the segment's kernels; the Numba backends write that source to the kernel cache, import it and
compile it (``numba_cpu``/``numba_cuda``).

Exactness is the design constraint. Every value in a kernel has exactly the dtype the tracer
decided (NumPy 2 / NEP 50 rules): each op's operands are cast to the dtypes of the NumPy loop
that ``ufunc.resolve_dtypes`` picks, constants are typed (``np.float32(0.5)``), and every
result is cast to the node's dtype, so Numba's own typing (which widens small integers and
turns ``float32 + 0.5`` into float64) never changes a result. Ops are lowered three ways:

* **inline** — arithmetic, comparisons, ``where``, casts, ``clip``, min/max, bit ops: written
  out with NumPy's exact semantics (integer division by zero gives 0, shifts past the width
  give 0 or -1, NaN propagates through ``maximum`` ...), bitwise equal to NumPy;
  On the CPU also the float functions IEEE defines exactly (``floor``, ``ceil``, ``trunc``,
  ``rint``, ``sqrt``: any correct implementation gives NumPy's bits) of 0-d values;
* **NumPy loop calls** (CPU) — transcendental and other float functions (``tanh``, ``exp``,
  ``power``, ``arctan2``, float ``floor_divide`` ...) call NumPy's own inner loop
  (:mod:`.ufunc_loops`) on cache-sized blocks: bitwise equal to NumPy at NumPy's SIMD speed;
* **device math** (CUDA) — ``math.exp``/``math.tanh``/... of the CUDA target (libdevice),
  within a few ulp of NumPy (documented in docs/ARCHITECTURE.md);
* **fast math** (CPU, opt-in: ``kx.function(..., fast_math=True)``) — ``exp``, ``log``,
  ``tanh``, ``sin``, ``cos`` and float32 ``power`` as inline approximations
  (:mod:`.fast_math`), within a tested ulp bound of NumPy instead of bitwise, so a chain of
  them vectorises as one loop. The flag is part of every memo key here (:func:`lower`,
  :func:`generate`) and changes the kernel text, hence its cache key: a fast-math kernel
  never serves an exact function.

Values that only NumPy defines oddly (a float -> int cast of NaN or an out-of-range value, an
integer power with a negative exponent, which NumPy answers with an error) set the kernel's
``bad`` flag instead; the caller then reruns the segment with NumPy, so the result (or the
error) is NumPy's own.

Kernels are specialised on dtypes, rank and the block structure, never on sizes: one compiled
kernel serves every shape of a signature family (a retrace with new sizes reuses it).

Each kernel module comes with its :class:`~.segment_call.SegmentCall` (``KernelSource.call``):
the parameters of every variant, in the order the renderers of the host side pass them.

Kernel layout (CPU). ``k_flat(start, stop, *arrays, *scalars, *outputs, *loops)`` runs over
contiguous 1-D views of same-shape inputs (a range, so the caller can split it over threads);
``k_nd(*dims, *arrays, *scalars, *outputs, [acc], *loops)`` runs over broadcast, strided N-d
views. Both walk the (last) dimension in blocks of :data:`BLOCK` elements; a block runs in
*stages*: one vectorisable loop per stage, NumPy loop calls between stages on the block's
buffers. A flat reduction accumulates element ``blk + j`` into lane ``j`` (one lane per block
position, so LLVM vectorises it without reassociating anything), in float64 for float sums,
and folds the lanes pairwise every :data:`CHUNK_BLOCKS` blocks.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..ir import FUSIBLE_REDUCTIONS, UFUNC_OPS, FallbackReasons, Node, OpGroup, OpKind
from ..passes.fusion import Segment
from . import fast_math as fm
from .segment_call import Scratch, SegmentCall
from .ufunc_loops import find_loop

#: Format version of generated kernels; part of every cache key.
CODEGEN_VERSION = "3"
#: The import line of the wrapping integer arithmetic every kernel module uses (``module``:
#: ``numba_decorators`` on the CPU, ``numba_cuda`` for CUDA kernels).
WRAPPING_IMPORT = (
    "from kernel_ext.backends.{module} import wrapping_add as _wadd, "
    "wrapping_sub as _wsub, wrapping_mul as _wmul"
)
#: Elements per block of a staged kernel (buffers stay in L1/L2).
BLOCK = 1024
#: Blocks a flat reduction's lanes accumulate before they are folded (so each lane sums at
#: most this many values; see ``_KernelWriter._lane_fold``).
CHUNK_BLOCKS = 64

#: When True, float reductions stay in NumPy for every backend: every fused result is then
#: bitwise equal to NumPy's, NaN payloads included. Fused float sums accumulate in float64
#: lanes folded pairwise, another summation order than NumPy's pairwise sums, so they agree
#: with NumPy within rounding (the bound in docs/backends.md); ``backend="auto"`` fuses float
#: sums and means but keeps float max/min in NumPy (see :func:`reduction_plan`).
BITWISE_ONLY = False

SUPPORTED_DTYPES = frozenset(
    np.dtype(t)
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float32,
        np.float64,
    )
)

_BOOL = np.dtype(np.bool_)
_F64 = np.dtype(np.float64)


class Unsupported(Exception):
    """The node cannot be compiled by this backend (it runs through NumPy instead)."""


_NAMES: dict[Any, str] = {}


def dtname(dtype: Any) -> str:
    """``np.dtype(dtype).name``, memoised (the property is slow, and codegen asks often)."""
    name = _NAMES.get(dtype)
    if name is None:
        name = _NAMES[dtype] = np.dtype(dtype).name
    return name


def ctor(dtype: np.dtype) -> str:
    """The Numba-typed constructor of a dtype's scalars (``np.float32``)."""
    return "np.bool_" if dtype == _BOOL else f"np.{dtname(dtype)}"


def _kind(dtype: np.dtype) -> str:
    return "b" if dtype == _BOOL else dtype.kind


def literal_value(value: Any, dtype: np.dtype) -> Any:
    """A weak Python literal converted to ``dtype`` as NumPy converts it, or Unsupported
    when NumPy would refuse it at run time (an int literal out of the dtype's range)."""
    dtype = np.dtype(dtype)
    if isinstance(value, (bool, np.bool_)):
        return dtype.type(bool(value))
    if isinstance(value, (int, np.integer)):
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            if not info.min <= int(value) <= info.max:
                raise Unsupported(f"literal {value} does not fit {dtype}")
        elif dtype == _BOOL:
            raise Unsupported("int literal in a bool loop")
        return dtype.type(value)
    if isinstance(value, (float, np.floating)):
        if dtype.kind != "f":
            raise Unsupported(f"float literal in a {dtype} loop")
        return dtype.type(value)
    raise Unsupported(f"literal of type {type(value).__name__}")


def literal_into(value: Any, dtype: np.dtype) -> Any:
    """``value`` (a Python or NumPy number) as NumPy stores it into an array of ``dtype``,
    or Unsupported where NumPy would warn or raise (an int out of range, a float into an
    int array, a complex)."""
    if isinstance(value, (complex, np.complexfloating)) or not isinstance(
        value, (bool, int, float, np.number, np.bool_)
    ):
        raise Unsupported(f"setitem of {type(value).__name__} {value!r}")
    box = np.empty((), dtype)
    try:
        # np.errstate, not warnings.catch_warnings: this runs on the compile thread too, and
        # catch_warnings swaps the process-wide filters (a warning raised meanwhile by the
        # main thread would be lost or turned into an error)
        with np.errstate(all="raise"):
            box[()] = value
    except (OverflowError, ValueError, TypeError, FloatingPointError) as e:
        raise Unsupported(f"setitem of {value!r} into {dtype} ({e})") from None
    return box[()]


@functools.cache
def default_nan(dtype: np.dtype) -> Any:
    """The NaN this CPU makes from an invalid operation (``inf - inf``) in ``dtype``, as
    NumPy's own loop computes it (``-nan``, sign bit set, on x86; ``+nan`` elsewhere)."""
    dtype = np.dtype(dtype)
    inf = np.full(4, np.inf, dtype)
    with np.errstate(invalid="ignore"):
        return np.subtract(inf, inf)[0]


def const_source(value: Any, dtype: np.dtype) -> str:
    """Source text of a typed constant equal to ``value`` (exact: floats via their repr, a
    NaN other than ``np.nan`` by its bits, so its sign and payload survive)."""
    dtype = np.dtype(dtype)
    value = dtype.type(value)
    if dtype == _BOOL:
        return "True" if value else "False"
    if dtype.kind == "f":
        f = float(value)
        if math.isnan(f):
            uint = f"np.uint{dtype.itemsize * 8}"
            bits = int(np.asarray(value, dtype).view(uint[3:]))
            if bits == int(np.asarray(np.nan, dtype).view(uint[3:])):
                return f"{ctor(dtype)}(np.nan)"
            return f"np.array({bits}, {uint}).view({ctor(dtype)})[()]"
        if math.isinf(f):
            return f"{ctor(dtype)}({'-' if f < 0 else ''}np.inf)"
        return f"{ctor(dtype)}({f!r})"
    return f"{ctor(dtype)}({int(value)})"


# ---------------------------------------------------------------------------------------------
# Op lowering: which NumPy loop dtypes an op runs in, and how it is computed
# ---------------------------------------------------------------------------------------------


def _weak(arg: Any) -> Any:
    if isinstance(arg, Node):
        return arg.dtype
    if isinstance(arg, bool):
        return _BOOL
    return type(arg)


def loop_dtypes(node: Node) -> tuple[list[np.dtype], np.dtype]:
    """Input and output dtypes of the NumPy loop a ufunc node runs (NEP 50 weak literals)."""
    ufunc = node.op.ufunc
    if ufunc is None or ufunc.nout != 1:
        raise Unsupported(f"{node.op.value} is not a single-output ufunc")
    dtypes = tuple(_weak(a) for a in node.args) + (None,)
    try:
        if "dtype" in node.attrs:
            sig = (None,) * ufunc.nin + (np.dtype(node.attrs["dtype"]),)
            resolved = ufunc.resolve_dtypes(dtypes, signature=sig)
        else:
            resolved = ufunc.resolve_dtypes(dtypes)
    except (TypeError, ValueError) as e:
        raise Unsupported(str(e)) from None
    ins = [np.dtype(d) for d in resolved[: ufunc.nin]]
    out = np.dtype(resolved[-1])
    return ins, out


@dataclass
class Lowering:
    """How one elementwise node is computed.

    ``operand_dtypes`` are the dtypes each arg is cast to (None: the arg is not a value, like
    ``clip``'s missing bound); ``inline(operands, emitter)`` returns the result expression;
    ``call`` names the NumPy loop ``(ufunc, loop dtypes)`` to call instead.
    """

    operand_dtypes: list[np.dtype | None]
    out_dtype: np.dtype
    inline: Callable[[list[str], _Body], str] | None = None
    call: tuple[np.ufunc, tuple[np.dtype, ...]] | None = None
    #: Positions of args NumPy ignores (``np.clip`` drops a Python int bound beyond an
    #: integer array's range): the kernel treats them as missing.
    ignored: tuple[int, ...] = ()
    #: The :mod:`.fast_math` function computing the node (fast-math mode), or None.
    approx: str | None = None

    def operands(self, args: tuple | list) -> list[Any]:
        """The node's args as the kernel sees them (ignored ones as None)."""
        if not self.ignored:
            return list(args)
        return [None if k in self.ignored else a for k, a in enumerate(args)]


def _t(kinds: str, fn: Callable[..., str]) -> tuple[str, Callable[..., str]]:
    return kinds, fn


def _truth(expr: str, dtype: np.dtype) -> str:
    return expr if dtype == _BOOL else f"({expr} != 0)"


# Float ops with ``op.kernel_loop`` call NumPy's loop on the CPU (bitwise equal); CUDA has
# device math for a few of them (math.* exists on the device and in the simulator).
_CUDA_MATH = {
    OpKind.EXP: "_dexp",
    OpKind.LOG: "_dlog",
    OpKind.TANH: "_dtanh",
    OpKind.SQRT: "_dsqrt",
}


def _cmp(op: str) -> Callable[..., str]:
    return lambda o, b: f"({o[0]} {op} {o[1]})"


def _pick(cmp: str, nan_from: int | None) -> Callable[..., str]:
    """``a if a <cmp> b else b``; with ``nan_from`` the NaN of that operand wins the pick
    (maximum/minimum propagate a NaN of either side via ``a != a``; fmax/fmin prefer the
    non-NaN operand, so only ``b``'s NaN makes them pick ``a``).

    The comparison decides which operand a tie returns, which matters for ``-0.0 == 0.0``:
    NumPy's ``maximum``/``minimum`` return ``b`` on a tie (``maximum(-0.0, 0.0)`` is
    ``+0.0``, ``maximum(0.0, -0.0)`` is ``-0.0``), so they compare strictly. NumPy's
    ``fmax``/``fmin`` answer a tie of zeros differently in its SIMD lanes and its scalar
    tail; they keep ``a``."""

    def template(o: list[str], b: _Body) -> str:
        if nan_from is None:
            return f"({o[0]} if {o[0]} {cmp} {o[1]} else {o[1]})"
        nan = o[nan_from]
        return f"({o[0]} if ({o[0]} {cmp} {o[1]}) | ({nan} != {nan}) else {o[1]})"

    return template


_max_f, _min_f = _pick(">", 0), _pick("<", 0)
_fmax_f, _fmin_f = _pick(">=", 1), _pick("<=", 1)
_max_i, _min_i = _pick(">=", None), _pick("<=", None)


# (op, loop kind) -> inline template; loop kinds: b(ool) i(nt) u(nsigned) f(loat).
# Integer +, - and * are the wrapping intrinsics ``_wadd``/``_wsub``/``_wmul`` every kernel
# module imports (numba_decorators; numba_cuda on the device): Numba's own operators tell
# LLVM that signed arithmetic never overflows (``nsw``), and LLVM then folds ``x + 1 > x``
# to True. The intrinsics also compute in the operands' width (Numba widens small integers).
_INLINE: dict[OpKind, list[tuple[str, Callable[..., str]]]] = {
    OpKind.ADD: [
        _t("b", lambda o, b: f"({o[0]} | {o[1]})"),
        _t("iu", lambda o, b: f"_wadd({o[0]}, {o[1]})"),
        _t("f", lambda o, b: b.float_op("+", o)),
    ],
    OpKind.SUBTRACT: [
        _t("iu", lambda o, b: f"_wsub({o[0]}, {o[1]})"),
        _t("f", lambda o, b: b.float_op("-", o)),
    ],
    OpKind.MULTIPLY: [
        _t("b", lambda o, b: f"({o[0]} & {o[1]})"),
        _t("iu", lambda o, b: f"_wmul({o[0]}, {o[1]})"),
        _t("f", lambda o, b: b.float_op("*", o)),
    ],
    OpKind.DIVIDE: [_t("f", lambda o, b: b.float_op("/", o))],
    OpKind.NEGATIVE: [_t("iuf", lambda o, b: f"(-{o[0]})")],
    OpKind.POSITIVE: [_t("iuf", lambda o, b: o[0])],
    OpKind.CONJUGATE: [_t("biuf", lambda o, b: o[0])],
    OpKind.ABSOLUTE: [_t("if", lambda o, b: f"abs({o[0]})"), _t("bu", lambda o, b: o[0])],
    OpKind.FABS: [_t("f", lambda o, b: f"abs({o[0]})")],
    OpKind.SQUARE: [
        _t("iu", lambda o, b: f"_wmul({o[0]}, {o[0]})"),
        _t("f", lambda o, b: f"({o[0]} * {o[0]})"),
        _t("b", lambda o, b: o[0]),
    ],
    OpKind.RECIPROCAL: [_t("f", lambda o, b: f"({b.one} / {o[0]})")],
    OpKind.SIGN: [
        _t(
            "f",
            lambda o, b: (
                f"({b.one} if {o[0]} > 0 else (-{b.one} if {o[0]} < 0 "
                f"else ({b.zero} if {o[0]} == 0 else {o[0]})))"
            ),
        ),
        _t(
            "i", lambda o, b: f"({b.one} if {o[0]} > 0 else (-{b.one} if {o[0]} < 0 else {b.zero}))"
        ),
        _t("u", lambda o, b: f"({b.one} if {o[0]} > 0 else {b.zero})"),
    ],
    OpKind.MAXIMUM: [_t("f", _max_f), _t("iu", _max_i), _t("b", lambda o, b: f"({o[0]} | {o[1]})")],
    OpKind.MINIMUM: [_t("f", _min_f), _t("iu", _min_i), _t("b", lambda o, b: f"({o[0]} & {o[1]})")],
    OpKind.FMAX: [_t("f", _fmax_f), _t("iu", _max_i), _t("b", lambda o, b: f"({o[0]} | {o[1]})")],
    OpKind.FMIN: [_t("f", _fmin_f), _t("iu", _min_i), _t("b", lambda o, b: f"({o[0]} & {o[1]})")],
    OpKind.EQUAL: [_t("biuf", _cmp("=="))],
    OpKind.NOT_EQUAL: [_t("biuf", _cmp("!="))],
    OpKind.LESS: [_t("iuf", _cmp("<"))],
    OpKind.LESS_EQUAL: [_t("iuf", _cmp("<="))],
    OpKind.GREATER: [_t("iuf", _cmp(">"))],
    OpKind.GREATER_EQUAL: [_t("iuf", _cmp(">="))],
    OpKind.LOGICAL_AND: [_t("biuf", lambda o, b: f"({b.truth(0)} & {b.truth(1)})")],
    OpKind.LOGICAL_OR: [_t("biuf", lambda o, b: f"({b.truth(0)} | {b.truth(1)})")],
    OpKind.LOGICAL_XOR: [_t("biuf", lambda o, b: f"({b.truth(0)} != {b.truth(1)})")],
    OpKind.LOGICAL_NOT: [
        _t("b", lambda o, b: f"(not {o[0]})"),
        _t("iuf", lambda o, b: f"({o[0]} == 0)"),
    ],
    OpKind.BITWISE_AND: [_t("biu", lambda o, b: f"({o[0]} & {o[1]})")],
    OpKind.BITWISE_OR: [_t("biu", lambda o, b: f"({o[0]} | {o[1]})")],
    OpKind.BITWISE_XOR: [_t("biu", lambda o, b: f"({o[0]} ^ {o[1]})")],
    OpKind.INVERT: [_t("iu", lambda o, b: f"(~{o[0]})"), _t("b", lambda o, b: f"(not {o[0]})")],
    OpKind.ISNAN: [_t("f", lambda o, b: f"({o[0]} != {o[0]})"), _t("biu", lambda o, b: "False")],
    OpKind.ISINF: [
        _t("f", lambda o, b: f"(abs({o[0]}) == {b.const(np.inf)})"),
        _t("biu", lambda o, b: "False"),
    ],
    OpKind.ISFINITE: [
        _t("f", lambda o, b: f"(abs({o[0]}) < {b.const(np.inf)})"),
        _t("biu", lambda o, b: "True"),
    ],
    OpKind.SIGNBIT: [_t("iu", lambda o, b: f"({o[0]} < 0)")],
    # NumPy's heaviside answers a NaN ``x`` with its own NaN constant (not ``x``'s payload).
    OpKind.HEAVISIDE: [
        _t(
            "f",
            lambda o, b: (
                f"({b.zero} if {o[0]} < 0 else ({b.one} if "
                f"{o[0]} > 0 else ({o[1]} if {o[0]} == 0 "
                f"else {b.const(np.nan)})))"
            ),
        )
    ],
    OpKind.FLOOR: [_t("biu", lambda o, b: o[0])],
    OpKind.CEIL: [_t("biu", lambda o, b: o[0])],
    OpKind.TRUNC: [_t("biu", lambda o, b: o[0])],
    OpKind.RINT: [],
    OpKind.FLOOR_DIVIDE: [_t("iu", lambda o, b: b.helper("fdiv", o))],
    OpKind.REMAINDER: [_t("iu", lambda o, b: b.helper("mod", o))],
    OpKind.FMOD: [_t("iu", lambda o, b: b.helper("fmod", o))],
    OpKind.POWER: [_t("iu", lambda o, b: b.int_power(o))],
    OpKind.LEFT_SHIFT: [_t("iu", lambda o, b: b.helper("shl", o))],
    OpKind.RIGHT_SHIFT: [_t("iu", lambda o, b: b.helper("shr", o))],
}


def _arg_key(arg: Any) -> Any:
    if isinstance(arg, Node):
        return (arg.dtype, None if arg.shape is None else len(arg.shape))
    return (type(arg), repr(arg))  # repr: 0.0 and -0.0 (equal as keys) are other constants


def node_key(node: Node) -> tuple:
    """What an elementwise node's lowering depends on: its op, attrs, the dtypes and ranks of
    its operands and its literal operands (never sizes, never names)."""
    attrs = tuple(sorted((k, repr(v)) for k, v in node.params.items()))
    aval = node.aval
    out = (
        (aval.dtype, None if aval.shape is None else len(aval.shape))
        if hasattr(aval, "dtype")
        else repr(aval)
    )
    return (node.op, attrs, out, tuple(_arg_key(a) for a in node.args))


_LOWERINGS: dict[tuple, Lowering | Unsupported] = {}


def lower(node: Node, target: str, fast_math: bool = False) -> Lowering:
    """How ``node`` (an elementwise op) is computed on ``target`` ("cpu" or "cuda");
    ``fast_math``: with the approximations of :mod:`.fast_math` where there is one (CPU).

    Memoised by :func:`node_key` (retraces with new sizes lower the same nodes again)."""
    try:
        key = (target, fast_math, node_key(node))
    except TypeError:  # an unhashable attr: no memo
        return _lower(node, target, fast_math)
    got = _LOWERINGS.get(key)
    if got is None:
        try:
            got = _lower(node, target, fast_math)
        except Unsupported as e:
            got = e
        if len(_LOWERINGS) > 20_000:
            _LOWERINGS.clear()
        _LOWERINGS[key] = got
    if isinstance(got, Unsupported):
        raise got
    return got


def _lower(node: Node, target: str, fast_math: bool = False) -> Lowering:
    op = node.op
    if node.aval is None or np.dtype(node.aval.dtype) not in SUPPORTED_DTYPES:
        raise Unsupported(f"result dtype {getattr(node.aval, 'dtype', None)}")
    for a in node.inputs:
        if np.dtype(a.dtype) not in SUPPORTED_DTYPES:
            raise Unsupported(f"operand dtype {a.dtype}")
    out = np.dtype(node.aval.dtype)
    if op is OpKind.CAST:
        return Lowering([None], out, inline=lambda o, b: b.cast_arg(0, out))
    if op is OpKind.WHERE:
        return Lowering(
            [None, out, out], out, inline=lambda o, b: f"({o[1]} if {b.truth(0)} else {o[2]})"
        )
    if op is OpKind.CLIP:
        ignored = _clip_ignored(node)
        args = [None if k in ignored else a for k, a in enumerate(node.args)]
        dts = [out if a is not None else None for a in args]
        return Lowering(dts, out, inline=_clip_inline(args, out), ignored=ignored)
    if op.ufunc is None:
        raise Unsupported(f"op {op.value}")
    ins, loop_out = loop_dtypes(node)
    if any(d not in SUPPORTED_DTYPES for d in ins) or loop_out not in SUPPORTED_DTYPES:
        raise Unsupported(f"{op.value} loop {ins}->{loop_out}")
    if len(set(ins)) > 1:
        raise Unsupported(f"{op.value} mixed loop {ins}")
    kind = _kind(ins[0])
    if op is OpKind.POWER and kind == "f" and not isinstance(node.args[1], Node):
        fast = _power_fast_path(node.args[1], ins[0])
        if fast is not None:
            return Lowering(list(ins), loop_out, inline=fast)
    approx = fm.FAST_OPS.get(op) if fast_math and target == "cpu" and kind == "f" else None
    if approx is not None and fm.supports(approx, ins[0]) and loop_out == ins[0]:
        return Lowering(
            list(ins),
            loop_out,
            inline=lambda o, b, approx=approx: b.fast_math(approx, o),
            approx=approx,
        )
    for kinds, fn in _INLINE.get(op, ()):
        if kind in kinds:
            return Lowering(list(ins), loop_out, inline=fn)
    if kind == "f" and target == "cpu" and op in _EXACT_FLOAT and node.aval.shape == ():
        # correctly rounded (or exact) in IEEE arithmetic: any implementation is NumPy's bits,
        # and inline a 0-d segment in a loop body is statements, not a buffered kernel call.
        # 0-d only: over arrays NumPy's SIMD loop is faster (a row-fused layer norm's sqrt
        # inline ran 3x slower: W10 0.15x -> 0.64x NumPy time, measured)
        name = _EXACT_FLOAT[op]
        return Lowering(list(ins), loop_out, inline=lambda o, b, name=name: f"np.{name}({o[0]})")
    if kind == "f" and op.kernel_loop:
        if target == "cpu":
            loop = tuple(ins) + (loop_out,)
            if find_loop(op.ufunc, loop) is None:
                raise Unsupported(f"no NumPy loop for {op.value} {loop}")
            return Lowering(list(ins), loop_out, call=(op.ufunc, loop))
        if op in _CUDA_MATH:
            name = _CUDA_MATH[op]
            return Lowering(
                list(ins), loop_out, inline=lambda o, b, name=name: b.device_math(name, o[0])
            )
    raise Unsupported(f"{op.value} on {ins[0]} ({target})")


#: Float functions whose result IEEE arithmetic defines exactly (rounding to an integer is
#: exact; the square root is correctly rounded): inline on the CPU for 0-d values (a loop
#: body's scalars), Numba's ``np.floor`` and friends being LLVM's intrinsics, bitwise NumPy's.
_EXACT_FLOAT = {
    OpKind.FLOOR: "floor",
    OpKind.CEIL: "ceil",
    OpKind.TRUNC: "trunc",
    OpKind.RINT: "rint",
    OpKind.SQRT: "sqrt",
}


# NumPy's float power loop answers a scalar exponent of -1, 0, 0.5, 1 or 2 with a division,
# a constant, a square root, a copy or a product (instead of pow); inline, the same
# expressions vectorise. Each is checked against this NumPy before it is used.
_POWER_FAST: dict[float, Callable[[list[str], _Body], str]] = {
    -1.0: lambda o, b: f"({b.one} / {o[0]})",
    0.0: lambda o, b: b.one,
    0.5: lambda o, b: f"np.sqrt({o[0]})",
    1.0: lambda o, b: o[0],
    2.0: lambda o, b: f"({o[0]} * {o[0]})",
}
_POWER_REFERENCE: dict[float, Callable[[np.ndarray], np.ndarray]] = {
    -1.0: lambda x: x.dtype.type(1) / x,
    0.0: lambda x: np.ones_like(x),
    0.5: np.sqrt,
    1.0: lambda x: x.copy(),
    2.0: lambda x: x * x,
}


@functools.cache
def _power_matches(exponent: float, dtype: np.dtype) -> bool:
    """Does ``np.power(x, exponent)`` equal the fast-path expression bitwise here?"""
    rng = np.random.default_rng(7)
    x = np.concatenate(
        [
            rng.standard_normal(997) * 10.0 ** rng.integers(-30, 30, 997),
            [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-310],
        ]
    )
    with np.errstate(all="ignore"):
        x = x.astype(dtype)
        got = np.power(x, dtype.type(exponent))
        want = _POWER_REFERENCE[exponent](x)
    return bool(
        np.array_equal(got.view(f"u{dtype.itemsize}"), want.view(f"u{dtype.itemsize}"))
        or np.array_equal(got, want, equal_nan=True)
    )


def _power_fast_path(exponent: Any, dtype: np.dtype) -> Callable[[list[str], _Body], str] | None:
    try:
        e = float(exponent)
    except (TypeError, ValueError):
        return None
    if e not in _POWER_FAST or not _power_matches(e, np.dtype(dtype)):
        return None
    return _POWER_FAST[e]


def _clip_ignored(node: Node) -> tuple[int, ...]:
    """The bounds ``np.clip`` drops before it computes anything: on an integer array, a
    Python int bound at or beyond the dtype's range (NumPy's ``_methods._clip``; it then calls
    ``maximum``, ``minimum`` or ``positive`` instead, which matters when the other bound
    makes the result a float: ``clip(int64, inf, 2**64 - 1)`` is ``inf``)."""
    x = node.args[0]
    dt = np.dtype(x.dtype) if isinstance(x, Node) else np.asarray(x).dtype
    if dt.kind not in "iu":
        return ()
    info = np.iinfo(dt)
    lo, hi = node.args[1], node.args[2]
    return tuple(
        k
        for k, drop in (
            (1, type(lo) is int and lo <= info.min),
            (2, type(hi) is int and hi >= info.max),
        )
        if drop
    )


def _clip_inline(args: list[Any], out: np.dtype) -> Callable[[list[str], _Body], str]:
    """NumPy's ``clip``, which is three different functions on floats (they differ on ties of
    ``-0.0`` with ``0.0`` and on which of two NaNs comes back):

    * one bound missing: ``np.clip`` calls ``maximum(x, lo)`` or ``minimum(x, hi)``;
    * both bounds scalars (literals or 0-d values): the clip loop's stride-0 branch, where a
      NaN bound wins, then ``lo if x < lo else x``, then ``hi if t > hi else t`` (so
      ``clip(-0.0, 0, 3)`` is ``-0.0``);
    * array bounds: ``minimum(maximum(x, lo), hi)`` with NumPy's NaN-propagating
      ``maximum``/``minimum`` — unless NumPy's iterator hands the loop both bounds with
      stride 0 after all (a ``(1,)`` bound), which no trace-time fact decides. So the kernel
      computes the array form and raises ``bad`` (NumPy reruns the segment) where the two
      forms could differ: a zero meeting a zero bound, a NaN ``x`` meeting a NaN bound.

    Integers and bools have neither signed zeros nor NaNs: every form is the same there."""
    float_ = out.kind == "f"
    lo_arg, hi_arg = args[1], args[2]
    both = lo_arg is not None and hi_arg is not None

    def scalar(a: Any) -> bool:
        return not isinstance(a, Node) or a.shape == ()

    stride0 = both and scalar(lo_arg) and scalar(hi_arg)

    def inline(o: list[str], b: _Body) -> str:
        x, lo, hi = o
        if float_ and stride0:
            t = b.let(f"({lo} if {x} < {lo} else {x})", out)
            return f"({lo} if {lo} != {lo} else ({hi} if ({hi} != {hi}) | ({t} > {hi}) else {t}))"
        expr = x
        for k, cmp in ((1, ">"), (2, "<")):
            if args[k] is None:
                continue
            t = b.let(expr, out)
            pick = f"({t} if {t} {cmp} {o[k]} else {o[k]})"
            expr = f"({t} if {t} != {t} else {pick})" if float_ else pick
            if float_ and both and k == 2:
                # where the stride-0 form could answer otherwise, NumPy decides
                b.flag(
                    f"((({x} == 0) & ({lo} == 0)) | (({t} == 0) & ({hi} == 0)) | "
                    f"(({x} != {x}) & (({lo} != {lo}) | ({hi} != {hi}))))"
                )
        return expr

    return inline


#: Elementwise ops that are not one ufunc call but have a kernel form of their own.
_NON_UFUNC_FORMS = frozenset({OpKind.CAST, OpKind.WHERE, OpKind.CLIP})


def kernel_form(op: OpKind, target: str = "cpu") -> bool:
    """Does a fused kernel for ``target`` compute ``op``, for some operand dtypes?

    The op-level half of :func:`lower` and :func:`can_compile`, which then decide per node
    (dtypes, literal operands, whether NumPy has the loop). ``tools/op_coverage.py`` prints it
    per op, with :data:`KERNEL_FALLBACK_REASONS` for the others."""
    if op in FUSIBLE_REDUCTIONS or op in _NON_UFUNC_FORMS:
        return True
    if op.ufunc is None:
        return False
    if op.kernel_loop and (target == "cpu" or op in _CUDA_MATH):
        return True  # NumPy's own loop on the CPU, libdevice on the device
    # an inline template, for a loop NumPy has (signbit's integer template is never reached:
    # NumPy computes the signbit of an integer with its float loop)
    loop_kinds = {np.dtype(t[0]).kind for t in op.ufunc.types if t[0] != "O"}
    return any(set(kinds) & loop_kinds for kinds, _ in _INLINE.get(op, ()))


_BETWEEN = "runs as NumPy's function between the kernels"

#: Why a fused CPU kernel has no form for an op (:func:`kernel_form`); it then runs between
#: the kernels, as NumPy's own function.
KERNEL_FALLBACK_REASONS: FallbackReasons = {
    OpGroup.SOURCE: "a kernel's inputs are arrays and scalars passed in",
    OpGroup.SHAPE: f"data movement {_BETWEEN} (a view costs nothing; kernels read strided "
    "views directly)",
    OpGroup.INDEXING: f"{_BETWEEN} (the whole-graph compiler writes gathers and scatters as loops)",
    OpGroup.LINALG: f"{_BETWEEN}: BLAS and LAPACK, faster than a loop in a kernel",
    OpGroup.SORTING: _BETWEEN,
    OpGroup.SCAN: f"{_BETWEEN} (sequential along its axis; the whole-graph compiler writes "
    "cumsum and cumprod as loops)",
    OpGroup.REDUCTION: f"{_BETWEEN}: two passes, a sort or an index result, in NumPy's own "
    "order of operations (only reductions with one accumulator fuse)",
    OpGroup.CREATION: f"{_BETWEEN} (a new array from scalars: nothing to fuse)",
    OpGroup.STATEFUL: "happens in order at each call, outside the kernels",
    OpGroup.OPAQUE: "NumPy's function runs as it is at each call",
    OpGroup.CONTROL_FLOW: "runs its sub-graphs, each with kernels of its own (the whole-graph "
    "compiler writes it as a Python loop or branch)",
    OpGroup.STRUCTURAL: "picks one result of a multi-result op: no computation",
    OpKind.GCD: f"no integer helper written for it; {_BETWEEN}",
    OpKind.LCM: f"no integer helper written for it; {_BETWEEN}",
    OpKind.BITWISE_COUNT: f"no inline template written for it; {_BETWEEN}",
    OpKind.LDEXP: "its loop mixes a float and an integer operand; a kernel computes each op "
    f"in one operand dtype, so it {_BETWEEN}",
    OpKind.FREXP: f"two results; a kernel op writes one, so it {_BETWEEN}",
    OpKind.MODF: f"two results; a kernel op writes one, so it {_BETWEEN}",
    OpKind.DIVMOD: f"two results; a kernel op writes one, so it {_BETWEEN}",
}

#: The same for CUDA kernels: the CPU reasons, and the float functions for which the device
#: has no bitwise form (a CPU kernel calls NumPy's own loop; the device cannot).
CUDA_FALLBACK_REASONS: FallbackReasons = {
    **KERNEL_FALLBACK_REASONS,
    **{
        op: "a float function with no device form wired: only exp, log, tanh and sqrt use "
        "libdevice (within a few ulp of NumPy); it runs as NumPy's function on the host"
        for op in OpKind
        if op.kernel_loop and not kernel_form(op, "cuda")
    },
}


def can_compile(
    node: Node, target: str = "cpu", auto: bool = False, fast_math: bool = False
) -> bool:
    """Can ``node`` be a member of a kernel for ``target``? (elementwise or reduction)

    ``auto`` admits only what ``backend="auto"`` promises: results bitwise NumPy's, except
    float sums and means, which are within the documented summation bound (and, with
    ``fast_math``, the approximations' ulp bounds)."""
    from ..passes.fusion import default_can_fuse

    if not default_can_fuse(node):
        return False
    try:
        if node.op in FUSIBLE_REDUCTIONS:
            plan = reduction_plan(node, auto)
            # a CUDA kernel reduces the whole domain (one partial per thread)
            return target == "cpu" or plan.axis is None
        lowering = lower(node, target, fast_math)
        for arg, dt in zip(lowering.operands(node.args), lowering.operand_dtypes):
            if not isinstance(arg, Node) and arg is not None:
                literal_value(arg, dt if dt is not None else np.dtype(node.dtype))
        return True
    except Unsupported:
        return False


# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReductionPlan:
    """A fused reduction: what is accumulated, in which dtype, from which identity."""

    op: OpKind
    axis: int | None  # normalised, or None for all axes
    keepdims: bool
    value_dtype: np.dtype  # dtype each element is cast to first (NumPy's reduction dtype)
    acc_dtype: np.dtype  # accumulator dtype (float64 for float sums and products)
    out_dtype: np.dtype
    identity: Any
    #: The dtype an N-d float sum or mean over an axis other than the last accumulates in
    #: when the call reproduces NumPy's order (``None``: always ``acc_dtype``). NumPy reduces
    #: a C-ordered array over such an axis row after row, ``out += row`` in the result's own
    #: dtype (no pairwise summation there), and so does the ``nd`` kernel: accumulating in
    #: ``value_dtype`` in that order is NumPy's result to the bit, and vectorises. The runner
    #: picks it per call (:attr:`sequential_axis`); other layouts keep ``acc_dtype``.
    seq_dtype: np.dtype | None = None

    @property
    def sequential_axis(self) -> bool:
        """Does the ``nd`` kernel accumulate this reduction row by row (an axis other than
        the last, into ``acc`` of the result's shape), rather than through lanes?"""
        return self.seq_dtype is not None

    def combine(self, acc: str, v: str) -> str:
        """Expression folding value ``v`` into accumulator ``acc``: the op's accumulator
        ufunc (``op.accumulator``, the op table's fact) written inline as for an elementwise
        node in the accumulator's dtype (so a float max propagates NaN as ``maximum``)."""
        ufunc = self.op.accumulator
        assert ufunc is not None  # (a fusible reduction has one)
        return _inline_ufunc(ufunc, [acc, v], self.acc_dtype)

    @property
    def mean(self) -> bool:
        """Is the result the accumulator divided by the count of reduced elements?"""
        return self.op is OpKind.MEAN

    def count(self, dims: list[str]) -> str:
        """Source text of the number of elements each result reduces (domain sizes
        ``dims``)."""
        return " * ".join(dims) if self.axis is None else dims[self.axis]

    def accumulator_shape(self, dims: list[str]) -> list[str]:
        """The N-d accumulator's shape: the domain's, 1 on every reduced axis."""
        return ["1" if self.axis is None or d == self.axis else size for d, size in enumerate(dims)]

    def result_dims(self, dims: list[str]) -> list[str]:
        """The result's shape without keepdims: the domain's less the reduced axes."""
        return [] if self.axis is None else [size for d, size in enumerate(dims) if d != self.axis]


class _Operands:
    """What an inline template sees when it folds two values already in one dtype."""

    def __init__(self, operands: list[str], dtype: np.dtype) -> None:
        self.ops, self.dtype = operands, dtype

    def truth(self, k: int) -> str:
        return _truth(self.ops[k], self.dtype)

    def float_op(self, op: str, o: list[str]) -> str:
        return f"({o[0]} {op} {o[1]})"  # an accumulator and a loaded value: never folded


def _inline_ufunc(ufunc: np.ufunc, operands: list[str], dtype: np.dtype) -> str:
    """``ufunc`` applied inline to ``operands`` of ``dtype`` (its elementwise template)."""
    kind = _kind(dtype)
    for kinds, fn in _INLINE[UFUNC_OPS[ufunc]]:
        if kind in kinds:
            return fn(operands, _Operands(operands, dtype))
    raise Unsupported(f"no inline {ufunc.__name__} on {dtype}")


def _identity(ufunc: np.ufunc, dtype: np.dtype) -> Any:
    """The value an accumulation with ``ufunc`` starts from: the ufunc's identity, or — for
    ``maximum``/``minimum``, which have none — the dtype's extreme that the ufunc never
    picks over another value."""
    if ufunc.identity is not None:
        return ufunc.identity
    if dtype.kind == "f":
        lo, hi = -np.inf, np.inf
    elif dtype == _BOOL:
        lo, hi = False, True
    else:
        info = np.iinfo(dtype)
        lo, hi = info.min, info.max
    picked = ufunc(np.array(lo, dtype), np.array(hi, dtype))
    return lo if picked == np.array(hi, dtype) else hi


def reduction_plan(node: Node, auto: bool = False) -> ReductionPlan:
    """The plan of a fusible reduction node, or Unsupported (``auto``: no float max/min)."""
    if node.op not in FUSIBLE_REDUCTIONS:
        raise Unsupported(node.op.value)
    x = node.args[0]
    if not isinstance(x, Node) or x.shape is None:
        raise Unsupported("reduction of an unknown rank")
    in_dt = np.dtype(x.dtype)
    out_dt = np.dtype(node.dtype)
    if in_dt not in SUPPORTED_DTYPES or out_dt not in SUPPORTED_DTYPES:
        raise Unsupported("reduction dtype")
    extra = set(node.params) - {"axis", "keepdims", "dtype"}
    if extra:
        raise Unsupported(f"reduction attrs {extra}")
    ndim = len(x.shape)
    axis = node.attrs.get("axis")
    if isinstance(axis, tuple):
        if len(axis) != 1:
            if sorted(a % max(ndim, 1) for a in axis) == list(range(ndim)):
                axis = None
            else:
                raise Unsupported("several reduction axes")
        else:
            axis = axis[0]
    if axis is not None:
        if ndim == 0:
            raise Unsupported("axis of a 0-d value")
        axis = int(axis) % ndim
        if ndim == 1:
            axis = None if not node.attrs.get("keepdims") else axis
    keepdims = bool(node.attrs.get("keepdims", False))
    op = node.op
    if BITWISE_ONLY and out_dt.kind == "f":
        # Float sums differ in summation order (within the documented bound, not bitwise).
        raise Unsupported("float reduction (bitwise mode)")
    if auto and out_dt.kind == "f" and op in (OpKind.MAX, OpKind.MIN):
        # Which NaN a float max/min returns depends on the order (NumPy's SIMD reductions
        # return the canonical NaN past a length, the NaN found below it): not bitwise and
        # not covered by a rounding bound, so only backend="numba" fuses them.
        raise Unsupported("float max/min (auto)")
    accumulator = op.accumulator
    if op in (OpKind.ANY, OpKind.ALL):
        if out_dt != _BOOL:
            raise Unsupported("any/all to a non-bool dtype")
        return ReductionPlan(
            op, axis, keepdims, _BOOL, _BOOL, out_dt, _identity(accumulator, _BOOL)
        )  # type: ignore[arg-type]
    if op in (OpKind.MAX, OpKind.MIN):
        if out_dt != in_dt:
            raise Unsupported("max/min changing dtype")
        return ReductionPlan(
            op, axis, keepdims, out_dt, out_dt, out_dt, _identity(accumulator, out_dt)
        )  # type: ignore[arg-type]
    # sum / prod / mean: NumPy casts elements to the result dtype, then accumulates
    if out_dt == _BOOL:
        raise Unsupported("bool sum")
    if op is OpKind.PROD and out_dt.kind == "f":
        # A float product's overflow/underflow to inf/0 depends on the order of the factors
        # (inf * 0 is NaN): no bound relates two orders, so NumPy keeps computing it.
        raise Unsupported("float product")
    if out_dt.kind == "f":
        acc = _F64
    elif out_dt.kind == "i":
        acc = np.dtype(np.int64)
    else:
        acc = np.dtype(np.uint64)
    value_dt = out_dt
    if op is OpKind.MEAN and "dtype" not in node.attrs and in_dt.kind in "iub":
        value_dt = _F64
    seq = None
    if axis is not None and axis < ndim - 1 and value_dt.kind == "f" and value_dt != acc:
        seq = value_dt  # float32 row by row, as NumPy (float64 already is: acc == value_dt)
    return ReductionPlan(
        op, axis, keepdims, value_dt, acc, out_dt, _identity(accumulator, acc), seq
    )  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Helper functions emitted into kernel modules (templates per dtype)
# ---------------------------------------------------------------------------------------------

_HELPERS = {
    # NumPy integer floor_divide: x // 0 == 0, MIN // -1 == MIN (wraps), else floor division.
    "fdiv": """\
def {name}(a, b):
    if b == 0:
        return {C}(0)
    if {signed} and b == -1:
        return {C}(-a)
    return {C}(a // b)
""",
    # NumPy integer remainder (Python's sign rule): x % 0 == 0, x % -1 == 0.
    "mod": """\
def {name}(a, b):
    if b == 0:
        return {C}(0)
    if {signed} and b == -1:
        return {C}(0)
    return {C}(a % b)
""",
    # NumPy integer fmod (C's sign rule): x fmod 0 == 0.
    "fmod": """\
def {name}(a, b):
    if b == 0:
        return {C}(0)
    if {signed} and b == -1:
        return {C}(0)
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r = r - b
    return {C}(r)
""",
    # NumPy integer power by squaring, wrapping in the dtype (the caller rejects b < 0).
    "ipow": """\
def {name}(a, b):
    if b <= 0:
        return {C}(1)
    r = {W}(a) if b & 1 else {W}(1)
    x = {W}(a)
    e = b >> 1
    while e > 0:
        x = _wmul(x, x)
        if e & 1:
            r = _wmul(r, x)
        e = e >> 1
    return {C}(r)
""",
    # NumPy shifts: a shift by the width or more (or by a negative amount) gives 0 / -1.
    "shl": """\
def {name}(a, b):
    if b < 0 or b >= {bits}:
        return {C}(0)
    return {C}({W}(a) << {W}(b))
""",
    "shr": """\
def {name}(a, b):
    if b < 0 or b >= {bits}:
        return {C}(-1) if a < 0 else {C}(0)
    return {C}({W}(a) >> {W}(b))
""",
    # CUDA device math, guarded so the simulator (Python's math) sees no domain errors.
    "_dexp": """\
def {name}(x):
    if x != x:
        return x
    if x > {hi}:
        return {C}(np.inf)
    if x < {lo}:
        return {C}(0)
    return {C}(math.exp(x))
""",
    "_dlog": """\
def {name}(x):
    if x != x or x < 0:
        return {C}(np.nan)
    if x == 0:
        return {C}(-np.inf)
    if x == np.inf:
        return x
    return {C}(math.log(x))
""",
    "_dtanh": """\
def {name}(x):
    if x != x:
        return x
    return {C}(math.tanh(x))
""",
    "_dsqrt": """\
def {name}(x):
    if x != x or x < 0:
        return {C}(np.nan)
    if x == np.inf:
        return x
    return {C}(math.sqrt(x))
""",
}


def _helper_source(kind: str, dtype: np.dtype, decorator: str) -> tuple[str, str]:
    name = f"_{kind.strip('_')}_{dtname(dtype)}"
    dtype = np.dtype(dtype)
    params: dict[str, Any] = {"name": name, "C": ctor(dtype)}
    if dtype.kind in "iu":
        params["signed"] = dtype.kind == "i"
        params["bits"] = dtype.itemsize * 8
        params["W"] = "np.int64" if dtype.kind == "i" else "np.uint64"
    if dtype.kind == "f":
        params["hi"] = "88.72283935546875" if dtype.itemsize == 4 else "709.782712893384"
        params["lo"] = "-103.97208404541016" if dtype.itemsize == 4 else "-745.1332191019412"
    return name, decorator + "\n" + _HELPERS[kind].format(**params)


# ---------------------------------------------------------------------------------------------
# Kernel bodies
# ---------------------------------------------------------------------------------------------


class _Body:
    """Emission context of one node's expression: operands, constants, helper calls."""

    def __init__(
        self,
        kernel: _KernelWriter,
        node: Node,
        operands: list[str],
        dtypes: list[np.dtype | None],
        out: np.dtype,
        lines: list[str],
        indent: str,
    ) -> None:
        self.k = kernel
        self.node = node
        self.ops = operands
        self.dtypes = dtypes
        self.out = out
        self.lines = lines
        self.indent = indent
        loop_dt = next((d for d in dtypes if d is not None), out)
        self.loop_dtype = loop_dt
        self.one = kernel.const(1, loop_dt)
        self.zero = kernel.const(0, loop_dt)

    def const(self, value: Any) -> str:
        return self.k.const(value, self.loop_dtype)

    def truth(self, k: int) -> str:
        dt = (
            self.dtypes[k]
            if self.dtypes[k] is not None
            else self.k.operand_dtype(self.node.args[k])
        )
        return _truth(self.ops[k], dt)

    def let(self, expr: str, dtype: np.dtype) -> str:
        name = self.k.fresh("c")
        self.lines.append(f"{self.indent}{name} = {expr}")
        return name

    def cast_arg(self, k: int, dst: np.dtype) -> str:
        return self.k.cast(
            self.ops[k], self.k.operand_dtype(self.node.args[k]), dst, self.lines, self.indent
        )

    def helper(self, kind: str, o: list[str]) -> str:
        name = self.k.helper(kind, self.loop_dtype)
        return f"{name}({', '.join(o)})"

    def float_op(self, op: str, o: list[str]) -> str:
        """``a <op> b`` on floats, with the NaN the CPU's instruction gives where LLVM may
        give another. LLVM treats a NaN result's sign and payload as unspecified, so:

        * where both operands may be constants to it (literals, ``where`` of literals, bool
          casts: ``select``s it folds arithmetic into, :meth:`_KernelWriter.foldable`), an
          invalid operation (``0/0``, ``inf - inf``) may be folded into ``+nan`` where the
          CPU makes ``-nan`` (x86);
        * where an operand is a negation (``-x``, ``abs``, ``x * -1.0``; :meth:`_KernelWriter
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
        self.k.check(cond, self.lines, self.indent)

    def int_power(self, o: list[str]) -> str:
        if self.loop_dtype.kind == "i":
            self.k.check(f"({o[1]} < 0)", self.lines, self.indent)
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


class _KernelWriter:
    """Writes the kernels of one segment for one target."""

    def __init__(
        self, seg: Segment, target: str, prefix: str = "", fast_math: bool = False
    ) -> None:
        self.seg = seg
        self.target = target
        #: Kernel parameters (``in<i>``/``out<i>``) whose rows the caller guarantees to be
        #: unit-stride views (:meth:`KernelEmbedding.kernel`)
        self.unit_rows: frozenset[str] = frozenset()
        #: Does the ``nd`` kernel being written make its input rows contiguous itself
        #: (the runner's kernels; a whole-graph caller states ``unit_rows`` instead)?
        self._own_rows = False
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
        self._plan_stages()

    def _call(self, variant: str | None = None) -> SegmentCall:
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
        name, src = _helper_source(kind, dtype, decorator)
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
        if arg.dtype == _BOOL:
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

    def check(self, cond: str, lines: list[str], indent: str) -> None:
        lines.append(f"{indent}bad = bad | {cond}")

    def operand_dtype(self, arg: Any) -> np.dtype:
        if isinstance(arg, Node):
            return np.dtype(arg.dtype)
        return _weak_dtype(arg)

    def cast(self, expr: str, src: np.dtype, dst: np.dtype, lines: list[str], indent: str) -> str:
        """``expr`` (of dtype ``src``) as ``dst``, exactly as NumPy's ``astype`` casts."""
        src, dst = np.dtype(src), np.dtype(dst)
        if src == dst:
            return expr
        if dst == _BOOL:
            return f"({expr} != 0)"
        if src.kind == "f" and dst.kind in "iu":
            # NaN, inf and out-of-range values have no defined integer: NumPy decides them.
            v = self.fresh("v")
            lines.append(f"{indent}{v} = {expr}")
            if dst.kind == "i":
                lo, hi = -(2.0 ** (dst.itemsize * 8 - 1)) - 1, 2.0 ** (dst.itemsize * 8 - 1)
            else:
                lo, hi = -1.0, 2.0 ** (dst.itemsize * 8)
            lo_c = self.const(np.array(lo).astype(src), src)
            hi_c = self.const(np.array(hi).astype(src), src)
            self.check(f"(not (({v} > {lo_c}) & ({v} < {hi_c})))", lines, indent)
            safe = f"({v} if ({v} > {lo_c}) & ({v} < {hi_c}) else {self.const(0, src)})"
            return f"{ctor(dst)}({safe})"
        if src == _BOOL:
            return f"({self.const(1, dst)} if {expr} else {self.const(0, dst)})"
        return f"{ctor(dst)}({expr})"

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

    # -- module ------------------------------------------------------------------------------
    def write(self) -> KernelSource:
        if self.target == "cpu":
            body = self._cpu_kernels()
        else:
            body = self._cuda_kernel()
        header = [
            f"# kernel_ext generated kernel (codegen v{CODEGEN_VERSION}, target {self.target})",
            f"# segment: {self.seg.describe()}",
            # The signature is part of the text (so of the cache key): two segments whose
            # code reads the same can still differ in their inputs' dtypes.
            "# inputs: " + ", ".join(f"{dtname(n.dtype)}/{len(n.shape)}" for n in self.seg.inputs),
            "# outputs: "
            + ", ".join(f"{dtname(n.dtype)}/{len(n.shape)}" for n in self.seg.outputs),
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
            WRAPPING_IMPORT.format(
                module="numba_decorators" if self.target == "cpu" else "numba_cuda"
            )
        )
        parts = ["\n".join(header), "\n".join(self.const_lines)]
        parts += list(self.helpers.values())
        parts += body
        source = "\n\n".join(p for p in parts if p) + "\n"
        key = hashlib.sha256(source.encode()).hexdigest()[:24]
        return KernelSource(source, key, self.target, self._call())

    def embedded(self, variant: str, name: str, decorator: str) -> EmbeddedKernel:
        """One CPU variant for a whole-graph module (block buffers passed in)."""
        text = self.cpu_kernel(variant, name, decorator, embedded=True)
        return EmbeddedKernel(text, "\n".join(self.const_lines), dict(self.helpers), self._call())

    # -- CPU -------------------------------------------------------------------------------
    def _cpu_kernels(self) -> list[str]:
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
        params = self._call(variant).params(variant, scratch=embedded)
        lines = [decorator, f"def {name}({', '.join(params)}):", "    bad = False"]
        if not embedded:  # allocated once per call, before any loop
            lines += [f"    {x.name} = {x.allocation()}" for x in scratch]
        lines += [x for x in body if not isinstance(x, Scratch)]
        return "\n".join(lines)

    def _cpu_kernel_lines(self, nd: bool) -> list[str | Scratch]:
        """The body of a CPU kernel; its block buffers appear as :class:`Scratch` entries."""
        lines: list[str | Scratch] = []
        # block buffers and NumPy-loop argument vectors
        for n in sorted(self.buffered, key=self.seg.nodes.index):
            lines.append(Scratch(f"buf_{self._id(n)}", str(BLOCK), ctor(np.dtype(n.dtype))))
        if self.calls:
            # one row of loop-argument pointers and strides per NumPy loop call
            lines.append(Scratch("pp", f"({len(self.calls)}, 4)", "np.uintp"))
            lines.append(Scratch("st", f"({len(self.calls)}, 4)", "np.intp"))
            lines.append(Scratch("dims", "1", "np.intp"))
        for k, n in enumerate(self.calls):
            ufunc, loop = self.lowerings[n].call  # type: ignore[misc]
            nin = ufunc.nin
            for j, a in enumerate(n.args):
                if self._passthrough(n, j) is not None:
                    continue  # the loop reads the input's block view in place (per block)
                size = BLOCK if self._is_block_operand(a) else 1
                lines.append(Scratch(f"ci{k}_{j}", str(size), ctor(loop[j])))
                lines.append(f"    pp[{k}, {j}] = ci{k}_{j}.ctypes.data")
                step = loop[j].itemsize if self._is_block_operand(a) else 0
                lines.append(f"    st[{k}, {j}] = {step}")
            if self._direct_output(n) is None:
                lines.append(Scratch(f"co{k}", str(BLOCK), ctor(loop[nin])))
                lines.append(f"    pp[{k}, {nin}] = co{k}.ctypes.data")
                lines.append(f"    st[{k}, {nin}] = {loop[nin].itemsize}")
        red = self.red
        # Reductions folded through lanes (_lane_fold): the flat kernel's, and an N-d
        # kernel's over all axes or over the last axis (one group per row); a reduction over
        # another axis accumulates into the acc row of each block instead (as NumPy does).
        lanes = red is not None and (not nd or self._nd_scalar_reduce())
        per_row = bool(lanes and nd and red is not None and red.axis is not None)
        last = f"n{self.rank - 1}" if nd else "stop - start"
        if red is not None and lanes:
            # lanes a call never reaches are never read: only the first ones start at the
            # identity (a call on 5 elements does not initialise 1024)
            lines.append(Scratch("wl", str(BLOCK), ctor(red.acc_dtype)))
            lines.append(Scratch("cs", "64", ctor(red.acc_dtype)))
            lines.append(f"    for l in range(min({BLOCK}, {last})):")
            lines.append(f"        wl[l] = {self.const(red.identity, red.acc_dtype)}")
        if lanes and not per_row:
            lines += ["    nb = 0", "    nc = 0", "    used = 0"]
        indent = "    "
        if nd:
            for d in range(self.rank - 1):
                lines.append(f"{indent}for i{d} in range(n{d}):")
                indent += "    "
            if per_row:
                lines += [f"{indent}nb = 0", f"{indent}nc = 0", f"{indent}used = 0"]
            lines.append(f"{indent}for blk in range(0, {last}, {BLOCK}):")
            lines.append(f"{indent}    m = min({BLOCK}, {last} - blk)")
        else:
            lines.append(f"{indent}for blk in range(start, stop, {BLOCK}):")
            lines.append(f"{indent}    m = min({BLOCK}, stop - blk)")
        row_indent = indent
        indent += "    "
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
        if red is not None and not lanes:
            idx = [f"i{d}" for d in range(self.rank - 1)] + ["blk:blk + m"]
            idx[red.axis] = "0"  # type: ignore[index]
            lines.append(f"{indent}bacc = acc[{', '.join(idx)}]")
        for s in range(self.n_stages):
            lines.append(f"{indent}for j in range(m):")
            lines.extend(self._stage_body(s, indent + "    ", nd) or [f"{indent}    pass"])
            for k, n in enumerate(self.calls):
                if self.stage[n] == s:
                    lines.extend(self._call_lines(k, n, indent))
        if lanes:
            lines += [
                f"{indent}nb += 1",
                f"{indent}used = max(used, m)",
                f"{indent}if nb == {CHUNK_BLOCKS}:",
            ]
            lines += self._lane_fold(indent + "    ")
            end = row_indent if per_row else "    "
            lines.append(f"{end}if used > 0:")
            lines += self._lane_fold(end + "    ")
            lines += self._cascade_total(end)
        if red is not None and lanes and nd:
            idx = ", ".join(
                [
                    "0" if d == red.axis or red.axis is None else f"i{d}"
                    for d in range(self.rank - 1)
                ]
                + ["0"]
            )
            end = row_indent if per_row else "    "
            lines.append(f"{end}a = acc[{idx}]")
            lines.append(f"{end}v = r")
            lines.append(f"{end}acc[{idx}] = {red.combine('a', 'v')}")
        lines.append("    return bad, r" if lanes and not nd else "    return bad")
        return lines

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
            Scratch(copy, str(BLOCK), ctor(dtype)),
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

    def _id(self, node: Node) -> int:
        return self.seg.nodes.index(node)

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
                    name = f"r{self._id(arg)}_{s}"
                    out = self._direct_output(arg)
                    src = f"bo{out}" if out is not None else f"co{k}"
                    lines.append(f"{indent}{name} = {src}[j]")
                    if np.dtype(arg.dtype) != low.out_dtype:
                        name = self._finish(name, low.out_dtype, arg, lines, indent, s)
                elif self.stage[arg] < s:
                    name = f"r{self._id(arg)}_{s}"
                    lines.append(f"{indent}{name} = buf_{self._id(arg)}[j]")
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
            body = _Body(self, n, operands, low.operand_dtypes, low.out_dtype, lines, indent)
            expr = low.inline(operands, body)  # type: ignore[misc]
            t = f"t{self._id(n)}"
            if _keeps_type(low):
                lines.append(f"{indent}{t} = {expr}")
            else:
                lines.append(f"{indent}{t} = {ctor(low.out_dtype)}({expr})")
            if np.dtype(n.dtype) != low.out_dtype:
                t = self._finish(t, low.out_dtype, n, lines, indent, s)
            names[n] = t
            if n in self.buffered:
                lines.append(f"{indent}buf_{self._id(n)}[j] = {t}")
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
                    v = _truth(v, red.value_dtype)
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
        t = f"u{self._id(node)}_{s}"
        lines.append(f"{indent}{t} = {out}")
        return t

    def _call_lines(self, k: int, n: Node, indent: str) -> list[str]:
        low = self.lowerings[n]
        lines = []
        for j, arg in enumerate(n.args):
            if not self._is_block_operand(arg):
                # a literal or 0-d operand: one element, stride 0 (as NumPy broadcasts it)
                dt = low.operand_dtypes[j]
                if isinstance(arg, Node):
                    i = self.seg.inputs.index(arg)
                    src = self.cast(f"s{i}", np.dtype(arg.dtype), dt, lines, indent)
                else:
                    src = self.const(literal_value(arg, dt), dt)  # type: ignore[arg-type]
                lines.append(f"{indent}ci{k}_{j}[0] = {src}")
        for j in range(len(n.args)):
            i = self._passthrough(n, j)
            if i is not None:
                lines.append(f"{indent}pp[{k}, {j}] = b{i}.ctypes.data")
                lines.append(f"{indent}st[{k}, {j}] = b{i}.strides[0]")
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

    # -- CUDA ------------------------------------------------------------------------------
    def _cuda_kernel(self) -> list[str]:
        """One grid-stride kernel over the flattened domain (N-d index unravelled), writing
        map outputs and, for a reduction, one partial accumulator per thread. Inputs keep their
        own sizes (broadcast dims read at index 0): only their data goes to the device."""
        args = self._call().params("cuda")
        lines = [
            "@_kernel",
            f"def k_cuda({', '.join(args)}):",
            "    bad = False",
            "    start = cuda.grid(1)",
            "    step = cuda.gridsize(1)",
        ]
        red = self.red
        if red is not None:
            lines.append(f"    r = {self.const(red.identity, red.acc_dtype)}")
        lines.append("    for flat in range(start, total, step):")
        indent = "        "
        lines.append(f"{indent}rest = flat")
        for d in range(self.rank - 1, -1, -1):
            lines.append(f"{indent}i{d} = rest % n{d}")
            lines.append(f"{indent}rest = rest // n{d}")
        idx = ", ".join(f"i{d}" for d in range(self.rank)) or "0"
        names: dict[Any, str] = {}
        body: list[str] = []

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
                body.append(f"{indent}{name} = in{i}[{at or '0'}]")
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
                        expr = self.cast(expr, np.dtype(arg.dtype), dt, body, indent)
                    operands.append(expr)
            b = _Body(self, n, operands, low.operand_dtypes, low.out_dtype, body, indent)
            t = f"t{self._id(n)}"
            body.append(f"{indent}{t} = {ctor(low.out_dtype)}({low.inline(operands, b)})")
            if np.dtype(n.dtype) != low.out_dtype:
                cast = self.cast(t, low.out_dtype, np.dtype(n.dtype), body, indent)
                body.append(f"{indent}{t}c = {cast}")
                t = f"{t}c"
            names[n] = t
        for i in self.map_outputs:
            body.append(f"{indent}out{i}[{idx}] = {value(self.seg.outputs[i], None)}")
        if red is not None:
            x = self.seg.reduction.args[0]  # type: ignore[union-attr]
            v = value(x, None)
            v = self.cast(v, np.dtype(x.aval.dtype), red.value_dtype, body, indent)
            if red.op in (OpKind.ANY, OpKind.ALL):
                v = _truth(v, red.value_dtype)
            else:
                v = self.cast(v, red.value_dtype, red.acc_dtype, body, indent)
            body.append(f"{indent}v = {v}")
            body.append(f"{indent}r = {red.combine('r', 'v')}")
        lines += body
        if red is not None:
            lines.append("    acc[start] = r")
        lines.append("    if bad:")
        lines.append("        flag[0] = 1")
        return ["from numba import cuda", "\n".join(lines)]


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


def _weak_dtype(value: Any) -> np.dtype:
    if isinstance(value, (bool, np.bool_)):
        return _BOOL
    if isinstance(value, (int, np.integer)):
        return np.dtype(np.int64)
    return _F64


def segment_key(seg: Segment) -> tuple:
    """The structure a segment's kernel text depends on: each member's :func:`node_key` and
    where its operands come from (an input, a member, a literal), the inputs' dtypes and
    ranks, and which members are outputs. Two segments with one key get one kernel text."""
    pos = {n: ("m", i) for i, n in enumerate(seg.nodes)}
    pos.update({n: ("i", i) for i, n in enumerate(seg.inputs)})
    members = tuple(
        (node_key(n), tuple(pos.get(a) if isinstance(a, Node) else None for a in n.args))
        for n in seg.nodes
    )
    ins = tuple((n.dtype, len(n.shape)) for n in seg.inputs)
    outs = tuple(seg.nodes.index(o) for o in seg.outputs)
    red = seg.nodes.index(seg.reduction) if seg.reduction is not None else None
    return (members, ins, outs, red, len(seg.domain))


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


class KernelEmbedding:
    """A segment's CPU kernels written for a whole-graph module: :attr:`call` describes them
    before any text is written (so the renderer can pick a variant), :meth:`kernel` writes
    one variant — its constants prefixed with ``prefix`` (several segments share the
    module), its block buffers trailing parameters (:meth:`SegmentCall.args` with
    ``scratch=True``)."""

    def __init__(self, seg: Segment, prefix: str, fast_math: bool = False) -> None:
        self._writer = _KernelWriter(seg, "cpu", prefix=prefix, fast_math=fast_math)

    @property
    def call(self) -> SegmentCall:
        return self._writer._call()

    def kernel(
        self,
        variant: str,
        name: str,
        decorator: str = "@_kernel",
        unit_rows: frozenset[str] = frozenset(),
    ) -> EmbeddedKernel:
        """``unit_rows``: the parameters (``in<i>``, ``out<i>``) the caller passes as views
        whose last axis has unit stride (their row blocks are retyped as contiguous)."""
        self._writer.unit_rows = unit_rows
        return self._writer.embedded(variant, name, decorator)

    def scalar_kernel(self, name: str, decorator: str = "@_inline") -> EmbeddedKernel | None:
        """The 0-d segment as a function of scalars (:meth:`_KernelWriter.scalar_kernel`):
        called as ``bad, out0, ... = name(in0, ...)``; None where it needs buffers."""
        w = self._writer
        text = w.scalar_kernel(name, decorator)
        if text is None:
            return None
        return EmbeddedKernel(text, "\n".join(w.const_lines), dict(w.helpers), w._call())


_GENERATED: dict[tuple, KernelSource] = {}


def generate(seg: Segment, target: str = "cpu", fast_math: bool = False) -> KernelSource:
    """The kernel module of ``seg`` for ``target`` ("cpu" or "cuda"), memoised by
    :func:`segment_key` (a retrace with new sizes writes no kernel text); ``fast_math``:
    with :mod:`.fast_math`'s approximations (another text, so another cache key)."""
    try:
        key = (target, fast_math, segment_key(seg))
    except TypeError:
        return _KernelWriter(seg, target, fast_math=fast_math).write()
    got = _GENERATED.get(key)
    if got is None:
        got = _KernelWriter(seg, target, fast_math=fast_math).write()
        if len(_GENERATED) > 2_000:
            _GENERATED.clear()
        _GENERATED[key] = got
    return got


__all__ = [
    "BLOCK",
    "CHUNK_BLOCKS",
    "CODEGEN_VERSION",
    "SUPPORTED_DTYPES",
    "WRAPPING_IMPORT",
    "EmbeddedKernel",
    "KernelEmbedding",
    "KernelSource",
    "Lowering",
    "ReductionPlan",
    "Unsupported",
    "can_compile",
    "const_source",
    "ctor",
    "default_nan",
    "generate",
    "literal_value",
    "loop_dtypes",
    "lower",
    "reduction_plan",
]
