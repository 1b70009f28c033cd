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
 * Fit: the picture starts at the largest scale (at most 1:1) at which its
 * whole width shows; its viewport is as tall as the fitted picture, up to a
 * limit, and the rest is reached by panning.  In the main area the picture
 * fits both ways.  A resize refits until the user zooms or pans.
 */

import { graphlib, layout } from '@dagrejs/dagre';
import { select } from 'd3-selection';
import { zoom, zoomIdentity, ZoomBehavior, ZoomTransform } from 'd3-zoom';

import { h, s } from './dom';
import { IGraphNode, IGraphPayload, IGraphSegment } from './protocol';

/** Beyond this many nodes the layout gets slow and the picture unreadable. */
export const MAX_DRAWN_NODES = 300;

/** Tallest sidebar viewport, in px (the rest of the picture is panned to). */
export const MAX_VIEWPORT_HEIGHT = 480;

/** Zoom limits: far enough out to see 300 nodes, in to read an 11px label. */
export const SCALE_EXTENT: [number, number] = [0.05, 4];

/** Graphs at least this wide or with this many nodes offer the main area. */
export const BIG_GRAPH_NODES = 12;

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
 * page; the view fits itself when it first gets a width and on resizes.
 */
export class GraphView {
  readonly node: HTMLElement;

  constructor(graph: IGraphPayload, options: IGraphViewOptions = {}) {
    this._fill = options.fill ?? false;
    this.node = h('div', {
      className: this._fill ? 'jp-kx-graph jp-mod-fill' : 'jp-kx-graph'
    });
    const nodes = uniqueNodes(graph.nodes).slice(0, MAX_DRAWN_NODES);
    if (nodes.length === 0) {
      this.node.appendChild(
        h('p', { className: 'jp-kx-muted' }, 'The graph has no nodes.')
      );
      this._svg = null;
      this._content = null;
      return;
    }
    const drawing = draw(graph, nodes);
    this.natural = drawing.size;
    this._svg = s('svg', {
      class: 'jp-kx-graph-svg',
      width: '100%',
      height: this._fill ? '100%' : viewportHeight(this.natural, 1),
      role: 'img',
      'aria-label': `data-flow graph, ${nodes.length} nodes`
    });
    this._content = drawing.content;
    this._svg.append(arrowMarker(), this._content);

    this.node.appendChild(
      this._toolbar(options, nodes.length, graph.nodes.length)
    );
    this.node.appendChild(
      h('div', { className: 'jp-kx-graph-viewport' }, this._svg)
    );
    const legend = renderLegend(drawing.segmentIndex, graph.segments ?? []);
    const kinds = renderKinds(nodes);
    if (legend || kinds) {
      this.node.appendChild(
        h('div', { className: 'jp-kx-legend' }, kinds, legend)
      );
    }

    this._zoom = zoom<SVGSVGElement, unknown>()
      .scaleExtent(SCALE_EXTENT)
      // The extent is the viewport; given explicitly, d3 never reads the SVG's
      // viewBox (absent here, and unimplemented in jsdom).
      .extent(() => [
        [0, 0],
        [Math.max(1, this._viewport().width), this._viewport().height]
      ])
      // In a scrolling sidebar a plain wheel scrolls the panel; zooming takes
      // Ctrl/⌘ (a trackpad pinch arrives as a wheel with ctrlKey).
      .filter((event: Event) =>
        event.type === 'wheel'
          ? (event as WheelEvent).ctrlKey || (event as WheelEvent).metaKey
          : !(event as MouseEvent).button
      )
      .on('zoom', event => {
        this._apply(event.transform as ZoomTransform);
        if (event.sourceEvent) {
          this._userMoved = true;
        }
      });
    select(this._svg).call(this._zoom);

    // Fit once the page gives us a width, and again on resizes until the
    // user has zoomed or panned.  (No ResizeObserver in jsdom: call fit().)
    if (typeof ResizeObserver !== 'undefined') {
      this._observer = new ResizeObserver(() => {
        if (!this._userMoved && this._viewport().width > 0) {
          this.fit();
        }
      });
      this._observer.observe(this.node);
    }
    this._apply(zoomIdentity);
  }

  /** Natural size of the drawing (1:1). */
  readonly natural: ISize = { width: 0, height: 0 };

  /** The scale shown now (1 = natural size). */
  get scale(): number {
    return this._transform.k;
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
    if (!this._fill) {
      this._svg.setAttribute('height', String(viewportHeight(this.natural, k)));
    }
    const x = Math.max(0, (width - this.natural.width * k) / 2);
    this._userMoved = false;
    select(this._svg).call(
      this._zoom.transform,
      zoomIdentity.translate(x, 0).scale(k)
    );
  }

  /** Zoom by *factor* about the viewport's centre. */
  zoomBy(factor: number): void {
    if (this._svg && this._zoom) {
      this._userMoved = true;
      select(this._svg).call(this._zoom.scaleBy, factor);
    }
  }

  dispose(): void {
    this._observer?.disconnect();
    if (this._svg) {
      select(this._svg).on('.zoom', null);
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
    const bar = h(
      'div',
      { className: 'jp-kx-graph-toolbar', attrs: { role: 'toolbar' } },
      button('Fit', 'Fit the graph to the width', () => this.fit()),
      button('−', 'Zoom out', () => this.zoomBy(1 / 1.5)),
      button('+', 'Zoom in (or Ctrl + wheel; drag to pan)', () =>
        this.zoomBy(1.5)
      )
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

  private _content: SVGGElement | null;
  private _fill: boolean;
  private _observer: ResizeObserver | null = null;
  private _svg: SVGSVGElement | null;
  private _transform: ZoomTransform = zoomIdentity;
  private _userMoved = false;
  private _zoom: ZoomBehavior<SVGSVGElement, unknown> | null = null;
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

function draw(
  graph: IGraphPayload,
  nodes: IGraphNode[]
): { content: SVGGElement; size: ISize; segmentIndex: Map<string, number> } {
  const segmentIndex = indexSegments(nodes);
  const g = new graphlib.Graph<object, IBox, { points?: IPoint[] }>();
  g.setGraph({
    rankdir: 'TB',
    nodesep: 14,
    ranksep: 26,
    marginx: 6,
    marginy: 6
  });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of nodes) {
    g.setNode(node.id, boxFor(node));
  }
  for (const edge of graph.edges) {
    // Edges to nodes we do not draw (unknown or beyond the cap) are skipped.
    if (g.hasNode(edge.source) && g.hasNode(edge.target)) {
      g.setEdge(edge.source, edge.target);
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
  for (const node of nodes) {
    const box = g.node(node.id);
    grow((box.x ?? 0) - box.width / 2, (box.y ?? 0) - box.height / 2);
    grow((box.x ?? 0) + box.width / 2, (box.y ?? 0) + box.height / 2);
  }
  for (const e of g.edges()) {
    (g.edge(e)?.points ?? []).forEach(p => grow(p.x, p.y));
  }
  const margin = 6;
  const width = bounds.x1 - bounds.x0 + 2 * margin;
  const height = bounds.y1 - bounds.y0 + 2 * margin;
  const content = s('g', { class: 'jp-kx-graph-content' });
  const drawing = s('g', {
    transform: `translate(${round(margin - bounds.x0)},${round(margin - bounds.y0)})`
  });
  content.appendChild(drawing);
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
  for (const node of nodes) {
    drawing.appendChild(drawNode(node, g.node(node.id), segmentIndex));
  }
  return {
    content,
    size: { width: Math.ceil(width), height: Math.ceil(height) },
    segmentIndex
  };
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
  segmentIndex: Map<string, number>
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
  const [first, second] = nodeLines(node);
  const tooltip = [
    node.text ? `${node.text}  (${node.op})` : `${node.label} (${node.op})`,
    `${node.dtype}${node.shape}`,
    node.note ?? null,
    node.segment ? `fused segment ${node.segment}` : 'not fused',
    node.output ? 'returned by the function' : null,
    `node ${node.label}`
  ]
    .filter(line => line !== null)
    .join('\n');
  return s(
    'g',
    {
      class: classes.join(' '),
      transform: `translate(${round(x)},${round(y)})`
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
  return h(
    'div',
    {},
    h('span', { className: 'jp-kx-muted' }, 'Fused segments'),
    h('ul', {}, ...items)
  );
}

function clip(text: string): string {
  return text.length > MAX_LABEL_CHARS
    ? `${text.slice(0, MAX_LABEL_CHARS - 1)}…`
    : text;
}

function round(value: number): string {
  return (Math.round(value * 10) / 10).toString();
}
