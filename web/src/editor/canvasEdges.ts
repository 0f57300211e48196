import type { CanvasEdge } from '../graph/convert';

const edgeLabels: Record<string, string> = { FilterTrue: 'true', FilterFalse: 'false', SwitchDefault: 'default', Late: 'late' };

/** Per edge, keyed by `${from}\u0000${to}`: a count to show on it. */
export type EdgeCounts = Record<string, number>;

/**
 * The edges as drawn: labelled by their type ("true", "late", "case 2"), with a count when
 * there is one: the live counts while deployed, else the test's (marked stale after an edit).
 */
export function labelledEdges(edges: CanvasEdge[], counts: { live?: EdgeCounts; test?: EdgeCounts; stale: boolean }): CanvasEdge[] {
  const caseNo = new Map<string, number>();
  return edges.map((e) => {
    let label: string | undefined = edgeLabels[e.sourceHandle ?? ''];
    if (e.sourceHandle === 'NextSwitch') {
      const k = (caseNo.get(e.source) ?? 0) + 1;
      caseNo.set(e.source, k);
      label = `case ${k}`;
    }
    const key = `${e.source}\u0000${e.target}`;
    const counted = counts.live ? counts.live[key] : counts.test?.[key];
    const countClass = counted === undefined ? '' : counts.live ? ' edge-count-live' : counts.stale ? ' edge-count-test edge-count-stale' : ' edge-count-test';
    if (counted !== undefined) label = `${label ? label + ' · ' : ''}${counted}`;
    return label ? { ...e, label, className: `edge-${e.sourceHandle}${countClass}` } : e;
  });
}
