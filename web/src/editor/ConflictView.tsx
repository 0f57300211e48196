// A save conflict, three ways: the version both started from (base), the one saved meanwhile
// (theirs) and the graph on the canvas (mine). Their changes to fields left alone here are taken;
// each field both changed is shown with base, theirs and mine, and the author picks one. Nothing
// of theirs is reverted without being shown.
import { useEffect, useMemo, useState } from 'react';
import { api, problemText, type ProblemDetails } from '../api/client';
import { threeWayMerge, type Choice } from '../graph/diff';
import { normalizeGraph, type ScenarioGraph } from '../graph/model';
import { FieldDiff, shown } from './FieldDiff';

type Props = {
  name: string;
  conflict: NonNullable<ProblemDetails['conflict']>;
  mine: ScenarioGraph;
  /** Puts the merged graph on the canvas, on top of the latest version. */
  onMerge: (merged: ScenarioGraph) => void;
  onSaveMine: () => void;
  onOpenLatest: () => void;
  onClose: () => void;
};

const where = (nodeId: string, field: string) => (nodeId ? nodeId : 'scenario properties') + (field ? ` · ${field}` : '');

export function ConflictView({ name, conflict, mine, onMerge, onSaveMine, onOpenLatest, onClose }: Props) {
  const latest = conflict.latest;
  const [base, setBase] = useState<ScenarioGraph | null>(null);
  const [error, setError] = useState('');
  const [choices, setChoices] = useState<Record<string, Choice>>({});

  useEffect(() => {
    let live = true;
    api.GET('/api/scenarios/{name}/versions/{version}', { params: { path: { name, version: conflict.baseVersion } } }).then(({ data, error }) => {
      if (!live) return;
      if (error) setError(problemText(error));
      else setBase(normalizeGraph(data.graph));
    });
    return () => {
      live = false;
    };
  }, [name, conflict.baseVersion]);

  const merge = useMemo(() => (base ? threeWayMerge(base, normalizeGraph(latest.graph), mine) : null), [base, latest.graph, mine]);
  const open = merge ? merge.conflicts.filter((c) => !choices[c.key]).length : 0;

  return (
    <div className="conflict" data-testid="conflict">
      <b>Not saved: someone else saved first.</b> Version {latest.version} by {latest.author}
      {latest.comment ? ` ("${latest.comment}")` : ''} is now the latest; you started from version {conflict.baseVersion}. Your changes are still here.
      {error && <div className="field-error">{error}</div>}
      {merge && (
        <div className="merge" data-testid="merge">
          <div className="merge-section">
            <b>Their changes</b> <span className="muted small">(v{conflict.baseVersion} → v{latest.version}, taken unless you changed the same field)</span>
            {merge.taken.length === 0 && <div className="muted small">None apart from the fields below.</div>}
            <ul>
              {merge.taken.map((t, i) => (
                <li key={i} data-testid="their-change">
                  <FieldDiff label={where(t.nodeId, t.field)} before={t.before} after={t.after} expression={t.expression} />
                </li>
              ))}
            </ul>
          </div>
          {merge.conflicts.length > 0 && (
            <div className="merge-section">
              <b>Changed on both sides: choose</b>
              <table className="merge-table">
                <thead>
                  <tr>
                    <th>field</th>
                    <th>base v{conflict.baseVersion}</th>
                    <th>theirs v{latest.version}</th>
                    <th>mine</th>
                  </tr>
                </thead>
                <tbody>
                  {merge.conflicts.map((c) => (
                    <tr key={c.key} data-testid="merge-conflict">
                      <td>{where(c.nodeId, c.field)}</td>
                      <td>
                        <code>{shown(c.base)}</code>
                      </td>
                      {(['theirs', 'mine'] as Choice[]).map((side) => (
                        <td key={side}>
                          <label className={`pick ${choices[c.key] === side ? 'picked' : ''}`}>
                            <input
                              type="radio"
                              name={c.key}
                              checked={choices[c.key] === side}
                              onChange={() => setChoices((x) => ({ ...x, [c.key]: side }))}
                              data-testid={`take-${side}`}
                            />
                            <code>{shown(c[side])}</code>
                          </label>
                        </td>
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </div>
      )}
      <div className="row">
        <button type="button" className="primary" disabled={!merge || open > 0} onClick={() => merge && onMerge(merge.graph(choices))} data-testid="apply-merge">
          {open > 0 ? `Choose ${open} more` : `Merge onto version ${latest.version}`}
        </button>
        <button type="button" onClick={onOpenLatest}>
          Open version {latest.version} instead
        </button>
        <button type="button" onClick={onSaveMine} title="Writes your graph as it is: their changes listed above are undone">
          Save mine over theirs
        </button>
        <button type="button" onClick={onClose}>
          Keep editing
        </button>
      </div>
    </div>
  );
}
