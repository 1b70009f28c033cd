import { InspectorModel, ISelection } from '../src/model';
import { InspectorPanel } from '../src/panel';
import { renderGraph } from '../src/graphview';
import { IGraphPayload, PROTOCOL_VERSION } from '../src/protocol';
import {
  CapturingLogger,
  fn,
  graphMessage,
  smallGraph,
  snapshot
} from './fixtures';

const XSS = '<img src=x onerror=alert(1)>';

function setup(): {
  model: InspectorModel;
  panel: InspectorPanel;
  requests: ISelection[];
  exports: string[];
} {
  const model = new InspectorModel({ logger: new CapturingLogger() });
  const requests: ISelection[] = [];
  const exports: string[] = [];
  const panel = new InspectorPanel({
    model,
    requestGraph: sel => requests.push(sel),
    exportFunction: fn => exports.push(fn.id)
  });
  document.body.appendChild(panel.node);
  return { model, panel, requests, exports };
}

function connect(
  model: InspectorModel,
  ...functions: ReturnType<typeof fn>[]
): void {
  model.setConnection({ state: 'connected' });
  model.handleMessage(snapshot(...functions));
}

afterEach(() => {
  document.body.replaceChildren();
});

describe('InspectorPanel', () => {
  it('tells the user how to load the extension when the target is missing', () => {
    const { model, panel } = setup();
    model.setConnection({ state: 'not-loaded' });
    panel.render();
    const status = panel.node.querySelector('.jp-kx-status')!;
    expect(status.textContent).toBe(
      'Run %load_ext kernel_ext in this notebook'
    );
    expect(panel.node.querySelectorAll('.jp-kx-function')).toHaveLength(0);
  });

  it('lists functions with name, cell, counters and signatures, by cost', () => {
    const { model, panel } = setup();
    connect(model, fn('a', 'cheap', 1), fn('b', 'costly', 99));
    panel.render();
    const cards = [...panel.node.querySelectorAll('.jp-kx-function')];
    expect(cards.map(c => c.querySelector('.jp-kx-name')!.textContent)).toEqual(
      ['costly', 'cheap']
    );
    const card = cards[0];
    expect(card.querySelector('.jp-kx-cell')!.textContent).toBe('[3]');
    expect(card.querySelector('[data-counter="calls"]')!.textContent).toBe(
      '10'
    );
    expect(card.querySelector('[data-counter="cache hits"]')!.textContent).toBe(
      '8 of 10 (80%)'
    );
    const sigs = [...card.querySelectorAll('.jp-kx-signature')];
    expect(sigs).toHaveLength(2);
    expect(sigs[0].textContent).toContain('(x: float32[2]) → float32[2]');
    // The signature the last call used is highlighted, and only that one.
    expect(sigs.map(s => s.classList.contains('jp-mod-lastUsed'))).toEqual([
      false,
      true
    ]);
    expect(sigs[1].textContent).toContain('last used');
  });

  it('shows failed calls, which are not cache hits, only when there are some', () => {
    const { model, panel } = setup();
    const failing = fn('a', 'failing', 1);
    failing.counters = { ...failing.counters, cache_hits: 6, failed_calls: 2 };
    connect(model, failing, fn('b', 'fine', 2));
    panel.render();
    const [fine, bad] = [...panel.node.querySelectorAll('.jp-kx-function')];
    expect(
      bad.querySelector('[data-counter="failed calls"]')!.textContent
    ).toBe('2');
    expect(bad.querySelector('[data-counter="cache hits"]')!.textContent).toBe(
      '6 of 10 (60%)'
    );
    expect(fine.querySelector('[data-counter="failed calls"]')).toBeNull();
  });

  it('filters with the search box', () => {
    const { model, panel } = setup();
    connect(
      model,
      fn('a', 'encode', 1),
      fn('b', 'decode', 2),
      fn('c', 'loss', 3)
    );
    const search = panel.node.querySelector('input')!;
    search.value = 'CODE';
    search.dispatchEvent(new Event('input'));
    panel.render();
    const shown = [...panel.node.querySelectorAll('.jp-kx-name')].map(
      n => n.textContent
    );
    expect(shown).toEqual(['decode', 'encode']);
    search.value = 'nothing';
    search.dispatchEvent(new Event('input'));
    panel.render();
    expect(panel.node.querySelector('.jp-kx-functions')!.textContent).toBe(
      'No function matches “nothing”.'
    );
  });

  it('requests a graph on click and draws it as SVG', () => {
    const { model, panel, requests } = setup();
    connect(model, fn('a', 'f', 1));
    panel.render();
    const button = panel.node.querySelector<HTMLButtonElement>(
      '[data-signature-id="0"]'
    )!;
    button.click();
    expect(requests).toEqual([{ functionId: 'a', signatureId: '0' }]);
    panel.render();
    expect(panel.node.querySelector('.jp-kx-graph-area')!.textContent).toBe(
      'Loading graph…'
    );
    model.handleMessage(graphMessage('a', '0'));
    panel.render();
    const svg = panel.node.querySelector('svg.jp-kx-graph-svg')!;
    expect(svg.querySelectorAll('g.jp-kx-node')).toHaveLength(4);
    expect(svg.querySelectorAll('polyline.jp-kx-edge')).toHaveLength(4);
    // Fused nodes are marked and the legend names the segment's backend.
    expect(svg.querySelectorAll('g.jp-kx-fused')).toHaveLength(2);
    expect(panel.node.querySelector('.jp-kx-legend')!.textContent).toContain(
      'elementwise chain (2 ops) · numba_cpu'
    );
    // A second click hides the graph again.
    panel.node
      .querySelector<HTMLButtonElement>('[data-signature-id="0"]')!
      .click();
    panel.render();
    expect(panel.node.querySelector('svg')).toBeNull();
    expect(requests).toHaveLength(1);
  });

  it('shows retrace explanations with the fix', () => {
    const { model, panel } = setup();
    connect(model, fn('a', 'f', 1));
    panel.render();
    const details = panel.node.querySelector('details.jp-kx-retraces')!;
    expect(details.querySelector('summary')!.textContent).toBe(
      'Trace history (1 trace)'
    );
    expect(details.querySelector('.jp-kx-retrace-head')!.textContent).toBe(
      '#2 · shape · cost 3.00 ms · cell [4], line 1'
    );
    const cells = [...details.querySelectorAll('tbody td')].map(
      td => td.textContent
    );
    expect(cells).toEqual(['x', 'float32[2]', 'float32[3]']);
    expect(details.querySelector('.jp-kx-fix code')!.textContent).toBe(
      '%%tffunction --input-signature "x: float32[None]"'
    );
  });

  it('keeps an opened trace history open across updates', () => {
    const { model, panel } = setup();
    connect(model, fn('a', 'f', 1));
    panel.render();
    const details = panel.node.querySelector<HTMLDetailsElement>('details')!;
    details.open = true;
    details.dispatchEvent(new Event('toggle'));
    model.handleMessage(snapshot(fn('a', 'f', 2)));
    panel.render();
    expect(panel.node.querySelector<HTMLDetailsElement>('details')!.open).toBe(
      true
    );
  });

  it('asks to export a function and shows what the kernel answered', () => {
    const { model, panel, exports } = setup();
    connect(model, fn('a', 'fit', 1));
    panel.render();
    const button =
      panel.node.querySelector<HTMLButtonElement>('.jp-kx-export')!;
    expect(button.getAttribute('aria-label')).toBe('Export fit…');
    button.click();
    expect(exports).toEqual(['a']);

    model.startExport('a', 'onnx', 'fit.onnx');
    panel.render();
    const status = () =>
      panel.node.querySelector<HTMLElement>('.jp-kx-export-status')!;
    expect(status().hidden).toBe(false);
    expect(status().textContent).toBe('Exporting to fit.onnx…');
    expect(button.disabled).toBe(true);

    const reply = (ok: boolean, message: string) => ({
      type: 'export',
      protocol_version: PROTOCOL_VERSION,
      function: 'a',
      format: 'onnx',
      path: '/work/fit.onnx',
      ok,
      message
    });
    expect(model.handleMessage(reply(false, `${XSS} has no ONNX form`))).toBe(
      true
    );
    panel.render();
    expect(status().textContent).toBe(`Not exported: ${XSS} has no ONNX form`);
    expect(status().querySelector('img')).toBeNull();
    expect(status().classList.contains('jp-mod-error')).toBe(true);
    expect(button.disabled).toBe(false);

    model.handleMessage(
      reply(true, 'wrote an ONNX model of fit to /work/fit.onnx')
    );
    panel.render();
    expect(status().textContent).toBe(
      'wrote an ONNX model of fit to /work/fit.onnx'
    );
    expect(status().classList.contains('jp-mod-error')).toBe(false);
    expect(status().getAttribute('role')).toBe('status');
  });

  it('drops a malformed export answer and forgets exports on disconnect', () => {
    const { model, panel } = setup();
    connect(model, fn('a', 'fit', 1));
    expect(
      model.handleMessage({
        type: 'export',
        protocol_version: PROTOCOL_VERSION,
        function: 'a',
        ok: 'yes'
      })
    ).toBe(false);
    expect(model.exportState('a')).toBeNull();
    model.startExport('a', 'source', 'fit.py');
    model.setConnection({ state: 'restarting' });
    expect(model.exportState('a')).toBeNull();
    panel.render();
  });

  it('says when the kernel speaks another protocol version', () => {
    const { model, panel } = setup();
    connect(model);
    model.handleMessage({
      type: 'snapshot',
      protocol_version: 7,
      functions: []
    });
    panel.render();
    expect(panel.node.querySelector('.jp-kx-status')!.textContent).toContain(
      'protocol v7'
    );
  });

  describe('escaping', () => {
    it('renders malicious user-derived strings as text, never as elements', () => {
      const { model, panel } = setup();
      const evil = fn('a', XSS, 1, { cell: XSS });
      evil.signatures[0].inputs = `x: ${XSS}`;
      evil.signatures[0].outputs = XSS;
      evil.signatures[0].backend = XSS;
      evil.retraces[0].cause = XSS;
      evil.retraces[0].fix = XSS;
      evil.retraces[0].call_site = XSS;
      evil.retraces[0].diffs = [
        { argument: XSS, old: XSS, new: `</td><script>${XSS}` }
      ];
      connect(model, evil);
      model.filter = '<img';
      panel.render();
      panel.node.querySelector<HTMLDetailsElement>('details')!.open = true;

      expect(panel.node.querySelector('img')).toBeNull();
      expect(panel.node.querySelector('script')).toBeNull();
      expect(panel.node.querySelector('[onerror]')).toBeNull();
      expect(panel.node.querySelector('.jp-kx-name')!.textContent).toBe(XSS);
      expect(panel.node.querySelector('.jp-kx-cell')!.textContent).toBe(XSS);
      expect(panel.node.querySelector('.jp-kx-fix code')!.textContent).toBe(
        XSS
      );
      // The markup is escaped in the serialised HTML, i.e. it is text.
      expect(panel.node.innerHTML).toContain(
        '&lt;img src=x onerror=alert(1)&gt;'
      );
    });

    it('escapes graph labels and the no-match message too', () => {
      const { model, panel } = setup();
      connect(model, fn('a', 'f', 1));
      const graph: IGraphPayload = {
        nodes: [
          {
            id: XSS,
            op: XSS,
            label: XSS,
            shape: XSS,
            dtype: XSS,
            segment: XSS
          },
          {
            id: 'n1',
            op: 'tanh',
            label: 'tanh',
            shape: '[2]',
            dtype: 'float32'
          }
        ],
        edges: [{ source: XSS, target: 'n1' }],
        segments: [{ id: XSS, backend: XSS, label: XSS }]
      };
      const el = renderGraph(graph);
      document.body.appendChild(el);
      expect(el.querySelector('img')).toBeNull();
      expect(el.querySelector('[onerror]')).toBeNull();
      expect(el.querySelector('text.jp-kx-node-op')!.textContent).toBe(
        XSS.length > 40 ? `${XSS.slice(0, 39)}…` : XSS
      );
      expect(el.querySelector('.jp-kx-legend li')!.textContent).toBe(
        `${XSS} · ${XSS}`
      );
      // Class names come from our segment index, not from the kernel's id.
      expect(el.querySelector('g.jp-kx-fused')!.getAttribute('class')).toBe(
        'jp-kx-node jp-kx-fused jp-kx-seg-0'
      );

      model.filter = XSS;
      panel.render();
      expect(panel.node.querySelector('img')).toBeNull();
      expect(panel.node.querySelector('.jp-kx-functions')!.textContent).toBe(
        `No function matches “${XSS}”.`
      );
    });
  });
});

describe('renderGraph', () => {
  it('lays out with dagre: every node gets a distinct position', () => {
    const el = renderGraph(smallGraph());
    const positions = [...el.querySelectorAll('g.jp-kx-node')].map(g =>
      g.getAttribute('transform')
    );
    expect(new Set(positions).size).toBe(4);
    // Data flows downwards: the input sits above the reduction.
    const y = (i: number) => Number(/,(-?[\d.]+)\)/.exec(positions[i]!)![1]);
    expect(y(0)).toBeLessThan(y(3));
  });

  it('skips edges to unknown nodes and duplicate node ids', () => {
    const graph = smallGraph();
    graph.nodes.push({ ...graph.nodes[0] });
    graph.edges.push({ source: 'n0', target: 'missing' });
    const el = renderGraph(graph);
    expect(el.querySelectorAll('g.jp-kx-node')).toHaveLength(4);
    expect(el.querySelectorAll('polyline')).toHaveLength(4);
  });

  it('caps very large graphs', () => {
    const nodes = Array.from({ length: 400 }, (_, i) => ({
      id: `n${i}`,
      op: 'add',
      label: 'add',
      shape: '[]',
      dtype: 'float32'
    }));
    const edges = nodes
      .slice(1)
      .map((n, i) => ({ source: `n${i}`, target: n.id }));
    const el = renderGraph({ nodes, edges });
    expect(el.querySelectorAll('g.jp-kx-node')).toHaveLength(300);
    expect(el.textContent).toContain('Showing the first 300 of 400 nodes.');
  });

  it('handles an empty graph', () => {
    expect(renderGraph({ nodes: [], edges: [] }).textContent).toBe(
      'The graph has no nodes.'
    );
  });
});
