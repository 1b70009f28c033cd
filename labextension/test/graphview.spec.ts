/**
 * The graph view (issue 17, item 4): what each node says, the fit to the
 * width, zoom through d3-zoom, the main-area button and the marks.
 */
import {
  fitScale,
  GraphView,
  MAX_VIEWPORT_HEIGHT,
  nodeLines,
  SCALE_EXTENT,
  viewportHeight
} from '../src/graphview';
import { IGraphPayload } from '../src/protocol';
import { smallGraph } from './fixtures';

function readable(): IGraphPayload {
  // np.tanh(x) * 2 * n with n=20, as the kernel describes it.
  const base = { shape: '[3]', dtype: 'float32' };
  return {
    nodes: [
      {
        id: 'n0',
        op: 'placeholder',
        label: 'x',
        text: 'x',
        kind: 'input',
        ...base
      },
      {
        id: 'n1',
        op: 'tanh',
        label: 'tanh',
        text: 'tanh(·)',
        kind: 'op',
        ...base
      },
      {
        id: 'n2',
        op: 'multiply',
        label: 'multiply',
        text: 'multiply(·, 2)',
        kind: 'op',
        ...base
      },
      {
        id: 'n3',
        op: 'multiply',
        label: 'multiply_1',
        text: 'multiply(·, 20)',
        kind: 'op',
        output: true,
        ...base
      },
      {
        id: 'n4',
        op: 'numpy_call',
        label: 'einsum',
        text: "np.einsum('i->', ·)",
        kind: 'opaque',
        note: 'opaque: np.einsum — runs NumPy at each call',
        ...base
      },
      {
        id: 'n5',
        op: 'while',
        label: 'while',
        text: 'while loop',
        kind: 'loop',
        note: 'loop at cell [3], line 4',
        ...base
      }
    ],
    edges: [
      { source: 'n0', target: 'n1' },
      { source: 'n1', target: 'n2' },
      { source: 'n2', target: 'n3' },
      { source: 'n0', target: 'n4' },
      { source: 'n0', target: 'n5' }
    ]
  };
}

describe('node text', () => {
  it('shows the literal operands and no internal name', () => {
    const view = new GraphView(readable());
    const texts = [...view.node.querySelectorAll('.jp-kx-node-op')].map(
      t => t.textContent
    );
    expect(texts).toContain('multiply(·, 2)');
    expect(texts).toContain('multiply(·, 20)');
    expect(view.node.textContent).not.toContain('multiply_1 =');
  });

  it('says input, runs NumPy and graph loop on the second line', () => {
    const nodes = readable().nodes;
    expect(nodeLines(nodes[0])).toEqual(['x', 'input · float32[3]']);
    expect(nodeLines(nodes[4])[1]).toBe('runs NumPy · float32[3]');
    expect(nodeLines(nodes[5])[1]).toBe('graph loop · float32[3]');
  });

  it('falls back to the op for kernels that send no text', () => {
    expect(nodeLines(smallGraph().nodes[1])).toEqual(['tanh', 'float32[2]']);
  });

  it('marks opaque calls, loops and outputs, with a legend and tooltips', () => {
    const el = new GraphView(readable()).node;
    expect(el.querySelector('.jp-kx-node.jp-kx-kind-opaque')).not.toBeNull();
    expect(el.querySelector('.jp-kx-node.jp-kx-kind-loop')).not.toBeNull();
    expect(el.querySelectorAll('.jp-kx-node.jp-kx-output')).toHaveLength(1);
    const legend = el.querySelector('.jp-kx-kinds')!.textContent!;
    expect(legend).toContain('opaque NumPy call');
    expect(legend).toContain('graph loop');
    const titles = [...el.querySelectorAll('.jp-kx-node title')].map(
      t => t.textContent!
    );
    expect(titles.some(t => t.includes('runs NumPy at each call'))).toBe(true);
    expect(titles.some(t => t.includes('node multiply_1'))).toBe(true);
  });

  it('keeps the fused-segment legend', () => {
    const el = new GraphView(smallGraph()).node;
    expect(el.querySelectorAll('.jp-kx-node.jp-kx-fused')).toHaveLength(2);
    expect(el.querySelector('.jp-kx-legend')!.textContent).toContain(
      'elementwise chain (2 ops) · numba_cpu'
    );
  });
});

describe('fit', () => {
  it('fits the width, never enlarges, never goes below the zoom limit', () => {
    expect(
      fitScale({ width: 654, height: 1240 }, { width: 216, height: 0 })
    ).toBeCloseTo(216 / 654);
    expect(
      fitScale({ width: 100, height: 100 }, { width: 400, height: 0 })
    ).toBe(1);
    expect(
      fitScale({ width: 1e6, height: 10 }, { width: 200, height: 0 })
    ).toBe(SCALE_EXTENT[0]);
    // Filling the main area fits the height too.
    expect(
      fitScale({ width: 100, height: 1000 }, { width: 800, height: 500 }, true)
    ).toBeCloseTo(0.5);
  });

  it('sizes the sidebar viewport to the fitted picture, up to a limit', () => {
    expect(viewportHeight({ width: 654, height: 1240 }, 216 / 654)).toBe(410);
    expect(viewportHeight({ width: 200, height: 5000 }, 1)).toBe(
      MAX_VIEWPORT_HEIGHT
    );
  });

  it('applies the fit through d3-zoom and zooms with the buttons', () => {
    const view = new GraphView(readable());
    document.body.appendChild(view.node);
    const svg = view.node.querySelector('svg')!;
    const content = svg.querySelector('g.jp-kx-graph-content')!;
    expect(svg.getAttribute('width')).toBe('100%');
    view.fit(view.natural.width / 2);
    expect(view.scale).toBeCloseTo(0.5);
    expect(content.getAttribute('transform')).toContain('scale(0.5)');
    expect(svg.getAttribute('data-scale')).toBe('0.500');
    expect(svg.getAttribute('height')).toBe(
      String(viewportHeight(view.natural, 0.5))
    );
    const plus = view.node.querySelector<HTMLButtonElement>(
      'button[aria-label^="Zoom in"]'
    )!;
    plus.click();
    expect(view.scale).toBeCloseTo(0.75);
    view.node
      .querySelector<HTMLButtonElement>('button[aria-label^="Fit"]')!
      .click();
    view.dispose();
    view.node.remove();
  });
});

describe('open in the main area', () => {
  it('offers the button only when it can, and calls back', () => {
    expect(
      new GraphView(readable()).node.querySelector('.jp-kx-open-main')
    ).toBeNull();
    const open = jest.fn();
    const el = new GraphView(readable(), { onOpenInMain: open }).node;
    el.querySelector<HTMLButtonElement>('.jp-kx-open-main')!.click();
    expect(open).toHaveBeenCalledTimes(1);
  });

  it('fills its parent in the main area', () => {
    const el = new GraphView(readable(), { fill: true }).node;
    expect(el.classList.contains('jp-mod-fill')).toBe(true);
    expect(el.querySelector('svg')!.getAttribute('height')).toBe('100%');
  });
});
