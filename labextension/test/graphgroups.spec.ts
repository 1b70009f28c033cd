/**
 * Graphs at real size: a graph of a hundred nodes starts with its fused
 * kernels (and, for a gradient, its passes) as groups, collapsed; expanding
 * one keeps it where it was on screen; a search expands and centres a node.
 */
import {
  buildGroups,
  COLLAPSE_ABOVE,
  defaultCollapsed,
  findNodes,
  representative,
  visibleItems
} from '../src/graphgroups';
import { GraphView } from '../src/graphview';
import { IGraphNode, IGraphPayload } from '../src/protocol';

/** A training step's shape: a forward chain, then a backward one, fused in
 * segments of eight ops. */
export function trainStep(n = 104): IGraphPayload {
  const nodes: IGraphNode[] = [];
  for (let i = 0; i < n; i++) {
    const backward = i >= n / 2;
    const fused = i % 13 !== 0;
    nodes.push({
      id: `n${i}`,
      op: i === 0 ? 'placeholder' : i % 3 ? 'multiply' : 'tanh',
      label: i === 0 ? 'x' : `op_${i}`,
      text: i === 0 ? 'x' : i % 3 ? `multiply(·, ${i})` : 'tanh(·)',
      shape: '[16, 128]',
      dtype: 'float32',
      kind: i === 0 ? 'input' : 'op',
      segment: fused ? `s${Math.floor(i / 8)}` : null,
      backward
    });
  }
  const edges = nodes.slice(1).map((node, i) => ({
    source: nodes[i].id,
    target: node.id
  }));
  const ids = new Set(nodes.map(node => node.segment).filter(Boolean));
  const segments = [...ids].map(id => ({
    id: id as string,
    backend: 'numba-cpu',
    label: `elementwise segment, ${id}`
  }));
  return { nodes, edges, segments };
}

describe('groups of a graph', () => {
  const graph = trainStep();
  const grouping = buildGroups(graph.nodes, graph.segments);

  it('are the fused kernels inside the forward and backward passes', () => {
    expect(grouping.groups.get('g:forward')!.size).toBe(52);
    expect(grouping.groups.get('g:backward')!.size).toBe(52);
    const kernel = grouping.groups.get('g:seg:s1')!;
    expect(kernel.title).toBe('kernel s1 · 7 ops'); // n13 is not fused
    expect(kernel.parent).toBe('g:forward');
    expect(grouping.groupOf.get('n0')).toBe('g:forward'); // unfused: its pass
  });

  it('start collapsed above the limit, so far fewer boxes are drawn', () => {
    expect(graph.nodes.length).toBeGreaterThan(COLLAPSE_ABOVE);
    const collapsed = defaultCollapsed(graph.nodes, grouping);
    const shown = visibleItems(graph.nodes, grouping, collapsed);
    expect(shown.length).toBeLessThan(graph.nodes.length / 3);
    expect(representative('n9', grouping, collapsed)).toBe('g:seg:s1');
    // a small graph is drawn whole
    const small = trainStep(20);
    const few = buildGroups(small.nodes, small.segments);
    expect(defaultCollapsed(small.nodes, few).size).toBe(0);
  });

  it('find nodes by op, name or text', () => {
    expect(findNodes(graph.nodes, 'MULTIPLY(·, 17)').map(n => n.id)).toEqual([
      'n17'
    ]);
    expect(findNodes(graph.nodes, 'op_42').map(n => n.id)).toEqual(['n42']);
    expect(findNodes(graph.nodes, '  ')).toEqual([]);
  });
});

describe('the graph view at real size', () => {
  function mounted(): { view: GraphView; svg: SVGSVGElement } {
    const view = new GraphView(trainStep(), { fill: true });
    document.body.appendChild(view.node);
    const svg = view.node.querySelector('svg')!;
    // jsdom has no layout: give the viewport a size
    Object.defineProperty(svg, 'clientWidth', { value: 600 });
    Object.defineProperty(svg, 'clientHeight', { value: 400 });
    return { view, svg };
  }

  afterEach(() => document.body.replaceChildren());

  it('first shows labels at 11 px at least, however big the graph', () => {
    const { view } = mounted();
    view.showReadable();
    expect(view.scale).toBeGreaterThanOrEqual(1);
    view.fit(); // asked for: the whole graph, smaller
    expect(view.scale).toBeLessThan(1);
  });

  it('expands a group in place: it stays where it was on screen', () => {
    const { view, svg } = mounted();
    view.showReadable();
    const box = view.placed('g:seg:s2')!;
    const transform = () =>
      svg.querySelector('.jp-kx-graph-content')!.getAttribute('transform')!;
    const [tx, ty] = transform()
      .match(/-?[\d.]+/g)!
      .map(Number);
    const before = {
      x: tx + box.x + box.width / 2,
      y: ty + box.y + box.height / 2
    };
    svg
      .querySelector<SVGGElement>('[data-group="g:seg:s2"]')!
      .dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(view.collapsed.has('g:seg:s2')).toBe(false);
    expect(
      svg.querySelector('.jp-kx-cluster[data-group="g:seg:s2"]')
    ).not.toBeNull();
    const after = view.placed('g:seg:s2')!;
    const [ax, ay] = transform()
      .match(/-?[\d.]+/g)!
      .map(Number);
    expect(ax + after.x + after.width / 2).toBeCloseTo(before.x, 0);
    expect(ay + after.y + after.height / 2).toBeCloseTo(before.y, 0);
  });

  it('search expands the group around a node and centres it', () => {
    const { view, svg } = mounted();
    view.showReadable();
    const found = view.find('multiply(·, 17)');
    expect(found.map(n => n.id)).toEqual(['n17']);
    expect(view.collapsed.has('g:seg:s2')).toBe(false);
    const node = svg.querySelector('[data-node="n17"]')!;
    expect(node.classList.contains('jp-mod-found')).toBe(true);
    const box = view.placed('n17')!;
    const [tx, ty, k] = svg
      .querySelector('.jp-kx-graph-content')!
      .getAttribute('transform')!
      .match(/-?[\d.]+/g)!
      .map(Number);
    expect(tx + (box.x + box.width / 2) * k).toBeCloseTo(300, 0);
    expect(ty + (box.y + box.height / 2) * k).toBeCloseTo(200, 0);
    expect(k).toBeGreaterThanOrEqual(1);
  });

  it('answers the keyboard: +, − and 0', () => {
    const { view, svg } = mounted();
    view.showReadable();
    const k = view.scale;
    svg.dispatchEvent(new KeyboardEvent('keydown', { key: '+' }));
    expect(view.scale).toBeCloseTo(k * 1.25);
    svg.dispatchEvent(new KeyboardEvent('keydown', { key: '-' }));
    expect(view.scale).toBeCloseTo(k);
    svg.dispatchEvent(new KeyboardEvent('keydown', { key: 'f' }));
    expect(view.scale).toBeLessThan(1);
    svg.dispatchEvent(new KeyboardEvent('keydown', { key: '0' }));
    expect(view.scale).toBeGreaterThanOrEqual(1);
  });
});

/** A training step whose nodes say their source line (four ops a line), with
 * a graph loop holding a body of six ops. */
function withLines(): IGraphPayload {
  const graph = trainStep();
  graph.nodes.forEach((node, i) => {
    if (i > 0) {
      const line = 3 + Math.floor((i % 52) / 4);
      node.line = `cell [5], line ${line}`;
      node.source = `h${line} = np.tanh(h${line - 1} * ${line})`;
    }
  });
  graph.nodes[20] = {
    ...graph.nodes[20],
    op: 'while',
    text: 'while loop',
    kind: 'loop',
    segment: null
  };
  for (let j = 0; j < 6; j++) {
    graph.nodes.push({
      id: `n20.0.${j}`,
      op: 'sin',
      label: `sin_${j}`,
      text: 'sin(·)',
      shape: '[16, 128]',
      dtype: 'float32',
      kind: 'op',
      line: 'cell [5], line 40',
      source: 'h = h + np.sin(h)',
      inside: 'n20'
    });
    if (j > 0) {
      graph.edges.push({ source: `n20.0.${j - 1}`, target: `n20.0.${j}` });
    }
  }
  return graph;
}

describe('groups by source line, loops and branches', () => {
  const graph = withLines();

  it('make one group per line of each pass, titled by the line', () => {
    const grouping = buildGroups(graph.nodes, graph.segments, 'line');
    const line7 = [...grouping.groups.values()].filter(
      g => g.kind === 'line' && g.title.startsWith('line 7:')
    );
    // line 7 made ops of the forward pass and (their gradient) of the backward
    expect(line7.map(g => g.parent).sort()).toEqual([
      'g:backward',
      'g:forward'
    ]);
    expect(line7[0].title).toBe('line 7: h7 = np.tanh(h6 * 7)');
    expect(line7[0].size).toBe(4);
    expect(line7.find(g => g.parent === 'g:backward')!.backward).toBe(true);
    expect(grouping.groupOf.get('n17')).toBe(line7[0].id);
  });

  it('make a loop one box holding its body, inside the line of its statement', () => {
    const grouping = buildGroups(graph.nodes, graph.segments, 'line');
    const loop = grouping.groups.get('g:cf:n20')!;
    expect(loop.kind).toBe('loop');
    expect(loop.size).toBe(7); // the loop and the six ops of its body
    expect(grouping.groupOf.get('n20')).toBe('g:cf:n20');
    expect(grouping.groupOf.get('n20.0.3')).toBe(
      [...grouping.groups.values()].find(
        g => g.kind === 'line' && g.parent === 'g:cf:n20'
      )!.id
    );
    expect(grouping.groups.get(loop.parent!)!.title).toMatch(/^line 8:/);
    // collapsed, the body is the loop's box; by kernel too
    const collapsed = defaultCollapsed(graph.nodes, grouping);
    expect(representative('n20.0.3', grouping, collapsed)).not.toBe('n20.0.3');
    const kernels = buildGroups(graph.nodes, graph.segments, 'kernel');
    expect(kernels.groups.get('g:cf:n20')!.size).toBe(7);
  });

  it('start collapsed: far fewer boxes, each label at 11 px', () => {
    const view = new GraphView(graph, { fill: true });
    document.body.appendChild(view.node);
    const svg = view.node.querySelector('svg')!;
    Object.defineProperty(svg, 'clientWidth', { value: 600 });
    Object.defineProperty(svg, 'clientHeight', { value: 400 });
    expect(view.grouping).toBe('line');
    const grouping = buildGroups(graph.nodes, graph.segments, 'line');
    const shown = visibleItems(
      graph.nodes,
      grouping,
      view.collapsed as Set<string>
    );
    expect(shown.length).toBeLessThan(graph.nodes.length / 2);
    view.showReadable();
    expect(view.scale).toBeGreaterThanOrEqual(1);
    // the tooltip of a node names its line
    view.find('sin(·)');
    const title = svg.querySelector(
      '[data-node="n20.0.0"] title'
    )!.textContent!;
    expect(title).toContain('made at cell [5], line 40');
    // the grouping can be switched to kernels, and back
    const select = view.node.querySelector<HTMLSelectElement>(
      '.jp-kx-graph-grouping'
    )!;
    select.value = 'kernel';
    select.dispatchEvent(new Event('change'));
    expect(view.grouping).toBe('kernel');
    expect(view.groups.has('g:seg:s2')).toBe(true);
    document.body.replaceChildren();
  });

  it('finds a node by its line', () => {
    expect(findNodes(graph.nodes, 'line 40').map(n => n.id)).toEqual(
      graph.nodes.filter(n => n.inside).map(n => n.id)
    );
  });
});
