import type { LiveCounts } from './useDeployment';

/**
 * What the deploy panel says while a running deployment's checkpoints fail: nothing new (results,
 * positions, Kafka transactions) is committed until one succeeds. The live counts give why the last
 * one failed, how many failed in a row, and whether the last commit is in doubt (it answered an
 * unclear error, and the store has not said yet whether it committed). Nothing when they succeed.
 */
export function CheckpointProblem({ live }: { live: LiveCounts }) {
  if (!live.checkpointError && !live.checkpointInDoubt) return null;
  const failures = live.checkpointFailures ?? 0;
  return (
    <div className="field-error" data-testid="checkpoint-problem">
      {failures > 0 ? `${failures} checkpoint${failures === 1 ? '' : 's'} failed in a row` : 'The last checkpoint failed'}
      {live.checkpointError ? `: ${live.checkpointError}` : ''}.{' '}
      {live.checkpointInDoubt
        ? 'The last commit is in doubt (an unclear answer from the store): the next checkpoint finds out whether it committed; its results are stored once either way. '
        : ''}
      Nothing new is committed until a checkpoint succeeds; the deployment goes on processing and retries.
    </div>
  );
}
