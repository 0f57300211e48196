// Field-level differences between two versions of a node, and a three-way merge of two graphs
// saved from one base version (a save conflict). A node is seen as a set of fields: its
// expressions, its parameters by name, its other values; lists whose elements are named
// (parameters, aggregations) are keyed by name, so that reordering them is no change. The layout
// (additionalFields.layoutData) is not a field: moving a node is told apart (movedNodes).
import { isExpression, type ScenarioEdge, type ScenarioGraph, type ScenarioNode } from './model';

/** One step of a field's path: an object key, or the element of a named list with that name. */
export type Seg = string | { name: string };

export type Field = {
  path: Seg[];
  /** For people: "expression", "parameters.windowLength", "aggregations.count.aggregateBy". */
  label: string;
  /** An expression's text, or a JSON value. */
  value: unknown;
  expression: boolean;
};

export type FieldChange = { label: string; path: Seg[]; before: unknown; after: unknown; expression: boolean };

const keyOf = (path: Seg[]) => JSON.stringify(path);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function namedList(v: unknown[]): boolean {
  if (v.length === 0) return false;
  const names = new Set<string>();
  for (const x of v) {
    if (typeof x !== 'object' || x === null || Array.isArray(x) || typeof (x as { name?: unknown }).name !== 'string') return false;
    names.add((x as { name: string }).name);
  }
  return names.size === v.length;
}

function label(path: Seg[]): string {
  // A parameter is named by its name alone: ["ref", "parameters", {name: "schema"}, "value"] reads "schema".
  const parts: string[] = [];
  path.forEach((s, i) => {
    const prev = path[i - 1];
    if (typeof s !== 'string') parts.push(s.name);
    else if ((s === 'parameters' || s === 'ref') && i < path.length - 1) return;
    else if ((s === 'value' || s === 'expression') && typeof prev === 'object' && i > 0) return;
    else parts.push(s);
  });
  return parts.join('.');
}

/** The fields of a node (or of the scenario's properties), without its id and layout. */
export function fieldsOf(node: object | undefined): Map<string, Field> {
  const out = new Map<string, Field>();
  const walk = (v: unknown, path: Seg[]) => {
    if (isExpression(v)) {
      out.set(keyOf(path), { path, label: label(path), value: v.expression, expression: true });
      return;
    }
    if (Array.isArray(v) && namedList(v)) {
      for (const x of v as { name: string }[]) walk(x, [...path, { name: x.name }]);
      return;
    }
    if (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length > 0) {
      for (const [k, x] of Object.entries(v)) {
        if (path.length === 0 && k === 'id') continue;
        if (path.length === 1 && path[0] === 'additionalFields' && k === 'layoutData') continue;
        walk(x, [...path, k]);
      }
      return;
    }
    if (path.length === 0) return;
    // A named list's name is its key: kept as a field, so that adding or removing the element is one.
    out.set(keyOf(path), { path, label: label(path), value: v, expression: false });
  };
  walk(node ?? {}, []);
  return out;
}

/** The fields that differ between two versions of a node, in the order of after then before. */
export function fieldChanges(before: object | undefined, after: object | undefined): FieldChange[] {
  const a = fieldsOf(before);
  const b = fieldsOf(after);
  const out: FieldChange[] = [];
  for (const [k, f] of b) {
    const old = a.get(k);
    if (old && same(old.value, f.value)) continue;
    if (f.path.at(-1) === 'name' && typeof f.path.at(-2) === 'object' && old) continue;
    out.push({ label: f.label, path: f.path, before: old?.value, after: f.value, expression: f.expression || !!old?.expression });
  }
  for (const [k, f] of a) {
    if (b.has(k)) continue;
    out.push({ label: f.label, path: f.path, before: f.value, after: undefined, expression: f.expression });
  }
  // An element added or removed as a whole shows its fields, not its name as well.
  return out.filter((c) => !(c.path.at(-1) === 'name' && typeof c.path.at(-2) === 'object' && out.some((o) => o !== c && keyOf(o.path.slice(0, -1)) === keyOf(c.path.slice(0, -1)))));
}

function layoutOf(n: ScenarioNode | undefined) {
  return n?.additionalFields?.layoutData;
}

/** The ids of the nodes in both graphs whose position changed. */
export function movedNodes(from: ScenarioGraph, to: ScenarioGraph): string[] {
  const before = new Map(from.nodes.map((n) => [n.id, n]));
  return to.nodes.filter((n) => before.has(n.id) && !same(layoutOf(before.get(n.id)), layoutOf(n))).map((n) => n.id);
}

/** The object with the field at path set to value (expression text for an expression field); undefined removes it. */
export function setField<T extends object>(obj: T, path: Seg[], value: unknown, expression: boolean): T {
  const [s, ...rest] = path;
  if (s === undefined) return obj;
  if (typeof s === 'object') {
    const list = Array.isArray(obj) ? [...(obj as { name: string }[])] : [];
    const i = list.findIndex((x) => x.name === s.name);
    if (rest.length === 1 && rest[0] === 'name' && value === undefined) {
      if (i >= 0) list.splice(i, 1);
      return list as unknown as T;
    }
    const el = i >= 0 ? list[i] : { name: s.name };
    const next = setField(el, rest, value, expression);
    if (i >= 0) list[i] = next;
    else list.push(next);
    return list as unknown as T;
  }
  const out = { ...(obj as Record<string, unknown>) };
  if (rest.length === 0) {
    if (value === undefined) delete out[s];
    else out[s] = expression ? { language: 'expr', expression: String(value) } : value;
    return out as T;
  }
  const child = out[s] ?? (typeof rest[0] === 'object' ? [] : {});
  const next = setField(child as object, rest, value, expression);
  const empty = Array.isArray(next) ? next.length === 0 : Object.keys(next).length === 0;
  if (empty) delete out[s];
  else out[s] = next;
  return out as T;
}

/** A field both sides changed, to different values: the author chooses. */
export type MergeConflict = {
  /** The node id, or "" for the scenario's properties. */
  nodeId: string;
  /** The field's label; "" when the node as a whole was removed on one side and changed on the other. */
  field: string;
  key: string;
  base: unknown;
  theirs: unknown;
  mine: unknown;
  expression: boolean;
};

/** A change only they made, taken into the merge. */
export type TheirChange = { nodeId: string; field: string; before: unknown; after: unknown; expression: boolean };

export type Choice = 'theirs' | 'mine';

export type Merge = {
  conflicts: MergeConflict[];
  taken: TheirChange[];
  /** The merged graph for the choices given; a conflict without a choice keeps mine. */
  graph: (choices: Record<string, Choice>) => ScenarioGraph;
};

const PROPS = '';

function stripLayout(n: ScenarioNode | undefined) {
  if (!n) return undefined;
  return fieldsOf(n);
}

function edgeKey(e: ScenarioEdge) {
  return JSON.stringify([e.from, e.to, e.edgeType]);
}

/**
 * The three-way merge of theirs and mine, both made from base: a field changed on one side only
 * takes that side's value; a field both changed alike is that value; a field both changed
 * differently is a conflict the author decides. A node one side removed and the other changed is
 * a conflict on the whole node. Edges are merged as sets (added by either side is in, removed by
 * either side is out). Positions are mine.
 */
export function threeWayMerge(base: ScenarioGraph, theirs: ScenarioGraph, mine: ScenarioGraph): Merge {
  const conflicts: MergeConflict[] = [];
  const taken: TheirChange[] = [];
  const byId = (g: ScenarioGraph) => new Map(g.nodes.map((n) => [n.id, n]));
  const [B, T, M] = [byId(base), byId(theirs), byId(mine)];
  const ids = [...new Set([...mine.nodes.map((n) => n.id), ...theirs.nodes.map((n) => n.id), ...base.nodes.map((n) => n.id)])];
  /** Per node: 'mine', 'theirs', or a field-level merge. */
  type Plan = { id: string; whole?: 'mine' | 'theirs'; wholeConflict?: string; fields?: { key: string; path: Seg[]; theirs: unknown; expression: boolean; conflict?: string }[] };
  const plans: Plan[] = [];
  const eq = (a: ScenarioNode | undefined, b: ScenarioNode | undefined) => {
    if (!a || !b) return a === b;
    return same([...stripLayout(a)!.entries()].sort(), [...stripLayout(b)!.entries()].sort());
  };
  const fieldMerge = (id: string, b: object | undefined, t: object | undefined, m: object | undefined): Plan['fields'] => {
    const [fb, ft, fm] = [fieldsOf(b), fieldsOf(t), fieldsOf(m)];
    const out: NonNullable<Plan['fields']> = [];
    for (const key of new Set([...fm.keys(), ...ft.keys(), ...fb.keys()])) {
      const vb = fb.get(key);
      const vt = ft.get(key);
      const vm = fm.get(key);
      const f = (vt ?? vm ?? vb)!;
      if (same(vt?.value, vb?.value) || same(vt?.value, vm?.value)) continue;
      if (same(vm?.value, vb?.value)) {
        out.push({ key, path: f.path, theirs: vt?.value, expression: f.expression });
        taken.push({ nodeId: id, field: f.label, before: vb?.value, after: vt?.value, expression: f.expression });
        continue;
      }
      const ckey = `${id}\u0000${key}`;
      out.push({ key, path: f.path, theirs: vt?.value, expression: f.expression, conflict: ckey });
      conflicts.push({ nodeId: id, field: f.label, key: ckey, base: vb?.value, theirs: vt?.value, mine: vm?.value, expression: f.expression });
    }
    return out;
  };
  for (const id of ids) {
    const [b, t, m] = [B.get(id), T.get(id), M.get(id)];
    if (eq(t, b) || eq(t, m)) {
      plans.push({ id, whole: 'mine' });
    } else if (eq(m, b)) {
      plans.push({ id, whole: 'theirs' });
      if (!t) taken.push({ nodeId: id, field: '', before: 'the node', after: undefined, expression: false });
      else if (!b) taken.push({ nodeId: id, field: '', before: undefined, after: 'the node', expression: false });
      else for (const c of fieldChanges(b, t)) taken.push({ nodeId: id, field: c.label, before: c.before, after: c.after, expression: c.expression });
    } else if (!t || !m) {
      const ckey = `${id}\u0000`;
      plans.push({ id, whole: 'mine', wholeConflict: ckey });
      conflicts.push({ nodeId: id, field: '', key: ckey, base: b ? 'the node' : undefined, theirs: t ? 'changed' : undefined, mine: m ? 'changed' : undefined, expression: false });
    } else {
      plans.push({ id, fields: fieldMerge(id, b, t, m) });
    }
  }
  const propFields = fieldMerge(PROPS, base.properties, theirs.properties, mine.properties) ?? [];

  // Edges: a set merge from base.
  const keys = (g: ScenarioGraph) => new Set(g.edges.map(edgeKey));
  const [eb, et] = [keys(base), keys(theirs)];
  const removedByThem = [...eb].filter((k) => !et.has(k));
  const addedByThem = theirs.edges.filter((e) => !eb.has(edgeKey(e)));

  const graph = (choices: Record<string, Choice>): ScenarioGraph => {
    const nodes: ScenarioNode[] = [];
    const pick = (key: string | undefined) => (key === undefined ? 'theirs' : (choices[key] ?? 'mine'));
    const applyFields = <X extends object>(start: X, fields: NonNullable<Plan['fields']>) => {
      let out = start;
      for (const f of fields) if (pick(f.conflict) === 'theirs') out = setField(out, f.path, f.theirs, f.expression);
      return out;
    };
    for (const p of plans) {
      const [t, m] = [T.get(p.id), M.get(p.id)];
      let n: ScenarioNode | undefined;
      if (p.wholeConflict) n = pick(p.wholeConflict) === 'theirs' ? t : m;
      else if (p.whole === 'mine') n = m;
      else if (p.whole === 'theirs') n = t && m ? { ...t, additionalFields: { ...t.additionalFields, layoutData: m.additionalFields?.layoutData ?? t.additionalFields?.layoutData } } : t;
      else n = applyFields(m!, p.fields!);
      if (n) nodes.push(n);
    }
    const present = new Set(nodes.map((n) => n.id));
    const edges = [...mine.edges.filter((e) => !removedByThem.includes(edgeKey(e))), ...addedByThem.filter((e) => !keys(mine).has(edgeKey(e)))].filter((e) => present.has(e.from) && present.has(e.to));
    const out: ScenarioGraph = { ...mine, nodes, edges };
    const props = applyFields((mine.properties ?? {}) as object, propFields);
    if (Object.keys(props).length > 0) out.properties = props as ScenarioGraph['properties'];
    else delete out.properties;
    return out;
  };
  return { conflicts, taken, graph };
}
