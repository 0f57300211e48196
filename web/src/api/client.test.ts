import { describe, expect, it } from 'vitest';
import { BUSY_RETRIES, retryBusy } from './client';

const busy = (retryAfter?: string) =>
  new Response(JSON.stringify({ status: 503, code: 'requests-busy', detail: 'busy' }), {
    status: 503,
    headers: { 'Content-Type': 'application/problem+json', ...(retryAfter ? { 'Retry-After': retryAfter } : {}) },
  });
const ok = () => new Response('{"name":"x"}', { status: 200 });

// fake answers the answers given, in order, and records what it was sent and waited.
function fake(...answers: Response[]) {
  const sent: Request[] = [];
  const waited: number[] = [];
  return {
    sent,
    waited,
    send: async (r: Request) => {
      sent.push(r);
      const next = answers.shift();
      if (!next) throw new Error('more requests than answers');
      return next;
    },
    wait: async (ms: number) => {
      waited.push(ms);
    },
  };
}

describe('retryBusy', () => {
  it('sends a GET again while it is answered requests-busy, Retry-After apart', async () => {
    const f = fake(busy('2'), ok());
    const got = await retryBusy(new Request('http://h/api/scenarios/x'), busy(), f.send, f.wait);
    expect(got?.status).toBe(200);
    expect(f.sent.map((r) => [r.method, r.url])).toEqual([
      ['GET', 'http://h/api/scenarios/x'],
      ['GET', 'http://h/api/scenarios/x'],
    ]);
    // No Retry-After: 1 s; then the answer's 2 s.
    expect(f.waited).toEqual([1000, 2000]);
  });

  it('gives up after BUSY_RETRIES and returns the last answer', async () => {
    const f = fake(busy('1'), busy('1'), busy('1'), ok());
    const got = await retryBusy(new Request('http://h/a'), busy('1'), f.send, f.wait);
    expect(BUSY_RETRIES).toBe(3);
    expect(f.sent.length).toBe(3);
    expect(got?.status).toBe(503);
    expect(((await got!.json()) as { code: string }).code).toBe('requests-busy');
  });

  it('leaves other methods, other 503s and other answers to the caller', async () => {
    const f = fake(ok());
    expect(await retryBusy(new Request('http://h/a', { method: 'POST', body: '{}' }), busy(), f.send, f.wait)).toBeUndefined();
    const streams = new Response('{"code":"streams-busy"}', { status: 503 });
    expect(await retryBusy(new Request('http://h/a'), streams, f.send, f.wait)).toBeUndefined();
    expect(await retryBusy(new Request('http://h/a'), new Response('not json', { status: 503 }), f.send, f.wait)).toBeUndefined();
    expect(await retryBusy(new Request('http://h/a'), ok(), f.send, f.wait)).toBeUndefined();
    expect(f.sent.length).toBe(0);
  });

  it('returns the busy answer when a try does not reach the server', async () => {
    // The first try is answered busy again; the second does not reach the server (fake throws).
    const again = busy('1');
    const f = fake(again);
    const got = await retryBusy(new Request('http://h/a'), busy(), f.send, f.wait);
    expect(f.sent.length).toBe(2);
    expect(got).toBe(again);
  });

  it('waits at most 10 s', async () => {
    const f = fake(ok());
    await retryBusy(new Request('http://h/a'), busy('3600'), f.send, f.wait);
    expect(f.waited).toEqual([10000]);
  });
});
