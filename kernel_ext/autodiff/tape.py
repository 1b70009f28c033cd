"""``kx.GradientTape`` and ``kx.stop_gradient``: which computation to differentiate.

Inside a trace a tape needs to record nothing of its own: the trace's graph already holds
every op in program order. A tape remembers which stretches of its trace's node list were
made while it recorded (``with tape:`` minus ``stop_recording()``), which tensors it was asked
to ``watch`` and which variables were read meanwhile; ``gradient`` runs the backward pass
(:mod:`~kernel_ext.autodiff.backward`) over exactly those nodes, into the current trace.

Eagerly (no trace running), ``x = tape.watch(x)`` returns a recording array: plain NumPy
code on it is recorded into a trace the tape owns (:mod:`kernel_ext.autodiff.eager`), and
``gradient`` differentiates that trace and evaluates it with NumPy's reference interpreter;
trainable variables read under the tape are recorded the same way. Eager tapes that record at
the same time (a tape inside a tape) share one trace (:class:`_EagerTrace`), each
differentiating only what was recorded while it recorded; the inner tape's ``gradient``
builds its backward pass into that trace while the outer one records, so its result is a
recording array of the outer tape and the outer tape differentiates it again: second order
eagerly, as TensorFlow's nested tapes give it. For the seed's form,
``tape.watch(v)`` with plain arrays passed to ``kx.function`` calls, the tape records each one
made under it (the engine reports them: :func:`record_call`) with its arguments and results;
``gradient`` replays them as one trace, in order, with the watched arrays and variables as
its inputs (their Python bodies run again; variables are read at the time of the
``gradient`` call).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import numpy as np

from .. import errors
from ..ir import Node, OpKind, interpret, subgraphs
from ..trace import Tensor, TraceContext, Variable, current_context
from ..trace.state import ACTIVITY
from ..trace.variables import EAGER_READ_HOOK
from ..trace.zero_d import mark_scalar
from .backward import backward, differentiable, recording_trace
from .eager import RecordingArray, same_trace, stop_recorded, watch_array, wrap

_local = threading.local()
_UNCONNECTED = ("none", "zero")


def eager_tapes() -> list[GradientTape]:
    """This thread's eager tapes that are recording, outermost first."""
    tapes = getattr(_local, "tapes", None)
    if tapes is None:
        tapes = _local.tapes = []
    return tapes


def record_call(replay: Callable[[Sequence[Any]], Any], values: Sequence[Any], result: Any) -> None:
    """The engine reports one eager ``kx.function`` call (its bound argument ``values`` and
    ``result``) to every recording eager tape; ``replay(values)`` runs its Python body."""
    for tape in eager_tapes():
        if tape.recording:
            tape.calls.append((replay, tuple(values), result))


def _read_under_tape(var: Variable) -> Any:
    """The eager read hook of ``kx.Variable`` (``trace.variables.EAGER_READ_HOOK``): under a
    recording eager tape that watches ``var``, a read yields a recording array."""
    for tape in reversed(eager_tapes()):
        if tape.recording and tape.watches_on_read(var):
            return tape.eager_read(var)
    return None


def stop_gradient(x: Any) -> Any:
    """``x``, through which no gradient flows (``tf.stop_gradient``, ``jax.lax.stop_gradient``):
    a ``copy`` node marked ``stop_gradient`` inside a trace or an eager tape's recording (a
    watched array, a variable read under the tape), ``x`` itself for plain values."""
    if isinstance(x, Variable):
        x = x.read_value()  # (under a tape that watches it: a recording array)
    if isinstance(x, RecordingArray):
        return stop_recorded(x)
    if isinstance(x, Tensor):
        ctx = recording_trace()
        return ctx.bind(OpKind.COPY, (x,), {"stop_gradient": True}, name="StopGradient")
    if isinstance(x, (list, tuple)):
        return type(x)(stop_gradient(v) for v in x)
    if isinstance(x, dict):
        return {k: stop_gradient(v) for k, v in x.items()}
    return x


class _EagerTrace:
    """The trace eager tapes record plain NumPy code into, with the values of its inputs
    (watched arrays, variable reads). Tapes that record at the same time share one."""

    def __init__(self) -> None:
        self.ctx = TraceContext("gradient_tape")
        self.feeds: dict[Node, Any] = {}
        self.var_reads: dict[int, list[tuple[Node, Any]]] = {}
        self.tapes: list[GradientTape] = []  # the tapes recording into it

    def recording(self) -> bool:
        """Does a tape record into this trace now?"""
        return any(t.recording for t in self.tapes)


class GradientTape:
    """Records operations for automatic differentiation (``tf.GradientTape`` for NumPy).

    ``persistent``: ``gradient`` may be called more than once. ``watch_accessed_variables``:
    trainable ``kx.Variable``\\ s read while recording are watched automatically. Works inside
    a ``kx.function`` (it differentiates the traced graph) and eagerly around calls of
    ``kx.function``\\ s (see the module docstring).
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self.persistent = persistent
        self.watch_accessed_variables = watch_accessed_variables
        self._ctx: TraceContext | None = None
        self._intervals: list[list[int]] = []  # [start, end) in the trace's node list
        self._watched_nodes: set[Node] = set()
        self._watched_vars: dict[int, Variable] = {}
        self._watched_arrays: dict[int, Any] = {}  # eager: id -> the array (kept alive)
        #: eager: the kx.function calls made under the tape (replay, values, result)
        self.calls: list[tuple[Callable, tuple, Any]] = []
        self.recording = False
        self._entered = False
        self._used = False
        # eager recording of plain NumPy code: the (possibly shared) trace, and the
        # stretches of its node list made while this tape recorded ([start, end))
        self._trace: _EagerTrace | None = None
        self._eager_intervals: list[list[int]] = []

    # -- recording ---------------------------------------------------------------------------
    def __enter__(self) -> GradientTape:
        if self.recording:
            raise ValueError("this GradientTape is already recording (entered twice)")
        self._ctx = current_context() if self._ctx is None else self._ctx
        self._entered = True
        self._start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop()

    def _start(self) -> None:
        self.recording = True
        if self._ctx is None:
            if self._trace is None:
                # a tape inside a tape joins the trace of the one recording around it
                around = [t for t in eager_tapes() if t._trace is not None]
                # (around: the tapes with a trace)
                self._trace = cast("_EagerTrace", around[-1]._trace) if around else _EagerTrace()
            if self not in self._trace.tapes:
                self._trace.tapes.append(self)
            self._eager_intervals.append([len(self._trace.ctx.graph.nodes), -1])
            eager_tapes().append(self)
            EAGER_READ_HOOK[0] = _read_under_tape  # variable reads yield recording arrays
            with ACTIVITY.lock:  # keeps kx.function calls off the cache-hit path meanwhile
                ACTIVITY.depth += 1
        else:
            self._intervals.append([len(self._ctx.graph.nodes), -1])

    def _stop(self) -> None:
        if not self.recording:
            return
        self.recording = False
        if self._ctx is None:
            self._eager_intervals[-1][1] = len(self._trace.ctx.graph.nodes)  # type: ignore
            eager_tapes().remove(self)
            if not eager_tapes():
                EAGER_READ_HOOK[0] = None
            with ACTIVITY.lock:
                ACTIVITY.depth -= 1
        else:
            self._intervals[-1][1] = len(self._ctx.graph.nodes)

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """A block whose operations the tape does not record."""
        if not self.recording:
            raise ValueError(
                "GradientTape.stop_recording() needs a recording tape (inside its `with` block)"
            )
        self._stop()
        try:
            yield
        finally:
            self._start()

    def reset(self) -> None:
        """Forget everything recorded and watched (a recording tape goes on recording)."""
        recording = self.recording
        self._stop()
        self._intervals.clear()
        self._watched_nodes.clear()
        self._watched_vars.clear()
        self._watched_arrays.clear()
        self.calls.clear()
        if self._trace is not None and self in self._trace.tapes:
            self._trace.tapes.remove(self)
        self._trace = None
        self._eager_intervals.clear()
        self._used = False
        if recording:
            self._start()

    def watch(self, value: Any) -> Any:
        """Differentiate with respect to ``value`` (a traced value, an array, a variable, or
        a nested structure of them), and return it.

        Eagerly, the arrays come back as *recording arrays* (``x = tape.watch(x)``): NumPy
        code on them is recorded, so the tape can differentiate plain NumPy (see
        :mod:`kernel_ext.autodiff.eager`). TensorFlow's ``watch`` returns ``None`` because a
        ``tf.Tensor`` is already an object TensorFlow controls; a NumPy array is not, so the
        recording stand-in must be handed back, and only code that uses the returned array
        is recorded. Inside a ``kx.function`` (and for variables) the value comes back as
        it is."""
        for leaf in _leaves(value):
            if isinstance(leaf, Variable):
                self._watched_vars[id(leaf)] = leaf
            elif isinstance(leaf, Tensor):
                self._watched_nodes.add(leaf.node)
            elif isinstance(leaf, (np.ndarray, np.generic)):
                self._watched_arrays[id(leaf)] = leaf
            else:
                raise TypeError(
                    f"GradientTape.watch takes arrays, traced values and "
                    f"kx.Variables, not {type(leaf).__name__}"
                )
        if self._ctx is not None or current_context() is not None:
            return value
        return _rebuild(value, iter(self._recording(leaf) for leaf in _leaves(value)))

    def _recording(self, leaf: Any) -> Any:
        if (
            not isinstance(leaf, (np.ndarray, np.generic))
            or np.asarray(leaf).dtype.kind not in "fc"
        ):
            return leaf
        if (
            isinstance(leaf, RecordingArray)
            and leaf._kx_tensor is not None
            and same_trace(leaf._kx_tape, self)
        ):
            return leaf  # already recorded (by this tape, or one this tape is inside)
        trace = self._eager_trace()
        rec = watch_array(self, leaf, f"watched_{len(trace.feeds)}")
        recorded = cast("Tensor", rec._kx_tensor)  # (watch_array records it)
        trace.feeds[recorded.node] = np.asarray(rec.view(np.ndarray))
        self._watched_arrays[id(rec)] = rec
        return rec

    # -- the eager recording of plain NumPy code (kernel_ext.autodiff.eager) ---------------
    def _eager_trace(self) -> _EagerTrace:
        if self._trace is None:
            self._trace = _EagerTrace()
            self._trace.tapes.append(self)
        return self._trace

    def eager_context(self) -> TraceContext:
        """The trace this eager tape records NumPy code on recording arrays into."""
        return self._eager_trace().ctx

    def recording_eagerly(self) -> bool:
        """Is NumPy code on this tape's recording arrays recorded now (by this tape, or by
        a tape around it that shares its trace)?"""
        return self._ctx is None and self._trace is not None and self._trace.recording()

    def _eager_recorded(self) -> set[Node]:
        """The nodes of the eager trace made while this tape recorded."""
        nodes = self._eager_trace().ctx.graph.nodes
        return {
            n
            for start, end in self._eager_intervals
            for n in nodes[start : len(nodes) if end < 0 else end]
        }

    def eager_read(self, var: Variable, tensor: bool = False) -> Any:
        """A read of ``var`` on this eager tape: a recording array of its current value (or
        its traced stand-in), one source per stored value of the variable."""
        storage = var.storage
        trace = self._eager_trace()
        reads = trace.var_reads.setdefault(id(var), [])
        for node, seen in reads:  # noqa: B007 - the read found is used after the loop
            if seen is storage:
                break
        else:
            ctx = self.eager_context()
            # (re-entering a trace that is current would end it on the inner exit)
            with contextlib.nullcontext() if current_context() is ctx else ctx:
                node = ctx.placeholder(
                    f"{var.name.split(':')[0]}_read",
                    storage.shape,
                    storage.dtype,
                    ("variable", var.name),
                ).node
            reads.append((node, storage))
            trace.feeds[node] = storage
        t = self.eager_context().tensor(node)
        return t if tensor else wrap(storage, t, self)

    def watches_on_read(self, var: Variable) -> bool:
        return id(var) in self._watched_vars or (self.watch_accessed_variables and var.trainable)

    def watched_variables(self) -> tuple[Variable, ...]:
        """The variables watched explicitly or read while recording (trainable ones)."""
        found = dict(self._watched_vars)
        if self.watch_accessed_variables and self._ctx is not None:
            stack = list(self._recorded_nodes())
            while stack:  # branch and loop bodies included
                node = stack.pop()
                if node.op is OpKind.READ_VARIABLE:
                    var = node.params.variable
                    if var.trainable:
                        found.setdefault(id(var), var)
                for graph in subgraphs(node):
                    stack.extend(graph.nodes)
        return tuple(found.values())

    # -- differentiating ---------------------------------------------------------------------
    def gradient(
        self,
        target: Any,
        sources: Any,
        output_gradients: Any = None,
        unconnected_gradients: str = "none",
    ) -> Any:
        """The gradient of ``target`` (summed over its elements, or weighted by
        ``output_gradients``) with respect to each leaf of ``sources``, in the structure of
        ``sources``. A source nothing connects to gets ``None`` (``unconnected_gradients=
        'none'``) or zeros (``'zero'``); integer and boolean sources get the same."""
        if unconnected_gradients not in _UNCONNECTED:
            raise ValueError(
                f"unconnected_gradients must be 'none' or 'zero', not {unconnected_gradients!r}"
            )
        if self._used and not self.persistent:
            raise RuntimeError(
                "A non-persistent GradientTape can only be used to compute one "
                "set of gradients. Fix: GradientTape(persistent=True)."
            )
        if not self._entered:
            raise RuntimeError(
                "GradientTape.gradient needs a tape that recorded something: "
                "use it as `with kx.GradientTape() as tape:`"
            )
        self._used = True
        leaves = _leaves(sources)
        if self._ctx is None and any(
            isinstance(t, RecordingArray)
            and t._kx_tensor is not None
            and same_trace(t._kx_tape, self)
            for t in _leaves(target)
        ):
            grads = self._recorded_gradient(target, leaves, output_gradients)
        elif self._ctx is None:
            grads = self._eager_gradient(target, leaves, output_gradients)
        else:
            grads = self._graph_gradient(target, leaves, output_gradients)
            # a 0-d gradient is a NumPy scalar whichever op the backward pass ended with (as
            # the eager tape's results are): gradients have no eager NumPy form to follow
            grads = [
                mark_scalar(g)
                if isinstance(g, Tensor) and g.shape == () and g.node.op is not OpKind.PLACEHOLDER
                else g
                for g in grads
            ]
        if unconnected_gradients == "zero":
            grads = [np.zeros_like(_value_of(s)) if g is None else g for g, s in zip(grads, leaves)]
        return _rebuild(sources, iter(grads))

    def jacobian(self, target: Any, sources: Any, unconnected_gradients: str = "none") -> Any:
        """``d target[i...] / d source[j...]`` of shape ``target.shape + source.shape`` per
        source: one backward pass per element of ``target`` (meant for small outputs)."""
        shape = np.shape(target) if not isinstance(target, Tensor) else target.shape
        if shape is None or None in shape:
            raise ValueError("GradientTape.jacobian needs a target of static shape")
        size = int(np.prod(shape))
        leaves = _leaves(sources)
        rows: list[list[Any]] = [[] for _ in leaves]
        persistent, self.persistent = self.persistent, True
        try:
            for k in range(size):
                onehot = np.zeros(size, dtype=_dtype_of(target))
                onehot[k] = 1
                self._used = False
                grads = self.gradient(
                    target,
                    leaves,
                    output_gradients=onehot.reshape(shape),
                    unconnected_gradients="zero",
                )
                for r, g in zip(rows, grads):
                    r.append(g)
        finally:
            self.persistent = persistent
        stacked = [
            np.reshape(
                np.stack(r),
                tuple(shape)
                + tuple(
                    np.shape(_value_of(s))
                    if not isinstance(_value_of(s), Tensor)
                    else _value_of(s).shape
                ),
            )
            for r, s in zip(rows, leaves)
        ]
        if unconnected_gradients == "none":
            pass  # zeros are what an unconnected Jacobian is; TensorFlow gives None
        return _rebuild(sources, iter(stacked))

    # -- inside a trace ----------------------------------------------------------------------
    def _recorded_nodes(self) -> list[Node]:
        nodes = self._graph_trace().graph.nodes
        out: list[Node] = []
        for start, end in self._intervals:
            out.extend(nodes[start : len(nodes) if end < 0 else end])
        return out

    def _graph_trace(self) -> TraceContext:
        """The trace this tape records in (called for a tape made inside one)."""
        return cast("TraceContext", self._ctx)

    def _graph_gradient(self, target: Any, leaves: list[Any], output_gradients: Any) -> list[Any]:
        ctx = self._graph_trace()
        if not ctx.active:
            raise errors.LeakedTensorError(
                "GradientTape.gradient was called after the trace the tape recorded in ended. "
                "Fix: compute the gradient inside the same kx.function."
            )
        recorded = set(self._recorded_nodes())
        targets = []
        for t, og in zip(
            _leaves(target),
            _leaves(output_gradients)
            if output_gradients is not None
            else [None] * len(_leaves(target)),
        ):
            if isinstance(t, Variable):
                t = t.read_value()
            if not isinstance(t, Tensor):
                continue
            node = ctx.lift(t) if t.context is not ctx else t.node
            targets.append((node, np.ones_like(t) if og is None else og))
        accessed = {id(v) for v in self.watched_variables()}
        source_nodes: list[list[Node]] = []
        for s in leaves:
            if isinstance(s, Variable):
                if id(s) not in accessed:
                    source_nodes.append([])
                    continue
                reads = [
                    n for n in recorded if n.op is OpKind.READ_VARIABLE and n.params.variable is s
                ]
                if not reads:
                    _refuse_reads_in_subgraphs(s, recorded)
                source_nodes.append(reads)
            elif isinstance(s, Tensor):
                node = s.node if s.context is ctx else None
                if (
                    node is not None
                    and (node in self._watched_nodes or node in recorded)
                    and differentiable(node.aval)
                ):
                    source_nodes.append([node])
                else:
                    source_nodes.append([])
            else:
                source_nodes.append([])
        found = backward(
            ctx, targets, recorded.__contains__, [n for ns in source_nodes for n in ns]
        )
        grads: list[Any] = []
        for ns in source_nodes:
            parts = [found[n] for n in ns if n in found]
            total = None
            for p in parts:
                total = p if total is None else total + p
            grads.append(total)
        return grads

    # -- eagerly, over recorded NumPy code --------------------------------------------------
    def _recorded_gradient(
        self, target: Any, leaves: list[Any], output_gradients: Any
    ) -> list[Any]:
        trace = self._eager_trace()
        ctx = trace.ctx
        target_leaves = _leaves(target)
        ogs = (
            _leaves(output_gradients)
            if output_gradients is not None
            else [None] * len(target_leaves)
        )
        recorded = self._eager_recorded()
        with ctx:
            targets = []
            for t, og in zip(target_leaves, ogs):
                if (
                    isinstance(t, RecordingArray)
                    and same_trace(t._kx_tape, self)
                    and t._kx_tensor is not None
                ):
                    tt = t._kx_tensor
                    targets.append(
                        (
                            ctx.lift(tt),
                            np.ones_like(tt) if og is None else np.asarray(og, dtype=tt.dtype),
                        )
                    )
            source_nodes: list[list[Node]] = []
            for s in leaves:
                if isinstance(s, Variable):
                    ok = self.watches_on_read(s)
                    source_nodes.append(
                        [n for n, _ in trace.var_reads.get(id(s), [])] if ok else []
                    )
                elif (
                    isinstance(s, RecordingArray)
                    and same_trace(s._kx_tape, self)
                    and s._kx_tensor is not None
                ):
                    node = ctx.lift(s._kx_tensor)
                    source_nodes.append([node] if differentiable(node.aval) else [])
                else:
                    source_nodes.append([])
            outputs, slots = _gradient_outputs(ctx, targets, source_nodes, recorded.__contains__)
        ctx.graph.outputs = outputs
        values = interpret(ctx.graph, [trace.feeds[n] for n in ctx.graph.inputs])
        results = [None if i is None else _as_result(values[i]) for i in slots]
        if not trace.recording():
            return results
        # A tape around this one records: the backward pass just built is part of its
        # recording, so the gradients are recorded values it can differentiate again.
        return [
            None if i is None else wrap(r, ctx.tensor(outputs[i]), self)
            for r, i in zip(results, slots)
        ]

    # -- eagerly, replaying kx.function calls ------------------------------------------------
    def _eager_gradient(self, target: Any, leaves: list[Any], output_gradients: Any) -> list[Any]:
        if current_context() is not None:
            raise RuntimeError(
                "an eager GradientTape's gradient() was called while tracing; "
                "call it outside the kx.function, or make the tape inside it"
            )
        ctx = TraceContext("gradient_tape_replay")
        feeds: list[Any] = []
        with ctx:
            tensors: dict[int, Tensor] = {}
            for s in leaves:
                if isinstance(s, Variable) or id(s) not in self._watched_arrays or id(s) in tensors:
                    continue
                arr = np.asarray(s)
                tensors[id(s)] = ctx.placeholder(
                    f"source_{len(feeds)}", arr.shape, arr.dtype, ("source", len(feeds))
                )
                feeds.append(arr)
            for replay, call_args, result in self.calls:
                replayed = replay(_substitute(call_args, tensors))
                for old, new in zip(_leaves(result), _leaves(replayed)):
                    if isinstance(new, Tensor) and isinstance(old, (np.ndarray, np.generic)):
                        tensors[id(old)] = new
            target_leaves = _leaves(target)
            ogs = (
                _leaves(output_gradients)
                if output_gradients is not None
                else [None] * len(target_leaves)
            )
            targets = []
            for t, og in zip(target_leaves, ogs):
                tt = tensors.get(id(t))
                if tt is not None:
                    targets.append(
                        (
                            tt.node,
                            np.ones_like(tt) if og is None else np.asarray(og, dtype=tt.dtype),
                        )
                    )
            watched_vars = {id(v) for v in self._watched_vars.values()}
            source_nodes: list[list[Node]] = []
            for s in leaves:
                if isinstance(s, Variable):
                    ok = id(s) in watched_vars or (self.watch_accessed_variables and s.trainable)
                    source_nodes.append(
                        [
                            n
                            for n in ctx.graph.nodes
                            if ok and n.op is OpKind.READ_VARIABLE and n.params.variable is s
                        ]
                    )
                elif id(s) in tensors and id(s) in self._watched_arrays:
                    node = tensors[id(s)].node
                    source_nodes.append([node] if differentiable(node.aval) else [])
                else:
                    source_nodes.append([])
            outputs, slots = _gradient_outputs(ctx, targets, source_nodes)
            ctx.graph.outputs = outputs
        values = interpret(ctx.graph, feeds)
        return [None if i is None else _as_result(values[i]) for i in slots]


# -- helpers -----------------------------------------------------------------------------------


def _refuse_reads_in_subgraphs(var: Variable, recorded: set[Node]) -> None:
    """A variable read only inside a branch or loop body: its reads are not operands of the
    ``cond``/``while`` node, so the backward pass cannot reach them; say so rather than
    answer ``None``."""

    def reads(graph: Any) -> bool:
        return any(
            (n.op is OpKind.READ_VARIABLE and n.params.variable is var)
            or any(reads(g) for g in subgraphs(n))
            for n in graph.nodes
        )

    for node in recorded:
        if any(reads(g) for g in subgraphs(node)):
            where = node.meta.get("where") or node.name
            raise errors.NonDifferentiableError(
                f"kx.Variable '{var.name}' is read only inside the {node.op.value} "
                f"{where!r}; gradients with respect to variables read inside a branch or "
                "loop body are not supported yet. Fix: read it once before the if or loop "
                f"(`{var.name.split('/')[0].lower()}_value = v.read_value()`) and use that "
                "value inside."
            )


def _gradient_outputs(
    ctx: TraceContext,
    targets: Any,
    source_nodes: list[list[Node]],
    recorded: Callable[[Node], bool] = lambda n: True,
) -> tuple[list[Node], list[int | None]]:
    """Run the backward pass from ``targets`` to every node of ``source_nodes`` through the
    ``recorded`` nodes and sum the gradients of each source's nodes: the graph outputs to
    compute and, per source, the index of its output (None: not connected)."""
    found = backward(ctx, targets, recorded, [n for ns in source_nodes for n in ns])
    outputs: list[Node] = []
    slots: list[int | None] = []
    for ns in source_nodes:
        parts = [found[n] for n in ns if n in found]
        if not parts:
            slots.append(None)
            continue
        total = parts[0]
        for p in parts[1:]:
            total = total + p
        slots.append(len(outputs))
        outputs.append(ctx.lift(total))
    return outputs, slots


def _leaves(value: Any) -> list[Any]:
    """The leaves of a nest of lists, tuples and dicts (dict values in key order)."""
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    if isinstance(value, dict):
        return [leaf for k in value for leaf in _leaves(value[k])]
    return [value]


def _rebuild(structure: Any, leaves: Iterator[Any]) -> Any:
    """``structure`` with its leaves replaced, in :func:`_leaves` order."""
    if isinstance(structure, (list, tuple)):
        items = [_rebuild(v, leaves) for v in structure]
        if isinstance(structure, tuple) and hasattr(type(structure), "_fields"):
            return type(structure)(*items)
        return type(structure)(items)
    if isinstance(structure, dict):
        return type(structure)((k, _rebuild(structure[k], leaves)) for k in structure)
    return next(leaves)


def _substitute(value: Any, tensors: dict[int, Tensor]) -> Any:
    if isinstance(value, (list, tuple)):
        items = [_substitute(v, tensors) for v in value]
        if isinstance(value, tuple) and hasattr(type(value), "_fields"):
            return type(value)(*items)
        return type(value)(items)
    if isinstance(value, dict):
        return type(value)((k, _substitute(v, tensors)) for k, v in value.items())
    return tensors.get(id(value), value)


def _value_of(x: Any) -> Any:
    if isinstance(x, Variable):
        return x.storage if current_context() is None else x.read_value()
    return x


def _dtype_of(x: Any) -> np.dtype:
    return x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype


def _as_result(value: Any) -> Any:
    """0-d results are NumPy scalars, as every kx result is."""
    arr = np.asarray(value)
    return arr[()] if arr.ndim == 0 else arr
