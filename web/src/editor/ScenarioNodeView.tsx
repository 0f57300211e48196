// A node on the canvas: its kind and id, one input handle, one output handle per output rule of
// its kind (a filter's true and false, a choice's cases and default), and badges for validation
// errors and counts (with late events, for time-window aggregates).
import { Handle, Position, type NodeProps } from '@xyflow/react';
import type { CanvasNode } from '../graph/convert';
import { kindIdOf } from '../graph/model';
import { useEditorContext, type LateCount } from './context';

const handleLabels: Record<string, string> = {
  FilterTrue: 'true',
  FilterFalse: 'false',
  NextSwitch: 'cases',
  SwitchDefault: 'default',
  Late: 'late',
};

/** Late events of an aggregate: "3 late", and "1 partly" for those late for some of their windows only. */
function LateBadge({ late, testId, when }: { late: LateCount; testId: string; when: string }) {
  const parts = [];
  if (late.late) parts.push(`${late.late} late`);
  if (late.partlyLate) parts.push(`${late.partlyLate} partly`);
  const title = `${late.late} events late for all their windows, ${late.partlyLate} late for some of them (partly late), ${when}`;
  return (
    <span className="badge badge-late" data-testid={testId} title={title}>
      {parts.join(' · ')}
    </span>
  );
}

export function ScenarioNodeView({ id, data, selected }: NodeProps<CanvasNode>) {
  const ctx = useEditorContext();
  const kindId = kindIdOf(data.node);
  const kind = ctx.kinds.get(kindId);
  const errors = ctx.errors.get(id) ?? [];
  const testCount = ctx.testCounts?.[id];
  const liveCount = ctx.liveCounts?.[id];
  const testLate = ctx.testLate?.[id];
  const liveLate = ctx.liveLate?.[id];
  // While deployed the live counts are the ones shown; the test's are kept in the test panel.
  const live = ctx.liveCounts !== undefined;
  const failed = live ? ctx.liveErrors?.[id] : ctx.testErrors?.[id];
  const stale = ctx.testStale;
  const outputs = kind?.edges.outputs ?? [{ edgeType: '', min: 0, max: -1 }];
  const hasInput = kind ? kind.edges.maxInputs !== 0 : true;
  const mark = ctx.diff.get(id);
  const classes = ['scenario-node', `group-${kind?.group ?? 'unknown'}`];
  if (selected) classes.push('selected');
  if (errors.length) classes.push('invalid');
  if (mark) classes.push(`diff-${mark}`);

  return (
    <div className={classes.join(' ')} data-testid={`node-${id}`} data-kind={kindId}>
      {hasInput && <Handle type="target" position={Position.Top} id="in" />}
      <div className="node-kind">{kind?.label ?? kindId}</div>
      <div className="node-id">{id}</div>
      <div className="node-badges">
        {errors.length > 0 && (
          <span className="badge badge-error" data-testid="error-badge" title={errors.map((e) => e.message).join('\n')}>
            {errors.length} {errors.length === 1 ? 'error' : 'errors'}
          </span>
        )}
        {testCount !== undefined && !live && (
          <span
            className={`badge badge-test${stale ? ' badge-stale' : ''}`}
            data-testid="test-count"
            data-stale={stale ? 'true' : undefined}
            title={stale ? 'records that entered this node in the last test, before the graph changed: run the test again' : 'records that entered this node in the test'}
          >
            {testCount}
          </span>
        )}
        {failed !== undefined && (
          <span className={`badge badge-runtime-error${!live && stale ? ' badge-stale' : ''}`} data-testid="runtime-errors" title={`events that failed at this node ${live ? 'while deployed' : 'in the test'} (per-event errors)`}>
            {failed} failed
          </span>
        )}
        {liveCount !== undefined && (
          <span className="badge badge-live" data-testid="live-count" title="events that entered this node while deployed">
            {liveCount}
          </span>
        )}
        {!live && testLate && <LateBadge late={testLate} testId="test-late" when="in the test" />}
        {live && liveLate && <LateBadge late={liveLate} testId="live-late" when="while deployed" />}
        {mark && <span className={`badge badge-diff-${mark}`}>{mark}</span>}
      </div>
      {outputs.map((o, i) => {
        const handle = o.edgeType || 'out';
        const left = `${((i + 1) * 100) / (outputs.length + 1)}%`;
        return (
          <Handle key={handle} type="source" position={Position.Bottom} id={handle} style={{ left }} className={`handle-${handle}`} data-testid={`handle-${id}-${handle}`}>
            {handleLabels[handle] && <span className="handle-label">{handleLabels[handle]}</span>}
          </Handle>
        );
      })}
    </div>
  );
}
