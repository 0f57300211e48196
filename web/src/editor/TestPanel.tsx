// Test with sample records: paste or upload JSON lines, run the graph as it is on the canvas
// (POST /api/test), and see per node the counts (also on the canvas), each record's variables
// and expression values, the window results, the late events of each time-window aggregate
// (dropped, or sent on its "late" edge) and errors.
import { useState } from 'react';
import { api, problemText, type Schemas } from '../api/client';
import { contentKey, type ScenarioGraph } from '../graph/model';
import type { NodeCounts, NodeLateCounts } from './context';

export type TestResult = Schemas['TestResult'];
/** One aggregate's late events in a test run. */
type LateEvents = Schemas['LateTestEvents'];

export type TestRun = {
  result: TestResult;
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
};

type Props = {
  graph: ScenarioGraph;
  /** The sample records, JSON lines (kept per scenario by the editor). */
  records: string;
  onRecords: (text: string) => void;
  /** The sources whose completion uses the types of the samples (they have no schema). */
  inferredFor: string[];
  /** Writes the schema of the samples into each source with samples. */
  onGenerateSchema: () => void;
  selectedId?: string;
  run: TestRun | null;
  onRun: (run: TestRun | null) => void;
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

export function TestPanel({ graph, records, onRecords: setRecords, inferredFor, onGenerateSchema, selectedId, run, onRun }: Props) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [picked, setPicked] = useState<string>('');
  const nodeId = picked || selectedId || '';

  const runTest = async () => {
    setBusy(true);
    setError('');
    const { data, error } = await api.POST('/api/test', { body: { graph, records } });
    setBusy(false);
    if (error) {
      const errs = (error as Schemas['ProblemDetails']).validation?.errors ?? [];
      setError(problemText(error) + (errs.length > 1 ? ` (${errs.length} errors: see Problems)` : ''));
      onRun(null);
      return;
    }
    onRun({ result: data, ...countsOf(data, graph), graphKey: contentKey(graph) });
  };

  const result = run?.result;
  const nodeRecords = result && nodeId ? result.nodes?.[nodeId] : undefined;
  // Aggregates with late events: those the server lists, and any other counting late or partly late ones.
  const lateSet = new Set(result ? [...Object.entries(result.lateEvents ?? {}).filter(([, l]) => l.total > 0).map(([id]) => id), ...Object.entries(result.nodes ?? {}).filter(([, n]) => n.counts.late > 0 || n.counts.partlyLate > 0).map(([id]) => id)] : []);
  const inGraph = graph.nodes.map((n) => n.id).filter((id) => lateSet.has(id));
  const lateIds = [...inGraph, ...[...lateSet].filter((id) => !inGraph.includes(id))];
  const lateTargets = (id: string) => graph.edges.filter((e) => e.from === id && e.edgeType?.type === 'Late').map((e) => e.to);
  const lines = records.split('\n').filter((l) => l.trim()).length;

  return (
    <div className="test-panel nokey" data-testid="test-panel">
      <div className="param-label">Sample records (JSON lines)</div>
      <textarea
        className="records"
        rows={8}
        value={records}
        spellCheck={false}
        placeholder={'{"amount": 1200, "card": "A"}\n{"amount": 80, "card": "B"}'}
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
            {result.records} records in {result.elapsedMs.toFixed(1)} ms. Counts are on the nodes.
          </div>
          <table className="counts" data-testid="test-counts">
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
                    <td>{c?.errors ?? ''}</td>
                    <td>{c?.late ?? ''}</td>
                    <td>{c?.partlyLate ?? ''}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>

          <h4>Records at a node</h4>
          <select value={nodeId} onChange={(e) => setPicked(e.target.value)} data-testid="test-node">
            <option value="">(pick a node)</option>
            {graph.nodes.map((n) => (
              <option key={n.id} value={n.id}>
                {n.id}
              </option>
            ))}
          </select>
          {nodeRecords && (
            <div className="node-records" data-testid="test-node-records">
              <div className="muted small">
                {nodeRecords.totalRecords} records{nodeRecords.truncated ? `, the first ${nodeRecords.records?.length ?? 0} listed` : ''}
              </div>
              {(nodeRecords.records ?? []).map((r, i) => (
                <details key={i} className="record" open={i === 0}>
                  <summary>
                    line {r.line} · {fmtTime(r.eventTime)}
                  </summary>
                  <table>
                    <tbody>
                      {Object.entries(r.variables ?? {}).map(([k, v]) => (
                        <tr key={`v${k}`}>
                          <td>
                            <code>#{k}</code>
                          </td>
                          <td>
                            <code>{json(v)}</code>
                          </td>
                        </tr>
                      ))}
                      {Object.entries(r.expressions ?? {}).map(([k, v]) => (
                        <tr key={`e${k}`} className="expression-value">
                          <td>{k}</td>
                          <td>{v.error ? <span className="field-error">{v.error}</span> : <code>{json(v.value)}</code>}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </details>
              ))}
            </div>
          )}

          <h4>Window results</h4>
          {Object.keys(result.windowResults ?? {}).length === 0 && <div className="muted small">No aggregates.</div>}
          {Object.entries(result.windowResults ?? {}).map(([id, w]) => (
            <div key={id} data-testid="window-results">
              <div className="muted small">
                {id}: {w.total} results{w.truncated ? `, the first ${w.results?.length ?? 0} listed` : ''}
              </div>
              <table className="windows">
                <thead>
                  <tr>
                    <th>window start</th>
                    <th>window end</th>
                    <th>key</th>
                    <th>output</th>
                  </tr>
                </thead>
                <tbody>
                  {(w.results ?? []).map((r, i) => {
                    const win = (r.window ?? null) as { start?: number; end?: number } | null;
                    return (
                      <tr key={i}>
                        <td>{fmtTime(win?.start)}</td>
                        <td>{fmtTime(win?.end)}</td>
                        <td>
                          <code>{json(r.key)}</code>
                        </td>
                        <td>
                          <code>{json(r.output)}</code>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          ))}

          <h4>Sink outputs</h4>
          {Object.entries(result.sinkOutputs ?? {}).map(([id, s]) => (
            <div key={id} data-testid={`sink-outputs-${id}`}>
              <div className="muted small">
                {id}: {s.total} values{s.truncated ? `, the first ${s.outputs?.length ?? 0} listed` : ''}
              </div>
              <ul className="outputs">
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
