"""Op lowering: which NumPy loop dtypes an elementwise op runs in, how a kernel computes it
(inline, a NumPy loop call, device math, fast math), and which ops a kernel has a form for."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias, cast

import numpy as np

from ...ir import FUSIBLE_REDUCTIONS, AbstractValue, FallbackReasons, Node, OpGroup, OpKind
from ...ir.params import UfuncParams
from ...ir.registry import OpTable
from .. import fast_math as fm
from ..emit.literals import BOOL, SUPPORTED_DTYPES, Unsupported, dtype_kind, literal_value
from ..static_shapes import aval_of_node
from ..ufunc_loops import find_loop
from .inline_templates import CUDA_MATH, INLINE
from .reductions import reduction_plan

if TYPE_CHECKING:
    from .writer import InlineContext

#: Writes an inline op's expression from its operands' source texts and the node's context.
InlineTemplate: TypeAlias = "Callable[[list[str], InlineContext], str]"


def _weak(arg: Any) -> Any:
    if isinstance(arg, Node):
        return arg.dtype
    if isinstance(arg, bool):
        return BOOL
    return type(arg)


def loop_dtypes(node: Node) -> tuple[list[np.dtype], np.dtype]:
    """Input and output dtypes of the NumPy loop a ufunc node runs (NEP 50 weak literals)."""
    ufunc = node.op.ufunc
    if ufunc is None or ufunc.nout != 1:
        raise Unsupported(f"{node.op.value} is not a single-output ufunc")
    dtypes = tuple(_weak(a) for a in node.args) + (None,)
    try:
        # (presence, not None: np.dtype(None) is float64, so a given None is a signature)
        if "dtype" in node.params:
            sig = (None,) * ufunc.nin + (np.dtype(cast("UfuncParams", node.params).dtype),)
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
    inline: InlineTemplate | None = None
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


def _arg_key(arg: Any) -> Any:
    if isinstance(arg, Node):
        return (arg.dtype, None if arg.shape is None else len(arg.shape))
    return (type(arg), repr(arg))  # repr: 0.0 and -0.0 (equal as keys) are other constants


def node_key(node: Node) -> tuple:
    """What an elementwise node's lowering depends on: its op, attrs, the dtypes and ranks of
    its operands and its literal operands (never sizes, never names)."""
    attrs = tuple(sorted((k, repr(v)) for k, v in node.params.items()))
    aval = cast("AbstractValue", node.aval)  # (else a value without a dtype: its repr)
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
    out = _result_dtype(node)
    form = NON_UFUNC_LOWERINGS.get(node.op)
    if form is not None:
        return form(node, out)
    loop = _ufunc_loop(node, target, fast_math)
    for rule in _UFUNC_RULES:
        got = rule(loop)
        if got is not None:
            return got
    raise Unsupported(f"{node.op.value} on {loop.ins[0]} ({target})")


def _result_dtype(node: Node) -> np.dtype:
    """``node``'s result dtype, or Unsupported where it or an operand's dtype has no kernel
    form."""
    aval = node.aval  # (an op with a kernel form has one result, or none)
    if not isinstance(aval, AbstractValue) or np.dtype(aval.dtype) not in SUPPORTED_DTYPES:
        raise Unsupported(f"result dtype {getattr(aval, 'dtype', None)}")
    for a in node.inputs:
        if np.dtype(a.dtype) not in SUPPORTED_DTYPES:
            raise Unsupported(f"operand dtype {a.dtype}")
    return np.dtype(aval.dtype)


#: Elementwise ops that are not one ufunc call but have a kernel form of their own: op ->
#: its lowering from the node and its result dtype (registered with each op in
#: :mod:`kernel_ext.ops.elementwise`).
NON_UFUNC_LOWERINGS: OpTable[Callable[[Node, np.dtype], Lowering]] = OpTable(
    "fused-kernel non-ufunc lowering"
)


class _UfuncLoop(NamedTuple):
    """A ufunc node with the NumPy loop it runs, as the lowering rules see it."""

    node: Node
    target: str
    fast_math: bool
    ins: list[np.dtype]
    out: np.dtype
    kind: str  # the loop's kind (:func:`.literals.dtype_kind`)


def _ufunc_loop(node: Node, target: str, fast_math: bool) -> _UfuncLoop:
    """The loop ``node`` runs, or Unsupported where it is no ufunc, or its loop has a dtype
    kernels lack or mixes operand dtypes."""
    op = node.op
    if op.ufunc is None:
        raise Unsupported(f"op {op.value}")
    ins, loop_out = loop_dtypes(node)
    if any(d not in SUPPORTED_DTYPES for d in ins) or loop_out not in SUPPORTED_DTYPES:
        raise Unsupported(f"{op.value} loop {ins}->{loop_out}")
    if len(set(ins)) > 1:
        raise Unsupported(f"{op.value} mixed loop {ins}")
    return _UfuncLoop(node, target, fast_math, ins, loop_out, dtype_kind(ins[0]))


def _lower_power_fast(loop: _UfuncLoop) -> Lowering | None:
    """A float power by a literal NumPy's loop answers without pow (:data:`_POWER_FAST`)."""
    node = loop.node
    if node.op is not OpKind.POWER or loop.kind != "f" or isinstance(node.args[1], Node):
        return None
    fast = _power_fast_path(node.args[1], loop.ins[0])
    if fast is None:
        return None
    return Lowering(list(loop.ins), loop.out, inline=fast)


def _lower_fast_math(loop: _UfuncLoop) -> Lowering | None:
    """The :mod:`.fast_math` approximation of a float op (CPU, fast-math mode)."""
    fast = loop.fast_math and loop.target == "cpu" and loop.kind == "f"
    approx = fm.FAST_OPS.get(loop.node.op) if fast else None
    if approx is None or not fm.supports(approx, loop.ins[0]) or loop.out != loop.ins[0]:
        return None

    def fast_math_call(o: list[str], b: InlineContext) -> str:
        return b.fast_math(approx, o)

    return Lowering(list(loop.ins), loop.out, inline=fast_math_call, approx=approx)


def _lower_inline(loop: _UfuncLoop) -> Lowering | None:
    """The op's inline template for the loop's kind (:data:`.inline_templates.INLINE`)."""
    for kinds, fn in INLINE.get(loop.node.op, ()):
        if loop.kind in kinds:
            return Lowering(list(loop.ins), loop.out, inline=fn)
    return None


def _lower_exact_float(loop: _UfuncLoop) -> Lowering | None:
    """A float function IEEE defines exactly, inline for a 0-d value on the CPU."""
    node = loop.node
    if not (
        loop.kind == "f"
        and loop.target == "cpu"
        and node.op in _EXACT_FLOAT
        and aval_of_node(node).shape == ()
    ):
        return None
    # correctly rounded (or exact) in IEEE arithmetic: any implementation is NumPy's bits,
    # and inline a 0-d segment in a loop body is statements, not a buffered kernel call.
    # 0-d only: over arrays NumPy's SIMD loop is faster (a row-fused layer norm's sqrt
    # inline ran 3x slower: W10 0.15x -> 0.64x NumPy time, measured)
    name = _EXACT_FLOAT[node.op]

    def exact_call(o: list[str], b: InlineContext) -> str:
        return f"np.{name}({o[0]})"

    return Lowering(list(loop.ins), loop.out, inline=exact_call)


def _lower_numpy_loop_call(loop: _UfuncLoop) -> Lowering | None:
    """A call of NumPy's own loop (a float function on the CPU), or Unsupported where NumPy
    has no such loop."""
    op = loop.node.op
    if not (loop.kind == "f" and op.kernel_loop and loop.target == "cpu"):
        return None
    dtypes = tuple(loop.ins) + (loop.out,)
    ufunc = cast("np.ufunc", op.ufunc)  # (an op with a kernel loop is a ufunc's)
    if find_loop(ufunc, dtypes) is None:
        raise Unsupported(f"no NumPy loop for {op.value} {dtypes}")
    return Lowering(list(loop.ins), loop.out, call=(ufunc, dtypes))


def _lower_device_math(loop: _UfuncLoop) -> Lowering | None:
    """The CUDA target's device math for a float function (:data:`.inline_templates.CUDA_MATH`)."""
    op = loop.node.op
    if not (loop.kind == "f" and op.kernel_loop and loop.target != "cpu" and op in CUDA_MATH):
        return None
    name = CUDA_MATH[op]

    def device_call(o: list[str], b: InlineContext) -> str:
        return b.device_math(name, o[0])

    return Lowering(list(loop.ins), loop.out, inline=device_call)


#: How a ufunc node may be computed, in order of preference: the first rule that answers
#: (not None) decides.
_UFUNC_RULES: tuple[Callable[[_UfuncLoop], Lowering | None], ...] = (
    _lower_power_fast,
    _lower_fast_math,
    _lower_inline,
    _lower_exact_float,
    _lower_numpy_loop_call,
    _lower_device_math,
)


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
_POWER_FAST: dict[float, InlineTemplate] = {
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


def _power_fast_path(exponent: Any, dtype: np.dtype) -> InlineTemplate | None:
    try:
        e = float(exponent)
    except (TypeError, ValueError):
        return None
    if e not in _POWER_FAST or not _power_matches(e, np.dtype(dtype)):
        return None
    return _POWER_FAST[e]


def kernel_form(op: OpKind, target: str = "cpu") -> bool:
    """Does a fused kernel for ``target`` compute ``op``, for some operand dtypes?

    The op-level half of :func:`lower` and :func:`can_compile`, which then decide per node
    (dtypes, literal operands, whether NumPy has the loop). ``tools/op_coverage.py`` prints it
    per op, with :data:`KERNEL_FALLBACK_REASONS` for the others."""
    if op in FUSIBLE_REDUCTIONS or op in NON_UFUNC_LOWERINGS:
        return True
    if op.ufunc is None:
        return False
    if op.kernel_loop and (target == "cpu" or op in CUDA_MATH):
        return True  # NumPy's own loop on the CPU, libdevice on the device
    # an inline template, for a loop NumPy has (signbit's integer template is never reached:
    # NumPy computes the signbit of an integer with its float loop)
    loop_kinds = {np.dtype(t[0]).kind for t in op.ufunc.types if t[0] != "O"}
    return any(set(kinds) & loop_kinds for kinds, _ in INLINE.get(op, ()))


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


@functools.cache
def cuda_fallback_reasons() -> FallbackReasons:
    """The same for CUDA kernels: the CPU reasons, and the float functions for which the device
    has no bitwise form (a CPU kernel calls NumPy's own loop; the device cannot). Computed when
    first asked: :func:`kernel_form` reads the kernel tables, which ``kernel_ext.ops`` fills
    after this module is imported."""
    return {
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
    from ...passes.fusion import default_can_fuse

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
