import {
  isCounters,
  isFunctionInfo,
  isGraphPayload,
  isKernelMessage,
  parseKernelMessage,
  PROTOCOL_VERSION,
  requestGraph,
  requestSnapshot
} from '../src/protocol';
import { fn, graphMessage, smallGraph, snapshot, update } from './fixtures';

/** A deep copy to mutate. */
function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

describe('protocol builders', () => {
  it('builds requests carrying the protocol version', () => {
    expect(requestSnapshot()).toEqual({
      type: 'request_snapshot',
      protocol_version: PROTOCOL_VERSION
    });
    expect(requestGraph('f1', '0')).toEqual({
      type: 'request_graph',
      protocol_version: PROTOCOL_VERSION,
      function: 'f1',
      signature: '0'
    });
  });
});

describe('parseKernelMessage', () => {
  it.each([
    ['snapshot', snapshot(fn('f1', 'f', 1))],
    ['empty snapshot', snapshot()],
    ['update', update([fn('f1', 'f', 1)], ['gone'])],
    ['graph', graphMessage('f1', '0')],
    [
      'error',
      { type: 'error', protocol_version: 1, message: 'no such signature' }
    ]
  ])('accepts a valid %s', (_, message) => {
    expect(parseKernelMessage(message)).toEqual({ kind: 'ok', message });
    expect(isKernelMessage(message)).toBe(true);
  });

  it('accepts unknown extra fields (additive changes keep the version)', () => {
    const message = copy(snapshot(fn('f1', 'f', 1))) as any;
    message.functions[0].future = { anything: [1, 2] };
    message.extra = true;
    expect(parseKernelMessage(message).kind).toBe('ok');
  });

  it('reports another protocol version before looking at the shape', () => {
    expect(
      parseKernelMessage({ type: 'whatever', protocol_version: 2 })
    ).toEqual({
      kind: 'version',
      version: 2
    });
  });

  const malformed: [string, unknown][] = [
    ['null', null],
    ['a string', 'snapshot'],
    ['an array', [snapshot()]],
    ['no version', { type: 'snapshot', functions: [] }],
    [
      'a string version',
      { type: 'snapshot', protocol_version: '1', functions: [] }
    ],
    ['an unknown type', { type: 'request_graph', protocol_version: 1 }],
    ['a missing field', { type: 'update', protocol_version: 1, functions: [] }],
    [
      'a non-string name',
      (() => {
        const m = copy(snapshot(fn('f1', 'f', 1))) as any;
        m.functions[0].name = { toString: 'x' };
        return m;
      })()
    ],
    [
      'a fractional counter',
      (() => {
        const m = copy(snapshot(fn('f1', 'f', 1))) as any;
        m.functions[0].counters.calls = 1.5;
        return m;
      })()
    ],
    [
      'a string last_used',
      (() => {
        const m = copy(snapshot(fn('f1', 'f', 1))) as any;
        m.functions[0].signatures[0].last_used = 'yes';
        return m;
      })()
    ],
    [
      'a bad diff',
      (() => {
        const m = copy(snapshot(fn('f1', 'f', 1))) as any;
        m.functions[0].retraces[0].diffs = [{ argument: 'x', old: 1, new: 2 }];
        return m;
      })()
    ],
    [
      'an edge without target',
      (() => {
        const m = copy(graphMessage('f1', '0')) as any;
        m.graph.edges[0] = { source: 'n0' };
        return m;
      })()
    ],
    [
      'a numeric segment',
      (() => {
        const m = copy(graphMessage('f1', '0')) as any;
        m.graph.nodes[1].segment = 3;
        return m;
      })()
    ]
  ];

  it.each(malformed)('rejects %s', (_, message) => {
    const result = parseKernelMessage(message);
    expect(result.kind).toBe('invalid');
    expect(isKernelMessage(message)).toBe(false);
  });
});

describe('record guards', () => {
  it('allows the nullable fields to be null', () => {
    const info = fn('f1', 'f', 1, { cell: null });
    info.counters.last_run_us = null;
    info.retraces[0].fix = null;
    info.retraces[0].call_site = null;
    expect(isFunctionInfo(info)).toBe(true);
  });

  it('treats failed_calls as an optional integer', () => {
    const counters = fn('f1', 'f', 1).counters;
    expect(isCounters({ ...counters, failed_calls: 2 })).toBe(true);
    expect(isCounters({ ...counters, failed_calls: 1.5 })).toBe(false);
    expect(isCounters(counters)).toBe(true);
  });

  it('rejects NaN and Infinity (not JSON numbers)', () => {
    const counters = fn('f1', 'f', 1).counters;
    expect(isCounters({ ...counters, trace_ms: NaN })).toBe(false);
    expect(isCounters({ ...counters, trace_ms: Infinity })).toBe(false);
  });

  it('treats segment and segments as optional', () => {
    const graph = smallGraph();
    delete graph.segments;
    graph.nodes.forEach(n => delete n.segment);
    expect(isGraphPayload(graph)).toBe(true);
    graph.nodes[0].segment = null;
    expect(isGraphPayload(graph)).toBe(true);
  });
});
