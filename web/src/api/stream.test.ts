// A refused stream is said so and opened again after 5 s, then 10 s; an opened stream clears
// the problem and resets the wait; a dropped connection (the browser reconnects by itself) is
// left alone; closing stops the retries. EventSource is a fake: only the stream's states
// matter here.
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { openStream } from './stream';

class FakeSource {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSED = 2;
  static all: FakeSource[] = [];
  readyState = FakeSource.CONNECTING;
  closed = false;
  listeners: Record<string, Array<(e: unknown) => void>> = {};
  constructor(public url: string) {
    FakeSource.all.push(this);
  }
  addEventListener(name: string, f: (e: unknown) => void) {
    (this.listeners[name] ??= []).push(f);
  }
  close() {
    this.closed = true;
    this.readyState = FakeSource.CLOSED;
  }
  emit(name: string, e: unknown = {}) {
    for (const f of this.listeners[name] ?? []) f(e);
  }
}

beforeEach(() => {
  FakeSource.all = [];
  vi.stubGlobal('EventSource', FakeSource);
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

it('opens a refused stream again, waiting longer each time, and says so meanwhile', () => {
  const problems: Array<string | null> = [];
  const got: string[] = [];
  let n = 0;
  const close = openStream(() => `/s?after=${n}`, { counts: (e) => got.push(e.data) }, (p) => problems.push(p));
  expect(FakeSource.all.map((s) => s.url)).toEqual(['/s?after=0']);

  const first = FakeSource.all[0];
  first.readyState = FakeSource.CLOSED; // a 429 answer
  first.emit('error');
  expect(problems).toEqual(['the server refused or ended the live stream (it may be serving as many as it allows); trying again in 5 s']);
  vi.advanceTimersByTime(4_999);
  expect(FakeSource.all).toHaveLength(1);
  n = 7;
  vi.advanceTimersByTime(1);
  expect(FakeSource.all.map((s) => s.url)).toEqual(['/s?after=0', '/s?after=7']);

  FakeSource.all[1].readyState = FakeSource.CLOSED; // refused again: 10 s now
  FakeSource.all[1].emit('error');
  expect(problems.at(-1)).toContain('trying again in 10 s');
  vi.advanceTimersByTime(10_000);
  const third = FakeSource.all[2];
  third.readyState = FakeSource.OPEN;
  third.emit('open');
  third.emit('counts', { data: 'x' });
  expect(problems.at(-1)).toBeNull();
  expect(got).toEqual(['x']);

  third.readyState = FakeSource.CONNECTING; // a dropped connection: the browser reconnects
  third.emit('error');
  vi.advanceTimersByTime(60_000);
  expect(FakeSource.all).toHaveLength(3);

  third.readyState = FakeSource.CLOSED; // refused after an open: 5 s again
  third.emit('error');
  expect(problems.at(-1)).toContain('trying again in 5 s');
  close();
  vi.advanceTimersByTime(60_000);
  expect(FakeSource.all).toHaveLength(3);
  expect(third.closed).toBe(true);
});
