/**
 * The Dask dashboard link (issue 18): an optional protocol field, linked beside
 * a signature that runs on Dask ("dask · N tasks") when the kernel has a
 * distributed client; only http(s) addresses become links.
 */
import { isSignatureInfo } from '../src/protocol';
import { connectedPanel, fn, signature, snapshot, update } from './fixtures';

const URL = 'http://127.0.0.1:8787/status';

afterEach(() => {
  document.body.replaceChildren();
});

describe('the Dask dashboard link', () => {
  it('is an optional string in the protocol', () => {
    const sig = signature('1', 'x: dask float32[8]');
    expect(isSignatureInfo({ ...sig, dashboard: URL })).toBe(true);
    expect(isSignatureInfo({ ...sig, dashboard: 8787 })).toBe(false);
  });

  it('links the dashboard beside the task count, and hides it without a client', () => {
    const { model, panel } = connectedPanel();
    const onDask = signature('1', 'x: dask float32[8]', {
      backend: 'dask · 12 tasks',
      dashboard: URL
    });
    model.handleMessage(snapshot(fn('a', 'f', 5, { signatures: [onDask] })));
    panel.render();
    expect(panel.node.querySelector('.jp-kx-sig-meta')!.textContent).toContain(
      'dask · 12 tasks'
    );
    const link =
      panel.node.querySelector<HTMLAnchorElement>('.jp-kx-dashboard')!;
    expect(link.hidden).toBe(false);
    expect(link.getAttribute('href')).toBe(URL);
    expect(link.target).toBe('_blank');
    expect(link.rel).toContain('noopener');

    const noClient = { ...onDask, dashboard: undefined };
    model.handleMessage(update([fn('a', 'f', 5, { signatures: [noClient] })]));
    panel.render();
    expect(panel.node.querySelector('.jp-kx-dashboard')).toBe(link); // updated in place
    expect(link.hidden).toBe(true);
    expect(link.hasAttribute('href')).toBe(false);
  });

  it('never links an address that is not http(s)', () => {
    const { model, panel } = connectedPanel();
    const bad = signature('1', 'x: dask float32[8]', {
      backend: 'dask · 3 tasks',
      dashboard: 'javascript:alert(1)'
    });
    model.handleMessage(snapshot(fn('a', 'f', 5, { signatures: [bad] })));
    panel.render();
    const link =
      panel.node.querySelector<HTMLAnchorElement>('.jp-kx-dashboard')!;
    expect(link.hidden).toBe(true);
    expect(link.hasAttribute('href')).toBe(false);
  });
});
