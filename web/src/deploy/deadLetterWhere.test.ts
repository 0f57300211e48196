// Where a dead letter's event was: its offset in an HTTP source's log or a Kafka partition,
// or its line in a file (it said "no offset" for a file's lines).
import { expect, it } from 'vitest';
import { deadLetterWhere } from './DeployPanel';

it('says a file line, an offset, a partition', () => {
  expect(deadLetterWhere({ source: 'payments', line: 4 })).toBe('payments, line 4');
  expect(deadLetterWhere({ source: 'in', offset: 17 })).toBe('in, offset 17');
  expect(deadLetterWhere({ source: 'k', partition: 2, offset: 9 })).toBe('k, partition 2, offset 9');
  expect(deadLetterWhere({})).toBe('no offset');
});
