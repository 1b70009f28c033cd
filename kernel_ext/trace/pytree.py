"""Output structures: flatten what a traced function returns into graph outputs and back.

A function may return any nesting of tuples, lists, namedtuples, dicts and dataclasses whose
leaves are traced values, arrays, variables or plain Python values. :func:`flatten_outputs`
turns that into a *tree* (nested :class:`TreeNode` records) plus the list of graph output nodes;
leaves that are Python values stay in the tree as constants, exactly as returned at trace time.
The tree type and :func:`unflatten` live in :mod:`kernel_ext.ir.structure` (the backends read
trees too); they are re-exported here.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import errors
from ..ir import Node
from ..ir.structure import TreeNode, unflatten
from .context import TraceContext
from .opaque import PythonNumber
from .tensor import Tensor
from .types import KeyOrderWatch
from .variables import Variable
from .zero_d import ARRAY, COMPUTED, zero_d_kind

__all__ = [
    "ArgumentContainers",
    "ObjectArguments",
    "TreeNode",
    "flatten_outputs",
    "unflatten",
    "with_replays",
    "with_writeback",
]


def flatten_outputs(
    result: Any,
    ctx: TraceContext,
    updated: dict[int, tuple[tuple, Tensor]] | None = None,
    containers: ArgumentContainers | None = None,
) -> tuple[TreeNode, list[Node]]:
    """The returned structure as a tree plus its graph outputs. ``updated`` maps the ids of
    the argument tensors updated in place to their paths: returning one returns the caller's
    array itself (an ``input`` leaf), as NumPy does; likewise a list or dict argument
    (``containers``) comes back as the caller's own object."""
    outputs: list[Node] = []

    def walk(value: Any) -> TreeNode:
        if containers is not None and id(value) in containers.containers:
            return TreeNode("argument", value=containers.paths[id(value)])
        if updated and isinstance(value, Tensor) and id(value) in updated:
            outputs.append(ctx.lift(value))
            return TreeNode("input", index=len(outputs) - 1, value=updated[id(value)][0])
        if isinstance(value, (Tensor, Variable, np.ndarray, np.generic)):
            form = _zero_d_form(value, ctx)
            node = ctx.lift(value)
            outputs.append(node)
            # a value eager code holds as a Python number comes back as one (value=its type)
            return TreeNode(
                "output",
                index=len(outputs) - 1,
                value=value.py_type if isinstance(value, PythonNumber) else form,
            )
        if isinstance(value, tuple) and hasattr(type(value), "_fields"):
            return TreeNode("namedtuple", tuple(walk(v) for v in value), container=type(value))
        if type(value) in (tuple, list):
            return TreeNode(type(value).__name__, tuple(walk(v) for v in value))
        if isinstance(value, dict):
            keys = tuple(value)
            return TreeNode("dict", tuple(walk(value[k]) for k in keys), keys=keys)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            names = tuple(f.name for f in dataclasses.fields(value))
            return TreeNode(
                "dataclass",
                tuple(walk(getattr(value, n)) for n in names),
                container=type(value),
                keys=names,
            )
        return TreeNode("const", value=value)

    tree = walk(result)
    return tree, outputs


def _zero_d_form(value: Any, ctx: TraceContext) -> Any:
    """An ``output`` leaf's ``value`` for a returned 0-d value (see :mod:`.zero_d`): None for
    a NumPy scalar, ``np.ndarray`` for a fresh 0-d array, ``("like", path)`` for the form of
    the argument at ``path`` (decided per call), ``("argument", path)`` for that argument
    itself (the caller's object, as eagerly), ``"computed"`` for an opaque call's result as
    NumPy's function returned it; None for anything not 0-d."""
    if isinstance(value, np.ndarray):
        return np.ndarray if value.ndim == 0 else None
    if not isinstance(value, Tensor) or isinstance(value, PythonNumber) or value.shape != ():
        return None
    form = zero_d_kind(value.node, ctx.graph)
    if isinstance(form, tuple) and value.node in ctx.graph.inputs:
        return ("argument", form[1])  # an argument returned as it is: the caller's object
    return (
        np.ndarray
        if form == ARRAY
        else form
        if isinstance(form, tuple) or form == COMPUTED
        else None
    )


class ArgumentContainers:
    """The mutable containers among a trace's arguments, to replay their changes per call.

    A list, dict or dataclass argument is rebuilt for the trace (its arrays are placeholders),
    so what the Python function does to it (``cache.append(x)``, ``params['w'] = w_new``,
    ``state.step += 1``) happens to that stand-in, once. Snapshotted before the function runs
    and compared after, each changed container becomes a replay: at every call the caller's
    own container is given the final contents — arrays computed by the graph, the caller's
    own objects where the function kept them, Python values as traced. A dict keeps the
    caller's order for the keys it had (NumPy-style code never sees the difference: eager
    code assigning ``d[k]`` keeps ``k`` in place too).
    """

    def __init__(self, placeholders: Sequence[Any], inputs: Sequence[tuple[tuple, Any]]):
        self.entries: list[tuple[tuple, Any, str, Any]] = []  # path, object, kind, snapshot
        #: id -> path of every argument object the function may keep: containers and arrays
        self.paths: dict[int, tuple] = {id(t): path for path, t in inputs}
        self.containers: set[int] = set()  # ids of the container arguments
        self._updated: dict[int, tuple[tuple, Tensor]] = {}
        for i, value in enumerate(placeholders):
            self._walk(value, (("arg", i),))

    def _walk(self, value: Any, path: tuple) -> None:
        kind = _container_kind(value)
        if kind is None:
            if type(value) is tuple or (isinstance(value, tuple) and hasattr(value, "_fields")):
                for i, v in enumerate(value):
                    self._walk(v, path + (("item", i),))
            return
        self.paths[id(value)] = path
        self.containers.add(id(value))
        self.entries.append((path, value, kind, _contents(value, kind)))
        for step, item in _children(value, kind):
            self._walk(item, path + (step,))

    def replays(
        self, ctx: TraceContext, outputs: list[Node], updated: dict[int, tuple[tuple, Tensor]]
    ) -> list[tuple[tuple, str, TreeNode]]:
        """``(path, kind, contents tree)`` of each container the function changed; the
        contents' arrays are appended to ``outputs``. An argument array updated in place
        (``updated``) stays the caller's object (a NumPy scalar takes its new value)."""
        self._updated = updated
        out = []
        for path, obj, kind, before in self.entries:
            after = _contents(obj, kind)
            if len(after) == len(before) and all(
                ka == kb and va is vb for (ka, va), (kb, vb) in zip(after, before)
            ):
                continue
            tree = TreeNode(
                "dict",
                tuple(self._encode(v, ctx, outputs) for _, v in after),
                keys=tuple(k for k, _ in after),
            )
            out.append((path, kind, tree))
        return out

    def _encode(self, value: Any, ctx: TraceContext, outputs: list[Node]) -> TreeNode:
        if id(value) in self._updated:
            outputs.append(ctx.lift(value))
            return TreeNode("input", index=len(outputs) - 1, value=self.paths[id(value)])
        if id(value) in self.paths:
            return TreeNode("argument", value=self.paths[id(value)])
        if value is None or (
            isinstance(value, (bool, int, float, complex, str, bytes))
            and not isinstance(value, np.generic)
        ):
            return TreeNode("const", value=value)
        if isinstance(value, (Tensor, Variable, np.ndarray, np.generic)):
            form = _zero_d_form(value, ctx)  # (a 0-d array stored stays one, as eagerly)
            outputs.append(ctx.lift(value))
            return TreeNode("output", index=len(outputs) - 1, value=form)
        if type(value) in (list, tuple):
            return TreeNode(
                type(value).__name__, tuple(self._encode(v, ctx, outputs) for v in value)
            )
        if type(value) is dict:
            return TreeNode(
                "dict",
                tuple(self._encode(v, ctx, outputs) for v in value.values()),
                keys=tuple(value),
            )
        raise errors.UnsupportedOpError(
            f"the function stored a {type(value).__name__} ({value!r:.60}) in one of its list, "
            "dict or dataclass arguments; a traced function replays such changes at every "
            "call, which works for arrays, numbers, strings and lists/dicts/tuples of them. "
            "Fix: store arrays or plain values, or return the object instead."
        )


def _container_kind(value: Any) -> str | None:
    if type(value) is list:
        return "list"
    if type(value) is dict or type(value) is KeyOrderWatch:
        return "dict"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return "attrs"
    return None


def _contents(value: Any, kind: str) -> list[tuple[Any, Any]]:
    if kind == "list":
        return list(enumerate(value))
    if kind == "dict":
        return list(dict.items(value))  # (not a KeyOrderWatch's own: the engine's look)
    return list(vars(value).items())


def _children(value: Any, kind: str) -> list[tuple[tuple, Any]]:
    step = {"list": "item", "dict": "key", "attrs": "attr"}[kind]
    return [((step, k), v) for k, v in _contents(value, kind)]


def with_replays(tree: TreeNode, replays: list[tuple[tuple, str, TreeNode]]) -> TreeNode:
    """``tree`` followed by the container replays (:class:`ArgumentContainers`)."""
    if not replays:
        return tree
    return TreeNode(
        "replay",
        (tree, *(t for _, _, t in replays)),
        value=tuple((path, kind) for path, kind, _ in replays),
    )


def with_writeback(
    tree: TreeNode, outputs: list[Node], ctx: TraceContext, updated: list[tuple[tuple, Tensor]]
) -> TreeNode:
    """``tree`` wrapped so that the executor, after building the result, copies the final
    value of each updated argument (appended to ``outputs``) into the caller's array."""
    children = [tree]
    for _, tensor in updated:
        outputs.append(ctx.lift(tensor))
        children.append(TreeNode("output", index=len(outputs) - 1))
    return TreeNode("writeback", tuple(children), value=tuple(path for path, _ in updated))


#: Arguments whose attributes are not the caller's state (functions, classes, modules).
_NOT_HOLDERS = (
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    types.ModuleType,
    type,
    functools.partial,
)
_PLAIN_LEAVES = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    np.ndarray,
    np.generic,
    Tensor,
    Variable,
)


class ObjectArguments:
    """The attributes of plain-object arguments, watched for traced values left in them.

    A plain object (a config, a model holder) is traced as itself, keyed by identity: what
    the Python function does to it happens once, at trace time, on the caller's real object.
    Storing a traced value there (``cfg.history.append(h)``, ``self.last = y``) would leave a
    dead traced value in the caller's object and, unlike eager NumPy, do nothing at later
    calls. So the attributes (and the lists, dicts and sets they hold) are snapshotted before
    the function runs; if a traced value turns up in them afterwards, they are put back as
    they were and the trace stops with an error naming the attribute and the fixes.
    """

    def __init__(self, placeholders: Sequence[Any], names: Sequence[str]) -> None:
        self._saved: list[tuple[str, Any, dict[str, Any], list[tuple[Any, Any]]]] = []
        for name, value in zip(names, placeholders):
            attrs = getattr(value, "__dict__", None)
            if (
                isinstance(value, _PLAIN_LEAVES)
                or _container_kind(value) is not None
                or type(attrs) is not dict
                or isinstance(value, _NOT_HOLDERS)
            ):
                continue
            held = [(v, _shallow(v)) for v in attrs.values() if _shallow(v) is not None]
            self._saved.append((name, value, dict(attrs), held))

    def check(self, function_name: str) -> None:
        """Raise (after restoring the objects) if a traced value was left in one of them."""
        where = self.leak()
        if where is not None:
            self.restore()
            raise errors.UnsupportedOpError(
                f"{function_name}() stored a traced value in {where}, inside an object "
                "argument. Objects are traced as themselves: the store would "
                "happen once, while tracing, and leave a value that has no data, where eager "
                "NumPy stores a new array at every call. Fix: return the value and store it "
                "outside the function, or pass the list or dict itself as an argument (a "
                "traced function replays changes to list, dict and dataclass arguments at "
                "every call)."
            )

    def objects(self) -> list[Any]:
        """The watched object arguments."""
        return [obj for _, obj, _, _ in self._saved]

    def leak(self) -> str | None:
        """Where a traced value was left (``cfg.history[0]``), or None."""
        for name, obj, _, _ in self._saved:
            where = _traced_attribute(name, vars(obj))
            if where is not None:
                return where
        return None

    def restore(self) -> None:
        """Put every watched object's attributes and held containers back as they were."""
        for _, obj, attrs, held in self._saved:
            current = vars(obj)
            current.clear()
            current.update(attrs)
            for container, contents in held:
                if type(container) is list:
                    container[:] = contents
                else:
                    container.clear()
                    if type(container) is dict:
                        container.update(contents)
                    else:
                        container.update(v for v, _ in contents)


def _shallow(value: Any) -> list[tuple[Any, Any]] | None:
    if type(value) is list:
        return list(value)
    if type(value) is dict:
        return list(value.items())
    if type(value) is set:
        return [(v, None) for v in value]
    return None


def _traced_attribute(name: str, attrs: dict[str, Any]) -> str | None:
    """``cfg.history`` (or ``cfg.cache['h']``): where a traced value sits, else None."""

    def find(value: Any, path: str, depth: int) -> str | None:
        if isinstance(value, Tensor) and not isinstance(value, Variable):
            return path
        if depth >= 3:
            return None
        if type(value) in (list, tuple):
            items: Any = enumerate(value)
        elif type(value) is dict:
            items = value.items()
        elif type(value) is set:
            items = ((None, v) for v in value)
        else:
            return None
        for k, v in items:
            found = find(v, path if k is None else f"{path}[{k!r}]", depth + 1)
            if found:
                return found
        return None

    for attr, value in attrs.items():
        found = find(value, f"{name}.{attr}", 0)
        if found:
            return found
    return None
