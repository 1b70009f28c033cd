"""Python builtins and plain-ndarray methods as converted code calls them on traced values.

``max``/``min``/``sum``/``any``/``all``/``round`` iterate and compare with Python's own rules,
which need Python bools; converted code calls the versions here instead (through ``ag__.cc``),
which keep those rules exactly and record graph operations when a traced value is involved:

* ``max(a, b, ...)`` keeps the first item unless a later one compares greater (``b > a``),
  as CPython does; that is ``np.where(b > a, b, a)``, not ``np.maximum`` (NaN and ``-0.0``
  differ). ``min`` likewise with ``<``. Eagerly the result is one of the items, so its type
  is that item's: the items must share one dtype (a Python number counts as the dtype NumPy
  gives it: int64, float64, bool), otherwise a TypeError says so and how to fix it.
* ``sum(iterable, start)`` adds the items one by one from ``start``, in order (bitwise the same
  as eager, unlike ``np.sum``'s pairwise sum); over a traced array it loops over the first
  dimension as a ``for`` statement does.
* ``any``/``all`` take each item's truth value (``bool(item)``, which NumPy refuses for arrays
  of more than one element: so do these); the result is a NumPy bool when traced.
* ``round(x, ndigits)`` is ``np.round(x, ndigits)``, as ``np.float64.__round__`` is; without
  ``ndigits`` eager Python returns a Python ``int``, which a traced value cannot be: a
  TypeError names the fix.

* ``len(x)`` of a traced array whose first dimension is only known at run time
  (``len(X[labels == k])``) is that dimension as a traced Python int, as TensorFlow's
  AutoGraph does; a static one stays a Python int (``Tensor.__len__``).

A value computed from constants alone (``np.array(p)`` of a constant ``p``, which is a traced
array inside a traced function, and what is computed from it) has its value while tracing:
these builtins, and ``abs``, give the plain Python/NumPy value eager code gets
(:func:`known_value`), so ``if any(np.array(p) < 0): raise ...`` stays a Python ``if``.

NumPy's scalar types (``np.float64(t)``) cast a traced value as NumPy does (a 0-d value to a
NumPy scalar, an array to ``np.asarray(t, dtype=...)``); ``np.asarray``/``np.array`` of one
follow NumPy's ``copy=`` rule (:func:`traced_array`); ``np.from_dlpack`` of one is a view.

``np.array(rows)`` / ``np.asarray(rows)`` of a list holding traced values (what a list
comprehension over an array builds) stack the values, as NumPy's array coercion does; NumPy
cannot reach a traced value inside a list through its protocols.

A method of a plain ``np.ndarray`` that takes another array (``v.dot(t)``) converts a traced
argument to an array, which it cannot; :func:`array_method` answers the NumPy function that
records it instead (``np.dot(v, t)``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from .. import errors
from ..ir import Node, OpKind
from ..passes.fold import evaluate
from ..passes.rewrite import is_pure
from ..trace.control_flow import is_traced
from ..trace.opaque import PythonNumber
from ..trace.tensor import Tensor, bind, describe_tensor, user_frame_description
from ..trace.variables import resolve
from ..trace.zero_d import ARRAY, SCALAR, as_array, mark_array, mark_scalar, zero_d_kind

__all__ = ["BUILTINS", "array_method", "known_value", "traced_array"]

_PY_NUMBERS = (bool, int, float, complex)
#: Up to this static length ``sum`` over a traced array unrolls; longer ones are a graph loop.
SUM_UNROLL = 32


def _is_traced(value: Any) -> bool:
    return is_traced(resolve(value))


def _dtype(value: Any) -> np.dtype:
    """The dtype an item has when it is the result (a Python number: NumPy's for it)."""
    return np.dtype(value.dtype) if hasattr(value, "dtype") else np.asarray(value).dtype


#: At most this many nodes are computed to find a traced value's trace-time value.
KNOWN_VALUE_NODES = 256


class _NotKnown(Exception):
    """A node on the way depends on run-time data (or is too costly to compute now)."""


def _node_value(node: Node, values: dict[Node, Any]) -> Any:
    """``node``'s value from constants alone, computed as the executors would (fold's rule:
    a pure op; none that raises or warns), else :class:`_NotKnown`."""
    if node in values:
        return values[node]
    if node.op is OpKind.CONSTANT:
        value = node.params.value
    else:
        if not is_pure(node) or len(values) >= KNOWN_VALUE_NODES:
            raise _NotKnown
        args = tuple(_node_value(a, values) if isinstance(a, Node) else a for a in node.args)
        value = evaluate(node, args)
        if value is None:
            raise _NotKnown
    values[node] = value
    return value


def known_value(value: Any) -> Any:
    """The value a traced value already has while tracing, because it is computed from
    constants alone (``np.array(p) < 0`` of a constant ``p``), in the form eager NumPy has it
    (a Python number, a NumPy scalar, a new array); ``None`` when it depends on run-time data.

    Builtins of such values (``any``, ``all``, ``sum``, ``max``, ``min``, ``abs``,
    ``round``) answer plain Python/NumPy values, as eagerly: an ``if`` on them stays a
    Python ``if`` (a ``raise`` in it runs only when eager NumPy's would)."""
    value = resolve(value)
    if not isinstance(value, Tensor) or not value.context.active:
        return None
    try:
        array = np.asarray(_node_value(value.node, {}))
    except _NotKnown:
        return None
    if isinstance(value, PythonNumber):
        return value.py_type(array[()])
    if array.shape == () and zero_d_kind(value.node, value.context.top().graph) == SCALAR:
        return array[()]
    return np.array(array, copy=True)


def _plain(value: Any) -> Any:
    """``value`` (a variable's current value), or its trace-time value when it has one and
    is immutable (a Python number or a NumPy scalar: nothing can tell the two apart); an
    array stays the object it is."""
    value = resolve(value)
    known = known_value(value)
    return known if known is not None and not isinstance(known, np.ndarray) else value


def _known_or(value: Any) -> Any:
    """``value``'s trace-time value (:func:`known_value`) if it has one, else ``value``
    (a variable's current value)."""
    value = resolve(value)
    known = known_value(value)
    return value if known is None else known


def _size_one(pred: Any, what: str) -> None:
    size = getattr(pred, "size", 1)
    if size is None or size != 1:
        raise ValueError(
            "The truth value of an array with more than one element is ambiguous. Use "
            f"a.any() or a.all() ({what} at {user_frame_description()} compares "
            f"{describe_tensor(pred) if isinstance(pred, Tensor) else 'arrays'})"
        )


def _extreme(name: str, greater: bool, args: tuple, kwargs: dict) -> Any:
    builtin = builtins.max if greater else builtins.min
    key = kwargs.get("key")
    if len(args) == 1:
        iterable = _known_or(args[0])
        if isinstance(iterable, np.ndarray):  # an array computed from constants only
            return builtin(iterable, **kwargs)
        items = list(resolve(iterable))  # a traced array: its rows (static first dimension)
        if not items:
            return builtin(items, **kwargs)  # default=, or Python's ValueError
    else:
        items = [_plain(x) for x in args]
    keys = [_plain(key(x)) for x in items] if key is not None else items
    if not any(_is_traced(k) for k in keys):
        return builtin(items, key=key) if key is not None else builtin(items)
    dtypes = {_dtype(resolve(x)) for x in items}
    if len(dtypes) > 1:
        kinds = ", ".join(sorted(str(d) for d in dtypes))
        raise TypeError(
            f"{name}() at {user_frame_description()} compares traced values of different "
            f"dtypes ({kinds}): Python's {name}() returns one of its arguments unchanged, so "
            "the result's dtype would depend on the data. Fix: give the arguments one dtype "
            f"(e.g. write 0.0 rather than 0 beside a float64 value), or use "
            f"np.{'maximum' if greater else 'minimum'}(a, b)."
        )
    best, best_key = resolve(items[0]), resolve(keys[0])
    for item, k in zip(items[1:], keys[1:]):
        item, k = resolve(item), resolve(k)
        pred = (k > best_key) if greater else (k < best_key)
        if not is_traced(pred):
            if pred:
                best, best_key = item, k
            continue
        _size_one(pred, f"{name}()")
        if getattr(item, "shape", ()) != getattr(best, "shape", ()):
            raise ValueError(
                f"{name}() at {user_frame_description()} picks between values of different "
                "shapes; the pick depends on traced data, so the result's shape would too. "
                f"Fix: use np.{'maximum' if greater else 'minimum'} to broadcast them."
            )
        best = np.where(pred, item, best)
        best_key = best if key is None else np.where(pred, k, best_key)
    if getattr(best, "shape", None) == () and all(_is_numpy_scalar(x) for x in items):
        mark_scalar(best)  # one of the items, each a NumPy scalar: so is the pick
    return best


def _is_numpy_scalar(value: Any) -> bool:
    """Is ``value`` a NumPy scalar eagerly (not a 0-d array, not a Python number)?"""
    value = resolve(value)
    if isinstance(value, np.generic):
        return True
    return (
        isinstance(value, Tensor)
        and not isinstance(value, PythonNumber)
        and value.shape == ()
        # (an argument may be either form; a loop variable that was a NumPy scalar before
        # the loop stays one: the loop checks that its body keeps it one)
        and (value.node.op is not OpKind.PLACEHOLDER or value.node.params.scalar_form)
        and zero_d_kind(value.node, value.context.top().graph) == SCALAR
    )


def _max(*args: Any, **kwargs: Any) -> Any:
    """Python's ``max`` with traced items (module docstring)."""
    return _extreme("max", True, args, kwargs)


def _min(*args: Any, **kwargs: Any) -> Any:
    """Python's ``min`` with traced items (module docstring)."""
    return _extreme("min", False, args, kwargs)


def _sum(iterable: Any, /, start: Any = 0) -> Any:
    """Python's ``sum``: ``start + item0 + item1 + ...`` in order."""
    iterable, start = _known_or(iterable), _plain(start)
    if not is_traced(iterable) or (
        iterable.shape and iterable.shape[0] is not None and iterable.shape[0] <= SUM_UNROLL
    ):
        return builtins.sum(iterable, start)
    from .loops import for_stmt  # the loop machinery imports this module's users

    state = [start]

    def body(item: Any) -> None:
        state[0] = state[0] + item

    def put(values: tuple) -> None:
        state[0] = values[0]

    for_stmt(iterable, None, body, lambda: (state[0],), put, ("sum",), {})
    return state[0]


def _truth(item: Any, name: str) -> Any:
    """``bool(item)`` as a traced bool (a traced item must have one element)."""
    _size_one(item, f"{name}()")
    return np.any(item)


def _any_all(name: str, iterable: Any) -> Any:
    is_any = name == "any"
    iterable = _known_or(iterable)
    if is_traced(iterable):
        shape = iterable.shape
        if shape is None or len(shape) == 0:
            raise TypeError("iteration over a 0-d array")
        inner: int | None = 1
        for d in shape[1:]:
            inner = None if d is None or inner is None else inner * d
        if inner == 1:
            # every item is one element: its truth is element != 0 (NaN is true)
            return np.any(iterable) if is_any else np.all(iterable)
        if shape[0] == 0:
            return not is_any
        if shape[0] is not None:
            _size_one(iterable[0], f"{name}()")
    acc: Any = None
    for item in iterable:
        item = _known_or(item)
        if not is_traced(item):
            if bool(item) == is_any:  # Python's short circuit on a Python item
                return is_any
            continue
        t = _truth(item, name)
        acc = t if acc is None else (np.logical_or(acc, t) if is_any else np.logical_and(acc, t))
    return (not is_any) if acc is None else acc


def _any(iterable: Any, /) -> Any:
    """Python's ``any`` with traced items (module docstring): a Python bool, as eagerly."""
    return _python_bool(_any_all("any", iterable))


def _all(iterable: Any, /) -> Any:
    """Python's ``all`` with traced items (module docstring): a Python bool, as eagerly."""
    return _python_bool(_any_all("all", iterable))


def _python_bool(value: Any) -> Any:
    """A traced truth value as the Python ``bool`` eager ``any``/``all`` return (weak, and
    returned from the function as a ``bool``)."""
    if isinstance(value, Tensor) and not isinstance(value, PythonNumber):
        return PythonNumber(value.node, value.context, bool)
    return value


def _round(number: Any, ndigits: Any = None) -> Any:
    """Python's ``round``: ``np.round`` for traced values given ``ndigits``."""
    value = _plain(number)
    if not is_traced(value):
        return builtins.round(value) if ndigits is None else builtins.round(value, ndigits)
    if ndigits is None:
        raise TypeError(
            f"round({describe_tensor(value)}) at {user_frame_description()} without ndigits "
            "returns a Python int eagerly, which a traced value cannot be. Fix: np.round(x) "
            "(the same value, keeping the dtype) or np.round(x).astype(np.int64)."
        )
    return np.round(value, ndigits)


def _abs(x: Any, /) -> Any:
    """Python's ``abs``: of a value computed from constants, its plain value; else
    ``np.absolute`` through ``__abs__`` as always."""
    return builtins.abs(_known_or(x))


def _len(obj: Any, /) -> Any:
    """Python's ``len``: a static first dimension is a Python int, as always; one known only
    at run time (``len(x[mask])``) is that dimension as a traced Python int (weak under NEP
    50, as TensorFlow's AutoGraph makes it), which arithmetic (``total / len(sel)``) uses."""
    value = resolve(obj)
    if isinstance(value, Tensor) and value.shape and value.shape[0] is None:
        dim = cast("Tensor", bind(OpKind.DIM, (value,), {"axis": 0}, name="len"))
        return PythonNumber(dim.node, dim.context, int)
    return builtins.len(obj)


def _from_dlpack(x: Any, /, *, device: Any = None, copy: Any = None) -> Any:
    """``np.from_dlpack(x)`` of a traced value: as of an ndarray, a new array object sharing
    ``x``'s memory (writes show through both), or a copy with ``copy=True``."""
    value = resolve(x)
    if not is_traced(value) or device not in (None, "cpu"):
        return np.from_dlpack(x, device=device, copy=copy)
    if copy:
        return mark_array(np.copy(value))
    return value[...]


def _has_traced(obj: Any) -> bool:
    if isinstance(obj, (list, tuple)):
        return any(_has_traced(x) for x in obj)
    return _is_traced(obj)


def _stacked(obj: Any) -> Any:
    """A (nested) list of arrays as one array, as NumPy's array coercion builds it; Python
    numbers count as NumPy's arrays of them (strong), as they do there."""
    if isinstance(obj, (list, tuple)):
        return np.stack([_stacked(x) for x in obj])
    obj = resolve(obj)
    return obj if is_traced(obj) else np.asarray(obj)


_UNABLE_TO_AVOID_COPY = (
    "Unable to avoid copy while creating an array as requested.\nIf using "
    "`np.array(obj, copy=False)` replace it with `np.asarray(obj)` to allow a copy when needed "
    "(no behavior change in NumPy 1.x)."
)


def traced_array(
    value: Tensor, dtype: Any = None, copy: Any = None, order: Any = None, ndmin: int = 0
) -> Any:
    """``np.asarray``/``np.array`` of a traced value, with NumPy's ``copy`` rule.

    ``copy=True`` always makes a new array (later writes to it never reach ``value``);
    ``copy=None`` copies only when it must (a dtype change; a NumPy scalar, which becomes a
    new 0-d array), else returns ``value`` itself; ``copy=False`` never copies and raises
    NumPy's ``ValueError`` where a copy is needed. ``ndmin`` prepends length-1 axes, a view
    (of the copy, with ``copy=True``). ``order`` is a memory layout, which a trace cannot see:
    with a copy it changes nothing a program can read; without one it is refused unless the
    value is 0-d (whether NumPy copies would depend on the caller's strides).
    """
    target = value.dtype if dtype is None else np.dtype(dtype)
    cast = target != value.dtype
    if order not in (None, "K", "A", "C", "F"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if order in ("C", "F") and not copy and value.shape != ():
        raise errors.UnsupportedOpError(
            f"np.asarray({describe_tensor(value)}, order={order!r}) at "
            f"{user_frame_description()}: whether NumPy copies depends on the memory layout of "
            "the array, which a traced function cannot see. Fix: np.array(x, order=..., "
            "copy=True) for a new array, or np.asarray(x) to use the array itself."
        )
    if copy is True or (copy is None and cast):
        result = value.astype(target) if cast else np.copy(value)
        result = mark_array(result)
    elif cast:  # copy=False
        raise ValueError(_UNABLE_TO_AVOID_COPY)
    elif copy is None:
        result = as_array(value)
    else:  # copy=False: the array itself, which a NumPy scalar is not
        if value.shape == ():
            form = (
                SCALAR
                if isinstance(value, PythonNumber)
                else zero_d_kind(value.node, value.context.top().graph)
            )
            if form == SCALAR and value.node.op is not OpKind.PLACEHOLDER:
                raise ValueError(_UNABLE_TO_AVOID_COPY)
            if form != ARRAY:
                raise errors.UnsupportedOpError(
                    f"np.asarray({describe_tensor(value)}, copy=False) at "
                    f"{user_frame_description()}: NumPy raises for a NumPy scalar and returns "
                    "a 0-d array itself, and this value may be either (the caller decides). "
                    "Fix: np.asarray(x) (copy=None), which does the right thing for both."
                )
        result = value
    ndim = len(result.shape) if result.shape is not None else None
    if ndmin and (ndim is None or ndmin > ndim):
        if ndim is None:
            raise errors.TracedBoolError(
                f"ndmin= of {describe_tensor(value)} at {user_frame_description()}: its rank "
                "is unknown while tracing. Fix: give the argument a known rank in "
                "input_signature."
            )
        result = np.expand_dims(result, tuple(range(ndmin - ndim)))
    return result


#: keyword -> default of np.asarray / np.array beyond ``dtype`` (``like=`` and ``subok=``
#: change nothing for a traced value, which stands for a plain ndarray)
_ARRAY_KEYWORDS: dict[Any, dict[str, Any]] = {
    np.asarray: {"order": None, "device": None, "copy": None, "like": None},
    np.array: {"copy": True, "order": "K", "subok": False, "ndmin": 0, "like": None},
}


def _array_of(make: Callable[..., Any]) -> Callable[..., Any]:
    keywords = _ARRAY_KEYWORDS[make]

    def array(obj: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
        value = resolve(obj)
        if is_traced(value):
            options = dict(keywords)
            if make is np.asarray and len(args) == 1 and "order" not in kwargs:
                options["order"] = args[0]  # (np.asarray's order is positional too)
                args = ()
            if (
                not args
                and set(kwargs) <= set(options)
                and kwargs.get("like") is None
                and kwargs.get("device") in (None, "cpu")
            ):
                options.update(kwargs)
                # (a 0-d result is an array, as NumPy's constructors make it: ``zero_d``)
                return traced_array(
                    value, dtype, options["copy"], options["order"], options.get("ndmin", 0)
                )
        if args or kwargs or not isinstance(obj, (list, tuple)) or not _has_traced(obj):
            return make(obj, dtype, *args, **kwargs)
        out = _stacked(obj)
        return out if dtype is None else out.astype(dtype)

    array.__name__ = make.__name__
    array.__doc__ = (
        f"``np.{make.__name__}`` of a traced value (:func:`traced_array`) or of a "
        "list holding traced values: the values stacked along new leading axes "
        "(``np.stack``), as NumPy builds it."
    )
    return array


def _scalar_type(sctype: type) -> Callable[..., Any]:
    """``np.float64(x)`` & co. of a traced value, as NumPy's scalar types do it: a 0-d value
    is cast to a NumPy scalar of that type; an array of one or more dimensions comes back as
    ``np.asarray(x, dtype=sctype)`` (the array itself when its dtype already is that type)."""

    def convert(*args: Any, **kwargs: Any) -> Any:
        # (a Tensor where is_traced says so)
        value: Any = resolve(args[0]) if len(args) == 1 and not kwargs else None
        if not is_traced(value):
            return sctype(*args, **kwargs)
        if value.shape is None:
            raise errors.TracedBoolError(
                f"{sctype.__name__}({describe_tensor(value)}) at {user_frame_description()}: "
                "NumPy returns a scalar for a 0-d value and an array otherwise, and the rank "
                "is unknown while tracing. Fix: give the argument a known rank in "
                "input_signature."
            )
        if value.shape == ():
            return mark_scalar(value.astype(sctype))
        return traced_array(value, sctype)

    convert.__name__ = sctype.__name__
    return convert


def _number(py_type: type) -> Callable[..., Any]:
    """``int(x)`` / ``float(x)`` / ``bool(x)`` of a traced one-element value: a traced Python
    number (weak under NEP 50, returned as a Python number): ``int`` of integers and bools,
    ``float`` of floats, integers and bools, ``bool`` of anything exactly; ``int`` of a float
    truncates toward zero, as Python does, with run-time checks that raise Python's errors
    (:func:`_float_to_int`)."""
    exact = {int: "biuf", float: "fbiu", bool: "fbiuc"}[py_type]

    def convert(*args: Any, **kwargs: Any) -> Any:
        # (a Tensor where is_traced says so)
        value: Any = resolve(args[0]) if len(args) == 1 and not kwargs else None
        if not is_traced(value) or value.dtype.kind not in exact:
            return py_type(*args, **kwargs)  # (Python's own conversion, or its error)
        if value.shape is None or any(d != 1 for d in value.shape):
            raise TypeError(
                f"only length-1 arrays can be converted to Python scalars "
                f"({describe_tensor(value)} at {user_frame_description()})"
            )
        # (NumPy's functions return Tensors for Tensors, through __array_function__)
        scalar: Any = value if value.shape == () else np.reshape(value, ())
        if py_type is bool:
            scalar = scalar if scalar.dtype == np.bool_ else np.not_equal(scalar, 0)
        elif py_type is int and scalar.dtype.kind == "f":
            scalar = _float_to_int(scalar)
        else:
            scalar = scalar.astype(np.int64 if py_type is int else np.float64)
        return PythonNumber(scalar.node, scalar.context, py_type)

    convert.__name__ = py_type.__name__
    return convert


def _float_to_int(scalar: Tensor) -> Tensor:
    """``int(v)`` of a traced 0-d float: truncation toward zero, as an int64 (what a traced
    Python int is). Python raises ``ValueError`` for NaN and ``OverflowError`` for an
    infinity: so do run-time checks (``if_raise``). A finite value outside int64's range
    would be a larger Python int eagerly; a check raises ``OverflowError`` naming the fix
    rather than wrap around."""
    from .conditionals import if_raise  # (the conditionals import this module's users)

    where = user_frame_description()
    if_raise(np.isnan(scalar), lambda: ValueError("cannot convert float NaN to integer"))
    if_raise(np.isinf(scalar), lambda: OverflowError("cannot convert float infinity to integer"))
    limit = float(2**63)
    traced: Any = scalar  # (Tensor's comparisons are set on the class: out of mypy's sight)
    fits = np.logical_and(traced < limit, traced >= -limit)  # (False for NaN)
    if_raise(
        np.logical_not(fits),
        lambda: OverflowError(
            f"int() of a float outside the int64 range at {where}: a Python int computed in a "
            "traced function is an int64 (eagerly it would be a larger Python int). Fix: keep "
            "the value within +-2**63, or compute with floats (np.trunc(v))."
        ),
    )
    # (zero where the checks raise: an executor that casts before checking warns of nothing)
    # (a Tensor: NumPy's functions return Tensors for Tensors, through __array_function__)
    return cast("Tensor", np.where(fits, np.trunc(scalar), 0.0).astype(np.int64))


#: builtin -> the version converted code calls (``ag__.cc`` looks builtins up here).
BUILTINS: dict[Any, Callable[..., Any]] = {
    builtins.max: _max,
    builtins.min: _min,
    builtins.sum: _sum,
    builtins.any: _any,
    builtins.all: _all,
    builtins.round: _round,
    builtins.abs: _abs,
    builtins.len: _len,
    builtins.int: _number(int),
    builtins.float: _number(float),
    builtins.bool: _number(bool),
    np.array: _array_of(np.array),
    np.asarray: _array_of(np.asarray),
    np.from_dlpack: _from_dlpack,
}


def _is_numpy_scalar_type(t: type) -> bool:
    """NumPy's own numeric scalar types (np.float64, np.int32, np.bool_, ...): not longdouble,
    which the executors do not compute in; not np.longlong, an alias type of int64's dtype
    whose scalars a graph could not tell from np.int64's; and not the types other packages
    register with NumPy (ml_dtypes' float8 and complex32, which `import onnx` brings in),
    whose dtype strings NumPy cannot read back."""
    dtype = np.dtype(t)
    if dtype.kind not in "biufc" or dtype.char in "gG":
        return False
    try:
        return np.dtype(dtype.str).type is t
    except TypeError:
        return False


BUILTINS.update(
    (t, _scalar_type(t)) for t in set(np.sctypeDict.values()) if _is_numpy_scalar_type(t)
)


# -- methods of plain arrays -------------------------------------------------------------------


def _compress(a: Any, condition: Any, axis: Any = None) -> Any:
    return np.compress(condition, a, axis=axis)


#: ndarray method name -> NumPy function taking the array first, for methods whose argument
#: may be traced.
_ARRAY_METHODS: dict[str, Callable[..., Any]] = {
    "dot": np.dot,
    "searchsorted": np.searchsorted,
    "take": np.take,
    "clip": np.clip,
    "repeat": np.repeat,
    "compress": _compress,
    "choose": np.choose,
}


def array_method(fn: Any) -> Callable[..., Any] | None:
    """For a bound method of a plain ndarray in :data:`_ARRAY_METHODS`: a callable that runs
    it as the method when no argument is traced and as the NumPy function otherwise."""
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", None)
    if not isinstance(owner, np.ndarray) or isinstance(owner, Tensor) or name not in _ARRAY_METHODS:
        return None
    func = _ARRAY_METHODS[name]

    def call(*args: Any, **kwargs: Any) -> Any:
        if any(_is_traced(a) for a in (*args, *kwargs.values())):
            return func(owner, *args, **kwargs)
        return fn(*args, **kwargs)

    return call
