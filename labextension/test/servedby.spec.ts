/**
 * Which path serves each signature, and its kernels' compile progress
 * (issue 17, "Beyond"): optional protocol fields, shown under the signature
 * and updated in place as the background compiler gets on.
 */
import { isSignatureInfo } from '../src/protocol';
import { connectedPanel, fn, signature, snapshot, update } from './fixtures';

const COMPILING =
  'compiling in the background: 1 of 3 kernels ready; NumPy runs the rest meanwhile';

afterEach(() => {
  document.body.replaceChildren();
});

describe('served by and compile progress', () => {
  it('are optional strings in the protocol', () => {
    const sig = signature('1', 'x: float32[2]');
    expect(isSignatureInfo(sig)).toBe(true);
    const full = {
      ...sig,
      served_by: 'tiered auto: fused; tiers up after 64 calls',
      tier: 'fused; tiers up after 64 calls',
      compile: COMPILING,
      compile_state: 'compiling'
    };
    expect(isSignatureInfo(full)).toBe(true);
    expect(isSignatureInfo({ ...sig, served_by: 3 })).toBe(false);
    expect(isSignatureInfo({ ...sig, compile_state: null })).toBe(false);
  });

  it('shows the path under each signature and the progress while compiling, in place', () => {
    const { model, panel } = connectedPanel();
    const compiling = signature('1', 'x: float32[2]', {
      backend: 'numba-cpu',
      served_by: 'runs as 3 compiled kernels (numba-cpu)',
      compile: COMPILING,
      compile_state: 'compiling'
    });
    model.handleMessage(
      snapshot(fn('a', 'dense', 5, { signatures: [compiling] }))
    );
    panel.render();
    const served = panel.node.querySelector<HTMLElement>('.jp-kx-served-by')!;
    const progress = panel.node.querySelector<HTMLElement>('.jp-kx-compile')!;
    expect(served.textContent).toBe('runs as 3 compiled kernels (numba-cpu)');
    expect(served.hidden).toBe(false);
    expect(progress.textContent).toBe(COMPILING);
    expect(progress.dataset.state).toBe('compiling');
    expect(progress.hidden).toBe(false);

    const ready = { ...compiling, compile: '', compile_state: 'ready' };
    model.handleMessage(update([fn('a', 'dense', 5, { signatures: [ready] })]));
    panel.render();
    // The same elements, updated.
    expect(panel.node.querySelector('.jp-kx-compile')).toBe(progress);
    expect(progress.hidden).toBe(true);
    expect(progress.dataset.state).toBe('ready');
    expect(served.textContent).toBe('runs as 3 compiled kernels (numba-cpu)');
  });

  it('shows the tier note on hover and nothing for an older kernel', () => {
    const { model, panel } = connectedPanel();
    const tiered = signature('1', 'x: float32[2]', {
      backend: 'numba-cpu',
      served_by: 'runs as one compiled function (numba-cpu)',
      tier: 'whole graph (2.0× faster than fused)'
    });
    const old = signature('2', 'x: float32[3]');
    model.handleMessage(
      snapshot(fn('a', 'dense', 5, { signatures: [tiered, old] }))
    );
    panel.render();
    const [first, second] =
      panel.node.querySelectorAll<HTMLElement>('.jp-kx-served-by');
    expect(first.title).toBe(
      'whole graph (2.0× faster than fused) (executor: numba-cpu)'
    );
    expect(first.textContent).toBe('runs as one compiled function (numba-cpu)');
    expect(second.hidden).toBe(true);
    expect(second.textContent).toBe('');
  });
});
