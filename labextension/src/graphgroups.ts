/**
 * Groups of a graph's nodes that mean something to a NumPy user, so that a
 * graph of hundreds of nodes reads at a real size (as TensorBoard's graph
 * view groups by name scope):
 *
 * - a **fused segment** (what runs as one compiled kernel) is one box holding
 *   its ops;
 * - for a gradient, the **forward** and **backward** passes are two boxes
 *   (the segments of each inside).
 *
 * A graph loop is already one node holding its body.  Groups above
 * {@link COLLAPSE_ABOVE} nodes start collapsed; expanding one is a click (or
 * a search that finds a node inside it).  Everything here is pure: the view
 * (graphview.ts) lays out what {@link visibleItems} says is visible.
 */

import { IGraphNode, IGraphSegment } from './protocol';

/** Graphs with more nodes than this start with their groups collapsed. */
export const COLLAPSE_ABOVE = 40;

export interface IGroup {
  /** `g:seg:<segment id>`, `g:forward`, `g:backward` (ours, never kernel text). */
  id: string;
  kind: 'segment' | 'forward' | 'backward';
  /** The segment's id for a segment group (its colour comes from its index). */
  segment?: string;
  /** First line of its collapsed box: `kernel s3 · 8 ops`, `backward pass · 63 ops`. */
  title: string;
  /** Second line: what it does (`multiply → tanh → sum`). */
  detail: string;
  /** The enclosing group (a segment inside a pass), or null. */
  parent: string | null;
  /** Every node inside it, nested groups' included. */
  size: number;
}

export interface IGrouping {
  groups: Map<string, IGroup>;
  /** The innermost group of each grouped node. */
  groupOf: Map<string, string>;
}

/** The groups of *nodes*: fused segments, and forward/backward for a gradient. */
export function buildGroups(
  nodes: IGraphNode[],
  segments: IGraphSegment[] = []
): IGrouping {
  const groups = new Map<string, IGroup>();
  const groupOf = new Map<string, string>();
  const gradient = nodes.some(n => n.backward) && nodes.some(n => !n.backward);
  const passOf = (n: IGraphNode): string | null =>
    gradient ? (n.backward ? 'g:backward' : 'g:forward') : null;
  if (gradient) {
    for (const kind of ['forward', 'backward'] as const) {
      const size = nodes.filter(
        n => !!n.backward === (kind === 'backward')
      ).length;
      groups.set(`g:${kind}`, {
        id: `g:${kind}`,
        kind,
        title: `${kind} pass · ${size} ${size === 1 ? 'op' : 'ops'}`,
        detail:
          kind === 'forward' ? 'what the function computes' : 'the gradient',
        parent: null,
        size
      });
    }
  }
  const described = new Map(segments.map(seg => [seg.id, seg]));
  const members = new Map<string, IGraphNode[]>();
  for (const node of nodes) {
    if (node.segment) {
      const list = members.get(node.segment) ?? [];
      list.push(node);
      members.set(node.segment, list);
    }
  }
  for (const [segment, inside] of members) {
    const passes = new Set(inside.map(passOf));
    const ops = inside.map(n => n.op);
    const label = described.get(segment)?.label;
    const id = `g:seg:${segment}`;
    groups.set(id, {
      id,
      kind: 'segment',
      segment,
      title: `kernel ${segment} · ${inside.length} ${inside.length === 1 ? 'op' : 'ops'}`,
      detail: label ?? ops.join(' → '),
      parent: passes.size === 1 ? [...passes][0] : null,
      size: inside.length
    });
  }
  for (const node of nodes) {
    const group = node.segment ? `g:seg:${node.segment}` : passOf(node);
    if (group) {
      groupOf.set(node.id, group);
    }
  }
  return { groups, groupOf };
}

/** The groups collapsed by default: none for a small graph; else the segments,
 *  and the passes too when that still leaves more than twice the limit. */
export function defaultCollapsed(
  nodes: IGraphNode[],
  grouping: IGrouping
): Set<string> {
  const collapsed = new Set<string>();
  if (nodes.length <= COLLAPSE_ABOVE) {
    return collapsed;
  }
  for (const group of grouping.groups.values()) {
    if (group.kind === 'segment' && group.size > 1) {
      collapsed.add(group.id);
    }
  }
  if (visibleItems(nodes, grouping, collapsed).length > 2 * COLLAPSE_ABOVE) {
    for (const group of grouping.groups.values()) {
      if (group.kind !== 'segment') {
        collapsed.add(group.id);
      }
    }
  }
  return collapsed;
}

/** The groups enclosing *id* (a node's or a group's), innermost first. */
export function ancestors(id: string, grouping: IGrouping): string[] {
  const out: string[] = [];
  let current: string | null =
    grouping.groupOf.get(id) ?? grouping.groups.get(id)?.parent ?? null;
  while (current) {
    out.push(current);
    current = grouping.groups.get(current)?.parent ?? null;
  }
  return out;
}

/** What stands for node *id* on screen: its outermost collapsed group, else itself. */
export function representative(
  id: string,
  grouping: IGrouping,
  collapsed: Set<string>
): string {
  let shown = id;
  for (const group of ancestors(id, grouping)) {
    if (collapsed.has(group)) {
      shown = group;
    }
  }
  return shown;
}

/** The boxes drawn: nodes and collapsed groups, each once, in node order. */
export function visibleItems(
  nodes: IGraphNode[],
  grouping: IGrouping,
  collapsed: Set<string>
): string[] {
  const seen = new Set<string>();
  for (const node of nodes) {
    seen.add(representative(node.id, grouping, collapsed));
  }
  return [...seen];
}

/** Nodes matching *query* (op, name, what it computes; case-insensitive). */
export function findNodes(nodes: IGraphNode[], query: string): IGraphNode[] {
  const q = query.trim().toLowerCase();
  if (!q) {
    return [];
  }
  return nodes.filter(n =>
    [n.op, n.label, n.text ?? ''].some(t => t.toLowerCase().includes(q))
  );
}
