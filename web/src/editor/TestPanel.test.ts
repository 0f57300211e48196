import { describe, expect, it } from 'vitest';
import type { ScenarioGraph } from '../graph/model';
import { countsOf, type TestResult } from './TestPanel';

const counts = (c: Partial<TestResult['nodes'][string]['counts']>) => ({ in: 0, out: 0, errors: 0, late: 0, partlyLate: 0, ...c });
const node = (c: Partial<TestResult['nodes'][string]['counts']>) => ({ counts: counts(c), records: [], totalRecords: c.in ?? 0, truncated: false });

describe('countsOf', () => {
  const graph: ScenarioGraph = {
    nodes: [
      { id: 'src', type: 'Source' },
      { id: 'hop', type: 'CustomNode', nodeType: 'aggregate-hopping' },
      { id: 'out', type: 'Sink' },
      { id: 'late', type: 'Sink' },
    ],
    edges: [
      { from: 'src', to: 'hop', edgeType: null },
      { from: 'hop', to: 'out', edgeType: null },
      { from: 'hop', to: 'late', edgeType: { type: 'Late' } },
    ],
  };
  const result: TestResult = {
    elapsedMs: 1,
    errors: [],
    errorsTruncated: false,
    listsCut: false,
    records: 5,
    totalErrors: 0,
    warnings: [],
    sinkOutputs: {},
    windowResults: {},
    lateEvents: {},
    nodes: {
      src: node({ in: 5, out: 5 }),
      hop: node({ in: 5, out: 3, late: 1, partlyLate: 2 }),
      out: node({ in: 3, out: 3 }),
      late: node({ in: 1, out: 1 }),
    },
  };

  it('counts records in per node and per edge, the late edge too', () => {
    const c = countsOf(result, graph);
    expect(c.counts).toEqual({ src: 5, hop: 5, out: 3, late: 1 });
    expect(c.edgeCounts).toEqual({ 'src\u0000hop': 5, 'hop\u0000out': 3, 'hop\u0000late': 1 });
  });

  it('keeps late and partly late events of the aggregates that had any', () => {
    expect(countsOf(result, graph).late).toEqual({ hop: { late: 1, partlyLate: 2 } });
  });
});
