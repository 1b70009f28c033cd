/**
 * The JupyterLab plugin: a "Traced functions" panel in the left area that
 * follows the active notebook's kernel.
 *
 * Roles are split as in JupyterLab's debugger sidebar: protocol.ts (message
 * types), comm.ts (kernel transport), model.ts (state), panel.ts and its
 * views (DOM).  This file only wires them to the application.
 */

import {
  ILabShell,
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { AnnouncementWatcher, InspectorBridge } from './comm';
import { GraphView } from './graphview';
import { InspectorModel } from './model';
import { InspectorPanel, IPanelSettings, readSettings } from './panel';
import { askExport } from './exportdialog';
import {
  IGraphPayload,
  requestExport,
  requestGraph,
  requestSnapshot
} from './protocol';
import { RestartMarker } from './restart';

const PLUGIN_ID = 'jupyterlab-tffunction:sidebar';
const PANEL_ID = 'jp-kx-inspector';

/** The commands the plugin adds (the command palette lists them). */
export const CommandIDs = {
  open: 'tffunction:open-sidebar',
  refresh: 'tffunction:refresh'
} as const;

const PALETTE_CATEGORY = 'Traced Functions';

/** A small dataflow-graph glyph; a constant, so LabIcon's SVG parsing is safe. */
const tffunctionIcon = new LabIcon({
  name: 'jupyterlab-tffunction:traced-functions',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
    '<g class="jp-icon3" fill="#616161">' +
    '<circle cx="6" cy="5" r="2.5"/><circle cx="18" cy="5" r="2.5"/>' +
    '<circle cx="12" cy="19" r="2.5"/>' +
    '<path d="M7 7.2l4 9.3 1.8-.8-4-9.3zM17 7.2l-4 9.3-1.8-.8 4-9.3z"/>' +
    '</g></svg>'
});

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: "Lists the traced functions of the active notebook's kernel.",
  autoStart: true,
  requires: [INotebookTracker, ILabShell],
  optional: [ILayoutRestorer, ICommandPalette, ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    labShell: ILabShell,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null
  ): void => {
    const watcher = new AnnouncementWatcher();
    const bridge = new InspectorBridge({ watcher });
    const model = new InspectorModel();
    bridge.statusChanged.connect((_, status) => model.setConnection(status));
    bridge.messageReceived.connect((_, data) => model.handleMessage(data));

    const panel = new InspectorPanel({
      model,
      requestGraph: selection => {
        const sent = bridge.send(
          requestGraph(selection.functionId, selection.signatureId)
        );
        if (!sent) {
          model.failGraph(selection, 'not connected to the kernel');
        }
      },
      exportFunction: fn => {
        void askExport(fn.name).then(choice => {
          if (!choice) {
            return;
          }
          model.startExport(fn.id, choice.format, choice.path);
          if (!bridge.send(requestExport(fn.id, choice.format, choice.path))) {
            model.failExport(fn.id, 'not connected to the kernel');
          }
        });
      },
      retry: () => bridge.refresh(),
      openGraph: (graph, title) => openGraphInMain(app, graph, title)
    });
    panel.id = PANEL_ID;
    panel.title.icon = tffunctionIcon;
    panel.title.caption = 'Traced functions';
    labShell.add(panel, 'left', { rank: 650 });
    restorer?.add(panel, PANEL_ID);

    app.commands.addCommand(CommandIDs.open, {
      label: 'Show Traced Functions',
      caption: "Open the sidebar of the notebook kernel's traced functions",
      execute: () => {
        labShell.activateById(PANEL_ID);
        panel.node.querySelector<HTMLElement>('.jp-kx-search')?.focus();
      }
    });
    app.commands.addCommand(CommandIDs.refresh, {
      label: 'Refresh Traced Functions',
      caption: 'Ask the kernel for every traced function again',
      execute: () => {
        // Connected: a fresh snapshot; otherwise look for the inspector again.
        if (!bridge.send(requestSnapshot())) {
          bridge.refresh();
        }
      }
    });
    for (const command of [CommandIDs.open, CommandIDs.refresh]) {
      palette?.addItem({ command, category: PALETTE_CATEGORY });
    }

    if (settingRegistry) {
      void settingRegistry
        .load(PLUGIN_ID)
        .then(settings => {
          const apply = (): void => {
            panel.settings = readSettings(
              settings.composite as Partial<
                Record<keyof IPanelSettings, unknown>
              >
            );
          };
          settings.changed.connect(apply);
          apply();
        })
        .catch(reason =>
          console.warn('jupyterlab-tffunction: cannot load settings', reason)
        );
    }

    // Every notebook's kernel accepts announcements, not just the active
    // one's (see AnnouncementWatcher for why).
    const watchNotebook = (notebook: NotebookPanel): void => {
      const context = notebook.sessionContext;
      const watch = (): void => {
        const kernel = context.session?.kernel;
        if (kernel) {
          watcher.watch(kernel);
        }
      };
      context.kernelChanged.connect(watch);
      watch();
      // Monitors under its cells say so when its kernel restarts.
      const marker = new RestartMarker(notebook.content.node, context);
      notebook.disposed.connect(() => marker.dispose());
    };
    tracker.forEach(watchNotebook);
    tracker.widgetAdded.connect((_, notebook) => watchNotebook(notebook));

    // tracker.currentWidget stays on the last notebook while another kind of
    // widget has focus, which is what the panel should keep showing.
    const follow = (): void =>
      bridge.attach(tracker.currentWidget?.sessionContext ?? null);
    tracker.currentChanged.connect(follow);
    follow();
  }
};

/**
 * The same graph view in a main-area tab, fitted both ways: big graphs get
 * the room a sidebar cannot give.  The tab keeps its own copy of the payload,
 * so it stays readable after the sidebar moves on (or the kernel restarts).
 */
function openGraphInMain(
  app: JupyterFrontEnd,
  graph: IGraphPayload,
  title: string
): MainAreaWidget<Widget> {
  const view = new GraphView(graph, { fill: true });
  const content = new Widget({ node: view.node });
  content.addClass('jp-kx-graph-main-content');
  const widget = new MainAreaWidget({ content });
  widget.addClass('jp-kx-graph-main');
  widget.id = `jp-kx-graph-${++graphTabs}`;
  widget.title.label = `Graph: ${title}`;
  widget.title.caption = `Traced graph of ${title}`;
  widget.title.icon = tffunctionIcon;
  widget.title.closable = true;
  widget.disposed.connect(() => view.dispose());
  app.shell.add(widget, 'main');
  app.shell.activateById(widget.id);
  return widget;
}

let graphTabs = 0;

export default plugin;
