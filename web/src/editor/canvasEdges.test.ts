import { describe, expect, it } from 'vitest';
import type { CanvasEdge } from '../graph/convert';
import { labelledEdges } from './canvasEdges';

const edge = (source: string, target: string, handle: string): CanvasEdge => ({ id: `${source}-${target}`, source, target, sourceHandle: handle, data: { edgeType: null } });
const edges = [edge('f', 'a', 'FilterTrue'), edge('s', 'x', 'NextSwitch'), edge('s', 'y', 'NextSwitch'), edge('a', 'b', 'out')];

describe('labelledEdges', () => {
  it('labels edges by type and numbers the cases', () => {
    expect(labelledEdges(edges, { stale: false }).map((e) => e.label)).toEqual(['true', 'case 1', 'case 2', undefined]);
  });
  it('shows the live counts while deployed, not the test ones', () => {
    const out = labelledEdges(edges, { live: { 'f\u0000a': 7 }, test: { 'f\u0000a': 3, 'a\u0000b': 2 }, stale: false });
    expect(out[0]).toMatchObject({ label: 'true · 7', className: 'edge-FilterTrue edge-count-live' });
    expect(out[3].label).toBeUndefined();
  });
  it('marks test counts stale', () => {
    const out = labelledEdges(edges, { test: { 'a\u0000b': 2 }, stale: true });
    expect(out[3]).toMatchObject({ label: '2', className: 'edge-out edge-count-test edge-count-stale' });
  });
});
