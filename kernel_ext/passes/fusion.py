"""The fusion partitioner: which nodes of a graph run together as one generated kernel.

A *segment* is a set of pure nodes a backend compiles into one loop over one iteration
*domain* (a shape): a maximal chain or tree of elementwise ops (ufuncs, comparisons, ``where``,
casts, ``clip``) over a common shape, optionally ending in one reduction (sum/mean/max/...)
that consumes it. Inside a segment no intermediate array is ever materialised: each element
flows through the whole chain in registers, which is where the speed over NumPy comes from
(NumPy writes and re-reads one full temporary array per op).

The partition is a pure analysis: the graph is not rewritten, and nothing here decides whether
a segment is *worth* compiling (the backend's cost model does). The rules:

* members are elementwise nodes whose shape is exactly the segment's domain (so every member
  is computed once per domain element; a smaller operand that is broadcast stays outside, as an
  input, instead of being recomputed per element), plus at most one terminal reduction;
* a reduction ends a segment: nothing inside consumes it;
* stateful ops, control flow, unknown ranks and dtypes the backend cannot compute are never
  members (the caller's ``can_fuse`` predicate says which nodes are eligible);
* segments stay *convex*: no path leaves a segment and comes back into it, so a segment can run
  as one step after all its inputs and before all its users (:func:`schedule` orders them).

The algorithm is the greedy producer-into-consumer merge of XLA's instruction fusion, run in
program order: each eligible node joins (and merges) the segments of its producers when the
domain matches and the merge keeps every segment convex.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ir import FUSIBLE_REDUCTIONS, Graph, Node, OpGroup, has_effects


@dataclass
class Segment:
    """Nodes fused into one kernel, with what flows in and out of it.

    ``inputs`` are the outside nodes the members read (first-use order), ``outputs`` the
    members whose values are needed outside (read by a non-member or a graph output); a
    reduction is always an output. ``domain`` is the shape every elementwise member has.
    """

    nodes: list[Node]
    inputs: list[Node]
    outputs: list[Node]
    domain: tuple[Any, ...]
    reduction: Node | None = None
    index: int = 0

    @property
    def kind(self) -> str:
        return "reduce" if self.reduction is not None else "map"

    @property
    def elementwise(self) -> list[Node]:
        return [n for n in self.nodes if n is not self.reduction]

    def describe(self) -> str:
        """``add+tanh+sum`` style summary of the fused ops (program order)."""
        return "+".join(n.op.value for n in self.nodes)


def default_can_fuse(node: Node) -> bool:
    """Structural eligibility: an elementwise op or fusible reduction on known ranks."""
    if node.aval is None or not hasattr(node.aval, "shape") or node.aval.shape is None:
        return False
    if node.op.group is OpGroup.ELEMENTWISE:
        return all(
            a.aval is not None and getattr(a.aval, "shape", None) is not None for a in node.inputs
        )
    if node.op in FUSIBLE_REDUCTIONS:
        x = node.args[0]
        return isinstance(x, Node) and getattr(x.aval, "shape", None) is not None
    return False


class _Sets:
    """Union-find over segment ids."""

    def __init__(self) -> None:
        self.parent: list[int] = []

    def new(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, ids: Iterable[int]) -> int:
        ids = [self.find(i) for i in ids]
        root = min(ids)
        for i in ids:
            self.parent[i] = root
        return root


def partition(
    graph: Graph, can_fuse: Callable[[Node], bool] = default_can_fuse, max_nodes: int = 64
) -> list[Segment]:
    """Segments of ``graph`` (top level only; sub-graphs are partitioned on their own).

    Every returned segment has at least one member; nodes in no segment run as they are.
    ``max_nodes`` bounds a segment's size (compile time grows with kernel size).
    """
    sets = _Sets()
    seg_of: dict[Node, int] = {}  # member -> segment id (resolve with find)
    domain: dict[int, tuple[Any, ...]] = {}  # root id -> domain shape
    reduced: dict[int, Node] = {}  # root id -> terminal reduction
    size: dict[int, int] = {}
    ancestors: dict[Node, frozenset[int]] = {}  # segment ids a node depends on (incl. its own)
    members: dict[int, list[Node]] = {}  # root id -> its nodes (kept in step with unions)

    def anc(node: Node) -> set[int]:
        return {sets.find(i) for i in ancestors.get(node, ())}

    last_effect: Node | None = None
    for node in graph.nodes:
        args = node.inputs
        joined: int | None = None
        if not has_effects(node) and can_fuse(node):
            if node.op.group is OpGroup.ELEMENTWISE:
                joined = _try_join(
                    node,
                    args,
                    _known_shape(node),
                    sets,
                    seg_of,
                    domain,
                    reduced,
                    size,
                    anc,
                    max_nodes,
                    terminal=False,
                    members=members,
                )
            else:
                joined = _try_join(
                    node,
                    args[:1],
                    _known_shape(args[0]),
                    sets,
                    seg_of,
                    domain,
                    reduced,
                    size,
                    anc,
                    max_nodes,
                    terminal=True,
                    members=members,
                )
        deps: set[int] = set()
        for a in args:
            deps |= ancestors.get(a, frozenset())
        if has_effects(node):
            # effects run in program order (schedule chains them): a variable read after a
            # write depends on everything the write did, or a segment reading the new value
            # and feeding the write would be a cycle
            if last_effect is not None:
                deps |= ancestors.get(last_effect, frozenset())
            last_effect = node
        if joined is not None:
            deps.add(joined)
        ancestors[node] = frozenset(deps)
    _merge_siblings(graph, sets, seg_of, domain, reduced, size, ancestors, max_nodes)
    return _collect(graph, sets, seg_of, domain, reduced)


def _merge_siblings(
    graph: Graph,
    sets: _Sets,
    seg_of: dict[Node, int],
    domain: dict[int, tuple[Any, ...]],
    reduced: dict[int, Node],
    size: dict[int, int],
    ancestors: dict[Node, frozenset[int]],
    max_nodes: int,
) -> None:
    """Horizontal fusion: independent segments over the same domain that read a common
    input become one kernel (one pass over the shared inputs, one call instead of several).
    Independent means neither depends on the other, which keeps the merge convex; at most one
    of them may end in a reduction.

    Segments are taken in graph order; each absorbs, lowest position first, the later
    segments that pass the tests, in passes until none does (a merge can make a segment share
    an input with a later one). Every other reason to refuse a pair only grows with merges
    (sizes, dependencies, reductions), so an earlier segment never gains a partner from a
    later merge and one sweep finds what scanning all pairs again after every merge did —
    without its cubic cost (a 400-row filter: 32 million union-find calls, a minute). Only
    segments that read a common input are looked at (an index of readers per input), and
    "depends" is a set test: the segments each one's inputs are computed from, resolved
    once, against the ids merged into the other."""
    member_lists: dict[int, list[Node]] = {}
    for n, sid in seg_of.items():
        member_lists.setdefault(sets.find(sid), []).append(n)
    order: dict[int, int] = {}  # root -> position of its first member in the graph
    for node in graph.nodes:
        if node in seg_of:
            order.setdefault(sets.find(seg_of[node]), len(order))
    outside: dict[int, set[Node]] = {}
    upstream: dict[int, set[int]] = {}  # root -> the segments its outside inputs come from
    merged_ids: dict[int, set[int]] = {}  # root -> every id merged into it
    readers: dict[Node, list[int]] = {}  # input -> roots reading it from outside
    for sid, ms in member_lists.items():
        inside = set(ms)
        outside[sid] = {x for n in ms for x in n.inputs if x not in inside}
        merged_ids[sid] = {sid}
        for x in outside[sid]:
            readers.setdefault(x, []).append(sid)
    for sid in member_lists:
        upstream[sid] = {sets.find(i) for x in outside[sid] for i in ancestors.get(x, ())}

    def depends(a: int, b: int) -> bool:
        """Does segment ``a`` read anything computed from segment ``b``? (As the nodes were
        partitioned: merges since can add paths, which :func:`reaches` follows.)"""
        return not upstream[a].isdisjoint(merged_ids[b])

    users = graph.users()
    effects = [n for n in graph.nodes if has_effects(n)]
    next_effect = dict(itertools.pairwise(effects))  # schedule runs effects in program order

    def reaches(a: int, b: int) -> bool:
        """Is segment ``b`` computed from segment ``a`` now, through any path of nodes and
        of segments merged so far (a segment runs as one step: what reads one of its members
        waits for all of them)? Two merges that are each independent can make a cycle: ``x``
        feeds ``y`` in one merged segment, ``y`` another merged segment that feeds ``x``'s."""
        target = set(member_lists[b])
        seen: set[Node] = set(member_lists[a])
        stack = list(seen)
        while stack:
            node = stack.pop()
            nxt = list(users.get(node, ()))
            follow = next_effect.get(node)
            if follow is not None:
                nxt.append(follow)
            for user in nxt:
                if user in seen:
                    continue
                if user in target:
                    return True
                sid = seg_of.get(user)
                group = member_lists[sets.find(sid)] if sid is not None else [user]
                for member in group:
                    if member not in seen:
                        seen.add(member)
                        stack.append(member)
        return False

    def sharing(a: int, after: int) -> set[int]:
        """Roots past position ``after`` that read an input ``a`` reads from outside."""
        found = {sets.find(c) for x in outside[a] for c in readers.get(x, ())}
        return {c for c in found if c != a and order[c] > after}

    def joinable(a: int, b: int) -> bool | None:
        """True: merge; None: not now (no common input); False: never (the rest grow)."""
        if domain[a] != domain[b] or (a in reduced and b in reduced):
            return False
        if size[a] + size[b] > max_nodes or depends(a, b) or depends(b, a):
            return False
        if outside[a].isdisjoint(outside[b]):
            return None
        # the quotient graph's paths (rare, and they too only grow with merges)
        return not (reaches(a, b) or reaches(b, a))

    def merge(a: int, b: int) -> int:
        red = reduced.get(a) or reduced.get(b)
        root = sets.union([a, b])
        domain[root] = domain[a]
        size[root] = size[a] + size[b]
        order[root] = min(order.pop(a), order.pop(b))
        ms = member_lists.pop(a) + member_lists.pop(b)
        member_lists[root] = ms
        inside = set(ms)
        outside.pop(a), outside.pop(b)
        outside[root] = {x for n in ms for x in n.inputs if x not in inside}
        for x in outside[root]:
            readers.setdefault(x, []).append(root)
        upstream.pop(a), upstream.pop(b)
        upstream[root] = {sets.find(i) for x in outside[root] for i in ancestors.get(x, ())}
        merged_ids[root] = merged_ids.pop(a) | merged_ids.pop(b)
        reduced.pop(a, None)
        reduced.pop(b, None)
        if red is not None:
            reduced[root] = red
        return root

    for a in sorted(order, key=order.__getitem__):
        if sets.find(a) != a or a not in order:
            continue  # absorbed by an earlier segment
        refused: set[int] = set()
        while True:  # passes over the later segments, until one merges none
            here = order[a]
            queue = sorted(sharing(a, here) - refused, key=order.__getitem__)
            merged_any = False
            seen = set(queue)
            k = 0
            while k < len(queue):
                b = sets.find(queue[k])
                k += 1
                if b == a or b not in order or b in refused:
                    continue
                verdict = joinable(a, b)
                if verdict is False:
                    refused.add(b)
                    continue
                if verdict is None:
                    continue
                cursor = order[b]
                a = merge(a, b)
                merged_any = True
                # later segments that share an input only with the absorbed one join this pass
                fresh = sorted(
                    (c for c in sharing(a, cursor) if c not in seen and c not in refused),
                    key=order.__getitem__,
                )
                seen.update(fresh)
                queue = queue[k:] + fresh
                queue.sort(key=lambda c: order.get(sets.find(c), -1))
                k = 0
            if not merged_any:
                break


def _known_shape(node: Node) -> tuple[Any, ...]:
    """The shape of a node :func:`can_fuse` accepted (or of its reduction's input): known."""
    shape = node.shape
    assert shape is not None
    return shape


def _try_join(
    node: Node,
    producers: Sequence[Node],
    dom: tuple[Any, ...],
    sets: _Sets,
    seg_of: dict[Node, int],
    domain: dict[int, tuple[Any, ...]],
    reduced: dict[int, Node],
    size: dict[int, int],
    anc: Callable[[Node], set[int]],
    max_nodes: int,
    terminal: bool,
    members: dict[int, list[Node]],
) -> int:
    """Put ``node`` in a segment (merging its producers' segments where allowed); its id."""
    candidates: list[int] = []
    for p in producers:
        sid = seg_of.get(p)
        if sid is None:
            continue
        sid = sets.find(sid)
        if sid in candidates or sid in reduced or domain[sid] != dom:
            continue
        if p.shape != dom:
            continue
        candidates.append(sid)
    # Greedily keep the candidates whose merge stays convex and small enough.
    chosen: list[int] = []
    total = 1
    for sid in candidates:
        trial = chosen + [sid]
        if total + size[sid] <= max_nodes and _convex(node, trial, members, anc):
            chosen = trial
            total += size[sid]
    if chosen:
        root = sets.union(chosen)
        merged_members = [m for sid in chosen for m in members.pop(sid)]
    else:
        root = sets.new()
        merged_members = []
    members[root] = merged_members + [node]
    seg_of[node] = root
    domain[root] = dom
    size[root] = total
    if terminal:
        reduced[root] = node
    return root


def _convex(
    node: Node,
    merging: list[int],
    members_of: dict[int, list[Node]],
    anc: Callable[[Node], set[int]],
) -> bool:
    """Would ``node`` plus the segments ``merging`` form a convex set?

    It would not if an outside node the merged set reads depends on one of the merged
    segments (a path out and back in). The merged set's outside inputs are ``node``'s own
    non-member args and the inputs of the merged segments' members.
    """
    ids = set(merging)
    members = [n for sid in merging for n in members_of[sid]]
    member_set = set(members) | {node}
    for m in members + [node]:
        for a in m.inputs:
            if a in member_set:
                continue
            if anc(a) & ids:
                return False
    return True


def _collect(
    graph: Graph,
    sets: _Sets,
    seg_of: dict[Node, int],
    domain: dict[int, tuple[Any, ...]],
    reduced: dict[int, Node],
) -> list[Segment]:
    groups: dict[int, list[Node]] = {}
    for node in graph.nodes:
        sid = seg_of.get(node)
        if sid is not None:
            groups.setdefault(sets.find(sid), []).append(node)
    users = graph.users()
    graph_outputs = set(graph.outputs)
    segments: list[Segment] = []
    for sid, nodes in groups.items():
        member = set(nodes)
        inputs: list[Node] = []
        for n in nodes:
            for a in n.inputs:
                if a not in member and a not in inputs:
                    inputs.append(a)
        outputs = [n for n in nodes if n in graph_outputs or any(u not in member for u in users[n])]
        red = reduced.get(sid)
        if red is not None and red not in outputs:
            outputs.append(red)
        segments.append(Segment(nodes, inputs, outputs, domain[sid], red))
    segments.sort(key=lambda s: graph.nodes.index(s.nodes[-1]))
    for i, s in enumerate(segments):
        s.index = i
    return segments


@dataclass
class Unit:
    """One step of a schedule: a single node, or a whole segment."""

    node: Node | None = None
    segment: Segment | None = None
    deps: set[int] = field(default_factory=set)


def schedule(graph: Graph, segments: Sequence[Segment]) -> list[Node | Segment]:
    """Program order with each segment collapsed into one step.

    A topological order of the collapsed graph that stays as close to program order as
    possible (ready steps are taken by position); effectful nodes keep their relative order
    (each depends on the previous one), so variable reads and writes, prints and control flow
    with effects run exactly as traced.
    """
    owner: dict[Node, int] = {}
    units: list[Unit] = []
    position: list[int] = []
    index_of = {n: i for i, n in enumerate(graph.nodes)}
    for s in segments:
        for n in s.nodes:
            owner[n] = len(units)
        units.append(Unit(segment=s))
        position.append(index_of[s.nodes[-1]])
    last_effect: int | None = None
    for n in graph.nodes:
        if n in owner:
            continue
        owner[n] = len(units)
        unit = Unit(node=n)
        if has_effects(n):
            if last_effect is not None:
                unit.deps.add(last_effect)
            last_effect = len(units)
        units.append(unit)
        position.append(index_of[n])
    for n in graph.nodes:
        n_unit = owner[n]
        for a in n.inputs:
            d = owner[a]
            if d != n_unit:
                units[n_unit].deps.add(d)
    users: list[list[int]] = [[] for _ in units]
    missing = [len(u.deps) for u in units]
    for i, u in enumerate(units):
        for d in u.deps:
            users[d].append(i)
    ready = [(position[i], i) for i, m in enumerate(missing) if m == 0]
    heapq.heapify(ready)
    order: list[Node | Segment] = []
    while ready:
        _, i = heapq.heappop(ready)
        u = units[i]
        order.append(u.segment if u.segment is not None else u.node)  # type: ignore[arg-type]
        for j in users[i]:
            missing[j] -= 1
            if missing[j] == 0:
                heapq.heappush(ready, (position[j], j))
    if len(order) != len(units):
        raise AssertionError("fusion produced a cyclic schedule (a non-convex segment)")
    return order


__all__ = ["Segment", "default_can_fuse", "partition", "schedule"]
