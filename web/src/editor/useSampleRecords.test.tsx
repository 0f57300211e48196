// @vitest-environment happy-dom
// Sample records the browser's storage cannot take stay in the page, with a note, instead of
// the exception of setItem unmounting the designer; and the error boundary shows a render
// error instead of a blank page.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { useSampleRecords, write } from './useSampleRecords';
import { ErrorBoundary } from '../ErrorBoundary';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let root: Root | null = null;
afterEach(() => {
  act(() => root?.unmount());
  root = null;
  vi.restoreAllMocks();
  localStorage.clear();
});

function quotaFull() {
  vi.spyOn(localStorage, 'setItem').mockImplementation(() => {
    throw new DOMException('exceeded the quota', 'QuotaExceededError');
  });
}

describe('useSampleRecords', () => {
  it('keeps records the storage refuses in the page, says so, and leaves no older set behind', () => {
    localStorage.setItem('scenario-designer:test-records:s', '{"old": 1}');
    quotaFull();
    expect(write('scenario-designer:test-records:s', 'x'.repeat(2_000_000))).toMatch(/^These records \(2\.0 M characters\) are not kept.*exceeded the quota/);
    expect(localStorage.getItem('scenario-designer:test-records:s')).toBeNull();
  });

  it('renders on when the storage is full', () => {
    const seen: [string, string][] = [];
    let set: (t: string) => void = () => {};
    function Probe() {
      const [records, setRecords, notKept] = useSampleRecords('s');
      set = setRecords;
      seen.push([records, notKept]);
      return <span data-testid="probe">{records.length}</span>;
    }
    const el = document.createElement('div');
    root = createRoot(el);
    act(() => root!.render(<Probe />));
    quotaFull();
    act(() => set('{"a": 1}'));
    expect(el.textContent).toBe('8');
    expect(seen.at(-1)![0]).toBe('{"a": 1}');
    expect(seen.at(-1)![1]).toMatch(/not kept in the browser's storage/);
  });
});

describe('ErrorBoundary', () => {
  it('shows the error instead of a blank page', () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    function Broken(): never {
      throw new RangeError('Maximum call stack size exceeded');
    }
    const el = document.createElement('div');
    root = createRoot(el);
    act(() =>
      root!.render(
        <ErrorBoundary>
          <Broken />
        </ErrorBoundary>,
      ),
    );
    expect(el.querySelector('[data-testid="designer-failed"]')?.textContent).toContain('Maximum call stack size exceeded');
  });
});
