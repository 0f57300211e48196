import { describe, expect, it } from 'vitest';
import type { CanvasEdge, CanvasNode } from '../graph/convert';
import { expr } from '../graph/model';
import { docReducer, emptyDoc, HISTORY_LIMIT, type DocAction, type DocState } from './docReducer';

const filter = (id: string, x = 0, selected = false): CanvasNode => ({ id, type: 'scenario', position: { x, y: 0 }, selected, data: { node: { id, type: 'Filter', expression: expr('#input.a > 1') } } });
const edge = (source: string, target: string, handle = 'out'): CanvasEdge => ({ id: `${source}→${target}:${handle}`, source, target, sourceHandle: handle, targetHandle: 'in', data: { edgeType: null } });
const run = (s: DocState, ...actions: DocAction[]) => actions.reduce(docReducer, s);
const ids = (s: DocState) => s.nodes.map((n) => n.id);
const start = run(emptyDoc, { type: 'load', doc: { nodes: [filter('a'), filter('b', 300)], edges: [edge('a', 'b', 'FilterTrue')] } });

describe('undo and redo', () => {
  it('undoes and redoes an edit, and a new edit drops the redo steps', () => {
    const added = run(start, { type: 'add', node: filter('c', 600) });
    expect(ids(added)).toEqual(['a', 'b', 'c']);
    const undone = run(added, { type: 'undo' });
    expect(ids(undone)).toEqual(['a', 'b']);
    expect(undone.future).toHaveLength(1);
    expect(ids(run(undone, { type: 'redo' }))).toEqual(['a', 'b', 'c']);
    const other = run(undone, { type: 'add', node: filter('d') });
    expect(other.future).toEqual([]);
    expect(run(other, { type: 'redo' })).toBe(other);
  });
  it('makes typing into one field one step, and a different field another', () => {
    const typed = ['#', '#i', '#in'].reduce(
      (s, t) => docReducer(s, { type: 'update-node', id: 'a', node: { id: 'a', type: 'Filter', expression: expr(t) }, key: 'param:expression' }),
      start,
    );
    expect(typed.past).toHaveLength(1);
    const other = run(typed, { type: 'update-node', id: 'b', node: { id: 'b', type: 'Filter' }, key: 'param:expression' });
    expect(other.past).toHaveLength(2);
    const back = run(other, { type: 'undo' }, { type: 'undo' });
    expect(back.nodes[0].data.node.expression).toEqual(expr('#input.a > 1'));
  });
  it('does not make selection or dragging a step, but a drag start is one', () => {
    const selected = run(start, { type: 'nodes-changed', changes: [{ type: 'select', id: 'a', selected: true }] });
    expect(selected.past).toEqual([]);
    const dragged = run(selected, { type: 'checkpoint' }, { type: 'nodes-changed', changes: [{ type: 'position', id: 'a', position: { x: 50, y: 70 } }] });
    expect(dragged.past).toHaveLength(1);
    expect(run(dragged, { type: 'undo' }).nodes[0].position).toEqual({ x: 0, y: 0 });
    // Undo steps keep no selection.
    expect(dragged.past[0].nodes[0].selected).toBe(false);
  });
  it('keeps at most HISTORY_LIMIT steps', () => {
    let s = start;
    for (let i = 0; i < HISTORY_LIMIT + 5; i++) s = docReducer(s, { type: 'checkpoint' });
    expect(s.past).toHaveLength(HISTORY_LIMIT);
  });
});

describe('delete', () => {
  it('removes nodes with their edges in one step, and undo brings both back', () => {
    const deleted = run(start, { type: 'delete', nodeIds: ['b'], edgeIds: [] });
    expect(ids(deleted)).toEqual(['a']);
    expect(deleted.edges).toEqual([]);
    expect(deleted.past).toHaveLength(1);
    const back = run(deleted, { type: 'undo' });
    expect(ids(back)).toEqual(['a', 'b']);
    expect(back.edges).toHaveLength(1);
  });
  it('removes an edge alone, and ignores React Flow removing things on its own', () => {
    expect(run(start, { type: 'delete', nodeIds: [], edgeIds: [start.edges[0].id] }).edges).toEqual([]);
    expect(run(start, { type: 'nodes-changed', changes: [{ type: 'remove', id: 'a' }] })).toBe(start);
  });
});

describe('copy and paste', () => {
  it('pastes the selected nodes and the edges between them under fresh ids, offset and selected', () => {
    const selected = run(start, { type: 'nodes-changed', changes: [{ type: 'select', id: 'a', selected: true }, { type: 'select', id: 'b', selected: true }] });
    const pasted = run(selected, { type: 'copy' }, { type: 'paste' });
    expect(ids(pasted)).toEqual(['a', 'b', 'a 2', 'b 2']);
    expect(pasted.nodes.map((n) => !!n.selected)).toEqual([false, false, true, true]);
    expect(pasted.nodes[2].position).toEqual({ x: 40, y: 40 });
    expect(pasted.nodes[2].data.node.id).toBe('a 2');
    expect(pasted.edges.map((e) => [e.source, e.target, e.sourceHandle])).toEqual([
      ['a', 'b', 'FilterTrue'],
      ['a 2', 'b 2', 'FilterTrue'],
    ]);
    // Again: the next copy lands beside the last one.
    const again = run(pasted, { type: 'paste' });
    expect(ids(again).slice(4)).toEqual(['a 3', 'b 3']);
    expect(again.nodes[4].position).toEqual({ x: 80, y: 80 });
    expect(ids(run(again, { type: 'undo' }, { type: 'undo' }))).toEqual(['a', 'b']);
  });
  it('copies nothing without a selection, and pastes nothing from an empty clipboard', () => {
    expect(run(start, { type: 'copy' }).clipboard).toBeNull();
    expect(run(start, { type: 'paste' })).toBe(start);
  });
  it('renames the branch a pasted join reads from', () => {
    const join: CanvasNode = { id: 'u', type: 'scenario', position: { x: 0, y: 0 }, selected: true, data: { node: { id: 'u', type: 'Join', nodeType: 'union', branchParameters: [{ branchId: 'a', parameters: [] }] } } };
    const s = run(emptyDoc, { type: 'load', doc: { nodes: [filter('a', 0, true), join], edges: [edge('a', 'u')] } }, { type: 'copy' }, { type: 'paste' });
    expect(s.nodes[3].data.node.branchParameters).toEqual([{ branchId: 'a 2', parameters: [] }]);
  });
});

describe('rename, connect and cases', () => {
  it('renames a node and its edges, refusing a taken name', () => {
    const renamed = run(start, { type: 'rename-node', from: 'a', to: 'big' });
    expect(ids(renamed)).toEqual(['big', 'b']);
    expect(renamed.edges[0].source).toBe('big');
    expect(run(start, { type: 'rename-node', from: 'a', to: 'b' })).toBe(start);
  });
  it('connects two nodes, not a node to itself', () => {
    expect(run(start, { type: 'connect', source: 'b', target: 'a', handle: 'out' }).edges).toHaveLength(2);
    expect(run(start, { type: 'connect', source: 'a', target: 'a', handle: 'out' })).toBe(start);
  });
  it('moves a case earlier', () => {
    const s = run(emptyDoc, { type: 'load', doc: { nodes: [filter('s'), filter('x'), filter('y')], edges: [edge('s', 'x', 'NextSwitch'), edge('s', 'y', 'NextSwitch')] } });
    expect(run(s, { type: 'move-case', id: s.edges[1].id, direction: -1 }).edges.map((e) => e.target)).toEqual(['y', 'x']);
    expect(run(s, { type: 'move-case', id: s.edges[0].id, direction: -1 })).toBe(s);
  });
});
