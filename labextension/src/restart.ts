/**
 * After a kernel restart, the monitors under a notebook's cells say so.
 *
 * A monitor (kernel_ext/jupyter/monitor.py) is an ipywidgets view, or its
 * static HTML snapshot; either carries the CSS class `kx-monitor`.  When its
 * kernel restarts, the widget models die with the kernel and the view keeps
 * showing its last counters next to broken-link icons, as if they were live.
 * The kernel cannot say anything any more, so the lab does: it watches the
 * notebook's session and, when the kernel restarts (or is replaced), puts a
 * banner above every monitor shown at that moment.  Monitors made after the
 * restart are live and unmarked; re-running a cell replaces its output and
 * the banner with it.
 */

import { IDisposable } from '@lumino/disposable';
import { ISignal } from '@lumino/signaling';

/** The monitor's outer element carries this class (monitor.py). */
export const MONITOR_CLASS = 'kx-monitor';
/** Added to a monitor shown before a restart. */
export const STALE_CLASS = 'jp-kx-monitor-stale';
export const BANNER_CLASS = 'jp-kx-restart-banner';
export const BANNER_TEXT =
  'Kernel restarted: these counters are from before the restart; re-run the cell.';

/** Kernel statuses that end the kernel the monitors talked to. */
const ENDED: ReadonlySet<string> = new Set([
  'restarting',
  'autorestarting',
  'dead'
]);

/** The parts of a notebook's session context the marker follows. */
export interface IRestartSource {
  readonly statusChanged: ISignal<unknown, string>;
  readonly kernelChanged: ISignal<unknown, unknown>;
}

/**
 * Mark every monitor under *root* that is not marked yet: a class on the
 * monitor and a banner just above it.  Returns how many were marked.
 */
export function markStaleMonitors(root: ParentNode): number {
  let marked = 0;
  root.querySelectorAll(`.${MONITOR_CLASS}`).forEach(monitor => {
    // A snapshot's HTML inside a widget view is one monitor, marked once.
    if (
      monitor.classList.contains(STALE_CLASS) ||
      monitor.parentElement?.closest(`.${STALE_CLASS}`)
    ) {
      return;
    }
    monitor.classList.add(STALE_CLASS);
    const banner = document.createElement('div');
    banner.className = BANNER_CLASS;
    banner.setAttribute('role', 'status');
    banner.textContent = BANNER_TEXT;
    monitor.parentNode?.insertBefore(banner, monitor);
    marked++;
  });
  return marked;
}

/** Watches one notebook's session and marks its monitors on restarts. */
export class RestartMarker implements IDisposable {
  constructor(
    private readonly _root: ParentNode,
    private readonly _source: IRestartSource
  ) {
    _source.statusChanged.connect(this._onStatus, this);
    _source.kernelChanged.connect(this._onKernelChanged, this);
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._source.statusChanged.disconnect(this._onStatus, this);
    this._source.kernelChanged.disconnect(this._onKernelChanged, this);
  }

  private _onStatus(_: unknown, status: string): void {
    if (ENDED.has(status)) {
      markStaleMonitors(this._root);
    }
  }

  private _onKernelChanged(): void {
    // Another kernel (or none): the monitors' kernel is gone from this view.
    markStaleMonitors(this._root);
  }

  private _isDisposed = false;
}
