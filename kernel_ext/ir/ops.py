"""Op kinds of the graph IR: one Enum member per operation, each tagged with its group.

Groups drive generic behaviour without string matching: passes ask ``op.group`` (is it
ELEMENTWISE? STATEFUL?), backends ask ``op.ufunc`` for the NumPy ufunc an elementwise op maps
to. The per-op shape/dtype rules live in :mod:`kernel_ext.ir.abstract`, the runtime semantics in
:mod:`kernel_ext.ir.interpreter`.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np


class OpGroup(enum.Enum):
    """Coarse families of ops; passes and backends dispatch on these."""

    SOURCE = "source"            # placeholders and constants: no inputs
    ELEMENTWISE = "elementwise"  # ufuncs, where, cast, clip: broadcasting, fusible
    REDUCTION = "reduction"      # sum/mean/max/...: drop axes
    SCAN = "scan"                # cumsum/cumprod
    SHAPE = "shape"              # reshape/transpose/concatenate/...: data movement only
    INDEXING = "indexing"        # getitem/setitem, static or with traced indices
    LINALG = "linalg"            # matmul/dot/inv/...
    SORTING = "sorting"          # sort/argsort
    STATEFUL = "stateful"        # variable reads/writes, print: never pruned or reordered
    CONTROL_FLOW = "control_flow"  # cond/while (AutoGraph)
    STRUCTURAL = "structural"    # tuple projection of multi-output ops
    CREATION = "creation"        # arange: new arrays from scalars

    __hash__ = object.__hash__  # identity: see OpKind


_G = OpGroup


class OpKind(enum.Enum):
    """Every operation a graph can hold.

    The value is the op's stable lowercase name (used by the printer and GraphDef). ``group``
    says which family it belongs to; elementwise ufunc ops also carry ``ufunc``.
    """

    # --- sources -------------------------------------------------------------------------
    PLACEHOLDER = ("placeholder", _G.SOURCE)
    CONSTANT = ("constant", _G.SOURCE)

    # --- elementwise: unary ufuncs --------------------------------------------------------
    NEGATIVE = ("negative", _G.ELEMENTWISE)
    POSITIVE = ("positive", _G.ELEMENTWISE)
    ABSOLUTE = ("absolute", _G.ELEMENTWISE)
    FABS = ("fabs", _G.ELEMENTWISE)
    SIGN = ("sign", _G.ELEMENTWISE)
    SQRT = ("sqrt", _G.ELEMENTWISE)
    CBRT = ("cbrt", _G.ELEMENTWISE)
    SQUARE = ("square", _G.ELEMENTWISE)
    RECIPROCAL = ("reciprocal", _G.ELEMENTWISE)
    EXP = ("exp", _G.ELEMENTWISE)
    EXP2 = ("exp2", _G.ELEMENTWISE)
    EXPM1 = ("expm1", _G.ELEMENTWISE)
    LOG = ("log", _G.ELEMENTWISE)
    LOG2 = ("log2", _G.ELEMENTWISE)
    LOG10 = ("log10", _G.ELEMENTWISE)
    LOG1P = ("log1p", _G.ELEMENTWISE)
    SIN = ("sin", _G.ELEMENTWISE)
    COS = ("cos", _G.ELEMENTWISE)
    TAN = ("tan", _G.ELEMENTWISE)
    ARCSIN = ("arcsin", _G.ELEMENTWISE)
    ARCCOS = ("arccos", _G.ELEMENTWISE)
    ARCTAN = ("arctan", _G.ELEMENTWISE)
    SINH = ("sinh", _G.ELEMENTWISE)
    COSH = ("cosh", _G.ELEMENTWISE)
    TANH = ("tanh", _G.ELEMENTWISE)
    ARCSINH = ("arcsinh", _G.ELEMENTWISE)
    ARCCOSH = ("arccosh", _G.ELEMENTWISE)
    ARCTANH = ("arctanh", _G.ELEMENTWISE)
    DEG2RAD = ("deg2rad", _G.ELEMENTWISE)
    RAD2DEG = ("rad2deg", _G.ELEMENTWISE)
    FLOOR = ("floor", _G.ELEMENTWISE)
    CEIL = ("ceil", _G.ELEMENTWISE)
    TRUNC = ("trunc", _G.ELEMENTWISE)
    RINT = ("rint", _G.ELEMENTWISE)
    ISNAN = ("isnan", _G.ELEMENTWISE)
    ISINF = ("isinf", _G.ELEMENTWISE)
    ISFINITE = ("isfinite", _G.ELEMENTWISE)
    SIGNBIT = ("signbit", _G.ELEMENTWISE)
    LOGICAL_NOT = ("logical_not", _G.ELEMENTWISE)
    INVERT = ("invert", _G.ELEMENTWISE)
    CONJUGATE = ("conjugate", _G.ELEMENTWISE)

    # --- elementwise: binary ufuncs -------------------------------------------------------
    ADD = ("add", _G.ELEMENTWISE)
    SUBTRACT = ("subtract", _G.ELEMENTWISE)
    MULTIPLY = ("multiply", _G.ELEMENTWISE)
    DIVIDE = ("divide", _G.ELEMENTWISE)
    FLOOR_DIVIDE = ("floor_divide", _G.ELEMENTWISE)
    REMAINDER = ("remainder", _G.ELEMENTWISE)
    FMOD = ("fmod", _G.ELEMENTWISE)
    POWER = ("power", _G.ELEMENTWISE)
    FLOAT_POWER = ("float_power", _G.ELEMENTWISE)
    MAXIMUM = ("maximum", _G.ELEMENTWISE)
    MINIMUM = ("minimum", _G.ELEMENTWISE)
    FMAX = ("fmax", _G.ELEMENTWISE)
    FMIN = ("fmin", _G.ELEMENTWISE)
    ARCTAN2 = ("arctan2", _G.ELEMENTWISE)
    HYPOT = ("hypot", _G.ELEMENTWISE)
    COPYSIGN = ("copysign", _G.ELEMENTWISE)
    LOGADDEXP = ("logaddexp", _G.ELEMENTWISE)
    LOGADDEXP2 = ("logaddexp2", _G.ELEMENTWISE)
    HEAVISIDE = ("heaviside", _G.ELEMENTWISE)
    EQUAL = ("equal", _G.ELEMENTWISE)
    NOT_EQUAL = ("not_equal", _G.ELEMENTWISE)
    LESS = ("less", _G.ELEMENTWISE)
    LESS_EQUAL = ("less_equal", _G.ELEMENTWISE)
    GREATER = ("greater", _G.ELEMENTWISE)
    GREATER_EQUAL = ("greater_equal", _G.ELEMENTWISE)
    LOGICAL_AND = ("logical_and", _G.ELEMENTWISE)
    LOGICAL_OR = ("logical_or", _G.ELEMENTWISE)
    LOGICAL_XOR = ("logical_xor", _G.ELEMENTWISE)
    BITWISE_AND = ("bitwise_and", _G.ELEMENTWISE)
    BITWISE_OR = ("bitwise_or", _G.ELEMENTWISE)
    BITWISE_XOR = ("bitwise_xor", _G.ELEMENTWISE)
    LEFT_SHIFT = ("left_shift", _G.ELEMENTWISE)
    RIGHT_SHIFT = ("right_shift", _G.ELEMENTWISE)
    GCD = ("gcd", _G.ELEMENTWISE)
    LCM = ("lcm", _G.ELEMENTWISE)

    # --- elementwise: non-ufunc -----------------------------------------------------------
    WHERE = ("where", _G.ELEMENTWISE)
    CAST = ("cast", _G.ELEMENTWISE)
    CLIP = ("clip", _G.ELEMENTWISE)

    # --- reductions -----------------------------------------------------------------------
    SUM = ("sum", _G.REDUCTION)
    PROD = ("prod", _G.REDUCTION)
    MEAN = ("mean", _G.REDUCTION)
    MAX = ("max", _G.REDUCTION)
    MIN = ("min", _G.REDUCTION)
    ANY = ("any", _G.REDUCTION)
    ALL = ("all", _G.REDUCTION)
    STD = ("std", _G.REDUCTION)
    VAR = ("var", _G.REDUCTION)
    ARGMAX = ("argmax", _G.REDUCTION)
    ARGMIN = ("argmin", _G.REDUCTION)

    # --- scans ----------------------------------------------------------------------------
    CUMSUM = ("cumsum", _G.SCAN)
    CUMPROD = ("cumprod", _G.SCAN)

    # --- shape ----------------------------------------------------------------------------
    RESHAPE = ("reshape", _G.SHAPE)
    TRANSPOSE = ("transpose", _G.SHAPE)
    EXPAND_DIMS = ("expand_dims", _G.SHAPE)
    SQUEEZE = ("squeeze", _G.SHAPE)
    BROADCAST_TO = ("broadcast_to", _G.SHAPE)
    CONCATENATE = ("concatenate", _G.SHAPE)
    STACK = ("stack", _G.SHAPE)
    FLIP = ("flip", _G.SHAPE)
    COPY = ("copy", _G.SHAPE)
    DIM = ("dim", _G.SHAPE)  # the run-time size of one dimension, as an int64 scalar

    # --- creation -------------------------------------------------------------------------
    ARANGE = ("arange", _G.CREATION)

    # --- indexing -------------------------------------------------------------------------
    GETITEM = ("getitem", _G.INDEXING)
    SETITEM = ("setitem", _G.INDEXING)
    TENSOR_ARRAY_WRITE = ("tensor_array_write", _G.INDEXING)

    # --- linear algebra -------------------------------------------------------------------
    MATMUL = ("matmul", _G.LINALG)
    DOT = ("dot", _G.LINALG)
    OUTER = ("outer", _G.LINALG)
    INV = ("inv", _G.LINALG)
    DET = ("det", _G.LINALG)
    SOLVE = ("solve", _G.LINALG)

    # --- sorting --------------------------------------------------------------------------
    SORT = ("sort", _G.SORTING)
    ARGSORT = ("argsort", _G.SORTING)

    # --- stateful -------------------------------------------------------------------------
    READ_VARIABLE = ("read_variable", _G.STATEFUL)
    ASSIGN_VARIABLE = ("assign_variable", _G.STATEFUL)
    ASSIGN_ADD_VARIABLE = ("assign_add_variable", _G.STATEFUL)
    ASSIGN_SUB_VARIABLE = ("assign_sub_variable", _G.STATEFUL)
    PRINT = ("print", _G.STATEFUL)

    # --- control flow (sub-graphs in attrs) ---------------------------------------------
    COND = ("cond", _G.CONTROL_FLOW)
    WHILE = ("while", _G.CONTROL_FLOW)
    GET_OUTPUT = ("get_output", _G.STRUCTURAL)

    def __new__(cls, name: str, group: OpGroup) -> "OpKind":
        obj = object.__new__(cls)
        obj._value_ = name
        obj.group = group
        return obj

    group: OpGroup

    # Members are singletons compared by identity, so the identity hash (a C slot) is
    # equivalent to Enum's Python-level ``hash(self._name_)``, and rule tables keyed by op
    # (looked up for every traced op and in every pass) stay cheap.
    __hash__ = object.__hash__

    @property
    def ufunc(self) -> np.ufunc | None:
        """The NumPy ufunc this elementwise op applies, or ``None``."""
        return _UFUNC_OF.get(self)

    @property
    def is_stateful(self) -> bool:
        return self.group is OpGroup.STATEFUL

    @property
    def type_name(self) -> str:
        """CamelCase name used in GraphDef text (``MatMul``-style, as TensorFlow users expect)."""
        return _TYPE_NAMES.get(self.value) or "".join(
            part.capitalize() for part in self.value.split("_"))

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"OpKind.{self.name}"


_TYPE_NAMES = {"matmul": "MatMul", "cond": "If", "while": "While",
               "read_variable": "ReadVariableOp", "assign_variable": "AssignVariableOp",
               "constant": "Const"}

# Elementwise members whose name is a NumPy ufunc map onto it; aliases (np.abs, np.mod,
# np.true_divide, np.conj) are the same objects, so one dict serves both directions.
_UFUNC_OF: dict[OpKind, np.ufunc] = {}
UFUNC_OPS: dict[Any, OpKind] = {}
for _kind in OpKind:
    _uf = getattr(np, _kind.value, None) if _kind.group is OpGroup.ELEMENTWISE else None
    if isinstance(_uf, np.ufunc):
        _UFUNC_OF[_kind] = _uf
        UFUNC_OPS[_uf] = _kind
del _kind, _uf

# ufunc.reduce on these ufuncs is the matching reduction op.
UFUNC_REDUCTIONS: dict[np.ufunc, OpKind] = {
    np.add: OpKind.SUM,
    np.multiply: OpKind.PROD,
    np.maximum: OpKind.MAX,
    np.minimum: OpKind.MIN,
    np.logical_and: OpKind.ALL,
    np.logical_or: OpKind.ANY,
}
