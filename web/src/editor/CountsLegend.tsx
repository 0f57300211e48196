// What the numbers on the canvas are: the test's counts (outlined green, striped when the graph
// changed since the test) or the running deployment's (solid purple), whichever is shown.
import { Panel } from '@xyflow/react';

export function CountsLegend({ test, live, stale }: { test: boolean; live: boolean; stale: boolean }) {
  if (!test && !live) return null;
  return (
    <Panel position="top-left" className="counts-legend" data-testid="counts-legend">
      {live ? (
        <span>
          <span className="badge badge-live">n</span> events while deployed (live)
        </span>
      ) : (
        <span>
          <span className={`badge badge-test${stale ? ' badge-stale' : ''}`}>n</span> records in the test
          {stale && <b className="stale-note"> — stale: the graph changed since, run the test again</b>}
        </span>
      )}
      <span>
        <span className="badge badge-runtime-error">n failed</span> per-event errors
      </span>
    </Panel>
  );
}
