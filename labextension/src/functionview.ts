/**
 * One traced function as a card: name and cell, counters, signatures (the
 * last-used one highlighted, the selected one with its graph underneath) and
 * the trace history with each retrace's cause, diffs and fix.
 *
 * All text comes from the kernel and goes through dom.ts, i.e. into text
 * nodes; see dom.ts for why that matters.
 */

import { formatMs, formatUs, h } from './dom';
import type { GraphState, ISelection } from './model';
import { IFunctionInfo, IRetraceInfo, ISignatureInfo } from './protocol';

export interface IFunctionViewOptions {
  selection: ISelection | null;
  graphState: GraphState;
  /** The rendered graph of the selection (built once per graph by the panel). */
  graphElement: () => HTMLElement | null;
  retracesOpen: boolean;
  onSelect: (signatureId: string) => void;
  onToggleRetraces: (open: boolean) => void;
}

export function renderFunction(
  fn: IFunctionInfo,
  options: IFunctionViewOptions
): HTMLLIElement {
  const selected =
    options.selection?.functionId === fn.id
      ? options.selection.signatureId
      : null;
  const card = h(
    'li',
    { className: 'jp-kx-function', attrs: { 'data-function-id': fn.id } },
    h(
      'div',
      { className: 'jp-kx-function-header' },
      h('span', { className: 'jp-kx-name' }, fn.name),
      fn.cell ? h('span', { className: 'jp-kx-cell' }, fn.cell) : null,
      h(
        'span',
        { className: 'jp-kx-cost', title: 'trace + compile time' },
        formatMs(fn.cost_ms)
      )
    ),
    renderCounters(fn),
    renderSignatures(fn, selected, options)
  );
  if (fn.retraces.length > 0) {
    card.appendChild(renderRetraces(fn.retraces, options));
  }
  return card;
}

function renderCounters(fn: IFunctionInfo): HTMLElement {
  const c = fn.counters;
  const hitRate =
    c.calls > 0 ? ` (${Math.round((100 * c.cache_hits) / c.calls)}%)` : '';
  const entries: [string, string][] = [
    ['calls', String(c.calls)],
    ['traces', String(c.traces)],
    ['cache hits', `${c.cache_hits}${hitRate}`],
    ...(c.failed_calls
      ? ([['failed calls', String(c.failed_calls)]] as [string, string][])
      : []),
    ['trace', formatMs(c.trace_ms)],
    ['compile', formatMs(c.compile_ms)],
    ['last run', formatUs(c.last_run_us)]
  ];
  return h(
    'dl',
    { className: 'jp-kx-counters' },
    ...entries.map(([label, value]) =>
      h(
        'div',
        { className: 'jp-kx-counter' },
        h('dt', {}, label),
        h('dd', { attrs: { 'data-counter': label } }, value)
      )
    )
  );
}

function renderSignatures(
  fn: IFunctionInfo,
  selected: string | null,
  options: IFunctionViewOptions
): HTMLElement {
  const list = h('ul', { className: 'jp-kx-signatures' });
  for (const sig of fn.signatures) {
    const isSelected = sig.id === selected;
    const item = h('li', {}, renderSignatureButton(sig, isSelected, options));
    if (isSelected) {
      item.appendChild(renderGraphArea(options));
    }
    list.appendChild(item);
  }
  if (fn.signatures.length === 0) {
    list.appendChild(
      h('li', { className: 'jp-kx-muted' }, 'No concrete signatures.')
    );
  }
  return list;
}

function renderSignatureButton(
  sig: ISignatureInfo,
  isSelected: boolean,
  options: IFunctionViewOptions
): HTMLButtonElement {
  const classes = ['jp-kx-signature'];
  if (sig.last_used) {
    classes.push('jp-mod-lastUsed');
  }
  if (isSelected) {
    classes.push('jp-mod-selected');
  }
  const button = h(
    'button',
    {
      className: classes.join(' '),
      attrs: {
        type: 'button',
        'aria-pressed': String(isSelected),
        'data-signature-id': sig.id
      },
      title: isSelected ? 'Hide the graph' : 'Show the graph of this signature'
    },
    h(
      'span',
      { className: 'jp-kx-spec' },
      h('span', { className: 'jp-kx-inputs' }, `(${sig.inputs})`),
      ' → ',
      h('span', { className: 'jp-kx-outputs' }, sig.outputs)
    ),
    h(
      'span',
      { className: 'jp-kx-sig-meta' },
      sig.last_used
        ? h('span', { className: 'jp-kx-badge' }, 'last used')
        : null,
      `${sig.backend} · ${sig.nodes_traced} → ${sig.nodes_optimised} nodes`
    )
  );
  button.addEventListener('click', () => options.onSelect(sig.id));
  return button;
}

function renderGraphArea(options: IFunctionViewOptions): HTMLElement {
  const state = options.graphState;
  const area = h('div', { className: 'jp-kx-graph-area' });
  switch (state.kind) {
    case 'loading':
      area.appendChild(h('p', { className: 'jp-kx-muted' }, 'Loading graph…'));
      break;
    case 'error':
      area.appendChild(
        h(
          'p',
          { className: 'jp-kx-error' },
          `Could not load the graph: ${state.message}`
        )
      );
      break;
    case 'ready': {
      const el = options.graphElement();
      if (el) {
        area.appendChild(el);
      }
      break;
    }
  }
  return area;
}

function renderRetraces(
  retraces: IRetraceInfo[],
  options: IFunctionViewOptions
): HTMLElement {
  const details = h(
    'details',
    { className: 'jp-kx-retraces' },
    h('summary', {}, `Trace history (${retraces.length})`),
    h('ol', {}, ...retraces.map(renderRetrace))
  );
  details.open = options.retracesOpen;
  details.addEventListener('toggle', () =>
    options.onToggleRetraces(details.open)
  );
  return details;
}

function renderRetrace(r: IRetraceInfo): HTMLLIElement {
  const headline = [`#${r.trace}`, r.cause, formatMs(r.cost_ms)];
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
        { className: 'jp-kx-diffs' },
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
      attrs: { type: 'button' },
      title: 'Copy the fix'
    },
    'Copy'
  );
  copy.addEventListener('click', () => {
    // The clipboard API needs a secure context; without it the code stays
    // selectable by hand.
    void navigator.clipboard?.writeText(fix).catch(() => undefined);
  });
  return h(
    'div',
    { className: 'jp-kx-fix' },
    h('span', { className: 'jp-kx-fix-label' }, 'Fix'),
    copy,
    h('pre', {}, h('code', {}, fix))
  );
}
