// An expression field: CodeMirror 6 with completions from POST /api/suggestions (the variables
// in the node's scope and their fields) and the server's validation errors shown inline.
import { useEffect, useRef } from 'react';
import { EditorState, Compartment } from '@codemirror/state';
import { EditorView, keymap, placeholder as cmPlaceholder } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { autocompletion, completionKeymap, type CompletionContext, type CompletionResult } from '@codemirror/autocomplete';
import { setDiagnostics, type Diagnostic } from '@codemirror/lint';
import type { Problem, Suggestion } from '../api/client';
import { offsetOfCodePoint, offsetOfLineColumn } from './positions';
import { useAuth } from '../auth';

export type Suggest = (text: string, caret: number) => Promise<Suggestion[]>;

type Props = {
  value: string;
  onChange: (text: string) => void;
  suggest: Suggest;
  /** Problems whose line and column point into this expression's text. */
  problems: Problem[];
  placeholder?: string;
  testId?: string;
};

function diagnosticsFor(text: string, problems: Problem[]): Diagnostic[] {
  return problems.map((p) => {
    let from = p.line ? offsetOfLineColumn(text, p.line, p.column ?? 1) : 0;
    from = Math.min(from, text.length);
    let to = p.line ? from + 1 : text.length;
    if (to > text.length) {
      to = text.length;
      from = Math.max(0, Math.min(from, to - 1));
    }
    return { from, to, severity: 'error', message: p.message };
  });
}

/** The field's own text, quoted, with the place the problem points at marked: the message is about this text. */
export function QuotedText({ text, problem }: { text: string; problem: Problem }) {
  if (!text) return null;
  const short = text.length > 80 ? text.slice(0, 77) + '…' : text;
  if (!problem.line) return <><code className="quoted">{short}</code>: </>;
  const at = Math.min(offsetOfLineColumn(text, problem.line, problem.column ?? 1), text.length);
  if (text.length > 80 || text.includes('\n')) return <>{`${problem.line}:${problem.column} `}<code className="quoted">{short}</code>: </>;
  return (
    <>
      <code className="quoted" title={`line ${problem.line}, column ${problem.column}`}>
        {text.slice(0, at)}
        <mark>{text.slice(at, at + 1) || ' '}</mark>
        {text.slice(at + 1)}
      </code>
      :{' '}
    </>
  );
}

export function ExpressionEditor({ value, onChange, suggest, problems, placeholder, testId }: Props) {
  const readOnly = !useAuth().can('editor');
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const latest = useRef({ onChange, suggest });
  latest.current = { onChange, suggest };
  const placeholderConf = useRef(new Compartment());

  useEffect(() => {
    const source = async (ctx: CompletionContext): Promise<CompletionResult | null> => {
      const text = ctx.state.doc.toString();
      const before = text.slice(0, ctx.pos);
      if (!ctx.explicit && !/[#.\w]$/.test(before)) return null;
      const caret = [...before].length;
      let found: Suggestion[];
      try {
        found = await latest.current.suggest(text, caret);
      } catch {
        return null;
      }
      if (ctx.aborted || found.length === 0) return null;
      const from = offsetOfCodePoint(text, found[0].start);
      return {
        from,
        filter: false,
        options: found.map((s) => ({
          label: s.label,
          apply: s.insert,
          detail: s.type?.display,
          type: s.kind === 'function' ? 'function' : s.kind === 'field' ? 'property' : 'variable',
        })),
      };
    };
    const v = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: value,
        extensions: [
          history(),
          keymap.of([...completionKeymap, ...defaultKeymap, ...historyKeymap]),
          autocompletion({ override: [source], activateOnTyping: true, icons: false }),
          EditorView.lineWrapping,
          placeholderConf.current.of(cmPlaceholder(placeholder ?? '')),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) latest.current.onChange(u.state.doc.toString());
          }),
          EditorView.contentAttributes.of({ 'aria-label': placeholder ?? 'expression' }),
          // A viewer reads expressions; editing needs the editor role.
          EditorState.readOnly.of(readOnly),
          EditorView.editable.of(!readOnly),
        ],
      }),
    });
    view.current = v;
    return () => {
      v.destroy();
      view.current = null;
    };
    // The view is created once; value changes from outside are applied below.
  }, []);

  useEffect(() => {
    const v = view.current;
    if (!v) return;
    const current = v.state.doc.toString();
    if (current !== value) v.dispatch({ changes: { from: 0, to: current.length, insert: value } });
  }, [value]);

  useEffect(() => {
    const v = view.current;
    if (!v) return;
    v.dispatch(setDiagnostics(v.state, diagnosticsFor(v.state.doc.toString(), problems)));
  }, [problems, value]);

  return (
    <div className={'expr' + (problems.length ? ' has-error' : '')} data-testid={testId}>
      <div ref={host} className="nokey" />
      {problems.map((p, i) => (
        <div key={i} className="field-error" data-testid="field-error">
          <QuotedText text={value} problem={p} />
          {p.message}
        </div>
      ))}
    </div>
  );
}
