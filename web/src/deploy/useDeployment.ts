// A scenario's deployment status, and its live per-node counts while it runs: the server's
// "counts" server-sent events (GET /api/scenarios/{name}/counts/stream).
import { useCallback, useEffect, useState } from 'react';
import { api, type Schemas } from '../api/client';
import type { NodeCounts } from '../editor/context';

export type ScenarioDeployment = Schemas['ScenarioDeployment'];
export type LiveCounts = Schemas['LiveCounts'];

export type DeploymentState = {
  status: ScenarioDeployment | null;
  live: LiveCounts | null;
  /** Events that entered each node of the running deployment. */
  liveCounts: NodeCounts | undefined;
  refresh: () => Promise<void>;
};

/** Whether the deployment has (or is about to have) live counts to stream. */
function streams(status: ScenarioDeployment | null): boolean {
  return status?.status === 'RUNNING' || status?.status === 'DEPLOYING';
}

export function useDeployment(name: string): DeploymentState {
  const [status, setStatus] = useState<ScenarioDeployment | null>(null);
  const [live, setLive] = useState<LiveCounts | null>(null);

  const refresh = useCallback(async () => {
    const { data } = await api.GET('/api/scenarios/{name}/deployment', { params: { path: { name } } });
    if (data) setStatus(data);
  }, [name]);

  useEffect(() => {
    refresh();
  }, [refresh]);

  const running = streams(status);
  useEffect(() => {
    if (!running) {
      setLive(null);
      return;
    }
    const source = new EventSource(`/api/scenarios/${encodeURIComponent(name)}/counts/stream`);
    source.addEventListener('counts', (e) => setLive(JSON.parse((e as MessageEvent<string>).data) as LiveCounts));
    return () => source.close();
  }, [name, running]);

  let liveCounts: NodeCounts | undefined;
  if (live?.running) {
    liveCounts = {};
    for (const [id, c] of Object.entries(live.nodes ?? {})) liveCounts[id] = c.in;
  }
  return { status, live, liveCounts, refresh };
}
