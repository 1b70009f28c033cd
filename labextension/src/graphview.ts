/**
 * Draws a concrete function's graph as SVG.  Layout is dagre's (a layered
 * Sugiyama layout, the usual picture of a dataflow graph); this module only
 * sizes the boxes and turns dagre's coordinates into SVG elements.
 */

import { graphlib, layout } from '@dagrejs/dagre';

import { h, s } from './dom';
import { IGraphNode, IGraphPayload, IGraphSegment } from './protocol';

/** Beyond this many nodes the layout gets slow and the picture unreadable. */
export const MAX_DRAWN_NODES = 300;

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

/** Render *graph*; returns a container with the SVG and a segment legend. */
export function renderGraph(graph: IGraphPayload): HTMLElement {
  const nodes = uniqueNodes(graph.nodes).slice(0, MAX_DRAWN_NODES);
  const container = h('div', { className: 'jp-kx-graph' });
  if (nodes.length === 0) {
    container.appendChild(
      h('p', { className: 'jp-kx-muted' }, 'The graph has no nodes.')
    );
    return container;
  }
  if (graph.nodes.length > nodes.length) {
    container.appendChild(
      h(
        'p',
        { className: 'jp-kx-muted' },
        `Showing the first ${nodes.length} of ${graph.nodes.length} nodes.`
      )
    );
  }
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

  const { width = 0, height = 0 } = g.graph() as {
    width?: number;
    height?: number;
  };
  const svg = s('svg', {
    class: 'jp-kx-graph-svg',
    width: Math.ceil(width),
    height: Math.ceil(height),
    viewBox: `0 0 ${Math.ceil(width)} ${Math.ceil(height)}`,
    role: 'img'
  });
  svg.appendChild(arrowMarker());
  for (const e of g.edges()) {
    const points = g.edge(e)?.points ?? [];
    if (points.length > 1) {
      svg.appendChild(
        s('polyline', {
          class: 'jp-kx-edge',
          points: points.map(p => `${round(p.x)},${round(p.y)}`).join(' '),
          'marker-end': 'url(#jp-kx-arrow)'
        })
      );
    }
  }
  for (const node of nodes) {
    const box = g.node(node.id);
    svg.appendChild(drawNode(node, box, segmentIndex));
  }
  container.appendChild(svg);

  const legend = renderLegend(segmentIndex, graph.segments ?? []);
  if (legend) {
    container.appendChild(legend);
  }
  return container;
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

function nodeLines(node: IGraphNode): [string, string] {
  const title =
    node.label && node.label !== node.op
      ? `${node.label} = ${node.op}`
      : node.op;
  return [clip(title), clip(`${node.dtype}${node.shape}`)];
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
  const classes = ['jp-kx-node'];
  if (segment !== undefined) {
    // The class name is built from our own index, never from kernel text.
    classes.push('jp-kx-fused', `jp-kx-seg-${segment % SEGMENT_COLOURS}`);
  }
  const [first, second] = nodeLines(node);
  const tooltip = [
    `${node.label} (${node.op})`,
    `${node.dtype}${node.shape}`,
    node.segment ? `fused segment ${node.segment}` : 'not fused'
  ].join('\n');
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
    { className: 'jp-kx-legend' },
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
