import { describe, expect, it } from 'vitest';
import { offsetOfCodePoint, offsetOfLineColumn } from './positions';

describe('positions', () => {
  it('counts code points, not UTF-16 units', () => {
    const text = '"😀" + #input.x';
    expect(offsetOfCodePoint(text, 3)).toBe(4);
    expect(offsetOfLineColumn(text, 1, 4)).toBe(4);
    expect(text.slice(offsetOfLineColumn(text, 1, 7))).toBe('#input.x');
  });

  it('finds later lines and clamps past the end', () => {
    const text = 'a +\n  #input.b';
    expect(text.slice(offsetOfLineColumn(text, 2, 3))).toBe('#input.b');
    expect(offsetOfLineColumn(text, 9, 1)).toBe(4);
    expect(offsetOfCodePoint('ab', 10)).toBe(2);
  });
});
