// Auto-layout with dagre: top to bottom, in the order of the edges.
import dagre from '@dagrejs/dagre';
import type { CanvasEdge, CanvasNode } from './convert';

export const NODE_WIDTH = 220;
export const NODE_HEIGHT = 64;

/**
 * Positions for the nodes, laid out top to bottom. With only, just those nodes move, and the
 * others keep where they are (used to place nodes that came without layoutData).
 */
export function autoLayout(nodes: CanvasNode[], edges: CanvasEdge[], only?: Set<string>): CanvasNode[] {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'TB', nodesep: 50, ranksep: 70, marginx: 20, marginy: 20 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) {
    g.setNode(n.id, { width: n.measured?.width ?? NODE_WIDTH, height: n.measured?.height ?? NODE_HEIGHT });
  }
  for (const e of edges) if (g.hasNode(e.source) && g.hasNode(e.target)) g.setEdge(e.source, e.target);
  dagre.layout(g);
  return nodes.map((n) => {
    if (only && !only.has(n.id)) return n;
    const p = g.node(n.id);
    const w = n.measured?.width ?? NODE_WIDTH;
    const h = n.measured?.height ?? NODE_HEIGHT;
    return { ...n, position: { x: Math.round(p.x - w / 2), y: Math.round(p.y - h / 2) } };
  });
}
