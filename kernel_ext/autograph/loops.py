"""AutoGraph's loops at run time: which ``for``/``while`` loops unroll and which become graph loops.

Converted code calls :func:`for_stmt` and :func:`while_stmt` with the loop's body as a function
and the variables it modifies as ``get_state``/``set_state`` closures. The choice is made at
trace time, per loop, and always in favour of NumPy's result (docs/ARCHITECTURE.md, "AutoGraph:
how a statement is chosen"):

* A ``for`` over a Python ``range`` of more than :data:`SHORT_RANGE` items is one graph loop
  from its first item, whose index is a :class:`WeakInt` (a traced int with Python int
  promotion): its body is traced once, so trace time and graph size follow the body, not
  the trip count. Where the body cannot be a loop body (it needs the index as a Python int,
  changes a Python number it carries, grows a Python container) the loop unrolls instead, up
  to :data:`UNROLL_NODE_CAP` nodes, and its loop note says why.
* A ``for`` over a shorter ``range``, or over any other Python iterable, runs as Python: the
  trace records every iteration (unrolling). A short ``range`` whose iterations have recorded
  more than :data:`UNROLL_NODE_BUDGET` graph nodes turns its remaining iterations into one
  graph loop, if the body traces as a loop body.
* A ``for`` over a traced array (or ``kx.range``) is a graph loop over its first dimension, as
  in TensorFlow. If the first dimension is static and the body cannot be a graph loop body (it
  needs a Python value, or changes a variable's dtype or shape), the loop unrolls instead.
* A ``while`` is a graph loop from the first test that is a traced value; iterations before it
  ran as Python.
* An iteration that follows a data-dependent ``break`` of an unrolled loop runs inside a
  ``cond`` on the break flag.
* Before a graph loop carries a variable that is still a Python number (``acc = 0.0``), one
  iteration runs outside the loop (inside a ``cond`` when the trip count is data-dependent),
  so the variable has the dtype and shape NumPy gives it after one iteration.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from .. import errors
from ..ir import Node, OpKind
from ..trace.context import TraceContext, bind, current_context
from ..trace.control_flow import Undefined, is_traced, while_loop
from ..trace.tensor import Tensor, describe_tensor, user_frame_description
from ..trace.variables import resolve
from .conditionals import if_stmt
from .weak_index import NeedsPythonValue, WeakInt, as_weak_int, is_py_number

__all__ = [
    "GUARDED_UNROLL",
    "SHORT_RANGE",
    "UNROLL_NODE_BUDGET",
    "UNROLL_NODE_CAP",
    "NeedsPythonValue",
    "TracedRange",
    "WeakInt",
    "for_stmt",
    "python_iter",
    "python_test",
    "set_loop_options",
    "traced_range",
    "while_stmt",
]

#: A Python ``range`` of at most this many items unrolls (each iteration traced into the
#: graph, as Python runs it: straight-line code the executors fuse, with no per-iteration
#: loop overhead); a longer one is one graph loop from its first item, its body traced once,
#: so trace time and graph size follow the body, not the trip count.
SHORT_RANGE = 8
#: Graph nodes a short ``range`` (or one nested in an unrolled loop) may record by unrolling
#: before its remaining iterations are tried as one graph loop.
UNROLL_NODE_BUDGET = 1000
#: Iterations a Python ``range`` loop unrolls inside a ``cond`` on a data-dependent break flag
#: (each is a cond node with two sub-graphs) before the rest is tried as one graph loop.
GUARDED_UNROLL = 16
#: Graph nodes one loop may record by unrolling when it cannot be a graph loop; past it the
#: trace stops with a :class:`~kernel_ext.errors.LoopUnrollError` naming the loop.
UNROLL_NODE_CAP = 200_000


class _NotALoopBody(Exception):
    """The body changed a Python value it carries: it cannot run as one graph loop body."""


class TracedRange:
    """``range(start, stop, step)`` with a traced bound, as converted code's ``range`` returns.

    A ``for`` statement over it is a graph loop whose index is a :class:`WeakInt`, so the body
    sees Python ints as it would eagerly. ``step`` must be a Python int (its sign decides the
    test). Anything else that needs its items (``list(range(n))``) needs the count in Python.
    """

    def __init__(self, start: Any, stop: Any, step: Any) -> None:
        if not isinstance(step, int) or step == 0:
            raise NeedsPythonValue(
                f"range(...) with a traced or zero step at {user_frame_description()}: the "
                "step of a range over traced bounds must be a nonzero Python int. Fix: pass "
                "the step as a Python int, or loop with kx.range(start, stop, step)."
            )
        self.start, self.stop, self.step = start, stop, step

    def count(self) -> Any:
        """The number of items, a traced int (``len(range(...))``)."""
        span = self.stop - self.start if self.step > 0 else self.start - self.stop
        k = abs(self.step)
        return np.maximum((span + (k - 1)) // k, 0)

    def item(self, k: Any) -> Any:
        return as_weak_int(self.start + k * self.step)

    def __reversed__(self) -> TracedRange:
        """The same items last first (``reversed(range(i))``), as a range again."""
        return TracedRange(
            as_weak_int(self.start + (self.count() - 1) * self.step),
            self.start - self.step,
            -self.step,
        )

    def _fail(self, *args: Any) -> Any:
        raise NeedsPythonValue(
            f"range() with a traced bound ({self.stop!r}) at {user_frame_description()} has no "
            "Python length or items while tracing; only a `for` statement can loop over it "
            "(as a graph loop). Fix: loop over it with `for`, use kx.range(...) for an array "
            "of the values, or pass the bound as a Python int."
        )

    __iter__ = __len__ = __array__ = _fail

    def __repr__(self) -> str:
        return f"range({self.start!r}, {self.stop!r}, {self.step!r})"


def traced_range(*args: Any) -> Any:
    """``range`` in converted code: Python's, or a :class:`TracedRange` for traced bounds."""
    values = [resolve(a) for a in args]
    if not any(is_traced(v) for v in values):
        return builtins.range(*args)
    start, stop, step = (
        (0, values[0], 1)
        if len(values) == 1
        else ((values[0], values[1], 1) if len(values) == 2 else tuple(values))
    )
    return TracedRange(as_weak_int(start), as_weak_int(stop), step)


# -- loop options -----------------------------------------------------------------------------


def set_loop_options(shape_invariants: Sequence[tuple[Any, Any]] = (), **_: Any) -> None:
    """Inside a loop body: declare ``[(variable, shape_with_None_dims), ...]`` so a traced loop
    lets those dimensions change between iterations. AutoGraph reads it when converting; as a
    call it does nothing."""


def _invariants(loop: _Loop, indices: Sequence[int]) -> list[Any] | None:
    """The declared shape invariant of each carried variable (``None``: as it is)."""
    if not loop.invariants:
        return None
    return [loop.invariants.get(i) for i in indices]


class _Loop:
    """One loop statement's pieces: its body, state closures, variable names and options."""

    def __init__(
        self,
        body: Callable[..., None],
        extra_test: Callable[[], Any] | None,
        get_state: Callable[[], tuple],
        set_state: Callable[[tuple], None],
        names: Sequence[str],
        opts: dict,
    ) -> None:
        self.body, self.extra_test = body, extra_test
        self.get_state, self.set_state = get_state, set_state
        self.names, self.opts = list(names), opts
        targets = opts.get("targets", ())
        self.targets = [i for i, n in enumerate(self.names) if n in targets]
        # the names the next iteration or the code after the loop may read (the
        # transformer's liveness analysis; absent: all): only those are carried
        live = opts.get("live")
        self.dead = (
            frozenset()
            if live is None
            else frozenset(i for i, n in enumerate(self.names) if n not in live)
        )
        # the break flag (the transformer's): carried as a value though a Python bool
        flag = opts.get("flag")
        self.flags = frozenset(i for i, n in enumerate(self.names) if n == flag)
        # set_loop_options names variables by their values before the loop; remember which
        # state slot each is, since a peeled iteration replaces the values
        state = get_state() if opts.get("shape_invariants") else ()
        self.invariants: dict[int, Any] = {
            i: shape
            for obj, shape in opts.get("shape_invariants") or ()
            for i, v in enumerate(state)
            if v is obj
        }
        # the loop statement (its line: the transformer's), for the loop notes
        self.where = user_frame_description(opts.get("line"))

    def note(self, unrolled: int = 0, graph_loops: int = 0, reason: str = "") -> None:
        """Tell the trace what this statement became (``TraceContext.note_loop``), and why
        iterations unrolled."""
        ctx = current_context()
        if ctx is not None and (unrolled or graph_loops):
            ctx.note_loop(self.where, unrolled, graph_loops, reason if unrolled else "")

    def live_names(self) -> list[str] | None:
        """The names a later statement may read (None: all): what a ``cond`` guarding an
        iteration must give back; a temporary of the body keeps its value from before."""
        if not self.dead:
            return None
        return [n for i, n in enumerate(self.names) if i not in self.dead]

    def graph_nodes(self) -> int:
        ctx = current_context()
        return len(ctx.graph.nodes) if ctx is not None else 0


# -- while ------------------------------------------------------------------------------------


def while_stmt(
    test: Callable[[], Any],
    body: Callable[[], None],
    get_state: Callable[[], tuple],
    set_state: Callable[[tuple], None],
    names: Sequence[str],
    opts: dict,
) -> None:
    """``while test(): body()``: Python iterations while the test is a Python value; from the
    first traced test on, the remaining iterations are one graph loop."""
    loop = _Loop(body, None, get_state, set_state, names, opts)
    first = resolve(test())
    start = loop.graph_nodes()
    unrolled = 0
    try:
        while not is_traced(first):
            if not first:
                return
            body()
            unrolled += 1
            _check_cap(loop, start, "while")
            first = resolve(test())
    finally:
        loop.note(unrolled=unrolled)
    _graph_while(loop, test, first)


def _graph_while(loop: _Loop, test: Callable[[], Any], first: Any) -> None:
    peel = _peel_reason(loop.get_state(), loop)
    if peel:
        # one iteration outside the loop, under the test already evaluated
        def run_first() -> None:
            loop.body()
            _graph_loop(loop, test, None)
            loop.note(unrolled=1, reason=peel)  # the first iteration, peeled

        _under_cond(loop, first, run_first)
        return
    _graph_loop(loop, test, None)


# -- for --------------------------------------------------------------------------------------


def for_stmt(
    iterable: Any,
    extra_test: Callable[[], Any] | None,
    body: Callable[[Any], None],
    get_state: Callable[[], tuple],
    set_state: Callable[[tuple], None],
    names: Sequence[str],
    opts: dict,
) -> None:
    """``for item in iterable: body(item)``, unrolled or as a graph loop (module docstring)."""
    loop = _Loop(body, extra_test, get_state, set_state, names, opts)
    iterable = resolve(iterable)
    if isinstance(iterable, TracedRange):
        _graph_for(loop, iterable.item, iterable.count(), None, weak_index=True)
        return
    if type(iterable) in _RANGE_ITERATORS and loop.extra_test is None:
        # ``reversed(range(n))``, ``iter(range(n))``: the range of the items left; without a
        # ``break`` the loop leaves the iterator exhausted, as Python's would
        iterable, rest = _items_left(iterable), iterable
        for _ in rest:
            pass
    counted = _counted_range(iterable)
    if counted is not None:
        _graph_for(loop, *counted, None)
        return
    if not is_traced(iterable):
        _python_for(
            loop,
            iterable,
            ""
            if isinstance(iterable, builtins.range)
            else f"a Python {type(iterable).__name__}, not a range",
        )
        return
    if iterable.shape is None or len(iterable.shape) == 0:
        raise TypeError(
            f"cannot iterate over {describe_tensor(iterable)}: a 0-d or unknown-rank "
            "traced value has no first dimension to loop over"
        )
    n = iterable.shape[0]

    def row(k: Any) -> Any:
        return iterable[k]

    if n is None:
        count = bind(OpKind.DIM, (iterable,), {"axis": 0}, name="loop_length")
        _graph_for(loop, row, count, None)
        return
    if loop.opts.get("python_effects"):
        # the body grows a Python container: one traced body cannot do that n times
        _python_for(loop, iter(iterable), _effects_reason(loop))
        return

    def unroll_rest(k0: int, error: BaseException) -> None:
        _python_for(loop, (iterable[k] for k in range(k0, n)), _reason_of(error), k0)

    _graph_for(loop, row, np.int64(n), n, fallback=unroll_rest)


def _counted_range(iterable: Any) -> tuple[Callable[[Any], Any], Any] | None:
    """``(item, count)`` for ``kx.range(start, stop, step)`` with traced bounds, an integer
    dtype and a constant step: item ``k`` is ``start + k * step`` computed in the range's
    dtype (as ``np.arange`` computes it), so the loop reads no materialised range and the
    whole-graph compiler can compile it. None for anything else (a float range's items are
    NumPy's own fill, read from the array)."""
    if not isinstance(iterable, Tensor) or iterable.node.op is not OpKind.ARANGE:
        return None
    dtype = np.dtype(iterable.dtype)
    start, stop, step = iterable.node.args
    if dtype.kind not in "iu" or isinstance(step, Node) or not isinstance(step, (int, np.integer)):
        return None
    if int(step) == 0:
        return None  # (np.arange raises: the range is read, and raises, as it is)
    ctx = cast("TraceContext", current_context())  # (a traced arange: inside its trace)
    start, stop = (ctx.tensor(v) if isinstance(v, Node) else v for v in (start, stop))
    typed_step = dtype.type(step)
    # NumPy's length: ceil((stop - start) / step), at least 0 (exact in integers)
    span = np.subtract(_as_int64(start), _as_int64(stop))
    count = np.maximum(np.negative(np.floor_divide(span, np.int64(step))), np.int64(0))
    first = start.astype(dtype) if is_traced(start) else dtype.type(start)

    def item(k: Any) -> Any:
        return np.add(first, np.multiply(k.astype(dtype), typed_step))

    return item, count


def _as_int64(value: Any) -> Any:
    return value.astype(np.int64) if is_traced(value) else np.int64(value)


class _Unrolled:
    """What an unrolling loop has done so far: iterations traced and why it unrolls."""

    def __init__(self, count: int, reason: str) -> None:
        self.count, self.reason = count, reason


#: The iterator types of a range (``iter(range(n))``, ``reversed(range(n))``; a range past
#: the C long's limits has its own).
_RANGE_ITERATORS = (type(iter(builtins.range(0))), type(iter(builtins.range(2**64))))


def _items_left(iterator: Any) -> builtins.range:
    """The range of the items a range iterator has not yielded yet (its pickle form says
    which range it walks and how far it got)."""
    _, (walked,), done = iterator.__reduce__()
    return walked[done:]


def _python_for(loop: _Loop, iterable: Any, reason: str = "", already: int = 0) -> None:
    """The loop as Python: every iteration is traced (unrolled) into the graph. ``reason``
    says why (for the loop note); ``already`` iterations ran before (peeled)."""
    done = _Unrolled(already, reason)
    try:
        _unroll(loop, iterable, done)
    finally:
        loop.note(unrolled=done.count, reason=done.reason)


def _longer_than_short(items: builtins.range) -> bool:
    """More than :data:`SHORT_RANGE` items (and few enough for an int64 trip count)."""
    try:
        return SHORT_RANGE < len(items) < 2**63
    except OverflowError:  # (more items than a C ssize_t counts: unrolled, up to the cap)
        return False


def _effects_reason(loop: _Loop) -> str:
    effect = loop.opts.get("python_effect")
    return "the body grows a Python container" + (f" ({effect})" if effect else "")


def _unroll(loop: _Loop, iterable: Any, done_so_far: _Unrolled) -> None:
    """:func:`_python_for`'s loop; ``done_so_far`` counts the iterations traced.

    A Python ``range`` longer than :data:`SHORT_RANGE` is tried as one graph loop first;
    where its body proves no loop body (it needs the index as a Python int, changes a
    Python number it carries, ...) the loop unrolls, saying why."""
    ranged = isinstance(iterable, builtins.range)
    if ranged and loop.opts.get("python_effects"):
        done_so_far.reason = done_so_far.reason or _effects_reason(loop)
    may_switch = ranged and not loop.opts.get("python_effects")
    start = loop.graph_nodes()
    guarded = 0
    items = iter(iterable)
    done = 0  # items of ``iterable`` consumed so far
    if may_switch and _longer_than_short(iterable):
        may_switch = False  # one try per loop statement
        consumed = _try_graph_loop(loop, iterable, items, done_so_far)
        if consumed is None:
            return
        done += consumed
    elif ranged and may_switch:
        done_so_far.reason = done_so_far.reason or f"a range of at most {SHORT_RANGE} items"
    for item in items:
        done += 1
        go = True if loop.extra_test is None else resolve(loop.extra_test())
        if is_traced(go):
            # A data-dependent break happened: this iteration runs only while it has not.
            if_stmt(
                go,
                functools.partial(loop.body, item),
                lambda: None,
                loop.get_state,
                loop.set_state,
                loop.names,
                loop.live_names(),
            )
            guarded += 1
        elif not go:
            return
        else:
            loop.body(item)
        done_so_far.count += 1
        if may_switch and (
            loop.graph_nodes() - start > UNROLL_NODE_BUDGET or guarded >= GUARDED_UNROLL
        ):
            may_switch = False  # one try per loop statement
            rest = iterable[done:]
            if not len(rest):
                return
            consumed = _try_graph_loop(loop, rest, items, done_so_far)
            if consumed is None:
                return
            done += consumed
        _check_cap(loop, start, "for")


def _check_cap(loop: _Loop, start: int, keyword: str) -> None:
    if loop.graph_nodes() - start > UNROLL_NODE_CAP:
        raise errors.LoopUnrollError(
            f"a Python `{keyword}` loop at {user_frame_description()} has recorded more than "
            f"{UNROLL_NODE_CAP} graph nodes by unrolling, and its body cannot run as a graph "
            "loop body (it needs Python values of the loop index or changes a Python "
            "variable). Fix: loop over kx.range(n) (always a graph loop), vectorise the body "
            "with whole-array NumPy operations, or run this loop outside the kx.function."
        )


def _try_graph_loop(loop: Any, rng: builtins.range, items: Any, done_so_far: Any) -> int | None:
    """Run ``rng`` as one graph loop: None when it became one; else how many of its items
    the try ran for real (a peeled first one) before its body proved no loop body, which are
    taken from ``items`` so that unrolling goes on after them, never running them twice."""
    consumed, error = _range_as_graph_loop(loop, rng)
    if error is None:
        return None
    done_so_far.count += consumed
    done_so_far.reason = _reason_of(error)
    for _ in range(consumed):
        next(items)
    return consumed


def _range_as_graph_loop(loop: _Loop, rest: builtins.range) -> tuple[int, BaseException | None]:
    """Try the remaining items of a Python range as one graph loop. Returns ``(len(rest),
    None)`` on success; otherwise how many iterations ran for real before the body proved
    no graph loop body (a peeled first iteration, see :func:`_graph_for`), with the state as
    they left it and nothing else recorded for the try, and the error that proved it."""
    outcome: tuple[int, BaseException | None] = (len(rest), None)

    def resume(k0: int, error: BaseException) -> None:
        nonlocal outcome
        outcome = (k0, error)

    _graph_for(
        loop,
        lambda k: as_weak_int(rest.start + k * rest.step),
        np.int64(len(rest)),
        len(rest),
        weak_index=True,
        python_fixed=True,
        fallback=resume,
    )
    return outcome


def _reason_of(error: BaseException) -> str:
    """Why a loop body could not be a graph loop body, for the loop note."""
    if isinstance(error, NeedsPythonValue) and error.use:
        use = error.use[:1].lower() + error.use[1:]
        return f"{_short_location(error.where)} needs the loop index as a Python int ({use})"
    if isinstance(error, _NotALoopBody):
        return f"the body changes `{error.args[0]}`, a Python number it carries"
    text = str(error).split("\n")[0]
    first = text.split(". ")[0].split("; ")[0]
    return first if len(first) <= 160 else first[:157] + "..."


def _short_location(where: str) -> str:
    """``line 7: `t = lst[i]``` of a ``file:7: `t = lst[i]``` location (the loop note
    names the file already)."""
    place, sep, text = where.partition(": `")
    digits = place[len(place.rstrip("0123456789")) :]
    return (f"line {digits}" if digits else place) + (f": `{text}" if sep else "")


def _loop_notes() -> dict[str, tuple[int, int, str]] | None:
    """The loop notes of the current trace, to restore after a graph loop that was not made
    (loops nested in its body counted themselves while it was traced)."""
    ctx = current_context()
    if ctx is None:
        return None
    return {where: n.snapshot() for where, n in ctx.top().loops.items()}


def _restore_loop_notes(saved: dict[str, tuple[int, int, str]] | None) -> None:
    ctx = current_context()
    if ctx is None or saved is None:
        return
    notes = ctx.top().loops
    for where in [w for w in notes if w not in saved]:
        del notes[where]
    for where, snapshot in saved.items():
        notes[where].restore(snapshot)


# -- graph loops --------------------------------------------------------------------------------


def _peel_reason(state: Sequence[Any], loop: _Loop) -> str:
    """Why the first iteration must run outside the graph loop: a state variable is a Python
    number the loop would carry (its NumPy dtype and shape are known only after one
    iteration); empty when none is."""
    for i, v in enumerate(state):
        if i not in loop.targets and i not in loop.dead and i not in loop.flags and is_py_number(v):
            return f"peeled: `{loop.names[i]}` starts as a Python {type(v).__name__}"
    return ""


def _under_cond(loop: _Loop, pred: Any, run: Callable[[], None]) -> None:
    """``if pred: run()`` over the variables defined now; the others (temporaries the body
    assigns) stay undefined after it, as after any graph loop."""
    state = list(loop.get_state())
    defined = [i for i, v in enumerate(state) if not isinstance(v, Undefined)]

    def get() -> tuple:
        now = loop.get_state()
        return tuple(now[i] for i in defined)

    def put(values: Sequence[Any]) -> None:
        now = list(state)
        for i, v in zip(defined, values):
            now[i] = v
        loop.set_state(tuple(now))

    if_stmt(pred, run, lambda: None, get, put, [loop.names[i] for i in defined], loop.live_names())


def _graph_for(
    loop: _Loop,
    item: Callable[[Any], Any],
    count: Any,
    static_n: int | None,
    weak_index: bool = False,
    python_fixed: bool = False,
    fallback: Callable[[int, BaseException], None] | None = None,
) -> None:
    """Items ``item(0..count-1)`` as a graph loop, peeling the first iteration when a Python
    number is carried; ``fallback(k0, error)`` unrolls from ``k0`` if the body is no loop
    body (``error`` says why)."""
    k0 = 0
    peel = _peel_reason(loop.get_state(), loop)
    if peel:
        # the peeled iteration runs only where the loop would: a ``break`` taken before the
        # switch from unrolling (the loop's extra test) ends the loop before it
        go = True if loop.extra_test is None else resolve(loop.extra_test())
        if not is_traced(go) and not go:
            return
        if static_n is None:

            def run_first() -> None:
                loop.body(item(np.int64(0)) if not weak_index else item(0))
                _graph_loop(loop, None, (item, count, 1, weak_index))
                loop.note(unrolled=1, reason=peel)  # the first iteration, peeled

            more = np.greater(count, 0)
            _under_cond(loop, more if not is_traced(go) else np.logical_and(more, go), run_first)
            return
        if static_n == 0:
            return
        if is_traced(go):
            _under_cond(loop, go, lambda: loop.body(item(0)))
        else:
            loop.body(item(0))
        k0 = 1
        if static_n == 1:
            loop.note(unrolled=1, reason=peel)
            return
    if fallback is None:
        _graph_loop(loop, None, (item, count, k0, weak_index), python_fixed)
        loop.note(unrolled=k0, reason=peel)
        return
    # the state after the peeled iteration: what the fallback goes on from
    init, notes = loop.get_state(), _loop_notes()
    try:
        _graph_loop(loop, None, (item, count, k0, weak_index), python_fixed)
    except Exception as error:
        loop.set_state(init)
        _restore_loop_notes(notes)
        fallback(k0, error)
        return
    loop.note(unrolled=k0, reason=peel)


def _graph_loop(
    loop: _Loop,
    test: Callable[[], Any] | None,
    over: tuple[Callable[[Any], Any], Any, int, bool] | None,
    python_fixed: bool = False,
) -> None:
    """One graph ``while`` node: over ``test()`` (a while statement) or over the items
    ``item(k)`` for ``k0 <= k < count`` (a for statement). With ``python_fixed``, Python
    values in the state are not carried: the body must leave them as they were."""
    init = list(loop.get_state())
    fixed = [
        i
        for i, v in enumerate(init)
        if python_fixed
        and is_py_number(v)
        and i not in loop.targets
        and i not in loop.dead
        and i not in loop.flags
    ]
    carried = [
        i
        for i, v in enumerate(init)
        if not isinstance(v, Undefined) and i not in fixed and i not in loop.dead
    ]
    if over is not None:
        item, count, k0, weak_index = over
        for i in loop.targets:
            if isinstance(init[i], Undefined) or is_py_number(init[i]):
                # the body assigns the target first: start it as an item, typed like one
                init[i] = _first_item(item, count, k0, weak_index)
                if i not in carried:
                    carried.append(i)
        carried.sort()
    invariants = _invariants(loop, carried)
    carried_names = [loop.names[i] for i in carried]

    def put(values: Sequence[Any]) -> None:
        state = list(init)
        for i, v in zip(carried, values):
            state[i] = v
        loop.set_state(tuple(state))

    def take() -> tuple:
        state = loop.get_state()
        for i in fixed:
            if type(state[i]) is not type(init[i]) or state[i] != init[i]:
                raise _NotALoopBody(loop.names[i])
        return tuple(state[i] for i in carried)

    if over is None:

        def cond_fn(*values: Any) -> Any:
            put(values)
            return test()  # type: ignore[misc]

        def body_fn(*values: Any) -> tuple:
            put(values)
            loop.body()
            return take()

        result = while_loop(
            cond_fn,
            body_fn,
            tuple(init[i] for i in carried),
            invariants,
            carried_names,
            "while",
            rebound=_rebound(loop),
        )
    else:

        def cond_fn(k: Any, *values: Any) -> Any:  # type: ignore[misc]
            in_range = np.less(k, count)
            if loop.extra_test is None:
                return in_range
            put(values)
            return np.logical_and(in_range, loop.extra_test())

        def body_fn(k: Any, *values: Any) -> tuple:  # type: ignore[misc]
            put(values)
            loop.body(item(k))
            return (np.add(k, 1),) + take()

        loop_vars = (np.int64(k0),) + tuple(init[i] for i in carried)
        inv = None if invariants is None else [None] + invariants
        result = while_loop(
            cond_fn,
            body_fn,
            loop_vars,
            inv,
            ["loop_index"] + carried_names,
            "for",
            rebound=_rebound(loop),
        )[1:]
        if weak_index:
            result = tuple(
                as_weak_int(v) if i in loop.targets else v for i, v in zip(carried, result)
            )
    final = list(init)
    for i, v in zip(carried, result):
        final[i] = v
    loop.set_state(tuple(final))
    loop.note(graph_loops=1)
    _mark_loop_node(loop.where)


def _first_item(item: Callable[[Any], Any], count: Any, k0: int, weak_index: bool) -> Any:
    """The loop target's value on entry: item ``k0``, or where the trip count is known only
    at run time (``kx.range(n)``, rows of an array of unknown length), zeros typed like it —
    reading item ``k0`` of an empty range would raise where Python runs no iteration."""
    first = item(np.int64(k0)) if not weak_index else item(k0)
    if weak_index or not is_traced(count) or not isinstance(first, Tensor):
        return first
    shape = first.shape
    if shape is None or None in shape:
        return first  # (a row whose width is known only at run time: read, as before)
    if shape == ():
        return first.dtype.type(0)  # (a NumPy scalar, as the items of a range are)
    return np.zeros(shape, first.dtype)  # (the read above is dead: pruned before running)


def _rebound(loop: _Loop) -> tuple[str, ...]:
    """Loop variables the body binds to new objects: its targets and what the transformer
    found assigned (``rebound`` in the loop options)."""
    targets = tuple(loop.names[i] for i in loop.targets)
    return targets + tuple(loop.opts.get("rebound", ()))


def _mark_loop_node(where: str) -> None:
    """Label the ``while`` node just made with its loop statement (``where`` in its meta: the
    graph view shows it)."""
    ctx = current_context()
    if ctx is None:
        return
    for node in reversed(ctx.graph.nodes):
        if node.op is OpKind.WHILE:
            node.meta["where"] = where
            return


# -- loops AutoGraph leaves as Python ---------------------------------------------------------


def python_test(value: Any, keyword: str = "while") -> Any:
    """The test of a loop AutoGraph left as Python (its body has a ``return``)."""
    if is_traced(resolve(value)):
        raise errors.TracedBoolError(
            f"a `return` inside a `{keyword}` loop whose condition is a traced value is not "
            f"supported (at {user_frame_description()}): the graph loop cannot leave the "
            "function early. Fix: assign the result to a variable, `break`, and return after "
            "the loop."
        )
    return value


def python_iter(value: Any) -> Any:
    """The iterable of a ``for`` AutoGraph left as Python (its body has a ``return``)."""
    return iter(python_test(value, "for"))
