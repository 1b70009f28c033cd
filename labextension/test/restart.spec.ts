/**
 * Monitors shown before a kernel restart get a banner (issue 17, item 3).
 */
import { Signal } from '@lumino/signaling';

import {
  BANNER_CLASS,
  BANNER_TEXT,
  markStaleMonitors,
  RestartMarker,
  STALE_CLASS
} from '../src/restart';

class FakeContext {
  statusChanged = new Signal<this, string>(this);
  kernelChanged = new Signal<this, unknown>(this);
}

function monitor(root: HTMLElement): HTMLElement {
  const output = document.createElement('div');
  output.className = 'jp-OutputArea-output';
  const el = document.createElement('div');
  el.className = 'kx-monitor';
  el.textContent = 'calls 3';
  output.appendChild(el);
  root.appendChild(output);
  return el;
}

describe('RestartMarker', () => {
  it('marks the monitors shown when the kernel restarts, not later ones', () => {
    const root = document.createElement('div');
    const context = new FakeContext();
    const marker = new RestartMarker(root, context);
    const old = monitor(root);
    context.statusChanged.emit('busy');
    context.statusChanged.emit('idle');
    expect(root.querySelector(`.${BANNER_CLASS}`)).toBeNull();

    context.statusChanged.emit('restarting');
    expect(old.classList.contains(STALE_CLASS)).toBe(true);
    const banner = old.previousElementSibling!;
    expect(banner.className).toBe(BANNER_CLASS);
    expect(banner.textContent).toBe(BANNER_TEXT);
    expect(banner.getAttribute('role')).toBe('status');

    // A monitor made after the restart is live: no banner, and the old one
    // keeps exactly one.
    const fresh = monitor(root);
    context.statusChanged.emit('idle');
    expect(fresh.classList.contains(STALE_CLASS)).toBe(false);
    context.statusChanged.emit('autorestarting');
    expect(root.querySelectorAll(`.${BANNER_CLASS}`)).toHaveLength(2);
    marker.dispose();
    monitor(root);
    context.statusChanged.emit('restarting');
    expect(root.querySelectorAll(`.${BANNER_CLASS}`)).toHaveLength(2);
  });

  it('marks them when the notebook switches kernels', () => {
    const root = document.createElement('div');
    const context = new FakeContext();
    new RestartMarker(root, context);
    const old = monitor(root);
    context.kernelChanged.emit(null);
    expect(old.classList.contains(STALE_CLASS)).toBe(true);
  });

  it('marks a snapshot nested in a widget view once', () => {
    const root = document.createElement('div');
    const outer = monitor(root);
    const inner = document.createElement('div');
    inner.className = 'kx-monitor';
    outer.appendChild(inner);
    expect(markStaleMonitors(root)).toBe(1);
  });
});
