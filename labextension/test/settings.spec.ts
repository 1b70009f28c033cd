/**
 * The sidebar's settings (schema/sidebar.json): how cards start and how often
 * the panel redraws.
 */
import * as fs from 'fs';
import * as path from 'path';

import { InspectorModel } from '../src/model';
import {
  DEFAULT_SETTINGS,
  EXPANDED_UP_TO,
  InspectorPanel,
  IPanelSettings,
  readSettings
} from '../src/panel';
import { CapturingLogger, fn, snapshot, update } from './fixtures';

function setup(settings?: IPanelSettings): {
  model: InspectorModel;
  panel: InspectorPanel;
} {
  const model = new InspectorModel({ logger: new CapturingLogger() });
  const panel = new InspectorPanel({
    model,
    requestGraph: () => undefined,
    exportFunction: () => undefined,
    settings
  });
  document.body.appendChild(panel.node);
  model.setConnection({ state: 'connected' });
  return { model, panel };
}

function collapsed(panel: InspectorPanel): boolean[] {
  return [...panel.node.querySelectorAll('.jp-kx-function')].map(card =>
    card.classList.contains('jp-mod-collapsed')
  );
}

afterEach(() => {
  document.body.replaceChildren();
  jest.useRealTimers();
});

describe('settings', () => {
  it('match the schema: the same keys and defaults', () => {
    const schema = JSON.parse(
      fs.readFileSync(
        path.join(__dirname, '..', '..', 'schema', 'sidebar.json'),
        'utf-8'
      )
    );
    const defaults = Object.fromEntries(
      Object.entries(schema.properties).map(([key, value]) => [
        key,
        (value as { default: unknown }).default
      ])
    );
    expect(defaults).toEqual(DEFAULT_SETTINGS);
    expect(DEFAULT_SETTINGS.expandedUpTo).toBe(EXPANDED_UP_TO);
  });

  it('are read with a default for anything missing or wrong', () => {
    expect(readSettings({})).toEqual(DEFAULT_SETTINGS);
    expect(
      readSettings({
        updateIntervalMs: 500,
        defaultCollapse: 'collapsed',
        expandedUpTo: 10
      })
    ).toEqual({
      updateIntervalMs: 500,
      defaultCollapse: 'collapsed',
      expandedUpTo: 10
    });
    expect(
      readSettings({
        updateIntervalMs: -1,
        defaultCollapse: 'sideways',
        expandedUpTo: 1.5
      })
    ).toEqual(DEFAULT_SETTINGS);
  });

  it('decide how cards start, and a change applies at once', () => {
    const { model, panel } = setup();
    model.handleMessage(snapshot(fn('a', 'one', 2), fn('b', 'two', 1)));
    panel.render();
    expect(collapsed(panel)).toEqual([false, false]);
    panel.settings = { ...DEFAULT_SETTINGS, defaultCollapse: 'collapsed' };
    expect(collapsed(panel)).toEqual([true, true]);
    panel.settings = { ...DEFAULT_SETTINGS, expandedUpTo: 1 };
    expect(collapsed(panel)).toEqual([true, true]);
    panel.settings = {
      ...DEFAULT_SETTINGS,
      defaultCollapse: 'expanded',
      expandedUpTo: 0
    };
    expect(collapsed(panel)).toEqual([false, false]);
  });

  it('keep a card the user toggled as the user left it', () => {
    const { model, panel } = setup();
    model.handleMessage(snapshot(fn('a', 'one', 2)));
    panel.render();
    panel.node.querySelector<HTMLElement>('.jp-kx-function-header')!.click();
    expect(collapsed(panel)).toEqual([true]);
    panel.settings = { ...DEFAULT_SETTINGS, defaultCollapse: 'expanded' };
    expect(collapsed(panel)).toEqual([true]);
  });

  it('throttle redraws to the update interval', () => {
    jest.useFakeTimers();
    const { model, panel } = setup({
      ...DEFAULT_SETTINGS,
      updateIntervalMs: 1000
    });
    // Visible for Lumino: attached and shown.
    jest.spyOn(panel, 'isVisible', 'get').mockReturnValue(true);
    model.handleMessage(snapshot(fn('a', 'one', 2)));
    panel.render();
    const calls = (): string =>
      panel.node.querySelector('[data-counter="calls"]')!.textContent!;
    expect(calls()).toBe('10');
    const next = fn('a', 'one', 2);
    next.counters.calls = 11;
    model.handleMessage(update([next]));
    (panel as unknown as { onUpdateRequest: (m: unknown) => void })[
      'onUpdateRequest'
    ](null);
    expect(calls()).toBe('10'); // within the interval: waits
    jest.advanceTimersByTime(1000);
    // The timer asked Lumino for an update; deliver it as Lumino would.
    (panel as unknown as { onUpdateRequest: (m: unknown) => void })[
      'onUpdateRequest'
    ](null);
    expect(calls()).toBe('11');
  });
});
