"""Symbolic tensors: stand-ins for arrays that record NumPy operations into a graph.

A :class:`Tensor` has an abstract value (shape with possibly-``None`` dims, dtype) but no data.
NumPy finds it through ``__array_ufunc__`` (ufuncs, operators) and ``__array_function__``
(``np.sum``, ``np.reshape``, ...), and every such call is recorded with :func:`bind` (here: it
records into the current trace). Operators come from the op table
(:class:`~kernel_ext.trace.operators.NumpyOperators`). Anything that needs the *data* (``bool(x)``,
``int(x)``, ``np.asarray(x)``, ``x.numpy()``) raises an error that says why and what to do.
"""

from __future__ import annotations

import itertools
import sys
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .. import errors
from ..ir import (NDARRAY_METHODS, UFUNC_OPS, UFUNC_REDUCTIONS, DynamicIndex, Node, OpGroup,
                  OpKind)
from .operators import NumpyOperators
from .state import current_context, format_location

if TYPE_CHECKING:
    from .context import TraceContext

#: ``np.func`` -> the handler that records it on traced values (``Tensor.__array_function__``);
#: :mod:`kernel_ext.trace.numpy_api` fills it when the trace layer is imported.
HANDLERS: dict[Callable, Callable[..., Any]] = {}

#: What the NumPy protocols do with a call no op covers, set by :mod:`kernel_ext.trace.opaque`
#: when the trace layer is imported: ``FALLBACK["function"](func, args, kwargs)`` for a NumPy
#: function HANDLERS lacks, ``FALLBACK["ufunc"](ufunc, method, inputs, kwargs)`` for a ufunc
#: (method) without an op. Both run it as an opaque NumPy call inside the graph.
FALLBACK: dict[str, Callable[..., Any]] = {}

#: ``UFUNC_METHODS[method](ufunc, inputs, kwargs)`` records ``ufunc.<method>`` (reduce,
#: accumulate, reduceat, outer, at) on traced values; :mod:`kernel_ext.trace.numpy_api` fills
#: it, and falls back to an opaque call where no op covers a call.
UFUNC_METHODS: dict[str, Callable[..., Any]] = {}

#: ``GUFUNCS[ufunc](*inputs, **kwargs)`` records a call of a generalized ufunc with core
#: dimensions (``np.vecdot``, ``np.matvec``, ``np.vecmat``); :mod:`kernel_ext.trace.numpy_api`
#: fills it (issue 14). ``np.matmul`` is the MATMUL op itself.
GUFUNCS: dict[np.ufunc, Callable[..., Any]] = {}

_UNSUPPORTED_UFUNC_KWARGS = ("where", "casting", "order", "subok", "signature", "axes", "axis")


class Tensor(NumpyOperators, inplace=True):
    """A traced value: what a NumPy array is while a ``kx.function`` is being traced.

    ``node`` is the graph node that computes its current value and ``context`` the trace that
    owns that node (neither name exists on ``np.ndarray``, so NumPy code never meets them by
    accident). Make tensors with :meth:`TraceContext.tensor
    <kernel_ext.trace.context.TraceContext.tensor>`.

    **Mutation is functionalized** (PyTorch's scheme): the graph stays pure, the Python object
    follows NumPy. A tensor is either a *root* (it owns its storage: an argument, an op's
    result) or a *view* of a root (basic indexing, transposes, ``expand_dims``/``squeeze``,
    ``broadcast_to``, reshapes), made of the root by a chain of view steps. An in-place update
    (``x[i] = v``, ``x += 1``, ``out=``, ``x.sort()``, ``np.copyto``) of a root records the
    new value as a new node and moves the root to it, bumping its *version*; an update of a
    view becomes the root's new value (each step inverted: a slice is written back with
    ``setitem``, a transpose transposed back) and so reaches every alias. A view whose root's
    version moved regenerates itself from the root when next read. The trace records every
    root it updated (:meth:`TraceContext.note_mutation`): branches and loop bodies carry them
    out as state, and the engine writes the final values of updated arguments back into the
    caller's arrays.
    """

    __slots__ = ("_node", "context", "_root", "_steps", "_seen", "_version", "_aliases",
                 "__weakref__")
    __hash__ = None  # like np.ndarray: == is elementwise, so tensors are not dict keys

    def __init__(self, node: Node, context: "TraceContext") -> None:
        self._node = node
        self.context = context
        self._root: Tensor | None = None   # the root this is a view of (None: a root)
        self._steps: tuple = ()             # view steps from the root, see ViewStep
        self._seen = 0                      # the root's version this view was computed from
        self._version = 0                   # a root's version: unique per update, 0 = never
        # Roots this value may *be* at run time (an ``if`` on a traced value picked one of
        # them), each with its version then and where the choice was made: see may_be.
        self._aliases: tuple = ()

    @property
    def node(self) -> Node:
        """The node of the current value (a view first catches up with its root)."""
        root = self._root
        if root is not None and (root._version != self._seen or not self.context.active):
            self._regenerate()
        if self._aliases:
            self._check_aliases()
        return self._node

    @node.setter
    def node(self, node: Node) -> None:
        self._node = node

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
        target = targets[0] if len(targets) == 1 else None
        if isinstance(target, np.ndarray) and isinstance(result, Tensor):
            # a plain array updated with a traced value (``buf += t``): a traced value
            # stands for it from now on (TraceContext.promote)
            target = result.context.promote(target)
        if not isinstance(target, Tensor):
            raise errors.UnsupportedOpError(
                f"np.{ufunc.__name__}(..., out=...) with {len(targets)} outputs is not "
                "supported on traced values. Fix: assign the results instead "
                "(y = np.op(...)).")
        target._rebind(result)
        return target

    def __array_function__(self, func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
        handler = HANDLERS.get(func)
        if handler is not None and kwargs.get("out") is not None:
            # ``np.clip(x, 0, 1, out=x)``, ``np.sum(a, axis=0, out=buf)``: the result written
            # into ``out`` as an in-place update (a plain array is promoted, TraceContext)
            kwargs = dict(kwargs)
            out = kwargs.pop("out")
            target = out[0] if isinstance(out, tuple) and len(out) == 1 else out
            result = handler(*args, **kwargs)
            if isinstance(target, np.ndarray) and isinstance(result, Tensor):
                target = result.context.promote(target)
            if not isinstance(target, Tensor) or not isinstance(result, Tensor):
                raise errors.UnsupportedOpError(
                    f"np.{getattr(func, '__name__', func)}(..., out=...) needs one array to "
                    f"write into (got {type(out).__name__}). Fix: assign the result instead.")
            target._rebind(result)
            return target
        if handler is None and "function" in FALLBACK:
            return FALLBACK["function"](func, args, kwargs)
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
        raise self._no_python_value("item()")

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
        raise self._no_python_value("tolist()")

    def _no_python_value(self, method: str) -> errors.SymbolicValueError:
        """The error of a method that would turn the traced value into Python values, naming
        the method the user called."""
        return errors.SymbolicValueError(
            f"{describe_tensor(self)}.{method} has no value while tracing; return the value "
            "from the function instead (results come back as NumPy values).")

    # -- mutation: functionalized (see the class docstring) --------------------------------
    def _rebind(self, value: Any) -> None:
        """``self`` updated in place to ``value`` (an in-place ufunc's result, ``out=``,
        ``sort``): NumPy's casting and broadcasting rules for an output operand."""
        if not isinstance(value, Tensor):
            raise TypeError("internal: rebind needs a traced value")
        if value.dtype != self.dtype:
            if not np.can_cast(value.dtype, self.dtype, casting="same_kind"):
                raise TypeError(f"Cannot cast ufunc output from dtype('{value.dtype}') to "
                                f"dtype('{self.dtype}') with casting rule 'same_kind'")
            value = value.astype(self.dtype)
        if self.shape is not None and value.shape is not None and value.shape != self.shape:
            # the result of an in-place op broadcasts into the operand's shape, or fails
            if len(value.shape) > len(self.shape) or any(
                    v not in (1, s) for v, s in zip(value.shape[::-1], self.shape[::-1])
                    if v is not None and s is not None):
                raise ValueError(f"non-broadcastable output operand with shape {self.shape} "
                                 f"doesn't match the broadcast shape {value.shape}")
            value = bind(OpKind.SETITEM, (self, value), {"index": (Ellipsis,)})
        self.assign(value)

    def __setitem__(self, key: Any, value: Any) -> None:
        template, dyn = build_template(key)
        self.assign(bind(OpKind.SETITEM, (self, value, *dyn), {"index": template}))

    def assign(self, value: "Tensor") -> None:
        """Make ``value`` (of this tensor's shape and dtype) the new contents of this array:
        the in-place update every mutating NumPy call comes down to."""
        root = self._root
        if root is None:
            if self._aliases:
                root, _, where = self._aliases[0]
                raise errors.UnsupportedOpError(
                    f"Writing to {describe_tensor(self)} at {user_frame_description()}: it may "
                    f"be the array {describe_tensor(root)} itself (an if on a traced value at "
                    f"{where} chose it), so NumPy would change that array too, depending on "
                    "the data. Fix: copy in the branch (`y = a.copy() if c else b`) to write "
                    "to a new array, or write to the original array inside the branch.")
            node, context = value.node, value.context
            (current_context() or context).note_mutation(self)
            self._node, self.context, self._version = node, context, next_version()
            return
        if any(step.read_only for step in self._steps):
            raise ValueError("assignment destination is read-only")
        _check_layout(root, self._steps, "Writing through")
        # Write the view's new value back through each step, innermost last: the root's new
        # value contains it, and every other alias of the root sees it on its next read.
        values = [root]
        for step in self._steps[:-1]:
            values.append(step.apply(values[-1]))
        new = value
        for step, source in zip(reversed(self._steps), reversed(values)):
            new = step.write_back(source, new)
        root.assign(new)
        self._node, self.context, self._seen = value.node, value.context, root._version

    def may_be(self, roots: Sequence["Tensor"], where: str) -> None:
        """Note that at run time this (new) value may be one of ``roots`` itself, not a copy.

        An ``if`` on a traced value that returns an existing array from a branch (``y = a if
        c else b``) gives, in NumPy, that very array: a later write to ``a`` shows through
        ``y``, and a write through ``y`` changes ``a`` — which one only the data decides. A
        graph value cannot follow that, so using ``y`` after such a write, or writing through
        it, is an error that says so instead of a silently different result.
        """
        self._aliases = tuple((r, r._version, where) for r in roots)

    def _check_aliases(self) -> None:
        aliases = self._aliases
        for root, version, where in aliases:
            if root._version != version:
                self._aliases = ()  # (describing the values reads them)
                error = errors.UnsupportedOpError(
                    f"{describe_tensor(self)} may be the array {describe_tensor(root)} itself "
                    f"(an if on a traced value at {where} chose it), and that array was "
                    "written after the choice. "
                    "NumPy would show the write through both names; a traced function cannot "
                    "follow a choice made at run time. Fix: copy in the branch (`y = a.copy() "
                    "if c else b`) to keep the contents from before the write, or make the "
                    "choice after the write.")
                self._aliases = aliases
                raise error

    @property
    def storage_root(self) -> "Tensor":
        """The root tensor whose storage this one is (itself for a root; see the class)."""
        return self if self._root is None else self._root

    def state(self) -> tuple:
        """A root's current value and version (what a branch or loop body saves)."""
        return (self._node, self.context, self._version)

    def restore(self, state: tuple) -> None:
        """Put a root back to a :meth:`state` (a branch that updated it has been recorded)."""
        self._node, self.context, self._version = state

    def _regenerate(self) -> None:
        """Recompute this view from its root's current value (the root was updated, or the
        branch or loop body that last computed it has ended)."""
        if current_context() is None:
            return  # outside any trace: a leaked view keeps its last node (and fails on use)
        root = self._root
        if root._version != self._seen:
            _check_layout(root, self._steps, "Reading, after an in-place update,")
        value = root
        for step in self._steps:
            value = step.apply(value)
        self._node, self.context, self._seen = value.node, value.context, root._version

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
        """A flattened *copy* (never a view, unlike ravel), as NumPy's."""
        return np.copy(np.reshape(self, (-1,), order=order))

    def ravel(self, order: str = "C") -> "Tensor":
        return np.reshape(self, (-1,), order=order)

    def squeeze(self, axis: Any = None) -> "Tensor":
        return np.squeeze(self, axis=axis)

    def swapaxes(self, a: int, b: int) -> "Tensor":
        return np.swapaxes(self, a, b)

    def copy(self, order: str = "C") -> "Tensor":
        # (not np.copy: the method keeps a NumPy scalar a scalar, see trace/zero_d.py)
        return bind(OpKind.COPY, (self,))  # type: ignore[return-value]

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

    def argsort(self, axis: int | None = -1, kind: str | None = None, order: Any = None, *,
                stable: bool | None = None) -> "Tensor":
        return np.argsort(self, axis=axis, kind=kind, order=order, stable=stable)

    def sort(self, axis: int = -1, kind: str | None = None, order: Any = None, *,
             stable: bool | None = None) -> None:
        self._rebind(np.sort(self, axis=axis, kind=kind, order=order, stable=stable))

    # more ndarray methods and attributes, as NumPy defines them
    @property
    def real(self) -> "Tensor":
        return np.real(self)

    @property
    def imag(self) -> "Tensor":
        return np.imag(self)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int | None:
        size = self.size
        return None if size is None else size * self.dtype.itemsize

    @property
    def base(self) -> "Tensor | None":
        """The array a view looks into (None for an array that owns its data), as NumPy's."""
        return self._root

    def conjugate(self) -> "Tensor":
        return np.conjugate(self)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> "Tensor":
        return np.diagonal(self, offset, axis1, axis2)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
              out: Any = None) -> "Tensor":
        return np.trace(self, offset, axis1, axis2, dtype, out)

    def nonzero(self) -> tuple:
        return np.nonzero(self)

    def repeat(self, repeats: Any, axis: Any = None) -> "Tensor":
        return np.repeat(self, repeats, axis)

    def searchsorted(self, v: Any, side: str = "left", sorter: Any = None) -> "Tensor":
        return np.searchsorted(self, v, side, sorter)

    def compress(self, condition: Any, axis: Any = None, out: Any = None) -> "Tensor":
        return np.compress(condition, self, axis, out)

    def choose(self, choices: Any, out: Any = None, mode: str = "raise") -> "Tensor":
        return np.choose(self, choices, out, mode)

    def argpartition(self, kth: Any, axis: int = -1, kind: str = "introselect",
                     order: Any = None) -> "Tensor":
        return np.argpartition(self, kth, axis, kind, order)

    def partition(self, kth: Any, axis: int = -1, kind: str = "introselect",
                  order: Any = None) -> None:
        """``x.partition(kth)``: NumPy's in-place partition (the array takes its result)."""
        self.assign(np.partition(self, kth, axis, kind, order))

    def put(self, indices: Any, values: Any, mode: str = "raise") -> None:
        """``x.put(ind, v)``: flat-index assignment, in place (``mode='raise'`` only)."""
        if mode != "raise":
            raise errors.UnsupportedOpError(
                f"x.put(..., mode={mode!r}) is not supported on traced values; only "
                "mode='raise'. Fix: clip or wrap the indices first (np.clip, %).")
        flat = np.reshape(self, (-1,))
        flat[np.asarray(indices) if not isinstance(indices, Tensor) else indices] = values

    def fill(self, value: Any) -> None:
        """``x.fill(v)``: every element set to ``v`` (cast as NumPy casts it), in place."""
        self[...] = value

    def cumsum(self, axis: Any = None, dtype: Any = None) -> "Tensor":
        return np.cumsum(self, axis=axis, dtype=dtype)

    def cumprod(self, axis: Any = None, dtype: Any = None) -> "Tensor":
        return np.cumprod(self, axis=axis, dtype=dtype)


class ViewStep:
    """One step from an array to a view of it, as NumPy takes it: ``apply`` makes the view of
    a value, ``write_back`` returns the source with the view replaced by a new value.

    ``op`` is GETITEM (a basic index: ints, slices, None, Ellipsis, traced int scalars),
    TRANSPOSE, EXPAND_DIMS, SQUEEZE, BROADCAST_TO (read-only, as in NumPy) or RESHAPE.

    A reshape is a view only of a C-contiguous array (NumPy copies otherwise), which the
    trace cannot see: a reshape of a root is taken as a view, and the function then runs
    only on C-contiguous arguments (``TraceContext.layout_roots``, checked per call; others
    run eagerly); a reshape of a view is ``layout_dependent``, and an update that would need
    to know whether it shares memory raises an error instead of guessing.
    """

    __slots__ = ("op", "attrs", "dyn", "read_only", "layout_dependent")

    def __init__(self, op: OpKind, attrs: dict, dyn: tuple,
                 layout_dependent: bool = False) -> None:
        self.op, self.attrs, self.dyn = op, attrs, dyn
        self.read_only = op is OpKind.BROADCAST_TO
        self.layout_dependent = layout_dependent

    def apply(self, source: Tensor) -> Tensor:
        return bind(self.op, (source, *self.dyn), self.attrs)  # type: ignore[return-value]

    def write_back(self, source: Tensor, value: Tensor) -> Tensor:
        op = self.op
        if op is OpKind.GETITEM:
            return bind(OpKind.SETITEM, (source, value, *self.dyn), self.attrs)  # type: ignore
        if op is OpKind.TRANSPOSE:
            axes = self.attrs.get("axes")
            inverse = None if axes is None else tuple(int(i) for i in np.argsort(axes))
            return bind(OpKind.TRANSPOSE, (value,), {"axes": inverse})  # type: ignore
        shape = source.shape
        if shape is None or any(d is None for d in shape):
            raise errors.UnsupportedOpError(
                f"writing through a {op.value} of an array whose shape is only known at run "
                f"time ({describe_tensor(source)}) is not supported. Fix: write into the "
                "array itself, or give its dimensions sizes in input_signature.")
        return bind(OpKind.RESHAPE, (value,), {"shape": tuple(shape)})  # type: ignore


def _view_step(op: OpKind, args: Sequence[Any], attrs: dict, result: Tensor) -> ViewStep | None:
    """The view step ``op(args)`` took, when NumPy returns a view for it (else None)."""
    if op is OpKind.GETITEM:
        template = attrs["index"]
        if any(isinstance(t, (np.ndarray, list)) for t in template):
            return None  # advanced indexing copies
        dyn = tuple(args[1:])
        if any(not isinstance(d, Tensor) or d.shape != () or d.dtype.kind not in "iu"
               for d in dyn):
            return None
        if result.shape == () and Ellipsis not in template:
            return None  # a single element comes back as a NumPy scalar: a copy
        return ViewStep(op, attrs, dyn)
    if op is OpKind.RESHAPE:
        return ViewStep(op, attrs, (), layout_dependent=args[0]._root is not None)
    if op in _VIEW_OPS:
        return ViewStep(op, attrs, ())
    return None


def _check_layout(root: Tensor, steps: tuple, what: str) -> None:
    """An update that depends on a reshape sharing memory: guard or refuse (see ViewStep)."""
    for step in steps:
        if step.op is not OpKind.RESHAPE:
            continue
        if step.layout_dependent:
            raise errors.UnsupportedOpError(
                f"{what} a reshape of a view of {describe_tensor(root)}: NumPy makes such a "
                "reshape a view or a copy depending on the memory layout, which a trace "
                f"cannot see ({user_frame_description()}). Fix: take the reshape of a "
                "contiguous array (x.copy().reshape(...)), or update the array itself.")
        root.context.note_layout_root(root)


_VIEW_OPS = frozenset({OpKind.TRANSPOSE, OpKind.EXPAND_DIMS, OpKind.SQUEEZE,
                       OpKind.BROADCAST_TO, OpKind.RESHAPE})

_VERSIONS = itertools.count(1)


def next_version() -> int:
    """A version number never used before: versions are compared for equality, and one a
    branch rolled back must never come back (a view computed inside the branch would look
    current)."""
    return next(_VERSIONS)


def _reduction_method(name: str) -> Callable[..., Tensor]:
    fn = getattr(np, name)

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return fn(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"Traced ``np.{name}``."
    return method


def _memory_attribute(name: str) -> property:
    def get(self: Tensor) -> Any:
        raise errors.SymbolicValueError(
            f"{describe_tensor(self)}.{name} describes memory that a traced value does not "
            f"have while '{self.context.function_name}' is traced (the graph decides layouts "
            "when it runs). Fix: compute with NumPy operations instead, or use it outside the "
            "kx.function on the returned arrays.")
    return property(get)


for _name in ("flags", "strides", "ctypes", "data", "flat", "view", "tobytes", "tofile",
              "dump", "dumps", "byteswap", "resize", "setflags", "getfield", "setfield",
              "device", "to_device"):
    setattr(Tensor, _name, _memory_attribute(_name))

# Every reduction op that is an ndarray method is the method of its name (the op table's
# naming rule; nansum & co. are NumPy functions only, as on ndarray).
for _kind in NDARRAY_METHODS:
    if _kind.group is OpGroup.REDUCTION:
        setattr(Tensor, _kind.value, _reduction_method(_kind.value))


# -- ufunc dispatch -------------------------------------------------------------------------

def _apply_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    if method == "__call__" and ufunc in GUFUNCS:
        return GUFUNCS[ufunc](*inputs, **kwargs)
    if method in UFUNC_METHODS:
        return UFUNC_METHODS[method](ufunc, inputs, kwargs)
    bad = [k for k in kwargs if k in _UNSUPPORTED_UFUNC_KWARGS or k not in (
        "dtype", "axis", "keepdims", "initial")]
    if bad and not (method != "__call__" and set(bad) <= {"axis"}):
        raise errors.UnsupportedOpError(
            f"np.{ufunc.__name__}(..., {bad[0]}=...) is not supported on traced values. Fix: "
            "drop the argument and combine with np.where / astype instead.")
    if method == "__call__":
        if ufunc is np.matmul:
            return bind(OpKind.MATMUL, inputs)
        kind = UFUNC_OPS.get(ufunc)
        if kind is None and "ufunc" in FALLBACK:
            return FALLBACK["ufunc"](ufunc, method, inputs, kwargs)
        if kind is None:
            raise errors.UnsupportedOpError(
                f"the ufunc np.{ufunc.__name__} is not supported on traced values yet. Fix: "
                "express it with supported ufuncs, or compute it outside the kx.function.")
        attrs = {"dtype": np.dtype(kwargs["dtype"])} if kwargs.get("dtype") is not None else {}
        result = bind(kind, inputs, attrs)
        if ufunc.nout > 1:  # frexp, modf, divmod: a tuple of outputs, as NumPy returns
            return tuple(bind(OpKind.GET_OUTPUT, (result,), {"index": i})
                         for i in range(ufunc.nout))
        return result
    if method == "reduce" and ufunc in UFUNC_REDUCTIONS and "initial" not in kwargs:
        kind = UFUNC_REDUCTIONS[ufunc]
        attrs = {"axis": kwargs.get("axis", 0), "keepdims": bool(kwargs.get("keepdims", False))}
        if kwargs.get("dtype") is not None:
            attrs["dtype"] = np.dtype(kwargs["dtype"])
        return bind(kind, inputs, attrs)
    if method == "accumulate" and ufunc in (np.add, np.multiply):
        kind = OpKind.CUMSUM if ufunc is np.add else OpKind.CUMPROD
        return bind(kind, inputs, {"axis": kwargs.get("axis", 0)})
    if "ufunc" in FALLBACK:
        return FALLBACK["ufunc"](ufunc, method, inputs, kwargs)
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
        if isinstance(item, Tensor) and item.node.op is OpKind.CONSTANT and \
                item.node.aval.shape and item.dtype.kind in "biu":
            # an index array the function made and never wrote (np.array([True, False]))
            # indexes as the array it is: static shapes stay static
            item = item.node.attrs["value"]
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
        elif isinstance(item, range):  # NumPy indexes with a range as with its integers
            arr = np.arange(item.start, item.stop, item.step)
            arr.setflags(write=False)
            template.append(arr)
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
    innermost trace. Outside any trace a traced argument has leaked. A view op of a traced
    array returns a view of it (see :class:`Tensor`)."""
    ctx = current_context()
    if ctx is None:
        for a in args:
            if isinstance(a, Tensor):
                raise leaked_error(a)
        raise RuntimeError("internal: bind() outside any trace")
    result = ctx.bind(op, args, attrs, name)
    if op.group in _VIEW_GROUPS and result is not None and args and \
            isinstance(args[0], Tensor):
        step = _view_step(op, args, attrs or {}, result)
        if step is not None:
            source = args[0]
            root = source._root
            result._root = source if root is None else root
            result._steps = (step,) if root is None else source._steps + (step,)
            result._seen = result._root._version
    return result


_VIEW_GROUPS = (OpGroup.SHAPE, OpGroup.INDEXING)


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


def user_frame_description(line: int | None = None) -> str:
    """``file:line: source`` of the innermost frame outside kernel_ext and NumPy (``line``:
    that line of the frame's file instead of the one running, e.g. a loop statement's)."""
    import linecache
    frame = sys._getframe(1)
    while frame is not None:
        fname = frame.f_code.co_filename.replace("\\", "/")
        if "/kernel_ext/" not in fname and "/numpy/" not in fname:
            lineno = frame.f_lineno if line is None else line
            text = linecache.getline(fname, lineno).strip()
            where = format_location(f"{fname}:{lineno}")
            return where + (f": `{text}`" if text else "")
        frame = frame.f_back
    return "<unknown location>"
