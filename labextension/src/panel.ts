/**
 * The "Traced functions" sidebar panel: connection status, a search box and
 * the list of function cards.  It renders from the model and reports user
 * intent (select a signature, retry) through callbacks, so it never talks to
 * the kernel itself.
 */

import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { h } from './dom';
import { renderFunction } from './functionview';
import { GraphView } from './graphview';
import { InspectorModel, ISelection } from './model';
import { IGraphPayload, PROTOCOL_VERSION } from './protocol';

export class InspectorPanel extends Widget {
  constructor(options: InspectorPanel.IOptions) {
    super();
    this._model = options.model;
    this._requestGraph = options.requestGraph;
    this._retry = options.retry;
    this._openGraph = options.openGraph;
    this.addClass('jp-kx-panel');

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
    this._list = h('ul', { className: 'jp-kx-functions' });
    this.node.append(
      h(
        'div',
        { className: 'jp-kx-header' },
        h('h2', {}, 'Traced functions'),
        this._search
      ),
      this._status,
      this._list
    );
    this._model.changed.connect(() => this.update(), this);
    this.render();
  }

  /** Rebuild status and list from the model (synchronous; tests call it). */
  render(): void {
    this._stale = false;
    this._renderStatus();
    this._renderList();
  }

  protected override onUpdateRequest(_msg: Message): void {
    // A collapsed sidebar is not worth redrawing; catch up when shown.
    if (this.isVisible) {
      this.render();
    } else {
      this._stale = true;
    }
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

  private _renderList(): void {
    const model = this._model;
    if (model.connection.state !== 'connected') {
      this._list.replaceChildren();
      return;
    }
    const visible = model.visibleFunctions;
    if (visible.length === 0) {
      const text = model.functions.length
        ? `No function matches “${model.filter}”.`
        : 'No traced functions yet: use %%tffunction or @kx.function.';
      this._list.replaceChildren(h('li', { className: 'jp-kx-muted' }, text));
      return;
    }
    this._list.replaceChildren(
      ...visible.map(fn =>
        renderFunction(fn, {
          selection: model.selection,
          graphState: model.graphState,
          graphElement: () => this._graphElement(),
          retracesOpen: this._openRetraces.has(fn.id),
          onSelect: signatureId =>
            this._onSelect({ functionId: fn.id, signatureId }),
          onToggleRetraces: open => {
            if (open) {
              this._openRetraces.add(fn.id);
            } else {
              this._openRetraces.delete(fn.id);
            }
          }
        })
      )
    );
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

  private _retryButton(): HTMLButtonElement {
    const button = h(
      'button',
      { className: 'jp-kx-retry jp-mod-styled', attrs: { type: 'button' } },
      'Retry'
    );
    button.addEventListener('click', () => this._retry?.());
    return button;
  }

  private _graphCache: { graph: IGraphPayload; view: GraphView } | null = null;
  private _openGraph?: (graph: IGraphPayload, title: string) => void;
  private _list: HTMLUListElement;
  private _model: InspectorModel;
  private _openRetraces = new Set<string>();
  private _requestGraph: (selection: ISelection) => void;
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
    /** Ask the bridge to look for the inspector again. */
    retry?: () => void;
    /** Show a graph in the main area (JupyterLab's MainAreaWidget). */
    openGraph?: (graph: IGraphPayload, title: string) => void;
  }
}
