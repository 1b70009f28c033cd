/**
 * The function list updated in place (issue 17, items 6–8): tokens that never
 * break inside, keyed cards whose elements (and so focus, selection and open
 * details) survive live updates, collapsed cards and paging for many
 * functions.
 */
import { splitArguments } from '../src/dom';
import {
  LAST_RUN_TOOLTIP,
  renderArguments,
  SIGNATURES_SHOWN,
  visibleSignatures
} from '../src/functionview';
import { EXPANDED_UP_TO, PAGE_SIZE } from '../src/panel';
import { IFunctionInfo } from '../src/protocol';
import { connectedPanel, fn, signature, snapshot, update } from './fixtures';

/** *count* functions with *sigs* signatures each, the costliest last. */
function many(count: number, sigs: number): IFunctionInfo[] {
  return Array.from({ length: count }, (_, i) =>
    fn(`f${i}`, `function_${i}`, i + 1, {
      cell: `[${i + 1}]`,
      signatures: Array.from({ length: sigs }, (_, j) =>
        signature(String(j), `x: float32[${j + 1}, 3], n: ${j}`, {
          last_used: j === sigs - 1
        })
      )
    })
  );
}

afterEach(() => {
  document.body.replaceChildren();
});

describe('tokens (item 6)', () => {
  it('splits arguments at top-level commas only', () => {
    expect(splitArguments('x: float32[2, 3], n: 3')).toEqual([
      'x: float32[2, 3]',
      'n: 3'
    ]);
    expect(
      splitArguments("cfg: {'a': 1, 'b': [1, 2]}, tag: 'x, y', t: (1, 2)")
    ).toEqual(["cfg: {'a': 1, 'b': [1, 2]}", "tag: 'x, y'", 't: (1, 2)']);
    expect(splitArguments('')).toEqual([]);
  });

  it('renders unbreakable tokens, breaks only between them, text unchanged', () => {
    const span = document.createElement('span');
    span.append(...renderArguments('x: float32[2, 3], n: 3'));
    expect(span.textContent).toBe('(x: float32[2, 3], n: 3)');
    const tokens = [...span.querySelectorAll('.jp-kx-token')];
    expect(tokens.map(t => t.textContent)).toEqual([
      '(x:',
      'float32[2, 3],',
      'n:',
      '3)'
    ]);
    const args = [...span.querySelectorAll('.jp-kx-arg')];
    expect(args.map(a => a.getAttribute('title'))).toEqual([
      'x: float32[2, 3]',
      'n: 3'
    ]);
    const empty = document.createElement('span');
    empty.append(...renderArguments(''));
    expect(empty.textContent).toBe('()');
  });

  it('puts the whole signature on hover', () => {
    const { model, panel } = connectedPanel();
    model.handleMessage(snapshot(fn('a', 'f', 1)));
    panel.render();
    const spec = panel.node.querySelector('.jp-kx-spec')!;
    expect(spec.getAttribute('title')).toBe('(x: float32[2]) → float32[2]');
  });
});

describe('incremental updates (item 7)', () => {
  it('updates counters in place: the same elements, focus kept', () => {
    const { model, panel } = connectedPanel();
    model.handleMessage(snapshot(fn('a', 'f', 1)));
    panel.render();
    const card = panel.node.querySelector('.jp-kx-function')!;
    const button = card.querySelector<HTMLButtonElement>('.jp-kx-signature')!;
    const calls = card.querySelector('[data-counter="calls"]')!;
    const callsText = calls.firstChild;
    const inputs = card.querySelector('.jp-kx-inputs')!.firstChild;
    button.focus();
    const changed = fn('a', 'f', 1);
    changed.counters.calls = 11;
    model.handleMessage(update([changed]));
    panel.render();
    expect(panel.node.querySelector('.jp-kx-function')).toBe(card);
    expect(card.querySelector('.jp-kx-signature')).toBe(button);
    expect(document.activeElement).toBe(button);
    expect(calls.textContent).toBe('11');
    // Unchanged text keeps its very text node (a selection in it survives).
    expect(card.querySelector('.jp-kx-inputs')!.firstChild).toBe(inputs);
    expect(card.querySelector('[data-counter="traces"]')!.firstChild).not.toBe(
      callsText
    );
  });

  it('keeps a text selection in a fix and the open history across updates', () => {
    const { model, panel } = connectedPanel();
    model.handleMessage(snapshot(fn('a', 'f', 1)));
    panel.render();
    const details = panel.node.querySelector<HTMLDetailsElement>('details')!;
    details.open = true;
    details.dispatchEvent(new Event('toggle'));
    const code = panel.node.querySelector('.jp-kx-fix code')!;
    const range = document.createRange();
    range.selectNodeContents(code);
    window.getSelection()!.removeAllRanges();
    window.getSelection()!.addRange(range);
    for (let calls = 11; calls < 15; calls++) {
      const changed = fn('a', 'f', 1);
      changed.counters.calls = calls;
      model.handleMessage(update([changed]));
      panel.render();
    }
    expect(panel.node.querySelector('.jp-kx-fix code')).toBe(code);
    expect(window.getSelection()!.toString()).toBe(code.textContent);
    expect(panel.node.querySelector('details')).toBe(details);
    expect(details.open).toBe(true);
  });

  it('moves cards only when the cost order changes, and drops removed ones', () => {
    const { model, panel } = connectedPanel();
    model.handleMessage(snapshot(fn('a', 'a', 1), fn('b', 'b', 2)));
    panel.render();
    const names = (): string[] =>
      [...panel.node.querySelectorAll('.jp-kx-name')].map(n => n.textContent!);
    expect(names()).toEqual(['b', 'a']);
    const a = panel.node.querySelector('[data-function-id="a"]');
    model.handleMessage(update([fn('a', 'a', 5)]));
    panel.render();
    expect(names()).toEqual(['a', 'b']);
    expect(panel.node.querySelector('[data-function-id="a"]')).toBe(a);
    model.handleMessage(update([], ['b']));
    panel.render();
    expect(names()).toEqual(['a']);
  });

  it('explains "last run" on hover (item 9)', () => {
    const { model, panel } = connectedPanel();
    model.handleMessage(snapshot(fn('a', 'f', 1)));
    panel.render();
    const item = panel.node.querySelector(
      '[data-counter="last run"]'
    )!.parentElement!;
    expect(item.getAttribute('title')).toBe(LAST_RUN_TOOLTIP);
  });
});

describe('many functions (item 8)', () => {
  it('starts collapsed beyond a few functions, costliest first', () => {
    const { model, panel } = connectedPanel();
    model.handleMessage(snapshot(...many(20, 10)));
    panel.render();
    const cards = [...panel.node.querySelectorAll('.jp-kx-function')];
    expect(cards).toHaveLength(20);
    expect(cards[0].querySelector('.jp-kx-name')!.textContent).toBe(
      'function_19'
    );
    expect(cards.every(c => c.classList.contains('jp-mod-collapsed'))).toBe(
      true
    );
    expect(cards[0].querySelector('.jp-kx-summary')!.textContent).toBe(
      '10 signatures · 10 calls · 2 traces'
    );
    // A collapsed card keeps its body out of the way.
    expect(
      cards[0].querySelector<HTMLElement>('.jp-kx-function-body')!.hidden
    ).toBe(true);
    const nodes = panel.node.querySelectorAll('*').length;
    expect(nodes).toBeLessThan(1200);
  });

  it('remembers expanded cards by name and cell, across updates and re-runs', () => {
    const { model, panel } = connectedPanel();
    model.handleMessage(snapshot(...many(6, 2)));
    panel.render();
    expect(6).toBeGreaterThan(EXPANDED_UP_TO);
    const header = (): HTMLButtonElement =>
      panel.node.querySelector<HTMLButtonElement>(
        '[data-function-id="f5"] .jp-kx-function-header, ' +
          '[data-function-id="f5-rerun"] .jp-kx-function-header'
      )!;
    header().click();
    expect(header().getAttribute('aria-expanded')).toBe('true');
    model.handleMessage(update(many(6, 2).slice(0, 5)));
    panel.render();
    expect(header().getAttribute('aria-expanded')).toBe('true');
    // The cell re-run: a new function object with the same name and cell.
    const rerun = { ...many(6, 2)[5], id: 'f5-rerun' };
    model.handleMessage(update([rerun], ['f5']));
    panel.render();
    expect(header().getAttribute('aria-expanded')).toBe('true');
    header().click();
    expect(header().getAttribute('aria-expanded')).toBe('false');
  });

  it('lists the first signatures, the selected and the last used; all on demand', () => {
    const sigs = many(1, 10)[0].signatures;
    const shown = visibleSignatures(sigs, '7', false).map(s => s.id);
    expect(shown).toEqual(['0', '1', '2', '3', '4', '7', '9']);
    expect(visibleSignatures(sigs, null, true)).toHaveLength(10);

    const { model, panel } = connectedPanel();
    model.handleMessage(snapshot(...many(1, 10)));
    panel.render();
    const card = panel.node.querySelector('.jp-kx-function')!;
    expect(card.querySelectorAll('.jp-kx-signature')).toHaveLength(
      SIGNATURES_SHOWN + 1
    );
    const more = card.querySelector<HTMLButtonElement>(
      '.jp-kx-more-signatures'
    )!;
    expect(more.textContent).toBe('Show 4 more (10 signatures in all)');
    more.click();
    expect(card.querySelectorAll('.jp-kx-signature')).toHaveLength(10);
  });

  it('never offers to show "0 more" signatures', () => {
    // six signatures, the sixth last used: the first five and it are all shown
    const { model, panel } = connectedPanel();
    model.handleMessage(snapshot(...many(1, 6)));
    panel.render();
    const card = panel.node.querySelector('.jp-kx-function')!;
    expect(card.querySelectorAll('.jp-kx-signature')).toHaveLength(6);
    const more = card.querySelector<HTMLButtonElement>(
      '.jp-kx-more-signatures'
    )!;
    expect(more.hidden).toBe(true);
    expect(card.textContent).not.toContain('0 more');
  });

  it('pages long lists', () => {
    const { model, panel } = connectedPanel();
    model.handleMessage(snapshot(...many(PAGE_SIZE + 7, 1)));
    panel.render();
    expect(panel.node.querySelectorAll('.jp-kx-function')).toHaveLength(
      PAGE_SIZE
    );
    const more =
      panel.node.querySelector<HTMLButtonElement>('.jp-kx-show-more')!;
    expect(more.textContent).toBe('Show 7 more of 7 functions');
    more.click();
    expect(panel.node.querySelectorAll('.jp-kx-function')).toHaveLength(
      PAGE_SIZE + 7
    );
    expect(panel.node.querySelector('.jp-kx-show-more')).toBeNull();
  });

  it('updates 20 × 10 signatures quickly', () => {
    const { model, panel } = connectedPanel();
    const functions = many(20, 10);
    model.handleMessage(snapshot(...functions));
    panel.render();
    // Expand them all: the worst case for an update.
    panel.node
      .querySelectorAll<HTMLButtonElement>('.jp-kx-function-header')
      .forEach(b => b.click());
    const start = performance.now();
    for (let round = 0; round < 20; round++) {
      functions.forEach(f => (f.counters.calls += 1));
      model.handleMessage(update(functions));
      panel.render();
    }
    const perUpdate = (performance.now() - start) / 20;
    // jsdom is slower than a browser; the e2e test measures the real figure.
    expect(perUpdate).toBeLessThan(100);
  });
});
