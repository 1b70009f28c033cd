"""Op kinds of the graph IR: one Enum member per operation, with every per-op fact.

This is the op table. Each member is declared once, with its group and the facts the other
layers read (tinygrad's ``GroupOp`` sets and JAX's per-primitive rules are the models): which
Python operator and ndarray dunder apply it, how a fused kernel computes its float loop, what
it costs per element, how a reduction accumulates, whether its result is always a fresh array.
Passes and backends ask ``op.group`` (is it ELEMENTWISE? STATEFUL?) and these attributes; they
keep no op lists of their own. The shape/dtype rules (``ABSTRACT_EVAL``) live in
:mod:`kernel_ext.ir.abstract` and the reference semantics (``LOWER``) in
:mod:`kernel_ext.ir.interpreter`; both are generic for ufuncs and reductions, so an elementwise
ufunc op is one line here. ``docs/ARCHITECTURE.md`` ("Adding an op") has the recipe.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import numpy as np

from .params import (
    AxesParams,
    AxisParams,
    BincountParams,
    CallParams,
    CheckParams,
    CholeskyParams,
    CondParams,
    ConstantParams,
    ConvolveParams,
    CopyParams,
    DiagflatParams,
    DigitizeParams,
    DtypeParams,
    EighParams,
    EinsumParams,
    FftParams,
    GetOutputParams,
    HistogramParams,
    IndexParams,
    InsertParams,
    IsinParams,
    JoinParams,
    LexsortParams,
    LstsqParams,
    MomentParams,
    NoParams,
    PackbitsParams,
    PadParams,
    Params,
    PartitionParams,
    PinvParams,
    PlaceholderParams,
    PrintParams,
    QrParams,
    QuantileParams,
    RavelMultiIndexParams,
    ReduceParams,
    ScanParams,
    SearchsortedParams,
    ShapeParams,
    SortParams,
    SvdParams,
    TensorArrayWriteParams,
    TrimZerosParams,
    UfuncAtParams,
    UfuncMethodParams,
    UfuncParams,
    UniqueParams,
    UnpackbitsParams,
    UnravelIndexParams,
    VariableParams,
    WhileParams,
)


class OpGroup(enum.Enum):
    """Coarse families of ops; passes and backends dispatch on these."""

    SOURCE = "source"  # placeholders and constants: no inputs
    ELEMENTWISE = "elementwise"  # ufuncs, where, cast, clip: broadcasting, fusible
    REDUCTION = "reduction"  # sum/mean/max/...: drop axes
    SCAN = "scan"  # cumsum/cumprod
    SHAPE = "shape"  # reshape/transpose/concatenate/...: data movement only
    INDEXING = "indexing"  # getitem/setitem, static or with traced indices
    LINALG = "linalg"  # matmul/dot/inv/...
    SORTING = "sorting"  # sort/argsort
    STATEFUL = "stateful"  # variable reads/writes, print: never pruned or reordered
    CONTROL_FLOW = "control_flow"  # cond/while (AutoGraph)
    STRUCTURAL = "structural"  # tuple projection of multi-output ops
    CREATION = "creation"  # arange: new arrays from scalars
    OPAQUE = "opaque"  # numpy_call: a NumPy function run as it is, at each call

    __hash__ = object.__hash__  # identity: see OpKind


class Compute(enum.Enum):
    """What one element of an elementwise op costs, for the backends' cost model."""

    CHEAP = "cheap"  # one or two instructions, vectorised (add, compare, where, ...)
    DIVISION = "division"  # latency-bound division or reciprocal
    INT_HELPER = "int_helper"  # on integers: branchy scalar code (floor division, shifts, ...)

    __hash__ = object.__hash__


_G = OpGroup
CHEAP, DIVISION, INT_HELPER = Compute.CHEAP, Compute.DIVISION, Compute.INT_HELPER


def _op(
    name: str,
    group: OpGroup,
    *,
    operator: str | None = None,
    dunder: str | None = None,
    kernel_loop: bool = False,
    loop_ns: float | None = None,
    compute: Compute = CHEAP,
    accumulator: np.ufunc | None = None,
    fresh: bool = False,
    params: type[Params] | None = None,
) -> tuple[Any, ...]:
    """One op's entry: its name and group, then its facts (each documented on ``OpKind``)."""
    return (
        name,
        group,
        operator,
        dunder,
        kernel_loop,
        loop_ns,
        compute,
        accumulator,
        fresh,
        params,
    )


class OpKind(enum.Enum):
    """Every operation a graph can hold, with its facts.

    The value is the op's stable lowercase name (used by the printer and GraphDef); for ufunc,
    reduction and most other ops it is also the name of the NumPy function (``numpy_function``).
    Facts, declared with ``_op``:

    * ``group`` — the family (:class:`OpGroup`); ``ufunc`` — the NumPy ufunc of an elementwise
      op named after one (derived).
    * ``operator`` — the Python operator that applies exactly this op to ndarrays and NumPy
      scalars (same ufunc, NEP 50 included), so generated code may write ``a + b``. Not ``**``:
      ``ndarray.__pow__`` special-cases exponents such as 2 and changes bool results' dtype.
    * ``dunder`` — the operator protocol name a traced tensor implements with this op
      (``__add__``/``__radd__``/``__iadd__`` for ``"add"``; comparisons have no reflected or
      in-place forms, see :data:`COMPARISONS`).
    * ``kernel_loop`` — a fused kernel computes the float loop by calling NumPy's own inner loop
      (CPU; device math on CUDA), so results stay bitwise NumPy's; otherwise it is written
      inline where the kernel generator has a template. ``loop_ns`` — that loop's cost per
      element (ns, measured; None: the backends' default). ``compute`` — the cost class of the
      inline form.
    * ``accumulator`` — for a fusible reduction, the ufunc that folds a value (or a partial
      result) into the accumulator; ``None`` for reductions that do not fuse (std, var, argmax).
    * ``fresh`` — a SHAPE/INDEXING op whose result is always a newly allocated array (never a
      view of an input), such as ``copy`` and ``concatenate``.
    * ``params_class`` — the frozen dataclass of the op's parameters
      (:mod:`kernel_ext.ir.params`; ``params=`` in its entry): a ufunc's ``UfuncParams`` and
      ``NoParams`` are the defaults.
    """

    # --- sources -------------------------------------------------------------------------
    PLACEHOLDER = _op("placeholder", _G.SOURCE, params=PlaceholderParams)
    CONSTANT = _op("constant", _G.SOURCE, params=ConstantParams)

    # --- elementwise: unary ufuncs --------------------------------------------------------
    NEGATIVE = _op("negative", _G.ELEMENTWISE, operator="-", dunder="neg")
    POSITIVE = _op("positive", _G.ELEMENTWISE, dunder="pos")
    ABSOLUTE = _op("absolute", _G.ELEMENTWISE, dunder="abs")
    FABS = _op("fabs", _G.ELEMENTWISE)
    SIGN = _op("sign", _G.ELEMENTWISE)
    SQRT = _op("sqrt", _G.ELEMENTWISE, kernel_loop=True, loop_ns=0.3)
    CBRT = _op("cbrt", _G.ELEMENTWISE, kernel_loop=True)
    SQUARE = _op("square", _G.ELEMENTWISE)
    RECIPROCAL = _op("reciprocal", _G.ELEMENTWISE, compute=DIVISION)
    EXP = _op("exp", _G.ELEMENTWISE, kernel_loop=True, loop_ns=1.0)
    EXP2 = _op("exp2", _G.ELEMENTWISE, kernel_loop=True)
    EXPM1 = _op("expm1", _G.ELEMENTWISE, kernel_loop=True)
    LOG = _op("log", _G.ELEMENTWISE, kernel_loop=True, loop_ns=1.0)
    LOG2 = _op("log2", _G.ELEMENTWISE, kernel_loop=True)
    LOG10 = _op("log10", _G.ELEMENTWISE, kernel_loop=True)
    LOG1P = _op("log1p", _G.ELEMENTWISE, kernel_loop=True)
    SIN = _op("sin", _G.ELEMENTWISE, kernel_loop=True)
    COS = _op("cos", _G.ELEMENTWISE, kernel_loop=True)
    TAN = _op("tan", _G.ELEMENTWISE, kernel_loop=True)
    ARCSIN = _op("arcsin", _G.ELEMENTWISE, kernel_loop=True)
    ARCCOS = _op("arccos", _G.ELEMENTWISE, kernel_loop=True)
    ARCTAN = _op("arctan", _G.ELEMENTWISE, kernel_loop=True)
    SINH = _op("sinh", _G.ELEMENTWISE, kernel_loop=True)
    COSH = _op("cosh", _G.ELEMENTWISE, kernel_loop=True)
    TANH = _op("tanh", _G.ELEMENTWISE, kernel_loop=True, loop_ns=1.0)
    ARCSINH = _op("arcsinh", _G.ELEMENTWISE, kernel_loop=True)
    ARCCOSH = _op("arccosh", _G.ELEMENTWISE, kernel_loop=True)
    ARCTANH = _op("arctanh", _G.ELEMENTWISE, kernel_loop=True)
    DEG2RAD = _op("deg2rad", _G.ELEMENTWISE, kernel_loop=True)
    RAD2DEG = _op("rad2deg", _G.ELEMENTWISE, kernel_loop=True)
    FLOOR = _op("floor", _G.ELEMENTWISE, kernel_loop=True, loop_ns=0.15)
    CEIL = _op("ceil", _G.ELEMENTWISE, kernel_loop=True, loop_ns=0.15)
    TRUNC = _op("trunc", _G.ELEMENTWISE, kernel_loop=True, loop_ns=0.15)
    RINT = _op("rint", _G.ELEMENTWISE, kernel_loop=True, loop_ns=0.15)
    ISNAN = _op("isnan", _G.ELEMENTWISE)
    ISINF = _op("isinf", _G.ELEMENTWISE)
    ISFINITE = _op("isfinite", _G.ELEMENTWISE)
    SIGNBIT = _op("signbit", _G.ELEMENTWISE, kernel_loop=True)
    LOGICAL_NOT = _op("logical_not", _G.ELEMENTWISE)
    INVERT = _op("invert", _G.ELEMENTWISE, operator="~", dunder="invert")
    CONJUGATE = _op("conjugate", _G.ELEMENTWISE)

    # --- elementwise: binary ufuncs -------------------------------------------------------
    ADD = _op("add", _G.ELEMENTWISE, operator="+", dunder="add")
    SUBTRACT = _op("subtract", _G.ELEMENTWISE, operator="-", dunder="sub")
    MULTIPLY = _op("multiply", _G.ELEMENTWISE, operator="*", dunder="mul")
    DIVIDE = _op("divide", _G.ELEMENTWISE, operator="/", dunder="truediv", compute=DIVISION)
    FLOOR_DIVIDE = _op(
        "floor_divide",
        _G.ELEMENTWISE,
        operator="//",
        dunder="floordiv",
        kernel_loop=True,
        compute=INT_HELPER,
    )
    REMAINDER = _op(
        "remainder",
        _G.ELEMENTWISE,
        operator="%",
        dunder="mod",
        kernel_loop=True,
        compute=INT_HELPER,
    )
    FMOD = _op("fmod", _G.ELEMENTWISE, kernel_loop=True, compute=INT_HELPER)
    POWER = _op(
        "power", _G.ELEMENTWISE, dunder="pow", kernel_loop=True, loop_ns=20.0, compute=INT_HELPER
    )
    FLOAT_POWER = _op("float_power", _G.ELEMENTWISE, kernel_loop=True, loop_ns=20.0)
    MAXIMUM = _op("maximum", _G.ELEMENTWISE)
    MINIMUM = _op("minimum", _G.ELEMENTWISE)
    FMAX = _op("fmax", _G.ELEMENTWISE)
    FMIN = _op("fmin", _G.ELEMENTWISE)
    ARCTAN2 = _op("arctan2", _G.ELEMENTWISE, kernel_loop=True)
    HYPOT = _op("hypot", _G.ELEMENTWISE, kernel_loop=True)
    COPYSIGN = _op("copysign", _G.ELEMENTWISE, kernel_loop=True)
    LOGADDEXP = _op("logaddexp", _G.ELEMENTWISE, kernel_loop=True)
    LOGADDEXP2 = _op("logaddexp2", _G.ELEMENTWISE, kernel_loop=True)
    HEAVISIDE = _op("heaviside", _G.ELEMENTWISE)
    EQUAL = _op("equal", _G.ELEMENTWISE, operator="==", dunder="eq")
    NOT_EQUAL = _op("not_equal", _G.ELEMENTWISE, operator="!=", dunder="ne")
    LESS = _op("less", _G.ELEMENTWISE, operator="<", dunder="lt")
    LESS_EQUAL = _op("less_equal", _G.ELEMENTWISE, operator="<=", dunder="le")
    GREATER = _op("greater", _G.ELEMENTWISE, operator=">", dunder="gt")
    GREATER_EQUAL = _op("greater_equal", _G.ELEMENTWISE, operator=">=", dunder="ge")
    LOGICAL_AND = _op("logical_and", _G.ELEMENTWISE)
    LOGICAL_OR = _op("logical_or", _G.ELEMENTWISE)
    LOGICAL_XOR = _op("logical_xor", _G.ELEMENTWISE)
    BITWISE_AND = _op("bitwise_and", _G.ELEMENTWISE, operator="&", dunder="and")
    BITWISE_OR = _op("bitwise_or", _G.ELEMENTWISE, operator="|", dunder="or")
    BITWISE_XOR = _op("bitwise_xor", _G.ELEMENTWISE, operator="^", dunder="xor")
    LEFT_SHIFT = _op(
        "left_shift", _G.ELEMENTWISE, operator="<<", dunder="lshift", compute=INT_HELPER
    )
    RIGHT_SHIFT = _op(
        "right_shift", _G.ELEMENTWISE, operator=">>", dunder="rshift", compute=INT_HELPER
    )
    GCD = _op("gcd", _G.ELEMENTWISE)
    LCM = _op("lcm", _G.ELEMENTWISE)

    # --- elementwise: non-ufunc -----------------------------------------------------------
    WHERE = _op("where", _G.ELEMENTWISE)
    CAST = _op("cast", _G.ELEMENTWISE, params=DtypeParams)
    CLIP = _op("clip", _G.ELEMENTWISE)

    # --- reductions -----------------------------------------------------------------------
    SUM = _op("sum", _G.REDUCTION, accumulator=np.add, params=ReduceParams)
    PROD = _op("prod", _G.REDUCTION, accumulator=np.multiply, params=ReduceParams)
    MEAN = _op("mean", _G.REDUCTION, accumulator=np.add, params=ReduceParams)
    MAX = _op("max", _G.REDUCTION, accumulator=np.maximum, params=ReduceParams)
    MIN = _op("min", _G.REDUCTION, accumulator=np.minimum, params=ReduceParams)
    ANY = _op("any", _G.REDUCTION, accumulator=np.logical_or, params=ReduceParams)
    ALL = _op("all", _G.REDUCTION, accumulator=np.logical_and, params=ReduceParams)
    STD = _op("std", _G.REDUCTION, params=MomentParams)
    VAR = _op("var", _G.REDUCTION, params=MomentParams)
    ARGMAX = _op("argmax", _G.REDUCTION, params=ReduceParams)
    ARGMIN = _op("argmin", _G.REDUCTION, params=ReduceParams)

    # --- scans ----------------------------------------------------------------------------
    CUMSUM = _op("cumsum", _G.SCAN, params=ScanParams)
    CUMPROD = _op("cumprod", _G.SCAN, params=ScanParams)

    # --- shape ----------------------------------------------------------------------------
    RESHAPE = _op("reshape", _G.SHAPE, params=ShapeParams)
    TRANSPOSE = _op("transpose", _G.SHAPE, params=AxesParams)
    EXPAND_DIMS = _op("expand_dims", _G.SHAPE, params=AxisParams)
    SQUEEZE = _op("squeeze", _G.SHAPE, params=AxisParams)
    BROADCAST_TO = _op("broadcast_to", _G.SHAPE, params=ShapeParams)
    CONCATENATE = _op("concatenate", _G.SHAPE, fresh=True, params=JoinParams)
    STACK = _op("stack", _G.SHAPE, fresh=True, params=JoinParams)
    FLIP = _op("flip", _G.SHAPE, params=AxisParams)
    COPY = _op("copy", _G.SHAPE, fresh=True, params=CopyParams)
    # the run-time size of one dimension, as an int64 scalar
    DIM = _op("dim", _G.SHAPE, fresh=True, params=AxisParams)

    # --- creation -------------------------------------------------------------------------
    ARANGE = _op("arange", _G.CREATION, params=DtypeParams)

    # --- indexing -------------------------------------------------------------------------
    GETITEM = _op("getitem", _G.INDEXING, params=IndexParams)
    SETITEM = _op("setitem", _G.INDEXING, fresh=True, params=IndexParams)
    TENSOR_ARRAY_WRITE = _op(
        "tensor_array_write", _G.INDEXING, fresh=True, params=TensorArrayWriteParams
    )

    # --- linear algebra -------------------------------------------------------------------
    MATMUL = _op("matmul", _G.LINALG, operator="@", dunder="matmul")
    DOT = _op("dot", _G.LINALG)
    OUTER = _op("outer", _G.LINALG)
    INV = _op("inv", _G.LINALG)
    DET = _op("det", _G.LINALG)
    SOLVE = _op("solve", _G.LINALG)

    # --- sorting --------------------------------------------------------------------------
    SORT = _op("sort", _G.SORTING, params=SortParams)
    ARGSORT = _op("argsort", _G.SORTING, params=SortParams)

    # --- stateful -------------------------------------------------------------------------
    READ_VARIABLE = _op("read_variable", _G.STATEFUL, params=VariableParams)
    ASSIGN_VARIABLE = _op("assign_variable", _G.STATEFUL, params=VariableParams)
    ASSIGN_ADD_VARIABLE = _op("assign_add_variable", _G.STATEFUL, params=VariableParams)
    ASSIGN_SUB_VARIABLE = _op("assign_sub_variable", _G.STATEFUL, params=VariableParams)
    PRINT = _op("print", _G.STATEFUL, params=PrintParams)
    # a draw from np.random or a Generator, made at run time in program order (ir/calls.py)
    RANDOM_CALL = _op("random_call", _G.STATEFUL, params=CallParams)
    # a run-time check: raises the exception in ``attrs["error"]`` when its first input is
    # true (``if bad: raise ValueError(...)`` on a traced condition; ``assert``), its message
    # formatted from the other inputs at run time (ops.structure.state.check_error)
    CHECK = _op("check", _G.STATEFUL, params=CheckParams)

    # --- opaque: a NumPy function without an op of its own (ir/calls.py) ------------------
    NUMPY_CALL = _op("numpy_call", _G.OPAQUE, params=CallParams)

    # -- named NumPy functions and data-dependent shapes -----------------------------------
    # Each runs NumPy's own function (LOWER), so values, dtypes and shapes are NumPy's. Ops
    # whose result length depends on the data give a ``None`` dimension (as a boolean mask
    # does); several results (svd, slogdet, nonzero, unique's return_*, histogram) are one
    # node with a tuple of abstract values, read through ``get_output``.
    PAD = _op("pad", _G.SHAPE, fresh=True, params=PadParams)
    DIAGFLAT = _op("diagflat", _G.SHAPE, fresh=True, params=DiagflatParams)
    INSERT = _op("insert", _G.SHAPE, fresh=True, params=InsertParams)
    BINCOUNT = _op("bincount", _G.INDEXING, fresh=True, params=BincountParams)
    NONZERO = _op("nonzero", _G.INDEXING, fresh=True)
    ARGWHERE = _op("argwhere", _G.INDEXING, fresh=True)
    COMPRESS = _op("compress", _G.INDEXING, fresh=True, params=AxisParams)
    # NumPy returns a slice: a view of its input
    TRIM_ZEROS = _op("trim_zeros", _G.INDEXING, params=TrimZerosParams)
    UNIQUE = _op("unique", _G.SORTING, params=UniqueParams)
    ARGPARTITION = _op("argpartition", _G.SORTING, params=PartitionParams)
    HISTOGRAM = _op("histogram", _G.SORTING, params=HistogramParams)
    INTERP = _op("interp", _G.SORTING)
    # NumPy may return a view; LOWER hands out a copy then
    EINSUM = _op("einsum", _G.LINALG, params=EinsumParams)
    VDOT = _op("vdot", _G.LINALG)
    CORRELATE = _op("correlate", _G.LINALG, params=ConvolveParams)
    CONVOLVE = _op("convolve", _G.LINALG, params=ConvolveParams)
    SVD = _op("svd", _G.LINALG, params=SvdParams)
    SLOGDET = _op("slogdet", _G.LINALG)

    # --- control flow (sub-graphs in attrs) ---------------------------------------------
    COND = _op("cond", _G.CONTROL_FLOW, params=CondParams)
    WHILE = _op("while", _G.CONTROL_FLOW, params=WhileParams)
    GET_OUTPUT = _op("get_output", _G.STRUCTURAL, params=GetOutputParams)

    # -- ufunc methods and the nan family ---------------------------------------------------
    # Elementwise ufuncs: each is traced through ``__array_ufunc__`` (UFUNC_OPS) with the
    # generic rules. Multi-output ufuncs (frexp, modf, divmod) yield a tuple read through
    # ``get_output`` (MULTI_OUTPUT_OPS); they do not fuse. ldexp's loops mix float and int
    # operands, which the kernel generator does not call, so it runs through NumPy.
    NEXTAFTER = _op("nextafter", _G.ELEMENTWISE, kernel_loop=True)
    SPACING = _op("spacing", _G.ELEMENTWISE, kernel_loop=True)
    LDEXP = _op("ldexp", _G.ELEMENTWISE)
    FREXP = _op("frexp", _G.ELEMENTWISE)
    MODF = _op("modf", _G.ELEMENTWISE)
    DIVMOD = _op("divmod", _G.ELEMENTWISE)
    DEGREES = _op("degrees", _G.ELEMENTWISE, kernel_loop=True)
    RADIANS = _op("radians", _G.ELEMENTWISE, kernel_loop=True)
    BITWISE_COUNT = _op("bitwise_count", _G.ELEMENTWISE)
    # NaN-ignoring reductions and order statistics: NumPy functions, not ndarray methods
    # (NDARRAY_METHODS), run by NumPy itself in every executor (no accumulator: no fusion).
    NANSUM = _op("nansum", _G.REDUCTION, params=ReduceParams)
    NANPROD = _op("nanprod", _G.REDUCTION, params=ReduceParams)
    NANMEAN = _op("nanmean", _G.REDUCTION, params=ReduceParams)
    NANMAX = _op("nanmax", _G.REDUCTION, params=ReduceParams)
    NANMIN = _op("nanmin", _G.REDUCTION, params=ReduceParams)
    NANSTD = _op("nanstd", _G.REDUCTION, params=MomentParams)
    NANVAR = _op("nanvar", _G.REDUCTION, params=MomentParams)
    NANARGMAX = _op("nanargmax", _G.REDUCTION, params=ReduceParams)
    NANARGMIN = _op("nanargmin", _G.REDUCTION, params=ReduceParams)
    MEDIAN = _op("median", _G.REDUCTION, params=ReduceParams)
    NANMEDIAN = _op("nanmedian", _G.REDUCTION, params=ReduceParams)
    # q (static) leads the result's shape: attrs ``q``, ``method``
    PERCENTILE = _op("percentile", _G.REDUCTION, params=QuantileParams)
    NANPERCENTILE = _op("nanpercentile", _G.REDUCTION, params=QuantileParams)
    QUANTILE = _op("quantile", _G.REDUCTION, params=QuantileParams)
    NANQUANTILE = _op("nanquantile", _G.REDUCTION, params=QuantileParams)
    NANCUMSUM = _op("nancumsum", _G.SCAN, params=ScanParams)
    NANCUMPROD = _op("nancumprod", _G.SCAN, params=ScanParams)
    # Methods of any ufunc, named by ``attrs["ufunc"]`` (``np.subtract.reduce``): reduce and
    # reduceat drop or regroup an axis, accumulate scans one; ``at`` is the scatter update
    # (``np.add.at(a, idx, b)``) as a pure op returning the updated copy, which the tracer
    # makes ``a``'s new value (functionalization). ``ufunc.outer`` needs no op: it is the
    # ufunc itself on ``a`` reshaped to ``a.shape + (1,) * b.ndim`` (so it fuses).
    UFUNC_REDUCE = _op("ufunc_reduce", _G.REDUCTION, params=UfuncMethodParams)
    UFUNC_REDUCEAT = _op("ufunc_reduceat", _G.REDUCTION, params=UfuncMethodParams)
    UFUNC_ACCUMULATE = _op("ufunc_accumulate", _G.SCAN, params=UfuncMethodParams)
    UFUNC_AT = _op("ufunc_at", _G.INDEXING, fresh=True, params=UfuncAtParams)

    # -- linalg, fft and array helpers -------------------------------------------------------
    # Each runs NumPy's own function on the static attrs (LOWER), so values are NumPy's bit
    # for bit; the many helpers that NumPy itself composes of other functions (tile, kron,
    # cov, norm, tensordot, ...) need no op: their trace handlers compose these and the ops
    # above. ``real``/``imag`` of a complex array are views, as in NumPy.
    REAL = _op("real", _G.SHAPE)
    IMAG = _op("imag", _G.SHAPE)
    SEARCHSORTED = _op("searchsorted", _G.SORTING, params=SearchsortedParams)
    DIGITIZE = _op("digitize", _G.SORTING, params=DigitizeParams)
    PARTITION = _op("partition", _G.SORTING, params=PartitionParams)
    LEXSORT = _op("lexsort", _G.SORTING, params=LexsortParams)
    ISIN = _op("isin", _G.SORTING, params=IsinParams)
    RAVEL_MULTI_INDEX = _op(
        "ravel_multi_index", _G.INDEXING, fresh=True, params=RavelMultiIndexParams
    )
    UNRAVEL_INDEX = _op("unravel_index", _G.INDEXING, fresh=True, params=UnravelIndexParams)
    PACKBITS = _op("packbits", _G.SHAPE, fresh=True, params=PackbitsParams)
    UNPACKBITS = _op("unpackbits", _G.SHAPE, fresh=True, params=UnpackbitsParams)
    CHOLESKY = _op("cholesky", _G.LINALG, params=CholeskyParams)
    QR = _op("qr", _G.LINALG, params=QrParams)
    EIGH = _op("eigh", _G.LINALG, params=EighParams)
    EIGVALSH = _op("eigvalsh", _G.LINALG, params=EighParams)
    LSTSQ = _op("lstsq", _G.LINALG, params=LstsqParams)
    PINV = _op("pinv", _G.LINALG, params=PinvParams)
    # the gufuncs np.vecdot/np.matvec/np.vecmat (one loop over the core dimensions)
    VECDOT = _op("vecdot", _G.LINALG)
    MATVEC = _op("matvec", _G.LINALG)
    VECMAT = _op("vecmat", _G.LINALG)
    # every np.fft transform, named by ``attrs["transform"]`` (``"rfftn"``), as JAX's one
    # ``fft`` primitive with its ``fft_type``; ``n``/``s``, ``axis``/``axes``, ``norm`` static
    FFT = _op("fft", _G.LINALG, params=FftParams)

    def __new__(
        cls,
        name: str,
        group: OpGroup,
        operator: str | None,
        dunder: str | None,
        kernel_loop: bool,
        loop_ns: float | None,
        compute: Compute,
        accumulator: np.ufunc | None,
        fresh: bool,
        params: type[Params] | None,
    ) -> OpKind:
        obj = object.__new__(cls)
        obj._value_ = name
        obj.group = group
        obj.operator = operator
        obj.dunder = dunder
        obj.kernel_loop = kernel_loop
        obj.loop_ns = loop_ns
        obj.compute = compute
        obj.accumulator = accumulator
        obj.fresh = fresh
        # (None: a ufunc's or no parameters, known once the ufuncs are looked up below)
        obj.params_class = params  # type: ignore[assignment]
        return obj

    group: OpGroup
    operator: str | None
    dunder: str | None
    kernel_loop: bool
    loop_ns: float | None
    compute: Compute
    accumulator: np.ufunc | None
    fresh: bool
    params_class: type[Params]

    # Members are singletons compared by identity, so the identity hash (a C slot) is
    # equivalent to Enum's Python-level ``hash(self._name_)``, and rule tables keyed by op
    # (looked up for every traced op and in every pass) stay cheap.
    __hash__ = object.__hash__

    @property
    def ufunc(self) -> np.ufunc | None:
        """The NumPy ufunc this elementwise op applies, or ``None``."""
        return _UFUNC_OF.get(self)

    @property
    def numpy_function(self) -> Any:
        """The NumPy function of the same name (``np.sum`` for SUM), or ``None``."""
        return getattr(np, self.value, None)

    @property
    def is_stateful(self) -> bool:
        return self.group is OpGroup.STATEFUL

    @property
    def may_alias(self) -> bool:
        """May the result share memory with an input, or with storage the graph does not own
        (an argument, a constant, a variable, a value passed through a branch or loop)?"""
        return self in ALIASING_OPS

    @property
    def passes_through(self) -> bool:
        """May the result be (a view of) one of the op's inputs?"""
        return self in PASS_THROUGH_OPS

    @property
    def type_name(self) -> str:
        """CamelCase name used in GraphDef text (``MatMul``-style, as TensorFlow users expect)."""
        name: str = _TYPE_NAMES.get(self.value) or "".join(
            part.capitalize() for part in self.value.split("_")
        )
        return name

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return f"OpKind.{self.name}"


_TYPE_NAMES: dict[str, str] = {
    "matmul": "MatMul",
    "cond": "If",
    "while": "While",
    "read_variable": "ReadVariableOp",
    "assign_variable": "AssignVariableOp",
    "constant": "Const",
    "numpy_call": "NumpyCall",
    "random_call": "RandomCall",
    "check": "Assert",
}

# Elementwise members whose name is a NumPy ufunc map onto it; aliases (np.abs, np.mod,
# np.true_divide, np.conj) are the same objects, so one dict serves both directions.
_UFUNC_OF: dict[OpKind, np.ufunc] = {}
UFUNC_OPS: dict[Any, OpKind] = {}
for _kind in OpKind:
    _uf = getattr(np, _kind.value, None) if _kind.group is OpGroup.ELEMENTWISE else None
    if isinstance(_uf, np.ufunc):
        _UFUNC_OF[_kind] = _uf
        UFUNC_OPS[_uf] = _kind
    if _kind.params_class is None:
        _kind.params_class = UfuncParams if _kind in _UFUNC_OF else NoParams
del _kind, _uf

#: The parameter class of every op (its ``params_class``).
PARAMS_OF: dict[OpKind, type[Params]] = {k: k.params_class for k in OpKind}

#: Reductions a fused kernel may end in (std/var need two passes, arg-reductions an index).
FUSIBLE_REDUCTIONS = frozenset(k for k in OpKind if k.accumulator is not None)

#: ``ufunc.reduce`` on these ufuncs is the matching reduction op (MEAN accumulates with add,
#: but ``np.add.reduce`` is a SUM).
UFUNC_REDUCTIONS: dict[np.ufunc, OpKind] = {
    k.accumulator: k
    for k in FUSIBLE_REDUCTIONS
    if k is not OpKind.MEAN and k.accumulator is not None
}  # (every fusible one has one)

#: Ops that run a Python callable as it is (``attrs["fn"]``) and may yield several values (a
#: tuple aval read through ``get_output``): the views mark them "runs NumPy at each call".
OPAQUE_CALLS = frozenset({OpKind.NUMPY_CALL, OpKind.RANDOM_CALL})

# -- ufunc methods and the nan family ------------------------------------------------------
#: Reductions and scans that are ndarray methods of their name (``x.sum()``): traced values
#: and variables have them, and the NumPy executor calls them as methods. The others
#: (``nansum``, ``median``, ``ufunc_reduce``) are NumPy functions only.
NDARRAY_METHODS = frozenset(
    k
    for k in OpKind
    if k.group in (OpGroup.REDUCTION, OpGroup.SCAN) and hasattr(np.ndarray, k.value)
)

#: Ops that yield a tuple of values read through ``get_output`` (besides control flow).
MULTI_OUTPUT_OPS = OPAQUE_CALLS | frozenset(k for k, uf in _UFUNC_OF.items() if uf.nout > 1)

#: Elementwise comparisons: boolean results, no reflected or in-place operator forms.
COMPARISONS = frozenset(
    {
        OpKind.EQUAL,
        OpKind.NOT_EQUAL,
        OpKind.LESS,
        OpKind.LESS_EQUAL,
        OpKind.GREATER,
        OpKind.GREATER_EQUAL,
    }
)

# Groups whose members may return a view of an input (or pass one through): their results may
# alias, unless the member is ``fresh``. Sources and variable reads alias storage the graph
# does not own. An opaque NumPy call may return a view of its input (np.split, np.diagonal).
_PASS_THROUGH_GROUPS = (
    OpGroup.SHAPE,
    OpGroup.INDEXING,
    OpGroup.STRUCTURAL,
    OpGroup.CONTROL_FLOW,
    OpGroup.OPAQUE,
)
#: Ops whose result may be (a view of) one of their inputs: exposure flows through them.
PASS_THROUGH_OPS = frozenset(k for k in OpKind if k.group in _PASS_THROUGH_GROUPS and not k.fresh)
#: Ops whose result may share memory with an input or with storage the graph does not own.
ALIASING_OPS = PASS_THROUGH_OPS | frozenset(
    k for k in OpKind if k.group in (OpGroup.SOURCE, OpGroup.STATEFUL)
)
#: Ops that were views already (not pass-through structure): keeping one beats copying it.
VIEW_OPS = frozenset(k for k in PASS_THROUGH_OPS if k.group in (OpGroup.SHAPE, OpGroup.INDEXING))

#: Why an executor has no form of its own for an op (it then runs NumPy's function for it, or
#: refuses): keyed by the op, or by its group for a whole family. Every executor keeps one,
#: beside its op table; ``tools/op_coverage.py`` prints them and a test keeps them complete.
FallbackReasons = Mapping["OpKind | OpGroup", str]


def fallback_reason(reasons: FallbackReasons, op: OpKind) -> str | None:
    """The reason ``reasons`` gives for ``op``: its own entry, else its group's."""
    return reasons.get(op, reasons.get(op.group))
