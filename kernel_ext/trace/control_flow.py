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
from typing import Any

import numpy as np

from .. import errors
from ..ir import AbstractValue, Graph, Node, OpKind
from .context import TraceContext, current_context
from .iteration import TensorArray
from .opaque import PythonNumber
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

_NUMBERS = (bool, int, float, complex, np.number, np.bool_)


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


# ---------------------------------------------------------------------------------------------
# Flattening with names (leaves are what flows through a cond/while)
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Tree:
    kind: str  # leaf, tuple, list, namedtuple, dict, tensor_array
    children: list[_Tree] = dataclasses.field(default_factory=list)
    aux: Any = None


def flatten(value: Any, name: str) -> tuple[_Tree, list[Any], list[str], list[bool]]:
    """Leaves of ``value`` with readable names and a relax flag (shape may change freely)."""
    leaves: list[Any] = []
    names: list[str] = []
    relax: list[bool] = []

    def walk(v: Any, path: str, loose: bool = False) -> _Tree:
        if isinstance(v, TensorArray):
            return _Tree(
                "tensor_array",
                [walk(v.buffer, f"{path}.buffer", True), walk(v.length, f"{path}.size")],
                v.static_parts(),
            )
        if isinstance(v, tuple) and hasattr(type(v), "_fields"):
            return _Tree(
                "namedtuple", [walk(x, f"{path}.{f}") for f, x in zip(v._fields, v)], type(v)
            )
        if type(v) in (tuple, list):
            return _Tree(type(v).__name__, [walk(x, f"{path}[{i}]") for i, x in enumerate(v)])
        if isinstance(v, dict):
            keys = list(v)
            return _Tree("dict", [walk(v[k], f"{path}[{k!r}]") for k in keys], keys)
        leaves.append(v)
        names.append(path)
        relax.append(loose)
        return _Tree("leaf")

    tree = walk(value, name)
    return tree, leaves, names, relax


def unflatten(tree: _Tree, leaves: Sequence[Any]) -> Any:
    it = iter(leaves)

    def build(t: _Tree) -> Any:
        if t.kind == "leaf":
            return next(it)
        items = [build(c) for c in t.children]
        if t.kind == "tuple":
            return tuple(items)
        if t.kind == "list":
            return items
        if t.kind == "namedtuple":
            return t.aux(*items)
        if t.kind == "dict":
            return dict(zip(t.aux, items))
        return TensorArray.from_parts(t.aux, items[0], items[1])

    return build(tree)


def _same_tree(a: _Tree, b: _Tree) -> bool:
    return (
        a.kind == b.kind
        and a.aux == b.aux
        and len(a.children) == len(b.children)
        and all(_same_tree(x, y) for x, y in zip(a.children, b.children))
    )


def is_traced(value: Any) -> bool:
    return isinstance(value, Tensor)


def _is_value(leaf: Any) -> bool:
    """Leaves that become graph values (as opposed to static Python values)."""
    return isinstance(leaf, (Tensor, Variable, np.ndarray) + _NUMBERS)


def _lift_leaf(ctx: TraceContext, leaf: Any, dtype: np.dtype | None = None) -> Node:
    """A node of ``ctx`` for a leaf; Python numbers take ``dtype`` when given (weak scalars)."""
    if isinstance(leaf, (bool, int, float, complex)) and not isinstance(leaf, np.generic):
        # (np.float64 subclasses float but is a strong, typed value: lifted below)
        return ctx.graph.constant(
            np.asarray(leaf, dtype=dtype) if dtype is not None else np.asarray(leaf)
        )
    node = ctx.lift(leaf)
    if not isinstance(node, Node):
        node = ctx.graph.constant(np.asarray(node))
    return node


def _check_predicate(pred: Tensor, what: str) -> None:
    size = pred.size if pred.shape is not None else None
    if size is not None and size != 1:
        raise ValueError(
            f"The truth value of an array with more than one element is "
            f"ambiguous ({what} got {describe_tensor(pred)}). Use a.any() or a.all()"
        )


# ---------------------------------------------------------------------------------------------
# Sub-graph assembly
# ---------------------------------------------------------------------------------------------


def _with_inputs(
    graph: Graph,
    own: Sequence[Node],
    captures: Sequence[tuple[Node, Node]],
    union: Sequence[Node],
    outputs: Sequence[Node],
) -> Graph:
    """``graph`` rebuilt so that its inputs are ``own`` placeholders then one per ``union``
    outer node (unused ones included): the operand order of the control-flow node."""
    g = Graph(graph.name)
    mapping: dict[Node, Node] = {}
    by_outer = {outer: ph for outer, ph in captures}
    for ph in own:
        mapping[ph] = g.create_node(
            OpKind.PLACEHOLDER, (), dict(ph.attrs), name=ph.name, aval=ph.aval
        )
    for outer in union:
        ph = by_outer.get(outer)
        new = g.create_node(
            OpKind.PLACEHOLDER,
            (),
            {"shape": outer.shape, "dtype": outer.dtype},
            name=outer.name,
            aval=outer.aval,
        )
        if ph is not None:
            mapping[ph] = new
    for node in graph.nodes:
        if node.op is OpKind.PLACEHOLDER:
            continue
        args = tuple(mapping[a] if isinstance(a, Node) else a for a in node.args)
        new = Node(
            g.unique_name(node.name), node.op, args, dict(node.attrs), node.aval, node.source
        )
        g.nodes.append(new)
        mapping[node] = new
    g.outputs = [mapping[o] for o in outputs]
    return g


def _union(*capture_lists: Sequence[tuple[Node, Node]]) -> list[Node]:
    seen: dict[Node, None] = {}
    for captures in capture_lists:
        for outer, _ in captures:
            seen.setdefault(outer, None)
    return list(seen)


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
    branches = []
    # Arrays of the enclosing trace a branch updates in place: their new value in each branch
    # (the old one where a branch leaves them alone) becomes an output of the cond, and the
    # array itself takes it afterwards; each branch starts from the state before the if.
    touched: dict[int, Tensor] = {}
    for branch_name, fn in (("true_branch", true_fn), ("false_branch", false_fn)):
        child = ctx.child(f"{name}_{branch_name}")
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
        branches.append((child, result, updates))
    (t_ctx, t_res, t_upd), (f_ctx, f_res, f_upd) = branches
    label = list(names) if names else None
    t_tree, t_leaves, t_names, _ = flatten(t_res, "output")
    f_tree, f_leaves, _, _ = flatten(f_res, "output")
    if label and len(label) == len(t_leaves):
        t_names = label
    if not _same_tree(t_tree, f_tree) or len(t_leaves) != len(f_leaves):
        what, a, b = "the branches", t_res, f_res
        if (
            names
            and isinstance(t_res, tuple)
            and isinstance(f_res, tuple)
            and len(t_res) == len(f_res) == len(names)
        ):
            for n, x, y in zip(names, t_res, f_res):
                if not _same_tree(flatten(x, n)[0], flatten(y, n)[0]):
                    what, a, b = f"'{n}'", x, y
                    break
        raise TypeError(
            f"{what} must have the same structure in both branches of an if on a "
            f"traced value: the true branch gives {_describe_structure(a)}, the "
            f"false branch {_describe_structure(b)}. Fix: make both branches "
            "produce the same kind of value (e.g. both a tuple of two arrays)."
        )
    # decide per leaf: static (identical Python values), the same array object in both
    # branches (kept as the object: it follows its updates), or a graph value (unified dtype)
    n_results = len(t_leaves)
    t_leaves = t_leaves + [t_upd.get(k, r) for k, r in touched.items()]
    f_leaves = f_leaves + [f_upd.get(k, r) for k, r in touched.items()]
    t_names = t_names + [describe_tensor(r) for r in touched.values()]
    plan: list[tuple[str, Any]] = []
    for k, (leaf_name, a, b) in enumerate(zip(t_names, t_leaves, f_leaves)):
        if (
            k < n_results
            and a is b
            and isinstance(a, Tensor)
            and not _created_in(a, (t_ctx, f_ctx))
        ):
            plan.append(("same", a))
            continue
        ua, ub = isinstance(a, Undefined), isinstance(b, Undefined)
        if ua or ub:
            if ua and ub:
                plan.append(("static", a))
                continue
            where = "false" if ub else "true"
            raise ValueError(
                f"'{leaf_name}' must also be assigned in the {where} branch: it is "
                "defined in only one branch of an if on a traced value, so it "
                f"would have no value when the {where} branch runs. Fix: give "
                f"'{leaf_name}' a value before the if, or in both branches."
            )
        if not (_is_value(a) and _is_value(b)):
            if _static_equal(a, b):
                plan.append(("static", a))
                continue
            raise TypeError(
                f"'{leaf_name}' is {_short(a)} in the true branch but {_short(b)} in "
                "the false branch; inside an if on a traced value both branches "
                "must give arrays (or the same Python value)."
            )
        plan.append(("value", _unify_dtype(leaf_name, a, b, "true branch", "false branch")))
    outs: dict[str, list[Node]] = {}
    for key, child, leaves in (("t", t_ctx, t_leaves), ("f", f_ctx, f_leaves)):
        with child:
            outs[key] = [
                _lift_leaf(child, leaf, dtype)
                for (kind, dtype), leaf in zip(plan, leaves)
                if kind == "value"
            ]
        child.active = False
    union = _union(t_ctx.captures, f_ctx.captures)
    t_graph = _with_inputs(t_ctx.graph, [], t_ctx.captures, union, outs["t"])
    f_graph = _with_inputs(f_ctx.graph, [], f_ctx.captures, union, outs["f"])
    out_avals = []
    for ta, fa in zip(t_graph.outputs, f_graph.outputs):
        if ta.dtype != fa.dtype:  # pragma: no cover - unified above
            raise TypeError("internal: branch dtypes differ after unification")
        out_avals.append(AbstractValue(_merge_shapes(ta.shape, fa.shape), ta.dtype))
    node = ctx.graph.create_node(
        OpKind.COND,
        (pred_node, *union),
        {"branches": (t_graph, f_graph), "out_avals": tuple(out_avals)},
        name=name,
    )
    values = iter(_outputs(ctx, node, len(out_avals)))
    leaves = [
        _weak_if_python(next(values), t, f) if kind == "value" else static
        for (kind, static), t, f in zip(plan, t_leaves, f_leaves)
    ]
    for root, value in zip(touched.values(), leaves[n_results:]):
        root.assign(value)
    for (kind, _), leaf, leaf_name, a, b in zip(plan, leaves, t_names, t_leaves, f_leaves):
        outer = [
            x.storage_root
            for x in (a, b)
            if isinstance(x, Tensor) and not _created_in(x, (t_ctx, f_ctx))
        ]
        if kind == "value" and outer and isinstance(leaf, Tensor):
            leaf.may_be(outer, where if leaf_name.startswith("<") else f"{where}, as '{leaf_name}'")
    return unflatten(t_tree, leaves[:n_results])


def _created_in(tensor: Tensor, contexts: Sequence[TraceContext]) -> bool:
    """Was ``tensor`` made inside one of ``contexts`` (a branch or body that has ended)?"""
    ctx = tensor.storage_root.state()[1]
    return any(ctx is c or ctx.is_ancestor(c) for c in contexts)


def _outputs(ctx: TraceContext, node: Node, n: int) -> list[Tensor]:
    return [
        Tensor(
            ctx.graph.create_node(
                OpKind.GET_OUTPUT, (node,), {"index": i}, name=f"{node.name}_out{i}"
            ),
            ctx,
        )
        for i in range(n)
    ]


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
        return vars_[0] if single else type(loop_vars)(vars_)
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
    return result[0] if single else type(loop_vars)(result)


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
    tree: _Tree,
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
    value_idx = [i for i, leaf in enumerate(leaves) if _is_value(leaf)]
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
    tree: _Tree,
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
    # Arrays and numbers become loop-carried graph values; any other Python value rides
    # along unchanged (and must not change in the body). An array object among the loop
    # variables stays that object inside the body (its value swapped for the iteration's),
    # so an in-place update of it is an update of the caller's array, as in NumPy; a view
    # follows its root.
    value_idx = [i for i, leaf in enumerate(leaves) if _is_value(leaf)]
    slots = [leaves[i] for i in value_idx] + list(hidden)
    slot_names = [leaf_names[i] for i in value_idx] + [describe_tensor(r) for r in hidden]
    init_nodes = [_lift_leaf(ctx, leaf) for leaf in slots]
    specs: list[AbstractValue] = []
    for k, node in enumerate(init_nodes):
        aval = node.aval
        shape = aval.shape
        if k < len(value_idx) and relax[value_idx[k]]:
            shape = None
        if shape_invariants is not None and k < min(len(shape_invariants), len(value_idx)):
            shape = _invariant_spec(shape_invariants[k], slot_names[k], aval)
        specs.append(AbstractValue(shape, aval.dtype))
    owners: dict[int, int] = {}  # id(root) -> the slot whose placeholder it takes
    for k, leaf in enumerate(slots):
        if k not in detached and _is_outer_root(leaf, ctx):
            owners.setdefault(id(leaf), k)
    carried = {id(slots[k]) for k in owners.values()}
    saved = {id(slots[k]): (slots[k], slots[k].state()) for k in owners.values()}

    def trace_part(part: str, fn: Callable) -> tuple[TraceContext, list[Node], Any]:
        child = ctx.child(f"{name}_{part}")
        with child:
            phs = [
                child.graph.create_node(
                    OpKind.PLACEHOLDER,
                    (),
                    {"shape": spec.shape, "dtype": spec.dtype},
                    name=_ident(slot_names[k]),
                )
                for k, spec in enumerate(specs)
            ]
            current = list(leaves)
            for k, leaf in enumerate(slots):
                if owners.get(id(leaf)) == k:
                    if k < len(value_idx) and is_immutable_scalar(leaf):
                        # a NumPy scalar: ``s += x`` in the body rebinds, as eagerly
                        phs[k].attrs["scalar_form"] = True
                    leaf.restore((phs[k], child, next_version()))
            for k, i in enumerate(value_idx):
                leaf = leaves[i]
                if k in detached or not (
                    id(leaf) in owners
                    or (isinstance(leaf, Tensor) and leaf.storage_root is not leaf)
                ):
                    py_type = python_number_type(leaf)  # a Python number stays weak (NEP 50)
                    if (
                        py_type is not None
                        or isinstance(leaf, np.generic)
                        or (isinstance(leaf, Tensor) and is_immutable_scalar(leaf))
                    ):
                        # a Python number or NumPy scalar: ``s += x`` in the body rebinds,
                        # as eagerly
                        phs[k].attrs["scalar_form"] = True
                    current[i] = (
                        PythonNumber(phs[k], child, py_type) if py_type else child.tensor(phs[k])
                    )
            structured = unflatten(tree, current)
            try:
                result = fn(*structured)
            except BaseException:
                child.active = False
                undo(child)  # a body that fails leaves no array swapped or half-updated
                raise
        return child, phs, result

    def undo(child: TraceContext) -> list[Tensor]:
        """Put every array back as before the loop; return those updated but not carried."""
        new = []
        for root, pre in reversed(child.outer_updates()):
            if id(root) not in carried:
                new.append(root)
                root.restore(pre)
        for root, state in saved.values():
            root.restore(state)
        return new[::-1]

    c_ctx, c_phs, c_res = trace_part("cond", cond_fn)
    if isinstance(c_res, Variable):
        c_res = c_res.read_value()
    with c_ctx:
        if is_traced(c_res):
            _check_predicate(c_res, "the loop condition")
        c_out = [_lift_leaf(c_ctx, c_res if _is_value(c_res) else bool(c_res))]
    c_ctx.active = False
    found = undo(c_ctx)

    b_ctx, b_phs, b_res = trace_part("body", body_fn)
    if not isinstance(b_res, (tuple, list)) or not _same_tree(
        tree, flatten(tuple(b_res), "loop_vars")[0]
    ):
        undo(b_ctx)
        raise TypeError(
            f"the loop body must return the loop variables in the same structure: "
            f"expected {len(leaves)} value(s) as {_describe_structure(tuple(leaves))}"
            f", got {_describe_structure(b_res)}"
        )
    b_leaves = flatten(tuple(b_res), "loop_vars")[1]
    # carried array objects the body updated in place (their value is no longer the slot's)
    changed = {id(slots[k]) for k in owners.values() if slots[k].state()[0] is not b_phs[k]}
    try:
        with b_ctx:
            b_out = []
            for k, spec in enumerate(specs):
                if k < len(value_idx):
                    i = value_idx[k]
                    new = b_leaves[i]
                    if new is not leaves[i] and id(leaves[i]) in changed:
                        raise errors.UnsupportedOpError(
                            f"'{leaf_names[i]}' is updated in place and also assigned a new "
                            "array in the same loop body; NumPy would update the original "
                            "array only until the assignment. Fix: use a new name for the "
                            "new array, or update the array in place only."
                        )
                else:
                    new = slots[k]
                b_out.append(_body_output(b_ctx, slot_names[k], new, spec))
                if b_phs[k].attrs.get("scalar_form") and zero_d_kind(b_out[-1], None) != SCALAR:
                    # the body treated it as an immutable scalar; a 0-d array coming back
                    # would be written in place by the next iteration's ``s += x``
                    raise errors.UnsupportedOpError(
                        f"'{slot_names[k]}' is a NumPy scalar before the loop but a 0-d array "
                        "after one iteration (NumPy writes into a 0-d array in place, and "
                        "into a scalar never). Fix: keep it a scalar in the loop (e.g. "
                        f"{_ident(slot_names[k])}[()] ) or make it an array before the loop."
                    )
            for i, leaf in enumerate(leaves):
                if i not in value_idx and not _static_equal(leaf, b_leaves[i]):
                    raise TypeError(
                        f"'{leaf_names[i]}' is {_short(leaf)} before the loop but "
                        f"{_short(b_leaves[i])} after one iteration; only arrays "
                        "may change inside a traced loop"
                    )
    finally:
        b_ctx.active = False
        found += [r for r in undo(b_ctx) if all(r is not f for f in found)]
    if found:
        return found
    rebound = {
        k
        for k in owners.values()
        if k < len(value_idx)
        and id(slots[k]) not in changed
        and b_leaves[value_idx[k]] is not leaves[value_idx[k]]
    }
    # a view among the loop variables reads its root inside the body: rebound, it must not
    rebound |= {
        k
        for k, i in enumerate(value_idx)
        if k not in detached
        and isinstance(leaves[i], Tensor)
        and leaves[i].storage_root is not leaves[i]
        and b_leaves[i] is not leaves[i]
    }
    if rebound:
        return rebound
    union = _union(c_ctx.captures, b_ctx.captures)
    c_graph = _with_inputs(c_ctx.graph, c_phs, c_ctx.captures, union, c_out)
    b_graph = _with_inputs(b_ctx.graph, b_phs, b_ctx.captures, union, b_out)
    node = ctx.graph.create_node(
        OpKind.WHILE,
        (*init_nodes, *union),
        {"cond": c_graph, "body": b_graph, "n_vars": len(specs), "out_avals": tuple(specs)},
        name=name,
    )
    outs = _outputs(ctx, node, len(specs))
    for k, leaf in enumerate(slots):
        if owners.get(id(leaf)) == k and id(leaf) in changed:
            leaf.assign(outs[k])  # the array object itself takes its final value
    final = list(leaves)
    for k, i in enumerate(value_idx):
        kept = b_leaves[i] is leaves[i] and isinstance(leaves[i], Tensor)
        final[i] = leaves[i] if kept else _weak_if_python(outs[k], leaves[i], b_leaves[i])
    return tuple(unflatten(tree, final))


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
        return PythonNumber(out.node, out.context, types.pop())
    return out


def _body_output(b_ctx: TraceContext, leaf_name: str, new: Any, spec: AbstractValue) -> Node:
    """The node the body gives for one loop variable, checked against the loop's spec."""
    if isinstance(new, Undefined) or not _is_value(new):
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
    node = _lift_leaf(b_ctx, new, spec.dtype)
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
