// Deploy and cancel with a comment, the deployment status and history, the live counts of the
// running deployment (also on the canvas) and the latest results of its collect sinks.
import { useEffect, useState } from 'react';
import { api, problemText, type Schemas } from '../api/client';
import type { DeploymentState } from './useDeployment';
import { CheckpointProblem } from './CheckpointProblem';
import { openStream } from '../api/stream';
import { needsText, useAuth } from '../auth';
import { DeployRequestList, useDeployRequests } from './DeployRequests';

type SinkResult = Schemas['SinkResult'];
type Deployment = Schemas['Deployment'];
type DeadLetterEntry = Schemas['DeadLetterEntry'];

type Props = {
  name: string;
  /** The saved version the editor is on. */
  version: number;
  dirty: boolean;
  /** The errors validation finds in the saved version (0 while there are unsaved changes, or
   * before validation answers): a version with errors cannot be deployed. */
  savedErrors: number;
  /** Ids of the graph's collect sinks, whose results the server keeps. */
  collectSinks: string[];
  deployment: DeploymentState;
};

const KEEP_RESULTS = 20;

/** The latest results of a collect sink, from its server-sent event stream. */
function SinkResults({ name, sink }: { name: string; sink: string }) {
  const [results, setResults] = useState<SinkResult[]>([]);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    setResults([]);
    setProblem(null);
    let last = 0; // opened again after a refusal, the stream resumes after the last result had
    return openStream(
      () => `/api/scenarios/${encodeURIComponent(name)}/sinks/${encodeURIComponent(sink)}/results/stream?after=${last}`,
      {
        result: (e) => {
          const r = JSON.parse(e.data) as SinkResult;
          last = Math.max(last, r.id);
          setResults((rs) => [...rs, r].slice(-KEEP_RESULTS));
        },
      },
      setProblem,
    );
  }, [name, sink]);
  return (
    <div className="sink-results" data-testid={`sink-results-${sink}`}>
      <div className="param-label">
        {sink} <span className="muted small">latest {results.length} results</span>
      </div>
      {problem && <div className="field-error">{problem}</div>}
      {results.length === 0 && !problem && <div className="muted small">No results yet.</div>}
      <ul className="outputs">
        {[...results].reverse().map((r) => (
          <li key={r.id}>
            <span className="muted small">#{r.id}</span> <code>{JSON.stringify(r.value)}</code>
          </li>
        ))}
      </ul>
    </div>
  );
}

const KEEP_DEAD_LETTERS = 20;

/** The first dead letters of the scenario: events that failed, kept with their position and
 * error. They are stored at the checkpoint that covers their event: reloaded at each new
 * checkpoint while fewer are listed than there were per-event errors. */
// deadLetterWhere says where a dead letter's event was: its source and its offset (HTTP event
// log, Kafka partition) or, for a file source, its line (it said "no offset" for every line of
// a file: a new-user round).
export function deadLetterWhere(d: {
  source?: string;
  partition?: number;
  offset?: number;
  line?: number;
}): string {
  const at = d.offset !== undefined ? `offset ${d.offset}` : d.line !== undefined ? `line ${d.line}` : 'no offset';
  return `${d.source ? `${d.source}, ` : ''}${d.partition !== undefined ? `partition ${d.partition}, ` : ''}${at}`;
}

function DeadLetters({ name, errors, checkpoint }: { name: string; errors: number; checkpoint: number }) {
  const [letters, setLetters] = useState<DeadLetterEntry[]>([]);
  const complete = letters.length >= Math.min(errors, KEEP_DEAD_LETTERS);
  useEffect(() => {
    if (complete && letters.length > 0) return;
    let stale = false;
    api
      .GET('/api/scenarios/{name}/dead-letters', { params: { path: { name }, query: { limit: KEEP_DEAD_LETTERS } } })
      .then(({ data }) => {
        if (!stale && data) setLetters(data.deadLetters ?? []);
      });
    return () => {
      stale = true;
    };
  }, [name, errors, complete ? 0 : checkpoint]);
  if (letters.length === 0) return null;
  return (
    <div data-testid="dead-letters">
      <h4>Dead letters</h4>
      <div className="muted small">
        Events that failed went no further; the others were processed. The first {letters.length} (all: GET
        /api/scenarios/{'{name}'}/dead-letters).
      </div>
      <ul className="test-errors">
        {letters.map(({ id, deadLetter: d }) => (
          <li key={id} data-testid="dead-letter">
            <b>{d.nodeId}</b>
            {d.field ? ` ${d.field}` : ''} ({deadLetterWhere(d)}): {d.message}
            {d.record !== undefined && d.record !== null && (
              <div>
                <code className="small">{JSON.stringify(d.record).slice(0, 300)}</code>
                {d.recordTruncated && <span className="muted small"> (first 64 KiB kept)</span>}
              </div>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function DeployPanel({ name, version, dirty, savedErrors, collectSinks, deployment }: Props) {
  const { status, live, liveProblem, refresh } = deployment;
  // Deploying and canceling need the deployer role: without it the buttons are not there.
  const { can, me } = useAuth();
  const canDeploy = can('deployer');
  const [comment, setComment] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [history, setHistory] = useState<Deployment[]>([]);
  // older: the before of the history's next page (100 deployments a page), when older ones remain.
  const [older, setOlder] = useState<number | undefined>(undefined);
  const requests = useDeployRequests(name, status?.deployment?.id);
  // Canceling stops the running deployment: it is asked for twice.
  const [confirmCancel, setConfirmCancel] = useState(false);
  // The last deploy was refused because the version fails its saved test cases.
  const [testsFailed, setTestsFailed] = useState(false);

  const loadHistory = async () => {
    const { data } = await api.GET('/api/scenarios/{name}/deployments', { params: { path: { name } } });
    if (data) {
      setHistory(data.deployments ?? []);
      setOlder(data.next || undefined);
    }
  };
  const moreHistory = async () => {
    if (!older) return;
    const { data } = await api.GET('/api/scenarios/{name}/deployments', { params: { path: { name }, query: { before: older } } });
    if (data) {
      setHistory((l) => [...l, ...(data.deployments ?? [])]);
      setOlder(data.next || undefined);
    }
  };
  useEffect(() => {
    // Reload the history when the status changes.
    loadHistory();
  }, [name, status?.status, status?.deployment?.id]);

  const act = async (what: 'deploy' | 'cancel', overrideTests = false) => {
    setBusy(true);
    setError('');
    setTestsFailed(false);
    const failed = (p: Schemas['ProblemDetails'] | undefined) => {
      if (!p) return;
      // The API's words for an API client; here the override is the button below.
      setError(problemText(p).replace('deploy with overrideTests and a comment saying why', 'use "Deploy anyway" below with a comment saying why'));
      setTestsFailed(p.code === 'tests-failed');
    };
    if (what === 'deploy' && requests.approval) {
      // Four-eyes: ask; another deployer approves.
      const p = await requests.request(version, comment, overrideTests);
      setBusy(false);
      if (p) failed(p);
      else setComment('');
      return;
    }
    const res =
      what === 'deploy'
        ? await api.POST('/api/scenarios/{name}/deploy', { params: { path: { name } }, body: { version, comment, overrideTests } })
        : await api.POST('/api/scenarios/{name}/cancel', { params: { path: { name } }, body: { comment } });
    setBusy(false);
    if (res.error) failed(res.error as Schemas['ProblemDetails']);
    else setComment('');
    await refresh();
  };

  // A paused deployment (safe mode) is RUNNING in the store but does not run here.
  const state = status?.paused ? 'PAUSED' : (status?.status ?? '…');
  const running = state === 'RUNNING' || state === 'DEPLOYING' || state === 'PAUSED';
  const d = status?.deployment;

  return (
    <div className="deploy-panel nokey" data-testid="deploy-panel">
      <div className="row">
        <span className={`badge status-${state}`} data-testid="deploy-status">
          {state}
        </span>
        {d && (
          <span className="muted small">
            v{d.version} by {d.user}
            {d.comment ? `: ${d.comment}` : ''}
          </span>
        )}
      </div>
      {status?.reason && <div className="muted small">{status.reason}</div>}
      {!canDeploy && (
        <div className="muted small" data-testid="deploy-not-allowed">
          {needsText('Deploying or canceling', 'deployer', me.role)}.
        </div>
      )}
      {canDeploy && (
        <>
      <div className="param">
        <input value={comment} placeholder="Comment (why)" onChange={(e) => setComment(e.target.value)} data-testid="deploy-comment" />
      </div>
      {running && d && version !== 0 && d.version !== version && (
        <div className="muted small" data-testid="deploy-other-version">
          Deploying v{version} replaces the running v{d.version}: the event log goes on where it stops, but the windows start empty
          (another version's window state does not fit its graph): the events already in the windows open now are not in v{version}'s.
        </div>
      )}
      <div className="row">
        <button type="button" className="primary" disabled={busy || version === 0 || savedErrors > 0} onClick={() => act('deploy')} data-testid="deploy">
          {requests.approval ? `Ask to deploy v${version}` : `Deploy v${version}`}
        </button>
        <button type="button" disabled={busy || !running || confirmCancel} onClick={() => setConfirmCancel(true)} data-testid="cancel-deployment">
          Cancel…
        </button>
      </div>
      {confirmCancel && running && (
        <div className="confirm" role="alertdialog" aria-label="Cancel the deployment?" data-testid="cancel-confirm">
          <div>
            <b>Stop the running deployment{d ? ` of v${d.version}` : ''}?</b> It processes no more events until it is deployed again.
          </div>
          <div className="row">
            <button
              type="button"
              className="danger"
              disabled={busy}
              onClick={async () => {
                setConfirmCancel(false);
                await act('cancel');
              }}
              data-testid="cancel-confirm-yes"
            >
              Cancel the deployment
            </button>
            <button type="button" onClick={() => setConfirmCancel(false)} data-testid="cancel-confirm-no">
              Keep it running
            </button>
          </div>
        </div>
      )}
      {dirty && <div className="muted small">Unsaved changes are not deployed: save first.</div>}
      {savedErrors > 0 && (
        <div className="field-error small" data-testid="deploy-invalid">
          v{version} has {savedErrors === 1 ? '1 error' : `${savedErrors} errors`} (see Problems): fix and save it to deploy.
        </div>
      )}
      {requests.approval && (
        <div className="muted small" data-testid="approval-required">
          This server deploys only what another deployer approves.
        </div>
      )}
        </>
      )}
      {error && (
        <div className="field-error" data-testid="deploy-error">
          {error}
        </div>
      )}
      {testsFailed && canDeploy && (
        <div className="row" data-testid="override-tests">
          <button type="button" className="danger" disabled={busy || !comment.trim()} onClick={() => act('deploy', true)} data-testid="deploy-override">
            Deploy anyway
          </button>
          <span className="muted small">{comment.trim() ? 'The override and your comment are recorded.' : 'Say why in the comment to deploy anyway.'}</span>
        </div>
      )}

      <DeployRequestList
        name={name}
        requests={requests.requests}
        canDecide={canDeploy}
        onDecided={async () => {
          await requests.reload();
          await refresh();
        }}
      />

      {liveProblem && (
        <div className="field-error" data-testid="live-problem">
          Live counts: {liveProblem}
        </div>
      )}
      {live && !live.running && live.runningOn && (
        <div className="muted small" data-testid="running-elsewhere">
          Runs on another server sharing this store, {live.runningOn}: its live counts and its events are there.
        </div>
      )}
      {live?.running && (
        <>
          <h4>Live counts</h4>
          <div className="muted small" data-testid="live-phase">
            {live.phase}, checkpoint {live.checkpoint}
            {live.updatedAt ? `, at ${new Date(live.updatedAt).toLocaleTimeString()}` : ''}. The counts are on the nodes.
          </div>
          <CheckpointProblem live={live} />
          {live.waiting && (
            <div className="field-error" data-testid="live-waiting">
              Not processing events: {live.waiting}. They wait (none become errors) and are processed once it answers.
            </div>
          )}
          <table className="counts">
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
              {Object.entries(live.nodes ?? {}).map(([id, c]) => (
                <tr key={id}>
                  <td>{id}</td>
                  <td>{c.in}</td>
                  <td>{c.out}</td>
                  <td>{c.errors}</td>
                  <td>{c.late}</td>
                  <td>{c.partlyLate}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {(live.sources ?? []).map((s) => (
            <div key={s.id} className="small" data-testid="source-state">
              <span className="muted">
                {s.id} ({s.kind} source): {s.accepted} {sourceUnit(s.kind, 'accepted')}, {s.processed}{' '}
                processed, backlog {s.backlog}
              </span>
              {s.error && <div className="field-error">{s.error}</div>}
            </div>
          ))}
          {(live.firstErrors ?? []).length > 0 && (
            <ul className="test-errors">
              {(live.firstErrors ?? []).map((e, i) => (
                <li key={i}>
                  <b>{e.nodeId}</b>
                  {e.field ? ` ${e.field}` : ''} (
                  {e.partition !== undefined ? `partition ${e.partition}, ` : ''}offset {e.offset}): {e.message}
                </li>
              ))}
            </ul>
          )}
        </>
      )}

      {d && <DeadLetters name={name} errors={live?.errors ?? 0} checkpoint={live?.checkpoint ?? 0} />}

      {collectSinks.length > 0 && <h4>Latest sink results</h4>}
      {collectSinks.map((id) => (
        <SinkResults key={id} name={name} sink={id} />
      ))}

      <h4>Deployments</h4>
      {history.length === 0 && <div className="muted small">Never deployed.</div>}
      <ul className="version-list">
        {history.map((h) => (
          <li key={h.id}>
            <b>v{h.version}</b> <span className={`badge status-${h.status}`}>{h.status}</span> <span className="muted small">{h.user}, {new Date(h.createdAt).toLocaleString()}</span>
            {h.comment && <div className="comment">{h.comment}</div>}
            {h.reason && <div className="muted small">{h.reason}</div>}
          </li>
        ))}
      </ul>
      {older && (
        <button type="button" className="small" onClick={moreHistory} data-testid="older-deployments">
          Show older deployments
        </button>
      )}
    </div>
  );
}

/** How a source counts: http events are accepted into its log, Kafka records are in the topic
 * (summed over partitions), a file's progress is in bytes. */
function sourceUnit(kind: string, what: string): string {
  if (kind === 'kafka') return 'in the topic'
  if (kind === 'file') return 'bytes in the file'
  return what
}
