// @vitest-environment happy-dom
// The deploy panel says when checkpoints fail, how many in a row and why, and when the last
// commit is in doubt; nothing while they succeed.
import { afterEach, expect, it } from 'vitest';
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { CheckpointProblem } from './CheckpointProblem';
import type { LiveCounts } from './useDeployment';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let root: Root | undefined;
let host: HTMLElement | undefined;
afterEach(() => {
  act(() => root?.unmount());
  host?.remove();
});

const base = { scenario: 's', running: true, nodes: {}, sources: [], errors: 0, firstErrors: [], checkpoint: 4 } as unknown as LiveCounts;

function shown(live: LiveCounts): string | null {
  host = document.createElement('div');
  document.body.append(host);
  root = createRoot(host);
  act(() => root!.render(<CheckpointProblem live={live} />));
  return host.querySelector('[data-testid="checkpoint-problem"]')?.textContent ?? null;
}

it('shows nothing while checkpoints succeed', () => {
  expect(shown(base)).toBeNull();
});

it('says how many failed in a row and why', () => {
  expect(shown({ ...base, checkpointError: 'database is locked', checkpointFailures: 3 })).toBe(
    '3 checkpoints failed in a row: database is locked. Nothing new is committed until a checkpoint succeeds; the deployment goes on processing and retries.',
  );
});

it('says when the last commit is in doubt', () => {
  expect(shown({ ...base, checkpointError: 'connection reset', checkpointFailures: 1, checkpointInDoubt: true })).toBe(
    '1 checkpoint failed in a row: connection reset. The last commit is in doubt (an unclear answer from the store): the next checkpoint finds out whether it committed; its results are stored once either way. Nothing new is committed until a checkpoint succeeds; the deployment goes on processing and retries.',
  );
});
