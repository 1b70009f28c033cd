"""Typed parameters of the graph's ops: one frozen dataclass per family (each op's entry in
:mod:`kernel_ext.ir.ops` names its class: ``OpKind.params_class``).

A node's static parameters (a reduction's ``axis``, a cast's ``dtype``, an indexing template,
a loop's body) are one immutable value of its op's class, in the manner of JAX's per-primitive
params: ``node.params.axis`` reads one, with the family's default when the op's maker did not
give it; a change makes a new value (:meth:`Params.replace`), never edits one in place, so two
nodes may share it.

Each value is also a read-only mapping over the fields its maker *gave*, in the order given:
``"initial" in node.params``, ``node.params.items()``. That is what the printers,
common-subexpression keys, kernel caches and saved graphs read, so "given" keeps its meaning
there (a sum made with ``keepdims=False`` prints it; a ufunc made without ``dtype=`` does not)
and a field NumPy treats differently when absent (``ufunc.reduce``'s ``initial``,
``np.pad``'s ``constant_values``) is told apart from its default. :data:`MISSING` is the value
of a field with no default that was not given.

The field names are NumPy's keyword names (``UPLO`` included): lowerings pass
:meth:`Params.kwargs` on to NumPy as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Self, cast

if TYPE_CHECKING:
    from .ops import OpKind


__all__ = ["MISSING", "AnyParams", "Params", "make_params"]


class _Missing:
    """The type of :data:`MISSING` (one instance)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"


#: A field with no default that the op's maker did not give.
MISSING: Any = _Missing()


class Params(Mapping[str, Any]):
    """The base of every op's parameter class: frozen fields, read as attributes, and a
    read-only mapping over the fields given when it was made."""

    __slots__ = ("_given",)
    #: Fields that hold sub-graphs (a ``Graph`` or a tuple of them): control flow's only.
    SUBGRAPH_FIELDS: ClassVar[tuple[str, ...]] = ()
    #: Every field name of the class (set for each class by :func:`_params`).
    FIELD_NAMES: ClassVar[frozenset[str]] = frozenset()
    #: The value made with no field given (set by :func:`_params`).
    EMPTY: ClassVar[Params]

    _given: tuple[str, ...]

    # the mapping over the given fields -------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        if key in self._given:
            return getattr(self, key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._given)

    def __len__(self) -> int:
        return len(self._given)

    def __contains__(self, key: object) -> bool:
        return key in self._given

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in self._given else default

    # values made from this one ---------------------------------------------------------------
    def replace(self, **changes: Any) -> Self:
        """A value of the same class with ``changes`` given over this one's given fields."""
        return type(self).of({**self, **changes})

    def kwargs(self, *exclude: str) -> dict[str, Any]:
        """The given fields as NumPy keywords, less ``exclude``."""
        return {k: getattr(self, k) for k in self._given if k not in exclude}

    @classmethod
    def of(cls, given: Mapping[str, Any]) -> Self:
        """The value with the fields ``given`` (a mapping of field name to value); TypeError
        naming the fields the class has when ``given`` names another."""
        if not given:
            return cast("Self", cls.EMPTY)
        unknown = [k for k in given if k not in cls.FIELD_NAMES]
        if unknown:
            raise TypeError(
                f"{cls.__name__} has no field {', '.join(map(repr, unknown))} (received "
                f"{dict(given)!r}); its fields are {sorted(cls.FIELD_NAMES)}: give an op only "
                "the parameters its class declares (kernel_ext.ir.params)"
            )
        value = cls(**given)
        object.__setattr__(value, "_given", tuple(given))
        return value

    # printing, pickling ----------------------------------------------------------------------
    def __repr__(self) -> str:
        items = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._given)
        return f"{type(self).__name__}({items})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self).of, (dict(self.items()),))


def _params(cls: type) -> type[Params]:
    """Make ``cls`` a frozen, slotted dataclass of :class:`Params` and fill in its class
    facts (field names, the value with no field given)."""
    made: Any = dataclasses.dataclass(frozen=True, slots=True, eq=False, repr=False)(cls)
    made.FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(made))
    empty = made()
    object.__setattr__(empty, "_given", ())
    made.EMPTY = empty
    return made  # type: ignore[no-any-return]


if TYPE_CHECKING:

    class AnyParams(Params):
        """How the type checker sees a node's parameters: its op picks the class at run
        time, so a field read is Any. Code that knows the op's class casts to it
        (``cast("SortParams", node.params)``) and has its fields checked."""

        def __getattr__(self, name: str) -> Any: ...

else:
    AnyParams = Params


# --- ops without parameters, elementwise ------------------------------------------------------


@_params
class NoParams(Params):
    """Ops with no parameters (where, clip, the products, the solvers, ...)."""


@_params
class UfuncParams(Params):
    """A ufunc call: the ``dtype=`` it was given (None: NumPy's result type)."""

    dtype: Any = None


@_params
class DtypeParams(Params):
    """``astype`` and ``arange``: the dtype made."""

    dtype: Any = MISSING


@_params
class CopyParams(Params):
    """A copy; ``stop_gradient`` marks the one a tape's ``stop_gradient`` makes."""

    stop_gradient: bool = False


# --- reductions and scans ---------------------------------------------------------------------


@_params
class ReduceParams(Params):
    """A reduction over ``axis`` (None: every axis)."""

    axis: Any = None
    keepdims: bool = False
    dtype: Any = None


@_params
class MomentParams(Params):
    """``std``/``var`` and their NaN forms: a reduction with ``ddof``."""

    axis: Any = None
    keepdims: bool = False
    dtype: Any = None
    ddof: Any = 0


@_params
class QuantileParams(Params):
    """Percentiles and quantiles: ``q`` (a read-only array or a number) and the method."""

    q: Any = MISSING
    axis: Any = None
    keepdims: bool = False
    method: str = "linear"


@_params
class UfuncMethodParams(Params):
    """``ufunc.reduce``/``reduceat``/``accumulate``: the ufunc and NumPy's keywords;
    ``initial`` is MISSING when not given (``initial=None`` is another call)."""

    ufunc: Any = MISSING
    axis: Any = 0
    keepdims: bool = False
    dtype: Any = None
    initial: Any = MISSING


@_params
class ScanParams(Params):
    """``cumsum``/``cumprod`` and their NaN forms."""

    axis: Any = None
    dtype: Any = None


# --- shape ------------------------------------------------------------------------------------


@_params
class ShapeParams(Params):
    """``reshape``/``broadcast_to``: the shape made."""

    shape: Any = MISSING


@_params
class AxesParams(Params):
    """``transpose``: the permutation (None: reversed)."""

    axes: Any = None


@_params
class AxisParams(Params):
    """Ops with one ``axis`` (expand_dims, squeeze, flip, compress, a traced dimension)."""

    axis: Any = None


@_params
class JoinParams(Params):
    """``concatenate``/``stack``."""

    axis: Any = 0
    dtype: Any = None


@_params
class PadParams(Params):
    """``np.pad``: widths per axis (read-only), the mode, and the mode's keywords when given."""

    pad_width: Any = MISSING
    mode: str = "constant"
    constant_values: Any = MISSING
    end_values: Any = MISSING
    stat_length: Any = MISSING
    reflect_type: Any = MISSING


@_params
class DiagflatParams(Params):
    """``np.diagflat``."""

    k: int = 0


@_params
class InsertParams(Params):
    """``np.insert`` with static positions."""

    obj: Any = MISSING
    axis: Any = None


@_params
class TrimZerosParams(Params):
    """``np.trim_zeros``."""

    trim: str = "fb"
    axis: Any = None


@_params
class PackbitsParams(Params):
    """``np.packbits``."""

    axis: Any = None
    bitorder: str = "big"


@_params
class UnpackbitsParams(Params):
    """``np.unpackbits``."""

    axis: Any = None
    count: Any = None
    bitorder: str = "big"


# --- indexing ---------------------------------------------------------------------------------


@_params
class IndexParams(Params):
    """``x[index]`` read or written: the index template (slots for traced parts)."""

    index: Any = MISSING


@_params
class UfuncAtParams(Params):
    """``ufunc.at``: the index template and the ufunc."""

    index: Any = MISSING
    ufunc: Any = MISSING


@_params
class GetOutputParams(Params):
    """One output of a multi-output node, by position."""

    index: int = 0


@_params
class TensorArrayWriteParams(Params):
    """A loop's per-iteration write into a stacked result."""

    size: Any = MISSING
    dynamic_size: bool = False
    dtype: Any = MISSING


@_params
class BincountParams(Params):
    """``np.bincount``."""

    minlength: int = 0


@_params
class RavelMultiIndexParams(Params):
    """``np.ravel_multi_index``."""

    dims: Any = MISSING
    mode: Any = "raise"
    order: str = "C"


@_params
class UnravelIndexParams(Params):
    """``np.unravel_index``."""

    shape: Any = MISSING
    order: str = "C"


# --- sorting, searching, sets -----------------------------------------------------------------


@_params
class SortParams(Params):
    """``sort``/``argsort``."""

    axis: Any = -1
    kind: Any = None
    stable: Any = None


@_params
class PartitionParams(Params):
    """``partition``/``argpartition``."""

    kth: Any = MISSING
    axis: Any = -1
    kind: str = "introselect"


@_params
class LexsortParams(Params):
    """``np.lexsort``; ``array``: the keys were one array, not a sequence."""

    axis: int = -1
    array: bool = False


@_params
class SearchsortedParams(Params):
    """``np.searchsorted``."""

    side: str = "left"


@_params
class DigitizeParams(Params):
    """``np.digitize``."""

    right: bool = False


@_params
class IsinParams(Params):
    """``np.isin``."""

    invert: bool = False
    assume_unique: bool = False
    kind: Any = None


@_params
class UniqueParams(Params):
    """``np.unique``."""

    return_index: bool = False
    return_inverse: bool = False
    return_counts: bool = False
    equal_nan: bool = True
    sorted: bool = True


@_params
class HistogramParams(Params):
    """``np.histogram``; ``bins`` only when a count or a rule (array bins are an argument)."""

    range: Any = None
    density: Any = None
    bins: Any = None


# --- linear algebra, transforms ---------------------------------------------------------------


@_params
class SvdParams(Params):
    """``np.linalg.svd``."""

    full_matrices: bool = True
    compute_uv: bool = True
    hermitian: bool = False


@_params
class QrParams(Params):
    """``np.linalg.qr``."""

    mode: str = "reduced"


@_params
class EighParams(Params):
    """``eigh``/``eigvalsh``: NumPy's ``UPLO``."""

    UPLO: str = "L"


@_params
class CholeskyParams(Params):
    """``np.linalg.cholesky``."""

    upper: bool = False


@_params
class PinvParams(Params):
    """``np.linalg.pinv``; ``rtol`` only when given."""

    rcond: Any = None
    hermitian: bool = False
    rtol: Any = MISSING


@_params
class LstsqParams(Params):
    """``np.linalg.lstsq``."""

    rcond: Any = None


@_params
class EinsumParams(Params):
    """``np.einsum``: the subscripts and NumPy's keywords when given."""

    subscripts: Any = MISSING
    optimize: Any = False
    dtype: Any = MISSING
    order: Any = MISSING
    casting: Any = MISSING


@_params
class ConvolveParams(Params):
    """``np.convolve``/``np.correlate``."""

    mode: str = "valid"


@_params
class FftParams(Params):
    """An ``np.fft`` transform, by name, with the keywords it was given."""

    transform: Any = MISSING
    n: Any = MISSING
    s: Any = MISSING
    axis: Any = MISSING
    axes: Any = MISSING
    norm: Any = MISSING


# --- sources, state, calls, control flow ------------------------------------------------------


@_params
class PlaceholderParams(Params):
    """An input: its shape and dtype; ``path`` where the argument sits in the call (top-level
    graphs only: None in a sub-graph); ``scalar_form``: a loop's or branch's input held as a
    scalar."""

    shape: Any = MISSING
    dtype: Any = MISSING
    path: Any = None
    scalar_form: bool = False


@_params
class ConstantParams(Params):
    """A constant: its read-only array; ``captured``: taken from outside the function."""

    value: Any = MISSING
    captured: bool = False


@_params
class VariableParams(Params):
    """A ``kx.Variable`` read or written (compared by identity)."""

    variable: Any = MISSING


@_params
class PrintParams(Params):
    """``kx.print``'s template and separators."""

    template: Any = MISSING
    sep: str = " "
    end: str = "\n"


@_params
class CheckParams(Params):
    """An assertion: the error it raises, the message's arguments, writes before it."""

    error: Any = MISSING
    args: Any = ()
    writes: int = 0


@_params
class CallParams(Params):
    """A call NumPy runs itself (an opaque or random call): the function, the call's
    template and the abstract value of its result."""

    fn: Any = MISSING
    template: Any = MISSING
    out_aval: Any = MISSING


@_params
class CondParams(Params):
    """``if`` on a traced value: the two branches and the avals of their outputs."""

    SUBGRAPH_FIELDS: ClassVar[tuple[str, ...]] = ("branches",)

    branches: Any = MISSING
    out_avals: Any = MISSING


@_params
class WhileParams(Params):
    """A graph loop: its condition and body graphs, the loop-carried count and the avals of
    the loop's results."""

    SUBGRAPH_FIELDS: ClassVar[tuple[str, ...]] = ("cond", "body")

    cond: Any = MISSING
    body: Any = MISSING
    n_vars: Any = MISSING
    out_avals: Any = MISSING


def make_params(op: OpKind, given: Mapping[str, Any]) -> AnyParams:
    """``op``'s parameters with the fields ``given``: a value of its class is kept as it is
    (values are immutable), any other mapping is read into one."""
    cls = op.params_class
    if type(given) is cls:
        return cast("AnyParams", given)
    try:
        return cast("AnyParams", cls.of(given))
    except TypeError as err:
        raise TypeError(f"op {op.value!r}: {err}") from None
