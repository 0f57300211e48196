// Sample records as a source of types: the test panel's JSON lines, split per source, and the
// JSON Schema they fit, which the designer uses for completion when a source has no schema of its
// own, and which "Generate a JSON Schema from these samples" writes into the source.
import type { Kind } from '../api/client';
import { kindIdOf, type ScenarioGraph } from './model';
import { getParam, setParam } from './params';

export type JSONSchema = { type?: string | string[]; properties?: Record<string, JSONSchema>; required?: string[]; items?: JSONSchema };

/**
 * The sample records of each source. With one source every line is its record; with several,
 * a line is {"sourceId": ..., "record": {...}} (the test API's form). Lines that are not JSON
 * are skipped.
 */
export function samplesBySource(text: string, sourceIds: string[]): Map<string, unknown[]> {
  const out = new Map<string, unknown[]>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      continue;
    }
    let id = sourceIds.length === 1 ? sourceIds[0] : undefined;
    if (sourceIds.length > 1) {
      const w = v as { sourceId?: unknown; record?: unknown };
      if (typeof w !== 'object' || w === null || typeof w.sourceId !== 'string') continue;
      id = w.sourceId;
      v = w.record;
    }
    if (id === undefined) continue;
    const list = out.get(id) ?? [];
    list.push(v);
    out.set(id, list);
  }
  return out;
}

function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v; // string, boolean, object
}

/** How deep inferSchema describes values; below, a schema without a type (any value). */
export const MAX_SCHEMA_DEPTH = 64;

/**
 * The JSON Schema of the values: one type ("integer" widened to "number" when some are
 * fractional; "null" added when some are null; no type at all when they mix others), objects with
 * the properties seen and as required those present in every sample, arrays with the schema of
 * all their elements.
 */
export function inferSchema(values: unknown[], depth = 0): JSONSchema {
  // Deeper than MAX_SCHEMA_DEPTH: any value (a record nested 20,000 deep overflowed the
  // stack during render and blanked the designer).
  if (depth >= MAX_SCHEMA_DEPTH) return {};
  const kinds = new Set(values.map(kindOf));
  const nullable = kinds.delete('null');
  if (kinds.has('integer') && kinds.has('number')) kinds.delete('integer');
  if (kinds.size !== 1) return nullable && kinds.size === 0 ? { type: 'null' } : {};
  const [kind] = kinds;
  const out: JSONSchema = { type: nullable ? [kind, 'null'] : kind };
  const present = values.filter((v) => v !== null);
  if (kind === 'object') {
    const objects = present as Record<string, unknown>[];
    const names = [...new Set(objects.flatMap((o) => Object.keys(o)))];
    out.properties = {};
    for (const n of names) out.properties[n] = inferSchema(objects.filter((o) => n in o).map((o) => o[n]), depth + 1);
    const required = names.filter((n) => objects.every((o) => n in o));
    if (required.length > 0) out.required = required;
  } else if (kind === 'array') {
    const items = (present as unknown[][]).flat();
    if (items.length > 0) out.items = inferSchema(items, depth + 1);
  }
  return out;
}

// The schema of a list of samples, worked out once per list (the editor keeps its lists while the
// records are unchanged, and asks on every edit and completion).
const schemas = new WeakMap<unknown[], JSONSchema>();

function schemaOf(values: unknown[]): JSONSchema {
  let s = schemas.get(values);
  if (!s) {
    s = inferSchema(values);
    schemas.set(values, s);
  }
  return s;
}

/** The kind's JSON Schema parameter, if it has one. */
function schemaSpec(kinds: Map<string, Kind>, kindId: string) {
  return kinds.get(kindId)?.parameters?.find((p) => p.editor === 'json-schema');
}

/** The ids of the graph's sources. */
export function sourceIds(graph: ScenarioGraph): string[] {
  return graph.nodes.filter((n) => n.type === 'Source').map((n) => n.id);
}

/**
 * The graph with a schema inferred from the samples in each source that takes a schema and has
 * none; only is true to do it to every source with samples, replacing their schema.
 */
export function withSampleSchemas(graph: ScenarioGraph, kinds: Map<string, Kind>, samples: Map<string, unknown[]>, replace = false): ScenarioGraph {
  let changed = false;
  const nodes = graph.nodes.map((n) => {
    const spec = schemaSpec(kinds, kindIdOf(n));
    const values = samples.get(n.id);
    if (!spec || !values?.length) return n;
    if (!replace && getParam(n, spec) !== undefined) return n;
    changed = true;
    return setParam(n, spec, schemaOf(values));
  });
  return changed ? { ...graph, nodes } : graph;
}
