"""Graph control flow: ``kx.cond``, ``kx.while_loop``, ``kx.range`` and ``kx.TensorArray``.

Each branch or loop body is traced exactly once, in a child :class:`TraceContext` whose graph
becomes a sub-graph of a ``cond`` / ``while`` node. Values of enclosing traces that a body reads
are captured as extra operands. The values flowing out (branch results, loop variables) are
flattened into leaves; the leaves must agree in structure and dtype, shapes merge to ``None``
where they differ (branches) or must stay within the loop's shape invariants (loops).

With a predicate or loop variables that are plain Python values, these functions behave exactly
like the Python they stand for (no graph).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from .. import errors
from ..ir import AbstractValue, Graph, Node, OpKind
from .context import TraceContext, current_context
from .opaque import PythonNumber
from .subgraphs import (
    LeafTree,
    capture_union,
    flatten,
    is_value,
    lift_leaf,
    node_outputs,
    same_tree,
    unflatten,
    with_inputs,
)
from .tensor import (
    Tensor,
    describe_tensor,
    is_immutable_scalar,
    next_version,
    user_frame_description,
)
from .types import TensorSpec
from .variables import Variable, resolve
from .zero_d import SCALAR, zero_d_kind


class Undefined:
    """The value of a variable that has not been assigned yet on this path (AutoGraph)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise NameError(
            f"'{self.name}' is used before it is assigned on every path (it is "
            "assigned in only some branches or only inside a loop body). Fix: give "
            f"'{self.name}' a value before the if/loop."
        )

    __getattr__ = _fail
    __call__ = __bool__ = __add__ = __radd__ = __mul__ = __array__ = _fail

    def __repr__(self) -> str:
        return f"<undefined {self.name}>"


def is_traced(value: Any) -> bool:
    return isinstance(value, Tensor)


def _check_predicate(pred: Tensor, what: str) -> None:
    size = pred.size if pred.shape is not None else None
    if size is not None and size != 1:
        raise ValueError(
            f"The truth value of an array with more than one element is "
            f"ambiguous ({what} got {describe_tensor(pred)}). Use a.any() or a.all()"
        )


def _merge_shapes(a: tuple | None, b: tuple | None) -> tuple | None:
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


# ---------------------------------------------------------------------------------------------
# cond
# ---------------------------------------------------------------------------------------------


def cond(
    pred: Any,
    true_fn: Callable[[], Any],
    false_fn: Callable[[], Any],
    names: Sequence[str] | None = None,
    name: str = "cond",
) -> Any:
    """``true_fn()`` if ``pred`` else ``false_fn()``; a graph ``cond`` when ``pred`` is traced.

    Both branches are traced once. They must return the same structure; matching values must
    have the same dtype (Python numbers take the other branch's dtype); differing shapes merge
    to ``None`` dims. ``names`` label the returned values in error messages.
    """
    if isinstance(pred, Variable):
        pred = resolve(pred)
    if not is_traced(pred):
        return true_fn() if pred else false_fn()
    ctx = current_context()
    if ctx is None:
        raise errors.LeakedTensorError(
            f"kx.cond got the traced value {describe_tensor(pred)} outside its trace"
        )
    _check_predicate(pred, "kx.cond")
    where = user_frame_description()
    pred_node = ctx.lift(pred)
    # Arrays of the enclosing trace a branch updates in place: their new value in each branch
    # (the old one where a branch leaves them alone) becomes an output of the cond, and the
    # array itself takes it afterwards; each branch starts from the state before the if.
    touched: dict[int, Tensor] = {}
    t_ctx, t_res, t_upd = _trace_branch(ctx, f"{name}_true_branch", true_fn, touched)
    f_ctx, f_res, f_upd = _trace_branch(ctx, f"{name}_false_branch", false_fn, touched)
    t_tree, t_leaves, t_names, _ = flatten(t_res, "output")
    f_tree, f_leaves, _, _ = flatten(f_res, "output")
    if names and len(names) == len(t_leaves):
        t_names = list(names)
    if not same_tree(t_tree, f_tree) or len(t_leaves) != len(f_leaves):
        raise _structure_error(t_res, f_res, names)
    # decide per leaf: static (identical Python values), the same array object in both
    # branches (kept as the object: it follows its updates), or a graph value (unified dtype)
    n_results = len(t_leaves)
    t_leaves = t_leaves + [t_upd.get(k, r) for k, r in touched.items()]
    f_leaves = f_leaves + [f_upd.get(k, r) for k, r in touched.items()]
    t_names = t_names + [describe_tensor(r) for r in touched.values()]
    branches = (t_ctx, f_ctx)
    plan = [
        _plan_leaf(leaf_name, a, b, k < n_results, branches)
        for k, (leaf_name, a, b) in enumerate(zip(t_names, t_leaves, f_leaves))
    ]
    values = iter(_cond_outputs(ctx, pred_node, plan, (t_leaves, f_leaves), branches, name))
    leaves = [
        _weak_if_python(next(values), t, f) if kind == "value" else static
        for (kind, static), t, f in zip(plan, t_leaves, f_leaves)
    ]
    for root, value in zip(touched.values(), leaves[n_results:]):
        root.assign(value)
    for (kind, _), leaf, leaf_name, a, b in zip(plan, leaves, t_names, t_leaves, f_leaves):
        if kind == "value" and isinstance(leaf, Tensor):
            _note_chosen_arrays(leaf, leaf_name, (a, b), branches, where)
    return unflatten(t_tree, leaves[:n_results])


def _trace_branch(
    ctx: TraceContext, child_name: str, fn: Callable[[], Any], touched: dict[int, Tensor]
) -> tuple[TraceContext, Any, dict[int, Tensor]]:
    """One branch of a cond traced in a child of ``ctx``: the child, the branch's result, and
    the new value of each array of an enclosing trace it updated in place (by ``id`` of the
    array, which then goes back to its state before the branch; ``touched`` collects it)."""
    child = ctx.child(child_name)
    try:
        with child:
            result = fn()
    except BaseException:
        for root, pre in reversed(child.outer_updates()):
            root.restore(pre)  # the failed branch leaves no array half-updated
        raise
    updates = {}
    for root, pre in child.outer_updates():
        updates[id(root)] = Tensor(root.node, root.context)
        touched.setdefault(id(root), root)
        root.restore(pre)
    return child, result, updates


def _structure_error(t_res: Any, f_res: Any, names: Sequence[str] | None) -> TypeError:
    """The error for branches that give different structures: it names the first named
    result that differs, where the branches give a tuple of named results."""
    what, a, b = "the branches", t_res, f_res
    if (
        names
        and isinstance(t_res, tuple)
        and isinstance(f_res, tuple)
        and len(t_res) == len(f_res) == len(names)
    ):
        for n, x, y in zip(names, t_res, f_res):
            if not same_tree(flatten(x, n)[0], flatten(y, n)[0]):
                what, a, b = f"'{n}'", x, y
                break
    return TypeError(
        f"{what} must have the same structure in both branches of an if on a "
        f"traced value: the true branch gives {_describe_structure(a)}, the "
        f"false branch {_describe_structure(b)}. Fix: make both branches "
        "produce the same kind of value (e.g. both a tuple of two arrays)."
    )


def _plan_leaf(
    leaf_name: str, a: Any, b: Any, is_result: bool, branches: Sequence[TraceContext]
) -> tuple[str, Any]:
    """How one leaf leaves a cond whose branches give ``a`` and ``b``: ``("same", a)`` for
    an array object both results are (kept as the object), ``("static", a)`` for one Python
    value, ``("value", dtype)`` for a graph value of that dtype; else the error that says why
    the branches disagree."""
    if is_result and a is b and isinstance(a, Tensor) and not _created_in(a, branches):
        return ("same", a)
    ua, ub = isinstance(a, Undefined), isinstance(b, Undefined)
    if ua or ub:
        if ua and ub:
            return ("static", a)
        where = "false" if ub else "true"
        raise ValueError(
            f"'{leaf_name}' must also be assigned in the {where} branch: it is "
            "defined in only one branch of an if on a traced value, so it "
            f"would have no value when the {where} branch runs. Fix: give "
            f"'{leaf_name}' a value before the if, or in both branches."
        )
    if not (is_value(a) and is_value(b)):
        if _static_equal(a, b):
            return ("static", a)
        raise TypeError(
            f"'{leaf_name}' is {_short(a)} in the true branch but {_short(b)} in "
            "the false branch; inside an if on a traced value both branches "
            "must give arrays (or the same Python value)."
        )
    return ("value", _unify_dtype(leaf_name, a, b, "true branch", "false branch"))


def _cond_outputs(
    ctx: TraceContext,
    pred_node: Node,
    plan: Sequence[tuple[str, Any]],
    leaves: tuple[Sequence[Any], Sequence[Any]],
    branches: tuple[TraceContext, TraceContext],
    name: str,
) -> list[Tensor]:
    """The ``cond`` node of the two traced ``branches`` recorded in ``ctx``, as one traced
    value per graph value of ``plan`` (the branches' leaves lifted into each branch)."""
    outs = []
    for child, branch_leaves in zip(branches, leaves):
        with child:
            outs.append(
                [
                    lift_leaf(child, leaf, dtype)
                    for (kind, dtype), leaf in zip(plan, branch_leaves)
                    if kind == "value"
                ]
            )
        child.active = False
    t_ctx, f_ctx = branches
    union = capture_union(t_ctx.captures, f_ctx.captures)
    t_graph = with_inputs(t_ctx.graph, [], t_ctx.captures, union, outs[0])
    f_graph = with_inputs(f_ctx.graph, [], f_ctx.captures, union, outs[1])
    out_avals = []
    for ta, fa in zip(t_graph.outputs, f_graph.outputs):
        if ta.dtype != fa.dtype:  # pragma: no cover - unified above
            raise TypeError("internal: branch dtypes differ after unification")
        # (a graph output is one value: its dtype is known)
        dtype = cast("np.dtype", ta.dtype)
        out_avals.append(AbstractValue(_merge_shapes(ta.shape, fa.shape), dtype))
    node = ctx.graph.create_node(
        OpKind.COND,
        (pred_node, *union),
        {"branches": (t_graph, f_graph), "out_avals": tuple(out_avals)},
        name=name,
    )
    return node_outputs(ctx, node, len(out_avals))


def _note_chosen_arrays(
    leaf: Tensor,
    leaf_name: str,
    sources: Sequence[Any],
    branches: Sequence[TraceContext],
    where: str,
) -> None:
    """A cond's graph value ``leaf`` may be, at run time, the array object one branch gave
    (one of ``sources`` that neither branch made): note those arrays (``Tensor.may_be``)."""
    outer = [
        x.storage_root for x in sources if isinstance(x, Tensor) and not _created_in(x, branches)
    ]
    if outer:
        leaf.may_be(outer, where if leaf_name.startswith("<") else f"{where}, as '{leaf_name}'")


def _created_in(tensor: Tensor, contexts: Sequence[TraceContext]) -> bool:
    """Was ``tensor`` made inside one of ``contexts`` (a branch or body that has ended)?"""
    ctx = tensor.storage_root.state()[1]
    return any(ctx is c or ctx.is_ancestor(c) for c in contexts)


def _static_equal(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(type(a) is type(b) and a == b)
    except Exception:
        return False


def _short(value: Any) -> str:
    if isinstance(value, Tensor):
        return f"an array {value.node.aval}"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) < 40 else text[:37] + '...'}"


def _describe_structure(value: Any) -> str:
    tree, leaves, _, _ = flatten(value, "x")
    if tree.kind == "leaf":
        return _short(value)
    return f"a {tree.kind} of {len(leaves)} value(s)"


def _dtype_of(leaf: Any) -> np.dtype | None:
    """The dtype of a value leaf, or None for a weak Python number."""
    if isinstance(leaf, (Tensor, Variable, np.ndarray, np.generic)):
        return np.dtype(leaf.dtype)
    return None


def _unify_dtype(name: str, a: Any, b: Any, where_a: str, where_b: str) -> np.dtype | None:
    da, db = _dtype_of(a), _dtype_of(b)
    if da is None and db is None:
        return (
            np.asarray(a).dtype
            if np.asarray(a).dtype == np.asarray(b).dtype
            else np.result_type(a, b)
        )
    if da is None or db is None:
        return da or db
    if da != db:
        raise TypeError(
            f"'{name}' has dtype {da} in the {where_a} but {db} in the {where_b}; "
            "a traced if/loop needs one dtype per variable. Fix: cast one side, "
            f"e.g. .astype(np.{da.name})."
        )
    return da


# ---------------------------------------------------------------------------------------------
# while_loop
# ---------------------------------------------------------------------------------------------


def while_loop(
    cond_fn: Callable[..., Any],
    body_fn: Callable[..., Any],
    loop_vars: Sequence[Any],
    shape_invariants: Sequence[Any] | None = None,
    names: Sequence[str] | None = None,
    name: str = "while",
    rebound: Sequence[str] = (),
) -> Any:
    """``while cond_fn(*vars): vars = body_fn(*vars)``; a graph loop inside a trace.

    Inside a trace this is always one graph loop (Python numbers among the loop variables
    become arrays), as ``tf.while_loop`` is in a ``tf.function``. ``loop_vars`` is a tuple/list
    of loop variables (arrays, numbers, nested structures,
    TensorArrays). In a graph loop each variable keeps its dtype; its shape must stay within
    ``shape_invariants`` (one per flattened variable: a shape tuple with ``None`` dims, a
    TensorSpec, or ``None`` for "as it is"), otherwise a ValueError says which variable changed.
    ``rebound`` names (of ``names``) the body binds to new objects (AutoGraph knows them from
    the source): they are carried as values from the start rather than as their objects.
    """
    single = not isinstance(loop_vars, (tuple, list))
    vars_ = (loop_vars,) if single else tuple(loop_vars)
    ctx = current_context()
    tree, leaves, leaf_names, relax = flatten(vars_, "loop_vars")
    if names and len(names) == len(leaves):
        leaf_names = list(names)
    if ctx is None:
        # Eagerly this is the Python loop it stands for.
        while cond_fn(*vars_):
            vars_ = tuple(body_fn(*vars_)) if not single else (body_fn(*vars_),)
        # (not single: a tuple or a list, which mypy sees as the abstract Sequence)
        return vars_[0] if single else type(loop_vars)(vars_)  # type: ignore[call-arg]
    result = _graph_loop(
        ctx,
        cond_fn,
        body_fn,
        tree,
        leaves,
        leaf_names,
        relax,
        shape_invariants,
        name,
        frozenset(rebound),
    )
    return result[0] if single else type(loop_vars)(result)  # type: ignore[call-arg]


def _invariant_spec(inv: Any, leaf_name: str, aval: AbstractValue) -> tuple | None:
    if isinstance(inv, TensorSpec):
        return inv.shape
    if inv is None:
        return aval.shape
    return tuple(inv)


def _graph_loop(
    ctx: TraceContext,
    cond_fn: Callable,
    body_fn: Callable,
    tree: LeafTree,
    leaves: list[Any],
    leaf_names: list[str],
    relax: list[bool],
    shape_invariants: Sequence[Any] | None,
    name: str,
    rebound: frozenset[str] = frozenset(),
) -> tuple:
    # Arrays the body updates in place that are not loop variables (reached through a view,
    # a list, an alias) are found by tracing once; they then join the loop state, hidden.
    # A loop variable that starts as an outer array object but is rebound (not updated in
    # place) by the body is that object only on entry (`y = x; for ...: y = f(y) * x`): it is
    # detached from the object on a retrace, so reads of `x` in the body see `x`. So is a
    # view (`y = x[:2]`), which would otherwise read its root in every iteration.
    hidden: list[Tensor] = []
    # slots known from the source to be rebound start detached: no second trace of the body
    # (whose Python side effects, a print, would then happen twice)
    value_idx = [i for i, leaf in enumerate(leaves) if is_value(leaf)]
    detached: set[int] = {k for k, i in enumerate(value_idx) if leaf_names[i] in rebound}
    notes = ctx.top().loops
    for _ in range(64):
        counted = {where: n.snapshot() for where, n in notes.items()}
        found = _graph_loop_once(
            ctx,
            cond_fn,
            body_fn,
            tree,
            leaves,
            leaf_names,
            relax,
            shape_invariants,
            name,
            hidden,
            detached,
        )
        if isinstance(found, tuple):
            return found
        # a discarded attempt's loops (nested in the body) were never made: uncount them
        for where in [w for w in notes if w not in counted]:
            del notes[where]
        for where, saved in counted.items():
            notes[where].restore(saved)
        if isinstance(found, set):
            detached |= found
        else:
            hidden.extend(found)
    raise RuntimeError("internal: the loop's in-place updates did not settle")


def _is_outer_root(leaf: Any, ctx: TraceContext) -> bool:
    """Is ``leaf`` an array object of ``ctx`` or an enclosing trace that owns its storage?"""
    if not isinstance(leaf, Tensor) or leaf.storage_root is not leaf:
        return False
    owner = leaf.state()[1]
    return owner is ctx or ctx.is_ancestor(owner)


def _graph_loop_once(
    ctx: TraceContext,
    cond_fn: Callable,
    body_fn: Callable,
    tree: LeafTree,
    leaves: list[Any],
    leaf_names: list[str],
    relax: list[bool],
    shape_invariants: Sequence[Any] | None,
    name: str,
    hidden: list[Tensor],
    detached: set[int],
) -> tuple | list[Tensor] | set[int]:
    """One attempt at the loop: its outputs, or the arrays updated in place that must join
    the state, or the slots to detach from their array objects (see :func:`_graph_loop`);
    in the last two cases nothing was recorded and every array is as before."""
    attempt = _LoopAttempt(
        ctx, tree, leaves, leaf_names, relax, shape_invariants, name, hidden, detached
    )
    condition, found = attempt.trace_condition(cond_fn)
    b_ctx, b_phs, b_res = attempt.trace_part("body", body_fn)
    b_leaves = attempt.body_leaves(b_ctx, b_res)
    # carried array objects the body updated in place (their value is no longer the slot's)
    changed = attempt.changed_in_place(b_phs)
    try:
        with b_ctx:
            b_out = attempt.body_outputs(b_ctx, b_phs, b_leaves, changed)
            attempt.check_python_values(b_leaves)
    finally:
        b_ctx.active = False
        found += [r for r in attempt.undo(b_ctx) if all(r is not f for f in found)]
    if found:
        return found
    rebound = attempt.rebound_slots(b_leaves, changed)
    if rebound:
        return rebound
    body = _LoopPart(b_ctx, b_phs, b_out)
    return attempt.record(condition, body, b_leaves, changed)


@dataclasses.dataclass
class _LoopPart:
    """A graph loop's condition or body, traced: its context, its placeholders (one per slot
    of the loop state) and its output nodes."""

    ctx: TraceContext
    placeholders: list[Node]
    outputs: list[Node]

    def graph(self, union: Sequence[Node]) -> Graph:
        """The sub-graph, its inputs the placeholders then one per ``union`` capture."""
        return with_inputs(
            self.ctx.graph, self.placeholders, self.ctx.captures, union, self.outputs
        )


class _LoopAttempt:
    """What one attempt at a graph loop (:func:`_graph_loop_once`) works with: the slots of the
    loop state (the loop variables that are arrays or numbers, then the hidden arrays), their
    specs, and the array objects that enter the condition and body as themselves.

    Arrays and numbers become loop-carried graph values; any other Python value rides along
    unchanged (and must not change in the body). An array object among the loop variables
    stays that object inside the body (its value swapped for the iteration's), so an in-place
    update of it is an update of the caller's array, as in NumPy; a view follows its root.
    """

    def __init__(
        self,
        ctx: TraceContext,
        tree: LeafTree,
        leaves: list[Any],
        leaf_names: list[str],
        relax: list[bool],
        shape_invariants: Sequence[Any] | None,
        name: str,
        hidden: list[Tensor],
        detached: set[int],
    ) -> None:
        self.ctx, self.tree, self.leaves, self.leaf_names = ctx, tree, leaves, leaf_names
        self.name, self.detached = name, detached
        self.value_idx = [i for i, leaf in enumerate(leaves) if is_value(leaf)]
        self.slots = [leaves[i] for i in self.value_idx] + list(hidden)
        self.slot_names = [leaf_names[i] for i in self.value_idx] + [
            describe_tensor(r) for r in hidden
        ]
        self.init_nodes = [lift_leaf(ctx, leaf) for leaf in self.slots]
        self.specs = [
            # (a loop variable's node holds one value)
            self._spec(k, cast("AbstractValue", node.aval), relax, shape_invariants)
            for k, node in enumerate(self.init_nodes)
        ]
        self.owners: dict[int, int] = {}  # id(root) -> the slot whose placeholder it takes
        for k, leaf in enumerate(self.slots):
            if k not in detached and _is_outer_root(leaf, ctx):
                self.owners.setdefault(id(leaf), k)
        owned = [self.slots[k] for k in self.owners.values()]
        self.carried = {id(root) for root in owned}
        self.saved = {id(root): (root, root.state()) for root in owned}

    def _spec(
        self, k: int, aval: AbstractValue, relax: list[bool], invariants: Sequence[Any] | None
    ) -> AbstractValue:
        """Slot ``k``'s value in every iteration: its dtype, and its shape, unknown where the
        slot may change it freely (a TensorArray's buffer) or as its shape invariant says."""
        shape = aval.shape
        if k < len(self.value_idx) and relax[self.value_idx[k]]:
            shape = None
        if invariants is not None and k < min(len(invariants), len(self.value_idx)):
            shape = _invariant_spec(invariants[k], self.slot_names[k], aval)
        return AbstractValue(shape, aval.dtype)

    def trace_part(self, part: str, fn: Callable) -> tuple[TraceContext, list[Node], Any]:
        """The condition or body (``part``) traced once on placeholders of the slots: its
        context, the placeholders and what ``fn`` returned."""
        child = self.ctx.child(f"{self.name}_{part}")
        with child:
            phs = [
                child.graph.create_node(
                    OpKind.PLACEHOLDER,
                    (),
                    {"shape": spec.shape, "dtype": spec.dtype},
                    name=_ident(self.slot_names[k]),
                )
                for k, spec in enumerate(self.specs)
            ]
            for k, leaf in enumerate(self.slots):
                if self.owners.get(id(leaf)) == k:
                    if k < len(self.value_idx) and is_immutable_scalar(leaf):
                        # a NumPy scalar: ``s += x`` in the body rebinds, as eagerly
                        phs[k].params = phs[k].params.replace(scalar_form=True)
                    leaf.restore((phs[k], child, next_version()))
            structured = unflatten(self.tree, self._arguments(child, phs))
            try:
                result = fn(*structured)
            except BaseException:
                child.active = False
                self.undo(child)  # a body that fails leaves no array swapped or half-updated
                raise
        return child, phs, result

    def _arguments(self, child: TraceContext, phs: list[Node]) -> list[Any]:
        """The loop variables' leaves as the condition or body sees them: an array object
        that enters as itself (see :meth:`_enters_as_object`) stays, other values are the
        slots' placeholders (a Python number stays weak, NEP 50)."""
        current = list(self.leaves)
        for k, i in enumerate(self.value_idx):
            leaf = self.leaves[i]
            if self._enters_as_object(k, leaf):
                continue
            py_type = python_number_type(leaf)
            if _is_scalar_form(leaf, py_type):
                # a Python number or NumPy scalar: ``s += x`` in the body rebinds, as eagerly
                phs[k].params = phs[k].params.replace(scalar_form=True)
            current[i] = PythonNumber(phs[k], child, py_type) if py_type else child.tensor(phs[k])
        return current

    def _enters_as_object(self, k: int, leaf: Any) -> bool:
        """Does the loop variable of slot ``k`` enter as its array object: a carried root of
        an enclosing trace, or a view (which follows its root)? Not once detached."""
        return k not in self.detached and (
            id(leaf) in self.owners or (isinstance(leaf, Tensor) and leaf.storage_root is not leaf)
        )

    def undo(self, child: TraceContext) -> list[Tensor]:
        """Put every array back as before the loop; return those updated but not carried."""
        new = []
        for root, pre in reversed(child.outer_updates()):
            if id(root) not in self.carried:
                new.append(root)
                root.restore(pre)
        for root, state in self.saved.values():
            root.restore(state)
        return new[::-1]

    def trace_condition(self, cond_fn: Callable) -> tuple[_LoopPart, list[Tensor]]:
        """The condition traced, and the arrays it updated in place that are not carried."""
        c_ctx, c_phs, c_res = self.trace_part("cond", cond_fn)
        if isinstance(c_res, Variable):
            c_res = c_res.read_value()
        with c_ctx:
            if is_traced(c_res):
                _check_predicate(c_res, "the loop condition")
            c_out = [lift_leaf(c_ctx, c_res if is_value(c_res) else bool(c_res))]
        c_ctx.active = False
        return _LoopPart(c_ctx, c_phs, c_out), self.undo(c_ctx)

    def body_leaves(self, b_ctx: TraceContext, b_res: Any) -> list[Any]:
        """The leaves of what the body returned, which must be the loop variables'
        structure (else every array is put back and the error says so)."""
        if not isinstance(b_res, (tuple, list)) or not same_tree(
            self.tree, flatten(tuple(b_res), "loop_vars")[0]
        ):
            self.undo(b_ctx)
            raise TypeError(
                f"the loop body must return the loop variables in the same structure: "
                f"expected {len(self.leaves)} value(s) as "
                f"{_describe_structure(tuple(self.leaves))}, got {_describe_structure(b_res)}"
            )
        return flatten(tuple(b_res), "loop_vars")[1]

    def changed_in_place(self, b_phs: list[Node]) -> set[int]:
        """The carried array objects (by ``id``) whose value after the body is no longer
        the slot's placeholder: the body updated them in place."""
        return {
            id(self.slots[k])
            for k in self.owners.values()
            if self.slots[k].state()[0] is not b_phs[k]
        }

    def body_outputs(
        self, b_ctx: TraceContext, b_phs: list[Node], b_leaves: list[Any], changed: set[int]
    ) -> list[Node]:
        """The body's output node per slot, each checked against the slot's spec."""
        b_out = []
        for k, spec in enumerate(self.specs):
            new = self._body_value(k, b_leaves, changed)
            b_out.append(_body_output(b_ctx, self.slot_names[k], new, spec))
            if b_phs[k].params.scalar_form and zero_d_kind(b_out[-1], None) != SCALAR:
                # the body treated it as an immutable scalar; a 0-d array coming back
                # would be written in place by the next iteration's ``s += x``
                raise errors.UnsupportedOpError(
                    f"'{self.slot_names[k]}' is a NumPy scalar before the loop but a 0-d array "
                    "after one iteration (NumPy writes into a 0-d array in place, and "
                    "into a scalar never). Fix: keep it a scalar in the loop (e.g. "
                    f"{_ident(self.slot_names[k])}[()] ) or make it an array before the loop."
                )
        return b_out

    def _body_value(self, k: int, b_leaves: list[Any], changed: set[int]) -> Any:
        """What the body gives for slot ``k`` (a hidden array: the array object itself)."""
        if k >= len(self.value_idx):
            return self.slots[k]
        i = self.value_idx[k]
        new = b_leaves[i]
        if new is not self.leaves[i] and id(self.leaves[i]) in changed:
            raise errors.UnsupportedOpError(
                f"'{self.leaf_names[i]}' is updated in place and also assigned a new "
                "array in the same loop body; NumPy would update the original "
                "array only until the assignment. Fix: use a new name for the "
                "new array, or update the array in place only."
            )
        return new

    def check_python_values(self, b_leaves: list[Any]) -> None:
        """The loop variables that are not arrays or numbers must not change in the body."""
        for i, leaf in enumerate(self.leaves):
            if i not in self.value_idx and not _static_equal(leaf, b_leaves[i]):
                raise TypeError(
                    f"'{self.leaf_names[i]}' is {_short(leaf)} before the loop but "
                    f"{_short(b_leaves[i])} after one iteration; only arrays "
                    "may change inside a traced loop"
                )

    def rebound_slots(self, b_leaves: list[Any], changed: set[int]) -> set[int]:
        """The slots to detach from their array objects: a carried array the body rebinds
        to a new array (rather than updating it in place), and a view it rebinds."""
        value_idx, leaves = self.value_idx, self.leaves
        rebound = {
            k
            for k in self.owners.values()
            if k < len(value_idx)
            and id(self.slots[k]) not in changed
            and b_leaves[value_idx[k]] is not leaves[value_idx[k]]
        }
        # a view among the loop variables reads its root inside the body: rebound, it must not
        rebound |= {
            k
            for k, i in enumerate(value_idx)
            if k not in self.detached
            and isinstance(leaves[i], Tensor)
            and leaves[i].storage_root is not leaves[i]
            and b_leaves[i] is not leaves[i]
        }
        return rebound

    def record(
        self, condition: _LoopPart, body: _LoopPart, b_leaves: list[Any], changed: set[int]
    ) -> tuple:
        """The ``while`` node recorded in the enclosing trace; the loop variables after it
        (the carried array objects the body updated take their final values)."""
        union = capture_union(condition.ctx.captures, body.ctx.captures)
        c_graph = condition.graph(union)
        b_graph = body.graph(union)
        specs = self.specs
        node = self.ctx.graph.create_node(
            OpKind.WHILE,
            (*self.init_nodes, *union),
            {"cond": c_graph, "body": b_graph, "n_vars": len(specs), "out_avals": tuple(specs)},
            name=self.name,
        )
        outs = node_outputs(self.ctx, node, len(specs))
        for k, leaf in enumerate(self.slots):
            if self.owners.get(id(leaf)) == k and id(leaf) in changed:
                leaf.assign(outs[k])  # the array object itself takes its final value
        leaves = self.leaves
        final = list(leaves)
        for k, i in enumerate(self.value_idx):
            kept = b_leaves[i] is leaves[i] and isinstance(leaves[i], Tensor)
            final[i] = leaves[i] if kept else _weak_if_python(outs[k], leaves[i], b_leaves[i])
        return tuple(unflatten(self.tree, final))


def _is_scalar_form(leaf: Any, py_type: type | None) -> bool:
    """Does a loop variable enter as an immutable scalar (a Python number, a NumPy scalar),
    which ``s += x`` in the body rebinds as eagerly?"""
    return (
        py_type is not None
        or isinstance(leaf, np.generic)
        or (isinstance(leaf, Tensor) and is_immutable_scalar(leaf))
    )


def python_number_type(value: Any) -> type | None:
    """The Python number type eager code holds ``value`` as (None: an array or NumPy
    scalar). Such values are *weak* under NEP 50: ``x_float32 * n`` stays float32."""
    if isinstance(value, PythonNumber):
        return value.py_type
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
        return type(value)
    return None


def _weak_if_python(out: Tensor, *sources: Any) -> Tensor:
    """A branch or loop result that is a Python number of one type in every source: still a
    Python number (weak), as in the eager program."""
    types = {python_number_type(s) for s in sources}
    if len(types) == 1 and None not in types:
        return PythonNumber(out.node, out.context, cast("type", types.pop()))  # (not None)
    return out


def _body_output(b_ctx: TraceContext, leaf_name: str, new: Any, spec: AbstractValue) -> Node:
    """The node the body gives for one loop variable, checked against the loop's spec."""
    if isinstance(new, Undefined) or not is_value(new):
        raise TypeError(
            f"'{leaf_name}' is an array before the loop but {_short(new)} after an iteration"
        )
    dt = _dtype_of(new)
    if dt is not None and dt != spec.dtype:
        raise TypeError(
            f"'{leaf_name}' has dtype {spec.dtype} before the loop but {dt} after "
            "one iteration; a traced loop keeps each variable's dtype. Fix: cast "
            f"inside the loop, e.g. .astype(np.{spec.dtype.name})."
        )
    node = lift_leaf(b_ctx, new, spec.dtype)
    if not TensorSpec(node.shape, spec.dtype).is_subtype_of(TensorSpec(spec.shape, spec.dtype)):
        raise ValueError(
            f"'{leaf_name}' has shape {_fmt(spec.shape)} before the loop but "
            f"{_fmt(node.shape)} after one iteration; a traced loop keeps each "
            "variable's shape. Fix: declare the dimensions that change as None with "
            f"shape invariants, e.g. kx.autograph.set_loop_options(shape_invariants=[("
            f"{_ident(leaf_name)}, {_fmt_none(node.shape, spec.shape)})]) "
            "inside the loop, or kx.while_loop(..., shape_invariants=[...])."
        )
    return node


def _ident(text: str) -> str:
    out = "".join(ch if ch.isalnum() else "_" for ch in text).strip("_")
    return out or "var"


def _fmt(shape: tuple | None) -> str:
    return "(unknown rank)" if shape is None else str(tuple(shape))


def _fmt_none(new: tuple | None, old: tuple | None) -> str:
    if new is None or old is None or len(new) != len(old):
        return "None"
    dims = tuple(a if a == b else None for a, b in zip(new, old))
    return str(dims)
