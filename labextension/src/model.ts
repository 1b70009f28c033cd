/**
 * The sidebar's state: the traced functions of one kernel, the search filter,
 * the selected signature and the graphs received for it.
 *
 * The model is the only consumer of kernel messages: it validates them
 * (protocol.ts) and ignores malformed ones with a warning, so a buggy or
 * hostile kernel message can never reach the view with the wrong shape.
 */

import { ISignal, Signal } from '@lumino/signaling';

import type { IConnectionStatus, ILogger } from './comm';
import {
  IFunctionInfo,
  IGraphPayload,
  KernelMessage,
  parseKernelMessage,
  PROTOCOL_VERSION
} from './protocol';

/** The signature whose graph the user asked for. */
export interface ISelection {
  functionId: string;
  signatureId: string;
}

/** What the graph area shows for the selection. */
export type GraphState =
  | { kind: 'none' }
  | { kind: 'loading' }
  | { kind: 'ready'; graph: IGraphPayload }
  | { kind: 'error'; message: string };

/** The latest export of a function asked for in this sidebar. */
export type ExportState =
  | { kind: 'pending'; format: string; path: string }
  | { kind: 'done' | 'failed'; format: string; path: string; message: string };

export class InspectorModel {
  constructor(options: InspectorModel.IOptions = {}) {
    this._log = options.logger ?? console;
  }

  /** Emitted after any state change; the view re-renders from the getters. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get connection(): IConnectionStatus {
    return this._connection;
  }

  /**
   * Set by the bridge.  Leaving `connected` forgets the kernel's functions:
   * after a restart or a kernel switch they no longer exist, and a fresh
   * snapshot follows the next connection.
   */
  setConnection(status: IConnectionStatus): void {
    const wasConnected = this._connection.state === 'connected';
    this._connection = status;
    if (status.state !== 'connected' || !wasConnected) {
      this._functions.clear();
      this._graphs.clear();
      this._exports.clear();
      this._selection = null;
      this._incompatible = null;
      this._kernelError = null;
    }
    this._changed.emit();
  }

  /** Set when the kernel speaks another protocol version (a message was dropped). */
  get incompatibleVersion(): number | null {
    return this._incompatible;
  }

  /** The latest `error` message from the kernel not tied to the selection. */
  get kernelError(): string | null {
    return this._kernelError;
  }

  get filter(): string {
    return this._filter;
  }

  set filter(value: string) {
    if (value === this._filter) {
      return;
    }
    this._filter = value;
    this._changed.emit();
  }

  /** All functions, most expensive first (ties by name, then id, for stability). */
  get functions(): IFunctionInfo[] {
    return [...this._functions.values()].sort(compareByCost);
  }

  /** The functions matching the filter (case-insensitive, name or cell). */
  get visibleFunctions(): IFunctionInfo[] {
    const needle = this._filter.trim().toLowerCase();
    const all = this.functions;
    if (!needle) {
      return all;
    }
    return all.filter(
      fn =>
        fn.name.toLowerCase().includes(needle) ||
        (fn.cell ?? '').toLowerCase().includes(needle)
    );
  }

  getFunction(id: string): IFunctionInfo | undefined {
    return this._functions.get(id);
  }

  get selection(): ISelection | null {
    return this._selection;
  }

  /** The graph area's state for the current selection. */
  get graphState(): GraphState {
    const sel = this._selection;
    if (!sel) {
      return { kind: 'none' };
    }
    return this._graphs.get(graphKey(sel)) ?? { kind: 'loading' };
  }

  /**
   * Select a signature (or clear with null).  Returns true when its graph is
   * not known yet and must be requested from the kernel.
   */
  select(selection: ISelection | null): boolean {
    if (selection && !this._hasSignature(selection)) {
      return false;
    }
    const same =
      selection !== null &&
      this._selection !== null &&
      graphKey(selection) === graphKey(this._selection);
    let request = false;
    if (selection) {
      const key = graphKey(selection);
      const known = this._graphs.get(key);
      if (known?.kind === 'error') {
        // Selecting a failed graph (again) retries: the kernel may have
        // recovered since.
        this._graphs.delete(key);
        request = true;
      } else {
        request = known === undefined && !same;
      }
    }
    if (same && !request) {
      return false;
    }
    this._selection = selection;
    this._changed.emit();
    return request;
  }

  /** The latest export of a function (null: none asked for since connecting). */
  exportState(functionId: string): ExportState | null {
    return this._exports.get(functionId) ?? null;
  }

  /** An export request was sent: the card shows it as pending until the answer. */
  startExport(functionId: string, format: string, path: string): void {
    this._exports.set(functionId, { kind: 'pending', format, path });
    this._changed.emit();
  }

  /** Record that an export request could not be sent (e.g. disconnected). */
  failExport(functionId: string, message: string): void {
    const known = this._exports.get(functionId);
    this._exports.set(functionId, {
      kind: 'failed',
      format: known?.format ?? '',
      path: known?.path ?? '',
      message
    });
    this._changed.emit();
  }

  /** Record that a graph request could not be sent (e.g. disconnected). */
  failGraph(selection: ISelection, message: string): void {
    this._graphs.set(graphKey(selection), { kind: 'error', message });
    this._changed.emit();
  }

  /**
   * Apply the `data` of one comm message.  Returns false when it was ignored
   * (malformed, unknown type or another protocol version).
   */
  handleMessage(data: unknown): boolean {
    const parsed = parseKernelMessage(data);
    if (parsed.kind === 'version') {
      this._log.warn(
        `kernel_ext inspector: ignoring a protocol v${parsed.version} message (sidebar speaks v${PROTOCOL_VERSION})`
      );
      if (this._incompatible !== parsed.version) {
        this._incompatible = parsed.version;
        this._changed.emit();
      }
      return false;
    }
    if (parsed.kind === 'invalid') {
      this._log.warn(
        `kernel_ext inspector: ignoring message: ${parsed.reason}`
      );
      return false;
    }
    this._apply(parsed.message);
    this._changed.emit();
    return true;
  }

  // ------------------------------------------------------------ internals

  private _apply(message: KernelMessage): void {
    switch (message.type) {
      case 'snapshot':
        this._functions.clear();
        this._incompatible = null;
        message.functions.forEach(fn => this._functions.set(fn.id, fn));
        this._pruneGraphs();
        break;
      case 'update':
        message.removed.forEach(id => this._functions.delete(id));
        message.functions.forEach(fn => this._functions.set(fn.id, fn));
        this._pruneGraphs();
        break;
      case 'graph': {
        const key = graphKey({
          functionId: message.function,
          signatureId: message.signature
        });
        this._graphs.set(key, { kind: 'ready', graph: message.graph });
        break;
      }
      case 'export':
        this._exports.set(message.function, {
          kind: message.ok ? 'done' : 'failed',
          format: message.format,
          path: message.path,
          message: message.message
        });
        break;
      case 'error':
        // An error answers the pending graph request if there is one: the
        // protocol has no request ids, and graph requests are the only
        // requests that can fail.
        if (this._selection && this.graphState.kind === 'loading') {
          this._graphs.set(graphKey(this._selection), {
            kind: 'error',
            message: message.message
          });
        } else {
          this._kernelError = message.message;
        }
        break;
    }
  }

  /** Drop graphs and the selection of signatures that no longer exist. */
  private _pruneGraphs(): void {
    for (const key of [...this._graphs.keys()]) {
      const [functionId, signatureId] = JSON.parse(key) as [string, string];
      if (!this._hasSignature({ functionId, signatureId })) {
        this._graphs.delete(key);
      }
    }
    if (this._selection && !this._hasSignature(this._selection)) {
      this._selection = null;
    }
  }

  private _hasSignature(sel: ISelection): boolean {
    const fn = this._functions.get(sel.functionId);
    return (
      fn !== undefined && fn.signatures.some(s => s.id === sel.signatureId)
    );
  }

  private _changed = new Signal<this, void>(this);
  private _connection: IConnectionStatus = { state: 'no-notebook' };
  private _filter = '';
  private _functions = new Map<string, IFunctionInfo>();
  private _exports = new Map<string, ExportState>();
  private _graphs = new Map<string, GraphState>();
  private _incompatible: number | null = null;
  private _kernelError: string | null = null;
  private _log: ILogger;
  private _selection: ISelection | null = null;
}

export namespace InspectorModel {
  export interface IOptions {
    logger?: ILogger;
  }
}

/** Unambiguous map key for a (function, signature) pair. */
function graphKey(sel: ISelection): string {
  return JSON.stringify([sel.functionId, sel.signatureId]);
}

function compareByCost(a: IFunctionInfo, b: IFunctionInfo): number {
  return (
    b.cost_ms - a.cost_ms ||
    a.name.localeCompare(b.name) ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}
