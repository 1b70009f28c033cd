/**
 * The kernel <-> lab inspector protocol, typed once for the TypeScript side.
 *
 * `docs/protocol.md` is the contract and `kernel_ext/jupyter/protocol.py` the
 * Python twin; keep the three in step (tests/jupyter/test_protocol.py checks
 * the constants below against the Python module).
 *
 * Everything received from the kernel is validated here before the model sees
 * it, so the rest of the extension can trust the types.  All strings are plain
 * text: they are rendered with `textContent`, never parsed as HTML.
 */

/** The one comm target, registered by `%load_ext kernel_ext`. */
export const COMM_TARGET = 'kernel_ext.inspector';

/** Bumped only for incompatible changes; see docs/protocol.md "Versioning". */
export const PROTOCOL_VERSION = 1;

/** Longest function/signature id the kernel accepts in a request. */
export const MAX_ID_LENGTH = 256;

/** What a function can be exported as (`request_export`'s `format`). */
export const EXPORT_FORMATS = ['saved_model', 'onnx', 'source'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

// ---------------------------------------------------------------- records

export interface ICounters {
  calls: number;
  traces: number;
  cache_hits: number;
  /** Calls that raised before running a graph; absent from older kernels. */
  failed_calls?: number;
  trace_ms: number;
  compile_ms: number;
  /** Duration of the latest call in µs; null before any call. */
  last_run_us: number | null;
}

export interface ISignatureInfo {
  id: string;
  /** Pretty input specs, e.g. `x: float32[2, None]`. */
  inputs: string;
  outputs: string;
  /** True for the signature the latest call used (at most one per function). */
  last_used: boolean;
  nodes_traced: number;
  nodes_optimised: number;
  backend: string;
  /** Which path serves it, for people: `NumPy executor`, `fused kernels (numba-cpu)`, … */
  served_by?: string;
  /** Under tiered `auto`: which executor serves it and why. */
  tier?: string;
  /** Background compilation of its kernels, for people ("" or absent: nothing to say). */
  compile?: string;
  /** `pending`, `queued`, `compiling`, `ready` or `failed`; absent without kernels. */
  compile_state?: string;
  /** Dask backend: the `http(s)://` dashboard URL of the `distributed.Client` that existed
   * at the latest call; absent without one. Linked beside the backend. */
  dashboard?: string;
}

export interface IArgumentDiff {
  argument: string;
  old: string;
  new: string;
}

export interface IRetraceInfo {
  trace: number;
  cause: string;
  diffs: IArgumentDiff[];
  cost_ms: number;
  /** Copyable code that avoids the retrace, or null. */
  fix: string | null;
  call_site: string | null;
}

export interface IFunctionInfo {
  id: string;
  name: string;
  /** Defining cell, e.g. `[3]`, or null. */
  cell: string | null;
  counters: ICounters;
  signatures: ISignatureInfo[];
  retraces: IRetraceInfo[];
  /** Trace + compile time in ms; the sidebar orders by it. */
  cost_ms: number;
}

export interface IGraphNode {
  id: string;
  op: string;
  label: string;
  shape: string;
  dtype: string;
  /** Fused segment id; absent or null when the node is not fused. */
  segment?: string | null;
  /**
   * What the node computes, literal operands included, graph inputs as `·`:
   * `multiply(·, 2)`, `sum(·, axis=0)`; a parameter's name for an input.
   * Older kernels send none: the view falls back to `op`.
   */
  text?: string;
  /**
   * `input`, `constant`, `captured`, `opaque`, `random`, `loop`,
   * `control_flow`, `stateful` or `op` (unknown kinds draw as `op`).
   */
  kind?: string;
  /** One line said with the node (an opaque call's or a loop's note). */
  note?: string | null;
  /** True for a node whose value the function returns. */
  output?: boolean;
  /** True for a node a gradient's backward pass made (views group it apart). */
  backward?: boolean;
  /** Where the user line that made it is: `cell [5], line 7`; null: unknown. */
  line?: string | null;
  /** That line's text: `h = np.maximum(x @ w1 + b1, 0)`. */
  source?: string | null;
  /** The id of the cond/while node whose branch or body holds this node. */
  inside?: string | null;
}

export interface IGraphEdge {
  source: string;
  target: string;
}

export interface IGraphSegment {
  id: string;
  backend: string;
  label: string;
}

export interface IGraphPayload {
  nodes: IGraphNode[];
  edges: IGraphEdge[];
  segments?: IGraphSegment[];
}

// ---------------------------------------------------------------- messages

interface IMessageBase {
  protocol_version: number;
}

export interface ISnapshotMessage extends IMessageBase {
  type: 'snapshot';
  functions: IFunctionInfo[];
}

export interface IUpdateMessage extends IMessageBase {
  type: 'update';
  functions: IFunctionInfo[];
  removed: string[];
}

export interface IGraphMessage extends IMessageBase {
  type: 'graph';
  function: string;
  signature: string;
  graph: IGraphPayload;
}

export interface IErrorMessage extends IMessageBase {
  type: 'error';
  message: string;
}

/** The answer to a `request_export`: written (`ok`, `path` absolute) or refused. */
export interface IExportMessage extends IMessageBase {
  type: 'export';
  function: string;
  format: string;
  path: string;
  ok: boolean;
  message: string;
}

export type KernelMessage =
  | ISnapshotMessage
  | IUpdateMessage
  | IGraphMessage
  | IErrorMessage
  | IExportMessage;

export interface IRequestSnapshotMessage extends IMessageBase {
  type: 'request_snapshot';
}

export interface IRequestGraphMessage extends IMessageBase {
  type: 'request_graph';
  function: string;
  signature: string;
}

export interface IRequestExportMessage extends IMessageBase {
  type: 'request_export';
  function: string;
  format: ExportFormat;
  path: string;
}

export type FrontendMessage =
  IRequestSnapshotMessage | IRequestGraphMessage | IRequestExportMessage;

// ---------------------------------------------------------------- builders

export function requestSnapshot(): IRequestSnapshotMessage {
  return { type: 'request_snapshot', protocol_version: PROTOCOL_VERSION };
}

export function requestGraph(
  functionId: string,
  signatureId: string
): IRequestGraphMessage {
  return {
    type: 'request_graph',
    protocol_version: PROTOCOL_VERSION,
    function: functionId,
    signature: signatureId
  };
}

export function requestExport(
  functionId: string,
  format: ExportFormat,
  path: string
): IRequestExportMessage {
  return {
    type: 'request_export',
    protocol_version: PROTOCOL_VERSION,
    function: functionId,
    format,
    path
  };
}

// ---------------------------------------------------------------- validation
//
// A tiny combinator set instead of a schema library: the protocol is small,
// and a dependency would be bundled into every page load.  Unknown fields are
// accepted on purpose (that is how optional fields are added without a
// version bump).

type Check<T> = (value: unknown) => value is T;

const isString: Check<string> = (v): v is string => typeof v === 'string';
const isBoolean: Check<boolean> = (v): v is boolean => typeof v === 'boolean';
/** JSON numbers only: NaN/Infinity cannot come out of JSON.parse anyway. */
const isNumber: Check<number> = (v): v is number =>
  typeof v === 'number' && Number.isFinite(v);
const isInteger: Check<number> = (v): v is number => Number.isInteger(v);

function nullable<T>(check: Check<T>): Check<T | null> {
  return (v): v is T | null => v === null || check(v);
}

function arrayOf<T>(check: Check<T>): Check<T[]> {
  return (v): v is T[] => Array.isArray(v) && v.every(item => check(item));
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

type Shape<T> = { [K in keyof T]-?: Check<T[K]> };

/**
 * An object check from one check per field.  Fields listed in `optional` may
 * be absent (or undefined); all others must be present.
 */
function object<T>(shape: Shape<T>, optional: (keyof T)[] = []): Check<T> {
  const keys = Object.keys(shape) as (keyof T & string)[];
  return (v): v is T =>
    isRecord(v) &&
    keys.every(key =>
      v[key] === undefined
        ? optional.includes(key)
        : (shape[key] as Check<unknown>)(v[key])
    );
}

export const isCounters = object<ICounters>(
  {
    calls: isInteger,
    traces: isInteger,
    cache_hits: isInteger,
    failed_calls: isInteger as Check<number | undefined>,
    trace_ms: isNumber,
    compile_ms: isNumber,
    last_run_us: nullable(isNumber)
  },
  ['failed_calls']
);

export const isSignatureInfo = object<ISignatureInfo>(
  {
    id: isString,
    inputs: isString,
    outputs: isString,
    last_used: isBoolean,
    nodes_traced: isInteger,
    nodes_optimised: isInteger,
    backend: isString,
    served_by: isString as Check<string | undefined>,
    tier: isString as Check<string | undefined>,
    compile: isString as Check<string | undefined>,
    compile_state: isString as Check<string | undefined>,
    dashboard: isString as Check<string | undefined>
  },
  ['served_by', 'tier', 'compile', 'compile_state', 'dashboard']
);

const isArgumentDiff = object<IArgumentDiff>({
  argument: isString,
  old: isString,
  new: isString
});

export const isRetraceInfo = object<IRetraceInfo>({
  trace: isInteger,
  cause: isString,
  diffs: arrayOf(isArgumentDiff),
  cost_ms: isNumber,
  fix: nullable(isString),
  call_site: nullable(isString)
});

export const isFunctionInfo = object<IFunctionInfo>({
  id: isString,
  name: isString,
  cell: nullable(isString),
  counters: isCounters,
  signatures: arrayOf(isSignatureInfo),
  retraces: arrayOf(isRetraceInfo),
  cost_ms: isNumber
});

const isGraphNode = object<IGraphNode>(
  {
    id: isString,
    op: isString,
    label: isString,
    shape: isString,
    dtype: isString,
    segment: nullable(isString) as Check<string | null | undefined>,
    text: isString as Check<string | undefined>,
    kind: isString as Check<string | undefined>,
    note: nullable(isString) as Check<string | null | undefined>,
    output: isBoolean as Check<boolean | undefined>,
    backward: isBoolean as Check<boolean | undefined>,
    line: nullable(isString) as Check<string | null | undefined>,
    source: nullable(isString) as Check<string | null | undefined>,
    inside: nullable(isString) as Check<string | null | undefined>
  },
  [
    'segment',
    'text',
    'kind',
    'note',
    'output',
    'backward',
    'line',
    'source',
    'inside'
  ]
);

const isGraphEdge = object<IGraphEdge>({ source: isString, target: isString });

const isGraphSegment = object<IGraphSegment>({
  id: isString,
  backend: isString,
  label: isString
});

export const isGraphPayload = object<IGraphPayload>(
  {
    nodes: arrayOf(isGraphNode),
    edges: arrayOf(isGraphEdge),
    segments: arrayOf(isGraphSegment) as Check<IGraphSegment[] | undefined>
  },
  ['segments']
);

const KERNEL_MESSAGE_CHECKS: { [K in KernelMessage['type']]: Check<unknown> } =
  {
    snapshot: object<Omit<ISnapshotMessage, 'type'>>({
      protocol_version: isInteger,
      functions: arrayOf(isFunctionInfo)
    }),
    update: object<Omit<IUpdateMessage, 'type'>>({
      protocol_version: isInteger,
      functions: arrayOf(isFunctionInfo),
      removed: arrayOf(isString)
    }),
    graph: object<Omit<IGraphMessage, 'type'>>({
      protocol_version: isInteger,
      function: isString,
      signature: isString,
      graph: isGraphPayload
    }),
    error: object<Omit<IErrorMessage, 'type'>>({
      protocol_version: isInteger,
      message: isString
    }),
    export: object<Omit<IExportMessage, 'type'>>({
      protocol_version: isInteger,
      function: isString,
      format: isString,
      path: isString,
      ok: isBoolean,
      message: isString
    })
  };

/** Outcome of reading one message from the kernel. */
export type ParseResult =
  | { kind: 'ok'; message: KernelMessage }
  /** A well-formed envelope in a protocol version this sidebar does not speak. */
  | { kind: 'version'; version: number }
  | { kind: 'invalid'; reason: string };

/**
 * Validate a comm message's `data` from the kernel.
 *
 * The version is checked before the shape: a message from another protocol
 * version may legitimately have another shape, and the user should be told
 * "versions differ", not "malformed".
 */
export function parseKernelMessage(data: unknown): ParseResult {
  if (!isRecord(data)) {
    return { kind: 'invalid', reason: 'message is not an object' };
  }
  const version = data.protocol_version;
  if (!isInteger(version)) {
    return { kind: 'invalid', reason: 'protocol_version missing' };
  }
  if (version !== PROTOCOL_VERSION) {
    return { kind: 'version', version };
  }
  const type = data.type;
  if (
    !isString(type) ||
    !Object.prototype.hasOwnProperty.call(KERNEL_MESSAGE_CHECKS, type)
  ) {
    // Unknown types are a forward-compatible addition, not an error.
    return {
      kind: 'invalid',
      reason: `unknown message type ${JSON.stringify(type)?.slice(0, 40)}`
    };
  }
  const check = KERNEL_MESSAGE_CHECKS[type as KernelMessage['type']];
  if (!check(data)) {
    return { kind: 'invalid', reason: `malformed ${type} message` };
  }
  return { kind: 'ok', message: data as unknown as KernelMessage };
}

/** Type guard form of {@link parseKernelMessage}. */
export function isKernelMessage(data: unknown): data is KernelMessage {
  return parseKernelMessage(data).kind === 'ok';
}
