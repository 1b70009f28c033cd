"""Opaque NumPy calls: a NumPy function with no op of its own runs as it is, inside the graph.

When ``Tensor.__array_function__`` (or ``__array_ufunc__``, for a ufunc method such as
``np.maximum.accumulate``) meets a NumPy function the handler table does not know,
:func:`numpy_call` records one ``numpy_call`` node (TensorFlow's ``numpy_function`` and JAX's
``pure_callback``, made automatically): the function object and its static arguments go into the
node's attrs (an argument template, :class:`~kernel_ext.ir.calls.CallTemplate`), the traced
arrays become its inputs, and every graph call runs the function on the run-time values.

The result's abstract value is found without guessing: the function runs at trace time on
*stand-ins* of the traced shapes and dtypes, several sets of values (random, alternating 0/1,
identity matrices; unknown dimensions take another size in each set). A dimension that differs
between the sets depends on the data (``np.unique``, ``np.nonzero``) or on an unknown input size and
becomes ``None``; the dtype and the structure (one array, a tuple, a namedtuple such as
``EigResult``) must agree. A stand-in is not the real input, so the run time checks each
result against the traced abstract value and raises a clear error instead of a wrong result
(:func:`~kernel_ext.ir.calls.check_result`).

Functions that write into their arguments (``np.fill_diagonal``, ``np.copyto``, ``ufunc.at``,
...) are not pure and are refused with a clear error: :data:`MUTATING_FUNCTIONS` lists them, the
hook for functionalising them once in-place updates are (``a = f(copy(a), ...)`` written back).
"""

from __future__ import annotations

import operator as py_operator
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from .. import errors
from ..ir import AbstractValue, CallTemplate, Operand, OpKind, call_name
from ..ir.calls import PYTHON_SCALARS, flatten_result, is_leaf, leaf_aval
from .context import bind
from .state import outside_traces
from .tensor import FALLBACK, Tensor, describe_tensor, user_frame_description
from .variables import Variable

#: NumPy functions that write into an argument (which one, in words), refused on traced
#: values: the graph is functional. The hook for functionalisation: each is
#: ``arg = f(copy(arg), ...)`` followed by writing ``arg`` back.
MUTATING_FUNCTIONS: dict[Callable, str] = {  # (np.copyto, np.fill_diagonal: numpy_api)
    np.put: "its first argument",
    np.place: "its first argument",
    np.putmask: "its first argument",
    np.put_along_axis: "its first argument",
}

#: ufunc methods that write into their first argument.
MUTATING_UFUNC_METHODS = frozenset({"at"})

#: Sizes an unknown (``None``) dimension takes in each stand-in set: distinct, so output
#: dimensions that follow it differ between the sets and are found unknown too.
_UNKNOWN_SIZES = (7, 5, 6)
_SEED = 20240607


def function_name(func: Callable) -> str:
    """``np.einsum``-style name of a NumPy callable (messages, node names, the views)."""
    return call_name(func)


def numpy_call(func: Callable, args: Sequence[Any], kwargs: dict) -> Any:
    """Record ``func(*args, **kwargs)`` as an opaque ``numpy_call`` and return its traced
    result, in the structure ``func`` returns (an array, a tuple, a list, a namedtuple)."""
    name = function_name(func)
    if func in MUTATING_FUNCTIONS:
        raise mutating_error(name, MUTATING_FUNCTIONS[func])
    if kwargs.get("out") is not None and not getattr(func, "writes_a_copy", False):
        raise errors.UnsupportedOpError(
            f"{name}(..., out=...) at {user_frame_description()} writes into an existing "
            "array, which a traced function cannot do with a NumPy function it runs as an "
            f"opaque call. Fix: assign the result instead (y = {name}(...))."
        )
    template, operands = build_template(args, kwargs)
    out_aval, structure = find_out_aval(func, template, operands, name)
    return bind_call(OpKind.NUMPY_CALL, func, template, operands, out_aval, structure, name)


def mutating_error(name: str, what: str) -> errors.UnsupportedOpError:
    return errors.UnsupportedOpError(
        f"{name} at {user_frame_description()} writes into {what} in place; a traced "
        "function's graph is functional, so it cannot run as an opaque NumPy call. Fix: work "
        "on a copy and use the result (b = a.copy(); ...; then assign b), write the update "
        "with indexing (a[idx] = values, np.where), or call it outside the kx.function."
    )


def bind_call(
    op: OpKind,
    func: Callable,
    template: CallTemplate,
    operands: list[Any],
    out_aval: Any,
    structure: Any,
    name: str,
) -> Any:
    """Append the call node (and its ``get_output`` projections) and rebuild the result."""
    attrs = {
        "fn": func,
        "template": template,
        "out_aval": out_aval,
    }
    node_name = (
        name.rsplit(".", 1)[-1] if op is OpKind.NUMPY_CALL else name.replace(".", "_").lower()
    )
    where = f"{name} (at {user_frame_description()})"
    result = bind(op, operands, attrs, name=node_name, meta={"where": where})
    if out_aval is None:
        return None
    if not isinstance(out_aval, tuple):
        return rebuild(structure, iter([result]))
    leaves = [
        bind(OpKind.GET_OUTPUT, (result,), {"index": i}, name=f"{node_name}/{i}")
        for i in range(len(out_aval))
    ]
    return rebuild(structure, iter(leaves))


def rebuild(structure: Any, leaves: Any) -> Any:
    """The result container of ``structure`` (see ``flatten_result``) around traced leaves."""
    if structure == "leaf":
        return next(leaves)
    if is_leaf(structure):  # a Python number's type: eager NumPy returns one here (weak)
        leaf = next(leaves)
        return PythonNumber(leaf.node, leaf.context, structure)
    cls, children = structure
    items = [rebuild(c, leaves) for c in children]
    if cls is tuple or cls is list:
        return cls(items)
    if hasattr(cls, "_make"):  # namedtuple (EigResult, SVDResult, ...)
        return cls._make(items)
    return cls(items)


# -- the argument template -----------------------------------------------------------------


def build_template(args: Sequence[Any], kwargs: dict) -> tuple[CallTemplate, list[Any]]:
    """Split a call's arguments into a static template and the values the graph supplies.

    Traced values, ``kx.Variable`` reads and NumPy arrays (captured: a graph freezes the
    arrays it reads from outside) become :class:`Operand` slots, at any depth of lists,
    tuples and dicts; everything else (strings, numbers, NumPy scalars, axes, callables) is
    static. Containers are copied, so a later change to a Python list does not reach the
    graph (the rule for every captured Python value).
    """
    operands: list[Any] = []

    def walk(v: Any) -> Any:
        if isinstance(v, (Tensor, Variable, np.ndarray)):
            if isinstance(v, np.ndarray) and v.dtype.hasobject:
                raise errors.UnsupportedOpError(
                    f"an object array cannot enter a graph (at {user_frame_description()}). "
                    "Fix: compute this outside the kx.function."
                )
            operands.append(v)
            return Operand(len(operands) - 1)
        if type(v) in (list, tuple):
            return type(v)(walk(x) for x in v)
        if type(v) is dict:
            return {k: walk(x) for k, x in v.items()}
        return v

    template = CallTemplate(
        tuple(walk(a) for a in args), tuple((k, walk(v)) for k, v in kwargs.items())
    )
    return template, operands


def operand_aval(value: Any) -> AbstractValue:
    if isinstance(value, Tensor):
        return cast("AbstractValue", value.node.aval)  # (a tensor's node holds one value)
    if isinstance(value, Variable):
        return AbstractValue(tuple(value.shape), np.dtype(value.dtype))
    return leaf_aval(value)


# -- stand-ins and the abstract value --------------------------------------------------------


def stand_in(aval: AbstractValue, kind: int, name: str) -> np.ndarray:
    """Stand-in set ``kind`` for an operand: 0 random (positive floats, small non-negative
    integers: valid indices and counts), 1 alternating zeros and ones, 2 identity matrices
    (ones below rank 2)."""
    if aval.shape is None:
        raise errors.UnsupportedOpError(
            f"{name} at {user_frame_description()} gets an input of unknown rank; running it "
            "as an opaque NumPy call needs the rank. Fix: give the argument a known rank in "
            "input_signature."
        )
    shape = tuple(_UNKNOWN_SIZES[kind] if d is None else d for d in aval.shape)
    dtype = aval.dtype
    if kind == 0:
        rng = np.random.default_rng(_SEED)
        if dtype == np.bool_:
            return rng.random(shape) < 0.5
        if dtype.kind in "iu":
            return rng.integers(0, 5, shape).astype(dtype)
        if dtype.kind == "c":
            return (rng.random(shape) + 0.5 + 1j * rng.random(shape)).astype(dtype)
        if dtype.kind == "f":
            return (rng.random(shape) + 0.5).astype(dtype)
        return np.zeros(shape, dtype)
    if kind == 1:
        # 0, 1, 0, 1, ...: many repeats and zeros (data-dependent sizes differ from set 0's)
        # without the all-zero input that sends some LAPACK routines into NaN complaints.
        return (np.arange(int(np.prod(shape))) % 2).reshape(shape).astype(dtype)
    if len(shape) < 2:
        return np.ones(shape, dtype)
    eye = np.eye(shape[-2], shape[-1], dtype=dtype)
    return np.array(np.broadcast_to(eye, shape))


def find_out_aval(
    func: Callable, template: CallTemplate, operands: list[Any], name: str
) -> tuple[Any, Any]:
    """The abstract value of ``func``'s result (one AbstractValue, or a tuple for several
    arrays) and its structure, from runs on the stand-in sets (see the module docstring)."""
    avals = [operand_aval(v) for v in operands]
    found: list[tuple[list[AbstractValue], Any]] = []
    failures: list[BaseException] = []
    for kind in range(3):
        # Traced values get stand-ins; captured arrays are constants, known as they are.
        values = [
            stand_in(a, kind, name) if isinstance(v, (Tensor, Variable)) else v
            for a, v in zip(avals, operands)
        ]
        args, kwargs = template.fill(values)
        try:
            with np.errstate(all="ignore"), outside_traces():
                result = func(*args, **kwargs)
        except Exception as e:  # this set is not valid input (a singular matrix, ...)
            failures.append(e)
            continue
        flat = flatten_result(result)
        if flat is None or any(isinstance(v, np.ndarray) and v.dtype.hasobject for v in flat[0]):
            raise errors.UnsupportedOpError(
                f"{name} at {user_frame_description()} returns {_kind_of(result)}, which "
                "cannot be a graph value (graphs hold numeric and bool arrays). Fix: call it "
                "outside the kx.function and pass what you need in as arrays."
            )
        found.append(([leaf_aval(v) for v in flat[0]], flat[1]))
    if not found:
        first = failures[0]
        cls: type = errors.UnsupportedOpError
        if len({type(e) for e in failures}) == 1 and all(
            a.shape is not None and None not in a.shape for a in avals
        ):
            # the same error on every set of values of these exact shapes and dtypes: the
            # call is wrong whatever the data (a bad keyword, mismatched shapes) and fails
            # eagerly too, so the error is also of NumPy's type (`except ValueError:` catches it)
            cls = failing_call_error(type(first))
        raise cls(
            f"{name} at {user_frame_description()} failed on every stand-in input of the "
            f"traced shapes and dtypes ({type(first).__name__}: {first}), so the type of its "
            "result cannot be found while tracing. Fix: check the arguments (the same call "
            "fails eagerly if they are wrong), or compute it outside the kx.function and "
            "pass the result in."
        ) from first
    structures = {repr(s) for _, s in found}
    if len(structures) > 1:
        raise errors.UnsupportedOpError(
            f"{name} at {user_frame_description()} returns a different number of results for "
            "different input values, which a graph cannot describe. Fix: compute it outside "
            "the kx.function."
        )
    leaves = [_merge(name, [f[0][i] for f in found]) for i in range(len(found[0][0]))]
    structure = found[0][1]
    out = leaves[0] if is_leaf(structure) else tuple(leaves)
    return out, structure


_FAILING_CALL_ERRORS: dict[type, type] = {}


def failing_call_error(numpy_error: type) -> type:
    """An :class:`~kernel_ext.errors.UnsupportedOpError` that is also ``numpy_error`` (a
    call NumPy rejects raises NumPy's exception type here too)."""
    cls = _FAILING_CALL_ERRORS.get(numpy_error)
    if cls is None:
        try:
            # (the message is ours: NumPy's own __init__/__str__ may want other arguments)
            cls = type(
                f"UnsupportedOpError_{numpy_error.__name__}",
                (errors.UnsupportedOpError, numpy_error),
                {"__init__": Exception.__init__, "__str__": Exception.__str__},
            )
        except TypeError:  # (an exception type that cannot be a base: ours alone)
            cls = errors.UnsupportedOpError
        _FAILING_CALL_ERRORS[numpy_error] = cls
    return cls


def _merge(name: str, avals: list[AbstractValue]) -> AbstractValue:
    """One abstract value for a result over the stand-in sets: dims that differ are None."""
    dtypes = {a.dtype for a in avals}
    shapes = [cast("tuple[int, ...]", a.shape) for a in avals]  # (of concrete results: known)
    ranks = {len(s) for s in shapes}
    if len(dtypes) > 1 or len(ranks) > 1:
        raise errors.UnsupportedOpError(
            f"{name} at {user_frame_description()} returns results whose dtype or rank "
            f"depends on the input values ({', '.join(sorted(map(str, avals)))}), which a "
            "graph cannot describe. Fix: compute it outside the kx.function."
        )
    shape = tuple(d if all(s[i] == d for s in shapes) else None for i, d in enumerate(shapes[0]))
    return AbstractValue(shape, avals[0].dtype)


def _kind_of(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype}"
    text = repr(value)
    return f"a {type(value).__name__} ({text[:40] + '...' if len(text) > 40 else text})"


# -- Python numbers ---------------------------------------------------------------------------


class PythonNumber(Tensor):
    """A traced value that eager NumPy has as a Python number (``np.random.rand()``,
    ``rng.random()``, ``np.random.randint(0, 5)``): *weak* under NEP 50.

    The graph holds it as a 0-d value of the number's default dtype (float64, int64, bool,
    complex128), but it combines as the Python number would: with an array, NumPy converts
    a Python number to the array's dtype (``x_float32 * 0.5`` stays float32), so before a
    ufunc this value is cast to the dtype NumPy resolves for a Python number in its place;
    with another Python number (``np.random.rand() * 0.1``) Python's arithmetic makes
    another Python number. Returned from the function it comes back as a Python number
    (``TreeNode("output", value=py_type)``), as eagerly.
    """

    __slots__ = ("py_type",)

    def __init__(self, node: Any, context: Any, py_type: type) -> None:
        super().__init__(node, context)
        self.py_type = py_type

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method == "__call__" and kwargs.get("dtype") is None:
            try:
                loop = ufunc.resolve_dtypes(
                    tuple(_weak_type(a) for a in inputs) + (None,) * ufunc.nout
                )
            except (TypeError, ValueError, np.exceptions.DTypePromotionError):
                loop = None
            if loop is not None:
                inputs = tuple(
                    a.astype(loop[i], copy=False) if isinstance(a, PythonNumber) else a
                    for i, a in enumerate(inputs)
                )
        return Tensor.__array_ufunc__(self, ufunc, method, *inputs, **kwargs)


def _weak_type(value: Any) -> Any:
    """What ``resolve_dtypes`` takes for an operand: its dtype, or a Python number's type."""
    if isinstance(value, PythonNumber):
        return np.dtype(np.bool_) if value.py_type is bool else value.py_type
    if isinstance(value, (Tensor, Variable, np.ndarray, np.generic)):
        return np.dtype(value.dtype)
    if isinstance(value, bool):
        return np.dtype(np.bool_)
    return type(value)


def _python_operator(stem: str, uf: np.ufunc, reflected: bool) -> Callable[..., Any]:
    """``PythonNumber.__<stem>__``: Python arithmetic with another Python number (the result
    is one too), NumPy's (NEP 50) with anything else."""
    strong = getattr(Tensor, f"__r{stem}__" if reflected else f"__{stem}__")
    py_op = getattr(py_operator, f"{stem}_" if stem in ("and", "or") else stem, None)

    def op(self: PythonNumber, other: Any) -> Any:
        if isinstance(other, _PYTHON_SEQUENCES) and py_op is not None:
            _sequence_operand(self, other, py_op, reflected)
        other_type = other.py_type if isinstance(other, PythonNumber) else type(other)
        if other_type not in PYTHON_SCALARS or py_op is None:
            return strong(self, other)
        a, b = (other_type, self.py_type) if reflected else (self.py_type, other_type)
        try:
            result_type = type(py_op(a(1), b(1)))
        except TypeError:  # no such Python operation (float & float): NumPy's error
            return strong(self, other)
        # Python computes in the wider operand type (bool -> int -> float -> complex); the
        # comparisons' operands promote the same way.
        wide = (
            type(a(1) + b(1))
            if result_type is bool and stem not in ("and", "or", "xor")
            else result_type
        )
        dtype = PYTHON_SCALARS[wide]
        x = self.astype(dtype, copy=False)
        # A Python operand stays an inline weak literal: NEP 50 gives ``dtype`` with x.
        y = other.astype(dtype, copy=False) if isinstance(other, PythonNumber) else other
        res = Tensor.__array_ufunc__(x, uf, "__call__", *((y, x) if reflected else (x, y)))
        return PythonNumber(res.node, res.context, result_type)

    op.__name__ = f"__r{stem}__" if reflected else f"__{stem}__"
    return op


#: Python's own sequences: a Python number with one of them is Python's operation (``[0] * n``
#: repeats, ``[1] + n`` raises), never NumPy's elementwise one (which a NumPy scalar does).
_PYTHON_SEQUENCES = (list, tuple, str, bytes)


def _sequence_operand(
    number: PythonNumber, sequence: Any, py_op: Callable, reflected: bool
) -> None:
    """Raise what Python raises for ``number <op> sequence`` (a TypeError), or, where Python
    would repeat the sequence ``number`` times, say that the count is not known yet."""
    sample = number.py_type(1)
    try:
        py_op(sequence, sample) if reflected else py_op(sample, sequence)
    except TypeError as e:
        raise TypeError(str(e)) from None
    raise errors.TracedBoolError(
        f"Repeating a Python {type(sequence).__name__} by the traced Python number "
        f"{describe_tensor(number)} at {user_frame_description()}: the count is only known "
        "when the graph runs, so Python cannot build the sequence while tracing. Fix: make "
        "an array from the data the count comes from (np.full_like(sel, value) for "
        "n = len(sel)), or give that dimension a size in input_signature."
    )


def _install_python_operators() -> None:
    from .operators import BINARY_OPERATORS, COMPARISON_OPERATORS

    for stem, uf in BINARY_OPERATORS:
        if stem == "matmul":
            continue
        setattr(PythonNumber, f"__{stem}__", _python_operator(stem, uf, False))
        setattr(PythonNumber, f"__r{stem}__", _python_operator(stem, uf, True))
    for stem, uf in COMPARISON_OPERATORS:
        setattr(PythonNumber, f"__{stem}__", _python_operator(stem, uf, False))

    def neg(self: PythonNumber) -> Any:
        wide = int if self.py_type is bool else self.py_type
        # (NumPy hands the call to ``__array_ufunc__``: a Tensor comes back)
        res = cast("Tensor", np.negative(Tensor.astype(self, PYTHON_SCALARS[wide], copy=False)))
        return PythonNumber(res.node, res.context, wide)

    setattr(PythonNumber, "__neg__", neg)  # noqa: B010 - as the operators above


_install_python_operators()


# -- ufunc methods ------------------------------------------------------------------------------


def ufunc_method_call(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """``ufunc.method(*inputs, **kwargs)`` without a graph op: an opaque call, or the clear
    error for ``ufunc.at`` (it writes into its first argument)."""
    if method == "at":
        # ``np.add.at(a, idx, b)``: functionalized — NumPy's own ``at`` on a copy, run at each
        # call as an opaque call, and ``a`` takes the result (a plain array is promoted)
        target, *rest = inputs
        if isinstance(target, np.ndarray) and not isinstance(target, Tensor):
            from .state import current_context

            ctx = current_context()
            target = ctx.promote(target) if ctx is not None else target
        if not isinstance(target, Tensor):
            raise mutating_error(f"np.{ufunc.__name__}.at", "its first argument")
        target.assign(numpy_call(_at_on_copy(ufunc), (target, *rest), kwargs))
        return None
    if method in MUTATING_UFUNC_METHODS:
        raise mutating_error(f"np.{ufunc.__name__}.{method}", "its first argument")
    func = ufunc if method == "__call__" else getattr(ufunc, method)
    return numpy_call(func, inputs, kwargs)


_AT_FUNCTIONS: dict[np.ufunc, Callable] = {}


def _at_on_copy(ufunc: np.ufunc) -> Callable:
    """``ufunc.at`` as a pure function: applied to a copy of the array, which it returns."""
    fn = _AT_FUNCTIONS.get(ufunc)
    if fn is None:

        def at(a: np.ndarray, *rest: Any) -> np.ndarray:
            out = np.array(a, copy=True)
            ufunc.at(out, *rest)
            return out

        at.__name__ = at.__qualname__ = f"{ufunc.__name__}.at"
        at.__module__ = "numpy"
        fn = _AT_FUNCTIONS[ufunc] = at
    return fn


FALLBACK["function"] = numpy_call
FALLBACK["ufunc"] = ufunc_method_call

__all__ = [
    "MUTATING_FUNCTIONS",
    "MUTATING_UFUNC_METHODS",
    "bind_call",
    "build_template",
    "find_out_aval",
    "function_name",
    "mutating_error",
    "numpy_call",
    "operand_aval",
    "rebuild",
    "stand_in",
    "ufunc_method_call",
]
