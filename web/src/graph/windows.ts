// Window bounds for the results a test lists: the server gives #window for the results a window's
// closing creates; for an enriched event (sliding, or tumbling emitting OnEvent) the bounds follow
// from the node's parameters and the event's time (docs/semantics.md §3, §4).
import { kindIdOf, type Parameter, type ScenarioNode } from './model';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration in ms: Go style ("90s", "1h30m", "250ms") or ISO 8601 ("PT1H", "P1D"); undefined when it is neither. */
export function parseDuration(text: unknown): number | undefined {
  if (typeof text !== 'string' || !text.trim()) return undefined;
  const s = text.trim();
  const iso = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/i.exec(s);
  if (iso && s.toUpperCase() !== 'P' && !s.toUpperCase().endsWith('T')) {
    const [d, h, m, sec] = iso.slice(1).map((x) => Number(x ?? 0));
    return Math.round(d * 86_400_000 + h * 3_600_000 + m * 60_000 + sec * 1000);
  }
  let total = 0;
  let rest = s;
  const part = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)/;
  if (!part.test(rest)) return undefined;
  while (rest) {
    const p = part.exec(rest);
    if (!p) return undefined;
    total += Number(p[1]) * UNIT_MS[p[2]];
    rest = rest.slice(p[0].length);
  }
  return Math.round(total);
}

function param(node: ScenarioNode, name: string): unknown {
  return ((node.parameters as Parameter[] | undefined) ?? []).find((p) => p.name === name)?.value;
}

export type Bounds = { start: number; end: number };

/**
 * The window of a result at event time t of the aggregate node, when the result does not carry
 * one: a sliding window's is the windowLength / P slices ending with t's slice, P the precision
 * (default 60 s for whole minutes, else 1 s); a tumbling window's is the one holding t,
 * [k·windowLength + offset, (k+1)·windowLength + offset); none for a tumbling window with a
 * timeZone (local calendar days).
 */
export function windowOf(node: ScenarioNode, t: number, given?: unknown): Bounds | undefined {
  const w = given as Partial<Bounds> | null | undefined;
  if (w && typeof w.start === 'number' && typeof w.end === 'number') return { start: w.start, end: w.end };
  const kind = kindIdOf(node);
  const length = parseDuration(param(node, 'windowLength'));
  if (!length) return undefined;
  if (kind === 'CustomNode/aggregate-sliding') {
    const p = parseDuration(param(node, 'precision')) ?? (length % 60_000 === 0 ? 60_000 : 1000);
    const j = Math.floor(t / p);
    const n = Math.round(length / p);
    return { start: (j - n + 1) * p, end: (j + 1) * p };
  }
  if (kind === 'CustomNode/aggregate-tumbling') {
    // Local calendar days of a time zone: not worked out here (no bounds rather than wrong ones).
    const zone = param(node, 'timeZone');
    if (typeof zone === 'string' && zone.trim()) return undefined;
    const offset = parseDuration(param(node, 'offset')) ?? 0;
    const start = Math.floor((t - offset) / length) * length + offset;
    return { start, end: start + length };
  }
  return undefined;
}
