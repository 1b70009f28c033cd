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
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from .. import errors
from ..ir import (
    UFUNC_OPS,
    UFUNC_REDUCTIONS,
    AbstractValue,
    DynamicIndex,
    Node,
    OpGroup,
    OpKind,
)
from ..ir.params import make_params
from ..ir.registry import Registry
from .describe import describe_tensor, leaked_error, user_frame_description
from .layout import check_layout, in_place_shape
from .ndarray_methods import NdarrayMethods
from .needs_data import NeedsData
from .operators import BINARY_OPERATORS, NumpyOperators
from .signatures import numpy_writes_out, route
from .state import current_context
from .zero_d import ARRAY, SCALAR, mark_array, zero_d_kind

if TYPE_CHECKING:
    from .context import TraceContext

#: ``np.func`` -> the handler that records it on traced values (``Tensor.__array_function__``);
#: :mod:`kernel_ext.trace.numpy_api` fills it when the trace layer is imported.
HANDLERS: Registry[Callable, Callable[..., Any]] = Registry("NumPy function handler")

#: What the NumPy protocols do with a call no op covers, set by :mod:`kernel_ext.trace.opaque`
#: when the trace layer is imported: ``FALLBACK["function"](func, args, kwargs)`` for a NumPy
#: function HANDLERS lacks, ``FALLBACK["ufunc"](ufunc, method, inputs, kwargs)`` for a ufunc
#: (method) without an op. Both run it as an opaque NumPy call inside the graph.
#: ``FALLBACK["overwriting"](func, name, args, kwargs)`` (set by numpy_api) runs NumPy's own
#: call on a copy of the argument ``name`` that it writes into (``out``), which then takes
#: the copy's new contents; ``FALLBACK["ufunc_into"](ufunc, inputs, out, kwargs)`` does the
#: same for a ufunc call with ``out=`` and keywords no op has (``where=``, ``casting=``).
FALLBACK: dict[str, Callable[..., Any]] = {}

#: ``UFUNC_METHODS[method](ufunc, inputs, kwargs)`` records ``ufunc.<method>`` (reduce,
#: accumulate, reduceat, outer, at) on traced values; :mod:`kernel_ext.trace.numpy_api` fills
#: it, and falls back to an opaque call where no op covers a call.
UFUNC_METHODS: dict[str, Callable[..., Any]] = {}

#: ``GUFUNCS[ufunc](*inputs, **kwargs)`` records a call of a generalized ufunc with core
#: dimensions (``np.vecdot``, ``np.matvec``, ``np.vecmat``); :mod:`kernel_ext.trace.numpy_api`
#: fills it. ``np.matmul`` is the MATMUL op itself.
GUFUNCS: dict[np.ufunc, Callable[..., Any]] = {}

_UNSUPPORTED_UFUNC_KWARGS = ("where", "casting", "order", "subok", "signature", "axes", "axis")
#: The keywords of a ufunc call its op implements (``dtype``); the others run NumPy's ufunc.
_NATIVE_UFUNC_KWARGS = frozenset({"dtype"})
#: ufunc keywords given their default (``where=True``, ``casting="same_kind"``): no effect.
_UFUNC_DEFAULTS = {
    "where": True,
    "casting": "same_kind",
    "order": "K",
    "subok": True,
    "signature": None,
    "dtype": None,
}


def _ufunc_default(key: str, value: Any) -> bool:
    default = _UFUNC_DEFAULTS.get(key, _UFUNC_DEFAULTS)
    return value is default or (
        type(value) is type(default) and isinstance(value, str) and value == default
    )


class Tensor(NeedsData, NdarrayMethods, NumpyOperators, inplace=True):
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

    __slots__ = (
        "__weakref__",
        "_aliases",
        "_node",
        "_reshapes",
        "_root",
        "_seen",
        "_steps",
        "_version",
        "context",
    )

    def __init__(self, node: Node, context: TraceContext) -> None:
        self._node = node
        self.context = context
        self._root: Tensor | None = None  # the root this is a view of (None: a root)
        self._steps: tuple = ()  # view steps from the root, see ViewStep
        self._seen = 0  # the root's version this view was computed from
        self._version = 0  # a root's version: unique per update, 0 = never
        # Roots this value may *be* at run time (an ``if`` on a traced value picked one of
        # them), each with its version then and where the choice was made: see may_be.
        self._aliases: tuple = ()
        # A root's in-place shape changes (``x.shape = ...``): (version from then on, the
        # shape before), oldest first; views taken before one see the root reshaped back.
        self._reshapes: tuple = ()

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
        return cast("AbstractValue", self.node.aval).shape  # (a tensor's node holds one value)

    @shape.setter
    def shape(self, value: Any) -> None:
        """``x.shape = (n, m)``: the same array, reshaped in place, as NumPy does it: a root
        (which owns its storage) takes the new shape and its earlier views still see their
        elements; a view takes it when NumPy can without a copy (else NumPy's
        ``AttributeError``); a size that does not fit is NumPy's ``ValueError``."""
        if type(self) is not Tensor or (self.shape == () and _immutable_scalar(self)):
            raise AttributeError("attribute 'shape' of 'numpy.generic' objects is not writable")
        new_shape = in_place_shape(self, self._steps, value)
        root = self._root
        if root is None:
            old = self.shape
            self.assign(cast("Tensor", bind(OpKind.RESHAPE, (self,), {"shape": new_shape})))
            self._reshapes += ((self._version, old),)
            return
        step = ViewStep(OpKind.RESHAPE, {"shape": new_shape}, ())
        node = step.apply(self).node
        root.context.note_layout_root(root)
        self._steps += (step,)
        self._node = node

    @property
    def dtype(self) -> np.dtype:
        return cast("AbstractValue", self.node.aval).dtype

    @property
    def ndim(self) -> int:
        if self.shape is None:
            raise errors.TracedBoolError(
                f"{describe_tensor(self)} has unknown rank, so .ndim has no Python value while "
                "tracing. Fix: give the argument a known rank in input_signature."
            )
        return len(self.shape)

    @property
    def size(self) -> int | None:
        return cast("AbstractValue", self.node.aval).size

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def op(self) -> Node:
        return self.node

    @property
    def T(self) -> Tensor:
        return self.transpose()

    @property
    def mT(self) -> Tensor:
        # (NumPy hands the call to ``__array_function__``: a Tensor comes back)
        return cast("Tensor", np.swapaxes(self, -1, -2))

    def __len__(self) -> int:
        """The static size of the first dimension, as ``len(ndarray)`` gives it."""
        return self._static_length("len() of")

    def _static_length(self, what: str) -> int:
        """``shape[0]`` as a Python int, or the error NumPy (or tracing) gives without one."""
        if self.shape == ():
            raise TypeError(
                "len() of unsized object"
                if what.startswith("len")
                else "iteration over a 0-d array"
            )
        if self.shape is None:
            raise errors.TracedBoolError(
                f"{what} {describe_tensor(self)} at {user_frame_description()}: its rank is "
                "unknown while tracing. Fix: give the argument a known rank in "
                "input_signature."
            )
        if self.shape[0] is None:
            raise errors.TracedBoolError(
                f"{what} {describe_tensor(self)} at {user_frame_description()}: its first "
                "dimension is only known at run time, so Python cannot count it while "
                "tracing. Fix: loop with a `for` statement over the array itself (`for row in "
                "x:` becomes a graph loop) or over kx.range(x.shape[0]), or give the dimension "
                "a size in input_signature."
            )
        return self.shape[0]

    def __repr__(self) -> str:
        shape = "<unknown>" if self.shape is None else self.shape
        state = "" if self.context.active else ", leaked"
        return f"<kx.Tensor '{self.node.name}' shape={shape} dtype={self.dtype.name}{state}>"

    __str__ = __repr__

    # -- NumPy protocols ------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = kwargs.pop("out", None)
        kwargs = {k: v for k, v in kwargs.items() if not _ufunc_default(k, v)}
        if (
            method == "__call__"
            and ufunc not in GUFUNCS
            and any(k not in _NATIVE_UFUNC_KWARGS for k in kwargs)
        ):
            # where=, casting=, order=, subok=, signature=: no op has them, so NumPy's own
            # ufunc runs (into a copy of ``out``, which ``out`` then takes): never dropped
            if out is not None and "ufunc_into" in FALLBACK:
                return FALLBACK["ufunc_into"](ufunc, inputs, out, kwargs)
            if out is None and "ufunc" in FALLBACK:
                return FALLBACK["ufunc"](ufunc, method, inputs, kwargs)
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
                "(y = np.op(...))."
            )
        target.array_target(
            f"np.{ufunc.__name__}(..., out=...)", "return arrays must be of ArrayType"
        )._rebind(result)
        return target

    def __array_function__(self, func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
        handler = HANDLERS.get(func)
        if handler is None:
            return _unhandled_function(self, func, args, kwargs)
        # NumPy's signature binds the call; a parameter the handler does not implement,
        # given a value other than its default, runs the call as NumPy's own (signatures.py)
        call = route(func, handler, args, kwargs)
        out = call.out
        if call.opaque is None and out is not None and numpy_writes_out(handler):
            call.opaque = "out"
        if call.opaque is not None:
            if out is not None and "overwriting" in FALLBACK:
                # NumPy's own call writing into a copy of ``out``, which ``out`` then takes
                return FALLBACK["overwriting"](func, "out", args, kwargs)
            if out is not None or "function" not in FALLBACK:
                return _unhandled_function(self, func, args, kwargs, call.opaque)
            return FALLBACK["function"](func, args, kwargs)
        if out is None:
            return handler(*call.args, **call.kwargs)
        # ``np.clip(x, 0, 1, out=x)``, ``np.sum(a, axis=0, out=buf)``: the result written
        # into ``out`` as an in-place update (a plain array is promoted, TraceContext)
        target = out[0] if isinstance(out, tuple) and len(out) == 1 else out
        result = handler(*call.args, **call.kwargs)
        if isinstance(target, np.ndarray) and isinstance(result, Tensor):
            target = result.context.promote(target)
        if not isinstance(target, Tensor) or not isinstance(result, Tensor):
            raise errors.UnsupportedOpError(
                f"np.{getattr(func, '__name__', func)}(..., out=...) needs one array to "
                f"write into (got {type(out).__name__}). Fix: assign the result instead."
            )
        target.array_target(
            f"np.{getattr(func, '__name__', func)}(..., out=...)", "output must be an array"
        )._rebind(result)
        return target

    def pow_base_is_array(self) -> bool | None:
        """An n-d value, or a 0-d one NumPy holds as a 0-d array (``x ** 2`` takes
        ``np.square`` then, ``np.power`` on a NumPy scalar: see operators.py); None for a
        0-d argument of the function itself, which one trace serves in both forms."""
        if self.shape != ():
            return True
        node = self.node
        if (
            node.op is OpKind.PLACEHOLDER
            and node.params.path is not None
            and self.context.parent is None
        ):
            return None
        return zero_d_kind(node, None) == ARRAY

    def power_at_run_time(self, exponent: Any) -> Any:
        """``self ** exponent`` as NumPy's own operator on the value the caller passed (a
        NumPy scalar takes ``np.power``, a 0-d array the fast path): an opaque call."""
        if "function" not in FALLBACK:
            return np.power(self, exponent)
        return FALLBACK["function"](operator.pow, (self, exponent), {})

    # -- data accessors that cannot work while tracing --------------------------------------

    def __hash__(self) -> int:
        """Unhashable, as ``np.ndarray`` (``==`` is elementwise). Eager NumPy's *elements* are
        hashable scalars, so code that keys a ``dict``/``set``/``Counter`` by array elements
        (a k-NN vote) works eagerly; traced, their values do not exist yet: say so."""
        raise errors.TracedBoolError(
            f"Hashing the traced value {describe_tensor(self)} (a dict key, a set member, "
            f"collections.Counter) at {user_frame_description(skip_stdlib=True)} in "
            f"'{self.context.function_name}': eager NumPy elements are hashable scalars, but "
            "a traced value's data is not known while tracing, so Python cannot hash it. "
            "Fix: count with NumPy instead (np.bincount(labels) for small non-negative ints, "
            "or values, counts = np.unique(labels, return_counts=True); then np.argmax(counts) "
            "for a vote), or do this outside the kx.function."
        )

    # -- mutation: functionalized (see the class docstring) --------------------------------
    def _rebind(self, value: Any) -> None:
        """``self`` updated in place to ``value`` (an in-place ufunc's result, ``out=``,
        ``sort``): NumPy's casting and broadcasting rules for an output operand."""
        if not isinstance(value, Tensor):
            raise TypeError("internal: rebind needs a traced value")
        if value.dtype != self.dtype:
            if not np.can_cast(value.dtype, self.dtype, casting="same_kind"):
                raise TypeError(
                    f"Cannot cast ufunc output from dtype('{value.dtype}') to "
                    f"dtype('{self.dtype}') with casting rule 'same_kind'"
                )
            value = value.astype(self.dtype)
        if self.shape is not None and value.shape is not None and value.shape != self.shape:
            # the result of an in-place op broadcasts into the operand's shape, or fails
            if len(value.shape) > len(self.shape) or any(
                v not in (1, s)
                for v, s in zip(value.shape[::-1], self.shape[::-1])
                if v is not None and s is not None
            ):
                raise ValueError(
                    f"non-broadcastable output operand with shape {self.shape} "
                    f"doesn't match the broadcast shape {value.shape}"
                )
            value = bind(OpKind.SETITEM, (self, value), {"index": (Ellipsis,)})
        if self.shape == () and zero_d_kind(self.node, self.context.top().graph) == ARRAY:
            mark_array(value)  # a 0-d array updated in place stays an array (``zero_d``)
        self.assign(value)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.array_target(
            "item assignment",
            scalar_error=(f"'numpy.{self.dtype.name}' object does not support item assignment"),
        )
        template, dyn = build_template(key)
        self.assign(cast("Tensor", bind(OpKind.SETITEM, (self, value, *dyn), {"index": template})))

    def array_target(self, what: str, scalar_error: str | None) -> Tensor:
        """This value as the destination of a write only an ndarray takes (item assignment,
        ``out=``, ``np.copyto``, ``np.put``, ``x.fill``): itself, or what NumPy does with a
        NumPy scalar there.

        A NumPy scalar is immutable: NumPy raises ``TypeError`` (``scalar_error``: NumPy's
        words, for ``x[()] = v``, ``np.copyto``, ``out=``) or writes into a temporary array
        that is then dropped (``scalar_error`` None: ``np.put``, ``x.fill``; a copy is
        returned here, so the write changes nothing the function can see). A 0-d argument
        may be either form, decided by the call: the trace notes the write
        (``TraceContext.note_array_write``) and a call passing a NumPy scalar there runs as
        NumPy itself (``engine.guards``)."""
        if self.shape != ():
            return self
        if _immutable_scalar(self):
            if scalar_error is None:
                temporary = self.copy()
                mark_array(temporary)
                return temporary
            raise TypeError(
                f"{scalar_error}: {what} at {user_frame_description()} writes into "
                f"{describe_tensor(self)}, which NumPy holds as an immutable NumPy scalar (the "
                "result of a ufunc, a reduction or an element read). Fix: make it a 0-d array "
                "first (`s = np.array(s)`), or assign the new value (`s = ...`)."
            )
        root = self.storage_root
        top = root.context.top()
        if any(t is root for _, t in top.inputs):
            top.note_array_write(root)
        return self

    def assign(self, value: Tensor) -> None:
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
                    "to a new array, or write to the original array inside the branch."
                )
            node, context = value.node, value.context
            (current_context() or context).note_mutation(self)
            self._node, self.context, self._version = node, context, next_version()
            return
        if any(step.read_only for step in self._steps):
            raise ValueError("assignment destination is read-only")
        check_layout(root, self._steps, "Writing through")
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

    def may_be(self, roots: Sequence[Tensor], where: str) -> None:
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
                    "choice after the write."
                )
                self._aliases = aliases
                raise error

    @property
    def storage_root(self) -> Tensor:
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
        root = cast("Tensor", self._root)  # (only a view regenerates)
        if root._version != self._seen:
            for version, before in root._reshapes:  # (oldest first: the newest ends outermost)
                if version > self._seen:  # the root was reshaped in place since: undo it first
                    self._steps = (ViewStep(OpKind.RESHAPE, {"shape": before}, ()),) + self._steps
            check_layout(root, self._steps, "Reading, after an in-place update,")
        value = root
        for step in self._steps:
            value = step.apply(value)
        self._node, self.context, self._seen = value.node, value.context, root._version

    def __getitem__(self, key: Any) -> Tensor:
        template, dyn = build_template(key)
        return cast("Tensor", bind(OpKind.GETITEM, (self, *dyn), {"index": template}))

    # -- ndarray methods ------------------------------------------------------------------
    # The methods take ndarray's documented parameters and hand every one on to the NumPy
    # function (whose handler runs NumPy's own call for a parameter it does not implement,
    # signatures.py): none is dropped.
    def astype(
        self,
        dtype: Any,
        order: str = "K",
        casting: Literal["no", "equiv", "safe", "same_kind", "unsafe"] = "unsafe",
        subok: bool = True,
        copy: bool = True,
    ) -> Tensor:
        dtype = np.dtype(dtype)
        if not np.can_cast(self.dtype, dtype, casting=casting):
            raise TypeError(
                f"Cannot cast array data from {self.dtype!r} to {dtype!r} "
                f"according to the rule '{casting}'"
            )
        if order not in ("K", "A", "C"):  # (a layout of its own: NumPy's own call)
            return _method_call(self, "astype", (dtype,), {"order": order, "copy": copy})
        if dtype == self.dtype and not copy:
            return self
        return cast("Tensor", bind(OpKind.CAST, (self,), {"dtype": dtype}))

    def flatten(self, order: str = "C") -> Tensor:
        """A flattened *copy* (never a view, unlike ravel), as NumPy's."""
        if order not in ("C", "F"):  # ('A', 'K' follow the memory layout: NumPy's call)
            return _method_call(self, "flatten", (), {"order": order})
        # (NumPy's stubs take an ndarray and a Literal order; the call reaches
        # ``__array_function__``, which gives a Tensor)
        flat = np.reshape(self, (-1,), order=order)  # type: ignore[call-overload]
        return cast("Tensor", np.copy(flat))

    def ravel(self, order: str = "C") -> Tensor:
        if order not in ("C", "F"):
            return _method_call(self, "ravel", (), {"order": order})
        return np.reshape(self, (-1,), order=order)  # type: ignore[call-overload]

    def copy(self, order: str = "C") -> Tensor:
        if order not in ("C", "K", "A"):  # (a layout of its own: NumPy's own call)
            return _method_call(self, "copy", (), {"order": order})
        # (not np.copy: the method keeps a NumPy scalar a scalar, see trace/zero_d.py)
        return bind(OpKind.COPY, (self,))  # type: ignore[return-value]

    def put(self, indices: Any, values: Any, mode: str = "raise") -> None:
        """``x.put(ind, v)``: flat-index assignment, in place (``np.put`` for ``mode=``)."""
        if mode != "raise":
            # (NumPy's stubs take an ndarray and a Literal mode; a Tensor takes the call
            # through ``__array_function__``)
            np.put(self, indices, values, mode=mode)  # type: ignore[arg-type]
            return
        flat = np.reshape(self, (-1,))
        flat[np.asarray(indices) if not isinstance(indices, Tensor) else indices] = values

    def fill(self, value: Any) -> None:
        """``x.fill(v)``: every element set to ``v`` (cast as NumPy casts it), in place."""
        Tensor.__setitem__(self.array_target("x.fill", None), Ellipsis, value)


def _method_call(tensor: Tensor, name: str, args: tuple, kwargs: dict) -> Any:
    """``tensor.<name>(*args, **kwargs)`` as NumPy's own ndarray method call in the graph."""
    if "function" not in FALLBACK:
        raise errors.UnsupportedOpError(
            f"x.{name}(...) with these arguments needs NumPy's "
            "own call, which is not available here"
        )
    return FALLBACK["function"](getattr(np.ndarray, name), (tensor, *args), kwargs)


def _unhandled_function(
    tensor: Tensor, func: Callable, args: tuple, kwargs: dict, parameter: str | None = None
) -> Any:
    """A NumPy function with no handler (or a parameter its handler lacks): NumPy's own
    opaque call where the trace layer installed it, else an error naming the function."""
    if parameter is None and "function" in FALLBACK:
        return FALLBACK["function"](func, args, kwargs)
    name = (
        getattr(func, "__module__", "numpy").replace("numpy", "np", 1)
        + "."
        + getattr(func, "__name__", repr(func))
    )
    what = f"{name}(..., {parameter}=...) with out=" if parameter else name
    raise errors.UnsupportedOpError(
        f"{what} is not supported on traced values (called on {describe_tensor(tensor)} "
        f"while tracing '{tensor.context.function_name}'). Fix: express it with supported "
        "NumPy operations, assign the result instead of out=, or compute it outside the "
        "kx.function; kx.supported_numpy_functions() lists what is traced."
    )


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

    __slots__ = ("dyn", "layout_dependent", "op", "params", "read_only")

    def __init__(
        self, op: OpKind, params: Mapping[str, Any], dyn: tuple, layout_dependent: bool = False
    ) -> None:
        self.op, self.params, self.dyn = op, make_params(op, params), dyn
        self.read_only = op is OpKind.BROADCAST_TO
        self.layout_dependent = layout_dependent

    def apply(self, source: Tensor) -> Tensor:
        return bind(self.op, (source, *self.dyn), self.params)  # type: ignore[return-value]

    def write_back(self, source: Tensor, value: Tensor) -> Tensor:
        op = self.op
        if op is OpKind.GETITEM:
            return bind(OpKind.SETITEM, (source, value, *self.dyn), self.params)  # type: ignore
        if op is OpKind.TRANSPOSE:
            axes = self.params.axes
            inverse = None if axes is None else tuple(int(i) for i in np.argsort(axes))
            return bind(OpKind.TRANSPOSE, (value,), {"axes": inverse})  # type: ignore
        shape = source.shape
        if shape is None or any(d is None for d in shape):
            raise errors.UnsupportedOpError(
                f"writing through a {op.value} of an array whose shape is only known at run "
                f"time ({describe_tensor(source)}) is not supported. Fix: write into the "
                "array itself, or give its dimensions sizes in input_signature."
            )
        return bind(OpKind.RESHAPE, (value,), {"shape": tuple(shape)})  # type: ignore


def _view_step(op: OpKind, args: Sequence[Any], result: Tensor) -> ViewStep | None:
    """The view step ``op(args)`` took, when NumPy returns a view for it (else None); it
    keeps the parameter value of the node ``result`` reads."""
    params = result.node.params
    if op is OpKind.GETITEM:
        template = params.index
        if any(isinstance(t, (np.ndarray, list)) for t in template):
            return None  # advanced indexing copies
        dyn = tuple(args[1:])
        if any(not isinstance(d, Tensor) or d.shape != () or d.dtype.kind not in "iu" for d in dyn):
            return None
        if result.shape == () and Ellipsis not in template:
            return None  # a single element comes back as a NumPy scalar: a copy
        return ViewStep(op, params, dyn)
    if op is OpKind.RESHAPE:
        # (a reshape of a view depends on the view's strides, except where it holds at most
        # one element: NumPy reshapes that as a view whatever its strides)
        shape = args[0].shape
        tiny = shape is not None and None not in shape and math.prod(shape) <= 1
        return ViewStep(op, params, (), layout_dependent=args[0]._root is not None and not tiny)
    if op in _VIEW_OPS:
        return ViewStep(op, params, ())
    return None


_VIEW_OPS = frozenset(
    {OpKind.TRANSPOSE, OpKind.EXPAND_DIMS, OpKind.SQUEEZE, OpKind.BROADCAST_TO, OpKind.RESHAPE}
)

_VERSIONS = itertools.count(1)


def next_version() -> int:
    """A version number never used before: versions are compared for equality, and one a
    branch rolled back must never come back (a view computed inside the branch would look
    current)."""
    return next(_VERSIONS)


def _immutable_scalar(value: Tensor) -> bool:
    """Does NumPy hold ``value`` as a NumPy scalar that nothing else can be (immutable: an
    augmented assignment makes a new scalar and rebinds only the name)?

    A 0-d root made by an op whose NumPy result is a scalar (a ufunc, a reduction, ``x[i]``,
    ``np.float64(t)``, an ``if`` both of whose branches give scalars). Not a placeholder (an
    argument, a loop variable or a branch input: the caller may pass a 0-d array), not a view,
    and not a 0-d array (``np.zeros(())``, ``x[...]``), which NumPy updates in place."""
    if value.shape != () or value._root is not None:
        return False
    node = value._node
    if node.op is OpKind.PLACEHOLDER:
        # a loop variable that entered the loop as a NumPy scalar (control_flow marks it,
        # and checks that the body gives a scalar back)
        return node.params.scalar_form
    return zero_d_kind(node, value.context.top().graph) == SCALAR


#: Public name for the layers that carry values into sub-graphs (``control_flow``).
is_immutable_scalar = _immutable_scalar


def _scalar_aware_inplace(stem: str, inplace: Callable[..., Any]) -> Callable[..., Any]:
    """``Tensor.__i<stem>__``: in place (functionalized) on an array, a new value on an
    immutable scalar (:func:`_immutable_scalar`)."""
    binary = getattr(operator, stem, None) or getattr(operator, f"{stem}_")

    def op(self: Tensor, other: Any) -> Any:
        if _immutable_scalar(self):
            # ``s += 1`` on a NumPy scalar (or a traced Python number) is ``s = s + 1``,
            # with Python's operator rules (a PythonNumber's own arithmetic included)
            return binary(self, other)
        return inplace(self, other)

    op.__name__ = f"__i{stem}__"
    op.__doc__ = inplace.__doc__
    return op


for _stem, _ in BINARY_OPERATORS:
    setattr(Tensor, f"__i{_stem}__", _scalar_aware_inplace(_stem, getattr(Tensor, f"__i{_stem}__")))

# -- ufunc dispatch -------------------------------------------------------------------------


def _apply_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    if method == "__call__" and ufunc in GUFUNCS:
        return GUFUNCS[ufunc](*inputs, **kwargs)
    if method in UFUNC_METHODS:
        return UFUNC_METHODS[method](ufunc, inputs, kwargs)
    bad = [
        k
        for k in kwargs
        if k in _UNSUPPORTED_UFUNC_KWARGS or k not in ("dtype", "axis", "keepdims", "initial")
    ]
    if bad and not (method != "__call__" and set(bad) <= {"axis"}):
        raise errors.UnsupportedOpError(
            f"np.{ufunc.__name__}(..., {bad[0]}=...) is not supported on traced values. Fix: "
            "drop the argument and combine with np.where / astype instead."
        )
    if method == "__call__":
        if ufunc is np.matmul:
            return bind(OpKind.MATMUL, inputs)
        kind = UFUNC_OPS.get(ufunc)
        if kind is None and "ufunc" in FALLBACK:
            return FALLBACK["ufunc"](ufunc, method, inputs, kwargs)
        if kind is None:
            raise errors.UnsupportedOpError(
                f"the ufunc np.{ufunc.__name__} is not supported on traced values yet. Fix: "
                "express it with supported ufuncs, or compute it outside the kx.function."
            )
        attrs = {"dtype": np.dtype(kwargs["dtype"])} if kwargs.get("dtype") is not None else {}
        result = bind(kind, inputs, attrs)
        if ufunc.nout > 1:  # frexp, modf, divmod: a tuple of outputs, as NumPy returns
            return tuple(
                bind(OpKind.GET_OUTPUT, (result,), {"index": i}) for i in range(ufunc.nout)
            )
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
        "NumPy function (np.sum, np.max, np.cumsum, ...) instead."
    )


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
        if (
            isinstance(item, Tensor)
            and item.node.op is OpKind.CONSTANT
            and cast("AbstractValue", item.node.aval).shape
            and item.dtype.kind in "biu"
        ):
            # an index array the function made and never wrote (np.array([True, False]))
            # indexes as the array it is: static shapes stay static
            item = item.node.params.value
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
                f"integer or boolean arrays are valid indices; got {type(item).__name__}"
            )
    return tuple(template), dyn


# -- describing, recording ------------------------------------------------------------------


def bind(
    op: OpKind,
    args: Sequence[Any],
    attrs: Mapping[str, Any] | None = None,
    name: str | None = None,
    meta: dict | None = None,
) -> Tensor | None:
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
    result = ctx.bind(op, args, attrs, name, meta)
    if op.group in _VIEW_GROUPS and result is not None and args and isinstance(args[0], Tensor):
        step = _view_step(op, args, result)
        if step is not None:
            source = args[0]
            root = source._root
            result._root = source if root is None else root
            result._steps = (step,) if root is None else source._steps + (step,)
            result._seen = result._root._version
    return result


_VIEW_GROUPS = (OpGroup.SHAPE, OpGroup.INDEXING)
