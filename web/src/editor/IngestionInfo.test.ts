import { describe, expect, it } from 'vitest';
import { curlCommand, ingestionURL, shellQuote } from './IngestionInfo';

describe('the ingestion URL and curl command', () => {
  it('escapes the scenario and source names in the URL', () => {
    expect(ingestionURL('http://h:1', 'delayed flights', 'http source')).toBe('http://h:1/api/scenarios/delayed%20flights/sources/http%20source/events');
  });
  it('quotes single quotes for the shell', () => {
    expect(shellQuote(`{"who":"O'Hare"}`)).toBe(`'{"who":"O'\\''Hare"}'`);
  });
  it('posts the records as a JSON array, with a bearer token only when asked', () => {
    expect(curlCommand('http://h/e', [{ a: 1 }], false)).toBe("curl -X POST 'http://h/e' \\\n  -H 'Content-Type: application/json' \\\n  --data '[{\"a\":1}]'");
    expect(curlCommand('http://h/e', [{}], true)).toContain('-H "Authorization: Bearer $SCENARIO_TOKEN"');
  });
});
