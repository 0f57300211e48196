import { describe, expect, it } from 'vitest';
import { fieldChanges, movedNodes, setField, threeWayMerge } from './diff';
import { expr, type ScenarioGraph, type ScenarioNode } from './model';

const filter = (id: string, text: string, x = 0): ScenarioNode => ({ id, type: 'Filter', expression: expr(text), additionalFields: { layoutData: { x, y: 0 } } });
const window = (length: string, by: string): ScenarioNode => ({
  id: 'win',
  type: 'CustomNode',
  nodeType: 'aggregate-tumbling',
  parameters: [
    { name: 'windowLength', value: length },
    { name: 'aggregations', value: [{ name: 'total', aggregator: 'Sum', aggregateBy: expr(by) }] },
  ],
});

describe('fieldChanges', () => {
  it('names the changed expression with both texts', () => {
    expect(fieldChanges(filter('f', '#input.amount > 100'), filter('f', '#input.amount > 200'))).toEqual([
      { label: 'expression', path: ['expression'], before: '#input.amount > 100', after: '#input.amount > 200', expression: true },
    ]);
  });
  it('ignores a move, and keys parameters and aggregations by name', () => {
    expect(fieldChanges(filter('f', 'a', 0), filter('f', 'a', 50))).toEqual([]);
    const changes = fieldChanges(window('1h', '#input.delay'), window('2h', '#input.distance'));
    expect(changes.map((c) => [c.label, c.before, c.after])).toEqual([
      ['windowLength', '1h', '2h'],
      ['aggregations.total.aggregateBy', '#input.delay', '#input.distance'],
    ]);
  });
  it('lists an added parameter by its fields, not its name', () => {
    const before: ScenarioNode = { id: 's', type: 'Source', ref: { typ: 'http' } };
    const after: ScenarioNode = { id: 's', type: 'Source', ref: { typ: 'http', parameters: [{ name: 'maxOutOfOrderness', value: '5s' }] } };
    expect(fieldChanges(before, after).map((c) => [c.label, c.before, c.after])).toEqual([['maxOutOfOrderness', undefined, '5s']]);
  });
});

describe('movedNodes', () => {
  it('lists nodes in both versions whose position changed', () => {
    const a: ScenarioGraph = { nodes: [filter('f', 'a', 0), filter('g', 'a', 0)], edges: [] };
    const b: ScenarioGraph = { nodes: [filter('f', 'a', 10), filter('g', 'a', 0), filter('h', 'a', 5)], edges: [] };
    expect(movedNodes(a, b)).toEqual(['f']);
  });
});

describe('setField', () => {
  it('sets, adds and removes fields inside named lists', () => {
    const n = window('1h', '#input.delay');
    const a = setField(n, ['parameters', { name: 'aggregations' }, 'value', { name: 'total' }, 'aggregateBy'], '#x', true);
    expect((a.parameters as { value: { aggregateBy: unknown }[] }[])[1].value[0].aggregateBy).toEqual(expr('#x'));
    const b = setField(n, ['parameters', { name: 'windowLength' }, 'name'], undefined, false);
    expect((b.parameters as { name: string }[]).map((p) => p.name)).toEqual(['aggregations']);
    const c = setField(n, ['parameters', { name: 'emitWhen' }, 'value'], 'OnEnd', false);
    expect((c.parameters as unknown[])[2]).toEqual({ name: 'emitWhen', value: 'OnEnd' });
  });
});

describe('threeWayMerge', () => {
  const g = (...nodes: ScenarioNode[]): ScenarioGraph => ({ nodes, edges: [] });
  it('takes their change to one field and keeps mine to another, with no conflict', () => {
    const base = g(filter('f', 'a > 1'), window('1h', '#input.x'));
    const theirs = g(filter('f', 'a > 2'), window('1h', '#input.x'));
    const mine = g(filter('f', 'a > 1'), window('2h', '#input.x'));
    const m = threeWayMerge(base, theirs, mine);
    expect(m.conflicts).toEqual([]);
    expect(m.taken).toEqual([{ nodeId: 'f', field: 'expression', before: 'a > 1', after: 'a > 2', expression: true }]);
    expect(m.graph({})).toEqual(g(filter('f', 'a > 2'), window('2h', '#input.x')));
  });
  it('asks about a field both changed, per field, and applies each choice', () => {
    const base = g(window('1h', '#input.x'));
    const theirs = g(window('3h', '#input.y'));
    const mine = g(window('2h', '#input.z'));
    const m = threeWayMerge(base, theirs, mine);
    expect(m.conflicts.map((c) => [c.field, c.base, c.theirs, c.mine])).toEqual([
      ['windowLength', '1h', '3h', '2h'],
      ['aggregations.total.aggregateBy', '#input.x', '#input.y', '#input.z'],
    ]);
    const [len, by] = m.conflicts.map((c) => c.key);
    expect(m.graph({ [len]: 'theirs', [by]: 'mine' })).toEqual(g(window('3h', '#input.z')));
    expect(m.graph({ [len]: 'mine', [by]: 'theirs' })).toEqual(g(window('2h', '#input.y')));
  });
  it('takes nodes and edges each side added, and drops what they removed', () => {
    const e = (from: string, to: string) => ({ from, to, edgeType: null });
    const base: ScenarioGraph = { nodes: [filter('a', 'x'), filter('b', 'x')], edges: [e('a', 'b')] };
    const theirs: ScenarioGraph = { nodes: [filter('a', 'x'), filter('c', 'x')], edges: [e('a', 'c')] };
    const mine: ScenarioGraph = { nodes: [filter('a', 'x'), filter('b', 'x'), filter('d', 'x')], edges: [e('a', 'b'), e('b', 'd')] };
    const merged = threeWayMerge(base, theirs, mine).graph({});
    expect(merged.nodes.map((n) => n.id).sort()).toEqual(['a', 'c', 'd']);
    expect(merged.edges).toEqual([e('a', 'c')]);
  });
  it('makes a node one side removed and the other changed a conflict', () => {
    const base = g(filter('f', 'a'));
    const m = threeWayMerge(base, g(), g(filter('f', 'b')));
    expect(m.conflicts.map((c) => [c.nodeId, c.field])).toEqual([['f', '']]);
    expect(m.graph({}).nodes.map((n) => n.id)).toEqual(['f']);
    expect(m.graph({ [m.conflicts[0].key]: 'theirs' }).nodes).toEqual([]);
  });
});
