// One parameter's form field, chosen by the editor kind the server's ParamSpec names.
import { useEffect, useState } from 'react';
import type { Aggregator, ParamSpec, Problem } from '../api/client';
import { expr, isExpression, type Expression } from '../graph/model';
import { ExpressionEditor, type Suggest } from './ExpressionEditor';

type Props = {
  spec: ParamSpec;
  value: unknown;
  onChange: (value: unknown) => void;
  /** The node's problems whose field is this parameter or inside it. */
  problems: Problem[];
  suggest: Suggest;
  aggregators: Aggregator[];
  /** Values to suggest as the author types a string parameter (a datalist; any text is still taken). */
  suggestions?: string[];
};

/** Problems of field exactly, or of its elements ("groupBy[0]", "aggregations[1].aggregateBy"). */
export function problemsOf(problems: Problem[], field: string, exact = false): Problem[] {
  return problems.filter((p) => p.field === field || (!exact && (p.field?.startsWith(field + '[') || p.field?.startsWith(field + '.'))));
}

function FieldErrors({ problems }: { problems: Problem[] }) {
  return (
    <>
      {problems.map((p, i) => (
        <div key={i} className="field-error" data-testid="field-error">
          {p.message}
        </div>
      ))}
    </>
  );
}

/** A text input that keeps what is typed and reports it on each change. */
function TextInput(props: { value: string; onChange: (v: string) => void; placeholder?: string; type?: string; testId?: string; step?: string; list?: string }) {
  return (
    <input
      className="nokey"
      type={props.type ?? 'text'}
      list={props.list}
      step={props.step}
      value={props.value}
      placeholder={props.placeholder}
      data-testid={props.testId}
      onChange={(e) => props.onChange(e.target.value)}
    />
  );
}

/** A JSON value edited as text; the value changes only when the text parses. */
function JSONInput({ value, onChange, testId }: { value: unknown; onChange: (v: unknown) => void; testId?: string }) {
  const [text, setText] = useState(() => (value === undefined ? '' : JSON.stringify(value, null, 2)));
  const [error, setError] = useState('');
  useEffect(() => {
    // Follow changes from outside (undo, another node), not the ones typed here.
    setText((t) => {
      try {
        if (t.trim() && JSON.stringify(JSON.parse(t)) === JSON.stringify(value)) return t;
      } catch {
        /* the typed text does not parse yet */
      }
      return value === undefined ? '' : JSON.stringify(value, null, 2);
    });
  }, [value]);
  return (
    <>
      <textarea
        className="nokey json"
        rows={6}
        value={text}
        data-testid={testId}
        onChange={(e) => {
          setText(e.target.value);
          if (!e.target.value.trim()) {
            setError('');
            onChange(undefined);
            return;
          }
          try {
            onChange(JSON.parse(e.target.value));
            setError('');
          } catch (err) {
            setError((err as Error).message);
          }
        }}
      />
      {error && <div className="field-error">{error}</div>}
    </>
  );
}

function numberOrUndefined(s: string, integer: boolean): number | undefined {
  if (s.trim() === '') return undefined;
  const n = Number(s);
  if (!Number.isFinite(n)) return undefined;
  return integer ? Math.trunc(n) : n;
}

type Aggregation = { name: string; aggregator: string; aggregateBy?: Expression; [param: string]: unknown };

function Aggregations(props: { spec: ParamSpec; value: Aggregation[]; onChange: (v: Aggregation[]) => void; problems: Problem[]; suggest: Suggest; aggregators: Aggregator[] }) {
  const { value, onChange, problems, suggest, aggregators } = props;
  const set = (i: number, a: Aggregation) => onChange(value.map((x, j) => (j === i ? a : x)));
  return (
    <div className="list" data-testid={`param-${props.spec.name}`}>
      {value.map((a, i) => {
        const agg = aggregators.find((x) => x.name === a.aggregator);
        const field = `${props.spec.name}[${i}]`;
        return (
          <div key={i} className="list-item aggregation" data-testid="aggregation">
            <div className="row">
              <input className="nokey" value={a.name} placeholder="name" aria-label="aggregation name" data-testid="aggregation-name" onChange={(e) => set(i, { ...a, name: e.target.value })} />
              <select
                className="nokey"
                value={a.aggregator}
                aria-label="aggregator"
                data-testid="aggregation-aggregator"
                onChange={(e) => {
                  const next = aggregators.find((x) => x.name === e.target.value);
                  const out: Aggregation = { name: a.name, aggregator: e.target.value };
                  // Left empty for the author to fill in: a guess such as #input is a type error for most aggregators.
                  if (next && next.input !== 'none') out.aggregateBy = a.aggregateBy ?? expr('');
                  for (const p of next?.parameters ?? []) if (p.default !== undefined) out[p.name] = p.default;
                  set(i, out);
                }}
              >
                {aggregators.map((x) => (
                  <option key={x.name} value={x.name} title={x.description}>
                    {x.name}
                  </option>
                ))}
              </select>
              <button type="button" className="small" title="remove" onClick={() => onChange(value.filter((_, j) => j !== i))}>
                ✕
              </button>
            </div>
            {agg && agg.input !== 'none' && (
              <ExpressionEditor
                value={isExpression(a.aggregateBy) ? a.aggregateBy.expression : ''}
                onChange={(t) => set(i, { ...a, aggregateBy: expr(t) })}
                suggest={suggest}
                problems={problemsOf(problems, `${field}.aggregateBy`, true)}
                placeholder={`aggregateBy (${agg.input})`}
                testId="aggregation-aggregateBy"
              />
            )}
            {(agg?.parameters ?? []).map((p) => (
              <label key={p.name} className="inline" title={p.description}>
                {p.label || p.name}
                <TextInput
                  type="number"
                  step={p.editor === 'integer' ? '1' : 'any'}
                  value={a[p.name] === undefined ? '' : String(a[p.name])}
                  onChange={(s) => {
                    const n = numberOrUndefined(s, p.editor === 'integer');
                    const out = { ...a };
                    if (n === undefined) delete out[p.name];
                    else out[p.name] = n;
                    set(i, out);
                  }}
                />
              </label>
            ))}
            <FieldErrors problems={problems.filter((p) => p.field?.startsWith(field) && p.field !== `${field}.aggregateBy`)} />
          </div>
        );
      })}
      <button
        type="button"
        data-testid="add-aggregation"
        onClick={() => onChange([...value, { name: value.length === 0 ? 'count' : `agg${value.length + 1}`, aggregator: aggregators[0]?.name ?? 'Count' }])}
      >
        + aggregation
      </button>
    </div>
  );
}

function ExpressionList(props: { name: string; value: Expression[]; onChange: (v: Expression[]) => void; problems: Problem[]; suggest: Suggest }) {
  const { name, value, onChange, problems, suggest } = props;
  return (
    <div className="list" data-testid={`param-${name}`}>
      {value.map((x, i) => (
        <div key={i} className="row">
          <ExpressionEditor
            value={x.expression}
            onChange={(t) => onChange(value.map((y, j) => (j === i ? expr(t) : y)))}
            suggest={suggest}
            problems={problemsOf(problems, `${name}[${i}]`, true)}
            testId={`${name}-${i}`}
          />
          <button type="button" className="small" title="remove" onClick={() => onChange(value.filter((_, j) => j !== i))}>
            ✕
          </button>
        </div>
      ))}
      <button type="button" data-testid={`add-${name}`} onClick={() => onChange([...value, expr('')])}>
        + expression
      </button>
    </div>
  );
}

type RecordField = { name: string; expression: Expression };

function RecordFields(props: { name: string; value: RecordField[]; onChange: (v: RecordField[]) => void; problems: Problem[]; suggest: Suggest }) {
  const { name, value, onChange, problems, suggest } = props;
  const set = (i: number, f: RecordField) => onChange(value.map((x, j) => (j === i ? f : x)));
  return (
    <div className="list" data-testid={`param-${name}`}>
      {value.map((f, i) => (
        <div key={i} className="list-item">
          <div className="row">
            <input className="nokey" value={f.name} placeholder="field name" onChange={(e) => set(i, { ...f, name: e.target.value })} />
            <button type="button" className="small" title="remove" onClick={() => onChange(value.filter((_, j) => j !== i))}>
              ✕
            </button>
          </div>
          <ExpressionEditor
            value={f.expression?.expression ?? ''}
            onChange={(t) => set(i, { ...f, expression: expr(t) })}
            suggest={suggest}
            problems={problemsOf(problems, `${name}[${i}].expression`, true)}
          />
          <FieldErrors problems={problemsOf(problems, `${name}[${i}].name`, true)} />
        </div>
      ))}
      <button type="button" onClick={() => onChange([...value, { name: `field${value.length + 1}`, expression: expr('') }])}>
        + field
      </button>
    </div>
  );
}

/** The suggestions of a string field, as a datalist its input names by id. */
function Suggestions({ id, values }: { id: string; values: string[] }) {
  return (
    <datalist id={id} data-testid={id}>
      {values.map((v) => (
        <option key={v} value={v} />
      ))}
    </datalist>
  );
}

export function ParamField({ spec, value, onChange, problems, suggest, aggregators, suggestions }: Props) {
  const own = problemsOf(problems, spec.name);
  const label = (
    <div className="param-label" title={spec.description}>
      {spec.label || spec.name}
      {spec.required && <span className="required">*</span>}
      <span className="param-type">{spec.type || spec.editor}</span>
    </div>
  );
  let field: React.ReactNode;
  switch (spec.editor) {
    case 'expression':
      return (
        <div className="param" data-testid={`param-${spec.name}`}>
          {label}
          <ExpressionEditor
            value={typeof value === 'string' ? value : ''}
            onChange={(t) => onChange(t)}
            suggest={suggest}
            problems={problemsOf(problems, spec.name, true)}
            placeholder={spec.description}
            testId={`expr-${spec.name}`}
          />
          <FieldErrors problems={own.filter((p) => p.field !== spec.name)} />
        </div>
      );
    case 'duration':
    case 'string':
    case 'variable-name': {
      const listId = suggestions && suggestions.length > 0 ? `suggestions-${spec.name}` : undefined;
      field = (
        <>
          <TextInput
            value={typeof value === 'string' ? value : ''}
            placeholder={spec.editor === 'duration' ? 'e.g. 60s, 1h, PT1H' : typeof spec.default === 'string' ? spec.default : ''}
            onChange={(s) => onChange(s === '' && !spec.required && spec.in !== 'node' ? undefined : s)}
            testId={`input-${spec.name}`}
            list={listId}
          />
          {listId && <Suggestions id={listId} values={suggestions!} />}
        </>
      );
      break;
    }
    case 'integer':
    case 'number':
      field = (
        <TextInput
          type="number"
          step={spec.editor === 'integer' ? '1' : 'any'}
          value={typeof value === 'number' ? String(value) : ''}
          onChange={(s) => onChange(numberOrUndefined(s, spec.editor === 'integer'))}
          testId={`input-${spec.name}`}
        />
      );
      break;
    case 'boolean':
      field = <input type="checkbox" className="nokey" checked={value === true} data-testid={`input-${spec.name}`} onChange={(e) => onChange(e.target.checked)} />;
      break;
    case 'enum':
      field = (
        <select className="nokey" value={typeof value === 'string' ? value : ''} data-testid={`input-${spec.name}`} onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)}>
          {!spec.required && <option value="">(default{spec.default ? `: ${spec.default}` : ''})</option>}
          {(spec.options ?? []).map((o) => (
            <option key={o} value={o}>
              {o}
            </option>
          ))}
        </select>
      );
      break;
    case 'list-of-expressions':
      field = <ExpressionList name={spec.name} value={Array.isArray(value) ? (value as Expression[]) : []} onChange={onChange} problems={problems} suggest={suggest} />;
      return (
        <div className="param">
          {label}
          {field}
          <FieldErrors problems={problemsOf(problems, spec.name, true)} />
        </div>
      );
    case 'aggregations':
      return (
        <div className="param">
          {label}
          <Aggregations spec={spec} value={Array.isArray(value) ? (value as Aggregation[]) : []} onChange={onChange} problems={problems} suggest={suggest} aggregators={aggregators} />
          <FieldErrors problems={problemsOf(problems, spec.name, true)} />
        </div>
      );
    case 'record-fields':
      return (
        <div className="param">
          {label}
          <RecordFields name={spec.name} value={Array.isArray(value) ? (value as RecordField[]) : []} onChange={onChange} problems={problems} suggest={suggest} />
          <FieldErrors problems={problemsOf(problems, spec.name, true)} />
        </div>
      );
    case 'json-schema':
    default:
      field = <JSONInput value={value} onChange={onChange} testId={`input-${spec.name}`} />;
  }
  return (
    <div className="param" data-testid={`param-${spec.name}`}>
      {label}
      {field}
      <FieldErrors problems={own} />
    </div>
  );
}
