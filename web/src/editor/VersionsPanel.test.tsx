// @vitest-environment happy-dom
// The comparison of two versions as the author reads it: each change field by field, for added,
// removed, changed and moved nodes and for edges.
import { afterEach, describe, expect, it } from 'vitest';
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import type { Comparison } from '../api/client';
import { expr } from '../graph/model';
import { ComparisonView } from './VersionsPanel';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let root: Root | undefined;
let host: HTMLElement | undefined;
afterEach(() => {
  act(() => root?.unmount());
  host?.remove();
});

function render(comparison: Comparison, moved: string[] = []) {
  host = document.createElement('div');
  document.body.append(host);
  root = createRoot(host);
  act(() => root!.render(<ComparisonView comparison={comparison} moved={moved} onClose={() => {}} />));
  return [...host.querySelectorAll('[data-testid="difference"]')].map((li) => ({
    head: li.firstElementChild?.tagName === 'DIV' ? li.firstElementChild.textContent : li.textContent,
    fields: [...li.querySelectorAll('[data-testid="field-diff"]')].map((f) => ({
      label: f.querySelector('.field-diff-label')!.textContent,
      before: f.querySelector('del')?.textContent ?? f.querySelector('[aria-label="before"]')?.textContent,
      after: f.querySelector('ins')?.textContent ?? f.querySelector('[aria-label="after"]')?.textContent,
    })),
  }));
}

const cmp = (differences: Comparison['differences']): Comparison => ({ scenario: 's', from: 1, to: 2, identical: false, differences });

describe('ComparisonView', () => {
  it('shows a changed expression before and after, in the merge view', () => {
    const rows = render(
      cmp([{ kind: 'node-changed', nodeId: 'filter', fields: ['expression'], before: { id: 'filter', type: 'Filter', expression: expr('#input.amount > 100') }, after: { id: 'filter', type: 'Filter', expression: expr('#input.amount > 200') } }]),
    );
    expect(rows).toEqual([{ head: 'node changed filter', fields: [{ label: 'expression', before: '#input.amount > 100', after: '#input.amount > 200' }] }]);
    expect(host!.querySelector('.cm-mergeView')).not.toBeNull();
  });
  it('lists the fields of an added and of a removed node, the edges, and the moved nodes', () => {
    const sink = { id: 'out', type: 'Sink', ref: { typ: 'collect', parameters: [{ name: 'value', expression: expr('#input') }] } };
    const rows = render(
      cmp([
        { kind: 'node-added', nodeId: 'out', after: sink },
        { kind: 'node-removed', nodeId: 'old', before: { id: 'old', type: 'Variable', varName: 'v', value: expr('1') } },
        { kind: 'edge-removed', nodeId: 'filter', before: { from: 'filter', to: 'old', edgeType: { type: 'FilterTrue' } } },
      ]),
      ['filter', 'src'],
    );
    expect(rows).toEqual([
      { head: 'node added out', fields: [{ label: 'type', before: undefined, after: 'Sink' }, { label: 'typ', before: undefined, after: 'collect' }, { label: 'value', before: undefined, after: '#input' }] },
      { head: 'node removed old', fields: [{ label: 'type', before: 'Variable', after: undefined }, { label: 'varName', before: 'v', after: undefined }, { label: 'value', before: '1', after: undefined }] },
      { head: 'edge removed filter', fields: [{ label: 'edge', before: 'filter → old (FilterTrue)', after: undefined }] },
      { head: 'moved: filter, src', fields: [] },
    ]);
  });
});
