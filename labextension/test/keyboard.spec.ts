import { InspectorModel, ISelection } from '../src/model';
import { InspectorPanel, navigationTarget } from '../src/panel';
import { CapturingLogger, fn, snapshot } from './fixtures';

function setup(...functions: ReturnType<typeof fn>[]): {
  panel: InspectorPanel;
  requests: ISelection[];
} {
  const model = new InspectorModel({ logger: new CapturingLogger() });
  const requests: ISelection[] = [];
  const panel = new InspectorPanel({
    model,
    requestGraph: sel => requests.push(sel),
    exportFunction: () => undefined
  });
  document.body.appendChild(panel.node);
  model.setConnection({ state: 'connected' });
  model.handleMessage(snapshot(...functions));
  panel.render();
  return { panel, requests };
}

function press(key: string): void {
  const target = document.activeElement as HTMLElement;
  target.dispatchEvent(
    new KeyboardEvent('keydown', { key, bubbles: true, cancelable: true })
  );
}

function focused(): string {
  const el = document.activeElement as HTMLElement;
  if (el.classList.contains('jp-kx-function-header')) {
    return `fn ${el.querySelector('.jp-kx-name')!.textContent}`;
  }
  return `sig ${el.dataset.signatureId}`;
}

afterEach(() => {
  document.body.replaceChildren();
});

describe('keyboard navigation', () => {
  it('moves with the arrow keys between functions and their signatures', () => {
    const { panel } = setup(fn('a', 'first', 9), fn('b', 'second', 1));
    panel.node.querySelector<HTMLElement>('.jp-kx-function-header')!.focus();
    const seen = [focused()];
    for (let i = 0; i < 5; i++) {
      press('ArrowDown');
      seen.push(focused());
    }
    expect(seen).toEqual([
      'fn first',
      'sig 0',
      'sig 1',
      'fn second',
      'sig 0',
      'sig 1'
    ]);
    press('ArrowDown'); // at the end: stays
    expect(focused()).toBe('sig 1');
    press('ArrowUp');
    expect(focused()).toBe('sig 0');
    press('ArrowLeft'); // a signature: up to its function
    expect(focused()).toBe('fn second');
    press('Home');
    expect(focused()).toBe('fn first');
    press('End');
    expect(focused()).toBe('sig 1');
  });

  it('collapses and expands with left and right, skipping collapsed signatures', () => {
    const { panel } = setup(fn('a', 'first', 9), fn('b', 'second', 1));
    const header = panel.node.querySelector<HTMLElement>(
      '.jp-kx-function-header'
    )!;
    header.focus();
    press('ArrowLeft');
    expect(header.getAttribute('aria-expanded')).toBe('false');
    expect(document.activeElement).toBe(header);
    press('ArrowDown');
    expect(focused()).toBe('fn second');
    press('ArrowUp');
    press('ArrowRight');
    expect(header.getAttribute('aria-expanded')).toBe('true');
    press('ArrowRight'); // open: into the first signature
    expect(focused()).toBe('sig 0');
  });

  it('opens a signature graph with Enter (the button is a real button)', () => {
    const { panel, requests } = setup(fn('a', 'first', 9));
    const sig =
      panel.node.querySelector<HTMLButtonElement>('.jp-kx-signature')!;
    expect(sig.tagName).toBe('BUTTON');
    sig.click(); // what Enter does on a focused button
    expect(requests).toEqual([{ functionId: 'a', signatureId: '0' }]);
  });

  it('labels the panel, the list, each card and its body for screen readers', () => {
    const { panel } = setup(fn('a', 'first', 9));
    const node = panel.node;
    expect(node.getAttribute('role')).toBe('region');
    const heading = document.getElementById(
      node.getAttribute('aria-labelledby')!
    )!;
    expect(heading.textContent).toBe('Traced functions');
    expect(
      node.querySelector('.jp-kx-functions')!.getAttribute('aria-label')
    ).toMatch(/arrow keys/);
    const card = node.querySelector('.jp-kx-function')!;
    expect(card.getAttribute('aria-label')).toBe('function first');
    const header = card.querySelector('.jp-kx-function-header')!;
    const body = document.getElementById(header.getAttribute('aria-controls')!);
    expect(body).toBe(card.querySelector('.jp-kx-function-body'));
    expect(
      card.querySelector('.jp-kx-signatures')!.getAttribute('aria-label')
    ).toBe('signatures of first');
  });

  it('ignores keys it does not handle', () => {
    const { panel } = setup(fn('a', 'first', 9));
    const list = panel.node.querySelector('.jp-kx-functions')!;
    const header = list.querySelector('.jp-kx-function-header')!;
    expect(navigationTarget(list, header, 'x')).toBeNull();
    expect(navigationTarget(list, header, 'ArrowLeft')).toBeNull();
  });
});
