// Testing one node on variables typed in: POST /api/node-test runs the node's expressions on them
// and tells the value of each, and where the context goes (the edge a filter takes, the variable
// added, the value a sink writes, an aggregate's key and inputs).
import { useState } from 'react';
import { api, problemText, type Schemas } from '../api/client';
import type { ScenarioGraph } from '../graph/model';

type Result = Schemas['NodeTestResult'];

function json(v: unknown): string {
  return v === undefined ? '' : JSON.stringify(v);
}

/** Where one output of the node goes, for people: "FilterTrue → window", "value {…}". */
function outputText(o: Schemas['NodeTestOutput']): string {
  let head = o.edgeType ? o.edgeType + (o.condition ? ` (${o.condition})` : '') + ' ' : '';
  if (o.from) head += `from ${o.from} `;
  const parts = [head + (o.to ? `→ ${o.to}` : '→ goes no further (not connected)')];
  if (o.eventTime !== undefined) parts.push(`event time ${new Date(o.eventTime).toISOString()}`);
  if (o.key !== undefined) parts.push(`#key ${json(o.key)}`);
  if (o.inputs) parts.push(`inputs ${json(o.inputs)}`);
  if (o.value !== undefined) parts.push(`value ${json(o.value)}`);
  if (o.variables) parts.push(`variables ${json(o.variables)}`);
  return parts.join(', ');
}

export function NodeTest({ graph, nodeId, sample }: { graph: ScenarioGraph; nodeId: string; sample?: unknown }) {
  const [text, setText] = useState(() => JSON.stringify({ input: sample ?? {} }, null, 2));
  const [result, setResult] = useState<Result | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const run = async () => {
    setError('');
    setResult(null);
    let variables: Record<string, unknown>;
    try {
      variables = JSON.parse(text);
      if (typeof variables !== 'object' || variables === null || Array.isArray(variables)) throw new Error('give the variables as a JSON object: {"input": {...}}');
    } catch (e) {
      setError(`The variables are not a JSON object: ${(e as Error).message}`);
      return;
    }
    setBusy(true);
    const { data, error } = await api.POST('/api/node-test', { body: { graph, nodeId, variables } });
    setBusy(false);
    if (error) setError(problemText(error));
    else setResult(data);
  };

  return (
    <details className="param node-test" data-testid="node-test">
      <summary className="param-label">Test this node</summary>
      <div className="muted small">Runs this node alone on the variables below (by name, without #), with the graph as it is on the canvas.</div>
      <textarea className="nokey" rows={5} spellCheck={false} value={text} onChange={(e) => setText(e.target.value)} aria-label="variables" data-testid="node-test-variables" />
      <div className="row">
        <button type="button" className="small primary" onClick={run} disabled={busy} data-testid="node-test-run">
          {busy ? 'Running…' : 'Run this node'}
        </button>
      </div>
      {error && (
        <div className="field-error" data-testid="node-test-error">
          {error}
        </div>
      )}
      {result && (
        <div className="node-test-result" data-testid="node-test-result">
          <table className="mono">
            <tbody>
              {Object.entries(result.expressions ?? {}).map(([field, v]) => (
                <tr key={field} className="expression-value">
                  <td>{field}</td>
                  <td>{v.error ? <span className="field-error">{v.error}</span> : <code>{json(v.value)}</code>}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {(result.outputs ?? []).map((o, i) => (
            <div key={i} className="small" data-testid="node-test-output">
              {outputText(o)}
            </div>
          ))}
          {(result.outputs ?? []).length === 0 && !result.error && <div className="muted small">The context goes no further.</div>}
          {result.error && <div className="field-error">{result.error}</div>}
        </div>
      )}
    </details>
  );
}
