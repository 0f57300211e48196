// The editor's document: the canvas nodes and edges, their undo and redo history and the
// clipboard, changed only through actions, so that every edit is one pure step that can be
// tested without a browser. Selection, dragging and measuring (React Flow's own changes) change
// the canvas without a history step; an edit pushes the canvas as it was.
import { applyEdgeChanges, applyNodeChanges, type EdgeChange, type NodeChange } from '@xyflow/react';
import { edgeId, edgeTypeFor, type CanvasEdge, type CanvasNode } from '../graph/convert';
import { copyId, renameBranch } from '../graph/params';
import type { ScenarioNode } from '../graph/model';

export type Doc = { nodes: CanvasNode[]; edges: CanvasEdge[] };

export type DocState = Doc & {
  past: Doc[];
  future: Doc[];
  /** The key of the last edit: consecutive edits with one key (typing into a field) are one undo step. */
  lastKey?: string;
  clipboard: Doc | null;
};

export type DocAction =
  /** Shows a graph; with keepHistory the canvas before it is an undo step. */
  | { type: 'load'; doc: Doc; keepHistory?: boolean }
  /** An edit: the new canvas; key groups consecutive edits into one undo step. */
  | { type: 'edit'; doc: Doc; key?: string }
  /** React Flow's own changes (selection, position while dragging, size): no undo step. */
  | { type: 'nodes-changed'; changes: NodeChange<CanvasNode>[] }
  | { type: 'edges-changed'; changes: EdgeChange<CanvasEdge>[] }
  /** The canvas as it is now becomes an undo step (a drag begins). */
  | { type: 'checkpoint' }
  | { type: 'undo' }
  | { type: 'redo' }
  | { type: 'delete'; nodeIds: string[]; edgeIds: string[] }
  | { type: 'connect'; source: string; target: string; handle: string }
  | { type: 'add'; node: CanvasNode }
  | { type: 'copy' }
  | { type: 'paste' }
  | { type: 'select'; id: string }
  | { type: 'update-node'; id: string; node: ScenarioNode; key: string }
  | { type: 'rename-node'; from: string; to: string }
  | { type: 'update-edge'; id: string; edge: CanvasEdge; key: string }
  /** Moves a choice's case before (-1) or after (1) its neighbouring case: the order they are tried in. */
  | { type: 'move-case'; id: string; direction: -1 | 1 };

export const HISTORY_LIMIT = 200;

export const emptyDoc: DocState = { nodes: [], edges: [], past: [], future: [], clipboard: null };

export function unselected(d: Doc): Doc {
  return { nodes: d.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), edges: d.edges.map((e) => (e.selected ? { ...e, selected: false } : e)) };
}

const docOf = (s: DocState): Doc => ({ nodes: s.nodes, edges: s.edges });

/** The state with the canvas as it is pushed on the undo history (unless key continues the last edit). */
function pushed(s: DocState, key?: string): DocState {
  if (key && s.lastKey === key) return s;
  const past = [...s.past, unselected(docOf(s))];
  if (past.length > HISTORY_LIMIT) past.shift();
  return { ...s, past, future: [], lastKey: key };
}

function edit(s: DocState, doc: Doc, key?: string): DocState {
  return { ...pushed(s, key), nodes: doc.nodes, edges: doc.edges };
}

/** Whether a node can be renamed to: not empty, and no node has that id. */
export function isFreeName(d: Doc, to: string): boolean {
  return !!to && !d.nodes.some((n) => n.id === to);
}

export function docReducer(s: DocState, a: DocAction): DocState {
  switch (a.type) {
    case 'load':
      return a.keepHistory ? { ...pushed(s), nodes: a.doc.nodes, edges: a.doc.edges } : { ...s, nodes: a.doc.nodes, edges: a.doc.edges, past: [], future: [], lastKey: undefined };
    case 'edit':
      return edit(s, a.doc, a.key);
    case 'nodes-changed': {
      // Removal goes through 'delete', so that a node and its edges are one undo step.
      const kept = a.changes.filter((c) => c.type !== 'remove');
      return kept.length ? { ...s, nodes: applyNodeChanges(kept, s.nodes) } : s;
    }
    case 'edges-changed': {
      const kept = a.changes.filter((c) => c.type !== 'remove');
      return kept.length ? { ...s, edges: applyEdgeChanges(kept, s.edges) } : s;
    }
    case 'checkpoint':
      return pushed(s);
    case 'undo': {
      const prev = s.past.at(-1);
      if (!prev) return s;
      return { ...s, ...prev, past: s.past.slice(0, -1), future: [...s.future, unselected(docOf(s))], lastKey: undefined };
    }
    case 'redo': {
      const next = s.future.at(-1);
      if (!next) return s;
      return { ...s, ...next, future: s.future.slice(0, -1), past: [...s.past, unselected(docOf(s))], lastKey: undefined };
    }
    case 'delete': {
      const nodeIds = new Set(a.nodeIds);
      const edgeIds = new Set(a.edgeIds);
      if (nodeIds.size === 0 && edgeIds.size === 0) return s;
      return edit(s, {
        nodes: s.nodes.filter((n) => !nodeIds.has(n.id)),
        edges: s.edges.filter((e) => !edgeIds.has(e.id) && !nodeIds.has(e.source) && !nodeIds.has(e.target)),
      });
    }
    case 'connect': {
      if (a.source === a.target) return s;
      const taken = new Set(s.edges.map((e) => e.id));
      const edge: CanvasEdge = {
        id: edgeId(a.source, a.target, a.handle, taken),
        source: a.source,
        target: a.target,
        sourceHandle: a.handle,
        targetHandle: 'in',
        data: { edgeType: edgeTypeFor(a.handle) },
      };
      return edit(s, { nodes: s.nodes, edges: [...s.edges, edge] });
    }
    case 'add':
      return edit(s, { nodes: [...unselected(docOf(s)).nodes, { ...a.node, selected: true }], edges: s.edges });
    case 'copy': {
      const ns = s.nodes.filter((n) => n.selected);
      if (ns.length === 0) return s;
      const ids = new Set(ns.map((n) => n.id));
      return { ...s, clipboard: unselected({ nodes: ns, edges: s.edges.filter((e) => ids.has(e.source) && ids.has(e.target)) }) };
    }
    case 'paste': {
      const c = s.clipboard;
      if (!c || c.nodes.length === 0) return s;
      const taken = new Set(s.nodes.map((n) => n.id));
      const rename = new Map<string, string>();
      for (const n of c.nodes) {
        const id = copyId(n.id, taken);
        taken.add(id);
        rename.set(n.id, id);
      }
      const pasted: CanvasNode[] = c.nodes.map((n) => {
        const id = rename.get(n.id)!;
        let node: ScenarioNode = { ...n.data.node, id };
        for (const [from, to] of rename) node = renameBranch(node, from, to);
        return { ...n, id, selected: true, position: { x: n.position.x + 40, y: n.position.y + 40 }, data: { node } };
      });
      const edgeIds = new Set(s.edges.map((e) => e.id));
      const pastedEdges = c.edges.map((e) => {
        const source = rename.get(e.source)!;
        const target = rename.get(e.target)!;
        return { ...e, source, target, id: edgeId(source, target, e.sourceHandle ?? 'out', edgeIds) };
      });
      const next = edit(s, { nodes: [...unselected(docOf(s)).nodes, ...pasted], edges: [...s.edges, ...pastedEdges] });
      // Pasting again puts the next copy beside this one.
      return { ...next, clipboard: { nodes: pasted.map((n) => ({ ...n, selected: false })), edges: pastedEdges } };
    }
    case 'select':
      return { ...s, nodes: s.nodes.map((x) => (x.selected === (x.id === a.id) ? x : { ...x, selected: x.id === a.id })), edges: s.edges.map((x) => (x.selected ? { ...x, selected: false } : x)) };
    case 'update-node':
      return edit(s, { nodes: s.nodes.map((n) => (n.id === a.id ? { ...n, data: { node: a.node } } : n)), edges: s.edges }, `${a.id}:${a.key}`);
    case 'rename-node': {
      if (!isFreeName(s, a.to)) return s;
      const taken = new Set<string>();
      return edit(s, {
        nodes: s.nodes.map((n) => {
          const node = renameBranch(n.data.node, a.from, a.to);
          if (n.id === a.from) return { ...n, id: a.to, data: { node: { ...node, id: a.to } } };
          return node === n.data.node ? n : { ...n, data: { node } };
        }),
        edges: s.edges.map((e) => {
          const source = e.source === a.from ? a.to : e.source;
          const target = e.target === a.from ? a.to : e.target;
          return { ...e, source, target, id: edgeId(source, target, e.sourceHandle ?? 'out', taken) };
        }),
      });
    }
    case 'update-edge':
      return edit(s, { nodes: s.nodes, edges: s.edges.map((e) => (e.id === a.id ? a.edge : e)) }, `edge:${a.key}`);
    case 'move-case': {
      const e = s.edges.find((x) => x.id === a.id);
      if (!e) return s;
      const siblings = s.edges.map((x, i) => ({ x, i })).filter(({ x }) => x.source === e.source && x.sourceHandle === 'NextSwitch');
      const k = siblings.findIndex(({ x }) => x.id === a.id);
      const other = siblings[k + a.direction];
      if (!other) return s;
      const edges = [...s.edges];
      edges[siblings[k].i] = other.x;
      edges[other.i] = e;
      return edit(s, { nodes: s.nodes, edges });
    }
  }
}
