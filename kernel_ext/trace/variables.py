"""``kx.Variable``: mutable state that graphs capture by reference (``tf.Variable`` for NumPy).

Eagerly a Variable holds a read-only NumPy array and takes part in NumPy expressions like one
(``1 + v``, ``np.sum(v)``, ``v * x``). Inside a trace every use becomes a ``read_variable`` node
and ``assign``/``assign_add``/``assign_sub`` become stateful nodes, in program order, so a read
sees the writes before it and every call of the graph reads the current value.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import errors
from ..ir import NDARRAY_METHODS, OpKind
from .operators import NumpyOperators
from .state import current_context
from .tensor import Tensor, describe_tensor

_ids = itertools.count()

#: Variables smaller than this are updated by replacing their buffer, larger ones in place
#: (:meth:`Variable.update_in_place`). A large buffer comes from ``mmap``, fresh pages every
#: time: a 64 MiB ``assign_sub`` took 21.2 ms replaced, 13.8 ms in place. A small one comes
#: from malloc's free lists, and keeping it where it is saved nothing measurable in W8 (an
#: 800 KiB layer) but left the step's temporaries at the top of the heap, which glibc then
#: returned to the OS after every step: ~860 page faults a step, 2.0 -> 3.3 ms.
IN_PLACE_MIN_BYTES = 4 << 20


class Variable(NumpyOperators):
    """A named, typed, shaped array whose value graphs read and write at run time.

    ``storage`` is the current value, a read-only ndarray that :meth:`store` replaces; the
    executors' variable reads and writes (``ir.interpreter``) use these two at run time.

    Updates in place: a training step's ``assign_sub`` would allocate a new array per
    variable per step; :meth:`update_in_place` writes into the current buffer instead when
    nobody else can see it. Every way the buffer leaves this object (the ``storage``
    attribute, ``np.asarray(v)``, an eager read) marks it *exposed*; the executors read it
    with :meth:`peek` where they proved the value dies inside the call
    (``backends/inplace.py``). A buffer :meth:`store` made itself starts private again.
    """

    __array_priority__ = 20

    def __init__(
        self, initial_value: Any, dtype: Any = None, name: str | None = None, trainable: bool = True
    ) -> None:
        if callable(initial_value):
            initial_value = initial_value()
        if isinstance(initial_value, Variable):
            initial_value = initial_value.peek()  # (copied below)
        if isinstance(initial_value, Tensor):
            raise errors.VariableCreationError(
                f"kx.Variable(initial_value=...) got the traced value "
                f"{describe_tensor(initial_value)}; a variable's initial value must be "
                "concrete. "
                "Fix: create the variable outside the function from a NumPy array, or with a "
                "value computed from constants only."
            )
        value = np.array(initial_value, dtype=dtype, copy=True)
        if value.dtype.kind in "OUSV":
            raise TypeError(
                f"kx.Variable needs a numeric or bool initial value, got dtype "
                f"{value.dtype} from {type(initial_value).__name__}"
            )
        value.setflags(write=False)
        self._storage = value
        self._exposed = False  # has the buffer been handed to anyone (see the class doc)?
        self.name = name or f"Variable_{next(_ids)}"
        self.trainable = trainable
        ctx = current_context()
        if ctx is not None:
            ctx.on_variable_created(self)

    # -- the buffer ---------------------------------------------------------------------------
    @property
    def storage(self) -> np.ndarray:
        """The current value itself (read-only; no copy): whoever takes it may keep it, so
        the variable's later updates replace the buffer rather than write into it."""
        self._exposed = True
        return self._storage

    @storage.setter
    def storage(self, value: np.ndarray) -> None:
        self._storage = value
        self._exposed = True  # (an array the caller made: the caller holds it)

    def peek(self) -> np.ndarray:
        """The current buffer, not marked exposed: for an executor's read whose value (and
        every view of it) it has proved dead before the call returns."""
        return self._storage

    def update_in_place(self, kind: str, value: Any) -> bool:
        """``assign``/``add``/``sub`` ``value`` into the current buffer itself; False (nothing
        done) when the buffer may be seen by anyone else, is smaller than
        :data:`IN_PLACE_MIN_BYTES`, or the result would not have the variable's dtype and
        shape without a cast — the caller then replaces it (:meth:`store`), as it always
        may.

        The bits are those of the out-of-place update: the same ufunc loop, writing into the
        old buffer (NumPy copies an operand that overlaps the output first)."""
        buf = self._storage
        if (
            buf.nbytes < IN_PLACE_MIN_BYTES
            or self._exposed
            or not buf.flags.owndata
            or type(value) is not np.ndarray
            or value.dtype != buf.dtype
            or value.ndim > buf.ndim
            or value.shape != buf.shape[buf.ndim - value.ndim :]
        ):
            return False
        # (a value of the variable's dtype and a trailing shape broadcasts to the buffer)
        buf.flags.writeable = True
        try:
            if kind == "assign":
                np.copyto(buf, value)
            elif kind == "add":
                np.add(buf, value, out=buf)
            else:
                np.subtract(buf, value, out=buf)
        finally:
            buf.flags.writeable = False
        return True

    # -- static facts -------------------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self._storage.dtype

    @property
    def shape(self) -> tuple:
        return self._storage.shape

    @property
    def ndim(self) -> int:
        return self._storage.ndim

    @property
    def size(self) -> int:
        return self._storage.size

    # -- reading ------------------------------------------------------------------------------
    def read_value(self) -> Any:
        """The current value: a traced read inside a trace, a copy eagerly (under an eager
        ``GradientTape`` that watches the variable: a recording array)."""
        value = self._read(expose=False)
        return value.copy() if value is self._storage else value

    value = read_value

    def numpy(self) -> np.ndarray:
        """A copy of the current value (eager only)."""
        if current_context() is not None:
            raise errors.SymbolicValueError(
                f"Variable '{self.name}'.numpy() inside a traced function would freeze today's "
                "value into the graph. Fix: use the variable directly in NumPy expressions (it "
                "is read at every call), or kx.print(v) to see it at run time."
            )
        return self._storage.copy()

    def _read(self, expose: bool = True) -> Any:
        """The value a read sees: traced in a trace, a recording under an eager tape, else
        the buffer (marked exposed unless the caller only looks: ``expose=False``)."""
        ctx = current_context()
        if ctx is not None:
            return ctx.read_variable(self)
        if EAGER_READ_HOOK[0] is not None:
            recording = EAGER_READ_HOOK[0](self)
            if recording is not None:
                return recording
        return self.storage if expose else self._storage

    # -- writing ------------------------------------------------------------------------------
    def store(self, value: Any, owned: bool = False) -> None:
        """Replace :attr:`storage` by ``value`` (cast same_kind, broadcast to the variable's
        shape): the run-time write, which the graph's assign ops call. ``owned``: ``value`` is
        a new array nobody else holds (``assign_add``'s own sum), kept without a copy when it
        already has the variable's dtype and shape."""
        if (
            owned
            and type(value) is np.ndarray
            and value.dtype == self.dtype
            and value.shape == self.shape
            and value.flags.owndata
        ):
            value.setflags(write=False)
            self._storage, self._exposed = value, False
            return
        arr = np.asarray(value)
        if arr.dtype != self.dtype:
            if not np.can_cast(arr.dtype, self.dtype, casting="same_kind"):
                raise TypeError(
                    f"cannot assign a {arr.dtype} value to variable '{self.name}' of "
                    f"dtype {self.dtype} (same_kind casting). Fix: cast with "
                    f".astype(np.{self.dtype.name}) first."
                )
            arr = arr.astype(self.dtype)
        if arr.shape != self.shape:
            try:
                arr = np.broadcast_to(arr, self.shape)
            except ValueError:
                raise ValueError(
                    f"cannot assign a value of shape {arr.shape} to variable "
                    f"'{self.name}' of shape {self.shape}"
                ) from None
        new = np.array(arr, copy=True)
        new.setflags(write=False)
        self._storage, self._exposed = new, False

    def _write(self, kind: str, value: Any) -> Variable:
        op = {
            "assign": OpKind.ASSIGN_VARIABLE,
            "add": OpKind.ASSIGN_ADD_VARIABLE,
            "sub": OpKind.ASSIGN_SUB_VARIABLE,
        }[kind]
        ctx = current_context()
        if ctx is None:
            if isinstance(value, Tensor):
                value.context.check_owned(value)
            if self.update_in_place(kind, value):  # (nobody holds the buffer)
                return self
            if kind == "add":
                value = np.add(self._storage, value)
            elif kind == "sub":
                value = np.subtract(self._storage, value)
            self.store(value, owned=kind != "assign")  # (a sum or difference is ours)
        else:
            ctx.graph.create_node(
                op, (ctx.lift(value),), {"variable": self}, name=f"{self.name}/{op.value}"
            )
        return self

    def assign(self, value: Any) -> Variable:
        """Set the value (a stateful graph op inside a trace)."""
        return self._write("assign", value)

    def assign_add(self, delta: Any) -> Variable:
        return self._write("add", delta)

    def assign_sub(self, delta: Any) -> Variable:
        return self._write("sub", delta)

    # -- NumPy protocols: a Variable behaves as its current value -------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if current_context() is not None:
            raise errors.TracingConversionError(
                f"NumPy tried to convert Variable '{self.name}' into a concrete array while "
                "tracing; that would freeze its current value into the graph. Fix: use the "
                "variable directly in NumPy functions and operators (they read it at run time)."
            )
        return self.storage if dtype is None else self._storage.astype(dtype)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        inputs = tuple(resolve(x) for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(resolve(x) for x in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
        return func(*_resolve_nested(args), **_resolve_nested(kwargs))

    def __getitem__(self, key: Any) -> Any:
        return self._read()[key]

    def __len__(self) -> int:
        return len(self._storage)

    def __bool__(self) -> bool:
        return bool(self._read(expose=False))

    def __int__(self) -> int:
        return int(self._read(expose=False))

    def __float__(self) -> float:
        return float(self._read(expose=False))

    def __index__(self) -> int:
        return self._read(expose=False).__index__()

    __hash__ = object.__hash__  # identity: variables key traces by identity

    def __repr__(self) -> str:
        return (
            f"<kx.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, "
            f"numpy={np.array_repr(self._storage)}>"
        )

    def __str__(self) -> str:
        return str(self._storage)

    # methods that read the value
    def astype(self, dtype: Any) -> Any:
        return self._read().astype(dtype)

    def reshape(self, *shape: Any) -> Any:
        return self._read().reshape(*shape)

    @property
    def T(self) -> Any:
        return self._read().T


#: Set by ``kernel_ext.autodiff`` (a layer above): called on an eager read while an eager
#: ``GradientTape`` records; returns the tape's recording array of the value, or ``None``.
EAGER_READ_HOOK: list[Callable[[Variable], Any] | None] = [None]


def resolve(x: Any) -> Any:
    """``x``'s current value if it is a :class:`Variable` (a traced read inside a trace, the
    read-only stored array eagerly, no copy), else ``x`` itself."""
    return x._read() if isinstance(x, Variable) else x


def _resolve_nested(x: Any) -> Any:
    if isinstance(x, Variable):
        return x._read()
    if isinstance(x, (list, tuple)):
        return type(x)(_resolve_nested(v) for v in x)
    if isinstance(x, dict):
        return {k: _resolve_nested(v) for k, v in x.items()}
    return x


def _reduction_method(name: str) -> Callable[..., Any]:
    fn = getattr(np, name)

    def method(self: Variable, *args: Any, **kwargs: Any) -> Any:
        return fn(self._read(), *args, **kwargs)

    method.__name__ = name
    return method


# The ndarray methods of every reduction and scan op (named after the op), on the value read.
for _kind in NDARRAY_METHODS:
    setattr(Variable, _kind.value, _reduction_method(_kind.value))

# Variable has no in-place operators (NumpyOperators without inplace=True): ``v += 1`` rebinds
# the Python name, as on any immutable value; assign_add() changes the variable itself
# (TensorFlow's rule too).
