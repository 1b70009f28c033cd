/**
 * How every view writes numbers: durations, cache-hit rates, counts of things.
 *
 * One rule, written twice: here for the sidebar and in
 * `kernel_ext/jupyter/units.py` for the views the kernel renders (the monitor,
 * `%retrace_report`).  Both are tested against one table,
 * `labextension/test/units.json`, so a duration reads the same everywhere.
 */

/** [unit, its size in ms], smallest first. */
const UNITS: [string, number][] = [
  ['µs', 1e-3],
  ['ms', 1],
  ['s', 1e3]
];

/** Three significant figures with thousands separators: 4.25, 99.2, 946, 1,234. */
function figures(value: number): string {
  const magnitude = Math.abs(value);
  const decimals = magnitude < 9.995 ? 2 : magnitude < 99.95 ? 1 : 0;
  return value.toLocaleString('en-US', {
    minimumFractionDigits: decimals,
    maximumFractionDigits: decimals
  });
}

/** Milliseconds for people: 41.0 µs, 4.25 ms, 99.2 ms, 1.25 s; "—" for null. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) {
    return '—';
  }
  let [unit, size] = UNITS[0];
  for (const [name, scale] of UNITS) {
    if (Math.abs(ms) / scale >= 0.9995) {
      [unit, size] = [name, scale];
    }
  }
  return `${figures(ms / size)} ${unit}`;
}

/** A percentage that never claims all or none wrongly: 75%, 99.7%, >99.9%. */
export function percent(part: number, whole: number): string {
  if (whole <= 0) {
    return '—';
  }
  if ((part * 100) % whole === 0) {
    return `${(part * 100) / whole}%`;
  }
  const text = ((100 * part) / whole).toFixed(1);
  if (text === '100.0') {
    return '>99.9%';
  }
  if (text === '0.0') {
    return '<0.1%';
  }
  return `${text.replace(/\.0$/, '')}%`;
}

/** "299 of 300 (99.7%)"; "0 of 0" before any call. */
export function hitRate(hits: number, calls: number): string {
  const counted = `${count(hits)} of ${count(calls)}`;
  return calls <= 0 ? counted : `${counted} (${percent(hits, calls)})`;
}

/** "1 trace", "1,024 traces"; `nouns` for an irregular plural. */
export function plural(n: number, noun: string, nouns?: string): string {
  return `${count(n)} ${n === 1 ? noun : (nouns ?? `${noun}s`)}`;
}

/** An integer with thousands separators: 1,024. */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}
