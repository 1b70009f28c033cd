import {
  AnnouncementWatcher,
  ConnectionState,
  InspectorBridge
} from '../src/comm';
import { COMM_TARGET, requestGraph, requestSnapshot } from '../src/protocol';
import { CapturingLogger, FakeKernel, FakeSession, flush } from './fixtures';

function makeBridge(): {
  bridge: InspectorBridge;
  states: ConnectionState[];
  received: unknown[];
  log: CapturingLogger;
} {
  const log = new CapturingLogger();
  const bridge = new InspectorBridge({ logger: log });
  const states: ConnectionState[] = [];
  const received: unknown[] = [];
  bridge.statusChanged.connect((_, s) => states.push(s.state));
  bridge.messageReceived.connect((_, data) => received.push(data));
  return { bridge, states, received, log };
}

describe('InspectorBridge', () => {
  afterEach(() => jest.restoreAllMocks());

  it('says no notebook / no kernel when there is nothing to follow', () => {
    const { bridge } = makeBridge();
    expect(bridge.status.state).toBe('no-notebook');
    bridge.attach(new FakeSession(null));
    expect(bridge.status.state).toBe('no-kernel');
    bridge.attach(null);
    expect(bridge.status.state).toBe('no-notebook');
  });

  it('reports not-loaded and opens no comm when the target is absent', async () => {
    const { bridge } = makeBridge();
    const kernel = new FakeKernel();
    bridge.attach(new FakeSession(kernel));
    await flush();
    expect(bridge.status.state).toBe('not-loaded');
    expect(kernel.created).toHaveLength(0);
    expect(kernel.commInfoRequests).toBe(1);
  });

  it('opens a comm with request_snapshot when the target is listed', async () => {
    const { bridge, states, received } = makeBridge();
    const kernel = new FakeKernel();
    kernel.loadExtension();
    bridge.attach(new FakeSession(kernel));
    await flush();
    expect(states).toEqual(['connecting', 'connected']);
    const comm = kernel.lastComm;
    expect(comm.targetName).toBe(COMM_TARGET);
    expect(comm.opened).toEqual([requestSnapshot()]);
    comm.deliver({ hello: 1 });
    expect(received).toEqual([{ hello: 1 }]);
    expect(bridge.send(requestGraph('f', '0'))).toBe(true);
    expect(comm.sent).toEqual([requestGraph('f', '0')]);
  });

  it('connects when the kernel announces the extension after the check', async () => {
    const { bridge } = makeBridge();
    const kernel = new FakeKernel();
    bridge.attach(new FakeSession(kernel));
    await flush();
    expect(bridge.status.state).toBe('not-loaded');
    const announcement = kernel.loadExtension();
    await flush();
    expect(bridge.status.state).toBe('connected');
    // The announcement stays open: it keeps the target visible to later checks.
    expect(announcement!.isDisposed).toBe(false);
    expect(kernel.created).toHaveLength(1);
  });

  it('reconnects on its own after a kernel restart', async () => {
    const { bridge, received } = makeBridge();
    const kernel = new FakeKernel();
    kernel.loadExtension();
    bridge.attach(new FakeSession(kernel));
    await flush();
    const before = kernel.lastComm;

    kernel.setStatus('restarting');
    expect(bridge.status.state).toBe('restarting');
    expect(bridge.send(requestSnapshot())).toBe(false);
    kernel.setStatus('starting');
    kernel.setStatus('idle');
    await flush();
    // The new kernel process has not loaded the extension yet.
    expect(bridge.status.state).toBe('not-loaded');

    kernel.loadExtension();
    await flush();
    expect(bridge.status.state).toBe('connected');
    expect(kernel.lastComm).not.toBe(before);
    kernel.lastComm.deliver('after restart');
    before.deliver('stale');
    expect(received).toEqual(['after restart']);
  });

  it('reconnects after a restart when the extension loads at startup', async () => {
    const { bridge } = makeBridge();
    const kernel = new FakeKernel();
    kernel.loadExtension();
    bridge.attach(new FakeSession(kernel));
    await flush();
    kernel.setStatus('restarting');
    kernel.loadExtension(); // e.g. c.InteractiveShellApp.extensions
    await flush();
    kernel.setStatus('idle');
    await flush();
    expect(bridge.status.state).toBe('connected');
    // One live comm, not one per trigger.
    expect(
      [...kernel.openComms.values()].filter(c => c.commId.startsWith('lab-'))
    ).toHaveLength(1);
  });

  it('follows kernelChanged and closes the comm to the old kernel', async () => {
    const { bridge } = makeBridge();
    const first = new FakeKernel('k1');
    first.loadExtension();
    const session = new FakeSession(first);
    bridge.attach(session);
    await flush();
    const oldComm = first.lastComm;

    const second = new FakeKernel('k2');
    second.loadExtension();
    session.changeKernel(second);
    await flush();
    expect(oldComm.closed).toBe(true);
    expect(bridge.status.state).toBe('connected');
    expect(second.created).toHaveLength(1);
  });

  it('switching notebooks while a check is in flight opens a single comm', async () => {
    const { bridge } = makeBridge();
    const a = new FakeKernel('a');
    a.loadExtension();
    const b = new FakeKernel('b');
    b.loadExtension();
    bridge.attach(new FakeSession(a));
    bridge.attach(new FakeSession(b)); // before a's reply arrives
    await flush();
    expect(a.created).toHaveLength(0);
    expect(b.created).toHaveLength(1);
  });

  it('a comm closed by the kernel before any message means not loaded (no retry loop)', async () => {
    const { bridge } = makeBridge();
    const kernel = new FakeKernel();
    kernel.loadExtension();
    bridge.attach(new FakeSession(kernel));
    await flush();
    kernel.lastComm.closeFromKernel();
    await flush();
    expect(bridge.status.state).toBe('not-loaded');
    expect(kernel.created).toHaveLength(1);
  });

  it('a working comm closed by the kernel is reopened', async () => {
    const { bridge } = makeBridge();
    const kernel = new FakeKernel();
    kernel.loadExtension();
    bridge.attach(new FakeSession(kernel));
    await flush();
    kernel.lastComm.deliver({ any: 1 });
    kernel.lastComm.closeFromKernel();
    await flush();
    expect(kernel.created).toHaveLength(2);
    expect(bridge.status.state).toBe('connected');
  });

  it('reports an error when comm_info_request fails, and retries on refresh', async () => {
    const { bridge, log } = makeBridge();
    const kernel = new FakeKernel();
    kernel.loadExtension();
    kernel.failCommInfo = true;
    bridge.attach(new FakeSession(kernel));
    await flush();
    expect(bridge.status.state).toBe('error');
    expect(log.messages).toHaveLength(1);
    kernel.failCommInfo = false;
    bridge.refresh();
    await flush();
    expect(bridge.status.state).toBe('connected');
  });

  it('reports an error when the connection does not handle comms', async () => {
    const { bridge } = makeBridge();
    const kernel = new FakeKernel();
    kernel.handleComms = false;
    bridge.attach(new FakeSession(kernel));
    await flush();
    expect(bridge.status).toEqual({
      state: 'error',
      detail: 'this kernel connection does not handle comms'
    });
  });

  it('closes its comm on dispose', async () => {
    const { bridge } = makeBridge();
    const kernel = new FakeKernel();
    kernel.loadExtension();
    bridge.attach(new FakeSession(kernel));
    await flush();
    const comm = kernel.lastComm;
    bridge.dispose();
    expect(comm.closed).toBe(true);
    expect(bridge.isDisposed).toBe(true);
  });
});

describe('AnnouncementWatcher', () => {
  it('registers the target once per kernel and reports announcements', () => {
    const watcher = new AnnouncementWatcher();
    const kernel = new FakeKernel();
    const seen: unknown[] = [];
    watcher.announced.connect((_, k) => seen.push(k));
    watcher.watch(kernel.asKernel);
    const handler = kernel.targets.get(COMM_TARGET);
    watcher.watch(kernel.asKernel);
    expect(kernel.targets.get(COMM_TARGET)).toBe(handler);
    kernel.loadExtension();
    expect(seen).toEqual([kernel]);
  });

  it('a kernel watched for another notebook connects when that notebook is shown', async () => {
    const watcher = new AnnouncementWatcher();
    const bridge = new InspectorBridge({
      watcher,
      logger: new CapturingLogger()
    });
    const background = new FakeKernel('bg');
    watcher.watch(background.asKernel);
    const announcement = background.loadExtension();
    // Accepted although no bridge follows that kernel: the comm stays open.
    expect(announcement!.isDisposed).toBe(false);
    bridge.attach(new FakeSession(background));
    await flush();
    expect(bridge.status.state).toBe('connected');
  });
});
