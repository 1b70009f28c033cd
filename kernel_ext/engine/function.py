"""``kx.function`` and :class:`Function`: the polymorphic, traced callable.

Call path. A cache hit must stay tiny, so ``Function.__call__`` first tries a *fast key*: for
positional calls whose arguments are all arrays, NumPy scalars or Python scalars, the key is
``(dtype, shape)`` per array and ``(type, value)`` per Python scalar (bits for a zero or NaN
float and for complex numbers: :func:`~kernel_ext.trace.types.literal_key`, the key trace
types use), and one dict lookup finds
the compiled runner. Everything else (keywords, containers, objects, a miss) takes the slow
path: bind the arguments to parameters (defaults filled), build trace types, dispatch to the
most specific cached trace that accepts them (rules in :mod:`kernel_ext.trace.types`), or trace
anew. Only the slow path builds trace types; the fast path memoises its outcome and is cleared
whenever a trace is added or removed.

A call of a Function is :meth:`Function._call`, the path above, or, once a trace compiled
into one function was called twice with the same signature, that trace's *direct entry*
(:class:`~kernel_ext.backends.DirectEntryFactory`), one generated function that counts the
call, tests the arguments and runs the compiled code, and hands every other call back to
``_call``'s path (:class:`~kernel_ext.backends.CallGate`). While an entry is armed the
instance is an :class:`ArmedFunction`, whose ``__call__`` is that entry: a cache hit of a
compiled loop kernel crosses one Python call, not three.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import operator
import threading
import time
import types
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypedDict, cast

from .. import errors
from ..autodiff import eager_tapes, record_call
from ..autodiff.eager import record_function_call, records
from ..backends import (
    compile_traced,
    validate_options,
)
from ..passes import run_pipeline
from ..trace import random_calls
from ..trace.context import ACTIVITY, TraceContext, current_context
from ..trace.pytree import (
    ArgumentContainers,
    ObjectArguments,
    flatten_outputs,
    with_replays,
    with_writeback,
)
from ..trace.types import (
    PlaceholderContext,
    contains_dask,
    literal_key,
    register_dead_object_listener,
)
from . import events, registry
from .binding import FunctionType
from .call_keys import (
    BY_IDENTITY,
    NDARRAY,
    NP_SCALARS,
    PLAIN_PY_SCALARS,
    container_key,
    fast_key,
    has_dead_reference,
)
from .concrete import ConcreteFunction
from .config import STATE
from .direct_calls import TIMING_MASK, DirectCalls
from .guards import CallGuard, NeedsEagerCall, scalar_at_array_write
from .retrace_log import RetraceLog, frozen_captures, user_call_site
from .trace_records import ReleasedTraces, TraceRecord
from .verify import copy_arguments

_P = inspect.Parameter
_ATOMIC_DEFAULTS = frozenset([type(None), bool, int, float, complex, str, bytes])
_FAST_CACHE_LIMIT = 512


class FunctionOptions(TypedDict):
    """The options of :func:`function`, kept by a :class:`Function` (its bound methods'
    Functions are made with the same)."""

    input_signature: Sequence[Any] | None
    autograph: bool
    reduce_retracing: bool
    jit_compile: bool | None
    backend: str
    name: str | None
    fast_math: bool
    verify: bool


def function(
    func: Callable | None = None,
    *,
    input_signature: Sequence[Any] | None = None,
    autograph: bool = True,
    reduce_retracing: bool = False,
    jit_compile: bool | None = None,
    backend: str = "auto",
    name: str | None = None,
    fast_math: bool = False,
    verify: bool = False,
) -> Any:
    """Turn a Python function on NumPy values into a traced, graph-executing :class:`Function`.

    Use as ``@kx.function``, ``@kx.function(reduce_retracing=True)`` or ``kx.function(f)``.
    ``fast_math=True`` lets fused kernels compute ``exp``, ``log``, ``tanh``, ``sin``,
    ``cos`` and float32 ``power`` by inline approximations within documented ulp bounds
    (``kernel_ext.backends.fast_math.ULP_BOUNDS``) instead of NumPy's bitwise results.
    ``verify=True`` checks each new trace's first calls against the Python function run
    eagerly, raising :class:`~kernel_ext.errors.VerificationError` on any difference
    (:mod:`kernel_ext.engine.verify`; ``kx.config.verify(True)`` does it for every function).
    """
    options = FunctionOptions(
        input_signature=input_signature,
        autograph=autograph,
        reduce_retracing=reduce_retracing,
        jit_compile=jit_compile,
        backend=backend,
        name=name,
        fast_math=fast_math,
        verify=verify,
    )
    if func is None:
        return lambda f: Function(f, **options)
    return Function(func, **options)


class Function(DirectCalls):
    """A Python function that runs as cached graphs, one per input signature."""

    __name__: str  # (with the wrapped function's other attributes, by update_wrapper)

    def __init__(
        self,
        python_function: Callable,
        input_signature: Sequence[Any] | None = None,
        autograph: bool = True,
        reduce_retracing: bool = False,
        jit_compile: bool | None = None,
        backend: str = "auto",
        name: str | None = None,
        _bound_self: Any = None,
        fast_math: bool = False,
        verify: bool = False,
    ) -> None:
        if not callable(python_function):
            raise TypeError(f"kx.function needs a callable, got {type(python_function).__name__}")
        validate_options(backend, jit_compile, fast_math)
        functools.update_wrapper(self, python_function)
        self._python_function = python_function
        self._options = FunctionOptions(
            input_signature=input_signature,
            autograph=autograph,
            reduce_retracing=reduce_retracing,
            jit_compile=jit_compile,
            backend=backend,
            name=name,
            fast_math=fast_math,
            verify=verify,
        )
        self._verify = bool(verify)
        self._name = name or cast("str", getattr(python_function, "__name__", "function"))
        self._bound_self = _bound_self
        self._autograph = autograph
        self._reduce_retracing = reduce_retracing
        #: The parameters and how calls bind to them (shared with every ConcreteFunction).
        self.function_type = FunctionType(
            python_function,
            self._name,
            bound_method=_bound_self is not None,
            input_signature=input_signature,
        )
        self._input_signature = self.function_type.input_signature
        #: ``--strict``: raise StrictRetraceError instead of retracing (see :meth:`configure`).
        self.strict = False
        #: Explanations show fixes as ``%%tffunction`` options (the magic made this Function).
        self.magic_fixes = False

        self._lock = threading.RLock()
        self._concrete: list[ConcreteFunction] = []
        # Traces whose types accept more than equal types: the only ones dispatch must scan
        # (exact ones are found by the ``_lookup`` dict), so a retrace stays O(relaxed).
        self._relaxed: list[ConcreteFunction] = []
        self._log = RetraceLog()  # every trace's record, what explains the next (retraces)
        self._lookup: dict[tuple, ConcreteFunction] = {}
        self._fast: dict[tuple, Callable[..., Any]] = {}
        self._instances: weakref.WeakKeyDictionary[Any, Function] = weakref.WeakKeyDictionary()
        self._variables_allowed = True
        self._dead_pending = False
        self._calls = 0
        # The last call's trace: its fast key (cache hit) or the trace itself (slow path).
        # Traces that differ only in sizes may share one runner, so the runner cannot say.
        self._last_key: tuple | None = None
        # (weak: a trace keyed by an object that died must be released with it)
        self._last_cf: weakref.ref[ConcreteFunction] | None = None
        self._fast_cf: dict[tuple, weakref.ref[ConcreteFunction]] = {}
        # The direct entry of the signature called last, when its trace has one
        # (:class:`~kernel_ext.backends.DirectEntryFactory`), and the call count from which
        # one may be armed again after a miss; what a call of this Function calls (_direct).
        self._direct_entry: Callable[..., Any] | None = None
        self._entry: Callable[..., Any] = self._call
        self._direct_from = 0
        self._last_run_ns: int | None = None
        self._traces = 0
        self._eager_calls = 0
        #: Why the latest call ran as plain Python instead of its trace (a guard, .guards).
        self.last_eager_reason: str | None = None
        self._call_traces = 0  # traces made by calls (get_concrete_function makes others)
        self._failed_calls = 0  # calls that raised before running a graph (see _call_slow)
        self._trace_ms = 0.0
        self._compile_ms = 0.0
        self.id = registry.register(self)
        register_dead_object_listener(self)

    # ------------------------------------------------------------------------------------
    # the hot path
    # ------------------------------------------------------------------------------------
    def _call(self, *args: Any, **kwargs: Any) -> Any:
        """A call: its fast key's runner (a cache hit), else the slow path."""
        __tracebackhide__ = True
        self._calls += 1
        # (eager mode counts in ACTIVITY.depth: config.set_eager)
        if not kwargs and not ACTIVITY.depth:
            # fast_key(), inlined: a function call here would cost a third of the overhead.
            key = []
            for a in args:
                t = a.__class__
                if t is NDARRAY or t in NP_SCALARS:
                    key.append((a.dtype, a.shape))
                elif t is float:
                    # 0.0 == -0.0 and nan != nan: those are keyed by their bits (literal_key)
                    key.append((t, a) if a and a == a else literal_key(a))
                elif t in PLAIN_PY_SCALARS:
                    key.append((t, a))
                elif t is complex:
                    key.append(literal_key(a))
                elif t in BY_IDENTITY:
                    key.append((t, id(a)))
                elif t is dict or t is list or t is tuple:
                    # containers of arrays and numbers (a parameter dict, a list of
                    # weights): keyed by their structure and their items' keys
                    ck = container_key(a, 0)
                    if ck is None:
                        break
                    key.append(ck)
                else:
                    break
            else:
                k = tuple(key)
                run = self._fast.get(k)
                if run is not None:
                    self._last_key = k
                    if self._calls & TIMING_MASK:
                        return run(*args)
                    return self._timed(run, args)
        elif kwargs and not ACTIVITY.depth:
            # Keyword calls (``model(x, training=True)``): the names are part of the key.
            named_key = fast_key(args, kwargs)
            if named_key is not None:
                run = self._fast.get(named_key)
                if run is not None:
                    self._last_key = named_key
                    if self._calls & TIMING_MASK:
                        return run(*args, **kwargs)
                    t0 = time.perf_counter_ns()
                    result = run(*args, **kwargs)
                    self._last_run_ns = time.perf_counter_ns() - t0
                    return result
        return self._call_slow(args, kwargs)

    #: A call of the Function (``f(x)``). Once a direct entry is armed, the instance is an
    #: :class:`ArmedFunction`, whose call is the entry itself.
    __call__ = _call

    def _timed(self, run: Callable[..., Any], args: tuple) -> Any:
        """Run and time one call (every 64th hit and every slow-path call): the UI's "last
        run" without a clock read on every cache hit."""
        t0 = time.perf_counter_ns()
        result = run(*args)
        self._last_run_ns = time.perf_counter_ns() - t0
        return result

    # ------------------------------------------------------------------------------------
    # the slow path
    # ------------------------------------------------------------------------------------
    def _call_slow(self, args: tuple, kwargs: dict) -> Any:
        __tracebackhide__ = True
        binder = self.function_type
        if eager_tapes() and records((args, kwargs)):
            # recording arrays of an eager GradientTape: the call runs on their values and
            # its traced body joins the tape's recording
            return record_function_call(self, args, kwargs)
        if STATE.eager:
            self._eager_calls += 1
            return self._call_python(binder.bind(args, kwargs))
        try:
            values = binder.bind(args, kwargs)
            inline = current_context() is not None
            if not inline:
                values, converted, cf = self._concrete_for_call(values)
        except NeedsEagerCall as need:
            return self.run_eagerly_because(need.reason, values)
        except BaseException:
            # A wrong argument count, an input_signature mismatch, an untraceable argument
            # or a failed trace: the call ran no graph, so it is no cache hit.
            self._failed_calls += 1
            raise
        if inline:
            # Called while another function is being traced: inline the Python body into
            # that trace (its ops join the outer graph, stateful ones included).
            return self._call_python(values)
        run = None
        if not converted and binder.all_positional:
            run = self._fast_runner(cf.call_flat, len(args), kwargs)
        if run is not None:
            key = fast_key(args, kwargs)
            if key is not None:
                run = self._arming_direct(cf, run, args) or run
                if len(self._fast) >= _FAST_CACHE_LIMIT:
                    self._fast.clear()
                    self._fast_cf.clear()
                    self._direct = None
                self._fast[key] = run
                self._fast_cf[key] = weakref.ref(cf)
        self._last_key, self._last_cf = None, weakref.ref(cf)
        result = self._timed(cf.call_flat, values)
        if eager_tapes():
            # An eager GradientTape is recording (it keeps calls off the fast path): it
            # replays this call's Python body as a trace when asked for a gradient.
            record_call(self._call_python, values, result)
        return result

    def _concrete_for_call(self, values: tuple) -> tuple[tuple, bool, ConcreteFunction]:
        """The bound ``values`` as the graph takes them (``input_signature`` conversions),
        whether any was converted, and the trace that runs them, traced now if none fits."""
        __tracebackhide__ = True
        binder = self.function_type
        converted = False
        if self._input_signature is not None:
            values, converted = binder.conform(values)
        types_ = binder.trace_types(values)
        cf = self._lookup.get(types_) or self._dispatch(types_)
        if cf is None:
            # verify mode: the arguments as they were before tracing touched them
            before = copy_arguments(values) if self.verifies else None
            cf = self._trace(types_, values, via="call")
            self._call_traces += 1
            if before is not None and cf.verifier is not None and cf.verifier.remaining:
                cf.verifier.before_trace = before
        return values, converted, cf

    def _fast_runner(
        self, run: Callable[..., Any], n_args: int, kwargs: dict
    ) -> Callable[..., Any] | None:
        """What a cache hit of this call shape (``n_args`` positional, these keyword names)
        calls: ``run`` with the parameters left out filled in, or None when one of them has
        no immutable atomic default (a default list could be mutated between calls, and its
        trace type with it: such calls stay on the slow path)."""
        binder = self.function_type
        positions = {name: i for i, name in enumerate(binder.names)}
        given = set(range(n_args)) | {positions.get(name, -1) for name in kwargs}
        if -1 in given:
            return None
        defaults: list[Any] = []
        for i, name in enumerate(binder.names):
            default = binder.default(name)
            if i not in given and (default is _P.empty or type(default) not in _ATOMIC_DEFAULTS):
                return None
            defaults.append(default)
        if not kwargs:
            tail = tuple(defaults[n_args:])
            if not tail:
                return run

            def run_with_defaults(*args: Any) -> Any:
                return run(*args, *tail)

            return run_with_defaults
        where = {name: positions[name] for name in kwargs}

        def run_with_keywords(*args: Any, **kw: Any) -> Any:
            values = [*args, *defaults[len(args) :]]
            for name, value in kw.items():
                values[where[name]] = value
            return run(*values)

        return run_with_keywords

    def run_eagerly_because(self, reason: str, values: Sequence[Any]) -> Any:
        """Run one call as plain Python on the real arrays (a trace's assumption about its
        arguments does not hold for them, :mod:`.guards`): NumPy's answer by construction."""
        self._eager_calls += 1
        self.last_eager_reason = reason
        return self._call_python(values)

    @property
    def verifies(self) -> bool:
        """Whether new traces are verified against eager NumPy (``verify=True`` or
        ``kx.config.verify(True)``)."""
        return self._verify or STATE.verify

    @property
    def eager_call_count(self) -> int:
        """Calls that ran the Python function instead of a trace (``stats["eager_calls"]``)."""
        return self._eager_calls

    def arm_verification(self) -> None:
        """Verify the next calls of every existing trace (``kx.config.verify(True)``)."""
        for cf in self.concrete_functions:
            cf.arm_verification()

    def _state_holders(self, objects: ObjectArguments) -> list[Any]:
        """Objects whose attributes hold state the function does not own: its object
        arguments, the instance of a bound method, and plain objects its closure cells and
        the globals it names refer to. (The garbage collector cannot report an object's
        attribute dict once the dict holds only arrays and numbers, so
        ``TraceContext.shared_buffers`` asks these directly.)"""
        holders = list(objects.objects())
        if self._bound_self is not None:
            holders.append(self._bound_self())
        fn = inspect.unwrap(self._python_function)
        code = getattr(fn, "__code__", None)
        if code is not None:
            cells = [c.cell_contents for c in (fn.__closure__ or ()) if _cell_is_set(c)]
            named = [fn.__globals__[n] for n in code.co_names if n in fn.__globals__]
            holders += [
                v
                for v in cells + named
                if hasattr(v, "__dict__")
                and not isinstance(v, (type, types.ModuleType, types.FunctionType))
            ]
        return holders

    def _call_python(self, values: Sequence[Any]) -> Any:
        __tracebackhide__ = True
        args, kwargs = self.function_type.call_arguments(values)
        fn = self._traced_callable()
        if self._bound_self is not None:
            obj = self._bound_self()
            if obj is None:
                raise ReferenceError(
                    f"the object that method '{self._name}' was bound to no longer exists"
                )
            return fn(obj, *args, **kwargs)
        return fn(*args, **kwargs)

    def _traced_callable(self) -> Callable:
        """The function the tracer runs (AutoGraph's converted version when enabled)."""
        if self._autograph:
            converter = _autograph_converter()
            if converter is not None:
                return converter(self._python_function)
        return self._python_function

    # -- dispatch -------------------------------------------------------------------------
    def _dispatch(self, types_: tuple) -> ConcreteFunction | None:
        """The most specific cached trace accepting ``types_`` (earliest among equals)."""
        if self._dead_pending:
            self._purge_dead()
        # Traces keyed by exact types were looked up by equality already (``_lookup``).
        candidates = [
            cf
            for cf in self._relaxed
            if all(a.is_subtype_of(b) for a, b in zip(types_, cf.input_types))
        ]
        if not candidates:
            return None
        best = candidates[0]
        for cf in candidates[1:]:
            if (
                all(a.is_subtype_of(b) for a, b in zip(cf.input_types, best.input_types))
                and cf.input_types != best.input_types
            ):
                best = cf
        if len(self._lookup) < _FAST_CACHE_LIMIT:
            self._lookup[types_] = best
        return best

    def _generalize(self, types_: tuple) -> tuple:
        """The types to trace with: the ``input_signature`` where given; with
        ``reduce_retracing``, dims that vary from an earlier trace widened to ``None``."""
        if self._input_signature is not None:
            return tuple(self._input_signature) + types_[len(self._input_signature) :]
        if not self._reduce_retracing:
            return types_
        for cf in reversed(self._concrete):
            merged = []
            for new, old in zip(types_, cf.input_types):
                m = new.most_specific_common_supertype([old])
                if m is None:
                    break
                merged.append(m)
            else:
                return tuple(merged)
        return types_

    # -- tracing --------------------------------------------------------------------------
    def _trace(self, types_: tuple, values: Sequence[Any], via: str) -> ConcreteFunction:
        __tracebackhide__ = True
        with self._lock:
            cf = self._lookup.get(types_) or self._dispatch(types_)
            if cf is not None:  # another thread traced it while we waited
                return cf
            trace_types = self._generalize(types_)
            call_site = user_call_site()
            t0 = time.perf_counter()
            graph_name = f"{self._name}_{len(self._concrete)}" if self._concrete else self._name
            ctx = TraceContext(
                graph_name, function_name=self._name, variable_policy=self._variable_policy
            )
            try:
                with ctx, random_calls.frozen_draw_guard(values, self._name):
                    watched_dicts: list[tuple[Any, tuple, tuple]] = []
                    placeholders = [
                        t.placeholder_value(
                            PlaceholderContext(ctx, n, (("arg", i),), watched_dicts)
                        )
                        for i, (n, t) in enumerate(zip(self.function_type.names, trace_types))
                    ]
                    containers = ArgumentContainers(placeholders, ctx.inputs)
                    objects = ObjectArguments(placeholders, self.function_type.names)
                    try:
                        result = self._call_python(placeholders)
                    except BaseException:
                        if objects.leak() is not None:  # leave the caller's objects whole
                            objects.restore()
                        raise
                    objects.check(self._name)
                    updated = {id(t): (path, t) for path, t in ctx.inputs if id(t) in ctx.mutated}
                    tree, outputs = flatten_outputs(result, ctx, updated, containers)
                    if updated:
                        tree = with_writeback(tree, outputs, ctx, list(updated.values()))
                    tree = with_replays(tree, containers.replays(ctx, outputs, updated))
                    ctx.graph.outputs = outputs
                    if ctx.promoted:
                        _refuse_shared_buffers(ctx, self._name, self._state_holders(objects))
                    # dict arguments whose key order the function saw (it iterated them):
                    # the trace is right for that order only (guards.CallGuard)
                    dict_orders = [
                        (path, order)
                        for placeholder, path, order in watched_dicts
                        if placeholder.order_observed and len(order) > 1
                    ]
                    guard = CallGuard.for_trace(ctx, updated, self.function_type.names, dict_orders)
            except errors.TracingRecursionError:
                raise
            except RecursionError as e:
                raise errors.TracingRecursionError(
                    f"infinite recursion while tracing '{self._name}': Python recursion that "
                    "depends on a traced value never reaches its base case at trace time (the "
                    "condition has no value yet). Fix: recurse on Python values only, or "
                    "rewrite the recursion as a loop (AutoGraph turns loops on traced values "
                    "into graph loops)."
                ) from e
            except BaseException as e:
                reason = scalar_at_array_write(ctx, values, self.function_type.names)
                if reason is not None and via == "call":
                    # the trace took a 0-d argument as an array (it wrote into it) and failed;
                    # this call passes a NumPy scalar there: NumPy decides (guards.py)
                    raise NeedsEagerCall(reason) from e
                events.emit(events.Event("trace_error", self, error=e))
                raise
            trace_ms = (time.perf_counter() - t0) * 1e3
            traced_count = ctx.graph.count_ops()
            t1 = time.perf_counter()
            backend = self._options["backend"]
            if contains_dask(trace_types):  # Dask arrays in, Dask arrays out
                backend = "dask"
            graph, executable = compile_traced(
                ctx.graph,
                tree,
                self.function_type.count,
                optimize=run_pipeline,
                backend=backend,
                jit_compile=self._options["jit_compile"],
                fast_math=self._options["fast_math"],
                name=graph_name,
            )
            compile_ms = (time.perf_counter() - t1) * 1e3

            record = self._make_record(trace_types, types_, via, trace_ms, compile_ms, call_site)
            cf = ConcreteFunction(
                self,
                graph,
                trace_types,
                tree,
                executable,
                record,
                traced_count,
                traced=ctx.graph,
                optimize=run_pipeline,
                guard=guard,
            )
            cf.loops = tuple(note.text() for note in ctx.loops.values())
            self._concrete.append(cf)
            if not cf.exact:
                self._relaxed.append(cf)
            self._log.add(record, trace_types, self._calls)
            self._lookup[types_] = cf
            self._lookup[trace_types] = cf
            self._fast.clear()
            self._fast_cf.clear()
            self._direct = None
            self._traces += 1
            self._trace_ms += trace_ms
            self._compile_ms += compile_ms
            self._variables_allowed = False
            if self.verifies:
                cf.arm_verification()
        self._log.maybe_warn(record, self._name, self._calls)
        events.emit(events.Event("trace", self, cf, record))
        return cf

    def _variable_policy(self, var: Any) -> None:
        if not self._variables_allowed:
            raise errors.VariableCreationError(
                f"kx.function '{self._name}' created kx.Variable '{var.name}' while tracing "
                f"for the {self._traces + 1}th time. A traced function may create variables only "
                "during its first trace, otherwise every new signature would make new variables. "
                "Fix: create the variable outside the function (at module level or in "
                "__init__), or only once: `if self.v is None: self.v = kx.Variable(...)`."
            )

    def _make_record(
        self,
        trace_types: tuple,
        call_types: tuple,
        via: str,
        trace_ms: float,
        compile_ms: float,
        call_site: str,
    ) -> TraceRecord:
        """The :class:`TraceRecord` of the trace just made (slow path only), or, for a strict
        Function, the StrictRetraceError that says why (:meth:`RetraceLog.new_record`)."""
        signature = self.function_type.signature_text(trace_types)
        details = dict(
            trace_ms=trace_ms,
            compile_ms=compile_ms,
            call_site=call_site,
            call_number=self._calls,
            via=via,
            captured=frozen_captures(self._python_function),
            function_name=self._name,
            magic_fixes=self.magic_fixes,
        )
        names = self.function_type.names
        return self._log.new_record(self._name, names, signature, call_types, details, self.strict)

    # -- public API -----------------------------------------------------------------------
    def get_concrete_function(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        """The trace for these arguments (values or TensorSpecs), tracing it if needed."""
        binder = self.function_type
        if self._input_signature is not None and not args and not kwargs:
            values: tuple = binder.signature_values()
            types_ = binder.trace_types(values, allow_specs=True)
        else:
            values = binder.bind(args, kwargs)
            types_ = binder.restrict_to_signature(binder.trace_types(values, allow_specs=True))
        cf = self._lookup.get(types_) or self._dispatch(types_)
        if cf is None:
            cf = self._trace(types_, values, via="get_concrete_function")
        return cf

    def experimental_get_tracing_count(self) -> int:
        """How many times the Python body has been traced."""
        return self._traces

    def pretty_printed_concrete_signatures(self, verbose: bool = True) -> str:
        return "\n\n".join(cf.pretty_printed_signature(verbose) for cf in self.concrete_functions)

    @property
    def python_function(self) -> Callable:
        """The wrapped Python function (bound to its instance for methods)."""
        if self._bound_self is not None:
            obj = self._bound_self()
            return types.MethodType(self._python_function, obj)
        return self._python_function

    @property
    def name(self) -> str:
        """The function's name (the ``name`` argument, else the Python function's)."""
        return self._name

    @property
    def input_signature(self) -> tuple | None:
        return self._input_signature

    def configure(self, *, strict: bool | None = None, magic_fixes: bool | None = None) -> None:
        """Notebook options, read when this Function traces (never on a cache hit); ``None``
        leaves an option as it is.

        ``strict``: raise :class:`~kernel_ext.errors.StrictRetraceError` instead of retracing
        (the first trace is always allowed); ``%%tffunction --strict`` sets it.
        ``magic_fixes``: explanations show fixes as ``%%tffunction`` options.
        """
        if strict is not None:
            self.strict = bool(strict)
        if magic_fixes is not None:
            self.magic_fixes = bool(magic_fixes)

    @property
    def concrete_functions(self) -> list[ConcreteFunction]:
        if self._dead_pending:
            self._purge_dead()
        return list(self._concrete)

    @property
    def retraces(self) -> list[TraceRecord]:
        """One :class:`TraceRecord` per trace, in order (the first has cause first_trace):
        every live trace's, and the latest released ones' (traces keyed by objects that
        died); older released records are folded into :attr:`released_traces`."""
        if self._dead_pending:
            self._purge_dead()
        return list(self._log.records)

    @property
    def released_traces(self) -> ReleasedTraces:
        """Released traces whose records were folded away (a count, numbers, cost)."""
        if self._dead_pending:
            self._purge_dead()
        return dataclasses.replace(self._log.released)

    @property
    def stats(self) -> dict[str, float | None]:
        """Counters: calls, traces, cache hits, eager calls, failed calls, total trace and
        compile ms, and the duration of the latest timed run in µs (``None`` before any).

        A cache hit is a call that ran an existing trace: every call but those that traced,
        ran as plain Python (eager) or failed before running a graph (``failed_calls``: a
        wrong argument count, an ``input_signature`` mismatch, an argument that cannot be
        traced, a failed trace). Hits are not counted one by one (the hot path only counts
        calls), so this is the difference."""
        last = self._last_run_ns
        return {
            "calls": self._calls,
            "traces": self._traces,
            "cache_hits": max(
                0, self._calls - self._call_traces - self._eager_calls - self._failed_calls
            ),
            "eager_calls": self._eager_calls,
            "failed_calls": self._failed_calls,
            "trace_ms": self._trace_ms,
            "compile_ms": self._compile_ms,
            "last_run_us": None if last is None else last / 1e3,
        }

    @property
    def last_concrete_function(self) -> ConcreteFunction | None:
        """The trace the most recent graph call ran (``None`` before any)."""
        key = self._last_key
        ref = self._fast_cf.get(key) if key is not None else self._last_cf
        cf = ref() if ref is not None else None
        return cf if cf is not None and any(c is cf for c in self._concrete) else None

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        """A decorated method gets one Function (one cache) per instance, returned as a
        :class:`BoundFunction` that keeps the instance alive while it lives, as a Python bound
        method does (``A().m(x)`` works; the cache itself holds the instance weakly)."""
        if instance is None:
            return self
        try:
            bound = self._instances.get(instance)
        except TypeError:
            bound = None
        if bound is None:
            bound = Function(
                self._python_function, _bound_self=weakref.ref(instance), **self._options
            )
            try:
                self._instances[instance] = bound
            except TypeError:
                pass  # unhashable instance: a fresh Function per attribute access
        return BoundFunction(bound, instance)

    def __repr__(self) -> str:
        return f"<kx.Function {self._name}: {self._traces} trace(s), {self._calls} call(s)>"

    def clear_fast_paths(self) -> None:
        """Forget the cache-hit runners: the next call of each signature takes the slow path
        once and stores the trace's current runner (a trace that tiered up)."""
        self._fast.clear()
        self._fast_cf.clear()
        self._direct = None

    # -- weak-object bookkeeping ----------------------------------------------------------
    def on_object_died(self) -> None:
        """An object keying some trace died (``register_dead_object_listener``)."""
        # Called from a weakref callback (any thread, any moment): only flag; the next slow
        # path call purges under the lock. The fast keys go now: an object keyed by its id
        # (BY_IDENTITY) just died, and a new object may get the same id.
        if self._concrete:
            self._dead_pending = True
            self._fast.clear()
            self._direct = None

    def _purge_dead(self) -> None:
        with self._lock:
            self._dead_pending = False
            keep = [cf for cf in self._concrete if not any(map(has_dead_reference, cf.input_types))]
            if len(keep) != len(self._concrete):
                self._concrete = keep
                self._relaxed = [cf for cf in keep if not cf.exact]
                self._log.keep_only([(cf.record, cf.input_types) for cf in keep])
                self._lookup = {
                    k: v
                    for k, v in self._lookup.items()
                    if v in keep and not any(map(has_dead_reference, k))
                }
                self._fast.clear()
                self._fast_cf.clear()
                self._direct = None


class ArmedFunction(Function):
    """A :class:`Function` whose direct entry is armed (:mod:`.direct_calls`): the class of
    its instance for as long as that lasts.

    Its ``__call__`` is a property whose C-level getter returns ``_entry``, the entry's form
    that is the whole call, so that a cache hit crosses one Python function. A Function with
    no entry armed keeps the plain method: the property's getter would cost its keyed calls
    ~40 ns each."""

    __call__ = property(operator.attrgetter("_entry"), doc="Call the function (``f(x)``).")


Function.armed_class = ArmedFunction
Function.unarmed_class = Function


def _cell_is_set(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (reading it is the test: an empty cell raises)
    except ValueError:  # an empty cell (a name assigned later)
        return False
    return True


def _refuse_shared_buffers(ctx: TraceContext, name: str, holders: list[Any]) -> None:
    """A traced value written into an array the function does not own is an error."""
    shared = ctx.shared_buffers(holders)
    if shared:
        a = shared[0]
        raise errors.UnsupportedOpError(
            f"kx.function '{name}' writes traced values into an array it did not create "
            f"({a.dtype}{list(a.shape)}, held by a global, a closure or an object's "
            "attribute). A graph cannot repeat that change at every call as NumPy would. "
            "Fix: pass the array as an argument (updates of arguments reach the caller), or "
            "create it inside the function, or keep the state in a kx.Variable."
        )


class BoundFunction:
    """``instance.method`` of a ``@kx.function`` method: the instance's own :class:`Function`
    (``__func__``) with a strong reference to the instance (``__self__``) for as long as this
    object lives, as a Python bound method keeps its ``__self__``. Everything else — calls,
    ``get_concrete_function``, the tracing count — is the Function's."""

    __slots__ = ("__func__", "__self__")

    def __init__(self, function: Function, instance: Any) -> None:
        self.__func__ = function
        self.__self__ = instance

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        return self.__func__(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__func__, name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BoundFunction) and other.__func__ is self.__func__

    def __hash__(self) -> int:
        return hash(self.__func__)

    def __repr__(self) -> str:
        return f"<bound {self.__func__!r} of {type(self.__self__).__name__}>"


def _autograph_converter() -> Callable[[Callable], Callable] | None:
    """AutoGraph's ``convert`` when the autograph layer provides one (issue: AutoGraph)."""
    try:
        from ..autograph import convert
    except ImportError:
        return None
    return convert
