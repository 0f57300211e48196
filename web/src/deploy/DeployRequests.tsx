// Four-eyes deploys (the server's --deploy-approval): the scenario's deploy requests, with
// Approve and Reject for a deployer who did not ask. When the server requires approval, the
// deploy panel's Deploy button asks for a deploy instead (useDeployRequests.request).
import { useCallback, useEffect, useState } from 'react';
import { api, problemText, type Schemas } from '../api/client';

type DeployRequest = Schemas['DeployRequestOut'];

export type DeployRequests = {
  /** Whether the server deploys only approved requests. */
  approval: boolean;
  requests: DeployRequest[];
  reload: () => Promise<void>;
  /** Asks for a deploy of version with a comment (overriding failed saved tests); resolves to the problem, or null on success. */
  request: (version: number, comment: string, overrideTests?: boolean) => Promise<Schemas['ProblemDetails'] | null>;
};

export function useDeployRequests(name: string, changed: unknown): DeployRequests {
  const [approval, setApproval] = useState(false);
  const [requests, setRequests] = useState<DeployRequest[]>([]);
  const reload = useCallback(async () => {
    const { data } = await api.GET('/api/scenarios/{name}/deploy-requests', { params: { path: { name } } });
    if (data) {
      setApproval(data.approval);
      setRequests(data.requests ?? []);
    }
  }, [name]);
  useEffect(() => {
    reload();
  }, [reload, changed]);
  const request = async (version: number, comment: string, overrideTests = false) => {
    const res = await api.POST('/api/scenarios/{name}/deploy-requests', { params: { path: { name } }, body: { version, comment, overrideTests } });
    await reload();
    return res.error ? (res.error as Schemas['ProblemDetails']) : null;
  };
  return { approval, requests, reload, request };
}

/** The pending request with Approve and Reject, and the latest decided ones. */
export function DeployRequestList({
  name,
  requests,
  canDecide,
  onDecided,
}: {
  name: string;
  requests: DeployRequest[];
  canDecide: boolean;
  onDecided: () => Promise<void>;
}) {
  const [comment, setComment] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  // The approval ran the saved test cases again and the version failed them: an approval
  // with overrideTests and a comment deploys it anyway.
  const [testsFailed, setTestsFailed] = useState(false);
  if (requests.length === 0) return null;
  const decide = async (r: DeployRequest, how: 'approve' | 'reject', overrideTests = false) => {
    setBusy(true);
    setError('');
    setTestsFailed(false);
    const res =
      how === 'approve'
        ? await api.POST('/api/scenarios/{name}/deploy-requests/{id}/approve', {
            params: { path: { name, id: r.id } },
            body: { comment, overrideTests },
          })
        : await api.POST('/api/scenarios/{name}/deploy-requests/{id}/reject', { params: { path: { name, id: r.id } }, body: { comment } });
    setBusy(false);
    if (res.error) {
      setError(problemText(res.error));
      setTestsFailed(how === 'approve' && (res.error as Schemas['ProblemDetails']).code === 'tests-failed');
    } else setComment('');
    await onDecided();
  };
  return (
    <div data-testid="deploy-requests">
      <h4>Deploy requests</h4>
      <ul className="version-list">
        {requests.slice(0, 5).map((r) => (
          <li key={r.id} data-testid="deploy-request" data-status={r.status}>
            <b>v{r.version}</b> <span className={`badge request-${r.status}`}>{r.status}</span>{' '}
            <span className="muted small">
              asked by {r.requestedBy}, {new Date(r.requestedAt).toLocaleString()}
              {r.decidedBy ? `; ${r.status === 'APPROVED' ? 'approved' : 'rejected'} by ${r.decidedBy}` : ''}
            </span>
            {r.comment && <div className="comment">{r.comment}</div>}
            {r.decisionComment && <div className="comment">{r.decisionComment}</div>}
            {r.outcome && <div className="field-error">{r.outcome}</div>}
            {r.status === 'PENDING' && canDecide && (
              <div>
                <div className="param">
                  <input value={comment} placeholder="Comment on the decision" onChange={(e) => setComment(e.target.value)} data-testid="decision-comment" />
                </div>
                <div className="row">
                  <button
                    type="button"
                    className="primary"
                    disabled={busy || r.mine}
                    title={r.mine ? 'You asked for this deploy: another deployer must approve it' : undefined}
                    onClick={() => decide(r, 'approve')}
                    data-testid="approve-deploy"
                  >
                    Approve and deploy v{r.version}
                  </button>
                  <button type="button" disabled={busy} onClick={() => decide(r, 'reject')} data-testid="reject-deploy">
                    {r.mine ? 'Withdraw' : 'Reject'}
                  </button>
                </div>
                {testsFailed && !r.mine && (
                  <div className="row" data-testid="approve-override-tests">
                    <button
                      type="button"
                      className="danger"
                      disabled={busy || !comment.trim()}
                      onClick={() => decide(r, 'approve', true)}
                      data-testid="approve-override"
                    >
                      Approve anyway
                    </button>
                    <span className="muted small">
                      {comment.trim() ? 'The override and your comment are recorded.' : 'Say why in the comment to approve anyway.'}
                    </span>
                  </div>
                )}
                {r.mine && (
                  <div className="muted small" data-testid="needs-other-approver">
                    Waiting for another deployer to approve.
                  </div>
                )}
              </div>
            )}
          </li>
        ))}
      </ul>
      {error && (
        <div className="field-error" data-testid="decision-error">
          {error}
        </div>
      )}
    </div>
  );
}
