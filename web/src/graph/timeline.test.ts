import { describe, expect, it } from 'vitest';
import type { Schemas } from '../api/client';
import { expr, type ScenarioGraph } from './model';
import { outputLabel, timelineOf } from './timeline';

const graph: ScenarioGraph = {
  nodes: [
    { id: 'in', type: 'Source', ref: { typ: 'http', parameters: [{ name: 'maxOutOfOrderness', value: '0s' }] } },
    {
      id: 'w',
      type: 'CustomNode',
      nodeType: 'aggregate-tumbling',
      parameters: [
        { name: 'groupBy', value: [expr('#input.k')] },
        { name: 'windowLength', value: '10s' },
      ],
    },
  ],
  edges: [{ from: 'in', to: 'w', edgeType: null }],
};
const rec = (line: number, t: number, k: string) => ({ line, eventTime: t, variables: { input: { t, k } }, expressions: { 'groupBy[0]': { value: k } } });
const counts = { in: 4, out: 2, errors: 0, late: 1, partlyLate: 0 };
// Events at 1 s (a), 12 s (b) and 25 s (a), then a late one at 3 s (a): the watermark was 25 s.
const result = {
  nodes: { w: { counts, records: [rec(1, 1000, 'a'), rec(2, 12000, 'b'), rec(3, 25000, 'a'), rec(4, 3000, 'a')], totalRecords: 4, truncated: false } },
  lateEvents: { w: { total: 1, truncated: false, events: [{ line: 4, eventTime: 3000, variables: { input: { t: 3000, k: 'a' } }, late: { windowStart: 0, windowEnd: 10000, watermark: 25000 } }] } },
  windowResults: {
    w: {
      total: 2,
      truncated: false,
      results: [
        { line: 2, eventTime: 9999, key: ['a'], window: { start: 0, end: 10000 }, output: { count: 1 } },
        { line: 0, eventTime: 19999, key: ['b'], window: { start: 10000, end: 20000 }, output: { count: 1 } },
      ],
    },
  },
} as unknown as Schemas['TestResult'];

describe('timelineOf', () => {
  it('puts each key in a lane, windows as bars, events as ticks with the late one marked', () => {
    const t = timelineOf(result, graph, 'w')!;
    expect(t.lanes).toEqual(['["a"]', '["b"]']);
    expect(t.events.map((e) => [e.lane, e.t, e.late])).toEqual([
      [0, 1000, false],
      [1, 12000, false],
      [0, 25000, false],
      [0, 3000, true],
    ]);
    expect(t.windows.map((w) => [w.lane, w.start, w.end, w.label])).toEqual([
      [0, 0, 10000, '1'],
      [1, 10000, 20000, '1'],
    ]);
    expect([t.t0, t.t1]).toEqual([0, 25000]);
    // The latest on-time event, 25 s, less 0 s of out-of-orderness.
    expect(t.watermark).toBe(25000);
    expect(t.listed).toEqual({ events: 4, totalEvents: 4, windows: 2, totalWindows: 2 });
  });
  it('labels several aggregations by name', () => {
    expect(outputLabel({ count: 2, total: 31 })).toBe('count 2 · total 31');
    expect(outputLabel({ count: 2 })).toBe('2');
  });
});
