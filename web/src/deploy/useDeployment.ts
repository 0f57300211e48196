// A scenario's deployment status, and its live per-node counts while it runs: the server's
// "counts" server-sent events (GET /api/scenarios/{name}/counts/stream).
import { useCallback, useEffect, useMemo, useState } from 'react';
import { api, type Schemas } from '../api/client';
import { openStream } from '../api/stream';
import type { NodeCounts, NodeLateCounts } from '../editor/context';

export type ScenarioDeployment = Schemas['ScenarioDeployment'];
export type LiveCounts = Schemas['LiveCounts'];

export type DeploymentState = {
  status: ScenarioDeployment | null;
  live: LiveCounts | null;
  /** Why the live counts' stream is down and when it is tried again; null while it is up. */
  liveProblem: string | null;
  /** Events that entered each node of the running deployment. */
  liveCounts: NodeCounts | undefined;
  /** Late and partly late events of the running deployment's aggregates, for those that had any. */
  liveLate: NodeLateCounts | undefined;
  /** Per-event errors per node of the running deployment, for the nodes that had any. */
  liveErrors: NodeCounts | undefined;
  refresh: () => Promise<void>;
};

/** Whether the deployment has (or is about to have) live counts to stream. */
function streams(status: ScenarioDeployment | null): boolean {
  return status?.status === 'RUNNING' || status?.status === 'DEPLOYING';
}

export function useDeployment(name: string): DeploymentState {
  const [status, setStatus] = useState<ScenarioDeployment | null>(null);
  const [live, setLive] = useState<LiveCounts | null>(null);
  const [liveProblem, setLiveProblem] = useState<string | null>(null);

  const refresh = useCallback(async () => {
    const { data } = await api.GET('/api/scenarios/{name}/deployment', { params: { path: { name } } });
    if (data) setStatus(data);
  }, [name]);

  useEffect(() => {
    refresh();
  }, [refresh]);

  const running = streams(status);
  useEffect(() => {
    setLiveProblem(null);
    if (!running) {
      setLive(null);
      return;
    }
    return openStream(
      () => `/api/scenarios/${encodeURIComponent(name)}/counts/stream`,
      { counts: (e) => setLive(JSON.parse(e.data) as LiveCounts) },
      setLiveProblem,
    );
  }, [name, running]);

  const { liveCounts, liveLate, liveErrors } = useMemo(() => {
    if (!live?.running) return { liveCounts: undefined, liveLate: undefined, liveErrors: undefined };
    const counts: NodeCounts = {};
    const late: NodeLateCounts = {};
    const errors: NodeCounts = {};
    for (const [id, c] of Object.entries(live.nodes ?? {})) {
      counts[id] = c.in;
      if (c.late > 0 || c.partlyLate > 0) late[id] = { late: c.late, partlyLate: c.partlyLate };
      if (c.errors > 0) errors[id] = c.errors;
    }
    return { liveCounts: counts, liveLate: late, liveErrors: errors };
  }, [live]);
  return { status, live, liveProblem, liveCounts, liveLate, liveErrors, refresh };
}
