"""The Dask backend: a traced graph as a Dask array graph, fused per block.

A trace called with ``dask.array.Array`` arguments (or made with ``backend="dask"``) compiles
here. Its ``run`` builds, on every call, a Dask graph from the *optimised* IR graph and returns
Dask arrays (nothing is computed until the caller's ``.compute()``):

* each fusion segment's elementwise part (:func:`kernel_ext.passes.fusion.partition`) is
  one ``dask.array.blockwise`` task per block, running the segment's ops on NumPy blocks in
  program order (the ``LOWER`` callables of the NumPy reference interpreter), not one Dask
  task per NumPy op;
* a segment ending in a reduction (``sum``, ``mean``, ``max``, ``min``, ``prod``, ``any``,
  ``all``) computes the chain *and* the block's partial reduction in that one task, and Dask's
  tree reduction combines the partials (:data:`COMBINE`);
* other ops (``matmul``, ``dot``, ``einsum``, shape ops, static indexing, scans, other
  reductions) are Dask's own functions of the same name, reached by calling the op's NumPy
  lowering on Dask arrays (NumPy's ``__array_function__`` protocol hands the call to Dask).
  While the graph is built, a NumPy function Dask does not implement, or anything that would
  compute a Dask array, raises instead of silently computing (:func:`_building`);
* control flow, variables, random draws, prints and opaque NumPy calls cannot be expressed
  as one Dask graph built ahead of the data: compiling such a graph raises
  :class:`~kernel_ext.errors.DaskUnsupportedError` naming the op, its line and the fix.

Dask and distributed are an optional extra (``pip install "jupyterlab-tffunction[dask]"``)
and this is the only module that imports them (an import-linter contract in pyproject).
"""

from __future__ import annotations

import contextlib
import operator
import time
import warnings
from typing import Any, Callable, Iterator, Sequence

import dask
import dask.array as da
import numpy as np

from .. import errors
from ..ir import FUSIBLE_REDUCTIONS, Graph, Node, OpGroup, OpKind
from ..ir.interpreter import LOWER
from ..passes.fusion import Segment, partition, schedule
from ..trace.pytree import TreeNode, unflatten
from .executable import Executable

#: How a fused reduction's per-block partials combine into the result: the Dask reduction
#: of the same kind over the partials (a ``mean`` sums its partial sums, then divides).
COMBINE: dict[OpKind, str] = {OpKind.SUM: "sum", OpKind.PROD: "prod", OpKind.MAX: "max",
                              OpKind.MIN: "min", OpKind.ANY: "any", OpKind.ALL: "all",
                              OpKind.MEAN: "sum"}

#: Ops outside a segment that run as Dask's function of the same name (through NumPy's
#: ``__array_function__``; Dask implements each). Anything else raises at compile time.
DASK_NATIVE: frozenset[OpKind] = frozenset(
    k for k in OpKind
    if (k.group in (OpGroup.REDUCTION, OpGroup.SCAN) and hasattr(da, k.value))
    or k in (OpKind.MATMUL, OpKind.DOT, OpKind.OUTER, OpKind.EINSUM, OpKind.VDOT,
             OpKind.RESHAPE, OpKind.TRANSPOSE, OpKind.EXPAND_DIMS, OpKind.SQUEEZE,
             OpKind.BROADCAST_TO, OpKind.CONCATENATE, OpKind.STACK, OpKind.FLIP,
             OpKind.COPY, OpKind.REAL, OpKind.IMAG, OpKind.PAD, OpKind.GETITEM))

_WHY = {
    OpGroup.CONTROL_FLOW: (
        "its condition or trip count needs a computed value each iteration, and a Dask graph "
        "is built before any block is computed. Fix: compute the value the condition reads "
        "outside the function (`n = int(x.sum().compute())`) and pass it as a Python value, "
        "or write the loop in Python around calls of the traced function"),
    OpGroup.STATEFUL: (
        "variables, random draws and prints have an order in time that a Dask graph does not "
        "keep. Fix: draw or read outside and pass arrays in, or use backend='auto' on NumPy "
        "arrays"),
    OpGroup.OPAQUE: (
        "it is an opaque NumPy call that Dask does not implement. Fix: call it outside on a "
        "computed array, or apply it per block with `x.map_blocks(fn)` outside the function"),
}


def can_fuse(node: Node) -> bool:
    """A segment member: an elementwise op or a fusible reduction, with known shapes."""
    aval = node.aval
    if aval is None or getattr(aval, "shape", None) is None or None in aval.shape:
        return False
    if node.op is OpKind.WHERE or node.op.group is OpGroup.ELEMENTWISE:
        if node.op in (OpKind.FREXP, OpKind.MODF, OpKind.DIVMOD):
            return False  # (several results: run through get_output, never fused)
        return all(getattr(a.aval, "shape", None) is not None for a in node.inputs)
    if node.op in FUSIBLE_REDUCTIONS:
        x = node.args[0]
        return isinstance(x, Node) and getattr(x.aval, "shape", None) is not None
    return False


def unsupported(graph: Graph) -> list[str]:
    """One message per op of ``graph`` Dask cannot run (empty: the graph compiles)."""
    found = []
    for node in graph.nodes:
        op = node.op
        if op in (OpKind.PLACEHOLDER, OpKind.CONSTANT) or op in DASK_NATIVE or can_fuse(node):
            if op is OpKind.GETITEM and any(isinstance(a, Node) for a in node.args[1:]):
                found.append(_message(node, "its index is a traced value, which Dask needs "
                                      "to know while building the graph. Fix: pass the "
                                      "index as a Python value"))
            continue
        if op.group is OpGroup.ELEMENTWISE:
            continue  # (an elementwise op outside a segment runs blockwise on its own)
        why = _WHY.get(op.group, "Dask has no function for it. Fix: compute the Dask "
                       "array first (`x.compute()`) and call the function on NumPy arrays, "
                       "or apply the NumPy function per block with `x.map_blocks(...)`")
        found.append(_message(node, why))
    return found


def _message(node: Node, why: str) -> str:
    where = node.attrs.get("_where")
    what = node.op.value
    if node.op is OpKind.NUMPY_CALL:
        fn = node.attrs.get("fn")
        what = f"numpy_call of np.{getattr(fn, '__name__', fn)}"
    return f"'{what}'{f' ({where})' if where else ''} cannot run on Dask arrays: {why}."


def compile_dask(graph: Graph, tree: TreeNode, n_params: int, *,
                 name: str = "graph") -> Executable:
    """The :class:`Executable` of ``graph`` on the Dask backend (module docstring).

    Raises :class:`~kernel_ext.errors.DaskUnsupportedError` at trace time when an op cannot
    run on Dask arrays, or the function updates its arguments in place.
    """
    t0 = time.perf_counter()
    problems = unsupported(graph)
    if _updates_arguments(tree):
        problems.append("the function updates an argument in place; Dask arrays are "
                        "immutable. Fix: return the new value instead")
    if problems:
        raise errors.DaskUnsupportedError(
            f"'{name}' cannot run on the Dask backend: " + " ".join(problems))
    segments = partition(graph, can_fuse)
    order = schedule(graph, segments)
    steps = [_segment_step(s) if isinstance(s, Segment) else _node_step(s) for s in order]
    inputs = [(node, node.attrs["path"]) for node in graph.inputs]
    outputs = list(graph.outputs)

    def run(*params: Any) -> Any:
        env: dict[Node, Any] = {}
        for node, path in inputs:
            env[node] = _as_dask(_read(params, path))
        with _building():
            for step in steps:
                step(env)
        leaves = [_as_dask(env[o]) for o in outputs]
        executable.tasks = task_count(leaves)  # (the monitor and the sidebar show it)
        return unflatten(tree, leaves)

    described = [{"ops": s.describe(), "kind": s.kind, "kernel": "numpy-blockwise",
                  "state": "ready", "compile_ms": 0.0, "cache": ""} for s in segments]
    source = "\n".join(_describe(s) for s in order) + "\n"
    executable = Executable(run, source, "dask", described, (time.perf_counter() - t0) * 1e3)
    return executable


def task_count(result: Any) -> int:
    """Tasks in the Dask graph of a result (a Dask array or a structure of them), as built:
    ``len`` of the merged graphs, before Dask's own optimisation at ``compute``."""
    merged: dict = {}
    for a in _leaves(result):
        if isinstance(a, da.Array):
            merged.update(dict(a.__dask_graph__()))
    return len(merged)


# -- steps ---------------------------------------------------------------------------------

Step = Callable[[dict], None]


def _segment_step(seg: Segment) -> Step:
    """One blockwise task per block for the segment's elementwise part; with a reduction,
    the block's partial reduction in that same task, combined by Dask's tree reduction."""
    elementwise = seg.elementwise
    red = seg.reduction
    ndim = len(seg.domain)
    if red is None:
        return _blockwise_step(elementwise, seg.inputs, seg.outputs, ndim)
    if red.args[0] in seg.inputs or len(seg.outputs) > 1:
        # the reduced array is needed whole anyway (read outside, or an input): compute the
        # elementwise outputs blockwise, then reduce with Dask's own reduction
        wanted = [o for o in seg.outputs if o is not red]
        source = red.args[0]
        if source not in wanted and source not in seg.inputs:
            wanted.append(source)
        first = _blockwise_step(elementwise, seg.inputs, wanted, ndim) if wanted else None
        second = _node_step(red)

        def step(env: dict) -> None:
            if first is not None:
                first(env)
            second(env)
        return step
    return _fused_reduction_step(elementwise, seg.inputs, red, ndim)


def _chain(nodes: Sequence[Node], inputs: Sequence[Node]) -> Callable[..., dict]:
    """The NumPy function of a segment's nodes on one block of each input: node -> value."""
    fns = [(n, LOWER[n.op](n)) for n in nodes]

    def chain(*blocks: Any) -> dict:
        env = dict(zip(inputs, blocks))
        for n, fn in fns:
            env[n] = fn(*[env[a] if isinstance(a, Node) else a for a in n.args])
        return env
    return chain


def _indices(value: Any, ndim: int) -> tuple:
    """Blockwise index of an operand broadcast against a domain of rank ``ndim``: its
    dimensions are the domain's last ones (NumPy's right alignment)."""
    k = np.ndim(value)
    return tuple(range(ndim - k, ndim))


def _blockwise_step(nodes: Sequence[Node], inputs: Sequence[Node], outputs: Sequence[Node],
                    ndim: int) -> Step:
    chain = _chain(nodes, inputs)
    out_ind = tuple(range(ndim))
    outs = list(outputs)

    def block(*blocks: Any) -> Any:
        env = chain(*blocks)
        if len(outs) == 1:
            return np.asarray(env[outs[0]], dtype=outs[0].aval.dtype)
        return tuple(np.asarray(env[o], dtype=o.aval.dtype) for o in outs)

    def step(env: dict) -> None:
        operands = []
        for i in inputs:
            operands += [env[i], _indices(env[i], ndim)]
        if len(outs) == 1:
            o = outs[0]
            env[o] = da.blockwise(block, out_ind, *operands, dtype=o.aval.dtype,
                                  meta=np.empty((0,) * ndim, o.aval.dtype))
            return
        # several outputs: one task per block computes all of them; each output picks its
        # own from the block's tuple (a getitem task, no recomputation)
        packed = da.blockwise(block, out_ind, *operands, meta=np.empty((0,) * ndim))
        for k, o in enumerate(outs):
            env[o] = packed.map_blocks(operator.getitem, k, dtype=o.aval.dtype,
                                       meta=np.empty((0,) * ndim, o.aval.dtype))
    return step


def _axes(red: Node, ndim: int) -> tuple[int, ...]:
    axis = red.attrs.get("axis")
    if axis is None:
        return tuple(range(ndim))
    axis = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(sorted(int(a) % ndim for a in axis))


def _fused_reduction_step(nodes: Sequence[Node], inputs: Sequence[Node], red: Node,
                          ndim: int) -> Step:
    """The chain and each block's partial reduction in one task (keeping the reduced axes
    with one element per block), then Dask's reduction of the partials (:data:`COMBINE`)."""
    chain = _chain(nodes, inputs)
    axes = _axes(red, ndim)
    keepdims = bool(red.attrs.get("keepdims", False))
    out_dtype = red.aval.dtype
    source = red.args[0]
    if red.op is OpKind.MEAN:
        # NumPy's mean accumulates integers and bools in float64, float16 in float32
        dt = np.dtype(source.aval.dtype)
        acc = np.dtype(np.float64) if dt.kind in "biu" else \
            np.dtype(np.float32) if dt == np.float16 else out_dtype
        partial_fn: Callable[..., Any] = lambda x: np.sum(x, axis=axes, keepdims=True,
                                                          dtype=acc)
    else:
        params = {k: v for k, v in red.params.items() if k not in ("axis", "keepdims")}
        reduce = red.op.numpy_function
        acc = out_dtype
        partial_fn = lambda x: reduce(x, axis=axes, keepdims=True, **params)
    combine = COMBINE[red.op]
    out_ind = tuple(range(ndim))
    adjust = {a: 1 for a in axes}

    def block(*blocks: Any) -> Any:
        return np.asarray(partial_fn(chain(*blocks)[source]), dtype=acc)

    def step(env: dict) -> None:
        operands = []
        for i in inputs:
            operands += [env[i], _indices(env[i], ndim)]
        partial = da.blockwise(block, out_ind, *operands, dtype=acc, adjust_chunks=adjust,
                               meta=np.empty((0,) * ndim, acc))
        result = getattr(partial, combine)(axis=axes, keepdims=keepdims)
        if red.op is OpKind.MEAN:
            count = int(np.prod([source.aval.shape[a] for a in axes]))
            result = (result / count).astype(out_dtype)
        env[red] = result.astype(out_dtype) if result.dtype != out_dtype else result
    return step


def _node_step(node: Node) -> Step:
    """A node outside any segment: a constant, an elementwise op on its own (blockwise), or
    Dask's function of the op's name, reached through the op's NumPy lowering."""
    if node.op is OpKind.PLACEHOLDER:
        return lambda env: None
    if node.op is OpKind.CONSTANT:
        value = node.attrs["value"]
        return lambda env: env.__setitem__(node, value)
    if can_fuse(node) and node.op not in FUSIBLE_REDUCTIONS:
        return _blockwise_step([node], list(node.inputs), [node], len(node.aval.shape))
    fn = LOWER[node.op](node)

    def step(env: dict) -> None:
        args = [_as_dask(env[a]) if isinstance(a, Node) else a for a in node.args]
        result = fn(*args)
        # Dask may pick another dtype than NumPy (a blocked integer matmul sums its partial
        # products in int64): the trace's dtype is NumPy's
        dtype = getattr(node.aval, "dtype", None)
        if isinstance(result, da.Array) and dtype is not None and result.dtype != dtype:
            result = result.astype(dtype)
        env[node] = result
    return step


# -- helpers --------------------------------------------------------------------------------

def _refuse_compute(*args: Any, **kwargs: Any) -> Any:
    raise errors.DaskUnsupportedError(
        "building the Dask graph of a traced function needed a computed value (an op "
        "converted a Dask array to NumPy). Fix: compute the arrays first (`x.compute()`) "
        "and call the function on NumPy arrays; please report the op.")


@contextlib.contextmanager
def _building() -> Iterator[None]:
    """While a graph is built nothing may compute: Dask's fallback for a NumPy function it
    does not implement (a FutureWarning, then a compute) and any ``np.asarray`` of a Dask
    array raise instead."""
    with warnings.catch_warnings(), dask.config.set(scheduler=_refuse_compute):
        warnings.filterwarnings("error", message=".*is not implemented by Dask array",
                                category=FutureWarning)
        try:
            yield
        except FutureWarning as w:
            raise errors.DaskUnsupportedError(
                f"{w} Fix: compute the arrays first (`x.compute()`) and call the function "
                "on NumPy arrays.") from None


def _as_dask(value: Any) -> Any:
    """Dask arrays stay; NumPy arrays and scalars become one-block Dask arrays."""
    if isinstance(value, da.Array):
        return value
    arr = np.asarray(value)
    return da.from_array(arr, chunks=arr.shape or ())


def _read(params: tuple, path: tuple) -> Any:
    (_, index), *steps = path
    value = params[index]
    for kind, key in steps:
        value = getattr(value, key) if kind == "attr" else value[key]
    return value


def _updates_arguments(tree: TreeNode) -> bool:
    if tree.kind in ("input", "writeback", "replay"):
        return True
    return any(_updates_arguments(c) for c in tree.children)


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    else:
        yield value


def _describe(step: Node | Segment) -> str:
    if isinstance(step, Segment):
        how = "blockwise + tree reduction" if step.reduction is not None else "blockwise"
        return f"segment {step.index}: {step.describe()} -> one task per block ({how})"
    return f"{step.name} = {step.op.value} -> dask"


__all__ = ["COMBINE", "DASK_NATIVE", "can_fuse", "compile_dask", "task_count", "unsupported"]
