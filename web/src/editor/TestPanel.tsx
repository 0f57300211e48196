// Test with sample records: paste or upload JSON lines, run the graph as it is on the canvas
// (POST /api/test), and see per node the counts (also on the canvas), each record's variables
// and expression values, the window results, late drops and errors.
import { useEffect, useState } from 'react';
import { api, problemText, type Schemas } from '../api/client';
import type { ScenarioGraph } from '../graph/model';
import type { NodeCounts } from './context';

export type TestResult = Schemas['TestResult'];

export type TestRun = {
  result: TestResult;
  /** Records that entered each node. */
  counts: NodeCounts;
  /** Per edge, keyed by `${from}\u0000${to}`: the records its target received, where the target has that edge alone as input. */
  edgeCounts: Record<string, number>;
};

type Props = {
  name: string;
  graph: ScenarioGraph;
  selectedId?: string;
  run: TestRun | null;
  onRun: (run: TestRun | null) => void;
};

const recordsKey = (name: string) => `scenario-designer:test-records:${name}`;

/** Counts per node and per edge from a test result. */
export function countsOf(result: TestResult, graph: ScenarioGraph): Pick<TestRun, 'counts' | 'edgeCounts'> {
  const counts: NodeCounts = {};
  for (const [id, n] of Object.entries(result.nodes ?? {})) counts[id] = n.counts.in;
  const inputs = new Map<string, number>();
  for (const e of graph.edges) inputs.set(e.to, (inputs.get(e.to) ?? 0) + 1);
  const edgeCounts: Record<string, number> = {};
  for (const e of graph.edges) if (inputs.get(e.to) === 1 && counts[e.to] !== undefined) edgeCounts[`${e.from}\u0000${e.to}`] = counts[e.to];
  return { counts, edgeCounts };
}

function fmtTime(ms: number | undefined): string {
  if (ms === undefined || ms === null) return '';
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString().replace('T', ' ').replace('.000Z', 'Z');
}

function json(v: unknown): string {
  return v === undefined ? '' : JSON.stringify(v);
}

export function TestPanel({ name, graph, selectedId, run, onRun }: Props) {
  const [records, setRecords] = useState(() => localStorage.getItem(recordsKey(name)) ?? '');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [picked, setPicked] = useState<string>('');
  const nodeId = picked || selectedId || '';

  useEffect(() => {
    localStorage.setItem(recordsKey(name), records);
  }, [name, records]);

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
    onRun({ result: data, ...countsOf(data, graph) });
  };

  const result = run?.result;
  const nodeRecords = result && nodeId ? result.nodes?.[nodeId] : undefined;
  const late = result ? Object.entries(result.nodes ?? {}).filter(([, n]) => n.counts.late > 0) : [];
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
            <div key={id}>
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

          <h4>Late drops</h4>
          {late.length === 0 ? (
            <div className="muted small" data-testid="late-drops">
              None.
            </div>
          ) : (
            <ul data-testid="late-drops">
              {late.map(([id, n]) => (
                <li key={id}>
                  {id}: {n.counts.late} late events dropped
                </li>
              ))}
            </ul>
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
