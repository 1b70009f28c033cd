"""Per-block programs: what one Dask task runs on the NumPy blocks it is given.

A fused segment of the graph becomes one ``blockwise`` task per block, and that task calls a
:class:`BlockProgram`: the segment's compiled Numba kernel (the same kernel text the fused
executor writes, :func:`kernel_ext.backends.codegen.generate`) on the block, or, where no kernel
covers the segment, the segment's ops through NumPy (the reference interpreter's ``LOWER``).
A segment ending in a reduction returns the block's *partial* reduction (reduced axes kept,
one element each, in the accumulator's dtype), which Dask's tree reduction then combines.

Shipping programs to workers. A program pickles small: the segment's ops detached from the
graph around them (:func:`detach`: placeholders stand in for its inputs) and the kernel's
source text with its call description (:class:`~kernel_ext.backends.codegen.KernelSource`),
never a compiled dispatcher. A process running a program compiles each kernel variant once,
or loads it from the on-disk kernel cache (:mod:`kernel_ext.backends.kernel_cache`) when a
process on the machine compiled it before: :func:`~kernel_ext.backends.compiler.handle_for`
is a per-process table keyed by the kernel's source hash, and a lock makes the threads of a
worker wait for one compile instead of starting their own. :data:`COMPILES` counts, per
process, the variants this process compiled or loaded (what a test reads on each worker).

A kernel's ``bad`` flag (a value only NumPy defines, such as a NaN cast to an integer) and
an empty block rerun the block through NumPy, as the fused executor's runners do. Nothing
here imports Dask; Numba is imported by the compiler, the first time a kernel is needed.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ...ir import Node, OpKind
from ...ir.interpreter import LOWER
from ..codegen import KernelSource, ReductionPlan
from ..compiler import handle_for
from ..segment_call import Arg
from ..ufunc_loops import find_loop

#: ``"<kernel hash>:<variant>"`` -> how many times this process compiled (or loaded from the
#: disk cache) that kernel variant: 1 once a block needed it, whatever the number of tasks.
COMPILES: dict[str, int] = {}
_COMPILE_LOCK = threading.Lock()


class Partial(NamedTuple):
    """How a block's partial reduction is computed with NumPy: ``np.<function>(value,
    axis=axes, keepdims=True, **params)``, the value first cast to ``value_dtype`` (when
    given), the partial returned in ``acc_dtype``."""

    function: str
    axes: tuple[int, ...]
    params: dict
    value_dtype: np.dtype | None
    acc_dtype: np.dtype

    def __call__(self, value: Any) -> np.ndarray:
        x = np.asarray(value)
        if self.value_dtype is not None and x.dtype != self.value_dtype:
            x = x.astype(self.value_dtype)
        reduce = getattr(np, self.function)
        return np.asarray(
            reduce(x, axis=self.axes, keepdims=True, **self.params), dtype=self.acc_dtype
        )


def detach(
    nodes: Sequence[Node], inputs: Sequence[Node]
) -> tuple[list[Node], list[Node], dict[Node, Node]]:
    """Copies of ``nodes`` that read placeholders in place of ``inputs``: what a program
    pickles is its own ops, not the graph upstream of them. Returns ``(placeholders,
    copies, original -> copy)``; their ``meta`` (annotations) is left out."""
    mapping: dict[Node, Node] = {}
    placeholders = []
    for i, n in enumerate(inputs):
        p = Node(f"in{i}", OpKind.PLACEHOLDER, (), {}, n.aval)
        mapping[n] = p
        placeholders.append(p)
    copies = []
    for n in nodes:
        args = tuple(mapping[a] if isinstance(a, Node) else a for a in n.args)
        c = Node(n.name, n.op, args, dict(n.params), n.aval)
        mapping[n] = c
        copies.append(c)
    return placeholders, copies, mapping


class _KernelState:
    """A kernel in this process: its handle (compiled variants) and NumPy's loop addresses."""

    def __init__(self, ksrc: KernelSource) -> None:
        self.ksrc = ksrc
        self.handle = handle_for(ksrc)
        call = ksrc.call
        assert call is not None
        self.loops: list[tuple[np.uintp, np.uintp] | None] = []
        for ufunc, dtypes in call.loops:
            found = find_loop(ufunc, dtypes)
            self.loops.append(None if found is None else (np.uintp(found[0]), np.uintp(found[1])))

    def variant(self, name: str) -> Any:
        """The compiled ``flat``/``nd`` kernel, compiled (or loaded) now if this process has
        not yet; None when it failed to compile (the block then runs through NumPy)."""
        compiled = getattr(self.handle, name)
        if compiled is not None:
            return compiled
        if None in self.loops:
            return None  # (a NumPy loop this process cannot locate: NumPy computes)
        with _COMPILE_LOCK:  # one compile per process, however many threads need it
            compiled = getattr(self.handle, name)
            if compiled is None and self.handle.state.get(name) != "failed":
                self.handle.compile(name)
                key = f"{self.ksrc.key}:{name}"
                COMPILES[key] = COMPILES.get(key, 0) + 1
                compiled = getattr(self.handle, name)
        return compiled


_STATES: dict[str, _KernelState] = {}


def _kernel_state(ksrc: KernelSource) -> _KernelState:
    state = _STATES.get(ksrc.key)
    if state is None:
        with _COMPILE_LOCK:
            state = _STATES.get(ksrc.key)
            if state is None:
                state = _STATES[ksrc.key] = _KernelState(ksrc)
    return state


class BlockProgram:
    """What one ``blockwise`` task runs: a segment's ops on one block of each input.

    ``nodes`` are the segment's elementwise ops in program order, ``inputs`` the values they
    read from outside, ``outputs`` those the task returns (one array, or a tuple of them).
    With ``partial`` the task instead returns the partial reduction of ``outputs[0]``
    (:class:`Partial`). ``kernel``: the segment's Numba kernel, whose outputs are ``outputs``;
    with ``kernel_reduces`` its one output is the reduction of ``outputs[0]`` instead, whose
    accumulator is the partial (``partial`` then computes the same partial with NumPy, in the
    accumulator's dtype, for the blocks NumPy computes).
    """

    def __init__(
        self,
        nodes: Sequence[Node],
        inputs: Sequence[Node],
        outputs: Sequence[Node],
        kernel: KernelSource | None = None,
        partial: Partial | None = None,
        kernel_reduces: bool = False,
    ) -> None:
        placeholders, copies, mapping = detach(nodes, inputs)
        self.inputs = placeholders
        self.input_names = [n.name for n in inputs]  # (the graph's names, in call order)
        self.nodes = copies
        self.outputs = [mapping[o] for o in outputs]
        self.kernel = kernel
        self.partial = partial
        self.kernel_reduces = kernel_reduces
        what = "|".join(f"{n.op.value}" for n in nodes)
        self.name = f"kx-{what[:40]}"
        self.key = hashlib.sha256(
            repr(
                (kernel.key if kernel else None, what, partial, len(inputs), len(outputs))
            ).encode()
        ).hexdigest()[:16]
        self._chain: Callable[..., dict] | None = None

    # -- pickling: the ops and the kernel text travel, never compiled code ------------------
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_chain"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        how = "numba kernel" if self.kernel is not None else "NumPy"
        return f"<BlockProgram {self.name} ({how})>"

    # -- running ----------------------------------------------------------------------------
    def __call__(self, *blocks: Any) -> Any:
        if self.kernel is not None:
            values = self._kernel(blocks)
            if values is not None:
                if self.partial is None:
                    return _pack(values)
                return values[0] if self.kernel_reduces else self.partial(values[0])
        values = self._numpy(blocks)
        if self.partial is not None:
            return self.partial(values[0])
        return _pack(values)

    def _numpy(self, blocks: Sequence[Any]) -> list[Any]:
        """The segment's ops through NumPy, in program order (the reference semantics)."""
        chain = self._chain
        if chain is None:
            chain = self._chain = _numpy_chain(self.nodes, self.inputs)
        env = chain(*blocks)
        return [np.asarray(env[o], dtype=o.dtype) for o in self.outputs]

    def _kernel(self, blocks: Sequence[Any]) -> list[Any] | None:
        """The kernel's results for these blocks (map outputs, or the partial reduction),
        or None where NumPy must compute the block (an empty block, a ``bad`` flag, a
        kernel that failed to compile)."""
        ksrc = self.kernel
        assert ksrc is not None and ksrc.call is not None
        call = ksrc.call
        blocks = [np.asarray(b) for b in blocks]
        arrays = [blocks[i] for i in call.array_inputs]
        shp = _domain(arrays, call.rank)
        if shp is None:
            return None
        rank = call.rank
        n = math.prod(shp)
        if n == 0:
            return None
        flat = call.has_flat and all(a.shape == shp and a.flags.c_contiguous for a in arrays)
        state = _kernel_state(ksrc)
        variant = "flat" if flat else "nd"
        fn = state.variant(variant)
        if fn is None:
            return None
        outs = {i: np.empty(n if flat else shp, call.output_dtypes[i]) for i in call.map_outputs}
        red = call.reduction
        acc = None
        if red is not None and not flat:
            acc = _block_accumulator(red, shp)
        run = _BlockCall(blocks, shp, n, flat, outs, acc, state.loops)
        result = fn(*[_argument(run, arg) for arg in call.args(variant)])
        if red is not None and flat:
            bad, total = result
            acc = np.full((1,) * rank, total, red.acc_dtype)
        else:
            bad = result
        if bad:
            return None
        n_outputs = len(self.outputs)
        return [outs[j].reshape(shp) if j in outs else acc for j in range(n_outputs)]


def _domain(arrays: Sequence[np.ndarray], rank: int) -> tuple[int, ...] | None:
    """The shape the arrays broadcast to, when they do and it has the kernel's ``rank``
    (at least 1), else None."""
    try:
        shp = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
    except ValueError:
        return None
    if rank == 0 or len(shp) != rank:
        return None
    return shp


def _block_accumulator(red: ReductionPlan, shp: tuple[int, ...]) -> np.ndarray:
    """The ``nd`` kernel's accumulator for a block of shape ``shp``: the reduced axes kept,
    one element each, filled with the reduction's identity."""
    acc_shape = tuple(1 if red.axis is None or d == red.axis else s for d, s in enumerate(shp))
    return np.full(acc_shape, red.identity, red.acc_dtype)


class _BlockCall(NamedTuple):
    """One kernel call on one task's blocks: what its parameters are made of."""

    blocks: list[np.ndarray]
    shape: tuple[int, ...]
    n: int
    flat: bool
    outs: dict[int, np.ndarray]
    acc: np.ndarray | None
    loops: list[tuple[np.uintp, np.uintp] | None]


def _start(run: _BlockCall, i: int) -> Any:
    return 0


def _stop(run: _BlockCall, i: int) -> Any:
    return run.n


def _dim(run: _BlockCall, i: int) -> Any:
    return run.shape[i]


def _array(run: _BlockCall, i: int) -> Any:
    """Input ``i``'s block: a contiguous 1-d view (``flat``), else broadcast to the domain."""
    a = run.blocks[i]
    if run.flat:
        return a.ravel()
    return a if a.shape == run.shape else np.broadcast_to(a, run.shape)


def _scalar(run: _BlockCall, i: int) -> Any:
    return run.blocks[i][()]


def _output(run: _BlockCall, i: int) -> Any:
    return run.outs[i]


def _acc(run: _BlockCall, i: int) -> Any:
    return run.acc


def _loop_address(run: _BlockCall, i: int) -> Any:
    loop = run.loops[i]
    assert loop is not None
    return loop[0]


def _loop_data(run: _BlockCall, i: int) -> Any:
    loop = run.loops[i]
    assert loop is not None
    return loop[1]


#: The value of a CPU kernel's parameter, by its kind
#: (:class:`~kernel_ext.backends.segment_call.Arg`).
_ARGUMENTS: dict[str, Callable[[_BlockCall, int], Any]] = {
    "start": _start,
    "stop": _stop,
    "dim": _dim,
    "array": _array,
    "scalar": _scalar,
    "output": _output,
    "acc": _acc,
    "loop": _loop_address,
    "loop_data": _loop_data,
}


def _argument(run: _BlockCall, arg: Arg) -> Any:
    """The value passed for kernel parameter ``arg``."""
    value = _ARGUMENTS.get(arg.kind)
    if value is None:  # pragma: no cover - a CPU kernel takes nothing else
        raise AssertionError(f"a CPU kernel has no {arg.kind!r} parameter")
    return value(run, arg.index)


def _pack(values: list[Any]) -> Any:
    """A task's result: one value or a tuple; a 0-d value as a NumPy scalar, so that
    ``.compute()`` gives what the NumPy executor returns (``np.float32(…)``, never a 0-d
    array)."""
    values = [v[()] if isinstance(v, np.ndarray) and v.ndim == 0 else v for v in values]
    return values[0] if len(values) == 1 else tuple(values)


def _numpy_chain(nodes: Sequence[Node], inputs: Sequence[Node]) -> Callable[..., dict]:
    """The NumPy function of ``nodes`` on one block of each input: node -> value."""
    fns = [(n, LOWER[n.op](n)) for n in nodes]

    def chain(*blocks: Any) -> dict:
        env: dict[Node, Any] = dict(zip(inputs, blocks))
        for n, fn in fns:
            env[n] = fn(*[env[a] if isinstance(a, Node) else a for a in n.args])
        return env

    return chain


__all__ = ["COMPILES", "BlockProgram", "Partial", "detach"]
