// A field's value before and after: expressions side by side in CodeMirror's merge view (changed
// characters marked), other values as JSON, the old one struck through.
import { useEffect, useRef } from 'react';
import { EditorState } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { MergeView } from '@codemirror/merge';

/** A value for people: expression text as it is, anything else as JSON; absent as "(none)". */
export function shown(v: unknown): string {
  if (v === undefined) return '(none)';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

const readOnly = [EditorState.readOnly.of(true), EditorView.editable.of(false), EditorView.lineWrapping];

/** Two expression texts in a read-only merge view, before on the left. */
export function ExpressionDiff({ before, after, testId }: { before: string; after: string; testId?: string }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const view = new MergeView({
      parent: host.current!,
      a: { doc: before, extensions: [...readOnly, EditorView.contentAttributes.of({ 'aria-label': 'before' })] },
      b: { doc: after, extensions: [...readOnly, EditorView.contentAttributes.of({ 'aria-label': 'after' })] },
      gutter: false,
    });
    return () => view.destroy();
  }, [before, after]);
  return <div className="expr-diff" ref={host} data-testid={testId} />;
}

/** One changed field: its label, then before and after. */
export function FieldDiff({ label, before, after, expression }: { label: string; before: unknown; after: unknown; expression: boolean }) {
  return (
    <div className="field-diff" data-testid="field-diff">
      <div className="field-diff-label">{label}</div>
      {expression && before !== undefined && after !== undefined ? (
        <ExpressionDiff before={String(before)} after={String(after)} testId="expression-diff" />
      ) : (
        <div className="value-diff">
          {before !== undefined && <del><code>{shown(before)}</code></del>}
          {before !== undefined && after !== undefined && ' → '}
          {after !== undefined && <ins><code>{shown(after)}</code></ins>}
        </div>
      )}
    </div>
  );
}
