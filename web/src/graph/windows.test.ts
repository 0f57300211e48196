import { describe, expect, it } from 'vitest';
import { parseDuration, windowOf } from './windows';

const at = (hhmmss: string) => Date.UTC(2024, 4, 1, ...(hhmmss.split(':').map(Number) as [number, number, number]));

describe('parseDuration', () => {
  it('reads Go and ISO 8601 durations', () => {
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('PT1H')).toBe(3_600_000);
    expect(parseDuration('P1DT2M')).toBe(86_520_000);
    expect(parseDuration('soon')).toBeUndefined();
    expect(parseDuration('PT')).toBeUndefined();
    expect(parseDuration('')).toBeUndefined();
  });
});

describe('windowOf', () => {
  const sliding = (length: string, precision?: string) => ({
    id: 'w',
    type: 'CustomNode',
    nodeType: 'aggregate-sliding',
    parameters: [{ name: 'windowLength', value: length }, ...(precision ? [{ name: 'precision', value: precision }] : [])],
  });
  it('gives a sliding window the slices ending with the event (the example of docs/semantics.md §4)', () => {
    expect(windowOf(sliding('10m'), at('10:00:05'))).toEqual({ start: at('09:51:00'), end: at('10:01:00') });
    expect(windowOf(sliding('10m'), at('10:10:20'))).toEqual({ start: at('10:01:00'), end: at('10:11:00') });
    // 90 s is not whole minutes: P = 1 s.
    expect(windowOf(sliding('90s'), at('10:00:05'))).toEqual({ start: at('09:58:36'), end: at('10:00:06') });
  });
  it('keeps the window a result carries, and finds a tumbling one', () => {
    expect(windowOf(sliding('10m'), 5, { start: 1, end: 2 })).toEqual({ start: 1, end: 2 });
    const tumbling = { id: 't', type: 'CustomNode', nodeType: 'aggregate-tumbling', parameters: [{ name: 'windowLength', value: '1h' }] };
    expect(windowOf(tumbling, at('10:59:59'))).toEqual({ start: at('10:00:00'), end: at('11:00:00') });
    expect(windowOf({ id: 's', type: 'CustomNode', nodeType: 'aggregate-session' }, 5)).toBeUndefined();
  });
  it('shifts a tumbling window by its offset, and gives none with a time zone', () => {
    const tumbling = (extra: { name: string; value: string }[], length = '1h') => ({ id: 't', type: 'CustomNode', nodeType: 'aggregate-tumbling', parameters: [{ name: 'windowLength', value: length }, ...extra] });
    // 1 h windows from 00:15: 00:10 is in [23:15, 00:15) of the day before, 00:20 and 00:50 in [00:15, 01:15).
    const offset = tumbling([{ name: 'offset', value: '15m' }]);
    expect(windowOf(offset, at('00:10:00'))).toEqual({ start: at('00:15:00') - 3_600_000, end: at('00:15:00') });
    expect(windowOf(offset, at('00:20:00'))).toEqual({ start: at('00:15:00'), end: at('01:15:00') });
    expect(windowOf(offset, at('00:50:00'))).toEqual({ start: at('00:15:00'), end: at('01:15:00') });
    expect(windowOf(tumbling([{ name: 'timeZone', value: 'Europe/Warsaw' }], '1d'), at('10:00:00'))).toBeUndefined();
  });
});
