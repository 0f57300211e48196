import { describe, expect, it } from 'vitest';
import type { Kind, ParamSpec } from '../api/client';
import { expr, type ScenarioNode } from './model';
import { branchIndex, copyId, freshId, getBranchParam, getParam, isKafkaTopicParam, newNode, parameterIndex, renameBranch, setBranchParam, setParam } from './params';

const spec = (s: Partial<ParamSpec>): ParamSpec => ({ name: 'p', in: 'parameters', editor: 'string', required: false, description: '', label: '', ...s }) as ParamSpec;

describe('getParam and setParam', () => {
  const filter: ScenarioNode = { id: 'f', type: 'Filter' };
  const expression = spec({ name: 'expression', in: 'node', editor: 'expression' });
  it('keeps a node field expression as {language, expression}, and removes it with undefined', () => {
    const n = setParam(filter, expression, '#input.a > 1');
    expect(n.expression).toEqual(expr('#input.a > 1'));
    expect(getParam(n, expression)).toBe('#input.a > 1');
    expect('expression' in setParam(n, expression, undefined)).toBe(false);
    // A value that is not an expression reads as absent.
    expect(getParam({ ...filter, expression: 'text' }, expression)).toBeUndefined();
  });
  it('puts a source parameter in ref.parameters, and drops the list when its last one goes', () => {
    const src: ScenarioNode = { id: 's', type: 'Source', ref: { typ: 'http' } };
    const ooo = spec({ name: 'maxOutOfOrderness', editor: 'duration' });
    const ts = spec({ name: 'timestamp', editor: 'expression' });
    const n = setParam(setParam(src, ooo, '5s'), ts, '#input.t');
    expect(n.ref).toEqual({ typ: 'http', parameters: [{ name: 'maxOutOfOrderness', value: '5s' }, { name: 'timestamp', expression: expr('#input.t') }] });
    expect(getParam(n, ooo)).toBe('5s');
    expect(getParam(n, ts)).toBe('#input.t');
    expect(parameterIndex(n, 'timestamp')).toBe(1);
    expect(parameterIndex(n, 'schema')).toBe(-1);
    expect(setParam(setParam(n, ooo, undefined), ts, undefined).ref).toEqual({ typ: 'http' });
  });
  it('replaces a parameter in place, keeping the order', () => {
    const n: ScenarioNode = { id: 'w', type: 'CustomNode', parameters: [{ name: 'a', value: 1 }, { name: 'b', value: 2 }] };
    expect(setParam(n, spec({ name: 'a', editor: 'integer' }), 5).parameters).toEqual([{ name: 'a', value: 5 }, { name: 'b', value: 2 }]);
  });
});

describe('branch parameters', () => {
  const out = spec({ name: 'Output expression', in: 'branchParameters', editor: 'expression' });
  const join: ScenarioNode = { id: 'u', type: 'Join', nodeType: 'union' };
  it('sets one per incoming branch, and removes a branch whose last one goes', () => {
    const n = setBranchParam(setBranchParam(join, out, 'a', '#input'), out, 'b', '1');
    expect(n.branchParameters).toEqual([
      { branchId: 'a', parameters: [{ name: 'Output expression', expression: expr('#input') }] },
      { branchId: 'b', parameters: [{ name: 'Output expression', expression: expr('1') }] },
    ]);
    expect(getBranchParam(n, out, 'b')).toBe('1');
    expect(branchIndex(n, 'b')).toBe(1);
    const removed = setBranchParam(n, out, 'a', undefined);
    expect(removed.branchParameters).toEqual([{ branchId: 'b', parameters: [{ name: 'Output expression', expression: expr('1') }] }]);
    expect('branchParameters' in setBranchParam(removed, out, 'b', undefined)).toBe(false);
    expect(setBranchParam(join, out, 'x', undefined)).toBe(join);
  });
  it('follows a renamed branch', () => {
    const n = setBranchParam(join, out, 'a', '#input');
    expect(getBranchParam(renameBranch(n, 'a', 'z'), out, 'z')).toBe('#input');
    expect(renameBranch(n, 'q', 'z')).toBe(n);
  });
});

describe('newNode', () => {
  it('starts required fields empty, takes defaults, and leaves optional ones out', () => {
    const kind = {
      id: 'CustomNode/aggregate-tumbling',
      nodeType: 'CustomNode',
      subtype: 'aggregate-tumbling',
      label: 'Tumbling window',
      parameters: [
        spec({ name: 'outputVar', in: 'node', editor: 'variable-name', required: true, default: 'agg' }),
        spec({ name: 'groupBy', editor: 'list-of-expressions', required: true }),
        spec({ name: 'aggregations', editor: 'aggregations', required: true }),
        spec({ name: 'windowLength', editor: 'duration', required: true }),
        spec({ name: 'emitWhen', editor: 'enum', required: false, options: ['OnEnd', 'OnEvent'] }),
      ],
    } as unknown as Kind;
    const n = newNode(kind, 'w');
    // The default of outputVar is taken; required lists start empty; windowLength (required, a
    // duration in the parameter list) and emitWhen (optional, no default) are left out.
    expect(n.outputVar).toBe('agg');
    expect(n.parameters).toEqual([{ name: 'groupBy', value: [] }, { name: 'aggregations', value: [] }]);
  });
  it('gives a source or sink its ref, and a required expression an empty text', () => {
    const kind = { id: 'Sink/collect', nodeType: 'Sink', subtype: 'collect', label: 'Collect', parameters: [spec({ name: 'value', editor: 'expression', required: true })] } as unknown as Kind;
    expect(newNode(kind, 'c')).toEqual({ id: 'c', type: 'Sink', ref: { typ: 'collect', parameters: [{ name: 'value', expression: expr('') }] } });
  });
});

describe('node ids', () => {
  it('names a new node after its kind in lower case, numbered when taken', () => {
    expect(freshId('Filter', new Set())).toBe('filter');
    expect(freshId('Filter', new Set(['filter', 'filter 2']))).toBe('filter 3');
  });
  it('names a copy after the node in its own case, counting on from its number', () => {
    expect(copyId('Big', new Set(['Big']))).toBe('Big 2');
    expect(copyId('Big 2', new Set(['Big', 'Big 2']))).toBe('Big 3');
    expect(copyId('Big 2', new Set(['Big 2']))).toBe('Big 3');
    expect(copyId('Big 2', new Set())).toBe('Big 2');
  });
});

describe('isKafkaTopicParam', () => {
  const topic = spec({ name: 'topic', editor: 'string', required: true });
  it('is the topic of Kafka sources and sinks only', () => {
    expect(isKafkaTopicParam('Source/kafka', topic)).toBe(true);
    expect(isKafkaTopicParam('Sink/kafka', topic)).toBe(true);
    expect(isKafkaTopicParam('Source/http', topic)).toBe(false);
    expect(isKafkaTopicParam('Sink/kafka', spec({ name: 'key', editor: 'expression' }))).toBe(false);
  });
});
