"""Symbolic tensors: stand-ins for arrays that record NumPy operations into a graph.

A :class:`Tensor` has an abstract value (shape with possibly-``None`` dims, dtype) but no data.
NumPy finds it through ``__array_ufunc__`` (ufuncs, operators) and ``__array_function__``
(``np.sum``, ``np.reshape``, ...), and every such call is recorded with :func:`bind` (here: it
records into the current trace). Operators come from the op table
(:class:`~kernel_ext.trace.operators.NumpyOperators`). Anything that needs the *data* (``bool(x)``,
``int(x)``, ``np.asarray(x)``, ``x.numpy()``) raises an error that says why and what to do.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .. import errors
from ..ir import UFUNC_OPS, UFUNC_REDUCTIONS, DynamicIndex, Node, OpGroup, OpKind
from .operators import NumpyOperators
from .state import current_context

if TYPE_CHECKING:
    from .context import TraceContext

#: ``np.func`` -> the handler that records it on traced values (``Tensor.__array_function__``);
#: :mod:`kernel_ext.trace.numpy_api` fills it when the trace layer is imported.
HANDLERS: dict[Callable, Callable[..., Any]] = {}

_UNSUPPORTED_UFUNC_KWARGS = ("where", "casting", "order", "subok", "signature", "axes", "axis")


class Tensor(NumpyOperators, inplace=True):
    """A traced value: what a NumPy array is while a ``kx.function`` is being traced.

    ``node`` is the graph node that computes it and ``context`` the trace that owns that node
    (neither name exists on ``np.ndarray``, so NumPy code never meets them by accident). Make
    tensors with :meth:`TraceContext.tensor <kernel_ext.trace.context.TraceContext.tensor>`.
    """

    __slots__ = ("node", "context", "__weakref__")
    __hash__ = None  # like np.ndarray: == is elementwise, so tensors are not dict keys

    def __init__(self, node: Node, context: "TraceContext") -> None:
        self.node = node
        self.context = context

    # -- static facts ---------------------------------------------------------------------
    @property
    def shape(self) -> tuple | None:
        """Static shape; ``None`` marks a dimension whose size is only known at run time."""
        return self.node.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.node.aval.dtype

    @property
    def ndim(self) -> int:
        if self.shape is None:
            raise errors.TracedBoolError(
                f"{describe_tensor(self)} has unknown rank, so .ndim has no Python value while "
                "tracing. Fix: give the argument a known rank in input_signature.")
        return len(self.shape)

    @property
    def size(self) -> int | None:
        return self.node.aval.size

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def op(self) -> Node:
        return self.node

    @property
    def T(self) -> "Tensor":
        return self.transpose()

    @property
    def mT(self) -> "Tensor":
        return np.swapaxes(self, -1, -2)

    def __len__(self) -> int:
        """The static size of the first dimension, as ``len(ndarray)`` gives it."""
        return self._static_length("len() of")

    def _static_length(self, what: str) -> int:
        """``shape[0]`` as a Python int, or the error NumPy (or tracing) gives without one."""
        if self.shape == ():
            raise TypeError("len() of unsized object" if what.startswith("len") else
                            "iteration over a 0-d array")
        if self.shape is None:
            raise errors.TracedBoolError(
                f"{what} {describe_tensor(self)} at {user_frame_description()}: its rank is "
                "unknown while tracing. Fix: give the argument a known rank in "
                "input_signature.")
        if self.shape[0] is None:
            raise errors.TracedBoolError(
                f"{what} {describe_tensor(self)} at {user_frame_description()}: its first "
                "dimension is only known at run time, so Python cannot count it while "
                "tracing. Fix: loop with a `for` statement over the array itself (`for row in "
                "x:` becomes a graph loop) or over kx.range(x.shape[0]), or give the dimension "
                "a size in input_signature.")
        return self.shape[0]

    def __repr__(self) -> str:
        shape = "<unknown>" if self.shape is None else self.shape
        state = "" if self.context.active else ", leaked"
        return f"<kx.Tensor '{self.node.name}' shape={shape} dtype={self.dtype.name}{state}>"

    __str__ = __repr__

    # -- NumPy protocols ------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.pop("out", None)
        result = _apply_ufunc(ufunc, method, inputs, kwargs)
        if out is None:
            return result
        targets = out if isinstance(out, tuple) else (out,)
        if len(targets) != 1 or not isinstance(targets[0], Tensor):
            raise errors.UnsupportedOpError(
                f"np.{ufunc.__name__}(..., out=...) inside a traced function needs out= to be a "
                "traced value; graphs cannot write into outside arrays. Fix: assign the result "
                "instead (y = np.op(...)).")
        targets[0]._rebind(result)
        return targets[0]

    def __array_function__(self, func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
        handler = HANDLERS.get(func)
        if handler is None:
            name = getattr(func, "__module__", "numpy").replace("numpy", "np", 1) + \
                "." + getattr(func, "__name__", repr(func))
            raise errors.UnsupportedOpError(
                f"{name} is not supported on traced values (called on {describe_tensor(self)} "
                f"while tracing '{self.context.function_name}'). Fix: express it with supported "
                "NumPy operations, or compute it outside the kx.function; "
                "kx.supported_numpy_functions() lists what is traced.")
        return handler(*args, **kwargs)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise errors.TracingConversionError(
            f"NumPy tried to convert the traced value {describe_tensor(self)} into a concrete "
            f"array at {user_frame_description()} while tracing '{self.context.function_name}'. "
            "np.asarray/np.array, Python containers of traced values and C extensions need real "
            "data, which a traced value does not have until the graph runs. Fix: use NumPy "
            "functions directly on the traced value (they are recorded into the graph), or do "
            "this outside the kx.function on its returned arrays.")

    # -- data accessors that cannot work while tracing --------------------------------------
    def _needs_value(self, what: str, fix: str) -> errors.TracedBoolError:
        where, _ = _usage_site()
        return errors.TracedBoolError(
            f"{what} a traced value {describe_tensor(self)} at {where} in "
            f"'{self.context.function_name}' needs its data, which only exists when the graph "
            f"runs. {fix}")

    def __bool__(self) -> bool:
        _, converted = _usage_site()
        if converted:
            how = ("AutoGraph is on, but this use is not one it converts: only `if`/`while`/"
                   "`for` statements, conditional expressions (`a if c else b`), `and`/`or`/"
                   "`not` and the builtins max/min/sum/any/all become graph operations; a "
                   "comprehension's `if`, `assert`, `bool()`, and code in functions AutoGraph "
                   "does not convert (the standard library, C extensions) need a Python bool. "
                   "Fix: write the test as an `if` statement, or use np.where(cond, a, b) / "
                   "kx.cond(pred, true_fn, false_fn); check data outside the kx.function.")
        else:
            how = ("This happens with `if`/`while`/`and`/`or`/`not` on a traced value while "
                   "AutoGraph is off (kx.function(autograph=False)) or in a function it could "
                   "not convert. Fix: keep AutoGraph on, or use np.where(cond, a, b) / "
                   "kx.cond(pred, true_fn, false_fn).")
        raise self._needs_value("Using as a Python bool", how)

    def __iter__(self) -> Any:
        """``x[0], x[1], ...`` along the first dimension, as iterating an ndarray yields.

        Each item is read when the iterator reaches it (so a write to ``x`` between items is
        seen, as with NumPy's views). The first dimension must be static; a ``for`` statement
        over the traced value itself is converted by AutoGraph and works without that.
        """
        n = self._static_length("Iterating in Python over")
        return (self[i] for i in range(n))

    def __index__(self) -> int:
        raise self._needs_value(
            "Using as a Python int (a list or plain-array index, a shape, a count)",
            "Fix: pass the count as a Python int (or loop with kx.range(n)); index a plain "
            "array with np.take(array, i), which the graph records.")

    def __int__(self) -> int:
        raise self._needs_value("int() of", "Fix: use x.astype(np.int64) to stay in the graph.")

    def __float__(self) -> float:
        raise self._needs_value("float() of",
                                "Fix: use x.astype(np.float64) to stay in the graph.")

    def __complex__(self) -> complex:
        raise self._needs_value("complex() of", "Fix: use x.astype(np.complex128).")

    def item(self, *args: Any) -> Any:
        raise errors.SymbolicValueError(
            f"{describe_tensor(self)}.item() has no value while tracing; return the value from the "
            "function instead (results come back as NumPy values).")

    def numpy(self) -> np.ndarray:
        if not self.context.active:
            raise errors.SymbolicValueError(
                f"{describe_tensor(self)} leaked out of its trace of "
                f"'{self.context.function_name}' and has no value: .numpy() is not available. "
                "Fix: return it from the function; kx.function results are already NumPy "
                "arrays.")
        raise errors.SymbolicValueError(
            f"{describe_tensor(self)} is a traced value inside '{self.context.function_name}': it "
            "has no value yet, so .numpy() is not available. Fix: return it (results are NumPy "
            "arrays) or print it at run time with kx.print(...).")

    def tolist(self) -> list:
        return self.item()

    # -- mutation is rebinding: the graph stays functional ---------------------------------
    def _rebind(self, value: Any) -> None:
        if not isinstance(value, Tensor):
            raise TypeError("internal: rebind needs a traced value")
        if value.dtype != self.dtype:
            if not np.can_cast(value.dtype, self.dtype, casting="same_kind"):
                raise TypeError(f"Cannot cast ufunc output from dtype('{value.dtype}') to "
                                f"dtype('{self.dtype}') with casting rule 'same_kind'")
            value = value.astype(self.dtype)
        if self.shape is not None and value.shape is not None and \
                len(value.shape) > len(self.shape):
            raise ValueError(f"non-broadcastable output operand with shape {self.shape} doesn't "
                             f"match the broadcast shape {value.shape}")
        # The object now names the new value, in the trace that computed it (a branch or loop
        # body may mutate an outer array: AutoGraph carries the new value out as state).
        self.node, self.context = value.node, value.context

    def __setitem__(self, key: Any, value: Any) -> None:
        template, dyn = build_template(key)
        result = bind(OpKind.SETITEM, (self, value, *dyn), {"index": template})
        self.node, self.context = result.node, result.context

    def __getitem__(self, key: Any) -> "Tensor":
        template, dyn = build_template(key)
        return bind(OpKind.GETITEM, (self, *dyn), {"index": template})

    # -- ndarray methods ------------------------------------------------------------------
    def astype(self, dtype: Any, copy: bool = True) -> "Tensor":
        dtype = np.dtype(dtype)
        if dtype == self.dtype and not copy:
            return self
        return bind(OpKind.CAST, (self,), {"dtype": dtype})

    def reshape(self, *shape: Any, order: str = "C") -> "Tensor":
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return np.reshape(self, shape, order=order)

    def transpose(self, *axes: Any) -> "Tensor":
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return np.transpose(self, axes if axes else None)

    def flatten(self, order: str = "C") -> "Tensor":
        return np.reshape(self, (-1,), order=order)

    def ravel(self, order: str = "C") -> "Tensor":
        return np.reshape(self, (-1,), order=order)

    def squeeze(self, axis: Any = None) -> "Tensor":
        return np.squeeze(self, axis=axis)

    def swapaxes(self, a: int, b: int) -> "Tensor":
        return np.swapaxes(self, a, b)

    def copy(self, order: str = "C") -> "Tensor":
        return np.copy(self)

    def dot(self, other: Any) -> "Tensor":
        return np.dot(self, other)

    def clip(self, min: Any = None, max: Any = None) -> "Tensor":
        return np.clip(self, min, max)

    def round(self, decimals: int = 0) -> "Tensor":
        return np.round(self, decimals)

    def conj(self) -> "Tensor":
        return np.conjugate(self)

    def take(self, indices: Any, axis: int | None = None) -> "Tensor":
        return np.take(self, indices, axis=axis)

    def argsort(self, axis: int = -1) -> "Tensor":
        return np.argsort(self, axis=axis)

    def sort(self, axis: int = -1) -> None:
        self._rebind(np.sort(self, axis=axis))

    def cumsum(self, axis: Any = None, dtype: Any = None) -> "Tensor":
        return np.cumsum(self, axis=axis, dtype=dtype)

    def cumprod(self, axis: Any = None, dtype: Any = None) -> "Tensor":
        return np.cumprod(self, axis=axis, dtype=dtype)


def _reduction_method(name: str) -> Callable[..., Tensor]:
    fn = getattr(np, name)

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return fn(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"Traced ``np.{name}``."
    return method


# Every reduction op is the ndarray method of its name (the op table's naming rule).
for _kind in OpKind:
    if _kind.group is OpGroup.REDUCTION:
        setattr(Tensor, _kind.value, _reduction_method(_kind.value))


# -- ufunc dispatch -------------------------------------------------------------------------

def _apply_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    bad = [k for k in kwargs if k in _UNSUPPORTED_UFUNC_KWARGS or k not in (
        "dtype", "axis", "keepdims", "initial")]
    if bad and not (method != "__call__" and set(bad) <= {"axis"}):
        raise errors.UnsupportedOpError(
            f"np.{ufunc.__name__}(..., {bad[0]}=...) is not supported on traced values. Fix: "
            "drop the argument and combine with np.where / astype instead.")
    if method == "__call__":
        if ufunc is np.matmul:
            return bind(OpKind.MATMUL, inputs)
        if ufunc is np.divmod:
            return (np.floor_divide(*inputs), np.remainder(*inputs))
        kind = UFUNC_OPS.get(ufunc)
        if kind is None:
            raise errors.UnsupportedOpError(
                f"the ufunc np.{ufunc.__name__} is not supported on traced values yet. Fix: "
                "express it with supported ufuncs, or compute it outside the kx.function.")
        attrs = {"dtype": np.dtype(kwargs["dtype"])} if kwargs.get("dtype") is not None else {}
        return bind(kind, inputs, attrs)
    if method == "reduce" and ufunc in UFUNC_REDUCTIONS and "initial" not in kwargs:
        kind = UFUNC_REDUCTIONS[ufunc]
        attrs = {"axis": kwargs.get("axis", 0), "keepdims": bool(kwargs.get("keepdims", False))}
        if kwargs.get("dtype") is not None:
            attrs["dtype"] = np.dtype(kwargs["dtype"])
        return bind(kind, inputs, attrs)
    if method == "accumulate" and ufunc in (np.add, np.multiply):
        kind = OpKind.CUMSUM if ufunc is np.add else OpKind.CUMPROD
        return bind(kind, inputs, {"axis": kwargs.get("axis", 0)})
    raise errors.UnsupportedOpError(
        f"np.{ufunc.__name__}.{method} is not supported on traced values. Fix: use the matching "
        "NumPy function (np.sum, np.max, np.cumsum, ...) instead.")


# -- indexing -------------------------------------------------------------------------------

def build_template(key: Any) -> tuple[tuple, list[Any]]:
    """Split an index into a static template and its traced parts (``DynamicIndex`` slots).

    A traced value or a ``kx.Variable`` (the two :class:`NumpyOperators`) in the index is a
    slot read at run time; ``bind`` lifts a variable to a read of its current value.
    """
    items = key if isinstance(key, tuple) else (key,)
    dyn: list[Any] = []

    def slot(value: Any) -> Any:
        if isinstance(value, NumpyOperators):
            dyn.append(value)
            return DynamicIndex(len(dyn))
        return value

    template: list[Any] = []
    for item in items:
        if isinstance(item, slice):
            template.append(slice(slot(item.start), slot(item.stop), slot(item.step)))
        elif isinstance(item, NumpyOperators):
            template.append(slot(item))
        elif isinstance(item, list):
            arr = np.asarray(item)
            arr.setflags(write=False)
            template.append(arr if arr.dtype != object else item)
        elif isinstance(item, np.ndarray):
            arr = np.array(item, copy=True)
            arr.setflags(write=False)
            template.append(arr)
        elif isinstance(item, (int, np.integer)):
            template.append(int(item))
        elif item is None or item is Ellipsis:
            template.append(item)
        else:
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                f"integer or boolean arrays are valid indices; got {type(item).__name__}")
    return tuple(template), dyn


# -- describing, recording ------------------------------------------------------------------

def describe_tensor(tensor: Tensor) -> str:
    """``%name (float32[2, None])``: how error messages name a traced value."""
    node = tensor.node
    return f"%{node.name} ({node.aval})"


def leaked_error(tensor: Tensor) -> errors.LeakedTensorError:
    """The error for ``tensor`` used outside the trace (or the branch/body) that made it."""
    ctx = tensor.context
    if ctx.parent is not None:
        return errors.LeakedTensorError(
            f"The traced value {describe_tensor(tensor)} was created inside the loop body or "
            f"branch '{ctx.graph.name}' of '{ctx.function_name}' and used outside it (for "
            "example appended to a Python list in a loop over a traced value: the body is "
            "traced only once). Fix: collect per-iteration values in a kx.TensorArray "
            "(ta = ta.write(i, value); ta.stack()), or carry the value as a loop variable.")
    return errors.LeakedTensorError(
        f"The traced value {describe_tensor(tensor)} was created while tracing "
        f"'{ctx.function_name}' and has leaked out of that trace (it was stored in a global, an "
        "attribute or a list and used later). Outside its trace it has no value. Fix: return "
        "it from the function (results come back as NumPy arrays), or keep state in a "
        "kx.Variable and assign to it.")


def bind(op: OpKind, args: Sequence[Any], attrs: dict | None = None,
         name: str | None = None) -> "Tensor | None":
    """Record ``op(*args)`` in this thread's current trace and return the traced result (JAX's
    ``bind``): :meth:`TraceContext.bind <kernel_ext.trace.context.TraceContext.bind>` of the
    innermost trace. Outside any trace a traced argument has leaked."""
    ctx = current_context()
    if ctx is None:
        for a in args:
            if isinstance(a, Tensor):
                raise leaked_error(a)
        raise RuntimeError("internal: bind() outside any trace")
    return ctx.bind(op, args, attrs, name)


def _usage_site() -> tuple[str, bool]:
    """Where the user's code used a traced value, and whether AutoGraph converted that code.

    Code AutoGraph generated reads its runtime operators through the free variable ``ag__``;
    any such frame on the stack means the trace runs with AutoGraph on (the trace layer asks
    the frames rather than importing the autograph layer above it).
    """
    converted = False
    frame = sys._getframe(1)
    while frame is not None:
        if "ag__" in frame.f_code.co_freevars:
            converted = True
            break
        frame = frame.f_back
    return user_frame_description(), converted


def user_frame_description() -> str:
    """``file:line: source`` of the innermost frame outside kernel_ext and NumPy."""
    import linecache
    frame = sys._getframe(1)
    while frame is not None:
        fname = frame.f_code.co_filename.replace("\\", "/")
        if "/kernel_ext/" not in fname and "/numpy/" not in fname:
            line = linecache.getline(fname, frame.f_lineno).strip()
            return f"{fname}:{frame.f_lineno}" + (f": `{line}`" if line else "")
        frame = frame.f_back
    return "<unknown location>"
