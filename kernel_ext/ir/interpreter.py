"""The NumPy reference interpreter: the living specification of every op.

``LOWER[op](node)`` returns a plain callable that computes the node from its argument values
(input arrays and inline literals, in ``node.args`` order). :func:`interpret` runs a graph node
by node with these callables; the NumPy backend binds the same callables into generated Python
code, so both executors share one definition of each op's meaning.
"""

from __future__ import annotations

import copy
import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .abstract import DynamicIndex
from .calls import call_name, check_result
from .graph import Graph, Node
from .ops import OpGroup, OpKind
from .registry import OpTable

Lowering = Callable[[Node], Callable[..., Any]]
#: Each op's reference lowering: ``LOWER[op](node)`` is a callable of its argument values.
LOWER: OpTable[Lowering] = OpTable("reference lowering")
_lower = LOWER.register


def _ufunc_lowering(node: Node) -> Callable[..., Any]:
    ufunc = node.op.ufunc
    assert ufunc is not None  # registered for UFUNC_OPS only
    if "dtype" in node.attrs:
        return functools.partial(ufunc, dtype=node.attrs["dtype"])
    return ufunc


for _kind in OpKind:
    if _kind.ufunc is not None:
        LOWER.add(_kind, _ufunc_lowering)


@_lower(OpKind.WHERE)
def _where(node: Node) -> Callable[..., Any]:
    return np.where


@_lower(OpKind.CAST)
def _cast(node: Node) -> Callable[..., Any]:
    dtype = np.dtype(node.attrs["dtype"])
    return lambda x: np.asarray(x).astype(dtype)


@_lower(OpKind.CLIP)
def _clip(node: Node) -> Callable[..., Any]:
    return np.clip


def _reduce_lowering(node: Node) -> Callable[..., Any]:
    return functools.partial(node.op.numpy_function, **node.params)


#: Reductions that are ufunc methods: lowered as the method of the node's ufunc (below)
_UFUNC_METHOD_REDUCTIONS = (OpKind.UFUNC_REDUCE, OpKind.UFUNC_REDUCEAT)

for _kind in OpKind:
    if _kind.group is OpGroup.REDUCTION and _kind not in _UFUNC_METHOD_REDUCTIONS:
        LOWER.add(_kind, _reduce_lowering)


@_lower(OpKind.CUMSUM, OpKind.CUMPROD)
def _scan(node: Node) -> Callable[..., Any]:
    fn = np.cumsum if node.op is OpKind.CUMSUM else np.cumprod
    return functools.partial(fn, **node.params)


@_lower(OpKind.RESHAPE)
def _reshape(node: Node) -> Callable[..., Any]:
    shape = node.attrs["shape"]
    return lambda x: np.reshape(x, shape)


@_lower(OpKind.TRANSPOSE)
def _transpose(node: Node) -> Callable[..., Any]:
    return functools.partial(np.transpose, axes=node.attrs.get("axes"))


@_lower(OpKind.EXPAND_DIMS)
def _expand_dims(node: Node) -> Callable[..., Any]:
    return functools.partial(np.expand_dims, axis=node.attrs["axis"])


@_lower(OpKind.SQUEEZE)
def _squeeze(node: Node) -> Callable[..., Any]:
    return functools.partial(np.squeeze, axis=node.attrs.get("axis"))


@_lower(OpKind.BROADCAST_TO)
def _broadcast_to(node: Node) -> Callable[..., Any]:
    shape = node.attrs["shape"]
    return lambda x: np.broadcast_to(x, shape)


@_lower(OpKind.CONCATENATE)
def _concatenate(node: Node) -> Callable[..., Any]:
    kw = dict(node.params)
    return lambda *xs: np.concatenate(xs, **kw)


@_lower(OpKind.STACK)
def _stack(node: Node) -> Callable[..., Any]:
    axis = node.attrs.get("axis", 0)
    return lambda *xs: np.stack(xs, axis=axis)


@_lower(OpKind.FLIP)
def _flip(node: Node) -> Callable[..., Any]:
    return functools.partial(np.flip, axis=node.attrs.get("axis"))


@_lower(OpKind.COPY)
def _copy(node: Node) -> Callable[..., Any]:
    return np.copy


def build_index(template: tuple[Any, ...], dyn: Sequence[Any]) -> tuple[Any, ...]:
    """The concrete index: template slots (also inside slices) filled from ``dyn``."""

    def fill(c: Any) -> Any:
        if isinstance(c, DynamicIndex):
            return dyn[c.position - 1]
        if isinstance(c, slice):
            return slice(fill(c.start), fill(c.stop), fill(c.step))
        return c

    return tuple(fill(c) for c in template)


def _is_static(template: tuple[Any, ...]) -> bool:
    return not any(
        isinstance(c, DynamicIndex)
        or (
            isinstance(c, slice)
            and any(isinstance(p, DynamicIndex) for p in (c.start, c.stop, c.step))
        )
        for c in template
    )


@_lower(OpKind.GETITEM)
def _getitem(node: Node) -> Callable[..., Any]:
    template = node.attrs["index"]
    if _is_static(template):
        return lambda x: x[template]
    return lambda x, *dyn: x[build_index(template, dyn)]


@_lower(OpKind.SETITEM)
def _setitem(node: Node) -> Callable[..., Any]:
    template = node.attrs["index"]

    def setitem(x: Any, value: Any, *dyn: Any) -> np.ndarray:
        out = np.array(x, copy=True)
        out[build_index(template, dyn)] = value
        return out

    return setitem


@_lower(OpKind.SORT, OpKind.ARGSORT)
def _sort(node: Node) -> Callable[..., Any]:
    fn = np.sort if node.op is OpKind.SORT else np.argsort
    return functools.partial(fn, **node.params)


# -- named NumPy functions and data-dependent shapes -------------------------------------------
# Each is NumPy's own function on the static attrs, so results are NumPy's bit for bit; a
# ``None`` dim of the node's abstract value is whatever length NumPy returns at run time.


@_lower(OpKind.PAD)
def _pad(node: Node) -> Callable[..., Any]:
    kw = {k: v for k, v in node.params.items() if k != "pad_width"}
    # one (before, after) pair per axis; an int array even for a 0-d input (no pairs)
    widths = np.asarray(node.attrs["pad_width"], dtype=np.intp).reshape(-1, 2)
    return lambda x: np.pad(x, widths, **kw)


@_lower(OpKind.DIAGFLAT)
def _diagflat(node: Node) -> Callable[..., Any]:
    return functools.partial(np.diagflat, k=node.attrs.get("k", 0))


@_lower(OpKind.INSERT)
def _insert(node: Node) -> Callable[..., Any]:
    obj, axis = node.attrs["obj"], node.attrs.get("axis")
    if isinstance(obj, tuple):
        obj = list(obj)  # a sequence of indices, as written (np.insert reads lists and arrays)
    return lambda arr, values: np.insert(arr, obj, values, axis=axis)


@_lower(OpKind.BINCOUNT)
def _bincount(node: Node) -> Callable[..., Any]:
    minlength = node.attrs.get("minlength", 0)
    return lambda x, weights: np.bincount(x, weights, minlength)


@_lower(OpKind.NONZERO)
def _nonzero(node: Node) -> Callable[..., Any]:
    return np.nonzero


@_lower(OpKind.ARGWHERE)
def _argwhere(node: Node) -> Callable[..., Any]:
    return np.argwhere


@_lower(OpKind.COMPRESS)
def _compress(node: Node) -> Callable[..., Any]:
    axis = node.attrs.get("axis")
    return lambda condition, a: np.compress(condition, a, axis)


@_lower(OpKind.TRIM_ZEROS)
def _trim_zeros(node: Node) -> Callable[..., Any]:
    return functools.partial(np.trim_zeros, **node.params)


@_lower(OpKind.UNIQUE)
def _unique(node: Node) -> Callable[..., Any]:
    return functools.partial(np.unique, **node.params)


@_lower(OpKind.ARGPARTITION)
def _argpartition(node: Node) -> Callable[..., Any]:
    kth = node.attrs["kth"]
    kw = {k: v for k, v in node.params.items() if k != "kth"}
    return lambda x: np.argpartition(x, list(kth) if isinstance(kth, tuple) else kth, **kw)


@_lower(OpKind.HISTOGRAM)
def _histogram(node: Node) -> Callable[..., Any]:
    static_bins: Any = node.attrs.get("bins")
    kw = {k: v for k, v in node.params.items() if k != "bins"}

    def histogram(a: Any, bins: Any, weights: Any) -> tuple[Any, ...]:
        return np.histogram(a, bins=static_bins if bins is None else bins, weights=weights, **kw)

    return histogram


@_lower(OpKind.INTERP)
def _interp(node: Node) -> Callable[..., Any]:
    return np.interp


# -- linalg, fft and array helpers -------------------------------------------------------------
# NumPy's own function with the node's static attrs, argument for argument.


@_lower(OpKind.REAL)
def _real(node: Node) -> Callable[..., Any]:
    return np.real


@_lower(OpKind.IMAG)
def _imag(node: Node) -> Callable[..., Any]:
    return np.imag


@_lower(OpKind.SEARCHSORTED)
def _searchsorted(node: Node) -> Callable[..., Any]:
    side = node.attrs.get("side", "left")
    return lambda a, v, sorter: np.searchsorted(a, v, side, sorter)


@_lower(OpKind.DIGITIZE)
def _digitize(node: Node) -> Callable[..., Any]:
    right = node.attrs.get("right", False)
    return lambda x, bins: np.digitize(x, bins, right)


@_lower(OpKind.PARTITION)
def _partition(node: Node) -> Callable[..., Any]:
    kth = node.attrs["kth"]
    kw = {k: v for k, v in node.params.items() if k != "kth"}
    return lambda x: np.partition(x, list(kth) if isinstance(kth, tuple) else kth, **kw)


@_lower(OpKind.LEXSORT)
def _lexsort(node: Node) -> Callable[..., Any]:
    axis = node.attrs.get("axis", -1)
    if node.attrs.get("array"):  # one array whose rows are the keys
        return lambda keys: np.lexsort(keys, axis=axis)
    return lambda *keys: np.lexsort(keys, axis=axis)


@_lower(OpKind.ISIN)
def _isin(node: Node) -> Callable[..., Any]:
    return functools.partial(np.isin, **node.params)


@_lower(OpKind.RAVEL_MULTI_INDEX)
def _ravel_multi_index(node: Node) -> Callable[..., Any]:
    kw = dict(node.params)
    dims = kw.pop("dims")
    return lambda *index: np.ravel_multi_index(index, dims, **kw)


@_lower(OpKind.UNRAVEL_INDEX)
def _unravel_index(node: Node) -> Callable[..., Any]:
    return functools.partial(np.unravel_index, **node.params)


@_lower(OpKind.PACKBITS)
def _packbits(node: Node) -> Callable[..., Any]:
    return functools.partial(np.packbits, **node.params)


@_lower(OpKind.UNPACKBITS)
def _unpackbits(node: Node) -> Callable[..., Any]:
    return functools.partial(np.unpackbits, **node.params)


@_lower(OpKind.CONSTANT)
def _constant(node: Node) -> Callable[..., Any]:
    value = node.attrs["value"]
    return lambda: value


@_lower(OpKind.READ_VARIABLE)
def _read_variable(node: Node) -> Callable[..., Any]:
    var = node.attrs["variable"]
    return lambda: var.storage


@_lower(OpKind.ASSIGN_VARIABLE)
def _assign(node: Node) -> Callable[..., Any]:
    store: Callable[..., Any] = node.attrs["variable"].store
    return store


@_lower(OpKind.ASSIGN_ADD_VARIABLE)
def _assign_add(node: Node) -> Callable[..., Any]:
    var = node.attrs["variable"]
    return lambda v: var.store(np.add(var.peek(), v), owned=True)


@_lower(OpKind.ASSIGN_SUB_VARIABLE)
def _assign_sub(node: Node) -> Callable[..., Any]:
    var = node.attrs["variable"]
    return lambda v: var.store(np.subtract(var.peek(), v), owned=True)


def format_print(template: tuple[Any, ...], values: Sequence[Any], sep: str, end: str) -> str:
    """``kx.print`` text: literal parts as-is, values as NumPy prints them."""
    it = iter(values)
    parts = [str(next(it)) if part is None else part for part in template]
    return sep.join(parts) + end


@_lower(OpKind.PRINT)
def _print(node: Node) -> Callable[..., Any]:
    template, sep, end = node.attrs["template"], node.attrs["sep"], node.attrs["end"]

    def do_print(*values: Any) -> None:
        # Looked up at run time: Jupyter swaps sys.stdout per cell.
        sys.stdout.write(format_print(template, values, sep, end))

    return do_print


# -- run-time checks ----------------------------------------------------------------------------

#: How a traced value appears in a run-time check's message, as eager Python has it: a value
#: NumPy gives as a Python number (``PythonNumber``, a range index) or as a NumPy scalar.
_MESSAGE_FORMS: dict[str, Callable[[Any], Any]] = {
    "int": lambda v: int(v),
    "float": lambda v: float(v),
    "bool": lambda v: bool(v),
    "complex": lambda v: complex(v),
    "scalar": lambda v: v[()] if isinstance(v, np.ndarray) else v,
    "array": lambda v: v,
}
_CONVERSIONS: dict[str | None, Callable[[Any], Any]] = {
    None: lambda v: v,
    "s": str,
    "r": repr,
    "a": ascii,
}


def check_error(
    error: BaseException, args: tuple[Any, ...], values: Sequence[Any]
) -> BaseException:
    """The exception a failed run-time check raises: ``error`` (made while tracing) with each
    of its arguments described by ``args`` rebuilt from the run-time ``values``: ``None``
    (the traced argument as it is), ``("value", slot, form)`` (a traced value itself) or
    ``("message", parts)`` (an f-string: literal text, or ``(slot, form, conversion,
    spec)`` formatted as Python formats ``f"{value!conversion:spec}"``)."""
    try:
        out = copy.copy(error)  # a fresh one per failure: its traceback is this call's
    except Exception:  # an exception class whose constructor copy cannot call
        out = error
    if all(a is None for a in args):
        return out
    rebuilt = []
    for original, how in zip(error.args, args):
        if how is None:
            rebuilt.append(original)
        elif how[0] == "value":
            rebuilt.append(_MESSAGE_FORMS[how[2]](values[how[1]]))
        else:
            rebuilt.append(
                "".join(
                    part
                    if isinstance(part, str)
                    else format(
                        _CONVERSIONS[part[2]](_MESSAGE_FORMS[part[1]](values[part[0]])), part[3]
                    )
                    for part in how[1]
                )
            )
    out.args = tuple(rebuilt)
    return out


@_lower(OpKind.CHECK)
def _check(node: Node) -> Callable[..., Any]:
    """Inputs: the condition, the message's values, then ``writes`` pairs (an argument, its
    value now): arguments updated in place before the check keep the update when it raises,
    as eagerly (the executor would write them back only when the call completes)."""
    error, args, writes = node.attrs["error"], node.attrs["args"], node.attrs.get("writes", 0)

    def check(pred: Any, *inputs: Any) -> None:
        if pred:
            split = len(inputs) - 2 * writes
            for k in range(split, len(inputs), 2):
                if inputs[k] is not inputs[k + 1]:
                    np.copyto(inputs[k], inputs[k + 1])
            raise check_error(error, args, inputs[:split])

    return check


@_lower(OpKind.DIM)
def _dim(node: Node) -> Callable[..., Any]:
    axis = node.attrs["axis"]
    return lambda x: np.int64(np.shape(x)[axis])


@_lower(OpKind.ARANGE)
def _arange(node: Node) -> Callable[..., Any]:
    dtype = np.dtype(node.attrs["dtype"])
    return lambda start, stop, step: np.arange(start, stop, step, dtype=dtype)


def tensor_array_write(
    buffer: np.ndarray,
    index: Any,
    value: Any,
    *,
    dtype: np.dtype,
    size: int,
    dynamic_size: bool,
    in_place: bool = False,
) -> np.ndarray:
    """A new buffer with ``value`` at row ``index``; rows are allocated on the first write
    (when the element shape becomes known) and grown geometrically when dynamic. ``buffer``
    ``None`` is an empty one (the gradient's stacking loops start from it). ``in_place``
    (the executors' reinplacing, when nothing reads ``buffer`` afterwards): a write within
    its rows goes into ``buffer`` itself instead of a copy."""
    value = np.asarray(value)
    if buffer is None:
        buffer = np.zeros((0,), dtype)
    if value.dtype != dtype:
        if not np.can_cast(value.dtype, dtype, casting="same_kind"):
            raise TypeError(
                f"TensorArray of dtype {dtype} cannot hold a {value.dtype} value "
                f"(same_kind casting). Fix: .astype(np.{dtype.name}) first."
            )
        value = value.astype(dtype)
    i = int(index)
    if i < 0:
        raise IndexError(f"TensorArray index {i} is negative")
    rows = buffer.shape[0]
    if rows == 0:
        if i >= size and not dynamic_size:
            raise IndexError(
                f"TensorArray index {i} is out of range for size {size}; "
                "Fix: TensorArray(..., dynamic_size=True) to let it grow"
            )
        out = np.zeros((max(size, i + 1),) + value.shape, dtype)
    elif buffer.shape[1:] != value.shape:
        raise ValueError(
            f"TensorArray elements must all have one shape: {buffer.shape[1:]} "
            f"was written before, now {value.shape}"
        )
    elif i >= rows:
        if not dynamic_size:
            raise IndexError(
                f"TensorArray index {i} is out of range for size {rows}; "
                "Fix: TensorArray(..., dynamic_size=True) to let it grow"
            )
        out = np.zeros((max(i + 1, 2 * rows),) + value.shape, dtype)
        out[:rows] = buffer
    else:
        out = buffer if in_place else buffer.copy()
    out[i] = value
    return out


@_lower(OpKind.TENSOR_ARRAY_WRITE)
def _tensor_array_write(node: Node) -> Callable[..., Any]:
    return functools.partial(tensor_array_write, **node.params)


@_lower(OpKind.NUMPY_CALL, OpKind.RANDOM_CALL)
def _opaque_call(node: Node) -> Callable[..., Any]:
    """The callable as it is, on the static arguments and the run-time inputs; its result is
    checked against the traced abstract value (a stand-in found it: ``ir/calls.py``)."""
    fn, template, out_aval = node.attrs["fn"], node.attrs["template"], node.attrs["out_aval"]
    describe = node.attrs.get("_where") or call_name(fn)
    if template.constant() and out_aval is not None:
        # ``rng.normal(0.0, 0.05, size=(30,))``: arguments filled once (filling them at
        # every call cost about as much as a small draw itself)
        args, kwargs = template.fill(())

        def call_constant() -> Any:
            return check_result(fn(*args, **kwargs), out_aval, describe)

        return call_constant

    def call(*values: Any) -> Any:
        args, kwargs = template.fill(values)
        result = fn(*args, **kwargs)
        return None if out_aval is None else check_result(result, out_aval, describe)

    return call


@_lower(OpKind.GET_OUTPUT)
def _get_output(node: Node) -> Callable[..., Any]:
    index = node.attrs["index"]
    return lambda values: values[index]


@_lower(OpKind.COND)
def _cond(node: Node) -> Callable[..., Any]:
    true_graph, false_graph = node.attrs["branches"]

    def cond(pred: Any, *operands: Any) -> tuple[Any, ...]:
        return tuple(interpret(true_graph if pred else false_graph, operands))

    return cond


@_lower(OpKind.WHILE)
def _while(node: Node) -> Callable[..., Any]:
    cond_graph, body_graph = node.attrs["cond"], node.attrs["body"]
    n_vars = node.attrs["n_vars"]

    def loop(*args: Any) -> tuple[Any, ...]:
        values, captures = list(args[:n_vars]), list(args[n_vars:])
        while interpret(cond_graph, values + captures)[0]:
            values = interpret(body_graph, values + captures)
        return tuple(values)

    return loop


# -- ufunc methods and the nan family ---------------------------------------------------------
# Multi-output ufuncs (frexp, modf, divmod) return their tuple through the generic ufunc
# lowering, and the nan reductions, median and the quantiles are NumPy's functions through the
# generic reduction lowering (``q``/``method`` are keyword attrs).


@_lower(OpKind.NANCUMSUM, OpKind.NANCUMPROD)
def _nan_scan(node: Node) -> Callable[..., Any]:
    fn = np.nancumsum if node.op is OpKind.NANCUMSUM else np.nancumprod
    return functools.partial(fn, **node.params)


def _ufunc_method(method: str) -> Lowering:
    """``ufunc.<method>`` with the node's keyword attrs (``attrs["ufunc"]`` names the ufunc)."""

    def lowering(node: Node) -> Callable[..., Any]:
        kwargs = {k: v for k, v in node.params.items() if k != "ufunc"}
        return functools.partial(getattr(node.attrs["ufunc"], method), **kwargs)

    return lowering


LOWER.add(OpKind.UFUNC_REDUCE, _ufunc_method("reduce"))
LOWER.add(OpKind.UFUNC_ACCUMULATE, _ufunc_method("accumulate"))
LOWER.add(OpKind.UFUNC_REDUCEAT, _ufunc_method("reduceat"))


def ufunc_at(ufunc: np.ufunc, template: tuple[Any, ...], a: Any, b: Any, *dyn: Any) -> np.ndarray:
    """``ufunc.at`` as a pure function: the updated copy of ``a`` (``b`` None: a unary ufunc)."""
    out = np.array(a, copy=True)
    index = build_index(template, dyn)
    if b is None:
        ufunc.at(out, index)
    else:
        ufunc.at(out, index, b)
    return out


@_lower(OpKind.UFUNC_AT)
def _ufunc_at(node: Node) -> Callable[..., Any]:
    return functools.partial(ufunc_at, node.attrs["ufunc"], node.attrs["index"])


def interpret(graph: Graph, inputs: Sequence[Any]) -> list[Any]:
    """Run ``graph`` on concrete ``inputs`` (one per placeholder), node by node, with NumPy."""
    if len(inputs) != len(graph.inputs):
        raise ValueError(
            f"graph {graph.name!r} takes {len(graph.inputs)} inputs, got {len(inputs)}"
        )
    env: dict[Node, Any] = dict(zip(graph.inputs, inputs))
    for node in graph.nodes:
        if node.op is OpKind.PLACEHOLDER:
            continue
        fn = LOWER[node.op](node)
        args = [env[a] if isinstance(a, Node) else a for a in node.args]
        env[node] = fn(*args)
    return [env[o] for o in graph.outputs]
