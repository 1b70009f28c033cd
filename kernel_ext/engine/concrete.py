"""``ConcreteFunction``: one traced graph for one input signature, ready to run.

A ConcreteFunction never retraces: a call whose arguments fall outside its signature raises
:class:`~kernel_ext.errors.ConcreteFunctionArgumentError` naming each differing argument.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from .. import errors
from ..backends import Executable
from ..ir import Graph
from ..ir.structure import TreeNode, unflatten
from ..passes import run_pipeline
from ..trace.types import Literal, TensorSpec, TraceType, WeakRef, matches_only_itself
from .trace_records import TraceRecord, diff_call
from .verify import VERIFIED_CALLS, Verifier, graph_facts

if TYPE_CHECKING:
    from .binding import FunctionType
    from .function import Function
    from .guards import CallGuard


class ConcreteFunction:
    """A graph plus its executor, specialised to ``input_types`` (one per parameter)."""

    def __init__(
        self,
        function: Function,
        graph: Graph | None,
        input_types: Sequence[TraceType],
        tree: TreeNode,
        executable: Executable,
        record: TraceRecord,
        traced_node_count: int,
        traced: Graph | None = None,
        optimize: Callable[[Graph], Graph] | None = None,
        guard: CallGuard | None = None,
    ) -> None:
        self._function = function
        #: The parameters and how calls bind to them (the Function's own).
        self.function_type: FunctionType = function.function_type
        # The optimised graph; None when the executor was shared with an earlier trace of
        # the same program at other sizes (backends.compile_traced): then ``optimize`` runs
        # on ``traced`` at first access, which a retrace in a loop never pays for.
        self._graph = graph
        self._traced = traced if graph is None else None
        self._optimize = optimize or run_pipeline
        self._traced_node_count = traced_node_count
        self._optimised_count: int | None = None
        self.input_types = tuple(input_types)
        self._tree = tree
        self.executable = executable
        #: The executor itself: one value per parameter, in order, no checks (the Function
        #: calls it after binding; TensorFlow's ``_call_flat``). A trace that updates its
        #: arguments first checks what it assumed about them (``guard``).
        self.guard = guard
        self.call_flat = (
            executable.run
            if guard is None
            else guard.wrap(executable.run, function.run_eagerly_because)
        )
        tier = getattr(executable, "tier", None)
        if tier is not None:  # tiered auto: cache hits call the winner once it is decided
            ref = weakref.WeakMethod(self._retarget)  # (the tier must not keep us alive)

            def retarget(run: Callable[..., Any]) -> None:
                method = ref()
                if method is not None:
                    method(run)

            tier.listeners.append(retarget)
        #: Verify mode's state for this trace (:mod:`.verify`), or None (never verified).
        self.verifier: Verifier | None = None
        self.record = record
        #: What AutoGraph made of each loop statement (``LoopNote.text`` lines), set by the
        #: Function after tracing: the monitor, the report and the sidebar show them.
        self.loops: tuple[str, ...] = ()
        #: Every input type accepts only equal types: dispatch finds this trace by dict lookup
        #: and never needs to compare it with a call's types.
        self.exact = all(matches_only_itself(t) for t in self.input_types)
        # Python values this trace was made for may be left out of calls (TensorFlow's
        # `square = pow.get_concrete_function(a=spec, b=2); square(10.0)`).
        # (Types, not values: a WeakRef type must not keep its object alive.)
        self._static_types = {
            name: t
            for name, t in zip(self.function_type.names, self.input_types)
            if isinstance(t, (Literal, WeakRef))
        }

    def _retarget(self, run: Callable[..., Any]) -> None:
        """Serve calls with ``run`` from now on (tiered ``auto`` decided on an executor)."""
        guard = self.guard
        run_flat = run if guard is None else guard.wrap(run, self._function.run_eagerly_because)
        verifier = self.verifier
        if verifier is not None:  # a tier change is verified again (a new executor serves)
            tier = getattr(self.executable, "tier", None)
            run_flat = verifier.retarget(run_flat, getattr(tier, "state", None) == "whole")
        self.call_flat = run_flat
        self._function.clear_fast_paths()  # cache hits pick up the new runner

    def arm_verification(self, calls: int = VERIFIED_CALLS) -> None:
        """Verify this trace's next ``calls`` calls against eager NumPy (:mod:`.verify`)."""
        if self.verifier is None:
            self.verifier = Verifier(self._function, self, graph_facts(self.graph), self.call_flat)
        self.verifier.arm(calls)

    @property
    def tier(self) -> str:
        """Which executor serves this trace and why (tiered ``auto``), or ""."""
        tier = getattr(self.executable, "tier", None)
        return "" if tier is None else tier.note

    @property
    def graph(self) -> Graph:
        """The optimised graph this trace runs."""
        graph = self._graph
        if graph is None:
            traced = self._traced
            if traced is None:  # another thread just finished (it sets _graph first)
                return cast("Graph", self._graph)
            graph = self._graph = self._optimize(traced)  # pure: a race computes it twice
            self._traced = None
        return graph

    @property
    def node_counts(self) -> dict[str, int]:
        """Ops as traced and after the optimiser (sub-graphs included)."""
        optimised = self._optimised_count
        if optimised is None:  # (the UI asks for every trace on every update)
            optimised = self._optimised_count = self.graph.count_ops()
        return {"traced": self._traced_node_count, "optimised": optimised}

    @property
    def source(self) -> str:
        """The generated Python source of the NumPy executor (for debugging)."""
        return self.executable.source

    @property
    def backend(self) -> str:
        return self.executable.backend

    # -- calling --------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = self._function.__name__
        binder = self.function_type
        statics = {n: t.placeholder_value(None) for n, t in self._static_types.items()}
        values = binder.bind_concrete(args, kwargs, statics, name)
        if binder.input_signature is not None:
            values, _ = binder.conform(values)
        diffs = diff_call(binder.names, self.input_types, binder.trace_types(values))
        if diffs:
            raise errors.ConcreteFunctionArgumentError(
                f"this ConcreteFunction of '{name}' was traced for "
                f"({self.signature_text()}) and cannot run other arguments (a concrete function "
                "never retraces): "
                + "; ".join(str(d) for d in diffs)
                + f". Fix: call the kx.function '{name}' itself (it traces new signatures), "
                "or get_concrete_function(...) for these arguments."
            )
        return self.call_flat(*values)

    # -- descriptions ---------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.graph.name

    @property
    def structured_input_signature(self) -> tuple[tuple, dict]:
        """``(args, kwargs)`` of trace types, TensorSpecs named after their parameters."""
        return self.function_type.structured_signature(self.input_types)

    @property
    def structured_outputs(self) -> Any:
        """The returned structure with a TensorSpec in place of every array."""
        specs = [TensorSpec(o.shape, o.dtype) for o in self.graph.outputs]
        return unflatten(self._tree, specs)

    @property
    def output_tree(self) -> TreeNode:
        """How a call's result is built from the graph's outputs: the returned structure,
        the arguments written back and the 0-d forms (what the executors compile with)."""
        return self._tree

    def signature_text(self) -> str:
        """``"x: float32[2], n: int 3"``: this trace's inputs on one line."""
        return self.function_type.signature_text(self.input_types)

    def output_text(self) -> str:
        """``"(float32[2], {'loss': float32[]})"``: the returned structure on one line."""
        return structure_text(self.structured_outputs)

    def pretty_printed_signature(self, verbose: bool = True) -> str:
        """TensorFlow's layout: input parameters, output type, captures."""
        binder = self.function_type
        lines = [f"{self._function.__name__}({', '.join(binder.names)})", "  Input Parameters:"]
        for name, kind, t in binder.named_types(self.input_types):
            lines.append(f"    {name} ({kind.name}): {t!r}")
        lines.append("  Output Type:")
        lines.append(f"    {self.structured_outputs!r}")
        lines.append("  Captures:")
        captures = self.graph.captures
        variables = self.graph.variables
        if not captures and not variables:
            lines.append("    None")
        for c in captures:
            lines.append(f"    {c.name}: {c.aval} (constant, frozen at trace time)")
        for v in variables:
            lines.append(
                f"    {v.name}: {TensorSpec(v.shape, v.dtype).describe()} "
                "(kx.Variable, read at every call)"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.pretty_printed_signature()

    def __repr__(self) -> str:
        return (
            f"<kx.ConcreteFunction {self._function.__name__}({self.signature_text()}) -> "
            f"{self.output_text()}>"
        )


def structure_text(value: Any) -> str:
    """A returned structure on one line, TensorSpecs described as ``float32[2]``."""
    if isinstance(value, TensorSpec):
        return value.describe()
    if isinstance(value, tuple) and not hasattr(type(value), "_fields"):
        return "(" + ", ".join(structure_text(v) for v in value) + ")"
    if isinstance(value, list):
        return "[" + ", ".join(structure_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {structure_text(v)}" for k, v in value.items()) + "}"
    return repr(value)
