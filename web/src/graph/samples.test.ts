import { describe, expect, it } from 'vitest';
import type { Kind } from '../api/client';
import { inferSchema, MAX_SCHEMA_DEPTH, samplesBySource, withSampleSchemas } from './samples';

describe('inferSchema', () => {
  it('stops at MAX_SCHEMA_DEPTH: a record nested 20,000 deep overflowed the stack', () => {
    let v: unknown = 1;
    for (let i = 0; i < 20_000; i++) v = [v];
    let s = inferSchema([v]);
    let links = 0;
    while (s.items) {
      expect(s.type).toBe('array');
      s = s.items;
      links++;
    }
    // Levels 0 to 63 are arrays, each with its items; level 64 is any value.
    expect(links).toBe(MAX_SCHEMA_DEPTH);
    expect(s).toEqual({});
  });

  it('types fields, widens integers to numbers, makes nulls nullable and requires the fields in every sample', () => {
    expect(inferSchema([{ delay: 66, origin: 'DTW', ok: true }, { delay: 1.5, origin: null }])).toEqual({
      type: 'object',
      properties: { delay: { type: 'number' }, origin: { type: ['string', 'null'] }, ok: { type: 'boolean' } },
      required: ['delay', 'origin'],
    });
  });
  it('leaves mixed types untyped, and infers array items and nested records', () => {
    expect(inferSchema([1, 'a'])).toEqual({});
    expect(inferSchema([{ tags: ['a'], geo: { lat: 1 } }, { tags: [], geo: { lat: 2, lon: 3 } }])).toEqual({
      type: 'object',
      properties: {
        tags: { type: 'array', items: { type: 'string' } },
        geo: { type: 'object', properties: { lat: { type: 'integer' }, lon: { type: 'integer' } }, required: ['lat'] },
      },
      required: ['tags', 'geo'],
    });
  });
});

describe('samplesBySource', () => {
  it('gives every line to a single source, skipping lines that are not JSON', () => {
    expect(samplesBySource('{"a":1}\n\nnot json\n{"a":2}', ['in'])).toEqual(new Map([['in', [{ a: 1 }, { a: 2 }]]]));
  });
  it('splits the {sourceId, record} lines of several sources', () => {
    const text = '{"sourceId":"x","record":{"a":1}}\n{"sourceId":"y","record":{"b":2}}\n{"a":3}';
    expect(samplesBySource(text, ['x', 'y'])).toEqual(new Map([['x', [{ a: 1 }]], ['y', [{ b: 2 }]]]));
  });
});

describe('withSampleSchemas', () => {
  const kinds = new Map<string, Kind>([
    ['Source/http', { id: 'Source/http', parameters: [{ name: 'schema', in: 'parameters', editor: 'json-schema', required: false }] } as unknown as Kind],
  ]);
  const src = (params?: unknown[]) => ({ id: 'in', type: 'Source', ref: { typ: 'http', ...(params ? { parameters: params } : {}) } });
  it('puts the inferred schema into a source without one, and leaves a given schema alone', () => {
    const samples = new Map([['in', [{ a: 1 }]]]);
    const g = withSampleSchemas({ nodes: [src()], edges: [] }, kinds, samples);
    expect(g.nodes[0]).toEqual(src([{ name: 'schema', value: { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] } }]));
    const given = { nodes: [src([{ name: 'schema', value: { type: 'object' } }])], edges: [] };
    expect(withSampleSchemas(given, kinds, samples)).toBe(given);
    expect(withSampleSchemas(given, kinds, samples, true).nodes[0]).toEqual(g.nodes[0]);
  });
});
