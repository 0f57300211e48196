// Reading and writing a node's parameters where its kind's ParamSpec says they live ("in": node,
// parameters or branchParameters), so that forms are generated from the server's registry
// rather than written per node kind.
import type { Kind, ParamSpec } from '../api/client';
import { expr, isExpression, type Parameter, type ScenarioNode } from './model';

export const IN_NODE = 'node';
export const IN_PARAMETERS = 'parameters';
export const IN_BRANCH_PARAMETERS = 'branchParameters';

function hasRef(node: ScenarioNode): boolean {
  return node.type === 'Source' || node.type === 'Sink';
}

function parameterList(node: ScenarioNode): Parameter[] {
  if (hasRef(node)) {
    const ref = node.ref as { parameters?: Parameter[] } | undefined;
    return ref?.parameters ?? [];
  }
  return (node.parameters as Parameter[] | undefined) ?? [];
}

function withParameterList(node: ScenarioNode, list: Parameter[]): ScenarioNode {
  if (hasRef(node)) {
    const ref = { ...((node.ref as object) ?? {}) } as { typ?: string; parameters?: Parameter[] };
    if (list.length > 0) ref.parameters = list;
    else delete ref.parameters;
    return { ...node, ref };
  }
  const out = { ...node };
  if (list.length > 0) out.parameters = list;
  else delete out.parameters;
  return out;
}

/** The index of a parameter in its node's parameter list, -1 when absent (for error fields). */
export function parameterIndex(node: ScenarioNode, name: string): number {
  return parameterList(node).findIndex((p) => p.name === name);
}

/**
 * The value of a parameter: for an expression its text, otherwise its JSON value; undefined
 * when the node does not have it.
 */
export function getParam(node: ScenarioNode, spec: ParamSpec): unknown {
  if (spec.in === IN_NODE) {
    const v = node[spec.name];
    if (spec.editor === 'expression') return isExpression(v) ? v.expression : undefined;
    return v;
  }
  if (spec.in === IN_PARAMETERS) {
    const p = parameterList(node).find((q) => q.name === spec.name);
    if (!p) return undefined;
    if (spec.editor === 'expression') return p.expression?.expression;
    return p.value;
  }
  return undefined;
}

/** The node with the parameter set to value (expression text or JSON value); undefined removes it. */
export function setParam(node: ScenarioNode, spec: ParamSpec, value: unknown): ScenarioNode {
  if (spec.in === IN_NODE) {
    const out = { ...node };
    if (value === undefined) delete out[spec.name];
    else out[spec.name] = spec.editor === 'expression' ? expr(String(value)) : value;
    return out;
  }
  if (spec.in === IN_PARAMETERS) {
    const list = [...parameterList(node)];
    const i = list.findIndex((q) => q.name === spec.name);
    if (value === undefined) {
      if (i >= 0) list.splice(i, 1);
      return withParameterList(node, list);
    }
    const p: Parameter = spec.editor === 'expression' ? { name: spec.name, expression: expr(String(value)) } : { name: spec.name, value };
    if (i >= 0) list[i] = p;
    else list.push(p);
    return withParameterList(node, list);
  }
  return node;
}

type Branch = { branchId: string; parameters?: Parameter[] };

function branches(node: ScenarioNode): Branch[] {
  return (node.branchParameters as Branch[] | undefined) ?? [];
}

/** The index of the branch's entry in branchParameters, -1 when absent (for error fields). */
export function branchIndex(node: ScenarioNode, branchId: string): number {
  return branches(node).findIndex((b) => b.branchId === branchId);
}

/** A branch parameter's expression text for the branch coming from node branchId. */
export function getBranchParam(node: ScenarioNode, spec: ParamSpec, branchId: string): string | undefined {
  const b = branches(node).find((x) => x.branchId === branchId);
  const p = b?.parameters?.find((q) => q.name === spec.name);
  return p?.expression?.expression;
}

export function setBranchParam(node: ScenarioNode, spec: ParamSpec, branchId: string, text: string | undefined): ScenarioNode {
  const list = branches(node).map((b) => ({ ...b, parameters: [...(b.parameters ?? [])] }));
  let b = list.find((x) => x.branchId === branchId);
  if (!b) {
    if (text === undefined) return node;
    b = { branchId, parameters: [] };
    list.push(b);
  }
  const params = b.parameters!;
  const i = params.findIndex((q) => q.name === spec.name);
  if (text === undefined) {
    if (i >= 0) params.splice(i, 1);
  } else {
    const p = { name: spec.name, expression: expr(text) };
    if (i >= 0) params[i] = p;
    else params.push(p);
  }
  const kept = list.filter((x) => (x.parameters?.length ?? 0) > 0);
  const out = { ...node };
  if (kept.length > 0) out.branchParameters = kept;
  else delete out.branchParameters;
  return out;
}

/** The initial value of a parameter in a new node, or undefined to leave it out. */
function initialValue(spec: ParamSpec): unknown {
  if (spec.default !== undefined && spec.default !== null) return spec.default;
  if (!spec.required) return undefined;
  switch (spec.editor) {
    case 'expression':
    case 'variable-name':
      return '';
    case 'list-of-expressions':
    case 'aggregations':
    case 'record-fields':
      return [];
    default:
      // Fields of the node itself are always written, so that the node decodes; the
      // validation then says what to fill in.
      return spec.in === IN_NODE ? '' : undefined;
  }
}

/** A new node of the kind, with the kind's defaults filled in. */
export function newNode(kind: Kind, id: string): ScenarioNode {
  let node: ScenarioNode = { id, type: kind.nodeType };
  if (kind.nodeType === 'Source' || kind.nodeType === 'Sink') node.ref = { typ: kind.subtype ?? '' };
  else if (kind.subtype) node.nodeType = kind.subtype;
  for (const spec of kind.parameters ?? []) {
    if (spec.in === IN_BRANCH_PARAMETERS) continue;
    const v = initialValue(spec);
    if (v !== undefined) node = setParam(node, spec, v);
  }
  return node;
}

/** A node id not in taken, from the kind's label: "filter", "filter 2", ... */
export function freshId(base: string, taken: Set<string>): string {
  const b = base.toLowerCase();
  if (!taken.has(b)) return b;
  for (let i = 2; ; i++) if (!taken.has(`${b} ${i}`)) return `${b} ${i}`;
}

/** The id of a copy of node id, not in taken, in its own case: "big" gives "big 2", and "big 2" gives "big 3". */
export function copyId(id: string, taken: Set<string>): string {
  if (!taken.has(id)) return id;
  const stem = id.replace(/ \d+$/, '') || id;
  for (let i = 2; ; i++) if (!taken.has(`${stem} ${i}`)) return `${stem} ${i}`;
}

/** The node with id renamed in the places that name node ids (Join branches). */
export function renameBranch(node: ScenarioNode, from: string, to: string): ScenarioNode {
  const list = branches(node);
  if (!list.some((b) => b.branchId === from)) return node;
  return { ...node, branchParameters: list.map((b) => (b.branchId === from ? { ...b, branchId: to } : b)) };
}

/** The node kinds whose topic parameter names a topic of the server's Kafka brokers. */
const KAFKA_KINDS = new Set(['Source/kafka', 'Sink/kafka']);

/** Whether the parameter spec of the node kind kindId takes a Kafka topic's name, so the form suggests the brokers' topics. */
export function isKafkaTopicParam(kindId: string, spec: ParamSpec): boolean {
  return KAFKA_KINDS.has(kindId) && spec.name === 'topic' && spec.editor === 'string';
}
