// @vitest-environment happy-dom
// A node's name field: clearing it says a name is needed (it said another node was named "").
import { afterEach, describe, expect, it } from 'vitest';
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { IdField } from './DetailsPanel';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let root: Root | undefined;
afterEach(() => act(() => root?.unmount()));

function rename(to: string, taken: string[]) {
  const host = document.createElement('div');
  root = createRoot(host);
  act(() => root!.render(<IdField id="filter" onRename={(id) => !!id && !taken.includes(id)} />));
  const input = host.querySelector('input')!;
  act(() => {
    const set = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!;
    set.call(input, to);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  });
  act(() => input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })));
  return host.querySelector('.field-error')?.textContent ?? '';
}

describe('IdField', () => {
  it('says a cleared name is missing, a taken one taken, and takes a free one', () => {
    expect(rename('', ['sink'])).toBe('a node needs a name');
    expect(rename('  ', ['sink'])).toBe('a node needs a name');
    expect(rename('sink', ['sink'])).toBe('another node is named "sink"');
    expect(rename('filter 2', ['sink'])).toBe('');
  });
});
