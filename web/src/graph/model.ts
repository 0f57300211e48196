// The scenario graph in its JSON form (see the Go package scenario, doc.go). The OpenAPI document
// types a graph only as an object, because the server decodes it strictly itself; these types
// name the parts the designer reads. Every field the designer does not know is kept as it is.

export type Expression = { language: string; expression: string };

export type LayoutData = { x: number; y: number };

export type NodeAdditionalFields = {
  description?: string;
  layoutData?: LayoutData;
  [field: string]: unknown;
};

export type Parameter = { name: string; expression?: Expression; value?: unknown };

export type ScenarioNode = {
  id: string;
  type: string;
  additionalFields?: NodeAdditionalFields;
  [field: string]: unknown;
};

export type EdgeType = { type: string; condition?: Expression } | null;

export type ScenarioEdge = { from: string; to: string; edgeType: EdgeType };

export type ScenarioGraph = {
  properties?: { additionalFields?: { description?: string; properties?: Record<string, string> } };
  nodes: ScenarioNode[];
  edges: ScenarioEdge[];
  [field: string]: unknown;
};

export const LANGUAGE = 'expr';

export function expr(text: string): Expression {
  return { language: LANGUAGE, expression: text };
}

export function isExpression(v: unknown): v is Expression {
  return typeof v === 'object' && v !== null && typeof (v as Expression).expression === 'string';
}

/** The kind id of a node, as the registry names it: "Filter", "Source/http", "CustomNode/aggregate-tumbling". */
export function kindIdOf(node: ScenarioNode): string {
  let sub = '';
  if (node.type === 'Source' || node.type === 'Sink') {
    const ref = node.ref as { typ?: string } | undefined;
    sub = ref?.typ ?? '';
  } else if (node.type === 'CustomNode' || node.type === 'Join') {
    sub = typeof node.nodeType === 'string' ? node.nodeType : '';
  }
  return sub ? `${node.type}/${sub}` : node.type;
}

/** Reads a graph from JSON text or a parsed value; missing lists become empty. */
export function normalizeGraph(raw: unknown): ScenarioGraph {
  const g = (typeof raw === 'object' && raw !== null ? raw : {}) as Partial<ScenarioGraph>;
  return {
    ...g,
    nodes: Array.isArray(g.nodes) ? g.nodes : [],
    edges: Array.isArray(g.edges) ? g.edges : [],
  } as ScenarioGraph;
}

/** The graph as JSON without node positions: equal for two graphs that differ only in layout. */
export function contentKey(graph: ScenarioGraph): string {
  return JSON.stringify({
    ...graph,
    nodes: graph.nodes.map((n) => {
      if (!n.additionalFields?.layoutData) return n;
      const { layoutData: _, ...af } = n.additionalFields;
      return { ...n, additionalFields: af };
    }),
  });
}
