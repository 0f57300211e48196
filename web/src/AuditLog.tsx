// The audit log (admins): who did what, from which address, on which scenario and version,
// with which outcome; from GET /api/audit, newest first, with its filters.
import { useCallback, useEffect, useRef, useState } from 'react';
import { api, problemText, type Schemas } from './api/client';
import { UserMenu, useAuth } from './auth';

type AuditEntry = Schemas['AuditEntry'];

/** At most this many entries are read (pages of 500, oldest first), and the newest shown first. */
const MAX_ENTRIES = 5000;

const ACTIONS = ['scenario.create', 'scenario.save', 'scenario.import', 'scenario.archive', 'scenario.unarchive', 'deploy', 'deploy.request', 'deploy.approve', 'deploy.reject', 'tests.save', 'tests.delete', 'tests.override', 'cancel', 'results.read', 'results.stream', 'audit.read', 'token.create', 'token.revoke', 'session.start', 'session.end', 'sessions.end'];

export function AuditLog() {
  const { can, me } = useAuth();
  const [identity, setIdentity] = useState('');
  const [action, setAction] = useState('');
  const [scenario, setScenario] = useState('');
  const [outcome, setOutcome] = useState('');
  const [entries, setEntries] = useState<AuditEntry[] | null>(null);
  // The action filter the entries shown were read with (the table's data-action).
  const [shownAction, setShownAction] = useState<string | null>(null);
  const [more, setMore] = useState(false);
  const [error, setError] = useState('');
  // Each load's number: a load whose filters changed while it waited (a later load began)
  // shows nothing, so that a slow answer to old filters cannot replace a newer one.
  const loads = useRef(0);

  const load = useCallback(async () => {
    const mine = ++loads.current;
    const all: AuditEntry[] = [];
    let after: number | undefined;
    for (;;) {
      const query = { identity: identity || undefined, action: action || undefined, scenario: scenario || undefined, outcome: outcome || undefined, after, limit: 500 };
      const { data, error } = await api.GET('/api/audit', { params: { query } });
      if (mine !== loads.current) return;
      if (error) return setError(problemText(error));
      all.push(...(data.entries ?? []));
      if (data.next === undefined || all.length >= MAX_ENTRIES) {
        setMore(data.next !== undefined);
        break;
      }
      after = data.next;
    }
    setError('');
    setEntries(all.reverse());
    setShownAction(action);
  }, [identity, action, scenario, outcome]);

  useEffect(() => {
    if (!can('admin')) return;
    const t = setTimeout(load, 150);
    return () => clearTimeout(t);
  }, [load, can]);

  return (
    <div className="page audit-log">
      <header className="toolbar">
        <a href="#/" className="back" title="All scenarios">
          ←
        </a>
        <h2>Audit log</h2>
        <span className="spacer" />
        <button type="button" className="small" onClick={load} disabled={!can('admin')} data-testid="audit-refresh">
          Refresh
        </button>
        <UserMenu />
      </header>
      {!can('admin') ? (
        <div className="field-error" data-testid="audit-error">
          The audit log needs the admin role; you have {me.role}.
        </div>
      ) : (
        <>
          <div className="list-tools">
            <input type="search" placeholder="Identity (subject or name)" value={identity} onChange={(e) => setIdentity(e.target.value)} data-testid="audit-identity" />
            <select value={action} onChange={(e) => setAction(e.target.value)} data-testid="audit-action">
              <option value="">any action</option>
              {ACTIONS.map((a) => (
                <option key={a} value={a}>
                  {a}
                </option>
              ))}
            </select>
            <input type="search" placeholder="Scenario" value={scenario} onChange={(e) => setScenario(e.target.value)} data-testid="audit-scenario" />
            <input type="search" placeholder="Outcome (ok, forbidden, …)" value={outcome} onChange={(e) => setOutcome(e.target.value)} data-testid="audit-outcome" />
          </div>
          {error && (
            <div className="field-error" data-testid="audit-error">
              {error}
            </div>
          )}
          <table className="scenarios audit" data-testid="audit" data-action={shownAction ?? undefined}>
            <thead>
              <tr>
                <th>time</th>
                <th>identity</th>
                <th>client address</th>
                <th>action</th>
                <th title="the scenario, or what else was acted on: a token, the role of a sign-in">scenario or target</th>
                <th>version</th>
                <th>outcome</th>
              </tr>
            </thead>
            <tbody>
              {entries?.map((e) => (
                <tr key={e.id} data-testid="audit-entry" className={e.outcome === 'ok' ? '' : 'audit-failed'}>
                  <td className="small" title={e.time}>
                    {new Date(e.time).toLocaleString()}
                    {e.repeats ? (
                      <span data-testid="audit-repeats" title="the same request, within a minute of the first, folded into this entry">
                        {' '}
                        ×{e.repeats + 1}, the last at {e.lastTime ? new Date(e.lastTime).toLocaleTimeString() : '?'}
                      </span>
                    ) : null}
                  </td>
                  <td title={e.subject} data-testid="audit-who">
                    {e.name || e.subject}
                  </td>
                  <td data-testid="audit-address">{e.address}</td>
                  <td data-testid="audit-what">{e.action}</td>
                  <td data-testid="audit-scenario-name">{e.scenario || e.target || ''}</td>
                  <td data-testid="audit-version">{e.version ? `v${e.version}` : ''}</td>
                  <td data-testid="audit-outcome-value" title={e.requestId ? `request ${e.requestId}` : undefined}>
                    {e.outcome}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {entries && entries.length === 0 && <p className="muted">No entries.</p>}
          {more && <p className="muted small">Only the oldest {entries?.length} entries that match are shown; narrow the filters to see later ones.</p>}
        </>
      )}
    </div>
  );
}
