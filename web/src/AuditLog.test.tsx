// @vitest-environment happy-dom
// The audit log shows the answer to its latest filters: an older load that answers late (the
// filters changed while it waited) is dropped, not shown over the newer one.
import { afterEach, expect, it, vi } from 'vitest';
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { api } from './api/client';
import { AuditLog } from './AuditLog';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let root: Root | undefined;
let host: HTMLElement | undefined;
afterEach(() => {
  act(() => root?.unmount());
  host?.remove();
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const entry = (id: number, action: string) => ({ id, time: '2026-12-01T10:00:00Z', subject: 'u', name: 'U', address: '127.0.0.1', action, outcome: 'ok' });

it('drops an answer to filters changed since', async () => {
  vi.useFakeTimers();
  const answers: Array<{ action?: string; resolve: (v: unknown) => void }> = [];
  vi.spyOn(api, 'GET').mockImplementation(((_path: string, init: { params: { query: { action?: string } } }) =>
    new Promise((resolve) => answers.push({ action: init.params.query.action, resolve }))) as unknown as typeof api.GET);
  host = document.createElement('div');
  document.body.append(host);
  root = createRoot(host);
  act(() => root!.render(<AuditLog />));
  await act(async () => vi.advanceTimersByTime(150)); // the first load: any action
  const select = host.querySelector<HTMLSelectElement>('[data-testid="audit-action"]')!;
  act(() => {
    select.value = 'deploy';
    select.dispatchEvent(new Event('change', { bubbles: true }));
  });
  await act(async () => vi.advanceTimersByTime(150)); // the second: deploy
  expect(answers.map((a) => a.action)).toEqual([undefined, 'deploy']);
  // The newer answers first, then the older one.
  await act(async () => answers[1].resolve({ data: { entries: [entry(2, 'deploy')] } }));
  await act(async () => answers[0].resolve({ data: { entries: [entry(1, 'scenario.create'), entry(2, 'deploy')] } }));
  const shown = [...host.querySelectorAll('[data-testid="audit-what"]')].map((td) => td.textContent);
  expect(shown).toEqual(['deploy']);
  expect(host.querySelector('[data-testid="audit"]')!.getAttribute('data-action')).toBe('deploy');
});

it('shows the target of an entry that names no scenario', async () => {
  vi.useFakeTimers();
  vi.spyOn(api, 'GET').mockResolvedValue({
    data: {
      entries: [
        { ...entry(1, 'token.create'), target: 'token 4 "ci" (deployer, no expiry)' },
        { ...entry(2, 'deploy'), scenario: 'fraud', version: 3 },
      ],
    },
  } as never);
  host = document.createElement('div');
  document.body.append(host);
  root = createRoot(host);
  act(() => root!.render(<AuditLog />));
  await act(async () => vi.advanceTimersByTime(150));
  const shown = [...host.querySelectorAll('[data-testid="audit-scenario-name"]')].map((td) => td.textContent);
  expect(shown).toEqual(['fraud', 'token 4 "ci" (deployer, no expiry)']); // newest first
});
