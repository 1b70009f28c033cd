import { InspectorBridge } from '../src/comm';
import { InspectorModel } from '../src/model';
import {
  CapturingLogger,
  FakeKernel,
  FakeSession,
  flush,
  fn,
  graphMessage,
  signature,
  snapshot,
  update
} from './fixtures';

function connectedModel(): { model: InspectorModel; log: CapturingLogger } {
  const log = new CapturingLogger();
  const model = new InspectorModel({ logger: log });
  model.setConnection({ state: 'connected' });
  return { model, log };
}

const names = (model: InspectorModel): string[] =>
  model.visibleFunctions.map(f => f.name);

describe('InspectorModel', () => {
  it('orders functions by cost, most expensive first, ties by name', () => {
    const { model } = connectedModel();
    model.handleMessage(
      snapshot(fn('a', 'cheap', 1), fn('b', 'costly', 50), fn('c', 'alpha', 1))
    );
    expect(names(model)).toEqual(['costly', 'alpha', 'cheap']);
  });

  it('filters by name or cell, case-insensitively', () => {
    const { model } = connectedModel();
    model.handleMessage(
      snapshot(
        fn('a', 'Dense_Layer', 5, { cell: '[1]' }),
        fn('b', 'loss', 3, { cell: '[7]' })
      )
    );
    model.filter = 'dense';
    expect(names(model)).toEqual(['Dense_Layer']);
    model.filter = '[7]';
    expect(names(model)).toEqual(['loss']);
    model.filter = '  ';
    expect(names(model)).toEqual(['Dense_Layer', 'loss']);
  });

  it('applies updates: replaces changed functions, adds new ones, removes gone ones', () => {
    const { model } = connectedModel();
    model.handleMessage(snapshot(fn('a', 'f', 1), fn('b', 'g', 2)));
    const changed = fn('a', 'f', 10);
    changed.counters.calls = 99;
    model.handleMessage(update([changed, fn('c', 'h', 5)], ['b']));
    expect(names(model)).toEqual(['f', 'h']);
    expect(model.getFunction('a')?.counters.calls).toBe(99);
    expect(model.getFunction('b')).toBeUndefined();
  });

  it('keeps which signature the last call used', () => {
    const { model } = connectedModel();
    model.handleMessage(snapshot(fn('a', 'f', 1)));
    const lastUsed = () =>
      model
        .getFunction('a')!
        .signatures.filter(s => s.last_used)
        .map(s => s.id);
    expect(lastUsed()).toEqual(['1']);
    model.handleMessage(
      update([
        fn('a', 'f', 1, {
          signatures: [
            signature('0', 'x: float32[2]', { last_used: true }),
            signature('1', 'x: float32[3]')
          ]
        })
      ])
    );
    expect(lastUsed()).toEqual(['0']);
  });

  it('a snapshot replaces everything', () => {
    const { model } = connectedModel();
    model.handleMessage(snapshot(fn('a', 'f', 1)));
    model.handleMessage(snapshot(fn('b', 'g', 1)));
    expect(names(model)).toEqual(['g']);
  });

  it('ignores malformed messages with a warning and keeps its state', () => {
    const { model, log } = connectedModel();
    model.handleMessage(snapshot(fn('a', 'f', 1)));
    let emitted = 0;
    model.changed.connect(() => emitted++);
    expect(model.handleMessage({ type: 'update', protocol_version: 1 })).toBe(
      false
    );
    expect(model.handleMessage('<script>')).toBe(false);
    expect(
      model.handleMessage({ type: 'execute', protocol_version: 1, code: 'x' })
    ).toBe(false);
    expect(names(model)).toEqual(['f']);
    expect(emitted).toBe(0);
    expect(log.messages).toHaveLength(3);
    expect(log.messages[0]).toMatch(/ignoring message: malformed update/);
  });

  it('flags another protocol version instead of applying it', () => {
    const { model, log } = connectedModel();
    expect(
      model.handleMessage({
        type: 'snapshot',
        protocol_version: 2,
        functions: []
      })
    ).toBe(false);
    expect(model.incompatibleVersion).toBe(2);
    expect(log.messages[0]).toMatch(/protocol v2/);
  });

  it('forgets the kernel state when the connection drops', () => {
    const { model } = connectedModel();
    model.handleMessage(snapshot(fn('a', 'f', 1)));
    model.select({ functionId: 'a', signatureId: '0' });
    model.setConnection({ state: 'restarting' });
    expect(model.functions).toEqual([]);
    expect(model.selection).toBeNull();
  });

  describe('graph selection', () => {
    it('asks for a graph once, then serves it from the cache', () => {
      const { model } = connectedModel();
      model.handleMessage(snapshot(fn('a', 'f', 1)));
      const sel = { functionId: 'a', signatureId: '0' };
      expect(model.select(sel)).toBe(true);
      expect(model.graphState.kind).toBe('loading');
      expect(model.select(sel)).toBe(false);
      model.handleMessage(graphMessage('a', '0'));
      expect(model.graphState.kind).toBe('ready');
      model.select(null);
      expect(model.graphState.kind).toBe('none');
      expect(model.select(sel)).toBe(false);
      expect(model.graphState.kind).toBe('ready');
    });

    it('refuses to select a signature that does not exist', () => {
      const { model } = connectedModel();
      model.handleMessage(snapshot(fn('a', 'f', 1)));
      expect(model.select({ functionId: 'a', signatureId: '9' })).toBe(false);
      expect(model.selection).toBeNull();
    });

    it('turns a kernel error into the pending graph error; selecting again retries', () => {
      const { model } = connectedModel();
      model.handleMessage(snapshot(fn('a', 'f', 1)));
      const sel = { functionId: 'a', signatureId: '1' };
      model.select(sel);
      model.handleMessage({
        type: 'error',
        protocol_version: 1,
        message: 'graph gone'
      });
      expect(model.graphState).toEqual({
        kind: 'error',
        message: 'graph gone'
      });
      expect(model.kernelError).toBeNull();
      expect(model.select(sel)).toBe(true);
      expect(model.graphState.kind).toBe('loading');
    });

    it('shows a kernel error without a pending request as a notice', () => {
      const { model } = connectedModel();
      model.handleMessage({
        type: 'error',
        protocol_version: 1,
        message: 'oops'
      });
      expect(model.kernelError).toBe('oops');
    });

    it('drops the selection and cached graphs of removed functions', () => {
      const { model } = connectedModel();
      model.handleMessage(snapshot(fn('a', 'f', 1)));
      model.select({ functionId: 'a', signatureId: '0' });
      model.handleMessage(graphMessage('a', '0'));
      model.handleMessage(update([], ['a']));
      expect(model.selection).toBeNull();
      model.handleMessage(update([fn('a', 'f', 1)]));
      // The old graph is gone with the function: selecting asks again.
      expect(model.select({ functionId: 'a', signatureId: '0' })).toBe(true);
    });
  });

  it('works end to end with the bridge and a fake kernel', async () => {
    const log = new CapturingLogger();
    const kernel = new FakeKernel();
    kernel.loadExtension();
    const bridge = new InspectorBridge({ logger: log });
    const model = new InspectorModel({ logger: log });
    bridge.statusChanged.connect((_, s) => model.setConnection(s));
    bridge.messageReceived.connect((_, data) => model.handleMessage(data));
    bridge.attach(new FakeSession(kernel));
    await flush();
    expect(model.connection.state).toBe('connected');
    kernel.lastComm.deliver(snapshot(fn('a', 'f', 2), fn('b', 'g', 9)));
    kernel.lastComm.deliver({ bogus: true });
    kernel.lastComm.deliver(update([fn('a', 'f', 20)]));
    expect(names(model)).toEqual(['f', 'g']);
    expect(log.messages).toHaveLength(1);
    bridge.dispose();
  });
});
