// The server counts positions in an expression in Unicode code points (1-based line and column
// in problems, 0-based caret and start in suggestions); CodeMirror in UTF-16 code units.

/** The UTF-16 offset of a code point index into text, clamped to its end. */
export function offsetOfCodePoint(text: string, codePoints: number): number {
  let offset = 0;
  let n = 0;
  for (const ch of text) {
    if (n === codePoints) break;
    offset += ch.length;
    n++;
  }
  return offset;
}

/** The UTF-16 offset of a 1-based line and column (in code points), clamped to the text. */
export function offsetOfLineColumn(text: string, line: number, column: number): number {
  const lines = text.split('\n');
  const l = Math.max(0, Math.min(line - 1, lines.length - 1));
  let offset = 0;
  for (let i = 0; i < l; i++) offset += lines[i].length + 1;
  return offset + offsetOfCodePoint(lines[l], Math.max(0, column - 1));
}
