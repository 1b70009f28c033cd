/**
 * One traced function as a card: a header (name, cell, cost, a one-line
 * summary) that collapses the card, then counters, signatures (the last-used
 * one marked, the selected one with its graph underneath) and the trace
 * history with each retrace's cause, diffs and fix.
 *
 * Cards are built once and then *updated in place* (issue 17, item 7): while
 * a cell runs the kernel sends an update about every 250 ms, and rebuilding
 * the list each time took focus, text selection, scroll position and open
 * details away from the user.  So every element is keyed (cards by function
 * id, signatures by signature id, retraces by trace number) and a text node
 * is only written when its text changed: an element the user is on is never
 * replaced while its content stays the same.
 *
 * Text wraps only between tokens (item 6): a signature's arguments are one
 * unbreakable span each (`float32[2, 3]` never splits as `float3|2[3]`), with
 * the full text on hover where a line is elided.
 *
 * All text comes from the kernel and goes through dom.ts, i.e. into text
 * nodes; see dom.ts for why that matters.
 */

import { h, setText, splitArguments } from './dom';
import type { ExportState, GraphState, ISelection } from './model';
import { IFunctionInfo, IRetraceInfo, ISignatureInfo } from './protocol';
import { count, duration, hitRate, plural } from './units';

/** Signatures listed before "Show all N signatures" (more are one click away). */
export const SIGNATURES_SHOWN = 5;

/** What "last run" is, said on hover (item 9). */
export const LAST_RUN_TOOLTIP =
  'Duration of a recent call, as the engine timed it: it times every 64th cache ' +
  'hit (timing each would slow the hits down), so this may be a few calls old.';

export interface ICardCallbacks {
  onSelect: (signatureId: string) => void;
  onToggleRetraces: (open: boolean) => void;
  onToggleExpanded: (expanded: boolean) => void;
  onToggleAllSignatures: (all: boolean) => void;
  /** "Export…" was clicked: ask where and how, then send the request. */
  onExport: () => void;
}

export interface ICardState {
  selection: ISelection | null;
  graphState: GraphState;
  /** The rendered graph of the selection (built once per graph by the panel). */
  graphElement: () => HTMLElement | null;
  retracesOpen: boolean;
  expanded: boolean;
  allSignatures: boolean;
  /** The latest export of this function asked for here (null: none). */
  exportState: ExportState | null;
}

const COUNTERS = [
  'calls',
  'traces',
  'cache hits',
  'failed calls',
  'tracing',
  'compiling at trace',
  'last run'
] as const;

/** What each counter is, said on hover (every figure is labelled on screen). */
const COUNTER_TOOLTIPS: Partial<Record<(typeof COUNTERS)[number], string>> = {
  'cache hits': 'Calls that ran an existing trace, of all calls',
  tracing: "Time spent running the Python body to build this function's graphs",
  'compiling at trace':
    "Time this function's traces spent optimising and preparing their " +
    'executors; kernels compiled in the background are timed in the graph legend'
};

type CounterName = (typeof COUNTERS)[number];

/** Element ids of the cards' bodies (from our own counter, never from the kernel). */
let cardCount = 0;

/** A function's card; `node` goes into the list, `update` keeps it current. */
export class FunctionCard {
  readonly node: HTMLLIElement;

  constructor(fn: IFunctionInfo, callbacks: ICardCallbacks) {
    this._callbacks = callbacks;
    this._name = h('span', { className: 'jp-kx-name' });
    this._cell = h('span', { className: 'jp-kx-cell' });
    this._cost = h('span', {
      className: 'jp-kx-cost',
      title: 'time spent tracing + compiling this function'
    });
    this._summary = h('span', { className: 'jp-kx-summary' });
    this._toggle = h(
      'button',
      {
        className: 'jp-kx-function-header',
        attrs: { type: 'button', 'aria-expanded': 'true' }
      },
      h('span', { className: 'jp-kx-caret', attrs: { 'aria-hidden': 'true' } }),
      this._name,
      this._cell,
      this._cost,
      this._summary
    );
    this._toggle.addEventListener('click', () =>
      this._callbacks.onToggleExpanded(!this._expanded)
    );

    this._counters = h('dl', { className: 'jp-kx-counters' });
    for (const name of COUNTERS) {
      const value = h('dd', { attrs: { 'data-counter': name } });
      const item = h(
        'div',
        {
          className: 'jp-kx-counter',
          title: name === 'last run' ? LAST_RUN_TOOLTIP : COUNTER_TOOLTIPS[name]
        },
        h('dt', {}, name),
        value
      );
      this._counterItems.set(name, { item, value });
      this._counters.appendChild(item);
    }
    this._signatures = h('ul', { className: 'jp-kx-signatures' });
    const bodyId = `jp-kx-card-body-${++cardCount}`;
    this._toggle.setAttribute('aria-controls', bodyId);
    this._more = h('button', {
      className: 'jp-kx-more-signatures jp-kx-link',
      attrs: { type: 'button' }
    });
    this._more.addEventListener('click', () =>
      this._callbacks.onToggleAllSignatures(!this._allSignatures)
    );
    this._retraceSummary = h('summary', {});
    this._retraceList = h('ol', {});
    this._retraces = h(
      'details',
      { className: 'jp-kx-retraces' },
      this._retraceSummary,
      this._retraceList
    );
    this._retraces.addEventListener('toggle', () =>
      this._callbacks.onToggleRetraces(this._retraces.open)
    );
    this._exportButton = h(
      'button',
      {
        className: 'jp-kx-export jp-kx-link',
        title:
          'Save this function as a saved model, an ONNX model or a NumPy-only .py file',
        attrs: { type: 'button' }
      },
      'Export…'
    );
    this._exportButton.addEventListener('click', () =>
      this._callbacks.onExport()
    );
    // Polite: the outcome of an export is read out when it arrives, not at once.
    this._exportStatus = h('p', {
      className: 'jp-kx-export-status',
      attrs: { role: 'status', 'aria-live': 'polite' }
    });
    this._exportStatus.hidden = true;
    this._body = h(
      'div',
      { className: 'jp-kx-function-body', attrs: { id: bodyId } },
      this._counters,
      this._signatures,
      this._more,
      this._retraces,
      h(
        'div',
        { className: 'jp-kx-export-row' },
        this._exportButton,
        this._exportStatus
      )
    );
    this.node = h(
      'li',
      { className: 'jp-kx-function', attrs: { 'data-function-id': fn.id } },
      this._toggle,
      this._body
    );
  }

  /** Bring the card up to *fn* and *state*, touching only what changed. */
  update(fn: IFunctionInfo, state: ICardState): void {
    this._expanded = state.expanded;
    this._allSignatures = state.allSignatures;
    this.node.classList.toggle('jp-mod-collapsed', !state.expanded);
    this._toggle.setAttribute('aria-expanded', String(state.expanded));
    // The whole name on hover (a long one is elided on screen).
    this._toggle.title = `${fn.name}${fn.cell ? ` ${fn.cell}` : ''}\n${
      state.expanded ? 'Click to collapse' : 'Click to expand'
    }`;
    this._body.hidden = !state.expanded;
    setText(this._name, fn.name);
    if (this._label !== fn.name) {
      this._label = fn.name;
      this.node.setAttribute('aria-label', `function ${fn.name}`);
      this._signatures.setAttribute('aria-label', `signatures of ${fn.name}`);
    }
    setText(this._cell, fn.cell ?? '');
    this._cell.hidden = !fn.cell;
    setText(this._cost, `cost ${duration(fn.cost_ms)}`);
    setText(
      this._summary,
      `${plural(fn.signatures.length, 'signature')} · ` +
        `${plural(fn.counters.calls, 'call')} · ${plural(fn.counters.traces, 'trace')}`
    );
    if (!state.expanded) {
      // A collapsed card keeps its elements (and their state) but skips the
      // work of updating what nobody sees; expanding catches up.
      return;
    }
    this._updateCounters(fn);
    this._updateSignatures(fn, state);
    this._updateRetraces(fn.retraces, state.retracesOpen);
    this._updateExport(fn, state.exportState);
  }

  private _updateExport(fn: IFunctionInfo, exported: ExportState | null): void {
    this._exportButton.setAttribute('aria-label', `Export ${fn.name}…`);
    this._exportButton.disabled = exported?.kind === 'pending';
    this._exportStatus.hidden = exported === null;
    this._exportStatus.classList.toggle(
      'jp-mod-error',
      exported?.kind === 'failed'
    );
    if (exported === null) {
      setText(this._exportStatus, '');
    } else if (exported.kind === 'pending') {
      setText(this._exportStatus, `Exporting to ${exported.path}…`);
    } else {
      // The kernel's own words: what was written where, or why not and the fix.
      setText(
        this._exportStatus,
        exported.kind === 'done'
          ? exported.message
          : `Not exported: ${exported.message}`
      );
    }
  }

  private _updateCounters(fn: IFunctionInfo): void {
    const c = fn.counters;
    const values: Record<CounterName, string | null> = {
      calls: count(c.calls),
      traces: count(c.traces),
      'cache hits': hitRate(c.cache_hits, c.calls),
      'failed calls': c.failed_calls ? count(c.failed_calls) : null,
      tracing: duration(c.trace_ms),
      'compiling at trace': duration(c.compile_ms),
      'last run': duration(c.last_run_us === null ? null : c.last_run_us / 1000)
    };
    for (const name of COUNTERS) {
      const { item, value } = this._counterItems.get(name)!;
      const text = values[name];
      if (text === null) {
        // Shown only when there are some; removed, so selectors and screen
        // readers do not find an empty counter.
        item.remove();
        continue;
      }
      if (!item.isConnected || item.parentNode !== this._counters) {
        this._insertCounter(name, item);
      }
      setText(value, text);
    }
  }

  private _insertCounter(name: CounterName, item: HTMLElement): void {
    const after = COUNTERS.slice(COUNTERS.indexOf(name) + 1)
      .map(next => this._counterItems.get(next)!.item)
      .find(next => next.parentNode === this._counters);
    this._counters.insertBefore(item, after ?? null);
  }

  private _updateSignatures(fn: IFunctionInfo, state: ICardState): void {
    const selected =
      state.selection?.functionId === fn.id
        ? state.selection.signatureId
        : null;
    const shown = visibleSignatures(
      fn.signatures,
      selected,
      state.allSignatures
    );
    const keep = new Set(shown.map(sig => sig.id));
    for (const [id, row] of this._signatureRows) {
      if (!keep.has(id)) {
        row.node.remove();
        this._signatureRows.delete(id);
      }
    }
    let previous: Element | null = null;
    for (const sig of shown) {
      let row = this._signatureRows.get(sig.id);
      if (!row) {
        row = new SignatureRow(sig.id, () => this._callbacks.onSelect(sig.id));
        this._signatureRows.set(sig.id, row);
      }
      row.update(sig, sig.id === selected, state);
      placeAfter(this._signatures, row.node, previous);
      previous = row.node;
    }
    this._noSignatures ??= h(
      'li',
      { className: 'jp-kx-muted' },
      'No concrete signatures.'
    );
    if (fn.signatures.length === 0) {
      placeAfter(this._signatures, this._noSignatures, null);
    } else {
      this._noSignatures.remove();
    }
    // Offered only when it would show more (or fewer) than now: never "(0 more)".
    const hidden = fn.signatures.length - shown.length;
    const fewer =
      state.allSignatures &&
      visibleSignatures(fn.signatures, selected, false).length < shown.length;
    this._more.hidden = state.allSignatures ? !fewer : hidden <= 0;
    setText(
      this._more,
      this._more.hidden
        ? ''
        : state.allSignatures
          ? 'Show fewer signatures'
          : `Show ${hidden} more (${plural(fn.signatures.length, 'signature')} in all)`
    );
  }

  private _updateRetraces(retraces: IRetraceInfo[], open: boolean): void {
    this._retraces.hidden = retraces.length === 0;
    setText(
      this._retraceSummary,
      `Trace history (${plural(retraces.length, 'trace')})`
    );
    if (this._retraces.open !== open) {
      this._retraces.open = open;
    }
    const keep = new Set(retraces.map(r => r.trace));
    for (const [trace, entry] of this._retraceItems) {
      if (!keep.has(trace)) {
        entry.node.remove();
        this._retraceItems.delete(trace);
      }
    }
    let previous: Element | null = null;
    for (const r of retraces) {
      const key = JSON.stringify(r);
      let entry = this._retraceItems.get(r.trace);
      if (!entry || entry.key !== key) {
        // A retrace record rarely changes once made; when it does, its item
        // is rebuilt (it holds no state worth keeping but a text selection).
        const node = renderRetrace(r);
        entry?.node.replaceWith(node);
        entry = { key, node };
        this._retraceItems.set(r.trace, entry);
      }
      placeAfter(this._retraceList, entry.node, previous);
      previous = entry.node;
    }
  }

  private _allSignatures = false;
  private _label = '';
  private _body: HTMLDivElement;
  private _callbacks: ICardCallbacks;
  private _cell: HTMLSpanElement;
  private _cost: HTMLSpanElement;
  private _counterItems = new Map<
    CounterName,
    { item: HTMLElement; value: HTMLElement }
  >();
  private _counters: HTMLDListElement;
  private _expanded = true;
  private _more: HTMLButtonElement;
  private _name: HTMLSpanElement;
  private _noSignatures: HTMLLIElement | undefined;
  private _retraceItems = new Map<number, { key: string; node: HTMLElement }>();
  private _retraceList: HTMLOListElement;
  private _retraces: HTMLDetailsElement;
  private _exportButton: HTMLButtonElement;
  private _exportStatus: HTMLParagraphElement;
  private _retraceSummary: HTMLElement;
  private _signatureRows = new Map<string, SignatureRow>();
  private _signatures: HTMLUListElement;
  private _summary: HTMLSpanElement;
  private _toggle: HTMLButtonElement;
}

/**
 * The signatures a card lists: all of them, or the first
 * {@link SIGNATURES_SHOWN} plus the selected and the last-used one, in the
 * kernel's (creation) order.
 */
export function visibleSignatures(
  signatures: ISignatureInfo[],
  selected: string | null,
  all: boolean
): ISignatureInfo[] {
  if (all || signatures.length <= SIGNATURES_SHOWN) {
    return signatures;
  }
  return signatures.filter(
    (sig, index) =>
      index < SIGNATURES_SHOWN || sig.id === selected || sig.last_used
  );
}

/** Put *node* right after *previous* (first when null), moving it only if needed. */
function placeAfter(
  parent: Element,
  node: Element,
  previous: Element | null
): void {
  const wanted = previous ? previous.nextSibling : parent.firstChild;
  if (wanted !== node) {
    parent.insertBefore(node, wanted);
  }
}

/** One signature: its button and, when selected, its graph. */
class SignatureRow {
  readonly node: HTMLLIElement;

  constructor(id: string, onClick: () => void) {
    this._inputs = h('span', { className: 'jp-kx-inputs' });
    this._outputs = h('span', { className: 'jp-kx-outputs jp-kx-token' });
    this._spec = h(
      'span',
      { className: 'jp-kx-spec' },
      this._inputs,
      ' → ',
      this._outputs
    );
    this._badge = h('span', { className: 'jp-kx-badge' }, 'last used');
    this._meta = h('span', {});
    // Beside the button, not in it: a link inside a button is not focusable on its own.
    this._dashboard = h(
      'a',
      {
        className: 'jp-kx-dashboard',
        attrs: { target: '_blank', rel: 'noopener noreferrer' }
      },
      'Dask dashboard'
    );
    this._dashboard.hidden = true;
    this._button = h(
      'button',
      {
        className: 'jp-kx-signature',
        attrs: { type: 'button', 'data-signature-id': id }
      },
      this._spec,
      h('span', { className: 'jp-kx-sig-meta' }, this._badge, this._meta)
    );
    this._button.addEventListener('click', onClick);
    this._served = h('div', { className: 'jp-kx-served-by' });
    this._compile = h('div', { className: 'jp-kx-compile' });
    this._area = h('div', {
      className: 'jp-kx-graph-area',
      attrs: { role: 'region', 'aria-label': 'graph of the selected signature' }
    });
    this.node = h(
      'li',
      {},
      this._button,
      this._dashboard,
      this._served,
      this._compile
    );
  }

  update(sig: ISignatureInfo, selected: boolean, state: ICardState): void {
    const button = this._button;
    button.classList.toggle('jp-mod-lastUsed', sig.last_used);
    button.classList.toggle('jp-mod-selected', selected);
    button.setAttribute('aria-pressed', String(selected));
    const full = `(${sig.inputs}) → ${sig.outputs}`;
    if (this._full !== full) {
      this._full = full;
      // The whole signature on hover: long ones are elided on screen.
      this._spec.title = full;
      button.title = `${full}\n${selected ? 'Hide' : 'Show'} the graph`;
      this._inputs.replaceChildren(...renderArguments(sig.inputs));
      setText(this._outputs, sig.outputs);
    }
    this._badge.hidden = !sig.last_used;
    setText(
      this._meta,
      `${sig.backend} · ${sig.nodes_traced} → ${sig.nodes_optimised} nodes`
    );
    // Dask: the cluster's dashboard, when the kernel has a distributed client (http(s) only).
    const url = sig.dashboard ?? '';
    const linkable = /^https?:\/\//.test(url);
    if (linkable) {
      if (this._dashboard.getAttribute('href') !== url) {
        this._dashboard.setAttribute('href', url);
        this._dashboard.title = url;
      }
    } else {
      this._dashboard.removeAttribute('href');
    }
    this._dashboard.hidden = !linkable;
    // Which path serves it and, while kernels compile, how far they are.
    // One plain sentence ("runs as 13 compiled kernels (numba-cpu)"); the
    // details (the tier's own note, the executor) on hover.
    setText(this._served, sig.served_by ?? '');
    this._served.hidden = !sig.served_by;
    this._served.title = sig.tier
      ? `${sig.tier} (executor: ${sig.backend})`
      : sig.served_by
        ? `executor: ${sig.backend}`
        : '';
    setText(this._compile, sig.compile ?? '');
    this._compile.hidden = !sig.compile;
    if (sig.compile_state) {
      this._compile.dataset.state = sig.compile_state;
    } else {
      delete this._compile.dataset.state;
    }
    if (selected) {
      updateGraphArea(this._area, state);
      if (this._area.parentNode !== this.node) {
        this.node.appendChild(this._area);
      }
    } else {
      this._area.remove();
    }
  }

  private _area: HTMLDivElement;
  private _compile: HTMLDivElement;
  private _served: HTMLDivElement;
  private _badge: HTMLSpanElement;
  private _button: HTMLButtonElement;
  private _full = '';
  private _inputs: HTMLSpanElement;
  private _meta: HTMLSpanElement;
  private _dashboard: HTMLAnchorElement;
  private _outputs: HTMLSpanElement;
  private _spec: HTMLSpanElement;
}

/**
 * `(x: float32[2, 3], n: 3)` with line breaks allowed only between tokens:
 * after an argument's comma and between its name and its type, never inside
 * a type (`float32[2, 3]` stays whole) nor before punctuation.  Each token is
 * an unbreakable span (elided if wider than the column); each argument's
 * whole text is its title.
 */
export function renderArguments(inputs: string): (Node | string)[] {
  const args = splitArguments(inputs);
  if (args.length === 0) {
    return [h('span', { className: 'jp-kx-token' }, '()')];
  }
  const parts: (Node | string)[] = [];
  args.forEach((arg, index) => {
    const open = index === 0 ? '(' : '';
    const close = index === args.length - 1 ? ')' : ',';
    const colon = arg.indexOf(': ');
    const tokens =
      colon > 0
        ? [
            `${open}${arg.slice(0, colon + 1)}`,
            `${arg.slice(colon + 2)}${close}`
          ]
        : [`${open}${arg}${close}`];
    const children: (Node | string)[] = [];
    tokens.forEach((token, i) => {
      if (i > 0) {
        children.push(' ');
      }
      children.push(h('span', { className: 'jp-kx-token' }, token));
    });
    if (index > 0) {
      parts.push(' ');
    }
    parts.push(h('span', { className: 'jp-kx-arg', title: arg }, ...children));
  });
  return parts;
}

function updateGraphArea(area: HTMLElement, state: ICardState): void {
  const graph = state.graphState;
  let child: Node | null = null;
  switch (graph.kind) {
    case 'loading':
      if (area.dataset.state === 'loading') {
        return;
      }
      child = h('p', { className: 'jp-kx-muted' }, 'Loading graph…');
      break;
    case 'error':
      child = h(
        'p',
        { className: 'jp-kx-error' },
        `Could not load the graph: ${graph.message}`
      );
      break;
    case 'ready':
      child = state.graphElement();
      break;
  }
  area.dataset.state = graph.kind;
  if (child === null) {
    area.replaceChildren();
  } else if (area.firstChild !== child || area.childNodes.length !== 1) {
    area.replaceChildren(child);
  }
}

function renderRetrace(r: IRetraceInfo): HTMLLIElement {
  const headline = [`#${r.trace}`, r.cause, `cost ${duration(r.cost_ms)}`];
  if (r.call_site) {
    headline.push(r.call_site);
  }
  const item = h(
    'li',
    { className: 'jp-kx-retrace' },
    h('div', { className: 'jp-kx-retrace-head' }, headline.join(' · '))
  );
  if (r.diffs.length > 0) {
    item.appendChild(
      h(
        'table',
        {
          className: 'jp-kx-diffs',
          // It scrolls sideways when wide: focusable, so the keyboard can.
          attrs: {
            tabindex: '0',
            'aria-label': `trace ${r.trace}: arguments that changed`
          }
        },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', {}, 'argument'),
            h('th', {}, 'was'),
            h('th', {}, 'now')
          )
        ),
        h(
          'tbody',
          {},
          ...r.diffs.map(d =>
            h(
              'tr',
              {},
              h('td', {}, d.argument),
              h('td', {}, d.old),
              h('td', {}, d.new)
            )
          )
        )
      )
    );
  }
  if (r.fix) {
    item.appendChild(renderFix(r.fix));
  }
  return item;
}

function renderFix(fix: string): HTMLElement {
  const copy = h(
    'button',
    {
      className: 'jp-kx-copy',
      attrs: { type: 'button', 'aria-live': 'polite' },
      title: 'Copy the fix'
    },
    'Copy'
  );
  copy.addEventListener('click', () => {
    // The clipboard API needs a secure context; without it the code stays
    // selectable by hand, and the button says so.
    const done = (text: string): void => {
      copy.textContent = text;
      window.setTimeout(() => (copy.textContent = 'Copy'), 1500);
    };
    if (!navigator.clipboard) {
      done('Select to copy');
      return;
    }
    navigator.clipboard.writeText(fix).then(
      () => done('Copied'),
      () => done('Copy failed')
    );
  });
  return h(
    'div',
    { className: 'jp-kx-fix' },
    h('span', { className: 'jp-kx-fix-label' }, 'Fix'),
    copy,
    h(
      'pre',
      { attrs: { tabindex: '0', 'aria-label': 'the fix, as code' } },
      h('code', {}, fix)
    )
  );
}
