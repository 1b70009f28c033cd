/**
 * The comm bridge: finds the `kernel_ext.inspector` target in a notebook's
 * kernel, opens a comm to it, forwards what the kernel sends, and reconnects
 * on its own when the kernel changes or restarts.
 *
 * Discovery (see docs/protocol.md "Connecting"): a kernel comm target cannot
 * be queried directly — `comm_info_request` lists open *comms*, not registered
 * targets.  So `%load_ext kernel_ext` opens one comm of its own towards the
 * lab (the "announcement") and keeps it open; `requestCommInfo` then lists it
 * for any sidebar that connects later (page reload, notebook switch), and a
 * sidebar already waiting is told by the announcement's `comm_open` itself.
 * Without a listed comm the sidebar never opens one, so a kernel without the
 * extension sees no traffic at all.
 *
 * The bridge only transports: it forwards the raw `data` of every comm message
 * and leaves validation to the model (protocol.ts).
 */

import type { Kernel, KernelMessage } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { COMM_TARGET, FrontendMessage, requestSnapshot } from './protocol';

/** The parts of a kernel connection the bridge uses (easy to fake in tests). */
export type InspectorKernel = Pick<
  Kernel.IKernelConnection,
  | 'id'
  | 'status'
  | 'statusChanged'
  | 'isDisposed'
  | 'handleComms'
  | 'requestCommInfo'
  | 'createComm'
  | 'registerCommTarget'
  | 'removeCommTarget'
>;

/** The parts of a notebook's session context the bridge follows. */
export interface ISessionSource {
  readonly session: { readonly kernel: InspectorKernel | null } | null;
  readonly kernelChanged: ISignal<unknown, unknown>;
}

/**
 * Where the bridge stands.
 * - `no-notebook`: nothing to follow; `no-kernel`: the notebook has no kernel.
 * - `connecting`: asking the kernel / opening the comm.
 * - `not-loaded`: the kernel has no `kernel_ext.inspector` comm (the user has
 *   not run `%load_ext kernel_ext`), or it closed ours before any message.
 * - `connected`: our comm is open.
 * - `restarting`: the kernel is restarting; we reconnect once it is idle.
 * - `error`: comms unsupported or a request failed; `detail` says why.
 */
export type ConnectionState =
  | 'no-notebook'
  | 'no-kernel'
  | 'connecting'
  | 'not-loaded'
  | 'connected'
  | 'restarting'
  | 'error';

export interface IConnectionStatus {
  state: ConnectionState;
  detail?: string;
}

/** Minimal logger so tests can capture warnings instead of spamming output. */
export interface ILogger {
  warn(message: string, ...rest: unknown[]): void;
}

const RESTARTING: ReadonlySet<string> = new Set([
  'restarting',
  'autorestarting',
  'dead',
  'terminating'
]);

/**
 * Accepts the kernels' announcement comms (kernel -> lab `comm_open` on
 * `kernel_ext.inspector`) on every kernel connection it is asked to watch.
 *
 * Every notebook's kernel must be watched, not only the active one: a kernel
 * comm that reaches a connection with no handler for its target is closed by
 * JupyterLab, and a closed announcement would hide the extension from the
 * sidebar when the user switches to that notebook later.
 */
export class AnnouncementWatcher implements IDisposable {
  /** Emitted with the kernel connection that received an announcement. */
  get announced(): ISignal<this, InspectorKernel> {
    return this._announced;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Register the target on *kernel*; idempotent. */
  watch(kernel: InspectorKernel): void {
    if (this._isDisposed || kernel.isDisposed || !kernel.handleComms) {
      return;
    }
    if (this._watched.has(kernel)) {
      return;
    }
    const handler = (comm: Kernel.IComm): void => {
      // Keep the comm open: it is what makes the target visible to
      // requestCommInfo.  Its traffic is for whoever adopts it; the bridge
      // talks over a comm of its own, so messages here are dropped.
      comm.onMsg = () => undefined;
      this._announced.emit(kernel);
    };
    // JupyterLab keeps one handler per target name and connection, and keeps
    // it across restarts of that connection's kernel.
    kernel.registerCommTarget(COMM_TARGET, handler);
    this._watched.add(kernel);
  }

  /**
   * Stop reporting.  The handlers stay registered on their connections (they
   * only keep announcement comms open), as JupyterLab offers no way to list
   * them for removal from a weak set.
   */
  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    Signal.clearData(this);
  }

  private _announced = new Signal<this, InspectorKernel>(this);
  private _isDisposed = false;
  // Weak: a disposed kernel connection must not be kept alive by the watcher.
  private _watched = new WeakSet<InspectorKernel>();
}

/**
 * Connects the sidebar to the inspector of one notebook's kernel at a time.
 */
export class InspectorBridge implements IDisposable {
  constructor(options: InspectorBridge.IOptions = {}) {
    this._watcher = options.watcher ?? new AnnouncementWatcher();
    this._ownsWatcher = options.watcher === undefined;
    this._log = options.logger ?? console;
    this._watcher.announced.connect(this._onAnnounced, this);
  }

  /** Raw `data` of every message the kernel sends on our comm. */
  get messageReceived(): ISignal<this, unknown> {
    return this._messageReceived;
  }

  get statusChanged(): ISignal<this, IConnectionStatus> {
    return this._statusChanged;
  }

  get status(): IConnectionStatus {
    return this._status;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Follow *source* (a notebook's session context), or nothing. */
  attach(source: ISessionSource | null): void {
    if (source === this._source) {
      return;
    }
    this._source?.kernelChanged.disconnect(this._onKernelChanged, this);
    this._source = source;
    source?.kernelChanged.connect(this._onKernelChanged, this);
    this._setKernel(source?.session?.kernel ?? null);
  }

  /**
   * Send a request over the open comm.  Returns false when not connected
   * (the caller shows the connection state instead).
   */
  send(message: FrontendMessage): boolean {
    const comm = this._comm;
    if (!comm || comm.isDisposed || this._status.state !== 'connected') {
      return false;
    }
    try {
      // Our interfaces are JSON but lack JSONObject's index signature.
      comm.send(
        message as unknown as KernelMessage.ICommMsgMsg['content']['data']
      );
      return true;
    } catch (reason) {
      this._log.warn('kernel_ext inspector: send failed', reason);
      return false;
    }
  }

  /** Ask the kernel again whether the inspector is there (e.g. a "retry"). */
  refresh(): void {
    if (this._kernel && this._status.state !== 'connected') {
      void this._connect();
    }
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this.attach(null);
    this._isDisposed = true;
    if (this._ownsWatcher) {
      this._watcher.dispose();
    }
    Signal.clearData(this);
  }

  // ------------------------------------------------------------ internals

  private _onKernelChanged(): void {
    this._setKernel(this._source?.session?.kernel ?? null);
  }

  private _setKernel(kernel: InspectorKernel | null): void {
    // With no kernel, still refresh the state: the source may have changed
    // from nothing to a kernel-less notebook.
    if (kernel !== null && kernel === this._kernel) {
      return;
    }
    this._closeComm();
    this._kernel?.statusChanged.disconnect(this._onStatus, this);
    this._kernel = kernel;
    if (!kernel) {
      this._setStatus({
        state: this._source ? 'no-kernel' : 'no-notebook'
      });
      return;
    }
    kernel.statusChanged.connect(this._onStatus, this);
    this._watcher.watch(kernel);
    if (RESTARTING.has(kernel.status)) {
      this._setStatus({ state: 'restarting' });
    } else {
      void this._connect();
    }
  }

  private _onStatus(kernel: InspectorKernel, status: string): void {
    if (kernel !== this._kernel) {
      return;
    }
    if (RESTARTING.has(status)) {
      // The kernel's comms die with it; JupyterLab disposes ours.
      this._generation++;
      this._comm = null;
      this._setStatus({ state: 'restarting' });
    } else if (status === 'idle' && this._status.state === 'restarting') {
      void this._connect();
    }
  }

  private _onAnnounced(_: AnnouncementWatcher, kernel: InspectorKernel): void {
    if (kernel !== this._kernel || this._status.state === 'connected') {
      return;
    }
    void this._connect();
  }

  /**
   * Check for the target and open our comm.  Each call takes a new generation
   * number; a result that arrives after a newer call (or a kernel change) is
   * dropped, so overlapping calls cannot open two comms.
   */
  private async _connect(): Promise<void> {
    const kernel = this._kernel;
    if (!kernel || this._isDisposed) {
      return;
    }
    const generation = ++this._generation;
    this._closeComm();
    if (!kernel.handleComms) {
      this._setStatus({
        state: 'error',
        detail: 'this kernel connection does not handle comms'
      });
      return;
    }
    this._setStatus({ state: 'connecting' });

    let present: boolean;
    try {
      const reply = await kernel.requestCommInfo({ target_name: COMM_TARGET });
      const content = reply.content;
      present =
        content.status === 'ok' &&
        Object.values(content.comms).some(c => c.target_name === COMM_TARGET);
    } catch (reason) {
      if (generation === this._generation) {
        this._log.warn(
          'kernel_ext inspector: comm_info_request failed',
          reason
        );
        this._setStatus({
          state: 'error',
          detail: 'the kernel did not answer comm_info_request'
        });
      }
      return;
    }
    if (generation !== this._generation || kernel !== this._kernel) {
      return;
    }
    if (!present) {
      this._setStatus({ state: 'not-loaded' });
      return;
    }
    this._openComm(kernel, generation);
  }

  private _openComm(kernel: InspectorKernel, generation: number): void {
    let comm: Kernel.IComm;
    try {
      comm = kernel.createComm(COMM_TARGET);
    } catch (reason) {
      this._log.warn('kernel_ext inspector: cannot create comm', reason);
      this._setStatus({ state: 'error', detail: String(reason) });
      return;
    }
    let received = false;
    comm.onMsg = msg => {
      if (generation !== this._generation) {
        return;
      }
      received = true;
      this._messageReceived.emit(msg.content.data);
    };
    comm.onClose = () => {
      if (generation !== this._generation || this._comm !== comm) {
        return;
      }
      this._comm = null;
      if (received) {
        // The kernel dropped a working comm (e.g. `%reload_ext`): look again.
        void this._connect();
      } else {
        // Closed before saying anything: the target refused us.  Wait for an
        // announcement or a restart instead of retrying in a loop.
        this._setStatus({ state: 'not-loaded' });
      }
    };
    this._comm = comm;
    // The open carries the first request, so the kernel answers with a
    // snapshot without a second round trip.
    comm.open(
      requestSnapshot() as unknown as KernelMessage.ICommOpenMsg['content']['data']
    );
    this._setStatus({ state: 'connected' });
  }

  private _closeComm(): void {
    const comm = this._comm;
    this._comm = null;
    if (!comm || comm.isDisposed) {
      return;
    }
    // Tell the kernel to forget this comm, unless the kernel is gone anyway.
    try {
      if (this._kernel && !this._kernel.isDisposed) {
        comm.close();
      } else {
        comm.dispose();
      }
    } catch {
      comm.dispose();
    }
  }

  private _setStatus(status: IConnectionStatus): void {
    const old = this._status;
    if (old.state === status.state && old.detail === status.detail) {
      return;
    }
    this._status = status;
    this._statusChanged.emit(status);
  }

  private _comm: Kernel.IComm | null = null;
  private _generation = 0;
  private _isDisposed = false;
  private _kernel: InspectorKernel | null = null;
  private _log: ILogger;
  private _messageReceived = new Signal<this, unknown>(this);
  private _ownsWatcher: boolean;
  private _source: ISessionSource | null = null;
  private _status: IConnectionStatus = { state: 'no-notebook' };
  private _statusChanged = new Signal<this, IConnectionStatus>(this);
  private _watcher: AnnouncementWatcher;
}

export namespace InspectorBridge {
  export interface IOptions {
    /** Shared watcher of announcement comms (index.ts watches every notebook). */
    watcher?: AnnouncementWatcher;
    logger?: ILogger;
  }
}
