// What the window timeline of a test run draws for one aggregate node: a lane per key, its
// windows as bars with their value, its events as ticks (late ones marked) and the watermark the
// run had reached before the end of the records closed every window. Built from what the test
// lists (the server lists at most maxRecordsPerNode records and results per node; counts cover all).
import type { Schemas } from '../api/client';
import { kindIdOf, type Parameter, type ScenarioGraph, type ScenarioNode } from './model';
import { parseDuration, windowOf } from './windows';

type TestResult = Schemas['TestResult'];

export type TimelineWindow = { lane: number; start: number; end: number; label: string; result: Schemas['WindowResult'] };
export type TimelineEvent = { lane: number; t: number; late: boolean; line: number; record: unknown };

export type Timeline = {
  /** The keys, as JSON lists ("[\"DTW\"]"), in the order first seen. */
  lanes: string[];
  windows: TimelineWindow[];
  events: TimelineEvent[];
  /** The time range drawn, epoch ms. */
  t0: number;
  t1: number;
  /** The watermark before the end of the records: the latest event time listed less the sources' largest maxOutOfOrderness. */
  watermark?: number;
  /** Listed of all: events and window results. */
  listed: { events: number; totalEvents: number; windows: number; totalWindows: number };
};

const DEFAULT_OUT_OF_ORDERNESS = 60_000;

function groupByCount(node: ScenarioNode): number {
  const p = ((node.parameters as Parameter[] | undefined) ?? []).find((x) => x.name === 'groupBy');
  return Array.isArray(p?.value) ? p.value.length : 0;
}

/** An aggregate's output for a bar: "2", or "count 2 · total 31" for several aggregations. */
export function outputLabel(output: unknown): string {
  if (typeof output !== 'object' || output === null || Array.isArray(output)) return JSON.stringify(output);
  const entries = Object.entries(output);
  if (entries.length === 1) return JSON.stringify(entries[0][1]);
  return entries.map(([k, v]) => `${k} ${JSON.stringify(v)}`).join(' · ');
}

/** Whether the node is a time-window aggregate (the kinds with windows in event time). */
export function isWindowAggregate(node: ScenarioNode): boolean {
  return ['CustomNode/aggregate-tumbling', 'CustomNode/aggregate-sliding', 'CustomNode/aggregate-hopping', 'CustomNode/aggregate-session'].includes(kindIdOf(node));
}

export function timelineOf(result: TestResult, graph: ScenarioGraph, nodeId: string): Timeline | undefined {
  const node = graph.nodes.find((n) => n.id === nodeId);
  if (!node) return undefined;
  const lanes: string[] = [];
  const laneOf = new Map<string, number>();
  const lane = (key: string) => {
    let i = laneOf.get(key);
    if (i === undefined) {
      i = lanes.length;
      lanes.push(key);
      laneOf.set(key, i);
    }
    return i;
  };
  const keys = groupByCount(node);
  const recs = result.nodes?.[nodeId];
  const keyOfLine = new Map<number, string>();
  const events: TimelineEvent[] = [];
  const lateLines = new Set((result.lateEvents?.[nodeId]?.events ?? []).map((e) => e.line));
  for (const r of recs?.records ?? []) {
    const key = JSON.stringify(Array.from({ length: keys }, (_, i) => r.expressions?.[`groupBy[${i}]`]?.value ?? null));
    keyOfLine.set(r.line, key);
    if (lateLines.has(r.line)) continue; // drawn from the late list below, with its window
    events.push({ lane: lane(key), t: r.eventTime, late: false, line: r.line, record: r.variables });
  }
  for (const e of result.lateEvents?.[nodeId]?.events ?? []) {
    const key = keyOfLine.get(e.line) ?? (keys === 0 ? '[]' : '(key not listed)');
    events.push({ lane: lane(key), t: e.eventTime, late: true, line: e.line, record: e.variables });
  }
  const wr = result.windowResults?.[nodeId];
  const windows: TimelineWindow[] = [];
  for (const r of wr?.results ?? []) {
    const b = windowOf(node, r.eventTime, r.window);
    const start = b?.start ?? r.eventTime;
    const end = b?.end ?? r.eventTime + 1;
    windows.push({ lane: lane(JSON.stringify(r.key)), start, end, label: outputLabel(r.output), result: r });
  }
  const times = [...events.map((e) => e.t), ...windows.flatMap((w) => [w.start, w.end])];
  if (times.length === 0) return undefined;
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const t of times) {
    if (t < t0) t0 = t;
    if (t > t1) t1 = t;
  }
  if (t1 === t0) t1 = t0 + 1;
  const onTime = events.filter((e) => !e.late);
  let watermark: number | undefined;
  if (onTime.length > 0) {
    let latest = -Infinity;
    for (const e of onTime) if (e.t > latest) latest = e.t;
    const ooo = Math.max(
      0,
      ...graph.nodes
        .filter((n) => n.type === 'Source')
        .map((n) => parseDuration(((n.ref as { parameters?: Parameter[] } | undefined)?.parameters ?? []).find((p) => p.name === 'maxOutOfOrderness')?.value) ?? DEFAULT_OUT_OF_ORDERNESS),
    );
    watermark = latest - ooo;
  }
  return {
    lanes,
    windows,
    events,
    t0,
    t1,
    watermark,
    listed: { events: recs?.records?.length ?? 0, totalEvents: recs?.totalRecords ?? 0, windows: wr?.results?.length ?? 0, totalWindows: wr?.total ?? 0 },
  };
}
