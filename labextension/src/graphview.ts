/**
 * Draws a concrete function's graph as SVG, fitted to the width it is given,
 * with zoom and pan.
 *
 * Layout is dagre's (a layered Sugiyama layout, the usual picture of a
 * dataflow graph); zoom and pan are d3-zoom's (a kept library: wheel, pinch,
 * drag and touch, with the browser quirks handled).  This module sizes the
 * boxes, turns dagre's coordinates into SVG elements and decides the fit.
 *
 * Each node reads as what it computes: the kernel's `text` (`multiply(·, 2)`:
 * the op with its literal operands, never an internal name like
 * `multiply_1`), then its dtype and shape, with a word for what a reader must
 * know (an input, an opaque NumPy call, a random draw, a graph loop).  Fused
 * segments get a coloured outline and a legend.
 *
 * Real size: nodes are grouped (graphgroups.ts: fused kernels, forward and
 * backward passes; dagre lays the groups out as compound nodes), and a big
 * graph starts with its groups collapsed.  The first view is the readable
 * one: labels are drawn at 11 px and never shown smaller than that until the
 * user asks ("Fit", zoom out); the rest is reached by panning.  Expanding or
 * collapsing a group lays out again without moving the group under the
 * user's eye.  Zoom follows the cursor (wheel: plain in the main area,
 * Ctrl/⌘ or a pinch in the scrolling sidebar), drag pans, the keyboard has
 * +, −, 0 (readable view), F (fit) and the arrows, and a search box finds a
 * node by op, name or text and centres it.
 */

import { graphlib, layout } from '@dagrejs/dagre';
import { select } from 'd3-selection';
import { zoom, zoomIdentity, ZoomBehavior, ZoomTransform } from 'd3-zoom';

import { h, s } from './dom';
import {
  ancestors,
  buildGroups,
  defaultCollapsed,
  findNodes,
  GroupingMode,
  IGroup,
  IGrouping,
  representative,
  visibleItems
} from './graphgroups';
import { IGraphNode, IGraphPayload, IGraphSegment } from './protocol';

/** The smallest a label may be drawn in the first view, in px (its font is 11 px at 1:1). */
export const MIN_LABEL_PX = 11;

/** The labels' font size at scale 1, in px (base.css: .jp-kx-node text). */
export const LABEL_FONT_PX = 11;

/** Pixels an arrow key pans by. */
const PAN_STEP = 40;

/** Beyond this many nodes the layout gets slow and the picture unreadable. */
export const MAX_DRAWN_NODES = 300;

/** Tallest sidebar viewport, in px (the rest of the picture is panned to). */
export const MAX_VIEWPORT_HEIGHT = 480;

/** Zoom limits: far enough out to see 300 nodes, in to read an 11px label. */
export const SCALE_EXTENT: [number, number] = [0.05, 4];

/** Graphs at least this wide or with this many nodes offer the main area. */
export const BIG_GRAPH_NODES = 12;

/** The segment legend starts open up to this many segments (folded above). */
const LEGEND_OPEN_UP_TO = 6;

/** Segment colours cycle through this many CSS classes (jp-kx-seg-N). */
const SEGMENT_COLOURS = 8;

// Box metrics for an 11px monospace font.  Text is not measured (no layout
// in a detached node, nor in jsdom); a fixed advance is close enough for
// monospace and keeps the rendering deterministic.
const CHAR_WIDTH = 6.8;
const LINE_HEIGHT = 14;
const PAD_X = 8;
const PAD_Y = 6;
const MAX_LABEL_CHARS = 40;

/** The word a node's second line starts with, by kind. */
const KIND_WORDS: Record<string, string> = {
  input: 'input',
  captured: 'captured',
  opaque: 'runs NumPy',
  random: 'random draw',
  loop: 'graph loop'
};

/** Kinds with a class of their own (others draw as plain ops). */
const KNOWN_KINDS = new Set([
  'input',
  'constant',
  'captured',
  'opaque',
  'random',
  'loop',
  'control_flow',
  'stateful'
]);

interface IBox {
  width: number;
  height: number;
  x?: number;
  y?: number;
}

interface IPoint {
  x: number;
  y: number;
}

/** Where an item (a node or a group) was drawn, in the content's coordinates. */
export interface IPlaced {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface IGraphViewOptions {
  /** Show the graph in the main area (a button appears when given). */
  onOpenInMain?: () => void;
  /**
   * Fill the parent both ways (the main area) instead of fitting the width
   * and growing to at most {@link MAX_VIEWPORT_HEIGHT}.
   */
  fill?: boolean;
}

/** Natural size of the drawing, and the viewport it is shown in. */
export interface ISize {
  width: number;
  height: number;
}

/**
 * The fitting scale: the whole width shows (and, with `fill`, the whole
 * height), never enlarged beyond 1:1, never below the zoom limit.
 */
export function fitScale(
  natural: ISize,
  viewport: ISize,
  fill = false
): number {
  if (natural.width <= 0 || natural.height <= 0 || viewport.width <= 0) {
    return 1;
  }
  let k = Math.min(1, viewport.width / natural.width);
  if (fill && viewport.height > 0) {
    k = Math.min(k, viewport.height / natural.height);
  }
  return Math.max(SCALE_EXTENT[0], k);
}

/** Height of the sidebar's viewport for a picture fitted at scale *k*. */
export function viewportHeight(natural: ISize, k: number): number {
  return Math.max(
    40,
    Math.min(MAX_VIEWPORT_HEIGHT, Math.ceil(natural.height * k))
  );
}

/**
 * One drawn graph with its zoom behaviour.  `node` is what goes into the
 * page; the view shows its readable first view when it first gets a width,
 * and on resizes until the user zooms or pans.
 */
export class GraphView {
  readonly node: HTMLElement;

  constructor(graph: IGraphPayload, options: IGraphViewOptions = {}) {
    this._fill = options.fill ?? false;
    this.node = h('div', {
      className: this._fill ? 'jp-kx-graph jp-mod-fill' : 'jp-kx-graph'
    });
    const nodes = uniqueNodes(graph.nodes).slice(0, MAX_DRAWN_NODES);
    this._nodes = nodes;
    this._graph = graph;
    if (nodes.length === 0) {
      this.node.appendChild(
        h('p', { className: 'jp-kx-muted' }, 'The graph has no nodes.')
      );
      this._svg = null;
      this._content = null;
      this._grouping = { groups: new Map(), groupOf: new Map() };
      this._segmentIndex = new Map();
      return;
    }
    // By source line when the kernel says which line made each node.
    this._mode = nodes.some(n => n.line) ? 'line' : 'kernel';
    this._grouping = buildGroups(nodes, graph.segments ?? [], this._mode);
    this._collapsed = defaultCollapsed(nodes, this._grouping);
    this._segmentIndex = indexSegments(nodes);
    this._svg = s('svg', {
      class: 'jp-kx-graph-svg',
      width: '100%',
      height: this._fill ? '100%' : viewportHeight(this.natural, 1),
      // A group, not an img: its collapsed groups are buttons inside it.
      role: 'group',
      'aria-roledescription': 'graph',
      tabindex: '0',
      'aria-label':
        `data-flow graph, ${nodes.length} nodes; ` +
        '+ and − zoom, 0 readable size, F fits, arrows pan'
    });
    this._content = s('g', { class: 'jp-kx-graph-content' });
    this._svg.append(arrowMarker(), this._content);
    this._layout();

    this.node.appendChild(
      this._toolbar(options, nodes.length, graph.nodes.length)
    );
    this.node.appendChild(
      h('div', { className: 'jp-kx-graph-viewport' }, this._svg)
    );
    const legend = renderLegend(this._segmentIndex, graph.segments ?? []);
    const kinds = renderKinds(nodes);
    this.node.appendChild(
      h(
        'div',
        { className: 'jp-kx-legend' },
        kinds,
        legend,
        renderFillKey(nodes)
      )
    );

    this._zoom = zoom<SVGSVGElement, unknown>()
      .scaleExtent(SCALE_EXTENT)
      // The extent is the viewport; given explicitly, d3 never reads the SVG's
      // viewBox (absent here, and unimplemented in jsdom).
      .extent(() => [
        [0, 0],
        [Math.max(1, this._viewport().width), this._viewport().height]
      ])
      // d3-zoom zooms about the pointer.  In the main area the plain wheel
      // zooms; in the scrolling sidebar a plain wheel scrolls the panel and
      // zooming takes Ctrl/⌘ (a trackpad pinch arrives as a wheel with ctrlKey).
      .filter((event: Event) =>
        event.type === 'wheel'
          ? this._fill ||
            (event as WheelEvent).ctrlKey ||
            (event as WheelEvent).metaKey
          : !(event as MouseEvent).button
      )
      .on('zoom', event => {
        this._apply(event.transform as ZoomTransform);
        if (event.sourceEvent) {
          this._userMoved = true;
        }
      });
    select(this._svg).call(this._zoom);
    this._svg.addEventListener('keydown', event => this._onKey(event));

    // The readable view once the page gives us a width, and again on resizes
    // until the user has zoomed or panned.  (No ResizeObserver in jsdom.)
    if (typeof ResizeObserver !== 'undefined') {
      this._observer = new ResizeObserver(() => {
        if (!this._userMoved && this._viewport().width > 0) {
          this.showReadable();
        }
      });
      this._observer.observe(this.node);
    }
    this._apply(zoomIdentity);
  }

  /** Natural size of the drawing (1:1), as laid out now. */
  natural: ISize = { width: 0, height: 0 };

  /** The scale shown now (1 = natural size). */
  get scale(): number {
    return this._transform.k;
  }

  /** The ids of the groups collapsed now. */
  get collapsed(): ReadonlySet<string> {
    return this._collapsed;
  }

  /** The groups of this graph. */
  get groups(): ReadonlyMap<string, IGroup> {
    return this._grouping.groups;
  }

  /** How nodes are grouped now: by source line or by compiled kernel. */
  get grouping(): GroupingMode {
    return this._mode;
  }

  /** Group by *mode* (groups collapsed as for a new view), readable view. */
  setGrouping(mode: GroupingMode): void {
    if (mode === this._mode || !this._svg) {
      return;
    }
    this._mode = mode;
    this._grouping = buildGroups(this._nodes, this._graph.segments ?? [], mode);
    this._collapsed = defaultCollapsed(this._nodes, this._grouping);
    this._layout();
    this.showReadable();
  }

  /** Where item *id* (a node or a collapsed group) is drawn, or undefined. */
  placed(id: string): IPlaced | undefined {
    return this._placed.get(id);
  }

  /** Fit to the width (and height when filling); forgets the user's zoom. */
  fit(viewportWidth?: number): void {
    if (!this._svg || !this._zoom) {
      return;
    }
    const viewport = this._viewport();
    const width = viewportWidth ?? viewport.width;
    const k = fitScale(
      this.natural,
      { width, height: viewport.height },
      this._fill
    );
    this._show(k, width);
  }

  /**
   * The first view: fitted as {@link fit} does when that keeps labels at
   * {@link MIN_LABEL_PX} or more, else at 1:1 from the top, centred (the
   * rest is panned to, or shown with "Fit").
   */
  showReadable(viewportWidth?: number): void {
    if (!this._svg || !this._zoom) {
      return;
    }
    const viewport = this._viewport();
    const width = viewportWidth ?? viewport.width;
    const fitted = fitScale(
      this.natural,
      { width, height: viewport.height },
      this._fill
    );
    this._show(Math.max(fitted, MIN_LABEL_PX / LABEL_FONT_PX), width);
  }

  /** Zoom by *factor* about the viewport's centre. */
  zoomBy(factor: number): void {
    if (this._svg && this._zoom) {
      this._userMoved = true;
      select(this._svg).call(this._zoom.scaleBy, factor);
    }
  }

  /** Expand or collapse group *id*, keeping it where it is on screen. */
  toggleGroup(id: string): void {
    if (!this._grouping.groups.has(id)) {
      return;
    }
    const anchor = this._screenCentre(id);
    if (this._collapsed.has(id)) {
      this._collapsed.delete(id);
    } else {
      this._collapsed.add(id);
    }
    this._layout();
    this._keepAt(id, anchor);
  }

  /**
   * Find the nodes matching *query*, expand the groups around the *index*-th
   * and centre it (at a readable scale at least).  Returns the matches.
   */
  find(query: string, index = 0): IGraphNode[] {
    const found = findNodes(this._nodes, query);
    this._svg
      ?.querySelectorAll('.jp-mod-found')
      .forEach(el => el.classList.remove('jp-mod-found'));
    if (found.length === 0 || !this._svg || !this._zoom) {
      return found;
    }
    const target = found[index % found.length];
    const closed = ancestors(target.id, this._grouping).filter(g =>
      this._collapsed.has(g)
    );
    if (closed.length > 0) {
      closed.forEach(g => this._collapsed.delete(g));
      this._layout();
    }
    this.centreOn(target.id);
    this._itemElements.get(target.id)?.classList.add('jp-mod-found');
    return found;
  }

  /** Centre item *id* in the viewport, at a readable scale at least. */
  centreOn(id: string): void {
    const box = this._placed.get(id);
    if (!box || !this._svg || !this._zoom) {
      return;
    }
    const viewport = this._viewport();
    const k = Math.max(this._transform.k, MIN_LABEL_PX / LABEL_FONT_PX);
    const cx = box.x + box.width / 2;
    const cy = box.y + box.height / 2;
    this._userMoved = true;
    select(this._svg).call(
      this._zoom.transform,
      zoomIdentity
        .translate(viewport.width / 2 - cx * k, viewport.height / 2 - cy * k)
        .scale(k)
    );
  }

  dispose(): void {
    this._observer?.disconnect();
    if (this._svg) {
      select(this._svg).on('.zoom', null);
    }
  }

  private _show(k: number, width: number): void {
    if (!this._svg || !this._zoom) {
      return;
    }
    if (!this._fill) {
      this._svg.setAttribute('height', String(viewportHeight(this.natural, k)));
    }
    // The whole width centred when it fits; else the top row centred (where
    // the inputs are), the rest panned to.
    let x = (width - this.natural.width * k) / 2;
    if (x < 0) {
      // (boxes only: a group's frame spans all its members)
      const boxes = new Map(
        [...this._itemElements.keys()].map(id => [id, this._placed.get(id)!])
      );
      const top = topRowCentre(boxes);
      if (top !== null) {
        x = Math.min(
          0,
          Math.max(width - this.natural.width * k, width / 2 - top * k)
        );
      }
    }
    this._userMoved = false;
    select(this._svg).call(
      this._zoom.transform,
      zoomIdentity.translate(x, 0).scale(k)
    );
  }

  private _layout(): void {
    if (!this._content) {
      return;
    }
    const drawing = draw(
      this._graph,
      this._nodes,
      this._grouping,
      this._collapsed,
      this._segmentIndex,
      id => this.toggleGroup(id)
    );
    this.natural = drawing.size;
    this._placed = drawing.placed;
    this._itemElements = drawing.elements;
    this._content.replaceChildren(...drawing.content.childNodes);
  }

  /** Where group *id* (its box, or its cluster) is on screen now. */
  private _screenCentre(id: string): IPoint | null {
    const box = this._placed.get(id);
    if (!box) {
      return null;
    }
    const t = this._transform;
    return {
      x: t.applyX(box.x + box.width / 2),
      y: t.applyY(box.y + box.height / 2)
    };
  }

  /** Pan so that group *id*'s top-centre... its centre returns to *anchor*. */
  private _keepAt(id: string, anchor: IPoint | null): void {
    if (!anchor || !this._svg || !this._zoom) {
      return;
    }
    const box = this._placed.get(id);
    if (!box) {
      return;
    }
    const k = this._transform.k;
    const cx = box.x + box.width / 2;
    const cy = box.y + box.height / 2;
    this._userMoved = true;
    select(this._svg).call(
      this._zoom.transform,
      zoomIdentity.translate(anchor.x - cx * k, anchor.y - cy * k).scale(k)
    );
  }

  private _onKey(event: KeyboardEvent): void {
    if (!this._svg || !this._zoom) {
      return;
    }
    const pan = (dx: number, dy: number): void => {
      this._userMoved = true;
      select(this._svg!).call(
        this._zoom!.translateBy,
        dx / this.scale,
        dy / this.scale
      );
    };
    const actions: Record<string, () => void> = {
      '+': () => this.zoomBy(1.25),
      '=': () => this.zoomBy(1.25),
      '-': () => this.zoomBy(1 / 1.25),
      '−': () => this.zoomBy(1 / 1.25),
      '0': () => this.showReadable(),
      f: () => this.fit(),
      F: () => this.fit(),
      ArrowLeft: () => pan(PAN_STEP, 0),
      ArrowRight: () => pan(-PAN_STEP, 0),
      ArrowUp: () => pan(0, PAN_STEP),
      ArrowDown: () => pan(0, -PAN_STEP)
    };
    const action = actions[event.key];
    if (action && !event.ctrlKey && !event.metaKey && !event.altKey) {
      event.preventDefault();
      action();
    }
  }

  private _apply(transform: ZoomTransform): void {
    this._transform = transform;
    this._content?.setAttribute('transform', transform.toString());
    // For tests and people: the scale shown, as a number.
    this._svg?.setAttribute('data-scale', transform.k.toFixed(3));
  }

  private _viewport(): ISize {
    const svg = this._svg;
    if (!svg) {
      return { width: 0, height: 0 };
    }
    return { width: svg.clientWidth, height: svg.clientHeight };
  }

  private _toolbar(
    options: IGraphViewOptions,
    drawn: number,
    total: number
  ): HTMLElement {
    const button = (
      label: string,
      title: string,
      action: () => void,
      className = ''
    ): HTMLButtonElement => {
      const b = h(
        'button',
        {
          className: `jp-kx-graph-button jp-mod-styled ${className}`.trim(),
          attrs: { type: 'button', 'aria-label': title },
          title
        },
        label
      );
      b.addEventListener('click', action);
      return b;
    };
    const search = h('input', {
      className: 'jp-kx-graph-search',
      attrs: {
        type: 'search',
        placeholder: 'Find a node',
        'aria-label': 'Find a node by op, name or what it computes'
      },
      title: 'Find a node by op, name or what it computes (Enter: next)'
    });
    const status = h('span', {
      className: 'jp-kx-graph-found jp-kx-muted',
      attrs: { 'aria-live': 'polite' }
    });
    let next = 0;
    const run = (advance: boolean): void => {
      next = advance ? next + 1 : 0;
      const found = this.find(search.value, next);
      status.textContent = search.value.trim()
        ? found.length
          ? `${(next % found.length) + 1} of ${found.length}`
          : 'no match'
        : '';
    };
    search.addEventListener('input', () => run(false));
    search.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        event.preventDefault();
        run(true);
      }
    });
    const grouping = h(
      'select',
      {
        className: 'jp-kx-graph-grouping',
        attrs: { 'aria-label': 'Group nodes by' },
        title:
          'Group nodes by the source line that made them, or by the compiled ' +
          'kernel they run in (loops, branches and gradient passes are boxes ' +
          'in both)'
      },
      h('option', { attrs: { value: 'line' } }, 'by line'),
      h('option', { attrs: { value: 'kernel' } }, 'by kernel')
    ) as HTMLSelectElement;
    grouping.value = this._mode;
    grouping.addEventListener('change', () =>
      this.setGrouping(grouping.value as GroupingMode)
    );
    const bar = h(
      'div',
      { className: 'jp-kx-graph-toolbar', attrs: { role: 'toolbar' } },
      button('Fit', 'Fit the whole graph (F)', () => this.fit()),
      button('1:1', 'Readable size (0)', () => this.showReadable()),
      button('−', 'Zoom out (−)', () => this.zoomBy(1 / 1.5)),
      button(
        '+',
        this._fill
          ? 'Zoom in (+; the wheel zooms about the cursor, drag pans)'
          : 'Zoom in (+; Ctrl + wheel zooms about the cursor, drag pans)',
        () => this.zoomBy(1.5)
      ),
      this._nodes.some(n => n.line) ? grouping : null,
      search,
      status
    );
    if (options.onOpenInMain) {
      const open = options.onOpenInMain;
      bar.appendChild(
        button(
          'Open in main area',
          'Show this graph in a main-area tab',
          () => open(),
          drawn >= BIG_GRAPH_NODES
            ? 'jp-kx-open-main jp-mod-big'
            : 'jp-kx-open-main'
        )
      );
    }
    if (total > drawn) {
      bar.appendChild(
        h(
          'span',
          { className: 'jp-kx-muted' },
          `Showing the first ${drawn} of ${total} nodes.`
        )
      );
    }
    return bar;
  }

  private _collapsed = new Set<string>();
  private _content: SVGGElement | null;
  private _fill: boolean;
  private _graph: IGraphPayload;
  private _grouping: IGrouping;
  private _itemElements = new Map<string, SVGGElement>();
  private _mode: GroupingMode = 'kernel';
  private _nodes: IGraphNode[];
  private _observer: ResizeObserver | null = null;
  private _placed = new Map<string, IPlaced>();
  private _segmentIndex: Map<string, number>;
  private _svg: SVGSVGElement | null;
  private _transform: ZoomTransform = zoomIdentity;
  private _userMoved = false;
  private _zoom: ZoomBehavior<SVGSVGElement, unknown> | null = null;
}

/** The horizontal centre of the items in the drawing's top row, or null. */
function topRowCentre(placed: Map<string, IPlaced>): number | null {
  let top = Infinity;
  for (const box of placed.values()) {
    top = Math.min(top, box.y);
  }
  const row = [...placed.values()].filter(box => box.y <= top + 4);
  if (row.length === 0) {
    return null;
  }
  const left = Math.min(...row.map(box => box.x));
  const right = Math.max(...row.map(box => box.x + box.width));
  return (left + right) / 2;
}

/** Render *graph*: the container of a new {@link GraphView}. */
export function renderGraph(
  graph: IGraphPayload,
  options: IGraphViewOptions = {}
): HTMLElement {
  return new GraphView(graph, options).node;
}

/** The text lines of a node's box: what it computes, then its value. */
export function nodeLines(node: IGraphNode): [string, string] {
  const title = node.text ?? node.op;
  const value = `${node.dtype}${node.shape}`;
  const word = node.kind ? KIND_WORDS[node.kind] : undefined;
  return [clip(title), clip(word ? `${word} · ${value}` : value)];
}

/** The text lines of a collapsed group's box. */
export function groupLines(group: IGroup): [string, string] {
  return [clip(`▸ ${group.title}`), clip(group.detail)];
}

/** Room above a cluster's first row for its label. */
const CLUSTER_LABEL = 16;

function draw(
  graph: IGraphPayload,
  nodes: IGraphNode[],
  grouping: IGrouping,
  collapsed: Set<string>,
  segmentIndex: Map<string, number>,
  onToggle: (group: string) => void
): {
  content: SVGGElement;
  size: ISize;
  placed: Map<string, IPlaced>;
  elements: Map<string, SVGGElement>;
} {
  const g = new graphlib.Graph<object, IBox, { points?: IPoint[] }>({
    compound: true
  });
  g.setGraph({
    rankdir: 'TB',
    nodesep: 14,
    ranksep: 26,
    marginx: 6,
    marginy: 6
  });
  g.setDefaultEdgeLabel(() => ({}));
  const byId = new Map(nodes.map(n => [n.id, n]));
  const items = visibleItems(nodes, grouping, collapsed);
  const clusters = new Set<string>();
  for (const id of items) {
    const node = byId.get(id);
    const group = grouping.groups.get(id);
    g.setNode(id, node ? boxFor(node) : boxForGroup(group!));
    // Expanded groups around it are clusters (compound nodes) holding it.
    let child = id;
    for (const outer of ancestors(id, grouping)) {
      if (collapsed.has(outer)) {
        break; // (only reached for a collapsed group's own ancestors)
      }
      if (!clusters.has(outer)) {
        clusters.add(outer);
        g.setNode(outer, {
          width: 0,
          height: 0,
          paddingTop: CLUSTER_LABEL
        } as IBox);
      }
      g.setParent(child, outer);
      child = outer;
    }
  }
  const seenEdges = new Set<string>();
  for (const edge of graph.edges) {
    // Edges to nodes we do not draw (unknown or beyond the cap) are skipped;
    // edges into a collapsed group go to its box, once.
    if (!byId.has(edge.source) || !byId.has(edge.target)) {
      continue;
    }
    const from = representative(edge.source, grouping, collapsed);
    const to = representative(edge.target, grouping, collapsed);
    const key = `${from}\u0000${to}`;
    if (from !== to && !seenEdges.has(key)) {
      seenEdges.add(key);
      g.setEdge(from, to);
    }
  }
  layout(g);
  // The drawing's bounds, measured: dagre's reported size leaves out long
  // edges routed around the nodes (they can reach negative x), and a fit to
  // a wrong size would cut them off.
  const bounds = { x0: Infinity, y0: Infinity, x1: -Infinity, y1: -Infinity };
  const grow = (x: number, y: number): void => {
    bounds.x0 = Math.min(bounds.x0, x);
    bounds.y0 = Math.min(bounds.y0, y);
    bounds.x1 = Math.max(bounds.x1, x);
    bounds.y1 = Math.max(bounds.y1, y);
  };
  const boxOf = (id: string): IPlaced => {
    const box = g.node(id);
    const top = clusters.has(id) ? CLUSTER_LABEL : 0;
    return {
      x: (box.x ?? 0) - box.width / 2,
      y: (box.y ?? 0) - box.height / 2 - top,
      width: box.width,
      height: box.height + top
    };
  };
  for (const id of [...items, ...clusters]) {
    const b = boxOf(id);
    grow(b.x, b.y);
    grow(b.x + b.width, b.y + b.height);
  }
  for (const e of g.edges()) {
    (g.edge(e)?.points ?? []).forEach(p => grow(p.x, p.y));
  }
  const margin = 6;
  const dx = margin - bounds.x0;
  const dy = margin - bounds.y0;
  const width = bounds.x1 - bounds.x0 + 2 * margin;
  const height = bounds.y1 - bounds.y0 + 2 * margin;
  const content = s('g', { class: 'jp-kx-graph-content' });
  const drawing = s('g', {
    transform: `translate(${round(dx)},${round(dy)})`
  });
  content.appendChild(drawing);
  const placed = new Map<string, IPlaced>();
  const elements = new Map<string, SVGGElement>();
  const place = (id: string): IPlaced => {
    const b = boxOf(id);
    const at = { ...b, x: b.x + dx, y: b.y + dy };
    placed.set(id, at);
    return b;
  };
  // Outer clusters first, so inner ones and the nodes draw on top.
  const depth = (id: string): number => ancestors(id, grouping).length;
  for (const id of [...clusters].sort((a, b) => depth(a) - depth(b))) {
    const group = grouping.groups.get(id)!;
    drawing.appendChild(
      drawCluster(group, place(id), segmentIndex, () => onToggle(id))
    );
  }
  for (const e of g.edges()) {
    const points = g.edge(e)?.points ?? [];
    if (points.length > 1) {
      drawing.appendChild(
        s('polyline', {
          class: 'jp-kx-edge',
          points: points.map(p => `${round(p.x)},${round(p.y)}`).join(' '),
          'marker-end': 'url(#jp-kx-arrow)'
        })
      );
    }
  }
  for (const id of items) {
    const node = byId.get(id);
    const box = g.node(id);
    place(id);
    const element = node
      ? drawNode(node, box, segmentIndex, graph.segments ?? [])
      : drawGroupNode(grouping.groups.get(id)!, box, segmentIndex, () =>
          onToggle(id)
        );
    elements.set(id, element);
    drawing.appendChild(element);
  }
  return {
    content,
    size: { width: Math.ceil(width), height: Math.ceil(height) },
    placed,
    elements
  };
}

function boxForGroup(group: IGroup): IBox {
  const [first, second] = groupLines(group);
  const chars = Math.max(first.length, second.length, 4);
  return {
    width: Math.ceil(chars * CHAR_WIDTH + 2 * PAD_X),
    height: 2 * LINE_HEIGHT + 2 * PAD_Y
  };
}

function groupClasses(
  group: IGroup,
  segmentIndex: Map<string, number>,
  base: string
): string {
  const classes = [base, `jp-kx-group-${group.kind}`];
  if (group.backward && group.kind !== 'backward') {
    classes.push('jp-kx-backward');
  }
  const segment = group.segment ? segmentIndex.get(group.segment) : undefined;
  if (segment !== undefined) {
    // (a cluster is no node: only a collapsed group's box is marked fused)
    if (base !== 'jp-kx-cluster') {
      classes.push('jp-kx-fused');
    }
    classes.push(`jp-kx-seg-${segment % SEGMENT_COLOURS}`);
  }
  return classes.join(' ');
}

/** A collapsed group: one box; a click (or Enter) expands it. */
function drawGroupNode(
  group: IGroup,
  box: IBox,
  segmentIndex: Map<string, number>,
  onToggle: () => void
): SVGGElement {
  const x = (box.x ?? 0) - box.width / 2;
  const y = (box.y ?? 0) - box.height / 2;
  const [first, second] = groupLines(group);
  const element = s(
    'g',
    {
      class: groupClasses(group, segmentIndex, 'jp-kx-node jp-kx-group-node'),
      transform: `translate(${round(x)},${round(y)})`,
      role: 'button',
      tabindex: '0',
      'aria-label': `${group.title}: ${group.detail}. Expand`,
      'data-group': group.id
    },
    s('title', {}, `${group.title}\n${group.detail}\nClick to expand`),
    s('rect', { width: box.width, height: box.height, rx: 4, ry: 4 }),
    s(
      'text',
      { x: PAD_X, y: PAD_Y + LINE_HEIGHT - 3, class: 'jp-kx-node-op' },
      first
    ),
    s(
      'text',
      { x: PAD_X, y: PAD_Y + 2 * LINE_HEIGHT - 3, class: 'jp-kx-node-type' },
      second
    )
  );
  listenToggle(element, onToggle);
  return element;
}

/** An expanded group: a frame behind its members, its label collapses it. */
function drawCluster(
  group: IGroup,
  box: IPlaced,
  segmentIndex: Map<string, number>,
  onToggle: () => void
): SVGGElement {
  const label = s(
    'text',
    {
      x: 6,
      y: CLUSTER_LABEL - 4,
      class: 'jp-kx-cluster-label',
      role: 'button',
      tabindex: '0',
      'aria-label': `${group.title}. Collapse`
    },
    `▾ ${group.title}`
  );
  listenToggle(label, onToggle);
  return s(
    'g',
    {
      class: groupClasses(group, segmentIndex, 'jp-kx-cluster'),
      transform: `translate(${round(box.x)},${round(box.y)})`,
      'data-group': group.id
    },
    s(
      'title',
      {},
      `${group.title}\n${group.detail}\nClick the label to collapse`
    ),
    s('rect', { width: box.width, height: box.height, rx: 6, ry: 6 }),
    label
  );
}

function listenToggle(element: SVGElement, onToggle: () => void): void {
  element.addEventListener('click', event => {
    event.stopPropagation();
    onToggle();
  });
  element.addEventListener('keydown', event => {
    const key = (event as KeyboardEvent).key;
    if (key === 'Enter' || key === ' ') {
      event.preventDefault();
      event.stopPropagation();
      onToggle();
    }
  });
}

function uniqueNodes(nodes: IGraphNode[]): IGraphNode[] {
  // A duplicate id would make dagre merge two nodes; keep the first.
  const byId = new Map<string, IGraphNode>();
  for (const node of nodes) {
    if (!byId.has(node.id)) {
      byId.set(node.id, node);
    }
  }
  return [...byId.values()];
}

/** Colour index of each segment, in order of first appearance. */
function indexSegments(nodes: IGraphNode[]): Map<string, number> {
  const index = new Map<string, number>();
  for (const node of nodes) {
    if (node.segment && !index.has(node.segment)) {
      index.set(node.segment, index.size);
    }
  }
  return index;
}

function boxFor(node: IGraphNode): IBox {
  const [first, second] = nodeLines(node);
  const chars = Math.max(first.length, second.length, 4);
  return {
    width: Math.ceil(chars * CHAR_WIDTH + 2 * PAD_X),
    height: 2 * LINE_HEIGHT + 2 * PAD_Y
  };
}

function drawNode(
  node: IGraphNode,
  box: IBox,
  segmentIndex: Map<string, number>,
  segments: IGraphSegment[] = []
): SVGGElement {
  const x = (box.x ?? 0) - box.width / 2;
  const y = (box.y ?? 0) - box.height / 2;
  const segment = node.segment ? segmentIndex.get(node.segment) : undefined;
  // Class names come from our own indices and a fixed list, never from
  // kernel text.
  const classes = ['jp-kx-node'];
  if (segment !== undefined) {
    classes.push('jp-kx-fused', `jp-kx-seg-${segment % SEGMENT_COLOURS}`);
  }
  if (node.kind && KNOWN_KINDS.has(node.kind)) {
    classes.push(`jp-kx-kind-${node.kind.replace('_', '-')}`);
  }
  if (node.output) {
    classes.push('jp-kx-output');
  }
  if (node.backward) {
    classes.push('jp-kx-backward');
  }
  const segmentLabel = segments.find(seg => seg.id === node.segment)?.label;
  const [first, second] = nodeLines(node);
  const tooltip = [
    node.text ? `${node.text}  (${node.op})` : `${node.label} (${node.op})`,
    node.dtype ? `${node.dtype}${node.shape}` : node.shape || null,
    // where its line is (the line's text titles its group: `line 7: h = …`)
    node.line ? `made at ${node.line}` : null,
    node.note ?? null,
    node.segment
      ? `kernel ${node.segment}${segmentLabel ? `: ${segmentLabel}` : ''}`
      : 'not fused',
    node.backward ? 'backward pass (the gradient)' : null,
    node.output ? 'returned by the function' : null,
    `node ${node.label}`
  ]
    .filter(line => line !== null)
    .join('\n');
  return s(
    'g',
    {
      class: classes.join(' '),
      transform: `translate(${round(x)},${round(y)})`,
      'data-node': node.id
    },
    s('title', {}, tooltip),
    s('rect', { width: box.width, height: box.height, rx: 4, ry: 4 }),
    s(
      'text',
      { x: PAD_X, y: PAD_Y + LINE_HEIGHT - 3, class: 'jp-kx-node-op' },
      first
    ),
    s(
      'text',
      { x: PAD_X, y: PAD_Y + 2 * LINE_HEIGHT - 3, class: 'jp-kx-node-type' },
      second
    )
  );
}

function arrowMarker(): SVGDefsElement {
  return s(
    'defs',
    {},
    s(
      'marker',
      {
        id: 'jp-kx-arrow',
        viewBox: '0 0 10 10',
        refX: 9,
        refY: 5,
        markerWidth: 7,
        markerHeight: 7,
        orient: 'auto-start-reverse'
      },
      s('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'jp-kx-arrowhead' })
    )
  );
}

/** What the boxes' colours mean, for those this graph uses: the cell
 *  picture's colour key (render.py), word for word. */
function renderFillKey(nodes: IGraphNode[]): HTMLElement {
  const present = new Set(
    nodes.map(n => n.kind).filter((k): k is string => !!k)
  );
  const fills: [string, string, boolean][] = [
    ['jp-kx-fill-input', 'input', present.has('input')],
    ['jp-kx-fill-captured', 'captured constant', present.has('captured')],
    ['jp-kx-fill-constant', 'constant', present.has('constant')],
    ['jp-kx-fill-stateful', 'variable / print', present.has('stateful')],
    [
      'jp-kx-fill-control',
      'control flow',
      present.has('control_flow') || present.has('loop')
    ],
    [
      'jp-kx-fill-opaque',
      'NumPy call / random draw',
      present.has('opaque') || present.has('random')
    ],
    ['jp-kx-fill-op', 'op', true],
    [
      'jp-kx-fill-backward',
      'backward (gradient) op',
      nodes.some(n => n.backward)
    ]
  ];
  return h(
    'ul',
    { className: 'jp-kx-kinds jp-kx-fill-key' },
    ...fills
      .filter(([, , on]) => on)
      .map(([cls, text]) =>
        h('li', {}, h('span', { className: `jp-kx-mark ${cls}` }), text)
      )
  );
}

/** What the node marks mean, for the marks this graph uses. */
function renderKinds(nodes: IGraphNode[]): HTMLElement | null {
  const present = new Set(
    nodes.map(n => n.kind).filter((k): k is string => !!k)
  );
  const marks: [string, string, boolean][] = [
    [
      'jp-kx-kind-opaque',
      'opaque NumPy call (runs at each call)',
      present.has('opaque')
    ],
    ['jp-kx-kind-random', 'random draw (at each call)', present.has('random')],
    ['jp-kx-kind-loop', 'graph loop', present.has('loop')],
    ['jp-kx-output', 'returned value', nodes.some(n => n.output)]
  ];
  const shown = marks.filter(([, , on]) => on);
  if (shown.length === 0) {
    return null;
  }
  return h(
    'ul',
    { className: 'jp-kx-kinds' },
    ...shown.map(([cls, text]) =>
      h('li', {}, h('span', { className: `jp-kx-mark ${cls}` }), text)
    )
  );
}

function renderLegend(
  segmentIndex: Map<string, number>,
  segments: IGraphSegment[]
): HTMLElement | null {
  if (segmentIndex.size === 0) {
    return null;
  }
  const described = new Map(segments.map(seg => [seg.id, seg]));
  const items = [...segmentIndex.entries()].map(([id, index]) => {
    const seg = described.get(id);
    const text = seg ? `${seg.label} · ${seg.backend}` : `segment ${id}`;
    return h(
      'li',
      {},
      h('span', {
        className: `jp-kx-swatch jp-kx-seg-${index % SEGMENT_COLOURS}`
      }),
      text
    );
  });
  // A long list is folded (it took half the main area): the colours are on
  // the boxes, the list one click away.
  const count = segmentIndex.size;
  const legend = h(
    'details',
    { className: 'jp-kx-segment-legend' },
    h(
      'summary',
      { className: 'jp-kx-muted' },
      `Fused segments: ${count} compiled ${count === 1 ? 'kernel' : 'kernels'}`
    ),
    h('ul', {}, ...items)
  );
  legend.open = count <= LEGEND_OPEN_UP_TO;
  return legend;
}

function clip(text: string): string {
  return text.length > MAX_LABEL_CHARS
    ? `${text.slice(0, MAX_LABEL_CHARS - 1)}…`
    : text;
}

function round(value: number): string {
  return (Math.round(value * 10) / 10).toString();
}
