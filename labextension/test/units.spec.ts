/**
 * The sidebar writes numbers by the same rule as the views the kernel renders:
 * both read this table (`units.json`; `tests/jupyter/test_units.py` checks the
 * Python side against it).
 */
import { duration, hitRate, plural } from '../src/units';
import cases from './units.json';

describe('one unit rule for every view', () => {
  it.each(cases.duration_ms as [number | null, string][])(
    'duration(%p ms) is %p',
    (ms, text) => {
      expect(duration(ms)).toBe(text);
    }
  );
  it.each(cases.hit_rate as [number, number, string][])(
    'hitRate(%p, %p) is %p',
    (hits, calls, text) => {
      expect(hitRate(hits, calls)).toBe(text);
    }
  );
  it.each(cases.plural as [number, string, string][])(
    'plural(%p, %p) is %p',
    (n, noun, text) => {
      expect(plural(n, noun)).toBe(text);
    }
  );
  it('never says 100% unless every call hit', () => {
    for (let calls = 1; calls < 2000; calls += 37) {
      for (const hits of [1, calls - 1]) {
        const text = hitRate(hits, calls);
        expect(text.endsWith('(100%)')).toBe(hits === calls);
        expect(text.endsWith('(0%)')).toBe(hits === 0);
      }
    }
  });
});
