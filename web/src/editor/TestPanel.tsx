// Test with sample records: paste or upload JSON lines, run the graph as it is on the canvas
// (POST /api/test), and see per node the counts (also on the canvas), each record's variables
// and expression values, the window results, the late events of each time-window aggregate
// (dropped, or sent on its "late" edge) and errors.
import { SavedTests } from './SavedTests';
import { useMemo, useState } from 'react';
import { api, problemText, type Schemas } from '../api/client';
import { windowOf } from '../graph/windows';
import { isWindowAggregate, timelineOf, type Timeline } from '../graph/timeline';
import { WindowTimeline } from './WindowTimeline';
import { CopyJSON } from './CopyJSON';
import { contentKey, type ScenarioGraph } from '../graph/model';
import type { NodeCounts, NodeLateCounts } from './context';

export type TestResult = Schemas['TestResult'];
/** One aggregate's late events in a test run. */
type LateEvents = Schemas['LateTestEvents'];

export type TestRun = {
  result: TestResult;
  /** The answer's JSON text: a saved test case takes its sink outputs from it, numbers as the server wrote them. */
  answer?: string;
  /** Records that entered each node. */
  counts: NodeCounts;
  /** Per edge, keyed by `${from}\u0000${to}`: the records its target received, where the target has that edge alone as input. */
  edgeCounts: Record<string, number>;
  /** Late and partly late events per aggregate, for those that had any. */
  late: NodeLateCounts;
  /** Per-event (runtime) errors per node, for the nodes that had any. */
  errors: NodeCounts;
  /** The tested graph without layout (contentKey): the counts are stale once the graph differs. */
  graphKey: string;
  /** performance.now() when Run test was pressed (for the time to the drawn timeline). */
  startedAt?: number;
};

/** How many records, window results and sink outputs a test lists per node: the server's most, for the timeline. */
export const LISTED_PER_NODE = 1000;
/** Window result rows shown in the table (Copy as JSON has all listed). */
const WINDOW_ROWS = 200;

type Props = {
  /** The scenario's name, for its saved test cases. */
  name: string;
  graph: ScenarioGraph;
  /** The sample records, JSON lines (kept per scenario by the editor). */
  records: string;
  onRecords: (text: string) => void;
  /** Why the records are not kept in the browser's storage, '' when they are. */
  recordsNotKept?: string;
  /** The sources whose completion uses the types of the samples (they have no schema). */
  inferredFor: string[];
  /** Writes the schema of the samples into each source with samples. */
  onGenerateSchema: () => void;
  selectedId?: string;
  run: TestRun | null;
  onRun: (run: TestRun | null) => void;
  /** The graph changed since the run: its results are of the graph before. */
  stale: boolean;
  /** The nodes show the running deployment's counts, not the test's. */
  liveShown: boolean;
};

/** Per edge, keyed by `${from}\u0000${to}`: the records its target received, where the target has that edge alone as input. */
export function edgeCountsOf(counts: NodeCounts, graph: ScenarioGraph): Record<string, number> {
  const inputs = new Map<string, number>();
  for (const e of graph.edges) inputs.set(e.to, (inputs.get(e.to) ?? 0) + 1);
  const edgeCounts: Record<string, number> = {};
  for (const e of graph.edges) if (inputs.get(e.to) === 1 && counts[e.to] !== undefined) edgeCounts[`${e.from}\u0000${e.to}`] = counts[e.to];
  return edgeCounts;
}

/** Counts per node and per edge from a test result (or from a deployment's live counts). */
export function countsOf(result: Pick<TestResult, 'nodes'>, graph: ScenarioGraph): Pick<TestRun, 'counts' | 'edgeCounts' | 'late' | 'errors'> {
  const counts: NodeCounts = {};
  const late: NodeLateCounts = {};
  const errors: NodeCounts = {};
  for (const [id, n] of Object.entries(result.nodes ?? {})) {
    counts[id] = n.counts.in;
    if (n.counts.late > 0 || n.counts.partlyLate > 0) late[id] = { late: n.counts.late, partlyLate: n.counts.partlyLate };
    if (n.counts.errors > 0) errors[id] = n.counts.errors;
  }
  return { counts, edgeCounts: edgeCountsOf(counts, graph), late, errors };
}

function fmtTime(ms: number | undefined): string {
  if (ms === undefined || ms === null) return '';
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString().replace('T', ' ').replace('.000Z', 'Z');
}

function json(v: unknown): string {
  return v === undefined ? '' : JSON.stringify(v);
}

/** A time in epoch ms, readable, with the number itself as its tooltip; sameDayAs leaves out the date when it is that time's. */
function Time({ ms, sameDayAs }: { ms: number; sameDayAs?: number }) {
  let text = fmtTime(ms);
  const day = (t: string) => t.slice(0, t.indexOf(' ') + 1);
  if (sameDayAs !== undefined) {
    const other = fmtTime(sameDayAs);
    if (day(text) && day(text) === day(other)) text = text.slice(day(text).length);
  }
  return <span title={`${ms} ms since the epoch`}>{text}</span>;
}

/** The late events of one aggregate: how many, where they went, and each with its record and the window it missed. */
function LateEventList({ id, events, counts, lateTargets }: { id: string; events?: LateEvents; counts?: TestResult['nodes'][string]['counts']; lateTargets: string[] }) {
  const total = events?.total ?? counts?.late ?? 0;
  const listed = events?.events ?? [];
  const partly = counts?.partlyLate ?? 0;
  return (
    <div className="late-node" data-testid={`late-events-${id}`}>
      <div className="small">
        <b>{id}</b>: {total} late {total === 1 ? 'event' : 'events'}
        {total > 0 && (lateTargets.length > 0 ? `, sent on the late edge to ${lateTargets.join(', ')}` : ', dropped (no late edge)')}
        {partly > 0 && `; ${partly} partly late (dropped from some windows, counted in others)`}
        {events?.truncated && <span className="muted">, the first {listed.length} listed</span>}
      </div>
      {listed.map((ev, i) => {
        // #late is shown as the window it missed, below.
        const { input, late: _late, ...others } = ev.variables ?? {};
        return (
          <details key={i} className="record late-event" open={i < 10} data-testid="late-event">
            <summary>
              line {ev.line} · <Time ms={ev.eventTime} />
            </summary>
            <table>
              <tbody>
                <tr>
                  <td>
                    <code>#input</code>
                  </td>
                  <td>
                    <code>{json(input)}</code>
                  </td>
                </tr>
                {Object.entries(others).map(([k, v]) => (
                  <tr key={k}>
                    <td>
                      <code>#{k}</code>
                    </td>
                    <td>
                      <code>{json(v)}</code>
                    </td>
                  </tr>
                ))}
                <tr className="late-window">
                  <td>window missed</td>
                  <td data-testid="late-window">
                    <Time ms={ev.late.windowStart} /> – <Time ms={ev.late.windowEnd} sameDayAs={ev.late.windowStart} />
                  </td>
                </tr>
                <tr className="late-window">
                  <td>watermark</td>
                  <td data-testid="late-watermark">
                    <Time ms={ev.late.watermark} />
                  </td>
                </tr>
              </tbody>
            </table>
          </details>
        );
      })}
    </div>
  );
}

/** One node's test records: every listed record a row, with its variables and the value of each expression, and the node's per-event errors. */
function NodeRecords({ id, records, errors, open }: { id: string; records?: TestResult['nodes'][string]; errors: NonNullable<TestResult['errors']>; open: boolean }) {
  const list = records?.records ?? [];
  const exprNames = [...new Set(list.flatMap((r) => Object.keys(r.expressions ?? {})))];
  const varNames = [...new Set(list.flatMap((r) => Object.keys(r.variables ?? {})))];
  // The rows are made when the panel is first opened: a test lists up to a thousand per node.
  const [shown, setShown] = useState(open);
  return (
    <details className="node-records" open={open || undefined} onToggle={(e) => e.currentTarget.open && setShown(true)} data-testid={`node-records-${id}`}>
      <summary>
        <b>{id}</b> <span className="muted small">{records?.totalRecords ?? 0} records{records?.truncated ? `, the first ${list.length} listed` : ''}</span>
        {errors.length > 0 && <span className="badge badge-runtime-error">{records?.counts.errors ?? errors.length} failed</span>}
      </summary>
      {(shown || open) && list.length > 0 && (
        <>
          <div className="row">
            <span className="spacer" />
            <CopyJSON value={list} what={`the records of ${id}`} />
          </div>
          <div className="scroll-x">
            <table className="records-table mono">
              <thead>
                <tr>
                  <th>line</th>
                  <th>event time</th>
                  {varNames.map((v) => (
                    <th key={`v${v}`}>#{v}</th>
                  ))}
                  {exprNames.map((x) => (
                    <th key={`e${x}`} className="expression-value">
                      {x}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {list.map((r, i) => (
                  <tr key={i} data-testid="node-record">
                    <td>{r.line}</td>
                    <td>
                      <Time ms={r.eventTime} />
                    </td>
                    {varNames.map((v) => (
                      <td key={`v${v}`}>
                        <code>{json(r.variables?.[v])}</code>
                      </td>
                    ))}
                    {exprNames.map((x) => {
                      const v = r.expressions?.[x];
                      return (
                        <td key={`e${x}`} className="expression-value">
                          {v?.error ? <span className="field-error">{v.error}</span> : <code>{json(v?.value)}</code>}
                        </td>
                      );
                    })}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      {errors.length > 0 && (
        <ul className="test-errors">
          {errors.map((e, i) => (
            <li key={i}>
              line {e.line}
              {e.field ? ` ${e.field}` : ''}: {e.message}
            </li>
          ))}
        </ul>
      )}
    </details>
  );
}

/**
 * recordsPlaceholder is the sample records' placeholder for graph: a record of the first five
 * fields its expressions read from #input (#input.amount, #input.card), their values left for
 * the user; without any, a generic one. A fixed {"amount": 1200, "card": "A"} showed on every
 * scenario, a flights one too (new-user round 153).
 */
export function recordsPlaceholder(graph: ScenarioGraph): string {
  const fields: string[] = [];
  const walk = (v: unknown): void => {
    if (fields.length >= 5) return;
    if (typeof v === 'string') {
      for (const m of v.matchAll(/#input\.([A-Za-z_][A-Za-z0-9_]*)/g)) {
        if (fields.length < 5 && !fields.includes(m[1])) fields.push(m[1]);
      }
    } else if (Array.isArray(v)) {
      v.forEach(walk);
    } else if (v && typeof v === 'object') {
      Object.values(v).forEach(walk);
    }
  };
  walk(graph.nodes);
  walk(graph.edges);
  const record = fields.length ? `{${fields.map((f) => `"${f}": …`).join(', ')}}` : '{"field": "value", ...}';
  return `${record}\none JSON record per line${fields.length ? ', with the fields the scenario reads' : ''}`;
}

export function TestPanel({ name, graph, records, onRecords: setRecords, recordsNotKept, inferredFor, onGenerateSchema, selectedId, run, onRun, stale, liveShown }: Props) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [picked, setPicked] = useState<string>('');
  const nodeId = picked || selectedId || '';

  const runTest = async () => {
    setBusy(true);
    setError('');
    const startedAt = performance.now();
    // As text too: the sink outputs a test case saves keep their numbers as written (expectedOf).
    const { data: text, error } = await api.POST('/api/test', { params: { query: { maxRecordsPerNode: LISTED_PER_NODE } }, body: { graph, records }, parseAs: 'text' });
    setBusy(false);
    if (error || text === undefined) {
      const errs = (error as Schemas['ProblemDetails']).validation?.errors ?? [];
      setError(problemText(error) + (errs.length > 1 ? ` (${errs.length} errors: see Problems)` : ''));
      onRun(null);
      return;
    }
    const data = JSON.parse(text) as TestResult;
    onRun({ result: data, answer: text, ...countsOf(data, graph), graphKey: contentKey(graph), startedAt });
  };

  const result = run?.result;
  // Aggregates with late events: those the server lists, and any other counting late or partly late ones.
  const lateSet = new Set(result ? [...Object.entries(result.lateEvents ?? {}).filter(([, l]) => l.total > 0).map(([id]) => id), ...Object.entries(result.nodes ?? {}).filter(([, n]) => n.counts.late > 0 || n.counts.partlyLate > 0).map(([id]) => id)] : []);
  const inGraph = graph.nodes.map((n) => n.id).filter((id) => lateSet.has(id));
  const lateIds = [...inGraph, ...[...lateSet].filter((id) => !inGraph.includes(id))];
  const lateTargets = (id: string) => graph.edges.filter((e) => e.from === id && e.edgeType?.type === 'Late').map((e) => e.to);
  const lines = records.split('\n').filter((l) => l.trim()).length;
  const placeholder = useMemo(() => recordsPlaceholder(graph), [graph]);
  const timelines = useMemo(
    () =>
      result
        ? graph.nodes
            .filter(isWindowAggregate)
            .map((n) => ({ id: n.id, timeline: timelineOf(result, graph, n.id) }))
            .filter((x): x is { id: string; timeline: Timeline } => !!x.timeline)
        : [],
    // The timeline is of the graph tested, not redrawn as the graph is edited.
    [result],
  );

  return (
    <div className="test-panel nokey" data-testid="test-panel">
      <div className="param-label">Sample records (JSON lines)</div>
      <textarea
        className="records"
        rows={8}
        value={records}
        spellCheck={false}
        placeholder={placeholder}
        onChange={(e) => setRecords(e.target.value)}
        data-testid="test-records"
      />
      <div className="row">
        <label className="button small">
          Upload…
          <input
            type="file"
            accept=".json,.jsonl,.ndjson,.txt,application/json"
            hidden
            data-testid="test-upload"
            onChange={async (e) => {
              const f = e.target.files?.[0];
              if (f) setRecords(await f.text());
              e.target.value = '';
            }}
          />
        </label>
        <span className="muted small">{lines} records</span>
        <button type="button" className="small" disabled={lines === 0} onClick={onGenerateSchema} title="Writes the JSON Schema these records fit into each source's schema parameter (Undo takes it back)" data-testid="generate-schema">
          Generate a JSON Schema from these samples
        </button>
        <span className="spacer" />
        <button type="button" className="primary" onClick={runTest} disabled={busy || lines === 0} data-testid="run-test">
          {busy ? 'Running…' : 'Run test'}
        </button>
        {run && (
          <button type="button" className="small" onClick={() => onRun(null)}>
            Clear
          </button>
        )}
      </div>
      {recordsNotKept && (
        <div className="field-error" data-testid="records-not-kept">
          {recordsNotKept}
        </div>
      )}
      <SavedTests name={name} records={records} onRecords={setRecords} result={stale ? undefined : run?.result} answer={stale ? undefined : run?.answer} />
      {inferredFor.length > 0 && (
        <div className="muted small" data-testid="inferred-schema">
          Completion of <code>#input</code> in {inferredFor.join(', ')} uses the types of these samples, as {inferredFor.length === 1 ? 'it has' : 'they have'} no schema.
        </div>
      )}
      {error && (
        <div className="field-error" data-testid="test-error">
          {error}
        </div>
      )}
      {result && (
        <div className="test-result" data-testid="test-result">
          <div className="muted small">
            {result.records} records in {result.elapsedMs.toFixed(1)} ms.{' '}
            {liveShown ? "The nodes show the running deployment's counts; this test's are in the table below." : 'Counts are on the nodes.'}
          </div>
          {stale && (
            <div className="stale-results small" data-testid="test-stale">
              Stale: these results are of the graph before your last edit. Run the test again.
            </div>
          )}
          {(result.warnings ?? []).length > 0 && (
            <div className="stale-results small" data-testid="test-warnings">
              <b>Warnings</b>: the run gave results, but probably not the ones meant.
              <ul>
                {(result.warnings ?? []).map((w, i) => (
                  <li key={i}>
                    <b>{w.nodeId}</b> {w.field}: {w.message}
                  </li>
                ))}
              </ul>
            </div>
          )}
          <div className="row">
            <h4>Counts</h4>
            <span className="spacer" />
            <CopyJSON value={Object.fromEntries(graph.nodes.map((n) => [n.id, result.nodes?.[n.id]?.counts]))} what="the counts" />
          </div>
          <div className="scroll-x">
            <table className="counts mono" data-testid="test-counts">
              <thead>
                <tr>
                  <th>node</th>
                  <th>in</th>
                  <th>out</th>
                  <th>errors</th>
                  <th>late</th>
                  <th title="late for some of their windows, counted in others">partly late</th>
                </tr>
              </thead>
              <tbody>
                {graph.nodes.map((n) => {
                  const c = result.nodes?.[n.id]?.counts;
                  return (
                    <tr key={n.id} className={n.id === nodeId ? 'picked' : ''} onClick={() => setPicked(n.id)}>
                      <td>{n.id}</td>
                      <td>{c?.in ?? ''}</td>
                      <td>{c?.out ?? ''}</td>
                      <td className={c?.errors ? 'field-error' : ''}>{c?.errors ?? ''}</td>
                      <td>{c?.late ?? ''}</td>
                      <td>{c?.partlyLate ?? ''}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>

          <h4>Records per node</h4>
          {graph.nodes.map((n) => (
            <NodeRecords key={n.id} id={n.id} records={result.nodes?.[n.id]} errors={(result.errors ?? []).filter((e) => e.nodeId === n.id)} open={n.id === nodeId} />
          ))}

          <h4>Window results</h4>
          {Object.keys(result.windowResults ?? {}).length === 0 && <div className="muted small">No aggregates.</div>}
          {Object.entries(result.windowResults ?? {}).map(([id, w]) => {
            const agg = graph.nodes.find((n) => n.id === id);
            const rows = (w.results ?? []).map((r) => ({ ...r, bounds: agg ? windowOf(agg, r.eventTime, r.window) : undefined }));
            return (
              <div key={id} data-testid="window-results">
                <div className="row">
                  <span className="muted small">
                    {id}: {w.total} results{w.truncated ? `, the first ${w.results?.length ?? 0} listed` : ''}
                  </span>
                  <span className="spacer" />
                  <CopyJSON value={rows.map(({ bounds, key, output, line }) => ({ line, window: bounds, key, output }))} what={`the window results of ${id}`} />
                </div>
                <div className="scroll-x">
                  <table className="windows mono">
                    <thead>
                      <tr>
                        <th>window start</th>
                        <th>window end</th>
                        <th>key</th>
                        <th>output</th>
                      </tr>
                    </thead>
                    <tbody>
                      {rows.slice(0, WINDOW_ROWS).map((r, i) => (
                        <tr key={i}>
                          <td data-testid="window-start">{r.bounds ? <Time ms={r.bounds.start} /> : <span className="muted" title="this node's windows have no fixed bounds">–</span>}</td>
                          <td data-testid="window-end">{r.bounds ? <Time ms={r.bounds.end} sameDayAs={r.bounds.start} /> : ''}</td>
                          <td>
                            <code>{json(r.key)}</code>
                          </td>
                          <td>
                            <code>{json(r.output)}</code>
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
                {rows.length > WINDOW_ROWS && <div className="muted small">The first {WINDOW_ROWS} of {rows.length} listed are shown; Copy as JSON copies all {rows.length}.</div>}
              </div>
            );
          })}

          {timelines.length > 0 && <h4>Window timeline</h4>}
          {timelines.map(({ id, timeline }) => (
            <div key={id}>
              <div className="muted small">{id}</div>
              <WindowTimeline timeline={timeline} nodeId={id} startedAt={run?.startedAt} />
            </div>
          ))}

          <h4>Sink outputs</h4>
          {Object.entries(result.sinkOutputs ?? {}).map(([id, s]) => (
            <div key={id} data-testid={`sink-outputs-${id}`}>
              <div className="row">
                <span className="muted small">
                  {id}: {s.total} values{s.truncated ? `, the first ${s.outputs?.length ?? 0} listed` : ''}
                </span>
                <span className="spacer" />
                <CopyJSON value={(s.outputs ?? []).map((o) => o.value)} what={`the outputs of ${id}`} />
              </div>
              <ul className="outputs scroll-x mono">
                {(s.outputs ?? []).map((o, i) => (
                  <li key={i}>
                    <code>{json(o.value)}</code>
                  </li>
                ))}
              </ul>
            </div>
          ))}

          <h4>Late events</h4>
          {lateIds.length === 0 ? (
            <div className="muted small" data-testid="late-events">
              None.
            </div>
          ) : (
            <div data-testid="late-events">
              {lateIds.map((id) => (
                <LateEventList key={id} id={id} events={result.lateEvents?.[id]} counts={result.nodes?.[id]?.counts} lateTargets={lateTargets(id)} />
              ))}
            </div>
          )}

          <h4>Errors</h4>
          {(result.errors ?? []).length === 0 ? (
            <div className="muted small" data-testid="test-errors">
              None.
            </div>
          ) : (
            <ul className="test-errors" data-testid="test-errors">
              {(result.errors ?? []).map((e, i) => (
                <li key={i}>
                  line {e.line}, <b>{e.nodeId}</b>
                  {e.field ? ` ${e.field}` : ''}: {e.message}
                </li>
              ))}
              {result.errorsTruncated && <li className="muted">{result.totalErrors} errors in all</li>}
            </ul>
          )}
        </div>
      )}
    </div>
  );
}
