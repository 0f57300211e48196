// Conversion between the scenario JSON (what the API stores) and the canvas graph (what React
// Flow draws). Positions live in each node's additionalFields.layoutData; the order of edges is
// kept, because a Switch tries its NextSwitch edges in that order.
import type { Edge, Node } from '@xyflow/react';
import type { EdgeType, ScenarioEdge, ScenarioGraph, ScenarioNode } from './model';

export type NodeData = {
  /** The scenario node as in the JSON form, without its layoutData (the canvas position is the truth). */
  node: ScenarioNode;
};
export type CanvasNode = Node<NodeData, 'scenario'>;

export type EdgeData = { edgeType: EdgeType };
export type CanvasEdge = Edge<EdgeData>;

export type CanvasGraph = {
  nodes: CanvasNode[];
  edges: CanvasEdge[];
  /** Everything of the scenario JSON besides its nodes and edges (properties, unknown fields). */
  rest: Omit<ScenarioGraph, 'nodes' | 'edges'>;
  /** Ids of the nodes that had no layoutData: the editor lays them out. */
  unplaced: string[];
};

/** The id of the source handle an edge of this type leaves from. */
export function handleFor(edgeType: EdgeType | string | undefined): string {
  if (typeof edgeType === 'string') return edgeType || 'out';
  return edgeType?.type || 'out';
}

/** The edge type of an edge leaving from the handle; for NextSwitch, with an empty condition. */
export function edgeTypeFor(handle: string | null | undefined, condition = 'true'): EdgeType {
  if (!handle || handle === 'out') return null;
  if (handle === 'NextSwitch') return { type: handle, condition: { language: 'expr', expression: condition } };
  return { type: handle };
}

export function edgeId(from: string, to: string, handle: string, taken: Set<string>): string {
  const base = `${from}\u2192${to}:${handle}`;
  let id = base;
  for (let i = 2; taken.has(id); i++) id = `${base}#${i}`;
  taken.add(id);
  return id;
}

/** The scenario JSON as a canvas graph. Nodes without layoutData get a provisional position. */
export function toCanvas(graph: ScenarioGraph): CanvasGraph {
  const { nodes, edges, ...rest } = graph;
  const unplaced: string[] = [];
  const canvasNodes: CanvasNode[] = nodes.map((n, i) => {
    const { layoutData, ...fields } = n.additionalFields ?? {};
    const node: ScenarioNode = { ...n };
    if (n.additionalFields) {
      if (Object.keys(fields).length > 0) node.additionalFields = fields;
      else delete node.additionalFields;
    }
    if (!layoutData) unplaced.push(n.id);
    return {
      id: n.id,
      type: 'scenario',
      position: layoutData ? { x: layoutData.x, y: layoutData.y } : { x: 0, y: i * 120 },
      data: { node },
    };
  });
  const taken = new Set<string>();
  const canvasEdges: CanvasEdge[] = edges.map((e) => {
    const handle = handleFor(e.edgeType);
    return {
      id: edgeId(e.from, e.to, handle, taken),
      source: e.from,
      target: e.to,
      sourceHandle: handle,
      targetHandle: 'in',
      data: { edgeType: e.edgeType ?? null },
    };
  });
  return { nodes: canvasNodes, edges: canvasEdges, rest, unplaced };
}

/** The canvas graph as scenario JSON, positions rounded to whole canvas pixels. */
export function toScenario(nodes: CanvasNode[], edges: CanvasEdge[], rest: CanvasGraph['rest'] = {}): ScenarioGraph {
  const outNodes: ScenarioNode[] = nodes.map((cn) => {
    const n = cn.data.node;
    return {
      ...n,
      id: cn.id,
      additionalFields: {
        ...(n.additionalFields ?? {}),
        layoutData: { x: Math.round(cn.position.x), y: Math.round(cn.position.y) },
      },
    };
  });
  const outEdges: ScenarioEdge[] = edges.map((e) => ({
    from: e.source,
    to: e.target,
    edgeType: e.data?.edgeType ?? edgeTypeFor(e.sourceHandle),
  }));
  return { ...rest, nodes: outNodes, edges: outEdges };
}
