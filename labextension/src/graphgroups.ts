/**
 * Groups of a graph's nodes that mean something to a NumPy user, so that a
 * graph of hundreds of nodes reads at a real size (as TensorBoard's graph
 * view groups by name scope).  Two groupings, chosen in the view:
 *
 * - by **source line** (`line 7: h = np.maximum(x @ w1 + b1, 0)` is one box
 *   holding the ops that line made; a gradient's ops sit under the line of
 *   the forward op they differentiate);
 * - by **compiled kernel**: a fused segment (what runs as one kernel) is one
 *   box holding its ops.
 *
 * In both, a **graph loop or branch** is one box holding its body (the nodes
 * the kernel sends `inside` it), and for a gradient the **forward** and
 * **backward** passes are two boxes around the rest.  Groups start collapsed
 * above {@link COLLAPSE_ABOVE} nodes; expanding one is a click (or a search
 * that finds a node inside it).  Everything here is pure: the view
 * (graphview.ts) lays out what {@link visibleItems} says is visible.
 */

import { IGraphNode, IGraphSegment } from './protocol';

/** Graphs with more nodes than this start with their groups collapsed. */
export const COLLAPSE_ABOVE = 40;

/** How the view groups nodes (besides loops, branches and passes). */
export type GroupingMode = 'line' | 'kernel';

export interface IGroup {
  /**
   * `g:seg:<segment id>`, `g:line:<n>`, `g:cf:<node id>`, `g:forward`,
   * `g:backward` (ours, never kernel text).
   */
  id: string;
  kind: 'segment' | 'forward' | 'backward' | 'line' | 'loop' | 'branch';
  /** The segment's id for a segment group (its colour comes from its index). */
  segment?: string;
  /** First line of its collapsed box: `kernel s3 · 8 ops`, `line 7: h = …`. */
  title: string;
  /** Second line: what it does (`multiply → tanh → sum`, `5 ops · cell [3]`). */
  detail: string;
  /** The enclosing group (a segment inside a pass), or null. */
  parent: string | null;
  /** Every node inside it, nested groups' included. */
  size: number;
  /** True for a group of a gradient's backward pass (coloured as such). */
  backward?: boolean;
}

export interface IGrouping {
  groups: Map<string, IGroup>;
  /** The innermost group of each grouped node. */
  groupOf: Map<string, string>;
}

const ops = (count: number): string => `${count} ${count === 1 ? 'op' : 'ops'}`;

/** `line 7` of `cell [5], line 7` (the cell or file said elsewhere). */
export function shortLine(line: string): string {
  const match = /(line \d+)$/.exec(line);
  return match ? match[1] : line;
}

/**
 * The groups of *nodes*: loops and branches, passes for a gradient, and
 * source lines (*mode* `line`) or fused segments (*mode* `kernel`).
 */
export function buildGroups(
  nodes: IGraphNode[],
  segments: IGraphSegment[] = [],
  mode: GroupingMode = 'kernel'
): IGrouping {
  const groups = new Map<string, IGroup>();
  const groupOf = new Map<string, string>();
  const byId = new Map(nodes.map(n => [n.id, n]));
  const top = nodes.filter(n => !n.inside);
  const gradient = top.some(n => n.backward) && top.some(n => !n.backward);
  const passOf = (n: IGraphNode): string | null =>
    gradient && !n.inside ? (n.backward ? 'g:backward' : 'g:forward') : null;
  // The group a node sits in before lines or kernels: its loop/branch, or
  // its pass.
  const scopeOf = (n: IGraphNode): string | null =>
    n.inside && byId.has(n.inside) ? `g:cf:${n.inside}` : passOf(n);
  if (gradient) {
    for (const kind of ['forward', 'backward'] as const) {
      groups.set(`g:${kind}`, {
        id: `g:${kind}`,
        kind,
        title: '',
        detail:
          kind === 'forward' ? 'what the function computes' : 'the gradient',
        parent: null,
        size: 0,
        backward: kind === 'backward'
      });
    }
  }
  // Loops and branches holding nodes: one group each, around the
  // control-flow node itself and its bodies.
  for (const node of nodes) {
    const holder = node.inside ? byId.get(node.inside) : undefined;
    if (holder && !groups.has(`g:cf:${holder.id}`)) {
      groups.set(`g:cf:${holder.id}`, {
        id: `g:cf:${holder.id}`,
        kind: holder.op === 'while' ? 'loop' : 'branch',
        title: '',
        detail: '',
        parent: null,
        size: 0
      });
    }
  }
  const inPass = (n: IGraphNode): boolean => {
    let current: IGraphNode | undefined = n;
    while (current?.inside) {
      current = byId.get(current.inside);
    }
    return !!current?.backward;
  };
  const natural = new Map<string, string | null>();
  if (mode === 'line') {
    const keyOf = (n: IGraphNode): string | null =>
      n.line ? `${scopeOf(n) ?? ''}\u0000${n.line}` : null;
    const members = new Map<string, IGraphNode[]>();
    for (const node of nodes) {
      const key = keyOf(node);
      if (key !== null) {
        members.set(key, [...(members.get(key) ?? []), node]);
      }
    }
    const files = new Set(
      nodes.filter(n => n.line).map(n => n.line!.replace(/line \d+$/, ''))
    );
    const lineGroup = new Map<string, string>();
    for (const [key, inside] of members) {
      if (inside.length < 2) {
        continue; // one op: the node itself says its line
      }
      const first = inside[0];
      const id = `g:line:${lineGroup.size}`;
      const where = files.size > 1 ? first.line! : shortLine(first.line!);
      groups.set(id, {
        id,
        kind: 'line',
        title: first.source ? `${where}: ${first.source}` : where,
        detail: first.line!,
        parent: scopeOf(first),
        size: 0,
        backward: inPass(first)
      });
      lineGroup.set(key, id);
    }
    for (const node of nodes) {
      const key = keyOf(node);
      natural.set(
        node.id,
        (key !== null ? lineGroup.get(key) : undefined) ?? scopeOf(node)
      );
    }
  } else {
    const described = new Map(segments.map(seg => [seg.id, seg]));
    const members = new Map<string, IGraphNode[]>();
    for (const node of nodes) {
      if (node.segment && !node.inside) {
        members.set(node.segment, [...(members.get(node.segment) ?? []), node]);
      }
    }
    for (const [segment, inside] of members) {
      const passes = new Set(inside.map(passOf));
      const id = `g:seg:${segment}`;
      groups.set(id, {
        id,
        kind: 'segment',
        segment,
        title: `kernel ${segment}`,
        detail:
          described.get(segment)?.label ?? inside.map(n => n.op).join(' → '),
        parent: passes.size === 1 ? [...passes][0] : null,
        size: 0
      });
    }
    for (const node of nodes) {
      natural.set(
        node.id,
        node.segment && !node.inside ? `g:seg:${node.segment}` : scopeOf(node)
      );
    }
  }
  for (const node of nodes) {
    const own = groups.get(`g:cf:${node.id}`);
    const group = natural.get(node.id) ?? null;
    if (own) {
      // The control-flow node stands in its group; the group where it is.
      groupOf.set(node.id, own.id);
      own.parent = group;
      own.backward = inPass(node);
      const word = own.kind === 'loop' ? 'loop' : 'branch';
      const at = node.line ? ` at ${shortLine(node.line)}` : '';
      own.title = node.source ? `${word}${at}: ${node.source}` : `${word}${at}`;
    } else if (group) {
      groupOf.set(node.id, group);
    }
  }
  const grouping = { groups, groupOf };
  for (const node of nodes) {
    for (const id of ancestors(node.id, grouping)) {
      groups.get(id)!.size += 1;
    }
  }
  for (const kind of gradient ? (['forward', 'backward'] as const) : []) {
    // (a kernel holding ops of both passes is in neither box: count by pass)
    groups.get(`g:${kind}`)!.size = nodes.filter(
      n => inPass(n) === (kind === 'backward')
    ).length;
  }
  for (const group of groups.values()) {
    const count = ops(group.size);
    if (group.kind === 'forward' || group.kind === 'backward') {
      group.title = `${group.kind} pass · ${count}`;
    } else if (group.kind === 'segment') {
      group.title = `kernel ${group.segment} · ${count}`;
    } else if (group.kind === 'line') {
      group.detail = `${count} · ${group.detail}${group.backward ? ' · gradient' : ''}`;
    } else {
      group.detail = `${group.kind === 'loop' ? 'graph loop' : 'graph branch'} · ${count} inside`;
    }
  }
  return grouping;
}

/** The groups collapsed by default: none for a small graph; else the lines
 *  or kernels, loops and branches, and the passes too when that still leaves
 *  more than twice the limit. */
export function defaultCollapsed(
  nodes: IGraphNode[],
  grouping: IGrouping
): Set<string> {
  const collapsed = new Set<string>();
  if (nodes.length <= COLLAPSE_ABOVE) {
    return collapsed;
  }
  const inner = new Set(['segment', 'line', 'loop', 'branch']);
  for (const group of grouping.groups.values()) {
    if (inner.has(group.kind) && group.size > 1) {
      collapsed.add(group.id);
    }
  }
  if (visibleItems(nodes, grouping, collapsed).length > 2 * COLLAPSE_ABOVE) {
    for (const group of grouping.groups.values()) {
      if (!inner.has(group.kind)) {
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

/** Nodes matching *query* (op, name, what it computes, its line or the
 *  line's text: `line 7`, `np.maximum`; case-insensitive). */
export function findNodes(nodes: IGraphNode[], query: string): IGraphNode[] {
  const q = query.trim().toLowerCase();
  if (!q) {
    return [];
  }
  return nodes.filter(n =>
    [n.op, n.label, n.text ?? '', n.line ?? '', n.source ?? ''].some(t =>
      t.toLowerCase().includes(q)
    )
  );
}
