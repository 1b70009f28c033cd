"""Verify mode: a new trace's first calls also run the Python function eagerly and compare.

``kx.function(f, verify=True)``, ``%%tffunction --verify`` and ``kx.config.verify(True)``
arm a :class:`Verifier` on every trace made (and, for the global switch, on the traces that
exist when it is switched on). While armed, the trace's ``call_flat`` is the verifier's
:meth:`Verifier.run`; once its :data:`VERIFIED_CALLS` calls agree it puts the executor's own
runner back, so cache hits pay nothing afterwards (functions never verified never pay: the
hot path in ``Function.__call__`` is unchanged). A tier change (tiered ``auto`` moving a trace
to the whole-graph executor) arms one more verified call.

One verified call, in this order (NumPy is the oracle, so the caller must end as eager NumPy
leaves it):

1. deep copies of the arguments are taken *before* the call — for a trace's first call,
   before it traced, so what tracing did to the caller's objects counts too (random
   generators and ``kx.Variable`` s are shared, not copied: their states are handled in 2
   and 4);
2. the values of the variables the graph reads or writes, and the states of the generators
   it draws from, are kept;
3. the trace runs on the caller's real arguments;
4. the variables and generators are put back to their states from 2, and the Python
   function runs eagerly (plain NumPy, nested ``kx.function`` s eager too, its ``print``
   output discarded) on the copies;
5. return values, the arguments after the call (arrays, list/dict/dataclass contents),
   variables and generator states are compared bit for bit: structure, Python/NumPy type
   (a NumPy scalar is not a 0-d array), dtype, shape and bytes (NaN equals NaN of the same
   payload, ``-0.0`` differs from ``0.0``). Float outputs of a trace holding a float ``sum``
   or ``mean`` run by a fused or compiled executor compare within the fused-reduction bound
   of docs/backends.md, ``8·eps·Σ|xᵢ|``, with ``Σ|xᵢ|`` estimated from above as ``N·M``
   (``N``: the most terms a float sum or mean of the graph adds where shapes are known, or
   the largest argument's size; ``M``: the largest finite magnitude among the float
   arguments and the two values compared); NaN and inf positions must agree.

Python side effects that ran only while tracing (an object's counter, an item appended to a
list argument) differ from eager NumPy's effects at every call, and are reported as such.

On agreement the traced result is returned. On a difference, the caller's arrays, lists,
dicts and dataclasses are set to what eager NumPy left in the copies (variables and
generators already hold eager's states), the trace runs eagerly from then on
(``Function.last_eager_reason`` says why), and :class:`~kernel_ext.errors.VerificationError`
is raised naming the function, the signature, the first differing output or argument (path,
index, eager value, traced value) and the executor that produced it; the error carries eager
NumPy's result (``eager_result``).

Not verified (the trace keeps its executor, :attr:`Verifier.skipped` says why): traces that
draw from a generator made inside the function without a seed (fresh entropy at each call:
no eager run can draw the same numbers) or through a callable whose generator is not
reachable, calls made while an eager ``GradientTape`` records (the eager run would join the tape),
and calls whose arguments cannot be deep-copied.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import errors
from ..autodiff import eager_tapes
from ..ir import Graph, OpKind
from ..ir.graph import subgraphs
from ..ir.params import VariableParams
from ..trace.random_calls import generator_state, same_generator_state, set_generator_state
from ..trace.variables import Variable
from .config import set_eager

if TYPE_CHECKING:
    from .concrete import ConcreteFunction
    from .function import Function

#: Calls of each new trace that are verified (and one more after a tier change).
VERIFIED_CALLS = 3
#: The fused-reduction bound's factor (docs/backends.md, "Float reductions").
REDUCTION_BOUND_EPS = 8

_RNG_TYPES = (np.random.Generator, np.random.RandomState)
_REDUCTIONS = frozenset({OpKind.SUM, OpKind.MEAN})


@dataclasses.dataclass
class GraphFacts:
    """What verification needs to know about a trace's graph."""

    variables: list[Any]
    rngs: list[Any]
    float_reductions: bool
    unverifiable: str | None  # why calls of this trace cannot be verified, or None
    #: The most terms any float sum or mean of the graph adds, where shapes are known.
    reduction_terms: int = 1


def graph_facts(graph: Graph) -> GraphFacts:
    """The variables, generators and float reductions of ``graph`` (sub-graphs included)."""
    rngs: dict[int, Any] = {}
    variables: dict[int, Any] = {}
    reductions = False
    terms = 1
    unverifiable: str | None = None

    own: dict[int, Any] = {}  # generators made inside the function (reset at each call)

    def walk(g: Graph) -> None:
        nonlocal reductions, unverifiable, terms
        for node in g.nodes:
            if isinstance(node.params, VariableParams):  # (Graph.variables: the top level)
                variables.setdefault(id(node.params.variable), node.params.variable)
            if node.op is OpKind.RANDOM_CALL:
                fn: Any = node.params.fn
                owner = getattr(fn, "__self__", None)
                if hasattr(fn, "seeded"):  # the reset of a generator the function makes
                    own[id(owner)] = owner
                    if not fn.seeded and unverifiable is None:
                        unverifiable = (
                            "it draws from a generator made inside the function "
                            "without a seed (fresh entropy at every call: an "
                            "eager run draws other numbers)"
                        )
                elif isinstance(owner, _RNG_TYPES):
                    rngs[id(owner)] = owner
                elif unverifiable is None:
                    unverifiable = (
                        f"it draws through {getattr(fn, '__name__', fn)!r}, "
                        "whose generator cannot be restored for the eager run"
                    )
            elif (
                node.op in _REDUCTIONS
                and node.dtype is not None
                and np.dtype(node.dtype).kind in "fc"
            ):
                reductions = True
                shape = getattr(node.inputs[0].aval, "shape", None) if node.inputs else None
                if shape is not None and all(isinstance(d, int) for d in shape):
                    terms = max(terms, int(np.prod(shape, dtype=np.int64)))
            for sub in subgraphs(node):
                walk(sub)

    walk(graph)
    # A generator the function makes is its own: the trace resets it at every call and the
    # eager run makes a new one, so only the draws (in the outputs) are compared.
    shared = [g for k, g in rngs.items() if k not in own]
    return GraphFacts(list(variables.values()), shared, reductions, unverifiable, terms)


@dataclasses.dataclass(frozen=True)
class ReductionBound:
    """Float results compare within ``8·eps·terms·max(magnitude, |eager|, |traced|)``: the
    fused-reduction bound ``8·eps·Σ|xᵢ|`` with ``Σ|xᵢ|`` estimated from above."""

    terms: float
    magnitude: float = 0.0


class Verifier:
    """The verification state of one trace; :meth:`run` is its ``call_flat`` while armed."""

    def __init__(
        self, function: Function, cf: ConcreteFunction, facts: GraphFacts, real: Callable[..., Any]
    ) -> None:
        self.function = function
        self.cf = cf
        self.facts = facts
        #: The executor's own runner (the guard included), what a verified call runs.
        self.real = real
        self.remaining = 0
        #: Eager runs made for verification so far.
        self.eager_runs = 0
        #: Why this trace's calls are not verified ("" while they are).
        self.skipped = facts.unverifiable or ""
        #: The VerificationError that sent this trace to eager execution, or None.
        self.failure: errors.VerificationError | None = None
        #: Copies of the arguments of the call that made this trace, taken before it traced
        #: (what tracing did to the caller's objects is then compared too); used once.
        self.before_trace: tuple | None = None

    # -- arming --------------------------------------------------------------------------
    def arm(self, calls: int = VERIFIED_CALLS) -> None:
        """Verify the next ``calls`` calls (no-op for a failed or unverifiable trace)."""
        if self.failure is not None or self.skipped:
            return
        self.remaining = max(self.remaining, calls)
        self.cf.call_flat = self.run
        self.function.clear_fast_paths()

    def retarget(self, real: Callable[..., Any], tier_changed: bool) -> Callable[..., Any]:
        """The executor changed to ``real``: what ``call_flat`` is from now on."""
        self.real = real
        if self.failure is not None:
            return self.cf.call_flat  # stays eager
        if tier_changed and self.function.verifies:
            self.arm(1)
        return self.run if self.remaining else real

    def _done(self) -> None:
        self.cf.call_flat = self.real
        self.function.clear_fast_paths()

    # -- a verified call -----------------------------------------------------------------
    def run(self, *values: Any) -> Any:
        if self.failure is not None:  # (``real`` is the eager runner by now)
            return self.real(*values)
        if self.remaining <= 0 or not self.function.verifies:  # switched off meanwhile
            self.remaining = 0
            self._done()
            return self.real(*values)
        if eager_tapes():  # the eager run would join the tape's recording: not this call
            return self.real(*values)
        facts = self.facts
        copies, self.before_trace = self.before_trace, None
        if copies is None or len(copies) != len(values):
            copies = copy_arguments(values, (*facts.rngs, *facts.variables))
        if copies is None:  # an argument that cannot be copied: no check
            self.skipped = "its arguments cannot be deep-copied"
            self.remaining = 0
            self._done()
            return self.real(*values)
        var_before = [v.storage for v in facts.variables]
        rng_before = [generator_state(g) for g in facts.rngs]
        eager_before = self.function.eager_call_count
        traced = self.real(*values)
        executor = self._executor(self.function.eager_call_count != eager_before)
        var_traced = [v.storage for v in facts.variables]
        rng_traced = [generator_state(g) for g in facts.rngs]
        for v, s in zip(facts.variables, var_before):
            v.storage = s
        for g, s in zip(facts.rngs, rng_before):
            set_generator_state(g, s)
        self.eager_runs += 1
        try:
            eager = self._run_eagerly(copies)
        except Exception as e:  # noqa: BLE001 - the trace returned where NumPy raises
            self._fail(
                values,
                copies,
                "the call",
                f"an exception ({type(e).__name__}: {e})",
                _short(traced),
                executor,
                None,
                e,
            )
        tolerance = self._tolerance_for(executor, values)
        diff = first_difference(eager, traced, "output", tolerance)
        if diff is None:
            diff = self._argument_difference(copies, values, tolerance)
        if diff is None:
            for v, t in zip(facts.variables, var_traced):
                diff = first_difference(v.storage, t, f"variable '{v.name}'", None)
                if diff is not None:
                    break
        if diff is None:
            for g, t in zip(facts.rngs, rng_traced):
                if not same_generator_state(generator_state(g), t):
                    diff = (
                        f"the state of random generator {type(g).__name__}",
                        "advanced by eager NumPy's draws",
                        "advanced otherwise",
                    )
                    break
        if diff is not None:
            where, eager_text, traced_text = diff
            self._fail(values, copies, where, eager_text, traced_text, executor, eager, None)
        self.remaining -= 1
        if self.remaining <= 0:
            self._done()
        return traced

    def _run_eagerly(self, copies: tuple) -> Any:
        function = self.function
        args, kwargs = function.function_type.call_arguments(copies)
        python_function = function.python_function
        # (nested kx.functions run their Python too: the oracle is NumPy)
        was = set_eager(True)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                return python_function(*args, **kwargs)
        finally:
            set_eager(was)

    def _argument_difference(
        self, copies: tuple, values: tuple, tolerance: ReductionBound | None
    ) -> tuple[str, Any, Any] | None:
        names = self.function.function_type.names
        for name, e, t in zip(names, copies, values):
            diff = first_difference(e, t, f"argument '{name}'", tolerance)
            if diff is not None:
                return diff
        return None

    def _tolerance_for(self, executor: str, values: tuple) -> ReductionBound | None:
        """The reduction bound for this call (``None``: compare bits), see the module doc."""
        if not self.facts.float_reductions or executor.startswith(("NumPy", "eager")):
            return None
        sizes, magnitude = [self.facts.reduction_terms], 0.0
        for a in _leaves(values):
            if isinstance(a, (np.ndarray, np.generic)):
                sizes.append(np.size(a))
                if a.dtype.kind in "fc" and a.size:
                    with np.errstate(all="ignore"):
                        m = np.max(np.abs(a))
                    if np.isfinite(m):
                        magnitude = max(magnitude, float(m))
        return ReductionBound(float(max(sizes)), magnitude)

    def _executor(self, ran_eagerly: bool) -> str:
        if ran_eagerly:
            return f"eager fallback ({self.function.last_eager_reason})"
        return executor_name(self.cf.executable)

    def _fail(
        self,
        values: tuple,
        copies: tuple,
        where: str,
        eager_text: Any,
        traced_text: Any,
        executor: str,
        eager: Any,
        cause: BaseException | None,
    ) -> None:
        for real, mine in zip(values, copies):
            restore(real, mine)
        name = self.function.name
        signature = self.cf.signature_text()
        message = (
            f"kx.function '{name}' ({signature}) differs from eager NumPy at {where}: eager "
            f"NumPy gives {_short(eager_text)}, the trace gave {_short(traced_text)} (executor: "
            f"{executor}). This call's arguments hold eager NumPy's result, and this "
            "signature runs eagerly from now on. Please report it with the function and "
            "these arguments; meanwhile kx.config.run_functions_eagerly(True) or "
            "backend='numpy' may avoid it."
        )
        error = errors.VerificationError(
            message,
            function=name,
            signature=signature,
            where=where,
            eager=eager_text,
            traced=traced_text,
            executor=executor,
            eager_result=eager,
        )
        self.failure = error
        self.remaining = 0
        function = self.function
        reason = f"verification failed: {where} differs from eager NumPy ({executor})"

        def run_eagerly(*vals: Any) -> Any:
            return function.run_eagerly_because(reason, vals)

        self.real = run_eagerly
        self.cf.call_flat = run_eagerly
        function.clear_fast_paths()
        if cause is not None:
            raise error from cause
        raise error


def copy_arguments(values: Sequence[Any], shared: Sequence[Any] = ()) -> tuple | None:
    """Deep copies of a call's arguments for the eager run (None: they cannot be copied).

    Random generators and ``kx.Variable`` s are not copied (``shared`` ones, and those found
    in the arguments, their containers and their objects' attributes): the verifier restores
    their states itself, so that the caller's generator ends as the eager draws leave it."""
    memo: dict[int, Any] = {id(o): o for o in shared}
    stack, seen = list(values), 0
    while stack and seen < 10_000:  # (bounded: a huge nest is copied as it is)
        v = stack.pop()
        seen += 1
        if isinstance(v, (*_RNG_TYPES, Variable)):
            memo[id(v)] = v
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            stack.extend(getattr(v, f.name) for f in dataclasses.fields(v))
        elif _plain_object(v):
            stack.extend(vars(v).values())
    try:
        return tuple(copy.deepcopy(tuple(values), memo))
    except Exception:  # noqa: BLE001 - a C object, a lock, a file: not copyable
        return None


def executor_name(executable: Any) -> str:
    """Which executor serves ``executable`` now, in words."""
    tier = getattr(executable, "tier", None)
    state = getattr(tier, "state", None)
    if state == "whole":
        return "whole graph (tiered auto)"
    segments = executable.segments or []
    if segments and segments[0].get("kind") == "whole-graph":
        state = segments[0].get("state")
        if state == "ready":
            return "whole graph (jit_compile)"
        # (until the whole graph is compiled, or where it cannot be, its fallback serves)
        return f"whole graph's fallback executor (jit_compile; whole graph {state})"
    backend = executable.backend
    if backend == "numpy":
        return "NumPy executor"
    if backend.startswith("dask"):
        return "Dask executor"
    return f"fused executor ({backend} segments)"


# -- comparing ------------------------------------------------------------------------------
def first_difference(
    eager: Any, traced: Any, path: str, terms: ReductionBound | None
) -> tuple[str, Any, Any] | None:
    """``(where, eager value, traced value)`` of the first difference, or None.

    ``terms``: compare float arrays within this reduction bound (None: to the bit)."""
    if isinstance(eager, (tuple, list)):
        if type(traced) is not type(eager) or len(traced) != len(eager):
            return (path, _structure(eager), _structure(traced))
        for i, (e, t) in enumerate(zip(eager, traced)):
            diff = first_difference(e, t, f"{path}[{i}]", terms)
            if diff is not None:
                return diff
        return None
    if isinstance(eager, dict):
        if type(traced) is not type(eager) or list(traced) != list(eager):
            return (path, _structure(eager), _structure(traced))
        for k in eager:
            diff = first_difference(eager[k], traced[k], f"{path}[{k!r}]", terms)
            if diff is not None:
                return diff
        return None
    if dataclasses.is_dataclass(eager) and not isinstance(eager, type):
        if type(traced) is not type(eager):
            return (path, _structure(eager), _structure(traced))
        for f in dataclasses.fields(eager):
            diff = first_difference(
                getattr(eager, f.name), getattr(traced, f.name), f"{path}.{f.name}", terms
            )
            if diff is not None:
                return diff
        return None
    if isinstance(eager, Variable):
        return first_difference(
            eager.peek(), getattr(traced, "peek", lambda: traced)(), path, terms
        )
    if isinstance(eager, (np.ndarray, np.generic, float, complex)):
        return _array_difference(eager, traced, path, terms)
    if isinstance(eager, _RNG_TYPES):
        if type(traced) is not type(eager) or not same_generator_state(
            generator_state(eager), generator_state(traced)
        ):
            return (f"{path} (generator state)", "advanced by eager NumPy", "advanced otherwise")
        return None
    if _plain_object(eager) and type(traced) is type(eager):
        # (a config or model object, copied for the eager run: equal when its attributes are)
        return first_difference(vars(eager), vars(traced), f"{path} attributes", terms)
    try:
        equal = eager is traced or bool(type(eager) is type(traced) and eager == traced)
    except Exception:  # noqa: BLE001 - objects that do not compare: identity only
        equal = False
    return None if equal else (path, eager, traced)


def _plain_object(value: Any) -> bool:
    """An instance with attributes and ``object``'s identity equality (compared, and
    restored, attribute by attribute)."""
    t = type(value)
    return (
        t.__eq__ is object.__eq__
        and isinstance(getattr(value, "__dict__", None), dict)
        and not isinstance(value, type)
    )


def _array_difference(
    eager: Any, traced: Any, path: str, terms: ReductionBound | None
) -> tuple[str, Any, Any] | None:
    if type(traced) is not type(eager):
        return (f"{path} (type)", _kind(eager), _kind(traced))
    e, t = np.asarray(eager), np.asarray(traced)
    if e.dtype != t.dtype:
        return (f"{path} (dtype)", e.dtype, t.dtype)
    if e.shape != t.shape:
        return (f"{path} (shape)", e.shape, t.shape)
    eb, tb = np.ascontiguousarray(e), np.ascontiguousarray(t)
    if eb.tobytes() == tb.tobytes():
        return None
    if e.dtype.kind in "fc" and terms is not None and _within_bound(e, t, terms):
        return None
    if e.ndim == 0:
        return (path, eager, traced)
    if e.dtype.kind in "fc" and e.dtype.itemsize // (2 if e.dtype.kind == "c" else 1) in (2, 4, 8):
        # bits, not values: NaN equals NaN of the same payload, -0.0 differs from 0.0
        lane = np.dtype(f"u{e.dtype.itemsize // (2 if e.dtype.kind == 'c' else 1)}")
        differ = (eb.view(lane) != tb.view(lane)).reshape(e.shape + (-1,)).any(axis=-1)
    else:
        differ = e != t
    index = tuple(int(i) for i in np.argwhere(differ)[0])
    where = f"{path}[{', '.join(map(str, index))}]"
    return (where, e[index], t[index])


def _within_bound(e: np.ndarray, t: np.ndarray, bound: ReductionBound) -> bool:
    """Float sums and means: ``|t − e| ≤ 8·eps·N·M`` (see the module doc); NaN where NaN."""
    with np.errstate(all="ignore"):
        en, tn = np.isnan(e), np.isnan(t)
        if not np.array_equal(en, tn):
            return False
        finite = ~en
        ev, tv = e[finite], t[finite]
        if not np.array_equal(np.isinf(ev), np.isinf(tv)) or not np.array_equal(
            ev[np.isinf(ev)], tv[np.isinf(tv)]
        ):
            return False
        fin = np.isfinite(ev)
        if not fin.any():
            return True
        scale = max(float(np.max(np.abs(ev[fin]))), float(np.max(np.abs(tv[fin]))), bound.magnitude)
        eps = float(np.finfo(e.dtype).eps)
        return bool(
            np.all(np.abs(ev[fin] - tv[fin]) <= REDUCTION_BOUND_EPS * eps * bound.terms * scale)
        )


def restore(real: Any, eager: Any) -> Any:
    """Make the caller's ``real`` argument hold what eager NumPy left in ``eager`` (arrays
    written in place, containers given eager's items); returns what the caller should hold
    at that place (``real`` itself where it could be updated, else eager's value)."""
    if type(real) is np.ndarray and type(eager) is np.ndarray:
        if real.shape == eager.shape and real.dtype == eager.dtype and real.flags.writeable:
            np.copyto(real, eager)
            return real
        return eager
    if type(real) is list and type(eager) is list:
        items = [restore(r, e) for r, e in zip(real, eager)]
        real[:] = items + eager[len(items) :]
        return real
    if type(real) is dict and type(eager) is dict:
        new = {k: restore(real[k], v) if k in real else v for k, v in eager.items()}
        real.clear()
        real.update(new)
        return real
    if dataclasses.is_dataclass(real) and not isinstance(real, type) and type(real) is type(eager):
        for f in dataclasses.fields(real):
            value = restore(getattr(real, f.name), getattr(eager, f.name))
            try:
                object.__setattr__(real, f.name, value)
            except (AttributeError, TypeError):
                pass
        return real
    if _plain_object(real) and type(real) is type(eager):
        attrs = vars(real)
        for name, value in vars(eager).items():
            try:
                setattr(real, name, restore(attrs[name], value) if name in attrs else value)
            except (AttributeError, TypeError):
                pass
        return real
    if type(real) is tuple and type(eager) is tuple:
        for r, e in zip(real, eager):
            restore(r, e)
        return real
    return eager


def _leaves(value: Any) -> list[Any]:
    out: list[Any] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            stack.extend(getattr(v, f.name) for f in dataclasses.fields(v))
        else:
            out.append(v)
    return out


def _kind(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"a {value.ndim}-d array ({value.dtype}{list(value.shape)})"
    if isinstance(value, np.generic):
        return f"a NumPy scalar ({type(value).__name__})"
    t = type(value)
    return f"a Python {t.__name__}" if t.__module__ == "builtins" else f"a {t.__name__}"


def _structure(value: Any) -> str:
    if isinstance(value, dict):
        return f"{type(value).__name__} with keys {list(value)}"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of {len(value)} items"
    return _kind(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


__all__ = [
    "VERIFIED_CALLS",
    "GraphFacts",
    "ReductionBound",
    "Verifier",
    "copy_arguments",
    "executor_name",
    "first_difference",
    "graph_facts",
    "restore",
]
