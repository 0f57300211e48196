import { describe, expect, it } from 'vitest';
import { stringify } from 'lossless-json';
import { expectedOf, notSavable } from './SavedTests';
import type { Schemas } from '../api/client';

describe('expectedOf', () => {
  // A test run's answer whose sink wrote a float that is a whole number and an integer past
  // 2^53: JSON.parse makes them 66 and 1234567890123456800, which the server's comparison
  // (an integer is never a float; integers by their digits) fails at once.
  const answer =
    '{"nodes":{},"sinkOutputs":{"out":{"outputs":[{"value":{"avgDelay":66.0,"id":1234567890123456789}},{"value":-0.5}],"total":2,"truncated":false},' +
    '"none":{"outputs":null,"total":0,"truncated":false}}}';

  it('keeps each number as the server wrote it', () => {
    expect(stringify({ records: '{"a": 1}', expected: expectedOf(answer) })).toBe(
      '{"records":"{\\"a\\": 1}","expected":{"out":[{"avgDelay":66.0,"id":1234567890123456789},-0.5],"none":[]}}',
    );
    // What JSON.parse and JSON.stringify made of it.
    const lossy = JSON.parse(answer).sinkOutputs.out.outputs.map((o: { value: unknown }) => o.value);
    expect(JSON.stringify(lossy)).toBe('[{"avgDelay":66,"id":1234567890123456800},-0.5]');
  });
});

describe('notSavable', () => {
  const result = (total: number, listed: number): Schemas['TestResult'] =>
    ({ sinkOutputs: { out: { outputs: Array.from({ length: listed }, (_, i) => ({ value: i })), total, truncated: listed < total } } }) as unknown as Schemas['TestResult'];

  it('refuses a sink that wrote more values than a test case compares', () => {
    expect(notSavable(result(1000, 1000))).toBe('');
    expect(notSavable(result(2652, 1000))).toBe('sink "out" wrote 2652 values; a test case compares at most 1000 a sink: test with fewer records to save one');
  });
});
