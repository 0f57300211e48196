import { describe, expect, it } from 'vitest';
import { edgeTypeFor, handleFor, toCanvas, toScenario } from './convert';
import { autoLayout } from './layout';
import type { ScenarioGraph } from './model';
import { getParam, newNode, setParam, setBranchParam, getBranchParam } from './params';
import type { Kind } from '../api/client';

const e = (expression: string) => ({ language: 'expr', expression });

// Every node type and every kind of edge, with layout, description and unknown fields.
const full: ScenarioGraph = {
  properties: { additionalFields: { description: 'Large payments per card', properties: { owner: 'fraud-team' } } },
  nodes: [
    {
      id: 'payments',
      type: 'Source',
      ref: { typ: 'http', parameters: [{ name: 'maxOutOfOrderness', value: '30s' }] },
      additionalFields: { description: 'POSTed payments', layoutData: { x: 0, y: 0 } },
    },
    { id: 'large', type: 'Filter', expression: e('#input.amount > 1000'), additionalFields: { layoutData: { x: 10, y: 120 } } },
    {
      id: 'last hour',
      type: 'CustomNode',
      nodeType: 'aggregate-sliding',
      outputVar: 'hour',
      parameters: [
        { name: 'groupBy', value: [e('#input.card')] },
        { name: 'aggregations', value: [{ name: 'count', aggregator: 'Count' }] },
        { name: 'windowLength', value: '1h' },
      ],
      additionalFields: { layoutData: { x: -40, y: 240 } },
    },
    { id: 'how many', type: 'Switch', additionalFields: { layoutData: { x: 0, y: 360 } } },
    {
      id: 'u',
      type: 'Join',
      nodeType: 'union',
      outputVar: 'o',
      branchParameters: [{ branchId: 'how many', parameters: [{ name: 'Output expression', expression: e('1') }] }],
      additionalFields: { layoutData: { x: 200, y: 480 } },
    },
    { id: 'alert', type: 'Sink', ref: { typ: 'stdout', parameters: [{ name: 'value', expression: e('#input') }] }, additionalFields: { layoutData: { x: 0, y: 600 } } },
    { id: 'small', type: 'Sink', ref: { typ: 'dead-end' }, additionalFields: { layoutData: { x: 300, y: 240 } } },
  ],
  edges: [
    { from: 'payments', to: 'large', edgeType: null },
    { from: 'large', to: 'last hour', edgeType: { type: 'FilterTrue' } },
    { from: 'large', to: 'small', edgeType: { type: 'FilterFalse' } },
    { from: 'last hour', to: 'how many', edgeType: null },
    { from: 'how many', to: 'u', edgeType: { type: 'NextSwitch', condition: e('#hour.count >= 3') } },
    { from: 'how many', to: 'u', edgeType: { type: 'NextSwitch', condition: e('#hour.count >= 1') } },
    { from: 'how many', to: 'small', edgeType: { type: 'SwitchDefault' } },
    { from: 'u', to: 'alert', edgeType: null },
  ],
};

describe('toCanvas', () => {
  it('places nodes at their layoutData and strips it from the node', () => {
    const c = toCanvas(full);
    expect(c.unplaced).toEqual([]);
    const large = c.nodes.find((n) => n.id === 'large')!;
    expect(large.position).toEqual({ x: 10, y: 120 });
    expect(large.data.node.additionalFields).toBeUndefined();
    const payments = c.nodes.find((n) => n.id === 'payments')!;
    expect(payments.data.node.additionalFields).toEqual({ description: 'POSTed payments' });
  });

  it('draws each edge from the handle of its edge type, keeping their order', () => {
    const c = toCanvas(full);
    expect(c.edges.map((x) => x.sourceHandle)).toEqual(['out', 'FilterTrue', 'FilterFalse', 'out', 'NextSwitch', 'NextSwitch', 'SwitchDefault', 'out']);
    expect(new Set(c.edges.map((x) => x.id)).size).toBe(c.edges.length);
    expect(c.edges[4].data?.edgeType).toEqual({ type: 'NextSwitch', condition: e('#hour.count >= 3') });
  });

  it('reports nodes without layoutData as unplaced', () => {
    const c = toCanvas({ nodes: [{ id: 'a', type: 'Filter' }, { id: 'b', type: 'Split', additionalFields: { layoutData: { x: 1, y: 2 } } }], edges: [] });
    expect(c.unplaced).toEqual(['a']);
  });
});

describe('toScenario', () => {
  it('gives back the same scenario JSON, layout kept', () => {
    const c = toCanvas(full);
    expect(toScenario(c.nodes, c.edges, c.rest)).toEqual(full);
  });

  it('survives a JSON round trip as text', () => {
    const c = toCanvas(JSON.parse(JSON.stringify(full)));
    expect(JSON.parse(JSON.stringify(toScenario(c.nodes, c.edges, c.rest)))).toEqual(full);
  });

  it('writes moved positions into layoutData, rounded', () => {
    const c = toCanvas(full);
    c.nodes[1] = { ...c.nodes[1], position: { x: 33.4, y: 77.6 } };
    const s = toScenario(c.nodes, c.edges, c.rest);
    expect(s.nodes[1].additionalFields).toEqual({ layoutData: { x: 33, y: 78 } });
    expect(s.nodes[0].additionalFields).toEqual({ description: 'POSTed payments', layoutData: { x: 0, y: 0 } });
  });

  it('gives edges drawn on the canvas the edge type of their handle', () => {
    const s = toScenario(
      [],
      [
        { id: '1', source: 'f', target: 'a', sourceHandle: 'FilterTrue' },
        { id: '2', source: 'f', target: 'b', sourceHandle: 'FilterFalse' },
        { id: '3', source: 'a', target: 'c', sourceHandle: 'out' },
        { id: '4', source: 'c', target: 'd', sourceHandle: 'NextSwitch' },
      ],
    );
    expect(s.edges).toEqual([
      { from: 'f', to: 'a', edgeType: { type: 'FilterTrue' } },
      { from: 'f', to: 'b', edgeType: { type: 'FilterFalse' } },
      { from: 'a', to: 'c', edgeType: null },
      { from: 'c', to: 'd', edgeType: { type: 'NextSwitch', condition: e('true') } },
    ]);
  });

  it('keeps a layout computed by auto-layout through a round trip', () => {
    const c = toCanvas({ ...full, nodes: full.nodes.map(({ additionalFields: _, ...n }) => n) });
    expect(c.unplaced.length).toBe(full.nodes.length);
    const laidOut = autoLayout(c.nodes, c.edges);
    const s = toScenario(laidOut, c.edges, c.rest);
    const again = toCanvas(s);
    expect(again.unplaced).toEqual([]);
    expect(again.nodes.map((n) => n.position)).toEqual(laidOut.map((n) => n.position));
    // The source is above the filter below it.
    const y = (id: string) => again.nodes.find((n) => n.id === id)!.position.y;
    expect(y('payments')).toBeLessThan(y('large'));
    expect(y('large')).toBeLessThan(y('last hour'));
  });
});

describe('late edges', () => {
  // A tumbling window with its results to one sink and its late events to another.
  const withLate: ScenarioGraph = {
    nodes: [
      { id: 'events', type: 'Source', ref: { typ: 'http', parameters: [] }, additionalFields: { layoutData: { x: 0, y: 0 } } },
      {
        id: 'per 10s',
        type: 'CustomNode',
        nodeType: 'aggregate-tumbling',
        outputVar: 'agg',
        parameters: [
          { name: 'groupBy', value: [] },
          { name: 'aggregations', value: [{ name: 'count', aggregator: 'Count' }] },
          { name: 'windowLength', value: '10s' },
        ],
        additionalFields: { layoutData: { x: 0, y: 120 } },
      },
      { id: 'results', type: 'Sink', ref: { typ: 'collect', parameters: [{ name: 'value', expression: e('#agg') }] }, additionalFields: { layoutData: { x: 0, y: 240 } } },
      { id: 'too late', type: 'Sink', ref: { typ: 'collect', parameters: [{ name: 'value', expression: e('#late.windowEnd') }] }, additionalFields: { layoutData: { x: 200, y: 240 } } },
    ],
    edges: [
      { from: 'events', to: 'per 10s', edgeType: null },
      { from: 'per 10s', to: 'results', edgeType: null },
      { from: 'per 10s', to: 'too late', edgeType: { type: 'Late' } },
    ],
  };

  it('draws a Late edge from the "Late" handle', () => {
    const c = toCanvas(withLate);
    expect(c.edges.map((x) => x.sourceHandle)).toEqual(['out', 'out', 'Late']);
    expect(c.edges[2].data?.edgeType).toEqual({ type: 'Late' });
    expect(new Set(c.edges.map((x) => x.id)).size).toBe(3);
  });

  it('round-trips {"edgeType": {"type": "Late"}}, also as JSON text', () => {
    const c = toCanvas(JSON.parse(JSON.stringify(withLate)));
    expect(toScenario(c.nodes, c.edges, c.rest)).toEqual(withLate);
    expect(JSON.parse(JSON.stringify(toScenario(c.nodes, c.edges, c.rest))).edges[2]).toEqual({ from: 'per 10s', to: 'too late', edgeType: { type: 'Late' } });
  });

  it('gives an edge drawn from the late handle the Late edge type', () => {
    const s = toScenario([], [{ id: '1', source: 'per 10s', target: 'too late', sourceHandle: 'Late' }]);
    expect(s.edges).toEqual([{ from: 'per 10s', to: 'too late', edgeType: { type: 'Late' } }]);
  });
});

describe('handles', () => {
  it('maps edge types to handles and back', () => {
    for (const t of [null, { type: 'FilterTrue' }, { type: 'FilterFalse' }, { type: 'SwitchDefault' }, { type: 'Late' }]) {
      expect(edgeTypeFor(handleFor(t))).toEqual(t);
    }
    expect(handleFor('')).toBe('out');
  });
});

describe('parameters', () => {
  const tumbling: Kind = {
    id: 'CustomNode/aggregate-tumbling',
    nodeType: 'CustomNode',
    subtype: 'aggregate-tumbling',
    group: 'aggregates',
    label: 'Tumbling window',
    description: '',
    edges: { minInputs: 1, maxInputs: 1, outputs: [{ edgeType: '', min: 1, max: 1 }] },
    parameters: [
      { name: 'outputVar', in: 'node', editor: 'variable-name', type: 'string', default: 'agg', required: true, label: '', description: '' },
      { name: 'groupBy', in: 'parameters', editor: 'list-of-expressions', default: [], required: false, label: '', description: '' },
      { name: 'aggregations', in: 'parameters', editor: 'aggregations', required: true, label: '', description: '' },
      { name: 'windowLength', in: 'parameters', editor: 'duration', required: true, label: '', description: '' },
      { name: 'emitWhen', in: 'parameters', editor: 'enum', options: ['OnEvent', 'OnEnd'], default: 'OnEnd', required: false, label: '', description: '' },
    ],
  };
  const sink: Kind = {
    id: 'Sink/stdout',
    nodeType: 'Sink',
    subtype: 'stdout',
    group: 'sinks',
    label: 'Standard output',
    description: '',
    edges: { minInputs: 1, maxInputs: 1, outputs: [] },
    parameters: [{ name: 'value', in: 'parameters', editor: 'expression', default: '#input', required: true, label: '', description: '' }],
  };

  it('creates nodes with the defaults of their kind, in the scenario JSON form', () => {
    expect(newNode(tumbling, 'w')).toEqual({
      id: 'w',
      type: 'CustomNode',
      nodeType: 'aggregate-tumbling',
      outputVar: 'agg',
      parameters: [
        { name: 'groupBy', value: [] },
        { name: 'aggregations', value: [] },
        { name: 'emitWhen', value: 'OnEnd' },
      ],
    });
    expect(newNode(sink, 'out')).toEqual({ id: 'out', type: 'Sink', ref: { typ: 'stdout', parameters: [{ name: 'value', expression: e('#input') }] } });
  });

  it('reads and writes parameters where the spec says', () => {
    const specs = tumbling.parameters!;
    let n = newNode(tumbling, 'w');
    n = setParam(n, specs[3], '1h');
    expect(getParam(n, specs[3])).toBe('1h');
    n = setParam(n, specs[4], undefined);
    expect(getParam(n, specs[4])).toBeUndefined();
    const value = sink.parameters![0];
    let s = setParam(newNode(sink, 'out'), value, '#input.x');
    expect(getParam(s, value)).toBe('#input.x');
    s = setParam(s, value, undefined);
    expect(s.ref).toEqual({ typ: 'stdout' });
  });

  it('sets branch parameters per incoming branch', () => {
    const spec = { name: 'Output expression', in: 'branchParameters', editor: 'expression', required: false, label: '', description: '' };
    let u = full.nodes[4];
    u = setBranchParam(u, spec, 'large', '2');
    expect(getBranchParam(u, spec, 'large')).toBe('2');
    expect(getBranchParam(u, spec, 'how many')).toBe('1');
    u = setBranchParam(u, spec, 'how many', undefined);
    expect(u.branchParameters).toEqual([{ branchId: 'large', parameters: [{ name: 'Output expression', expression: e('2') }] }]);
  });
});
