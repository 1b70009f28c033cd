/**
 * The "Traced functions" sidebar panel: connection status, a search box and
 * the list of function cards.  It renders from the model and reports user
 * intent (select a signature, retry) through callbacks, so it never talks to
 * the kernel itself.
 */

import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { h, setText } from './dom';
import { FunctionCard } from './functionview';
import { GraphView } from './graphview';
import { InspectorModel, ISelection } from './model';
import { IFunctionInfo, IGraphPayload, PROTOCOL_VERSION } from './protocol';

/** Cards shown before a "Show more" button (the costliest first). */
export const PAGE_SIZE = 25;

/** With more functions than this, cards start collapsed. */
export const EXPANDED_UP_TO = 4;

/** The sidebar's settings (schema/sidebar.json; JupyterLab's settings editor). */
export interface IPanelSettings {
  /** Redraw at most once per this many ms (0: on every update). */
  updateIntervalMs: number;
  /** How cards start: collapsed above `expandedUpTo` functions, or always so. */
  defaultCollapse: 'auto' | 'expanded' | 'collapsed';
  expandedUpTo: number;
}

export const DEFAULT_SETTINGS: IPanelSettings = {
  updateIntervalMs: 0,
  defaultCollapse: 'auto',
  expandedUpTo: EXPANDED_UP_TO
};

/** The settings the registry holds, each checked and else its default. */
export function readSettings(
  composite: Partial<Record<keyof IPanelSettings, unknown>>
): IPanelSettings {
  const interval = composite.updateIntervalMs;
  const collapse = composite.defaultCollapse;
  const upTo = composite.expandedUpTo;
  const count = (value: unknown, fallback: number): number =>
    typeof value === 'number' && Number.isInteger(value) && value >= 0
      ? value
      : fallback;
  return {
    updateIntervalMs: count(interval, DEFAULT_SETTINGS.updateIntervalMs),
    defaultCollapse:
      collapse === 'auto' || collapse === 'expanded' || collapse === 'collapsed'
        ? collapse
        : DEFAULT_SETTINGS.defaultCollapse,
    expandedUpTo: count(upTo, DEFAULT_SETTINGS.expandedUpTo)
  };
}

/**
 * The key a card's expanded state is remembered by: the function's name and
 * cell, so a re-run cell (a new function object, a new id) keeps it.
 */
function expandKey(fn: IFunctionInfo): string {
  return JSON.stringify([fn.name, fn.cell]);
}

/** What the arrow keys move between: function headers and signatures. */
const NAV_SELECTOR = '.jp-kx-function-header, .jp-kx-signature';

/**
 * Where a key moves the focus in the list (null: the key is not ours).
 * ArrowDown/ArrowUp: the next/previous function header or signature shown;
 * Home/End: the first/last; ArrowLeft on a signature: its function's header.
 * ArrowRight/ArrowLeft on a header expand/collapse it (done by the caller,
 * since the card's state lives in the panel). Enter and Space are the
 * buttons' own: a header toggles its card, a signature opens its graph.
 */
export function navigationTarget(
  list: Element,
  current: Element,
  key: string
): HTMLElement | null {
  const items = [...list.querySelectorAll<HTMLElement>(NAV_SELECTOR)].filter(
    item => !item.closest('[hidden]')
  );
  const index = items.indexOf(current as HTMLElement);
  switch (key) {
    case 'ArrowDown':
      return index < 0 ? (items[0] ?? null) : (items[index + 1] ?? null);
    case 'ArrowUp':
      return index < 0 ? (items[0] ?? null) : (items[index - 1] ?? null);
    case 'Home':
      return items[0] ?? null;
    case 'End':
      return items[items.length - 1] ?? null;
    case 'ArrowLeft':
      return current.classList.contains('jp-kx-signature')
        ? (current
            .closest('.jp-kx-function')
            ?.querySelector<HTMLElement>('.jp-kx-function-header') ?? null)
        : null;
    default:
      return null;
  }
}

let panelCount = 0;

export class InspectorPanel extends Widget {
  constructor(options: InspectorPanel.IOptions) {
    super();
    this._model = options.model;
    if (options.settings) {
      this._settings = { ...options.settings };
    }
    this._requestGraph = options.requestGraph;
    this._export = options.exportFunction;
    this._retry = options.retry;
    this._openGraph = options.openGraph;
    this.addClass('jp-kx-panel');
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-labelledby', this._headingId);

    this._search = h('input', {
      className: 'jp-kx-search jp-mod-styled',
      attrs: {
        type: 'search',
        placeholder: 'Filter functions',
        'aria-label': 'Filter traced functions'
      }
    });
    this._search.addEventListener('input', () => {
      this._model.filter = this._search.value;
    });
    this._status = h('div', {
      className: 'jp-kx-status',
      attrs: { role: 'status' }
    });
    this._list = h('ul', {
      className: 'jp-kx-functions',
      attrs: {
        'aria-label':
          'Traced functions: arrow keys move between functions ' +
          "and signatures, Enter opens a signature's graph"
      }
    });
    this._list.addEventListener('keydown', event => this._onKeyDown(event));
    this._showMore = h('button', {
      className: 'jp-kx-show-more jp-mod-styled',
      attrs: { type: 'button' }
    });
    this._showMore.addEventListener('click', () => {
      this._pageLimit += PAGE_SIZE;
      this.render();
    });
    this._showMoreItem = h(
      'li',
      { className: 'jp-kx-show-more-item' },
      this._showMore
    );
    this.node.append(
      h(
        'div',
        { className: 'jp-kx-header' },
        h('h2', { attrs: { id: this._headingId } }, 'Traced functions'),
        this._search
      ),
      this._status,
      this._list
    );
    this._model.changed.connect(() => this.update(), this);
    this.render();
  }

  /** Bring status and list up to the model (synchronous; tests call it). */
  render(): void {
    const start = performance.now();
    this._lastRender = start;
    this._stale = false;
    this._renderStatus();
    this._renderList();
    // How long the latest update took, for people profiling and the
    // browser tests (issue 17: update latency).
    this.node.dataset.renderMs = (performance.now() - start).toFixed(2);
  }

  /** The settings in force (JupyterLab's settings registry sets them). */
  get settings(): IPanelSettings {
    return this._settings;
  }

  set settings(value: IPanelSettings) {
    this._settings = { ...value };
    this.render();
  }

  protected override onUpdateRequest(_msg: Message): void {
    // A collapsed sidebar is not worth redrawing; catch up when shown.
    if (!this.isVisible) {
      this._stale = true;
      return;
    }
    // At most one redraw per updateIntervalMs: the rest wait for the next.
    const wait =
      this._lastRender + this._settings.updateIntervalMs - performance.now();
    if (wait > 0) {
      if (this._timer === null) {
        this._timer = window.setTimeout(() => {
          this._timer = null;
          this.update();
        }, wait);
      }
      return;
    }
    this.render();
  }

  override dispose(): void {
    if (this._timer !== null) {
      window.clearTimeout(this._timer);
      this._timer = null;
    }
    super.dispose();
  }

  protected override onAfterShow(_msg: Message): void {
    if (this._stale) {
      this.render();
    }
  }

  private _renderStatus(): void {
    const model = this._model;
    const { state, detail } = model.connection;
    const parts: (Node | string)[] = [];
    switch (state) {
      case 'no-notebook':
        parts.push('Open a notebook to see its traced functions.');
        break;
      case 'no-kernel':
        parts.push('This notebook has no running kernel.');
        break;
      case 'connecting':
        parts.push('Connecting to the kernel…');
        break;
      case 'restarting':
        parts.push('The kernel is restarting…');
        break;
      case 'not-loaded':
        parts.push(
          'Run ',
          h('code', {}, '%load_ext kernel_ext'),
          ' in this notebook'
        );
        break;
      case 'error':
        parts.push(
          `Cannot reach the inspector: ${detail ?? 'unknown error'}. `
        );
        if (this._retry) {
          parts.push(this._retryButton());
        }
        break;
      case 'connected':
        if (model.incompatibleVersion !== null) {
          parts.push(
            `The kernel speaks inspector protocol v${model.incompatibleVersion}; ` +
              `this sidebar speaks v${PROTOCOL_VERSION}. Install matching versions of kernel_ext.`
          );
        } else if (model.kernelError) {
          parts.push(`Kernel: ${model.kernelError}`);
        }
        break;
    }
    this._status.replaceChildren(...parts);
    this._status.dataset.state = state;
    this._status.hidden = parts.length === 0;
    this._search.disabled = state !== 'connected';
  }

  /**
   * Bring the list up to the model, in place: cards are keyed by function id
   * and updated, not rebuilt (see functionview.ts), and moved only when the
   * order changed, so focus, selection, scroll and open details survive.
   */
  private _renderList(): void {
    const model = this._model;
    if (model.connection.state !== 'connected') {
      this._cards.clear();
      this._list.replaceChildren();
      return;
    }
    const visible = model.visibleFunctions;
    // Cards of functions that are gone are dropped; filtered-out ones are
    // kept (detached) for when the filter changes back.
    const live = new Set(model.functions.map(fn => fn.id));
    for (const id of [...this._cards.keys()]) {
      if (!live.has(id)) {
        this._cards.delete(id);
      }
    }
    if (visible.length === 0) {
      const text = model.functions.length
        ? `No function matches “${model.filter}”.`
        : 'No traced functions yet: use %%tffunction or @kx.function.';
      this._list.replaceChildren(h('li', { className: 'jp-kx-muted' }, text));
      return;
    }
    const shown = visible.slice(0, this._pageLimit);
    const { defaultCollapse, expandedUpTo } = this._settings;
    const collapseByDefault =
      defaultCollapse === 'collapsed' ||
      (defaultCollapse === 'auto' && model.functions.length > expandedUpTo);
    const wanted: Element[] = [];
    for (const fn of shown) {
      let card = this._cards.get(fn.id);
      if (!card) {
        card = new FunctionCard(fn, {
          onSelect: signatureId =>
            this._onSelect({ functionId: fn.id, signatureId }),
          onToggleRetraces: open => {
            if (open) {
              this._openRetraces.add(fn.id);
            } else {
              this._openRetraces.delete(fn.id);
            }
          },
          onToggleExpanded: expanded => {
            this._expanded.set(expandKey(fn), expanded);
            this.render();
          },
          onExport: () => this._export(fn),
          onToggleAllSignatures: all => {
            if (all) {
              this._allSignatures.add(fn.id);
            } else {
              this._allSignatures.delete(fn.id);
            }
            this.render();
          }
        });
        this._cards.set(fn.id, card);
      }
      card.update(fn, {
        selection: model.selection,
        graphState: model.graphState,
        graphElement: () => this._graphElement(),
        retracesOpen: this._openRetraces.has(fn.id),
        expanded: this._expanded.get(expandKey(fn)) ?? !collapseByDefault,
        allSignatures: this._allSignatures.has(fn.id),
        exportState: model.exportState(fn.id)
      });
      wanted.push(card.node);
    }
    const rest = visible.length - shown.length;
    if (rest > 0) {
      setText(
        this._showMore,
        `Show ${Math.min(rest, PAGE_SIZE)} more of ${rest} functions`
      );
      wanted.push(this._showMoreItem);
    }
    // Move only what is out of place; remove what is no longer shown.
    wanted.forEach((node, index) => {
      const at = this._list.children[index];
      if (at !== node) {
        this._list.insertBefore(node, at ?? null);
      }
    });
    while (this._list.children.length > wanted.length) {
      this._list.lastElementChild!.remove();
    }
  }

  /** The selection's graph, laid out once per graph payload. */
  private _graphElement(): HTMLElement | null {
    const state = this._model.graphState;
    if (state.kind !== 'ready') {
      return null;
    }
    if (this._graphCache?.graph !== state.graph) {
      this._graphCache?.view.dispose();
      const selection = this._model.selection;
      const open = this._openGraph;
      const graph = state.graph;
      this._graphCache = {
        graph,
        view: new GraphView(graph, {
          onOpenInMain:
            open && selection
              ? () => open(graph, this._graphTitle(selection))
              : undefined
        })
      };
    }
    return this._graphCache.view.node;
  }

  /** "dense (x: float32[3])": the main-area tab's title for a selection. */
  private _graphTitle(selection: ISelection): string {
    const fn = this._model.getFunction(selection.functionId);
    const sig = fn?.signatures.find(s => s.id === selection.signatureId);
    return `${fn?.name ?? 'graph'} (${sig?.inputs ?? selection.signatureId})`;
  }

  private _onSelect(selection: ISelection): void {
    const current = this._model.selection;
    const same =
      current?.functionId === selection.functionId &&
      current.signatureId === selection.signatureId;
    // A second click on the selected signature hides its graph, unless the
    // graph failed: then the click is a retry.
    if (same && this._model.graphState.kind !== 'error') {
      this._model.select(null);
      return;
    }
    if (this._model.select(selection)) {
      this._requestGraph(selection);
    }
  }

  private _onKeyDown(event: KeyboardEvent): void {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) {
      return;
    }
    const current = event.target as HTMLElement;
    if (!current.matches?.(NAV_SELECTOR)) {
      return;
    }
    const header = current.classList.contains('jp-kx-function-header');
    if (header && (event.key === 'ArrowRight' || event.key === 'ArrowLeft')) {
      const expanded = current.getAttribute('aria-expanded') === 'true';
      if (expanded !== (event.key === 'ArrowRight')) {
        event.preventDefault();
        current.click();
        return;
      }
      if (event.key === 'ArrowRight') {
        // Already open: into its first signature.
        event.preventDefault();
        current.parentElement
          ?.querySelector<HTMLElement>('.jp-kx-signature')
          ?.focus();
        return;
      }
    }
    const target = navigationTarget(this._list, current, event.key);
    if (target) {
      event.preventDefault();
      target.focus();
    }
  }

  private _retryButton(): HTMLButtonElement {
    const button = h(
      'button',
      { className: 'jp-kx-retry jp-mod-styled', attrs: { type: 'button' } },
      'Retry'
    );
    button.addEventListener('click', () => this._retry?.());
    return button;
  }

  private _allSignatures = new Set<string>();
  private _lastRender = -Infinity;
  private _settings: IPanelSettings = { ...DEFAULT_SETTINGS };
  private _timer: number | null = null;
  private _headingId = `jp-kx-heading-${++panelCount}`;
  private _cards = new Map<string, FunctionCard>();
  /** Expanded or collapsed by the user, by function name and cell. */
  private _expanded = new Map<string, boolean>();
  private _pageLimit = PAGE_SIZE;
  private _showMore: HTMLButtonElement;
  private _showMoreItem: HTMLLIElement;
  private _graphCache: { graph: IGraphPayload; view: GraphView } | null = null;
  private _openGraph?: (graph: IGraphPayload, title: string) => void;
  private _list: HTMLUListElement;
  private _model: InspectorModel;
  private _openRetraces = new Set<string>();
  private _requestGraph: (selection: ISelection) => void;
  private _export: (fn: IFunctionInfo) => void;
  private _retry?: () => void;
  private _search: HTMLInputElement;
  private _stale = false;
  private _status: HTMLDivElement;
}

export namespace InspectorPanel {
  export interface IOptions {
    model: InspectorModel;
    /** Ask the kernel for a signature's graph (the model tracks the answer). */
    requestGraph: (selection: ISelection) => void;
    /** Ask where and how to export a function, then send the request. */
    exportFunction: (fn: IFunctionInfo) => void;
    /** Ask the bridge to look for the inspector again. */
    retry?: () => void;
    /** Show a graph in the main area (JupyterLab's MainAreaWidget). */
    openGraph?: (graph: IGraphPayload, title: string) => void;
    /** Initial settings (default: {@link DEFAULT_SETTINGS}). */
    settings?: IPanelSettings;
  }
}
