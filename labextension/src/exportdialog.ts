/**
 * The Export dialog: which format and where, for one traced function.
 *
 * The kernel writes the file (`request_export`, answered by an `export`
 * message); this only asks. Paths are relative to the kernel's working
 * directory, as in `%tffunction_save`, which writes the same files.
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { h } from './dom';
import { EXPORT_FORMATS, ExportFormat } from './protocol';

/** What the user chose. */
export interface IExportChoice {
  format: ExportFormat;
  path: string;
}

const FORMAT_LABELS: Record<ExportFormat, string> = {
  saved_model: 'Saved model (a directory; kx.saved_model.load)',
  onnx: 'ONNX model (.onnx; needs the [onnx] extra)',
  source: 'NumPy source (one .py file needing only NumPy)'
};

const SUFFIXES: Record<ExportFormat, string> = {
  saved_model: '_saved',
  onnx: '.onnx',
  source: '.py'
};

/** The path offered for `name` in `format` (the magic's examples use the same). */
export function defaultExportPath(name: string, format: ExportFormat): string {
  return `${name}${SUFFIXES[format]}`;
}

/** The dialog's body: a format select and a path field, both labelled. */
export class ExportBody
  extends Widget
  implements Dialog.IBodyWidget<IExportChoice>
{
  constructor(functionName: string) {
    super();
    this.addClass('jp-kx-export-dialog');
    this._name = functionName;
    this._format = h('select', {
      className: 'jp-mod-styled',
      attrs: { id: `jp-kx-export-format-${++dialogCount}` }
    });
    for (const format of EXPORT_FORMATS) {
      this._format.appendChild(
        h('option', { attrs: { value: format } }, FORMAT_LABELS[format])
      );
    }
    this._path = h('input', {
      className: 'jp-mod-styled',
      attrs: { type: 'text', id: `jp-kx-export-path-${dialogCount}` }
    });
    this._path.value = defaultExportPath(functionName, 'saved_model');
    // Follow the format with the suggested path until the user types one.
    this._format.addEventListener('change', () => {
      if (!this._edited) {
        this._path.value = defaultExportPath(this._name, this.format);
      }
    });
    this._path.addEventListener('input', () => {
      this._edited = true;
    });
    this.node.append(
      h('label', { attrs: { for: this._format.id } }, 'Format'),
      this._format,
      h(
        'label',
        { attrs: { for: this._path.id } },
        'Path (relative to the kernel)'
      ),
      this._path
    );
  }

  get format(): ExportFormat {
    return this._format.value as ExportFormat;
  }

  getValue(): IExportChoice {
    return { format: this.format, path: this._path.value.trim() };
  }

  protected override onAfterAttach(): void {
    this._path.focus();
    this._path.select();
  }

  private _edited = false;
  private _format: HTMLSelectElement;
  private _name: string;
  private _path: HTMLInputElement;
}

let dialogCount = 0;

/** Ask how to export `functionName`; null when cancelled or no path was given. */
export async function askExport(
  functionName: string
): Promise<IExportChoice | null> {
  const result = await showDialog({
    title: `Export ${functionName}`,
    body: new ExportBody(functionName),
    buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Export' })],
    focusNodeSelector: 'input'
  });
  if (!result.button.accept || !result.value || !result.value.path) {
    return null;
  }
  return result.value;
}
