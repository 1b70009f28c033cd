/**
 * Test doubles: protocol records, a fake kernel connection with fake comms
 * (just the surface comm.ts uses), a fake session and a capturing logger.
 */

import type { Kernel } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';

import type { InspectorKernel, ISessionSource, ILogger } from '../src/comm';
import { InspectorModel } from '../src/model';
import { InspectorPanel } from '../src/panel';
import {
  COMM_TARGET,
  IFunctionInfo,
  IGraphPayload,
  ISignatureInfo,
  PROTOCOL_VERSION
} from '../src/protocol';

export function signature(
  id: string,
  inputs: string,
  extra: Partial<ISignatureInfo> = {}
): ISignatureInfo {
  return {
    id,
    inputs,
    outputs: 'float32[2]',
    last_used: false,
    nodes_traced: 4,
    nodes_optimised: 2,
    backend: 'numpy',
    ...extra
  };
}

export function fn(
  id: string,
  name: string,
  cost_ms: number,
  extra: Partial<IFunctionInfo> = {}
): IFunctionInfo {
  return {
    id,
    name,
    cell: '[3]',
    counters: {
      calls: 10,
      traces: 2,
      cache_hits: 8,
      trace_ms: cost_ms * 0.8,
      compile_ms: cost_ms * 0.2,
      last_run_us: 41
    },
    signatures: [
      signature('0', 'x: float32[2]'),
      signature('1', 'x: float32[3]', { last_used: true })
    ],
    retraces: [
      {
        trace: 2,
        cause: 'shape',
        diffs: [{ argument: 'x', old: 'float32[2]', new: 'float32[3]' }],
        cost_ms: 3,
        fix: '%%tffunction --input-signature "x: float32[None]"',
        call_site: 'cell [4], line 1'
      }
    ],
    cost_ms,
    ...extra
  };
}

export function snapshot(...functions: IFunctionInfo[]): object {
  return { type: 'snapshot', protocol_version: PROTOCOL_VERSION, functions };
}

export function update(
  functions: IFunctionInfo[],
  removed: string[] = []
): object {
  return {
    type: 'update',
    protocol_version: PROTOCOL_VERSION,
    functions,
    removed
  };
}

export function graphMessage(
  functionId: string,
  signatureId: string,
  graph: IGraphPayload = smallGraph()
): object {
  return {
    type: 'graph',
    protocol_version: PROTOCOL_VERSION,
    function: functionId,
    signature: signatureId,
    graph
  };
}

export function smallGraph(): IGraphPayload {
  return {
    nodes: [
      {
        id: 'n0',
        op: 'placeholder',
        label: 'x',
        shape: '[2]',
        dtype: 'float32'
      },
      {
        id: 'n1',
        op: 'tanh',
        label: 'tanh',
        shape: '[2]',
        dtype: 'float32',
        segment: 's0'
      },
      {
        id: 'n2',
        op: 'mul',
        label: 'mul',
        shape: '[2]',
        dtype: 'float32',
        segment: 's0'
      },
      { id: 'n3', op: 'sum', label: 'sum', shape: '[]', dtype: 'float32' }
    ],
    edges: [
      { source: 'n0', target: 'n1' },
      { source: 'n1', target: 'n2' },
      { source: 'n0', target: 'n2' },
      { source: 'n2', target: 'n3' }
    ],
    segments: [
      { id: 's0', backend: 'numba_cpu', label: 'elementwise chain (2 ops)' }
    ]
  };
}

export class CapturingLogger implements ILogger {
  messages: string[] = [];
  warn(message: string): void {
    this.messages.push(message);
  }
}

/** A fake `Kernel.IComm`: records what is sent, lets the test deliver messages. */
export class FakeComm {
  constructor(
    readonly targetName: string,
    readonly commId: string,
    private readonly _owner: FakeKernel
  ) {}

  onMsg: (msg: { content: { data: unknown } }) => void = () => undefined;
  onClose: (msg: unknown) => void = () => undefined;
  opened: unknown[] = [];
  sent: unknown[] = [];
  closed = false;
  isDisposed = false;

  open(data: unknown): void {
    this.opened.push(data);
  }

  send(data: unknown): void {
    if (this.isDisposed) {
      throw new Error('Cannot send');
    }
    this.sent.push(data);
  }

  /** Closed by the lab: like JupyterLab, runs onClose and disposes. */
  close(): void {
    this.closed = true;
    this.onClose({});
    this.dispose();
  }

  dispose(): void {
    this.isDisposed = true;
    this._owner.openComms.delete(this.commId);
  }

  /** The kernel sends *data* on this comm. */
  deliver(data: unknown): void {
    this.onMsg({ content: { data } });
  }

  /** The kernel closes this comm. */
  closeFromKernel(): void {
    this.onClose({});
    this.dispose();
  }
}

/** A fake kernel connection with the surface InspectorKernel needs. */
export class FakeKernel {
  constructor(readonly id = 'kernel-1') {}

  status: Kernel.Status = 'idle';
  readonly statusChanged = new Signal<this, Kernel.Status>(this);
  isDisposed = false;
  handleComms = true;

  /** Comms the kernel reports in comm_info_reply (id -> target). */
  readonly kernelComms = new Map<string, string>();
  /** Comms created by the lab on this connection, by id. */
  readonly openComms = new Map<string, FakeComm>();
  readonly created: FakeComm[] = [];
  targets = new Map<string, (comm: FakeComm, msg: unknown) => void>();
  commInfoRequests = 0;
  failCommInfo = false;
  private _nextId = 0;

  /** Simulate `%load_ext kernel_ext`: the target exists and announces itself. */
  loadExtension(announce = true): FakeComm | null {
    const id = `announce-${++this._nextId}`;
    this.kernelComms.set(id, COMM_TARGET);
    if (!announce) {
      return null;
    }
    const comm = new FakeComm(COMM_TARGET, id, this);
    this.openComms.set(id, comm);
    this.targets.get(COMM_TARGET)?.(comm, {});
    return comm;
  }

  setStatus(status: Kernel.Status): void {
    this.status = status;
    if (status === 'restarting' || status === 'autorestarting') {
      // JupyterLab disposes every comm of a restarting kernel connection,
      // and the new kernel process has none.
      [...this.openComms.values()].forEach(c => c.dispose());
      this.kernelComms.clear();
    }
    this.statusChanged.emit(status);
  }

  async requestCommInfo(content: { target_name?: string }): Promise<unknown> {
    this.commInfoRequests++;
    await Promise.resolve();
    if (this.failCommInfo) {
      throw new Error('no reply');
    }
    const comms: Record<string, { target_name: string }> = {};
    for (const [id, target] of this.kernelComms) {
      if (content.target_name === undefined || content.target_name === target) {
        comms[id] = { target_name: target };
      }
    }
    return { content: { status: 'ok', comms } };
  }

  createComm(targetName: string, commId = `lab-${++this._nextId}`): FakeComm {
    const comm = new FakeComm(targetName, commId, this);
    this.created.push(comm);
    this.openComms.set(commId, comm);
    this.kernelComms.set(commId, targetName);
    return comm;
  }

  registerCommTarget(
    target: string,
    cb: (comm: FakeComm, msg: unknown) => void
  ): void {
    this.targets.set(target, cb);
  }

  removeCommTarget(target: string, cb: unknown): void {
    if (this.targets.get(target) === cb) {
      this.targets.delete(target);
    }
  }

  /** The fake, typed as what comm.ts accepts. */
  get asKernel(): InspectorKernel {
    return this as unknown as InspectorKernel;
  }

  /** The last comm the lab created. */
  get lastComm(): FakeComm {
    const comm = this.created[this.created.length - 1];
    if (!comm) {
      throw new Error('no comm created');
    }
    return comm;
  }
}

/** A fake notebook session context. */
export class FakeSession implements ISessionSource {
  constructor(kernel: FakeKernel | null) {
    this._kernel = kernel;
  }

  readonly kernelChanged = new Signal<this, unknown>(this);

  get session(): { kernel: InspectorKernel | null } {
    return { kernel: this._kernel?.asKernel ?? null };
  }

  changeKernel(kernel: FakeKernel | null): void {
    this._kernel = kernel;
    this.kernelChanged.emit(kernel);
  }

  private _kernel: FakeKernel | null;
}

/** Let pending promise callbacks run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await Promise.resolve();
  }
}

/** A panel on a connected model, attached to the document (tests remove it). */
export function connectedPanel(): {
  model: InspectorModel;
  panel: InspectorPanel;
} {
  const model = new InspectorModel({ logger: new CapturingLogger() });
  const panel = new InspectorPanel({
    model,
    requestGraph: () => undefined,
    exportFunction: () => undefined
  });
  document.body.appendChild(panel.node);
  model.setConnection({ state: 'connected' });
  return { model, panel };
}
