import { describe, expect, it } from 'vitest';
import type { ScenarioGraph } from '../graph/model';
import { countsOf, recordsPlaceholder, type TestResult } from './TestPanel';

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

describe('recordsPlaceholder', () => {
  it('names the fields the expressions read from #input, each once, the first five', () => {
    const graph: ScenarioGraph = {
      nodes: [
        { id: 'in', type: 'Source', ref: { typ: 'http', parameters: [{ name: 'timestamp', expression: { language: 'expr', expression: '#input.time' } }] } },
        { id: 'f', type: 'Filter', expression: { language: 'expr', expression: '#input.amount > 1000 && #input.card != "x" && #input.amount < 10' } },
        { id: 'out', type: 'Sink', ref: { typ: 'stdout', parameters: [{ name: 'value', expression: { language: 'expr', expression: '{a: #input.a, b: #input.b, c: #input.c}' } }] } },
      ],
      edges: [],
    };
    expect(recordsPlaceholder(graph)).toBe('{"time": …, "amount": …, "card": …, "a": …, "b": …}\none JSON record per line, with the fields the scenario reads');
  });
  it('is generic for a graph that reads no field', () => {
    expect(recordsPlaceholder({ nodes: [{ id: 'in', type: 'Source' }], edges: [] })).toBe('{"field": "value", ...}\none JSON record per line');
  });
});
